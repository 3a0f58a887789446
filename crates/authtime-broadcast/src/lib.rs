//! TESLA-protected NTP broadcast (mode 5) for authtime.
//!
//! - [`wire`]: the packet, an NTPv4 broadcast header with the TESLA trailer in
//!   an extension field (layout documented there).
//! - [`client`]: the sans-IO client: TESLA authentication and safety, then a
//!   time estimate from authenticated samples only, bounded by the signed
//!   bootstrap and by a maximum step; the Teichel-Sibold-Milius delay attack
//!   and what the client does about it are documented there.
//! - [`net`]: the multicast server (which also answers direct-sync requests)
//!   and the client's bootstrap over UDP.
//!
//! Not here: disciplining the system clock (the client reports an offset and
//! its uncertainty), an NTS-authenticated bootstrap (only direct sync is
//! wired; `ClockBound::indirect` in authtime-tesla takes an NTS-derived bound),
//! and IPv6 multicast.

pub mod client;
pub mod net;
pub mod wire;

pub use client::{Bootstrap, BroadcastClient, ClientConfig, ClientStats, Rejection, Sample};
pub use net::{
    BroadcastError, BroadcastServer, bootstrap, join_group, monotonic_time, multicast_sender,
    unix_time,
};
