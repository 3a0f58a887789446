//! What a time server announces about its clock, and why.
//!
//! A server that only serves time (authtime does not discipline the clock)
//! must still say honestly how good that time is: leap indicator, stratum,
//! reference id, reference time, root delay and root dispersion (RFC 5905
//! section 7.3). This crate turns what a *source* reports about the host's
//! clock into those fields:
//!
//! - [`reading`]: what a source said at one moment ([`SourceReading`]), and
//!   the [`Snapshot`] the daemon publishes to its workers;
//! - [`announce`]: the rules that turn a snapshot and the current time into
//!   the header fields ([`Announcement`]): unsynchronized replies
//!   byte-identical to chrony's, root dispersion growing by 15 µs/s since the
//!   reading, leap warnings only when they apply;
//! - [`chrony_cmd`]: chronyd's command protocol, the `tracking` request and
//!   reply;
//! - [`kernel_timex`]: the kernel's `adjtimex` status as a reading;
//! - [`ntp_upstream`]: an NTP daemon's reply header as a reading;
//! - [`leap_list`]: the IERS/NIST `leap-seconds.list` file;
//! - [`refid`]: reference ids from an upstream's address (RFC 5905).
//!
//! Everything here is sans-IO: bytes, readings and times in, values out. The
//! daemon reads sockets, `adjtimex` and files, and calls these functions.

pub mod announce;
pub mod chrony_cmd;
pub mod kernel_timex;
pub mod leap_list;
pub mod ntp_upstream;
pub mod reading;
pub mod refid;

pub use announce::{AnnouncePolicy, Announcement, announce};
pub use reading::{
    LeapScope, LeapWarning, Snapshot, SourceKind, SourceReading, SyncedReading, UnsyncCause,
};
