//! `authtime tesla send`: cuts a stream into payloads and multicasts them in
//! TESLA packets, discloses keys every interval, answers sync requests with
//! signed responses, and after the input ends keeps disclosing keys for
//! `d + 1` intervals so receivers can authenticate the tail.
//!
//! One thread runs the protocol (sockets are polled without blocking, so a
//! sync request waits at most a millisecond); another reads the input, since
//! a read from a pipe can block for as long as the writer likes. That thread
//! reads the process's standard input directly rather than [`Streams`]'s,
//! which cannot cross threads.

use std::fs::File;
use std::io::{self, Read};
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::mpsc::{self, Receiver as Channel, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use authtime_sign::SigningKey;
use authtime_tesla::{Params, Sender, SenderError, mac_by_name};
use zeroize::Zeroizing;

use crate::cli_tesla::TeslaSendArgs;
use crate::cmd_tesla_net::{
    group_addr, iface_addr, multicast_sender, seconds, socket_addr, wall_clock,
};
use crate::cmd_tesla_stream::{FRAME_HEADER_LEN, encode_data, encode_end};
use crate::{Outcome, Streams};
use authtime_tesla_dtls::SchemeSigner;

/// Largest payload: stream bytes, framing and TESLA trailer stay in one UDP datagram.
const MAX_PAYLOAD: usize = 60_000;
/// Largest sync response fragment (fits a 1280-byte IPv6 minimum MTU path).
const SYNC_DATAGRAM: usize = 1200;
/// Data packets sent at most per loop turn when the pacing fell behind.
const MAX_BURST: u32 = 64;
/// Sync requests handled at most per loop turn.
const MAX_SYNCS_PER_TURN: u32 = 8;
/// Input chunks queued between the reader thread and the protocol loop.
const INPUT_QUEUE: usize = 64;

/// Counters printed at the end.
#[derive(Debug, Default)]
struct SendStats {
    data_packets: u64,
    stream_bytes: u64,
    wire_bytes: u64,
    key_disclosures: u64,
    end_markers: u64,
    dropped_on_purpose: u64,
    syncs_answered: u64,
    sync_fragments: u64,
    syncs_rate_limited: u64,
    syncs_failed: u64,
}

/// A sync response to sign and send, or what became of one.
struct SignJob {
    response: authtime_tesla::SyncResponse,
    to: SocketAddr,
    max_datagram: usize,
}

/// What the signing thread reports for one job: fragments sent, or the error.
type SignOutcome = Result<usize, String>;

/// Sync responses waiting for the signing thread; more are refused (and
/// counted as rate limited) rather than queued without bound.
const SIGN_QUEUE: usize = 16;

/// Signs sync responses on a thread of its own, so that a slow signature
/// (SLH-DSA takes a good fraction of a second) never holds up the stream,
/// and sends their fragments.
fn spawn_signer(
    mut signer: SchemeSigner,
    socket: UdpSocket,
) -> anyhow::Result<(mpsc::SyncSender<SignJob>, Channel<SignOutcome>)> {
    let (jobs, job_rx) = mpsc::sync_channel::<SignJob>(SIGN_QUEUE);
    let (done_tx, done) = mpsc::channel::<SignOutcome>();
    std::thread::Builder::new()
        .name("tesla-sign".into())
        .spawn(move || {
            for job in job_rx {
                let outcome = job
                    .response
                    .sign_and_fragment(&mut signer, job.max_datagram)
                    .map(|fragments| {
                        for f in &fragments {
                            // A receiver that went away is its own problem.
                            let _ = socket.send_to(f, job.to);
                        }
                        fragments.len()
                    })
                    .map_err(|e| e.to_string());
                if done_tx.send(outcome).is_err() {
                    break;
                }
            }
        })
        .context("cannot start the signing thread")?;
    Ok((jobs, done))
}

/// Everything one run needs besides its counters.
struct Session {
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

/// Runs the sender until the input ends and the tail keys are disclosed.
///
/// # Errors
/// Bad arguments, an unreadable key or input file, a socket the kernel
/// refuses, a failed send to the group.
pub fn send(args: &TeslaSendArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let group = group_addr("--to", &args.to)?;
    let iface = iface_addr(args.iface.as_deref())?;
    let sync_addr = socket_addr("--sync-listen", &args.sync_listen)?;
    if !(1..=MAX_PAYLOAD).contains(&args.payload_size) {
        return Err(anyhow!(
            "--payload-size {}: must be 1 to {MAX_PAYLOAD}",
            args.payload_size
        ));
    }
    if !(args.rate > 0.0 && args.rate <= 1e6) {
        return Err(anyhow!(
            "--rate {}: must be above 0 and at most 1e6",
            args.rate
        ));
    }
    let wait_timeout = seconds("--wait-timeout", args.wait_timeout, 0.0, 86_400.0)?;
    if args.drop_every == Some(0) {
        return Err(anyhow!("--drop-every 0: must be at least 1"));
    }
    let params = params(args)?;
    let key = SigningKey::load_key_file(&args.key).map_err(|e| anyhow!("--key: {e}"))?;
    let input = match &args.input {
        Some(path) => Some(File::open(path).with_context(|| path.display().to_string())?),
        None => None,
    };

    let mut master = Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut *master).map_err(|e| anyhow!("no random bytes from the system: {e}"))?;
    let setup = Instant::now();
    let mut sender = Sender::new(params, *master, wall_clock()).map_err(|e| anyhow!("{e}"))?;
    sender.set_max_datagram(SYNC_DATAGRAM);
    let setup_ms = setup.elapsed().as_secs_f64() * 1e3;

    let data_socket = multicast_sender(iface, args.ttl)?;
    let sync_socket = UdpSocket::bind(sync_addr)
        .with_context(|| format!("--sync-listen {sync_addr}: cannot bind"))?;
    sync_socket.set_nonblocking(true).context("sync socket")?;
    let p = sender.params().clone();
    writeln!(
        streams.stderr,
        "tesla send: to {group} via {iface}, sync on {}, {} key, T_int {} ms, d {}, chain {} \
         keys ({} stored, built in {setup_ms:.0} ms), {} tag {} bytes, overhead {} bytes/packet",
        sync_socket.local_addr().unwrap_or(sync_addr),
        key.scheme(),
        p.interval_ns / 1_000_000,
        p.disclosure_delay,
        p.chain_len,
        sender.stored_keys(),
        p.mac.name(),
        p.tag_len,
        p.overhead(false) + FRAME_HEADER_LEN,
    )?;

    let chunks = spawn_reader(input, args.payload_size);
    let signer = SchemeSigner(key);
    let scheme_id = authtime_tesla::BootstrapSigner::scheme_id(&signer);
    let (sign_jobs, signed) =
        spawn_signer(signer, sync_socket.try_clone().context("sync socket")?)?;
    let mut session = Session {
        sender,
        scheme_id,
        sign_jobs,
        signed,
        group,
        data_socket,
        sync_socket,
        stats: SendStats::default(),
        sign_error_shown: false,
    };
    session.run(args, chunks, wait_timeout, streams)?;
    let s = &session.stats;
    writeln!(
        streams.stderr,
        "tesla send: done: {} data packets ({} stream bytes, {} on the wire), {} key \
         disclosures, {} end markers, {} dropped on purpose; sync: {} answered in {} fragments, \
         {} rate-limited, {} failed",
        s.data_packets,
        s.stream_bytes,
        s.wire_bytes,
        s.key_disclosures,
        s.end_markers,
        s.dropped_on_purpose,
        s.syncs_answered,
        s.sync_fragments,
        s.syncs_rate_limited,
        s.syncs_failed,
    )?;
    Ok(Outcome::Success)
}

/// The session parameters from the arguments, validated.
fn params(args: &TeslaSendArgs) -> anyhow::Result<Params> {
    session_params(
        &args.mac,
        args.mac_len,
        args.interval_ms,
        args.delay_intervals,
        args.chain_length,
        wall_clock(),
    )
}

/// The session parameters of a sender starting at `t0`, validated; the
/// arguments are named after the command-line flags they come from (shared
/// by `tesla send` and `tesla dtls-send`).
pub(crate) fn session_params(
    mac_name: &str,
    mac_len: u8,
    interval_ms: u64,
    d: u32,
    n: u32,
    t0: authtime_tesla::Time,
) -> anyhow::Result<Params> {
    let mac = mac_by_name(mac_name).map_err(|e| anyhow!("--mac {mac_name}: {e}"))?;
    let interval_ns = interval_ms
        .checked_mul(1_000_000)
        .ok_or_else(|| anyhow!("--interval-ms {interval_ms}: too long"))?;
    // Long enough that a receiver losing a few packets still authenticates one
    // carrying the next commitment, short enough to leave time to build it.
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
    params.validate().map_err(|e| anyhow!("{e}"))?;
    Ok(params)
}

/// Reads the input in a thread, one chunk of at most `size` bytes per read
/// (standard input is read directly: [`Streams`] cannot cross threads).
pub(crate) fn spawn_reader(input: Option<File>, size: usize) -> Channel<io::Result<Vec<u8>>> {
    let (tx, rx) = mpsc::sync_channel(INPUT_QUEUE);
    std::thread::spawn(move || {
        let stdin = io::stdin();
        let mut reader: Box<dyn Read> = match input {
            Some(file) => Box::new(file),
            None => Box::new(stdin.lock()),
        };
        loop {
            let mut chunk = vec![0; size];
            match reader.read(&mut chunk) {
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

/// Where the stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for `--wait-sync` receivers.
    Waiting,
    /// Sending data.
    Streaming,
    /// The input ended in this interval after this many payloads: end markers
    /// until `d + 1` intervals later.
    Ending { interval: u32, count: u64 },
}

impl Session {
    fn run(
        &mut self,
        args: &TeslaSendArgs,
        chunks: Channel<io::Result<Vec<u8>>>,
        wait_timeout: Duration,
        streams: &mut Streams<'_>,
    ) -> anyhow::Result<()> {
        let d = self.sender.params().disclosure_delay;
        let started = Instant::now();
        let pace = Duration::from_secs_f64(1.0 / args.rate);
        let mut next_data_at = Instant::now();
        let mut last_interval: Option<u32> = None;
        let mut last_status = Instant::now();
        let mut phase = if args.wait_sync > 0 {
            Phase::Waiting
        } else {
            Phase::Streaming
        };
        let mut seq: u64 = 0;
        let mut held: Option<Vec<u8>> = None;
        let mut tokens = f64::from(args.max_syncs_per_s);
        let mut tokens_at = Instant::now();
        loop {
            // Sync requests first: their round trip bounds the receivers' clocks.
            let elapsed = tokens_at.elapsed().as_secs_f64();
            tokens_at = Instant::now();
            tokens = (tokens + elapsed * f64::from(args.max_syncs_per_s))
                .min(f64::from(args.max_syncs_per_s));
            self.answer_syncs(&mut tokens, streams)?;
            if phase == Phase::Waiting
                && (self.stats.syncs_answered >= u64::from(args.wait_sync)
                    || started.elapsed() >= wait_timeout)
            {
                if self.stats.syncs_answered < u64::from(args.wait_sync) {
                    writeln!(
                        streams.stderr,
                        "tesla send: --wait-timeout passed with {} of {} sync requests answered; \
                         sending",
                        self.stats.syncs_answered, args.wait_sync
                    )?;
                }
                phase = Phase::Streaming;
                next_data_at = Instant::now();
            }

            // One key disclosure (or end marker) at the start of every interval.
            let now = wall_clock();
            let interval = self
                .sender
                .params()
                .schedule()
                .interval_at(now)
                .ok_or_else(|| anyhow!("the sender's schedule ended"))?;
            if last_interval != Some(interval) {
                last_interval = Some(interval);
                match phase {
                    Phase::Ending {
                        interval: end,
                        count,
                    } => {
                        let packet = self.sender.packet(&encode_end(count), now).map_err(fail)?;
                        self.transmit(&packet)?;
                        self.stats.end_markers += 1;
                        if interval >= end.saturating_add(d).saturating_add(1) {
                            return Ok(());
                        }
                    }
                    _ => {
                        let packet = self.sender.key_disclosure(now).map_err(fail)?;
                        self.transmit(&packet)?;
                        self.stats.key_disclosures += 1;
                    }
                }
            }

            // Data at the paced rate.
            let mut sent_this_turn = 0;
            while phase == Phase::Streaming
                && Instant::now() >= next_data_at
                && sent_this_turn < MAX_BURST
            {
                let chunk = match chunks.try_recv() {
                    Ok(chunk) => chunk.context("reading the input")?,
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        if let Some(packet) = held.take() {
                            self.transmit(&packet)?;
                        }
                        let now = wall_clock();
                        let packet = self.sender.packet(&encode_end(seq), now).map_err(fail)?;
                        self.transmit(&packet)?;
                        self.stats.end_markers += 1;
                        let interval = self
                            .sender
                            .params()
                            .schedule()
                            .interval_at(now)
                            .unwrap_or(interval);
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
                    .map_err(fail)?;
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
                if args
                    .drop_every
                    .is_some_and(|n| seq.is_multiple_of(u64::from(n)))
                {
                    self.stats.dropped_on_purpose += 1;
                    continue;
                }
                if args.reorder {
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
                writeln!(
                    streams.stderr,
                    "tesla send: interval {interval}, {} data packets, {} stream bytes, {} syncs \
                     answered",
                    self.stats.data_packets, self.stats.stream_bytes, self.stats.syncs_answered
                )?;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    /// Sends one datagram to the group.
    fn transmit(&mut self, packet: &[u8]) -> anyhow::Result<()> {
        self.data_socket
            .send_to(packet, SocketAddr::V4(self.group))
            .with_context(|| format!("cannot send to {}", self.group))?;
        self.stats.wire_bytes += packet.len() as u64;
        Ok(())
    }

    /// Answers the sync requests waiting on the socket, as the token bucket allows.
    fn answer_syncs(&mut self, tokens: &mut f64, streams: &mut Streams<'_>) -> anyhow::Result<()> {
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
                        writeln!(
                            streams.stderr,
                            "tesla send: cannot sign sync responses: {e}"
                        )?;
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
                        writeln!(
                            streams.stderr,
                            "tesla send: cannot answer sync requests: {e}"
                        )?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn fail(e: SenderError) -> anyhow::Error {
    anyhow!("{e}")
}
