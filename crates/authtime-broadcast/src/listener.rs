//! The broadcast client as a process runs it: a bootstrap by direct time
//! synchronisation, repeated until a deadline, then one datagram of the group
//! at a time through the sans-IO [`BroadcastClient`], with an optional
//! two-way reference (an NTS measurement) that every accepted estimate must
//! agree with. Results are [`ListenEvent`] values; nothing is printed.
//!
//! The safety check runs on [`monotonic_time`]; samples are reported against
//! the system clock through a [`ClockPair`] read once at start.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use authtime_tesla::{BootstrapError, BootstrapVerifier, Receiver, ReceiverConfig, SyncClient};

use crate::client::{Bootstrap, BroadcastClient, ClientConfig, Rejection};
use crate::net::{monotonic_time, unix_time};

/// A sync request is repeated after this long without an answer.
const SYNC_RETRY: Duration = Duration::from_secs(1);

/// The monotonic clock against the system clock, read once.
#[derive(Debug, Clone, Copy)]
pub struct ClockPair {
    wall_minus_mono: i128,
}

impl ClockPair {
    /// Reads both clocks now.
    #[must_use]
    pub fn read() -> Self {
        let mono = monotonic_time();
        let wall = unix_time();
        Self {
            wall_minus_mono: i128::from(wall.0) - i128::from(mono.0),
        }
    }

    /// An offset from the monotonic clock as an offset from the system clock.
    #[must_use]
    pub fn to_system(&self, offset_ns: i64) -> i64 {
        i64::try_from(i128::from(offset_ns) - self.wall_minus_mono).unwrap_or(i64::MIN)
    }
}

/// What went wrong last while bootstrapping, for the no-answer report.
#[non_exhaustive]
#[derive(Debug)]
pub enum LastProblem {
    /// Nothing came back.
    NoAnswer,
    /// The request could not be sent.
    Send(std::io::Error),
    /// A response was unusable (not a signature failure).
    Response(BootstrapError),
}

impl fmt::Display for LastProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAnswer => f.write_str("no answer"),
            Self::Send(e) => write!(f, "cannot send the sync request: {e}"),
            Self::Response(e) => write!(f, "{e}"),
        }
    }
}

/// Why the listener has no bootstrap.
#[non_exhaustive]
#[derive(Debug)]
pub enum ListenBootstrapError {
    /// No UDP socket.
    Socket(std::io::Error),
    /// The sync address cannot be reached.
    Connect {
        /// The server's sync address.
        sync_addr: SocketAddr,
        /// The socket error.
        error: std::io::Error,
    },
    /// A socket option was refused.
    SocketOption(std::io::Error),
    /// The system gave no random bytes.
    Random(getrandom::Error),
    /// The sync request could not be made.
    Request(BootstrapError),
    /// The response's signature (or scheme) does not match the public key.
    Refused(BootstrapError),
    /// Nothing usable before the deadline.
    NoAnswer {
        /// The server's sync address.
        sync_addr: SocketAddr,
        /// What went wrong last.
        last_problem: LastProblem,
    },
}

impl fmt::Display for ListenBootstrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Socket(e) => write!(f, "cannot open a UDP socket: {e}"),
            Self::Connect { sync_addr, error } => write!(f, "{sync_addr}: cannot reach: {error}"),
            Self::SocketOption(e) => write!(f, "sync socket: {e}"),
            Self::Random(e) => write!(f, "no random bytes: {e}"),
            Self::Request(e) | Self::Refused(e) => write!(f, "{e}"),
            Self::NoAnswer {
                sync_addr,
                last_problem,
            } => write!(f, "no bootstrap from {sync_addr}: {last_problem}"),
        }
    }
}

impl std::error::Error for ListenBootstrapError {}

/// Direct time synchronisation with `sync_addr` on the monotonic clock,
/// requests repeated every second until `deadline`: the client and the
/// round trip of the request that succeeded.
///
/// # Errors
/// Local failures, a response that does not verify
/// ([`ListenBootstrapError::Refused`]), or no usable response in time.
pub fn bootstrap_until(
    sync_addr: SocketAddr,
    verifier: &dyn BootstrapVerifier,
    receiver_config: &ReceiverConfig,
    config: ClientConfig,
    deadline: Instant,
) -> Result<(BroadcastClient, Duration), ListenBootstrapError> {
    use ListenBootstrapError as E;
    let unspecified = match sync_addr {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let socket = UdpSocket::bind((unspecified, 0)).map_err(E::Socket)?;
    socket
        .connect(sync_addr)
        .map_err(|error| E::Connect { sync_addr, error })?;
    let mut buf = [0u8; 2048];
    let mut last_problem = LastProblem::NoAnswer;
    while Instant::now() < deadline {
        let mut nonce = [0u8; 32];
        getrandom::fill(&mut nonce).map_err(E::Random)?;
        let sent_at = monotonic_time();
        let (mut sync, request) =
            SyncClient::new(&nonce, sent_at, receiver_config.clone()).map_err(E::Request)?;
        if let Err(e) = socket.send(&request) {
            last_problem = LastProblem::Send(e);
        }
        let attempt_end = (Instant::now() + SYNC_RETRY).min(deadline);
        let receiver: Option<Receiver> = loop {
            let left = attempt_end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break None;
            }
            socket
                .set_read_timeout(Some(left))
                .map_err(E::SocketOption)?;
            let Ok(n) = socket.recv(&mut buf) else {
                // A timeout, or the server not listening yet (ICMP refused).
                std::thread::sleep(left.min(Duration::from_millis(50)));
                continue;
            };
            match sync.handle(&buf[..n], monotonic_time(), verifier) {
                Ok(Some(r)) => break Some(r),
                Ok(None) | Err(BootstrapError::NotOurs) => {}
                Err(e @ (BootstrapError::BadSignature | BootstrapError::SchemeMismatch { .. })) => {
                    return Err(E::Refused(e));
                }
                Err(e) => last_problem = LastProblem::Response(e),
            }
        };
        let Some(receiver) = receiver else { continue };
        let arrived = monotonic_time();
        let bound = *receiver.clock_bound();
        let sender_time = i128::from(bound.reference.0) + i128::from(bound.offset_ns);
        let lower = sender_time - i128::from(arrived.0);
        let sender_unix_secs = i64::try_from(sender_time / 1_000_000_000).unwrap_or(0);
        let rtt = Duration::from_nanos(arrived.0.saturating_sub(sent_at.0));
        let client = BroadcastClient::new(
            receiver,
            Bootstrap {
                bound,
                lower_offset_ns: i64::try_from(lower).unwrap_or(i64::MIN),
            },
            config,
            sender_unix_secs,
        );
        return Ok((client, rtt));
    }
    Err(E::NoAnswer {
        sync_addr,
        last_problem,
    })
}

/// A two-way measurement of the system clock's offset (from NTS, say) that
/// broadcast estimates must agree with: the delay attack on one-way time
/// (Teichel, Sibold, Milius) can shift the broadcast estimate within the
/// TESLA bound, and this bounds the shift independently.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reference {
    /// The reference's offset, in seconds.
    pub offset_s: f64,
    /// Its round-trip delay, in seconds.
    pub delay_s: f64,
    /// Extra disagreement allowed, in milliseconds.
    pub tolerance_ms: f64,
}

/// What one datagram of the group led to. Offsets are against the system clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ListenEvent {
    /// An authenticated, safe sample within the bounds (and the reference).
    Accepted {
        /// Samples accepted so far, this one included.
        count: u64,
        /// This sample's offset.
        offset_ns: i64,
        /// The client's estimate.
        estimate_ns: i64,
        /// The estimate's uncertainty.
        uncertainty_ns: u64,
    },
    /// An authenticated sample whose estimate disagrees with the reference.
    DisagreesWithReference {
        /// The client's estimate.
        estimate_ns: i64,
        /// How far from the reference, in milliseconds.
        disagreement_ms: f64,
        /// How far it may be, in milliseconds.
        allowed_ms: f64,
    },
    /// An authenticated sample the client refused.
    Refused {
        /// The sample's offset.
        offset_ns: i64,
        /// Why.
        why: Rejection,
    },
}

/// A bootstrapped client fed from the group socket.
#[derive(Debug)]
pub struct Listener {
    client: BroadcastClient,
    clocks: ClockPair,
    reference: Option<Reference>,
    accepted: u64,
    disagreements: u64,
    buf: Vec<u8>,
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

impl Listener {
    /// A listener for `client`, reporting against the system clock through `clocks`.
    #[must_use]
    pub fn new(client: BroadcastClient, clocks: ClockPair, reference: Option<Reference>) -> Self {
        Self {
            client,
            clocks,
            reference,
            accepted: 0,
            disagreements: 0,
            buf: vec![0; 65_536],
        }
    }

    /// The client (its receiver's parameters, its statistics).
    #[must_use]
    pub fn client(&self) -> &BroadcastClient {
        &self.client
    }

    /// Samples accepted so far.
    #[must_use]
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    /// Samples that disagreed with the reference.
    #[must_use]
    pub fn disagreements(&self) -> u64 {
        self.disagreements
    }

    /// Waits for one datagram on `socket` (as long as its read timeout) and
    /// returns what it led to; nothing on a timeout.
    pub fn receive(&mut self, socket: &UdpSocket) -> Vec<ListenEvent> {
        let Ok(n) = socket.recv(&mut self.buf) else {
            return Vec::new();
        };
        let arrived = monotonic_time();
        let samples = self.client.handle(&self.buf[..n], arrived);
        let mut events = Vec::with_capacity(samples.len());
        for sample in samples {
            let now = monotonic_time();
            let to_system = |ns| self.clocks.to_system(ns);
            match sample.verdict {
                Ok(()) => {
                    let estimate = self.client.offset_ns().unwrap_or(sample.offset_ns);
                    let uncertainty = self.client.uncertainty_ns(now).unwrap_or(u64::MAX);
                    if let Some(reference) = &self.reference {
                        let disagreement =
                            (ms(to_system(estimate)) - reference.offset_s * 1e3).abs();
                        let allowed = uncertainty as f64 / 1e6
                            + reference.delay_s.abs() * 1e3
                            + reference.tolerance_ms;
                        if disagreement > allowed {
                            self.disagreements += 1;
                            events.push(ListenEvent::DisagreesWithReference {
                                estimate_ns: to_system(estimate),
                                disagreement_ms: disagreement,
                                allowed_ms: allowed,
                            });
                            continue;
                        }
                    }
                    self.accepted += 1;
                    events.push(ListenEvent::Accepted {
                        count: self.accepted,
                        offset_ns: to_system(sample.offset_ns),
                        estimate_ns: to_system(estimate),
                        uncertainty_ns: uncertainty,
                    });
                }
                Err(why) => events.push(ListenEvent::Refused {
                    offset_ns: to_system(sample.offset_ns),
                    why,
                }),
            }
        }
        events
    }
}
