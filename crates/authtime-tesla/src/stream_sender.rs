//! The TESLA stream sender driver: cuts a stream into payloads and
//! multicasts them in TESLA packets, discloses keys every interval, answers
//! sync requests with signed responses, and after the input ends keeps
//! disclosing keys for `d + 1` intervals so receivers can authenticate the
//! tail.
//!
//! One thread runs the protocol (sockets are polled without blocking, so a
//! sync request waits at most a millisecond); [`spawn_reader`] reads the
//! input on another, since a read from a pipe can block for as long as the
//! writer likes; sync responses are signed on a third, since a slow
//! signature (SLH-DSA takes a good fraction of a second) must not hold up
//! the stream. Progress is reported as [`SendEvent`]s; nothing is printed.

use std::fmt;
use std::io::{self, Read};
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::mpsc::{self, Receiver as Channel, TryRecvError};
use std::time::{Duration, Instant};

use crate::multicast::wall_clock;
use crate::stream_frame::{encode_data, encode_end};
use crate::stream_sign::{SignJob, SignOutcome, spawn_signer};
use crate::{BootstrapSigner, ParamError, Params, Sender, SenderError, Time, mac_by_name};

/// Data packets sent at most per loop turn when the pacing fell behind.
const MAX_BURST: u32 = 64;
/// Sync requests handled at most per loop turn.
const MAX_SYNCS_PER_TURN: u32 = 8;
/// Input chunks queued between the reader thread and the protocol loop.
const INPUT_QUEUE: usize = 64;

/// Why the stream parameters are refused.
#[non_exhaustive]
#[derive(Debug)]
pub enum StreamParamsError {
    /// The MAC name is unknown or not usable for TESLA.
    Mac(ParamError),
    /// The interval in milliseconds overflows nanoseconds.
    IntervalTooLong(u64),
    /// TESLA refuses the combination.
    Invalid(ParamError),
}

impl fmt::Display for StreamParamsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mac(e) | Self::Invalid(e) => write!(f, "{e}"),
            Self::IntervalTooLong(ms) => write!(f, "{ms} ms is too long"),
        }
    }
}

impl std::error::Error for StreamParamsError {}

/// The parameters of a stream sender starting at `t0`: the MAC `mac_name`
/// with `mac_len`-byte tags, intervals of `interval_ms`, disclosure delay
/// `d`, chains of `n` keys, and a rollover lead long enough that a receiver
/// losing a few packets still authenticates one carrying the next
/// commitment, short enough to leave time to build it.
///
/// # Errors
/// An unknown MAC, an interval too long, or parameters TESLA refuses.
pub fn stream_params(
    mac_name: &str,
    mac_len: u8,
    interval_ms: u64,
    d: u32,
    n: u32,
    t0: Time,
) -> Result<Params, StreamParamsError> {
    let mac = mac_by_name(mac_name).map_err(StreamParamsError::Mac)?;
    let interval_ns = interval_ms
        .checked_mul(1_000_000)
        .ok_or(StreamParamsError::IntervalTooLong(interval_ms))?;
    let lead = d.saturating_mul(4).max(16).min((n / 2).max(1));
    let params = Params {
        t0,
        interval_ns,
        disclosure_delay: d,
        chain_len: n,
        mac,
        tag_len: mac_len,
        rollover_lead: lead,
    };
    params.validate().map_err(StreamParamsError::Invalid)?;
    Ok(params)
}

/// Reads `input` in a thread, one chunk of at most `size` bytes per read;
/// the channel ends with the input (or after its first error).
#[must_use]
pub fn spawn_reader(mut input: Box<dyn Read + Send>, size: usize) -> Channel<io::Result<Vec<u8>>> {
    let (tx, rx) = mpsc::sync_channel(INPUT_QUEUE);
    std::thread::spawn(move || {
        loop {
            let mut chunk = vec![0; size];
            match input.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    chunk.truncate(n);
                    if tx.send(Ok(chunk)).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    break;
                }
            }
        }
    });
    rx
}

/// How the sender paces and answers, besides its sockets.
#[derive(Debug, Clone)]
pub struct StreamSenderConfig {
    /// Data packets per second at most.
    pub rate: f64,
    /// Hold the data until this many sync requests were answered.
    pub wait_sync: u32,
    /// Start anyway after this long waiting for them.
    pub wait_timeout: Duration,
    /// Sync responses per second at most.
    pub max_syncs_per_s: u32,
    /// Fault injection: do not send every Nth data packet.
    pub drop_every: Option<u32>,
    /// Fault injection: send the data packets of each pair in swapped order.
    pub reorder: bool,
}

/// Counters of one run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SendStats {
    /// Data packets built (sent or dropped on purpose).
    pub data_packets: u64,
    /// Stream bytes in them.
    pub stream_bytes: u64,
    /// Datagram bytes sent to the group.
    pub wire_bytes: u64,
    /// Key-disclosure packets.
    pub key_disclosures: u64,
    /// End-of-stream packets.
    pub end_markers: u64,
    /// Data packets not sent (`drop_every`).
    pub dropped_on_purpose: u64,
    /// Sync requests answered.
    pub syncs_answered: u64,
    /// Fragments of those answers.
    pub sync_fragments: u64,
    /// Sync requests refused by the rate limit or a full signing queue.
    pub syncs_rate_limited: u64,
    /// Sync requests that could not be answered.
    pub syncs_failed: u64,
}

/// What the sender reports while it runs.
#[non_exhaustive]
#[derive(Debug)]
pub enum SendEvent {
    /// The wait for sync requests timed out; streaming starts anyway.
    WaitTimedOut {
        /// Requests answered.
        answered: u64,
        /// Requests waited for.
        wanted: u32,
    },
    /// Once a second.
    Status {
        /// The current interval.
        interval: u32,
        /// The counters.
        stats: SendStats,
    },
    /// The first failure to sign a sync response (later ones are only counted).
    SignFailed(String),
    /// The first failure to answer a sync request other than a malformed
    /// request (later ones are only counted).
    AnswerFailed(SenderError),
}

/// Why the sender stopped early.
#[non_exhaustive]
#[derive(Debug)]
pub enum SendError {
    /// The sender's key chains are used up.
    ScheduleEnded,
    /// The TESLA sender failed.
    Sender(SenderError),
    /// The input could not be read.
    Input(io::Error),
    /// A datagram could not be sent to the group.
    Send {
        /// The group.
        group: SocketAddrV4,
        /// The socket error.
        error: io::Error,
    },
    /// The sync socket could not be set up (non-blocking, cloned).
    SyncSocket(io::Error),
    /// The signing thread did not start.
    SignerThread(io::Error),
    /// The event handler failed (its output went away, say).
    Report(io::Error),
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ScheduleEnded => f.write_str("the sender's schedule ended"),
            Self::Sender(e) => write!(f, "{e}"),
            Self::Input(e) => write!(f, "reading the input: {e}"),
            Self::Send { group, error } => write!(f, "cannot send to {group}: {error}"),
            Self::SyncSocket(e) => write!(f, "sync socket: {e}"),
            Self::SignerThread(e) => write!(f, "cannot start the signing thread: {e}"),
            Self::Report(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SendError {}

/// Where the stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for `wait_sync` receivers.
    Waiting,
    /// Sending data.
    Streaming,
    /// The input ended in this interval after this many payloads: end markers
    /// until `d + 1` intervals later.
    Ending { interval: u32, count: u64 },
}

/// The event handler: gets every [`SendEvent`]; an error stops the sender.
pub type OnSendEvent<'a> = &'a mut dyn FnMut(SendEvent) -> io::Result<()>;

/// A TESLA stream sender with its sockets.
pub struct StreamSender {
    sender: Sender,
    scheme_id: u16,
    sign_jobs: mpsc::SyncSender<SignJob>,
    signed: Channel<SignOutcome>,
    group: SocketAddrV4,
    data_socket: UdpSocket,
    sync_socket: UdpSocket,
    stats: SendStats,
    sign_error_shown: bool,
}

impl fmt::Debug for StreamSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamSender")
            .field("group", &self.group)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl StreamSender {
    /// A sender multicasting to `group` through `data_socket` and answering
    /// sync requests on `sync_socket` (made non-blocking here), signed with
    /// `signer` on a thread of its own.
    ///
    /// # Errors
    /// The sync socket cannot be set up or the signing thread not started.
    pub fn new(
        sender: Sender,
        signer: Box<dyn BootstrapSigner + Send>,
        group: SocketAddrV4,
        data_socket: UdpSocket,
        sync_socket: UdpSocket,
    ) -> Result<Self, SendError> {
        sync_socket
            .set_nonblocking(true)
            .map_err(SendError::SyncSocket)?;
        let scheme_id = signer.scheme_id();
        let answer_socket = sync_socket.try_clone().map_err(SendError::SyncSocket)?;
        let (sign_jobs, signed) =
            spawn_signer(signer, answer_socket).map_err(SendError::SignerThread)?;
        Ok(Self {
            sender,
            scheme_id,
            sign_jobs,
            signed,
            group,
            data_socket,
            sync_socket,
            stats: SendStats::default(),
            sign_error_shown: false,
        })
    }

    /// The counters so far.
    #[must_use]
    pub fn stats(&self) -> SendStats {
        self.stats
    }

    /// Runs until `chunks` ends and the tail keys are disclosed.
    ///
    /// # Errors
    /// The schedule ended, the sender or a socket failed, the input could
    /// not be read, or `on_event` failed.
    pub fn run(
        &mut self,
        config: &StreamSenderConfig,
        chunks: &Channel<io::Result<Vec<u8>>>,
        on_event: OnSendEvent<'_>,
    ) -> Result<SendStats, SendError> {
        let d = self.sender.params().disclosure_delay;
        let started = Instant::now();
        let pace = Duration::from_secs_f64(1.0 / config.rate);
        let mut next_data_at = Instant::now();
        let mut last_interval: Option<u32> = None;
        let mut last_status = Instant::now();
        let mut phase = if config.wait_sync > 0 {
            Phase::Waiting
        } else {
            Phase::Streaming
        };
        let mut seq: u64 = 0;
        let mut held: Option<Vec<u8>> = None;
        let max_syncs = f64::from(config.max_syncs_per_s);
        let mut tokens = max_syncs;
        let mut tokens_at = Instant::now();
        loop {
            // Sync requests first: their round trip bounds the receivers' clocks.
            let elapsed = tokens_at.elapsed().as_secs_f64();
            tokens_at = Instant::now();
            tokens = (tokens + elapsed * max_syncs).min(max_syncs);
            self.answer_syncs(&mut tokens, on_event)?;
            if phase == Phase::Waiting
                && (self.stats.syncs_answered >= u64::from(config.wait_sync)
                    || started.elapsed() >= config.wait_timeout)
            {
                if self.stats.syncs_answered < u64::from(config.wait_sync) {
                    on_event(SendEvent::WaitTimedOut {
                        answered: self.stats.syncs_answered,
                        wanted: config.wait_sync,
                    })
                    .map_err(SendError::Report)?;
                }
                phase = Phase::Streaming;
                next_data_at = Instant::now();
            }

            // One key disclosure (or end marker) at the start of every interval.
            let now = wall_clock();
            let interval = self.interval_at(now).ok_or(SendError::ScheduleEnded)?;
            if last_interval != Some(interval) {
                last_interval = Some(interval);
                if let Phase::Ending {
                    interval: end,
                    count,
                } = phase
                {
                    self.end_marker(count, now)?;
                    if interval >= end.saturating_add(d).saturating_add(1) {
                        return Ok(self.stats);
                    }
                } else {
                    let packet = self.sender.key_disclosure(now).map_err(SendError::Sender)?;
                    self.transmit(&packet)?;
                    self.stats.key_disclosures += 1;
                }
            }

            // Data at the paced rate.
            let mut sent_this_turn = 0;
            while phase == Phase::Streaming
                && Instant::now() >= next_data_at
                && sent_this_turn < MAX_BURST
            {
                let chunk = match chunks.try_recv() {
                    Ok(chunk) => chunk.map_err(SendError::Input)?,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        if let Some(packet) = held.take() {
                            self.transmit(&packet)?;
                        }
                        let now = wall_clock();
                        self.end_marker(seq, now)?;
                        let interval = self.interval_at(now).unwrap_or(interval);
                        last_interval = Some(interval);
                        phase = Phase::Ending {
                            interval,
                            count: seq,
                        };
                        break;
                    }
                };
                let packet = self
                    .sender
                    .packet(&encode_data(seq, &chunk), wall_clock())
                    .map_err(SendError::Sender)?;
                seq += 1;
                sent_this_turn += 1;
                self.stats.data_packets += 1;
                self.stats.stream_bytes += chunk.len() as u64;
                // Pace from the schedule, but do not make up for more than a
                // second of idle input in one burst.
                let floor = Instant::now()
                    .checked_sub(Duration::from_secs(1))
                    .unwrap_or_else(Instant::now);
                next_data_at = (next_data_at + pace).max(floor);
                if config
                    .drop_every
                    .is_some_and(|n| seq.is_multiple_of(u64::from(n)))
                {
                    self.stats.dropped_on_purpose += 1;
                    continue;
                }
                if config.reorder {
                    match held.take() {
                        None => held = Some(packet),
                        Some(earlier) => {
                            self.transmit(&packet)?;
                            self.transmit(&earlier)?;
                        }
                    }
                } else {
                    self.transmit(&packet)?;
                }
            }

            if last_status.elapsed() >= Duration::from_secs(1) {
                last_status = Instant::now();
                on_event(SendEvent::Status {
                    interval,
                    stats: self.stats,
                })
                .map_err(SendError::Report)?;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    fn interval_at(&self, now: Time) -> Option<u32> {
        self.sender.params().schedule().interval_at(now)
    }

    /// Sends one end-of-stream packet after `count` payloads.
    fn end_marker(&mut self, count: u64, now: Time) -> Result<(), SendError> {
        let packet = self
            .sender
            .packet(&encode_end(count), now)
            .map_err(SendError::Sender)?;
        self.transmit(&packet)?;
        self.stats.end_markers += 1;
        Ok(())
    }

    /// Sends one datagram to the group.
    fn transmit(&mut self, packet: &[u8]) -> Result<(), SendError> {
        self.data_socket
            .send_to(packet, SocketAddr::V4(self.group))
            .map_err(|error| SendError::Send {
                group: self.group,
                error,
            })?;
        self.stats.wire_bytes += packet.len() as u64;
        Ok(())
    }

    /// Answers the sync requests waiting on the socket, as the token bucket allows.
    fn answer_syncs(
        &mut self,
        tokens: &mut f64,
        on_event: OnSendEvent<'_>,
    ) -> Result<(), SendError> {
        while let Ok(outcome) = self.signed.try_recv() {
            match outcome {
                Ok(fragments) => {
                    self.stats.syncs_answered += 1;
                    self.stats.sync_fragments += fragments as u64;
                }
                Err(e) => {
                    self.stats.syncs_failed += 1;
                    if !self.sign_error_shown {
                        self.sign_error_shown = true;
                        on_event(SendEvent::SignFailed(e)).map_err(SendError::Report)?;
                    }
                }
            }
        }
        let mut request = [0u8; 256];
        for _ in 0..MAX_SYNCS_PER_TURN {
            let (n, from) = match self.sync_socket.recv_from(&mut request) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                // ICMP errors from earlier answers and the like: not fatal.
                Err(_) => continue,
            };
            if *tokens < 1.0 {
                self.stats.syncs_rate_limited += 1;
                continue;
            }
            *tokens -= 1.0;
            match self
                .sender
                .unsigned_sync_response(&request[..n], wall_clock(), self.scheme_id)
            {
                Ok(response) => {
                    let job = SignJob {
                        response,
                        to: from,
                        max_datagram: self.sender.max_datagram(),
                    };
                    if self.sign_jobs.try_send(job).is_err() {
                        self.stats.syncs_rate_limited += 1;
                    }
                }
                Err(SenderError::Request(_)) => self.stats.syncs_failed += 1,
                Err(e) => {
                    self.stats.syncs_failed += 1;
                    if !self.sign_error_shown {
                        self.sign_error_shown = true;
                        on_event(SendEvent::AnswerFailed(e)).map_err(SendError::Report)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_params_name_what_is_wrong() {
        let t0 = Time(1_000_000_000);
        let params = stream_params("hmac-sha256", 16, 100, 2, 1024, t0).expect("params");
        assert_eq!(params.interval_ns, 100_000_000);
        assert_eq!(params.rollover_lead, 16);
        assert!(matches!(
            stream_params("no-such-mac", 16, 100, 2, 1024, t0),
            Err(StreamParamsError::Mac(_))
        ));
        assert!(matches!(
            stream_params("hmac-sha256", 16, u64::MAX, 2, 1024, t0),
            Err(StreamParamsError::IntervalTooLong(_))
        ));
        assert!(matches!(
            stream_params("hmac-sha256", 4, 100, 2, 1024, t0),
            Err(StreamParamsError::Invalid(_))
        ));
    }

    #[test]
    fn the_reader_hands_over_the_input_in_chunks_and_ends() {
        let chunks = spawn_reader(Box::new(io::Cursor::new(vec![7u8; 10])), 4);
        let got: Vec<usize> = chunks.iter().map(|c| c.expect("chunk").len()).collect();
        assert_eq!(got.iter().sum::<usize>(), 10);
        assert!(got.iter().all(|&n| (1..=4).contains(&n)));
    }
}
