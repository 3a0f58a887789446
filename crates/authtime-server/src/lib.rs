//! authtime's NTP server runtime: everything between the sans-IO server of
//! `authtime-proto` and the operating system.
//!
//! - [`ConfigFile`]: the TOML configuration (`deny_unknown_fields`, kebab-case,
//!   explicit defaults) and its validation into [`Settings`], each problem at a
//!   dotted path that [`config_location::locate`] turns into a line.
//! - [`start`]: binds one `SO_REUSEPORT` UDP socket per worker thread and
//!   listen address, and serves: `recvmmsg` batches of up to 32 datagrams with
//!   kernel receive timestamps (`SO_TIMESTAMPNS`; the clock read right after
//!   the receive otherwise), access lists, the shared per-client rate limiter
//!   (RATE Kiss-o'-Death), MAC verification and signing through
//!   `Server::handle_batch`, and `sendmmsg` for the replies. Buffers are
//!   allocated when a worker starts; nothing is allocated per packet.
//! - [`Metrics`]: counters rendered for Prometheus on a minimal HTTP endpoint.
//! - Roughtime, with a `[roughtime]` section ([`config_roughtime`]): UDP
//!   workers that answer each `recvmmsg` batch under one signature
//!   (`roughtime_worker`), TCP (`roughtime_tcp`), online keys made, rotated
//!   and shared through the key store ([`roughtime_keys`]).
//! - [`Running::serve_until_signalled`]: SIGHUP reloads the key file (a file
//!   that fails to load leaves the old keys in place), SIGTERM and SIGINT stop.
//!
//! Logs go through `tracing`; nothing a peer sends is logged above debug
//! level. The system clock is read here ([`clock`]) and nowhere below. This
//! crate does not discipline the clock: it serves the system clock as it is,
//! and announces the state that the configured source reports
//! ([`config_clock`], [`clock_source`], [`clock_state`]): chronyd, an NTP
//! daemon, the kernel, or a static declaration; an unsynchronized clock is
//! announced as unsynchronized. Linux only (`recvmmsg`, `SO_TIMESTAMPNS`); the
//! unsafe code (FFI only) is confined to the modules marked with
//! `#[expect(unsafe_code)]` below: `mmsg`, `clock_source`, `privileges`,
//! `thread_priority`.

pub mod access;
pub mod chrony_client;
pub mod client_limiter;
pub mod clock;
#[expect(
    unsafe_code,
    reason = "adjtimex is FFI; each block has a SAFETY comment"
)]
pub mod clock_source;
pub mod clock_state;
pub mod config;
pub mod config_clock;
pub mod config_file;
pub mod config_location;
pub mod config_roughtime;
mod daemon;
pub mod foreground;
#[doc(hidden)]
pub mod fuzz_harness;
mod key_store;
pub mod logging;
pub mod metrics;
mod metrics_http;
mod nts_ke;
pub mod nts_keys;
mod nts_worker;
#[expect(
    unsafe_code,
    reason = "getpwnam_r, setgroups, setgid and setuid are FFI; each block has a SAFETY comment"
)]
pub mod privileges;
pub mod roughtime_key_files;
pub mod roughtime_keys;
pub mod roughtime_metrics;
mod roughtime_service;
mod roughtime_tcp;
pub mod roughtime_worker;
mod sockets;
pub mod systemd_notify;
#[expect(
    unsafe_code,
    reason = "setpriority is FFI; each block has a SAFETY comment"
)]
mod thread_priority;
mod worker;

pub use access::AccessList;
pub use config::{ConfigFile, KeySource, Problem, Settings};
pub use daemon::{Running, Signals, StartError, start};
pub use key_store::KeyStore;
pub use metrics::Metrics;
