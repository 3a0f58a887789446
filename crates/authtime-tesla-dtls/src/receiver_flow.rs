//! The receiver's flow over DTLS: the handshake and bootstrap retried until
//! a deadline (the sender may not listen yet, and a lost flight is not
//! retransmitted), then the records read and the authenticated payloads
//! written in stream order until the stream ends, the session closes or no
//! record arrives for a while. Reports are [`ConnectEvent`]s and return
//! values; nothing is printed.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use authtime_tesla::stream_frame::StreamWriter;
use authtime_tesla::{BootstrapError, BootstrapVerifier, ReceiverConfig, Stats, Status};

use crate::flow_error::DtlsFlowError;
use crate::{DtlsError, DtlsMode, TeslaDtlsClient, unix_time};

/// A failed attempt that the flow retries.
#[non_exhaustive]
#[derive(Debug)]
pub enum ConnectEvent {
    /// The bootstrap failed for a reason other than the signature (the
    /// handshake took too long for a useful clock bound, say).
    BootstrapAttemptFailed(BootstrapError),
    /// The handshake failed for a reason other than a timeout.
    HandshakeAttemptFailed(DtlsError),
}

/// Why there is no bootstrapped client.
#[non_exhaustive]
#[derive(Debug)]
pub enum ConnectFailure {
    /// The sync response does not verify with the public key.
    Refused(BootstrapError),
    /// No bootstrap before the deadline, after this many attempts.
    NoAnswer {
        /// Handshakes tried.
        attempts: u32,
    },
    /// The event handler failed.
    Report(io::Error),
}

impl std::fmt::Display for ConnectFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused(e) => write!(f, "the sync response does not verify: {e}"),
            Self::NoAnswer { attempts } => {
                write!(f, "no bootstrap ({attempts} handshake attempts)")
            }
            Self::Report(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ConnectFailure {}

/// Connects to `server` until a bootstrap succeeds or `timeout` passes,
/// each attempt limited to `attempt`.
///
/// # Errors
/// A refused sync response, no bootstrap in time, or `on_event` failed.
pub fn connect_retrying(
    server: SocketAddr,
    mode: &DtlsMode,
    verifier: &dyn BootstrapVerifier,
    config: &ReceiverConfig,
    timeout: Duration,
    attempt: Duration,
    on_event: &mut dyn FnMut(ConnectEvent) -> io::Result<()>,
) -> Result<TeslaDtlsClient, ConnectFailure> {
    let deadline = Instant::now() + timeout;
    let mut attempts = 0u32;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ConnectFailure::NoAnswer { attempts });
        }
        attempts += 1;
        match TeslaDtlsClient::connect(
            server,
            mode,
            verifier,
            config.clone(),
            &unix_time,
            left.min(attempt),
        ) {
            Ok(c) => return Ok(c),
            Err(DtlsError::Bootstrap(
                e @ (BootstrapError::BadSignature | BootstrapError::SchemeMismatch { .. }),
            )) => return Err(ConnectFailure::Refused(e)),
            Err(DtlsError::Timeout | DtlsError::Io(_)) => {}
            // The handshake took too long for a useful clock bound (the
            // sender was busy with another receiver): a fresh one may not.
            Err(DtlsError::Bootstrap(e)) => {
                on_event(ConnectEvent::BootstrapAttemptFailed(e)).map_err(ConnectFailure::Report)?
            }
            Err(e) => {
                on_event(ConnectEvent::HandshakeAttemptFailed(e))
                    .map_err(ConnectFailure::Report)?;
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// How [`receive_stream`] ended.
#[derive(Debug)]
pub struct ReceiveOutcome {
    /// The payloads written, in order, and what was missing.
    pub writer: StreamWriter,
    /// Why the session ended before the stream did, if it did.
    pub closed: Option<DtlsError>,
    /// Whether the clock bound was found violated.
    pub clock_bound_violated: bool,
    /// The receiver's counters.
    pub stats: Stats,
}

impl ReceiveOutcome {
    /// Packets rejected as forged or broken.
    #[must_use]
    pub fn failed(&self) -> u64 {
        let s = &self.stats;
        s.malformed
            + s.bad_mac
            + s.bad_keys
            + s.keys_too_far
            + s.keys_unreachable
            + s.future_interval
            + s.future_keys
            + s.clock_violations
            + s.refused
    }
}

/// Reads records from `client` and writes the authenticated stream to
/// `out` until the end marker, a violated clock bound, a closed session, or
/// `idle` without a record; `out` is flushed at the end.
///
/// # Errors
/// `out` failed ([`DtlsFlowError::Output`]).
pub fn receive_stream(
    client: &mut TeslaDtlsClient,
    out: &mut dyn Write,
    idle: Duration,
) -> Result<ReceiveOutcome, DtlsFlowError> {
    let mut writer = StreamWriter::default();
    let mut last_record = Instant::now();
    let mut closed = None;
    while !writer.ended && !client.receiver().is_refused() {
        match client.recv(&unix_time) {
            Ok(Status::Authenticated { released, .. }) => {
                last_record = Instant::now();
                writer
                    .deliver(released, out)
                    .map_err(DtlsFlowError::Output)?;
            }
            Ok(_) => last_record = Instant::now(),
            Err(DtlsError::Timeout) if last_record.elapsed() < idle => {}
            Err(DtlsError::Timeout) => break,
            Err(e) => {
                closed = Some(e);
                break;
            }
        }
    }
    out.flush().map_err(DtlsFlowError::Output)?;
    Ok(ReceiveOutcome {
        writer,
        closed,
        clock_bound_violated: client.receiver().is_refused(),
        stats: client.receiver().stats(),
    })
}
