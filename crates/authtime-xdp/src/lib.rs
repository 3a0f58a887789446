//! The kernel side of authtime's AF_XDP data path on Linux: an XDP program
//! that steers the served UDP ports to AF_XDP sockets, its loader, and the
//! sockets themselves.
//!
//! - [`ProgramSpec`] says what the program takes: UDP to up to
//!   [`MAX_PORTS`] ports, over IPv4 (no options, no fragments) and IPv6
//!   (no extension headers), optionally only to one address per family.
//!   The program is emitted from Rust as eBPF instructions (no clang, no
//!   ELF object). Every other frame (ARP, ICMP, TCP such as NTS-KE, other
//!   ports, VLAN-tagged frames) passes to the kernel's stack untouched. It
//!   stamps each frame it redirects with `bpf_ktime_get_tai_ns()` in the
//!   frame's XDP metadata ([`META_LEN`] bytes in front of the frame).
//! - [`Attachment::attach`] loads the program with an XSKMAP (one slot per
//!   receive queue) through bpf(2) and attaches it with a bpf_link, in
//!   native (driver) or generic (skb) mode. The link is not pinned: the
//!   kernel detaches the program when the [`Attachment`] is dropped or the
//!   process dies, SIGKILL included, so a crashed server never leaves its
//!   port black-holed.
//! - [`Xsk`] is an AF_XDP socket on one queue: a UMEM of 2048- or
//!   4096-byte chunks, its fill, completion, RX and TX rings, and a safe
//!   API over them. [`Xsk::recv_batch`] lends out received frames
//!   ([`RxFrame`]) with their receive time ([`RxStamp`]: the metadata
//!   timestamp converted to `CLOCK_REALTIME` by [`TaiOffset`], or the time
//!   user space took the batch when no metadata came); a frame is given
//!   back for receiving when dropped, or turned into a transmit descriptor
//!   in place with [`RxFrame::reply`] (the reply is built in the chunk the
//!   request came in: no copy), or sent at once, while the rest of its batch
//!   is still lent out, with [`RxFrame::send`]; [`RxFrame::send_stamped`]
//!   also asks for the frame's transmit time (AF_XDP transmit metadata,
//!   Linux 6.11 and later, copy mode), which
//!   [`Xsk::reclaim_completions_with`] hands back with the frame
//!   ([`TxCompletion`]). [`Xsk::tx_submit`] and
//!   [`Xsk::reclaim_completions`] move chunks on. A chunk is in one place
//!   at a time (free, fill ring, lent out, being sent), checked on every
//!   move, so no chunk is ever handed out twice.
//!
//! It does not parse or build frames beyond the program's checks, and it
//! holds no protocol logic: what to answer, and the Ethernet, IP and UDP
//! headers of the answer, are the caller's (authtime-frame builds them).
//!
//! # Capabilities
//!
//! Loading the program and creating the XSKMAP and the link need `CAP_BPF`
//! and `CAP_NET_ADMIN` (or `CAP_SYS_ADMIN`); the AF_XDP socket needs
//! `CAP_NET_RAW`; its UMEM needs `CAP_IPC_LOCK` or a size within
//! `RLIMIT_MEMLOCK` ([`Error::MemlockLimit`]). A missing capability shows as
//! [`Error::MissingCapability`] naming it. (tests/capabilities.rs checks
//! each by dropping it.) The kernel needs `CONFIG_XDP_SOCKETS` ([`Error::NoAfXdp`]
//! otherwise) and, for the metadata timestamp, Linux 5.19 or later
//! (`bpf_ktime_get_tai_ns`).
//!
//! Its unsafe code is FFI (bpf(2), socket calls, mmap) and the rings shared
//! with the kernel; each module that has it says so, and each block says
//! why it is sound. Linux only. See docs/xdp.md, "Kernel side".

#[expect(
    unsafe_code,
    reason = "bpf(2) is FFI with pointers in its attributes; each block has a SAFETY comment"
)]
mod bpf_sys;
#[expect(
    unsafe_code,
    reason = "clock_gettime is FFI; each block has a SAFETY comment"
)]
mod clock;
mod error;
#[expect(
    unsafe_code,
    reason = "if_nametoindex and the ethtool ioctl are FFI; each block has a SAFETY comment"
)]
mod iface;
mod insn;
mod link;
mod program;
#[expect(
    unsafe_code,
    reason = "AF_XDP socket calls, mmap'd rings and the UMEM shared with the kernel; each block has a SAFETY comment"
)]
mod xsk;

pub use clock::TaiOffset;
pub use error::Error;
pub use iface::Interface;
pub use link::{AttachMode, Attachment, LoadedProgram, TestVerdict};
pub use program::{Family, MAX_PORTS, META_LEN, META_MAGIC, ProgramSpec};
pub use xsk::{
    BindMode, RxBatch, RxFrame, RxStamp, StampSource, TxCompletion, Xsk, XskConfig, XskStats,
};
