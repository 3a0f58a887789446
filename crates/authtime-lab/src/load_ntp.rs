//! An open-loop NTP load generator: requests leave on a schedule (evenly
//! spaced, or Poisson arrivals: [`crate::load_ntp_schedule`]) whether or not
//! earlier ones were answered (a closed loop would slow down with the server
//! and hide its overload), bounded in count and in time.
//!
//! Requests come from many logical clients (by default one per 10 requests
//! per second of the rate, at most 16,384, so that each sends about 10 per
//! second, as a server's real clients are many and each slow), spread over a
//! few connected UDP sockets (distinct source ports, so `SO_REUSEPORT`
//! servers spread them over their workers). Request `k` is client
//! `k mod clients`'s, sent from socket `client mod sockets`. One receiver
//! thread per socket takes replies with their kernel receive timestamps
//! (`recvmmsg`) and matches them to requests by the origin timestamp, a
//! cookie of a random run id and the request's sequence number. Latency is
//! the generator's receive time minus send time, both read from one
//! monotonic clock. Replies are classified, not authenticated: their MACs
//! are not checked (the interop tests do that).
//!
//! With kernel receive timestamps, the run also measures how early each
//! reply's transmit timestamp (T3) is, in basic or interleaved mode
//! ([`crate::load_ntp_accuracy`]). The generator's own scheduling does not
//! enter that figure (the stamp is the kernel's), only the arrival pattern
//! the server sees does, which is why the report says when the sender fell
//! behind its schedule.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use authtime_keys::KeyEntry;
use authtime_packet_io::{RecvBatch, enable_timestamps, wait_for_receive_stamps};
use authtime_proto::{ClientConfig, build_request};
use authtime_wire::{Header, Mode, Packet, PacketWriter, Trailer, digest_len_on_wire};
use serde::Serialize;

use crate::load_ntp_accuracy::{
    self as accuracy, Interleave, MAX_SEQ, Samples, T3Accuracy, match_origin,
};
pub use crate::load_ntp_schedule::Arrivals;
use crate::load_ntp_schedule::Schedule;

/// Longest run.
pub const MAX_DURATION: Duration = Duration::from_secs(600);
/// Most requests in one run (their send times are kept in memory).
pub const MAX_REQUESTS: u64 = 50_000_000;
/// Most requests in one interleaved run (each also keeps its origin and the
/// receive time it refers to).
pub const MAX_INTERLEAVED_REQUESTS: u64 = 10_000_000;
/// Most logical clients.
pub const MAX_CLIENTS: usize = 65_536;
/// Most logical clients chosen by default (as many as ntpperf simulates).
pub const DEFAULT_CLIENTS_MAX: usize = 16_384;
/// Requests per second of one logical client, when their number is chosen
/// from the rate.
pub const CLIENT_RATE: f64 = 10.0;
/// A request sent later than this after its scheduled time counts as late.
const LATE: Duration = Duration::from_millis(1);
/// The run fell behind when a request left this much after its scheduled
/// time: a sender that cannot keep the rate falls further behind with every
/// request, while one that is only preempted now and then (a busy machine)
/// catches up within a few milliseconds.
const BEHIND: Duration = Duration::from_millis(20);
/// Most requests sent in one go when the sender catches up.
const MAX_BURST: u64 = 64;
/// Longest sleep of the sender between two checks of its schedule.
const PACING_SLEEP: Duration = Duration::from_micros(100);
/// The sender's timer slack: its sleeps end within this of the due time.
const TIMER_SLACK_NS: u64 = 1_000;
/// Socket buffers asked for (capped by `net.core.rmem_max`/`wmem_max`): a
/// receiver that waits for the CPU must not lose replies.
const SOCKET_BUFFER: usize = 4 << 20;
/// How long to wait for the kernel to start stamping received datagrams.
const STAMP_WAIT: Duration = Duration::from_secs(2);

/// What to send.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The server.
    pub target: SocketAddr,
    /// Requests per second.
    pub rate: f64,
    /// How long to send.
    pub duration: Duration,
    /// Source sockets.
    pub sockets: usize,
    /// How long to wait for late replies after the last request (at most:
    /// the wait ends when every request sent has had its reply).
    pub drain: Duration,
    /// How requests are spaced in time.
    pub arrivals: Arrivals,
    /// Seed of the Poisson gaps.
    pub seed: u64,
    /// Interleaved requests (RFC 9769) instead of basic ones.
    pub interleaved: bool,
    /// Logical clients; 0: the rate ÷ [`CLIENT_RATE`], at most
    /// [`DEFAULT_CLIENTS_MAX`].
    pub clients: usize,
}

impl LoadOptions {
    /// Basic requests, evenly spaced, 4 sockets, clients from the rate,
    /// 500 ms for late replies.
    #[must_use]
    pub fn new(target: SocketAddr, rate: f64, duration: Duration) -> Self {
        Self {
            target,
            rate,
            duration,
            sockets: 4,
            drain: Duration::from_millis(500),
            arrivals: Arrivals::Even,
            seed: 1,
            interleaved: false,
            clients: 0,
        }
    }

    /// The number of logical clients the run uses.
    #[must_use]
    pub fn client_count(&self) -> usize {
        if self.clients > 0 {
            return self.clients;
        }
        let by_rate = (self.rate / CLIENT_RATE).round();
        if by_rate.is_finite() && by_rate >= 1.0 {
            (by_rate as usize).min(DEFAULT_CLIENTS_MAX)
        } else {
            1
        }
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// The server.
    pub target: String,
    /// Requests per second asked for.
    pub rate: f64,
    /// Seconds of sending asked for.
    pub duration_s: f64,
    /// Requests the kernel took.
    pub sent: u64,
    /// Requests the kernel refused (full socket buffer, no route).
    pub send_errors: u64,
    /// Time replies matched to a request.
    pub received: u64,
    /// Kiss-o'-Death replies (RATE, DENY, ...).
    pub kisses: u64,
    /// Crypto-NAK replies.
    pub crypto_naks: u64,
    /// Datagrams that matched no request (duplicates, malformed, other runs).
    pub unmatched: u64,
    /// 1 − received ÷ sent.
    pub loss: f64,
    /// Requests per second actually sent.
    pub sent_rate: f64,
    /// Replies per second.
    pub received_rate: f64,
    /// Round-trip times of the time replies.
    pub latency: Latency,
    /// Requests sent more than 1 ms after their scheduled time.
    pub late_sends: u64,
    /// The worst delay behind schedule, in milliseconds.
    pub max_lag_ms: f64,
    /// A request left more than 20 ms late: the generator, not only the
    /// server, limited this run.
    pub fell_behind: bool,
    /// How requests were spaced.
    pub arrivals: Arrivals,
    /// Whether requests were interleaved (RFC 9769).
    pub interleaved: bool,
    /// Logical clients.
    pub clients: usize,
    /// Requests sent per wake-up of the sender, on average (1 when evenly
    /// spaced requests left one by one).
    pub mean_send_burst: f64,
    /// Requests never sent: the run's time limit (twice the duration plus
    /// a second) came first.
    pub not_sent: u64,
    /// How early the replies' transmit timestamps were; `None` when the
    /// kernel gave no receive timestamps.
    pub accuracy: Option<T3Accuracy>,
}

/// State shared by the sender and the receivers.
struct Run {
    run_id: u32,
    start: Instant,
    /// Send time of each request in ns since `start`, plus 1; 0 = not sent or answered.
    sent_at: Vec<AtomicU64>,
    /// Replies matched to a request so far (time replies, kisses, crypto-NAKs).
    matched: AtomicU64,
    stop: AtomicBool,
    clients: usize,
    /// Interleaved mode's per-client and per-request state.
    interleave: Option<Interleave>,
}

/// Sends `rate × duration` requests (with a MAC under `key`, if given) and
/// measures the replies.
///
/// # Errors
/// Options out of range, or sockets that cannot be opened.
pub fn run(opts: &LoadOptions, key: Option<&KeyEntry>) -> Result<LoadReport, String> {
    let total = check(opts)?;
    let sockets = open_sockets(opts)?;
    let stamped = sockets.iter().all(|s| enable_timestamps(s, false).receive)
        && wait_for_receive_stamps(STAMP_WAIT);
    let clients = opts.client_count();
    let run = Run {
        run_id: run_id(),
        start: Instant::now(),
        sent_at: (0..total).map(|_| AtomicU64::new(0)).collect(),
        matched: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        clients,
        interleave: opts
            .interleaved
            .then(|| Interleave::new(clients, total as usize)),
    };
    let (sender, receivers) = std::thread::scope(|scope| {
        let handles: Vec<_> = sockets
            .iter()
            .map(|s| scope.spawn(|| receive(s, &run, total)))
            .collect();
        let sender = send(&sockets, &run, opts, total, key);
        let drain_end = Instant::now() + opts.drain;
        while run.matched.load(Ordering::Relaxed) < sender.sent {
            let left = drain_end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(1)));
        }
        run.stop.store(true, Ordering::Relaxed);
        let receivers: Vec<Received> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect();
        (sender, receivers)
    });
    Ok(report(opts, clients, total, &sender, receivers, stamped))
}

fn check(opts: &LoadOptions) -> Result<u64, String> {
    if !(opts.rate.is_finite() && opts.rate > 0.0) {
        return Err(format!("rate {}: must be above 0", opts.rate));
    }
    if opts.duration.is_zero() || opts.duration > MAX_DURATION {
        return Err(format!(
            "duration {:?}: must be above 0 and at most {} s",
            opts.duration,
            MAX_DURATION.as_secs()
        ));
    }
    if !(1..=64).contains(&opts.sockets) {
        return Err(format!("{} sockets: must be 1 to 64", opts.sockets));
    }
    if opts.clients > MAX_CLIENTS {
        return Err(format!(
            "{} clients: at most {MAX_CLIENTS} (0 chooses one per {CLIENT_RATE} requests/s)",
            opts.clients
        ));
    }
    let total = (opts.rate * opts.duration.as_secs_f64()).ceil();
    if total > MAX_REQUESTS as f64 {
        return Err(format!(
            "{total} requests: at most {MAX_REQUESTS} per run (lower the rate or the duration)"
        ));
    }
    if opts.interleaved && total > MAX_INTERLEAVED_REQUESTS as f64 {
        return Err(format!(
            "{total} requests: at most {MAX_INTERLEAVED_REQUESTS} per interleaved run (lower the \
             rate or the duration)"
        ));
    }
    const { assert!(MAX_REQUESTS <= MAX_SEQ) };
    Ok((total as u64).max(1))
}

fn open_sockets(opts: &LoadOptions) -> Result<Vec<UdpSocket>, String> {
    use socket2::{Domain, Protocol, Socket, Type};
    let local: SocketAddr = if opts.target.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    (0..opts.sockets)
        .map(|_| {
            let s = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))
                .map_err(|e| format!("cannot open a socket: {e}"))?;
            // Best effort: smaller buffers only mean losses we would report.
            let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
            let _ = s.set_send_buffer_size(SOCKET_BUFFER);
            s.bind(&local.into())
                .map_err(|e| format!("cannot bind {local}: {e}"))?;
            let s = UdpSocket::from(s);
            s.connect(opts.target)
                .map_err(|e| format!("cannot reach {}: {e}", opts.target))?;
            s.set_read_timeout(Some(Duration::from_millis(50)))
                .map_err(|e| e.to_string())?;
            Ok(s)
        })
        .collect()
}

/// Tells this run's replies from an earlier run's late ones; not a secret.
fn run_id() -> u32 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.subsec_nanos() ^ (now.as_secs() as u32) ^ std::process::id().rotate_left(16)
}

/// What the sender did.
struct Sent {
    sent: u64,
    errors: u64,
    late: u64,
    max_lag: Duration,
    elapsed: Duration,
    wakeups: u64,
    not_sent: u64,
}

fn send(
    sockets: &[UdpSocket],
    run: &Run,
    opts: &LoadOptions,
    total: u64,
    key: Option<&KeyEntry>,
) -> Sent {
    let mut out = Sent {
        sent: 0,
        errors: 0,
        late: 0,
        max_lag: Duration::ZERO,
        elapsed: Duration::ZERO,
        wakeups: 0,
        not_sent: 0,
    };
    // Best effort: without it, evenly spaced requests leave in small bursts.
    let _ = crate::scheduling::set_timer_slack(TIMER_SLACK_NS);
    let config = ClientConfig::default();
    let mut buf = [0u8; 128];
    let mut schedule = Schedule::new(opts.arrivals, opts.rate, opts.seed);
    let deadline = opts.duration * 2 + Duration::from_secs(1);
    let mut next = Duration::from_nanos(schedule.next_ns());
    let mut seq = 0u64;
    while seq < total {
        let now = run.start.elapsed();
        if now > deadline {
            out.not_sent = total - seq;
            break;
        }
        if next > now {
            // Sleep, never spin: the receivers may share this core. Requests
            // due meanwhile leave together (at most MAX_BURST at once).
            std::thread::sleep((next - now).min(PACING_SLEEP));
            continue;
        }
        out.wakeups += 1;
        let mut burst = 0;
        while seq < total && next <= now && burst < MAX_BURST {
            let len = match write_request(&config, run, seq, key, &mut buf) {
                Some(len) => len,
                None => {
                    out.errors += 1;
                    seq += 1;
                    next = Duration::from_nanos(schedule.next_ns());
                    continue;
                }
            };
            let at = run.start.elapsed();
            let lag = at.saturating_sub(next);
            if lag > LATE {
                out.late += 1;
            }
            out.max_lag = out.max_lag.max(lag);
            let slot = run.sent_at.get(seq as usize);
            if let Some(slot) = slot {
                slot.store(at.as_nanos() as u64 + 1, Ordering::Relaxed);
            }
            let client = (seq % run.clients as u64) as usize;
            match sockets[client % sockets.len()].send(&buf[..len]) {
                Ok(_) => out.sent += 1,
                Err(_) => {
                    out.errors += 1;
                    if let Some(slot) = slot {
                        slot.store(0, Ordering::Relaxed);
                    }
                }
            }
            seq += 1;
            burst += 1;
            next = Duration::from_nanos(schedule.next_ns());
        }
    }
    out.elapsed = run.start.elapsed();
    out
}

/// Writes request `seq` into `buf`: basic (origin and receive zero), or
/// interleaved (origin: the T2 of its client's last reply; receive and
/// transmit: two cookies). `None` when it cannot be built.
fn write_request(
    config: &ClientConfig,
    run: &Run,
    seq: u64,
    key: Option<&KeyEntry>,
    buf: &mut [u8],
) -> Option<usize> {
    let transmit = accuracy::transmit_cookie(run.run_id, seq);
    let Some(interleave) = &run.interleave else {
        return build_request(config, transmit, key, buf)
            .ok()
            .map(|(len, _)| len);
    };
    let mut header = Header::new(Mode::Client);
    header.version = config.version;
    header.poll = config.poll;
    header.origin_ts = interleave.origin_for(seq);
    header.receive_ts = accuracy::receive_cookie(run.run_id, seq);
    header.transmit_ts = transmit;
    let writer = PacketWriter::new(buf, &header).ok()?;
    match key {
        None => writer.finish().ok(),
        Some(key) => {
            let tag = key.mac().compute(&[], writer.authenticated_bytes()).ok()?;
            let digest = digest_len_on_wire(header.version, tag.len());
            writer
                .finish_with_mac(key.id(), tag.as_bytes().get(..digest)?)
                .ok()
        }
    }
}

/// What one receiver saw.
#[derive(Default)]
struct Received {
    latencies_ns: Vec<u64>,
    kisses: u64,
    crypto_naks: u64,
    unmatched: u64,
    samples: Samples,
}

fn receive(socket: &UdpSocket, run: &Run, total: u64) -> Received {
    let mut out = Received {
        latencies_ns: Vec::with_capacity(1 << 16),
        ..Received::default()
    };
    let mut batch = RecvBatch::new();
    while !run.stop.load(Ordering::Relaxed) {
        let n = match batch.receive(socket) {
            Ok(n) => n,
            // An ICMP error reported on the connected socket, or worse:
            // nothing to count, but no busy loop either.
            Err(_) => {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        };
        let at = run.start.elapsed().as_nanos() as u64;
        for i in 0..n {
            let datagram = batch.datagram(i);
            let Ok(packet) = Packet::decode(datagram.data) else {
                out.unmatched += 1;
                continue;
            };
            let header = packet.header();
            let Some((seq, kind)) =
                match_origin(run.run_id, header.origin_ts).filter(|(seq, _)| *seq < total)
            else {
                out.unmatched += 1;
                continue;
            };
            let sent = run
                .sent_at
                .get(seq as usize)
                .map_or(0, |slot| slot.swap(0, Ordering::Relaxed));
            if sent == 0 {
                out.unmatched += 1;
                continue;
            }
            run.matched.fetch_add(1, Ordering::Relaxed);
            if header.kiss_code().is_some() {
                out.kisses += 1;
            } else if packet.trailer() == Trailer::CryptoNak {
                out.crypto_naks += 1;
            } else {
                out.latencies_ns.push(at.saturating_sub(sent - 1));
                out.samples.add(
                    seq,
                    kind,
                    header,
                    datagram.stamp,
                    run.interleave.as_ref(),
                    run.clients,
                );
            }
        }
    }
    out
}

fn report(
    opts: &LoadOptions,
    clients: usize,
    total: u64,
    sender: &Sent,
    receivers: Vec<Received>,
    stamped: bool,
) -> LoadReport {
    let mut latencies: Vec<u64> = Vec::new();
    let (mut kisses, mut crypto_naks, mut unmatched) = (0, 0, 0);
    let mut samples = Vec::with_capacity(receivers.len());
    for r in receivers {
        latencies.extend(r.latencies_ns);
        kisses += r.kisses;
        crypto_naks += r.crypto_naks;
        unmatched += r.unmatched;
        samples.push(r.samples);
    }
    latencies.sort_unstable();
    let pct = |p: f64| {
        if latencies.is_empty() {
            return 0.0;
        }
        let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies[i.min(latencies.len() - 1)] as f64 / 1e3
    };
    let received = latencies.len() as u64;
    let secs = sender.elapsed.as_secs_f64().max(1e-9);
    let accuracy = T3Accuracy::from_samples(samples);
    LoadReport {
        target: opts.target.to_string(),
        rate: opts.rate,
        duration_s: opts.duration.as_secs_f64(),
        sent: sender.sent,
        send_errors: sender.errors,
        received,
        kisses,
        crypto_naks,
        unmatched,
        loss: if sender.sent == 0 {
            1.0
        } else {
            1.0 - received as f64 / sender.sent as f64
        },
        sent_rate: sender.sent as f64 / secs,
        received_rate: received as f64 / secs,
        latency: Latency {
            p50_us: pct(0.5),
            p90_us: pct(0.9),
            p99_us: pct(0.99),
            p999_us: pct(0.999),
            max_us: pct(1.0),
        },
        late_sends: sender.late,
        max_lag_ms: sender.max_lag.as_secs_f64() * 1e3,
        fell_behind: sender.max_lag > BEHIND || sender.not_sent > 0,
        arrivals: opts.arrivals,
        interleaved: opts.interleaved,
        clients,
        mean_send_burst: if sender.wakeups == 0 {
            0.0
        } else {
            (total - sender.not_sent) as f64 / sender.wakeups as f64
        },
        not_sent: sender.not_sent,
        accuracy: (stamped && accuracy.stamped > 0).then_some(accuracy),
    }
}

#[cfg(test)]
mod tests {
    use authtime_wire::NtpTimestamp;

    use super::*;

    fn opts(target: SocketAddr, rate: f64, duration: Duration) -> LoadOptions {
        LoadOptions {
            sockets: 2,
            drain: Duration::ZERO,
            ..LoadOptions::new(target, rate, duration)
        }
    }

    #[test]
    fn options_are_bounded() {
        let at = |rate: f64, secs: u64| {
            opts(
                "127.0.0.1:9".parse().expect("addr"),
                rate,
                Duration::from_secs(secs),
            )
        };
        assert!(check(&at(0.0, 1)).is_err());
        assert!(check(&at(10.0, 0)).is_err());
        assert!(check(&at(10.0, 601)).is_err());
        assert!(check(&at(1e8, 600)).is_err());
        assert!(
            check(&LoadOptions {
                clients: MAX_CLIENTS + 1,
                ..at(10.0, 1)
            })
            .is_err()
        );
        assert!(
            check(&LoadOptions {
                interleaved: true,
                ..at(1e5, 101)
            })
            .is_err()
        );
        assert!(check(&at(1e5, 101)).is_ok());
        assert_eq!(check(&at(100.0, 2)), Ok(200));
    }

    #[test]
    fn clients_follow_the_rate_within_bounds() {
        let at = |rate: f64| {
            opts(
                "127.0.0.1:9".parse().expect("addr"),
                rate,
                Duration::from_secs(1),
            )
        };
        assert_eq!(at(1.0).client_count(), 1);
        assert_eq!(at(10_000.0).client_count(), 1_000);
        assert_eq!(at(1e7).client_count(), DEFAULT_CLIENTS_MAX);
        assert_eq!(
            LoadOptions {
                clients: 7,
                ..at(1e7)
            }
            .client_count(),
            7
        );
    }

    #[test]
    fn a_silent_target_is_all_loss_and_the_schedule_is_kept() {
        let silent = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let opts = LoadOptions {
            drain: Duration::from_millis(20),
            ..opts(
                silent.local_addr().expect("addr"),
                2000.0,
                Duration::from_millis(200),
            )
        };
        let started = Instant::now();
        let report = run(&opts, None).expect("runs");
        assert!(started.elapsed() < Duration::from_secs(5));
        // Every request left although none was answered. (`fell_behind` is not
        // asserted: one preemption of 20 ms on a busy machine sets it.)
        assert_eq!(report.sent, 400);
        assert_eq!(report.received, 0);
        assert!((report.loss - 1.0).abs() < 1e-9);
        assert!(report.accuracy.is_none());
    }

    /// A minimal server on loopback: basic replies carry T3 read just before
    /// the send; with `interleaved`, a request whose origin is the T2 of an
    /// earlier reply gets that reply's send time, read just after its send,
    /// as T3 (so its offset is negative by the send's duration at most).
    fn serve(server: &UdpSocket, interleaved: bool, stop: &AtomicBool) -> u64 {
        let now = || {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            NtpTimestamp::from_unix(t.as_secs() as i64, t.subsec_nanos())
        };
        let mut sent_at = std::collections::HashMap::new();
        let mut answered_interleaved = 0;
        let mut buf = [0u8; 512];
        while !stop.load(Ordering::Relaxed) {
            let Ok((n, peer)) = server.recv_from(&mut buf) else {
                continue;
            };
            let t2 = now();
            let Ok(request) = Packet::decode(&buf[..n]) else {
                continue;
            };
            let request = *request.header();
            let mut reply = Header::new(Mode::Server);
            reply.stratum = 2;
            reply.receive_ts = t2;
            let previous = sent_at.get(&request.origin_ts.to_bits()).copied();
            match previous {
                Some(t3) if interleaved && request.receive_ts != request.transmit_ts => {
                    reply.origin_ts = request.receive_ts;
                    reply.transmit_ts = t3;
                    answered_interleaved += 1;
                }
                _ => {
                    reply.origin_ts = request.transmit_ts;
                    reply.transmit_ts = now();
                }
            }
            let mut out = [0u8; 48];
            let Ok(len) = PacketWriter::new(&mut out, &reply).and_then(PacketWriter::finish) else {
                continue;
            };
            let _ = server.send_to(&out[..len], peer);
            sent_at.insert(t2.to_bits(), now());
        }
        answered_interleaved
    }

    fn against_loopback_server(interleaved: bool) -> (LoadReport, u64) {
        let server = UdpSocket::bind("127.0.0.1:0").expect("bind");
        server
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let stop = AtomicBool::new(false);
        let opts = LoadOptions {
            interleaved,
            clients: 10,
            // Ends as soon as the 100 replies are in; a busy machine may
            // need more than a few milliseconds for the last ones.
            drain: Duration::from_secs(5),
            ..opts(
                server.local_addr().expect("addr"),
                1000.0,
                Duration::from_millis(100),
            )
        };
        std::thread::scope(|scope| {
            let served = scope.spawn(|| serve(&server, interleaved, &stop));
            let report = run(&opts, None).expect("runs");
            stop.store(true, Ordering::Relaxed);
            (report, served.join().expect("server"))
        })
    }

    #[test]
    fn replies_are_matched_and_timed() {
        let (report, _) = against_loopback_server(false);
        assert_eq!((report.sent, report.received), (100, 100), "{report:?}");
        assert!(report.loss.abs() < 1e-9);
        assert!(report.latency.p50_us > 0.0 && report.latency.max_us >= report.latency.p99_us);
        // Loopback stamps its datagrams: T3 was read before the send, so the
        // reply arrived after it (within the 50 ms a busy machine may add).
        let a = report.accuracy.expect("kernel receive timestamps");
        assert_eq!((a.basic.count, a.interleaved.count), (100, 0));
        assert!(
            a.basic.min_us > 0.0 && a.basic.median_us < 50_000.0,
            "{a:?}"
        );
        assert!(a.interleaved_share.abs() < 1e-9);
    }

    #[test]
    fn interleaved_replies_are_recognised_and_measured() {
        let (report, served) = against_loopback_server(true);
        assert_eq!((report.sent, report.received), (100, 100), "{report:?}");
        let a = report.accuracy.expect("kernel receive timestamps");
        // 10 clients of 10 requests: the first of each cannot be interleaved
        // (origin 0); this server answers every later one interleaved whose
        // client had its previous reply when it sent (all of them, unless
        // the machine held a reply back for 10 ms).
        assert_eq!(a.interleaved.count + a.interleaved_unmeasured, served);
        assert_eq!(a.basic.count + served, 100, "{a:?}");
        assert!(a.basic.count >= 10 && served >= 70, "{a:?}");
        assert!(a.interleaved_share_after_warmup > 0.7, "{a:?}");
        // Its T3 is read after the send returned, later than the kernel's
        // receive stamp by the rest of the send: small and negative.
        assert!(
            a.interleaved.median_us < 0.0 && a.interleaved.median_us > -50_000.0,
            "{a:?}"
        );
        assert!(a.response_interleaved.count > 0 && a.response_interleaved.median_us > 0.0);
    }
}
