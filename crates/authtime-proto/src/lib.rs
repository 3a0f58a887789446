//! NTP server and client logic for plain and symmetric-key authenticated NTPv4
//! (RFC 5905, MACs of RFC 5905 section 7.3 and RFC 8573), sans-IO.
//!
//! - [`Server`] answers client requests (mode 3) with server replies (mode 4):
//!   it checks the request, verifies its MAC in constant time under the key it
//!   names, and writes a reply (MAC'd under the same key, never larger than the
//!   request) into a caller-owned buffer. Failed authentication is dropped and
//!   counted, or answered with a crypto-NAK ([`AuthFailurePolicy`]).
//!   [`Server::handle_batch`] does the same for many datagrams at once, grouping
//!   MAC work per key so the MAC library's multi-lane kernels see whole batches.
//! - [`PreparedReply`]: a reply prepared up to its transmit timestamp
//!   ([`Server::prepare`], [`Server::prepare_batch`]), which
//!   [`PreparedReply::finish`] writes with the time read just before it
//!   leaves, in basic or interleaved mode (RFC 9769); [`interleaved`] holds
//!   the server's table of transmit times for interleaved requests.
//! - [`RateLimiter`]: per-client token buckets in bounded memory, whose verdict
//!   [`Server::handle_limited`] turns into a RATE Kiss-o'-Death or a drop.
//! - [`build_request`] and [`PendingRequest::process_response`]: the client
//!   side, checking mode, origin timestamp, stratum, leap and MAC before a
//!   [`Sample`] (offset, delay, dispersion) counts.
//! - [`InterleavedClient`]: the client of RFC 9769's interleaved
//!   client/server mode, whose samples use the server's exact transmit time
//!   of its previous reply when the server offers it ([`SampleMode`]).
//! - Every refusal is an error enum with one variant per cause, mapped to its
//!   reaction ([`DropReason::reaction`], [`ClientError::reaction`]); events are
//!   counted through [`ServerStats`].
//!
//! Time and randomness are inputs: this crate reads no clock, opens no socket,
//! starts no thread and draws no random numbers. It does not parse
//! configuration files or key files (see `authtime-keys`) and does not do NTS.

#![forbid(unsafe_code)]

mod client;
mod client_error;
mod client_interleaved;
mod drop_reason;
pub mod interleaved;
mod rate_limit;
mod server;
mod server_batch;
mod server_config;
mod server_prepared;
mod stats;

#[doc(hidden)]
pub mod fuzz_harness;

pub use client::{
    AuthStatus, ClientConfig, MAX_ROOT_DISTANCE, PendingRequest, Sample, build_request,
};
pub use client_error::{ClientError, ClientReaction};
pub use client_interleaved::{
    InterleavedClient, InterleavedRequest, InterleavedSample, MAX_UNANSWERED, REQUEST_RANDOM_LEN,
    SampleMode,
};
pub use drop_reason::{DropReason, Reaction};
pub use rate_limit::{RateLimitConfig, RateLimiter, RateVerdict};
pub use server::{Server, ServerAction};
pub use server_batch::{BatchItem, MAX_BATCH};
pub use server_config::{AuthFailurePolicy, ServerConfig, ServerConfigError};
pub use server_prepared::{PreparedReply, interleaved_origin};
pub use stats::{NoStats, ServerCounters, ServerStats};
