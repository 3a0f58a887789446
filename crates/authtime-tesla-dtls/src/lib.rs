//! TESLA over DTLS 1.2, with OpenSSL (the system libssl 3.0 through the
//! `openssl` crate).
//!
//! # Message flow
//!
//! The TESLA sender is a DTLS server; each TESLA receiver is a DTLS client.
//!
//! 1. The receiver reads its clock (`t_R`) and runs an ordinary DTLS 1.2
//!    handshake (cookie exchange included), in PSK mode (`PSK-AES128-CCM8`,
//!    the talk's TinyDTLS setting) or certificate mode (pinned P-256
//!    certificate, `ECDHE-ECDSA-AES128-GCM-SHA256`). Nothing is added to the
//!    handshake messages.
//! 2. Both ends derive a 32-byte nonce with the RFC 5705 exporter, label
//!    [`EXPORTER_LABEL`]. It replaces the talk's 32-byte sync request in the
//!    Server Hello: it costs no bytes, is fresh for every session, and ties the
//!    signed response to this session (a response recorded in one session
//!    fails the nonce check in any other).
//! 3. The sender's first protected records are its sync response (RFC 4082
//!    section 3.3, `authtime_tesla::SyncResponse`) over that nonce, signed at
//!    the TESLA layer with the bootstrap scheme (Ed25519, P-256, ML-DSA,
//!    SLH-DSA, LMS) and split into fragments of at most [`FRAGMENT_SIZE`]
//!    bytes, one per record. Because it is signed above DTLS it is verifiable
//!    without the DTLS session, and post-quantum even though OpenSSL 3.0's
//!    handshake is not. The receiver bounds the sender's clock by the whole
//!    interval from `t_R` to the response (direct time synchronisation).
//! 4. Then every data record carries a TESLA packet
//!    (`header | payload | i | K_{i-d} | MAC`). The sender builds each packet
//!    once and writes the same bytes into every session: DTLS record MACs are
//!    pairwise, the TESLA MAC authenticates the sender to every receiver (the
//!    packets could equally go out by multicast).
//!
//! # Flows
//!
//! [`sender_flow`] accepts receivers and streams an input to them;
//! [`receiver_flow`] connects (retrying) and writes the authenticated stream.
//! Both report through events and return values and print nothing; the
//! `authtime tesla dtls-send`/`dtls-recv` commands print them.
//!
//! # Not here
//!
//! DTLS 1.3 (OpenSSL 3.0 has none), retransmission timers (OpenSSL's DTLS
//! timers need its own datagram BIO; on loopback no flight is lost, elsewhere
//! a lost flight fails the handshake after the read timeout), concurrent
//! handshakes (the server accepts clients one after another), and a custom
//! hello extension carrying the sync request (the exporter makes it needless).

mod channel;
pub mod config;
pub mod flights;
mod flow_error;
pub mod receiver_flow;
pub mod sender_flow;
mod session;
mod signers;

use std::fmt;

pub use channel::DatagramChannel;
pub use config::{DtlsMode, SelfSigned, client_context, server_context};
pub use flow_error::DtlsFlowError;
pub use receiver_flow::{
    ConnectEvent, ConnectFailure, ReceiveOutcome, connect_retrying, receive_stream,
};
pub use sender_flow::{AcceptEvent, StreamCounts, accept_receivers, stream_input};
pub use session::{
    Accepted, BootstrapTiming, DtlsStream, EXPORTER_LABEL, FRAGMENT_SIZE, NONCE_LEN,
    TeslaDtlsClient, TeslaDtlsServer, accept_session, connect_session, read_record, session_nonce,
    write_record,
};
pub use signers::{SchemeSigner, SchemeVerifier};

use authtime_tesla::{BootstrapError, SenderError, Time};

/// Why a DTLS-carried TESLA exchange failed.
#[non_exhaustive]
#[derive(Debug)]
pub enum DtlsError {
    /// A socket error.
    Io(std::io::Error),
    /// OpenSSL reported an error (handshake, record layer, configuration).
    Ssl(String),
    /// Nothing arrived within the read timeout.
    Timeout,
    /// The peer closed the session.
    Closed,
    /// The TESLA bootstrap was refused.
    Bootstrap(BootstrapError),
    /// The TESLA sender failed.
    Sender(SenderError),
}

impl fmt::Display for DtlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "socket: {e}"),
            Self::Ssl(e) => write!(f, "DTLS: {e}"),
            Self::Timeout => f.write_str("timed out"),
            Self::Closed => f.write_str("session closed by the peer"),
            Self::Bootstrap(e) => write!(f, "TESLA bootstrap: {e}"),
            Self::Sender(e) => write!(f, "TESLA sender: {e}"),
        }
    }
}

impl std::error::Error for DtlsError {}

impl From<std::io::Error> for DtlsError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<openssl::error::ErrorStack> for DtlsError {
    fn from(e: openssl::error::ErrorStack) -> Self {
        Self::Ssl(e.to_string())
    }
}

/// The system clock as TESLA time (nanoseconds since 1970): the sender's clock.
#[must_use]
pub fn unix_time() -> Time {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    Time(ns)
}
