//! UDP packet I/O for authtime's servers, clients and lab on Linux: the one
//! place where `recvmmsg`, `sendmmsg`, `sendmsg`, socket timestamping options,
//! control messages and the socket error queue are called.
//!
//! - [`RecvBatch`]: up to [`BATCH`] datagrams per `recvmmsg`, each with its
//!   source address and the kernel's receive timestamp ([`Stamp`]), and the
//!   socket's count of datagrams the kernel dropped for a full receive buffer.
//! - [`Sender`] sends one datagram, optionally asking the kernel for its
//!   transmit timestamp; [`SendBatch`] sends many in one `sendmmsg` (for
//!   replies whose contents do not depend on when they leave).
//! - [`TxStampReader`] reads the transmit timestamps the kernel queued on the
//!   socket's error queue, each with the packet it stamped, and
//!   [`looped_packet::parse`] finds the UDP payload in that packet (Ethernet,
//!   VLAN, IPv4, IPv6, or a bare IP packet), so that a caller can tell which
//!   of its datagrams each timestamp belongs to from the datagram itself.
//! - [`recv_one`] receives one datagram with its kernel timestamp, for
//!   clients and load generators.
//! - [`enable_timestamps`] switches a socket's timestamping on.
//!
//! Timestamps are of the real-time clock (`CLOCK_REALTIME`), as the kernel
//! takes them: software stamps when the datagram passes the network driver
//! (receive) or is handed to it (transmit). Hardware stamps (a NIC's own
//! clock) are reported as such when present but never asked for here: they
//! need the interface configured for them and a NIC clock kept in step with
//! the system clock.
//!
//! This crate does not decide what to send, when to read a clock, or how to
//! match a timestamp to a request: it owns buffers and system calls, and
//! hands back bytes, addresses and timestamps. Its unsafe code is FFI into
//! libc on buffers it owns; each block says why it is sound. Linux only.

#[expect(
    unsafe_code,
    reason = "control messages are read and written as the kernel lays them out; each block has a SAFETY comment"
)]
mod control;
#[expect(
    unsafe_code,
    reason = "recvmmsg with MSG_ERRQUEUE is FFI; each block has a SAFETY comment"
)]
mod error_queue;
#[doc(hidden)]
pub mod fuzz_harness;
pub mod looped_packet;
#[expect(
    unsafe_code,
    reason = "setsockopt and getsockopt are FFI; each block has a SAFETY comment"
)]
mod options;
#[expect(
    unsafe_code,
    reason = "sockaddr_storage is read as the address family it holds; each block has a SAFETY comment"
)]
mod peer;
#[expect(
    unsafe_code,
    reason = "recvmmsg is FFI; each block has a SAFETY comment"
)]
mod recv_batch;
#[expect(
    unsafe_code,
    reason = "recvmsg is FFI; each block has a SAFETY comment"
)]
mod recv_one;
#[expect(
    unsafe_code,
    reason = "sendmsg and sendmmsg are FFI; each block has a SAFETY comment"
)]
mod send;
mod stamp;

pub use error_queue::{LOOPED_LEN, TxStamp, TxStampReader};
pub use options::{
    Timestamping, enable_drop_counter, enable_timestamps, set_receive_buffer,
    wait_for_receive_stamps,
};
pub use peer::PeerName;
pub use recv_batch::{BATCH, DATAGRAM_LEN, Datagram, RecvBatch};
pub use recv_one::{Received, recv_one};
pub use send::{SendBatch, Sender};
pub use stamp::{Stamp, StampSource};
