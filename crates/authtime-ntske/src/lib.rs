//! NTS Key Establishment (RFC 8915 section 4) for authtime.
//!
//! What it does:
//! - [`record`] and [`message`]: the NTS-KE record codec and a streaming message reader
//!   with explicit size limits, tolerant of records split across TLS reads;
//! - [`server_core`] and [`client_core`]: sans-IO negotiation (next protocol, AEAD,
//!   cookies, server and port records) and key export through a [`KeyExporter`];
//! - [`server`] and [`client`]: thin tokio + rustls (TLS 1.3 only, ALPN `ntske/1`)
//!   drivers with connection caps, timeouts, certificate reload and [`metrics`]; the
//!   server keeps a connection open only for an authenticated pool load balancer;
//! - [`cert_expiry`]: the earliest notAfter of the served chain, for the metric
//!   and the alert that warn before it expires;
//! - [`cert_time`]: the time the client checks the server's certificate at, when
//!   the caller knows it better than the system clock (one instant, or an interval
//!   from Roughtime over which the chain must be valid);
//! - [`client_limit`]: sans-IO per-client limits (handshake token buckets and open
//!   connections per source address or IPv6 prefix) that the server checks before TLS;
//! - with the `session` feature, `client_session`: a blocking NTS client
//!   session (NTS-KE when the cookie jar is empty, NTS-protected NTP exchanges
//!   over UDP, NAK recovery) and `cookie_store`, the jar kept in a file
//!   between runs. The server daemon builds without it.
//!
//! - [`balancer`] (driver) and [`balancer_core`] (sans-IO selection): the NTS-KE load
//!   balancer of draft-ietf-ntp-nts-keyexchange-pool-00, which answers clients with
//!   cookies a pool member made for keys sent in a Fixed Key Request
//!   ([`pool_client`], [`pool_client_io`]); plugged into the server as a
//!   [`KeResponder`].
//!
//! What it does not do: make or open cookies, or run AEADs (that is `authtime-nts`,
//! reached through [`CookieIssuer`]), nor build or check NTS-protected NTP packets
//! (the client session calls `authtime-nts` and `authtime-proto` for those). Of
//! chrony's private records only the compliant-128gcm export record
//! ([`record::peer_record_type`], docs/nts.md).
//!
//! NTS pool records (draft-ietf-ntp-nts-keyexchange-pool-00, as ntpd-rs 1.9):
//! [`pool_record`] is their codec; [`pool_member`] serves the member side when the
//! server is given load balancer tokens ([`pool_token_file`], [`KeServerConfig`]'s
//! `pool_token_files`): support queries, Fixed Key Requests and keep-alive for an
//! authenticated balancer. Without tokens, or to anyone without a valid one, the pool
//! records are refused or ignored as RFC 8915 section 4 says (Error 0 for the
//! critical ones), exactly as a server that knows nothing of them. The load balancer
//! side is [`balancer`] (see above), a pool member's client.

pub mod aead;
pub mod balancer;
pub mod balancer_core;
pub mod cert_expiry;
pub mod cert_time;
pub mod client;
pub mod client_core;
#[cfg(feature = "session")]
mod client_exchange;
pub mod client_limit;
#[cfg(feature = "session")]
pub mod client_session;
#[cfg(feature = "session")]
mod client_session_error;
#[cfg(feature = "session")]
pub mod cookie_store;
#[doc(hidden)]
pub mod fuzz_harness;
pub mod key_export;
pub mod message;
pub mod metrics;
pub mod ntp_server_name;
pub mod pool_client;
pub mod pool_client_io;
pub mod pool_member;
pub mod pool_record;
pub mod pool_token;
pub mod pool_token_file;
pub mod record;
pub mod server;
pub mod server_core;
pub mod tls_config;

pub use balancer::{Balancer, BalancerConfig};
pub use cert_time::CertTime;
pub use client::{KeClient, KeClientError, KeOutcome, fetch};
pub use client_core::{NegotiatedSession, ResponseError};
pub use client_limit::{ClientLimitConfig, ClientLimiter};
#[cfg(feature = "session")]
pub use client_session::{FailureClass, KeStats, NtsSession, SessionError, SessionSetupError};
#[cfg(feature = "session")]
pub use cookie_store::{CookieJar, CookieStoreError};
pub use key_export::{KeyExporter, SessionKeys};
pub use message::{MessageError, MessageLimits, MessageReader};
pub use metrics::{KeMetrics, KeMetricsSnapshot};
pub use record::Record;
pub use server::{
    ConnectionObserver, ConnectionVerdict, KeResponder, KeServer, KeServerConfig, KeServerError,
    KeServerHandle,
};
pub use server_core::{CookieIssueError, CookieIssuer, KeServerCore, ServerCoreConfig};

/// TCP port of NTS-KE (RFC 8915 section 7.1).
pub const NTS_KE_PORT: u16 = 4460;
/// Default NTP port announced when no Port Negotiation record is sent.
pub const NTP_PORT: u16 = 123;
/// ALPN protocol id of NTS-KE (RFC 8915 section 4).
pub const ALPN_NTSKE: &[u8] = b"ntske/1";
