//! authtime's server runtime: everything between the sans-IO protocol cores
//! (`authtime-proto`, `authtime-nts`, `authtime-roughtime`) and the operating
//! system. One folder per concern:
//!
//! - [`ntp`]: the NTP data path. Sockets (one `SO_REUSEPORT` socket per
//!   worker and listen address), the worker threads, and the path of a reply
//!   to a plain, MAC or NTS request. Packet I/O goes through
//!   `authtime-packet-io`. With `[xdp]`, AF_XDP workers (one per receive
//!   queue, `authtime-xdp` and `authtime-frame`) answer one interface with
//!   the same batch logic, Roughtime's too when it is served.
//! - [`nts`]: the NTS-KE server and the NTS master keys kept in step with the
//!   key store.
//! - [`roughtime`]: the Roughtime server, with a `[roughtime]` section: UDP
//!   workers that answer each `recvmmsg` batch under one signature, TCP,
//!   online keys made, rotated and shared through the key store.
//! - [`admission`]: access lists and the per-client rate limiter.
//! - [`clock`]: the system clock, read here and nowhere below, and the state
//!   of the clock announced (chronyd, an NTP daemon, the kernel, or a static
//!   declaration; an unsynchronized clock is announced as unsynchronized).
//!   This crate does not discipline the clock.
//! - [`config`]: the TOML configuration ([`ConfigFile`]: `deny_unknown_fields`,
//!   kebab-case, explicit defaults) and its validation into [`Settings`], each
//!   problem at a dotted path that [`config::location::locate`] turns into a
//!   line.
//! - [`daemon`]: [`start`] and [`Running::serve_until_signalled`] (SIGHUP
//!   reloads the key file, SIGTERM and SIGINT stop), privileges, logging,
//!   systemd readiness.
//! - [`metrics`]: counters and histograms rendered for Prometheus on a
//!   minimal HTTP endpoint.
//!
//! Logs go through `tracing`; nothing a peer sends is logged above debug
//! level. Linux only; the unsafe code (FFI only) is confined to the modules
//! marked with `#[expect(unsafe_code)]`: `clock::source`,
//! `daemon::privileges`, `daemon::thread_priority`.

pub mod admission;
pub mod clock;
pub mod config;
pub mod daemon;
#[doc(hidden)]
pub mod fuzz_harness;
pub mod metrics;
pub mod ntp;
pub mod nts;
pub mod roughtime;

pub use admission::access::AccessList;
pub use config::{ConfigFile, KeySource, Problem, Settings};
pub use daemon::{Running, Signals, StartError, start};
pub use metrics::Metrics;
pub use ntp::key_store::KeyStore;
