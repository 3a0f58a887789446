//! The stream receiver's bootstrap over UDP: sync requests with fresh
//! nonces, repeated with a doubling back-off, until a signed response
//! verifies; packets of the group that arrive meanwhile are kept (bounded)
//! with their arrival times, for the receiver to judge afterwards (the clock
//! bound holds for any local time, so each gets the safety check it would
//! have had on arrival).

use std::fmt;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use crate::multicast::wall_clock;
use crate::{BootstrapError, BootstrapVerifier, Receiver, ReceiverConfig, SyncClient, Time};

/// The first sync request is repeated after this long without a response,
/// and each later one after twice as long as the one before: every request
/// costs the sender a signature (and an LMS key one of its 1024 leaves).
const FIRST_SYNC_RETRY: Duration = Duration::from_secs(1);
/// Outstanding requests whose responses are still accepted.
const MAX_OUTSTANDING: usize = 8;
/// Largest datagram read.
pub(crate) const MAX_DATAGRAM: usize = 65_536;

/// A completed bootstrap.
#[derive(Debug)]
pub struct Bootstrapped {
    /// The receiver, bound to the sender's clock.
    pub receiver: Receiver,
    /// Round trip of the request that was answered.
    pub rtt: Duration,
    /// Fragments of the answer.
    pub fragments: u64,
    /// Group packets that arrived meanwhile, with their arrival times.
    pub early: Vec<(Vec<u8>, Time)>,
    /// Group packets dropped meanwhile for lack of room.
    pub early_overflow: u64,
}

/// What went wrong last while bootstrapping, for the no-answer report.
#[non_exhaustive]
#[derive(Debug)]
pub enum LastProblem {
    /// Nothing came back.
    NoAnswer,
    /// The request could not be sent.
    Send(std::io::Error),
    /// The sync socket reported an error.
    SyncSocket(std::io::Error),
    /// A response was unusable (not a signature failure).
    Response(BootstrapError),
}

impl fmt::Display for LastProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAnswer => f.write_str("no answer"),
            Self::Send(e) => write!(f, "cannot send the sync request: {e}"),
            Self::SyncSocket(e) => write!(f, "sync socket: {e}"),
            Self::Response(e) => write!(f, "{e}"),
        }
    }
}

/// Why there is no bootstrap.
#[non_exhaustive]
#[derive(Debug)]
pub enum StreamBootstrapError {
    /// The system gave no random bytes.
    Random(getrandom::Error),
    /// The sync request could not be made.
    Request(BootstrapError),
    /// The response's signature (or scheme) does not match the public key.
    Refused(BootstrapError),
    /// Nothing usable before the timeout; what went wrong last.
    NoAnswer(LastProblem),
}

impl fmt::Display for StreamBootstrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Random(e) => write!(f, "no random bytes: {e}"),
            Self::Request(e) | Self::Refused(e) => write!(f, "{e}"),
            Self::NoAnswer(last) => write!(f, "no bootstrap: {last}"),
        }
    }
}

impl std::error::Error for StreamBootstrapError {}

/// Sends sync requests on `sync_socket` (non-blocking, connected to the
/// sender) until a response verifies with `verifier` or `timeout` passes,
/// keeping up to `max_early_bytes` of the packets arriving on
/// `group_socket` (which should have a short read timeout) meanwhile.
///
/// # Errors
/// No random bytes, a refused response, or no usable response in time.
pub fn bootstrap_stream(
    group_socket: &UdpSocket,
    sync_socket: &UdpSocket,
    verifier: &dyn BootstrapVerifier,
    config: &ReceiverConfig,
    timeout: Duration,
    max_early_bytes: usize,
) -> Result<Bootstrapped, StreamBootstrapError> {
    use StreamBootstrapError as E;
    let deadline = Instant::now() + timeout;
    let mut clients: Vec<SyncClient> = Vec::new();
    let mut last_request: Option<Instant> = None;
    let mut retry = FIRST_SYNC_RETRY;
    let mut last_problem = LastProblem::NoAnswer;
    let mut early = Vec::new();
    let (mut early_bytes, mut early_overflow) = (0usize, 0u64);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while Instant::now() < deadline {
        if last_request.is_none_or(|t| t.elapsed() >= retry) {
            if last_request.is_some() {
                retry = retry.saturating_mul(2);
            }
            last_request = Some(Instant::now());
            let mut nonce = [0u8; 32];
            getrandom::fill(&mut nonce).map_err(E::Random)?;
            let (client, request) =
                SyncClient::new(&nonce, wall_clock(), config.clone()).map_err(E::Request)?;
            if let Err(e) = sync_socket.send(&request) {
                last_problem = LastProblem::Send(e);
            }
            if clients.len() == MAX_OUTSTANDING {
                clients.remove(0);
            }
            clients.push(client);
        }
        // The sync socket first: its timing is the clock bound.
        for _ in 0..64 {
            let n = match sync_socket.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    last_problem = LastProblem::SyncSocket(e);
                    break;
                }
            };
            let now = wall_clock();
            for client in &mut clients {
                match client.handle(&buf[..n], now, verifier) {
                    Ok(None) | Err(BootstrapError::NotOurs) => {}
                    Ok(Some(receiver)) => {
                        return Ok(Bootstrapped {
                            receiver,
                            rtt: Duration::from_nanos(now.0.saturating_sub(client.sent_at().0)),
                            fragments: client.reassembly_stats().fragments,
                            early,
                            early_overflow,
                        });
                    }
                    Err(
                        e @ (BootstrapError::BadSignature | BootstrapError::SchemeMismatch { .. }),
                    ) => return Err(E::Refused(e)),
                    Err(e) => last_problem = LastProblem::Response(e),
                }
            }
        }
        // A timeout just means polling again.
        if let Ok(n) = group_socket.recv(&mut buf) {
            if early_bytes + n <= max_early_bytes {
                early_bytes += n;
                early.push((buf[..n].to_vec(), wall_clock()));
            } else {
                early_overflow += 1;
            }
        }
    }
    Err(E::NoAnswer(last_problem))
}
