//! The frame layer of authtime's AF_XDP data path (docs/xdp.md): whole
//! Ethernet frames in, whole Ethernet frames out, for the UDP services
//! (NTP, NTS, Roughtime) the daemon answers without the kernel's network
//! stack.
//!
//! - [`parse`] classifies a received frame for a set of [`Served`]
//!   endpoints: [`Verdict::Ours`] with a borrowed [`UdpFrame`] (MAC and IP
//!   addresses, ports, TTL or hop limit, the UDP payload), [`Verdict::Pass`]
//!   for frames that are the kernel's business, or [`Verdict::Drop`] for
//!   frames to a served endpoint that must not be answered. Every reason has
//!   a stable metric label (`as_str`). The policy, case by case, is in
//!   docs/xdp.md ("Frames").
//! - [`build_reply`] writes a whole reply frame (Ethernet, IPv4 or IPv6,
//!   UDP with its checksum, payload) into a caller-owned buffer; or the
//!   caller encodes its payload at [`reply_payload_offset`] and
//!   [`finish_reply`] writes the headers around it, with no copy. A reply
//!   can only go back to the source of a parsed request.
//! - [`checksum`]: the Internet checksum (RFC 1071), eight bytes at a time.
//!
//! Sans-IO and without unsafe code: no sockets, no UMEM rings, no clocks.
//! It does not decide what to answer (that is the protocol crates'), does not
//! handle VLAN tags, IPv4 options, IPv6 extension headers or fragments (all
//! passed to the kernel), does not resolve neighbours (a reply goes to the
//! MAC address the request came from), and does not check that the
//! destination MAC address is the interface's own (the NIC filters that,
//! unless promiscuous). It never panics, whatever the bytes.

mod build;
pub mod checksum;
#[doc(hidden)]
pub mod fuzz_harness;
#[cfg(test)]
mod known_frames;
mod parse;
mod reason;
mod served;

pub use build::{
    BuildError, build_reply, finish_reply, max_payload_len, reply_len, reply_payload_offset,
};
pub use parse::{Addressing, UdpFrame, Verdict, parse};
pub use reason::{DropReason, PassReason};
pub use served::Served;

const ETHERNET_LEN: usize = 14;
const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;
const PROTO_UDP: u8 = 17;
