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
//! - [`serve_loop`]: the server's loop (one packet per interval, sync
//!   requests answered between, status reported as values).
//! - [`listener`]: the client as a process runs it (bootstrap retried until a
//!   deadline, the group's datagrams one at a time, an optional two-way
//!   reference such as an NTS measurement), results as [`ListenEvent`]s.
//!
//! The drivers ([`net`], [`serve_loop`], [`listener`]) own sockets and read
//! clocks; [`wire`] and [`client`] do neither. Nothing here prints.
//!
//! Not here: disciplining the system clock (the client reports an offset and
//! its uncertainty), an NTS-authenticated bootstrap (only direct sync is
//! wired; `ClockBound::indirect` in authtime-tesla takes an NTS-derived bound),
//! and IPv6 multicast.

pub mod client;
pub mod listener;
pub mod net;
pub mod serve_loop;
pub mod wire;

pub use client::{Bootstrap, BroadcastClient, ClientConfig, ClientStats, Rejection, Sample};
pub use listener::{
    ClockPair, LastProblem, ListenBootstrapError, ListenEvent, Listener, Reference, bootstrap_until,
};
pub use net::{
    BroadcastError, BroadcastServer, bootstrap, join_group, monotonic_time, multicast_sender,
    unix_time,
};
pub use serve_loop::{ServeLoopError, ServeStatus, run_server, server_params};
