//! An open-loop NTP load generator: requests leave on a fixed schedule
//! whether or not earlier ones were answered (a closed loop would slow down
//! with the server and hide its overload), for a bounded time.
//!
//! The sender thread paces requests over several connected UDP sockets
//! (distinct source ports, so `SO_REUSEPORT` servers spread them over their
//! workers); one receiver thread per socket matches replies to requests by
//! the origin timestamp, which carries a random run id and the request's
//! sequence number. Latency is receive time minus send time, both read from
//! one monotonic clock. Replies are classified, not authenticated: their MACs
//! are not checked (the interop tests do that).

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use authtime_keys::KeyEntry;
use authtime_proto::{ClientConfig, build_request};
use authtime_wire::{NtpTimestamp, Packet, Trailer};
use serde::Serialize;

/// Longest run.
pub const MAX_DURATION: Duration = Duration::from_secs(600);
/// Most requests in one run (their send times are kept in memory).
pub const MAX_REQUESTS: u64 = 50_000_000;
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
/// Socket buffers asked for (capped by `net.core.rmem_max`/`wmem_max`): a
/// receiver that waits for the CPU must not lose replies.
const SOCKET_BUFFER: usize = 4 << 20;

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
}

/// Sends `rate × duration` requests (with a MAC under `key`, if given) and
/// measures the replies.
///
/// # Errors
/// Options out of range, or sockets that cannot be opened.
pub fn run(opts: &LoadOptions, key: Option<&KeyEntry>) -> Result<LoadReport, String> {
    let total = check(opts)?;
    let sockets = open_sockets(opts)?;
    let run = Run {
        run_id: run_id(),
        start: Instant::now(),
        sent_at: (0..total).map(|_| AtomicU64::new(0)).collect(),
        matched: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    };
    let (sender, receivers) = std::thread::scope(|scope| {
        let handles: Vec<_> = sockets
            .iter()
            .map(|s| scope.spawn(|| receive(s, &run, total)))
            .collect();
        let sender = send(&sockets, &run, opts.rate, total, key);
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
    Ok(report(opts, &sender, receivers))
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
    let total = (opts.rate * opts.duration.as_secs_f64()).ceil();
    if total > MAX_REQUESTS as f64 {
        return Err(format!(
            "{total} requests: at most {MAX_REQUESTS} per run (lower the rate or the duration)"
        ));
    }
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
}

fn send(sockets: &[UdpSocket], run: &Run, rate: f64, total: u64, key: Option<&KeyEntry>) -> Sent {
    let mut out = Sent {
        sent: 0,
        errors: 0,
        late: 0,
        max_lag: Duration::ZERO,
        elapsed: Duration::ZERO,
    };
    let config = ClientConfig::default();
    let mut buf = [0u8; 128];
    let ns_per_request = 1e9 / rate;
    let mut seq = 0u64;
    while seq < total {
        let now = run.start.elapsed();
        let due = ((now.as_nanos() as f64 / ns_per_request) as u64 + 1).min(total);
        if seq >= due {
            // Sleep, never spin: the receivers may share this core. Requests
            // due meanwhile leave together (at most MAX_BURST at once).
            let next = Duration::from_nanos((seq as f64 * ns_per_request) as u64);
            std::thread::sleep(next.saturating_sub(now).min(PACING_SLEEP));
            continue;
        }
        for _ in 0..(due - seq).min(MAX_BURST) {
            let scheduled = Duration::from_nanos((seq as f64 * ns_per_request) as u64);
            let wire = NtpTimestamp::from_bits((u64::from(run.run_id) << 32) | seq);
            let Ok((len, _)) = build_request(&config, wire, key, &mut buf) else {
                out.errors += 1;
                seq += 1;
                continue;
            };
            let at = run.start.elapsed();
            let lag = at.saturating_sub(scheduled);
            if lag > LATE {
                out.late += 1;
            }
            out.max_lag = out.max_lag.max(lag);
            if let Some(slot) = run.sent_at.get(seq as usize) {
                slot.store(at.as_nanos() as u64 + 1, Ordering::Relaxed);
            }
            let socket = &sockets[(seq as usize) % sockets.len()];
            match socket.send(&buf[..len]) {
                Ok(_) => out.sent += 1,
                Err(_) => {
                    out.errors += 1;
                    if let Some(slot) = run.sent_at.get(seq as usize) {
                        slot.store(0, Ordering::Relaxed);
                    }
                }
            }
            seq += 1;
        }
    }
    out.elapsed = run.start.elapsed();
    out
}

/// What one receiver saw.
#[derive(Default)]
struct Received {
    latencies_ns: Vec<u64>,
    kisses: u64,
    crypto_naks: u64,
    unmatched: u64,
}

fn receive(socket: &UdpSocket, run: &Run, total: u64) -> Received {
    let mut out = Received {
        latencies_ns: Vec::with_capacity(1 << 16),
        ..Received::default()
    };
    let mut buf = [0u8; 2048];
    while !run.stop.load(Ordering::Relaxed) {
        let Ok(n) = socket.recv(&mut buf) else {
            continue;
        };
        let at = run.start.elapsed().as_nanos() as u64;
        let Ok(packet) = Packet::decode(&buf[..n]) else {
            out.unmatched += 1;
            continue;
        };
        let origin = packet.header().origin_ts.to_bits();
        let seq = origin & 0xffff_ffff;
        if (origin >> 32) as u32 != run.run_id || seq >= total {
            out.unmatched += 1;
            continue;
        }
        let sent = run
            .sent_at
            .get(seq as usize)
            .map_or(0, |slot| slot.swap(0, Ordering::Relaxed));
        if sent == 0 {
            out.unmatched += 1;
            continue;
        }
        run.matched.fetch_add(1, Ordering::Relaxed);
        if packet.header().kiss_code().is_some() {
            out.kisses += 1;
        } else if packet.trailer() == Trailer::CryptoNak {
            out.crypto_naks += 1;
        } else {
            out.latencies_ns.push(at.saturating_sub(sent - 1));
        }
    }
    out
}

fn report(opts: &LoadOptions, sender: &Sent, receivers: Vec<Received>) -> LoadReport {
    let mut latencies: Vec<u64> = Vec::new();
    let (mut kisses, mut crypto_naks, mut unmatched) = (0, 0, 0);
    for r in receivers {
        latencies.extend(r.latencies_ns);
        kisses += r.kisses;
        crypto_naks += r.crypto_naks;
        unmatched += r.unmatched;
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
        fell_behind: sender.max_lag > BEHIND,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_bounded() {
        let opts = |rate: f64, secs: u64| LoadOptions {
            target: "127.0.0.1:9".parse().expect("addr"),
            rate,
            duration: Duration::from_secs(secs),
            sockets: 1,
            drain: Duration::ZERO,
        };
        assert!(check(&opts(0.0, 1)).is_err());
        assert!(check(&opts(10.0, 0)).is_err());
        assert!(check(&opts(10.0, 601)).is_err());
        assert!(check(&opts(1e8, 600)).is_err());
        assert_eq!(check(&opts(100.0, 2)), Ok(200));
    }

    #[test]
    fn a_silent_target_is_all_loss_and_the_schedule_is_kept() {
        let silent = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let opts = LoadOptions {
            target: silent.local_addr().expect("addr"),
            rate: 2000.0,
            duration: Duration::from_millis(200),
            sockets: 2,
            drain: Duration::from_millis(20),
        };
        let started = Instant::now();
        let report = run(&opts, None).expect("runs");
        assert!(started.elapsed() < Duration::from_secs(2));
        // Every request left although none was answered. (`fell_behind` is not
        // asserted: one preemption of 20 ms on a busy machine sets it.)
        assert_eq!(report.sent, 400);
        assert_eq!(report.received, 0);
        assert!((report.loss - 1.0).abs() < 1e-9);
    }

    #[test]
    fn replies_are_matched_and_timed() {
        let server = UdpSocket::bind("127.0.0.1:0").expect("bind");
        server
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let stop = AtomicBool::new(false);
        let opts = LoadOptions {
            target: server.local_addr().expect("addr"),
            rate: 1000.0,
            duration: Duration::from_millis(100),
            sockets: 2,
            // Ends as soon as the 100 replies are in; a busy machine may
            // need more than a few milliseconds for the last ones.
            drain: Duration::from_secs(5),
        };
        let report = std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut buf = [0u8; 512];
                while !stop.load(Ordering::Relaxed) {
                    let Ok((n, peer)) = server.recv_from(&mut buf) else {
                        continue;
                    };
                    // A minimal server reply: mode 4, stratum 2, origin = transmit.
                    let mut reply = [0u8; 48];
                    reply[0] = 0x24;
                    reply[1] = 2;
                    reply[24..32].copy_from_slice(&buf[40..48]);
                    if n >= 48 {
                        let _ = server.send_to(&reply, peer);
                    }
                }
            });
            let report = run(&opts, None).expect("runs");
            stop.store(true, Ordering::Relaxed);
            report
        });
        assert_eq!((report.sent, report.received), (100, 100), "{report:?}");
        assert!(report.loss.abs() < 1e-9);
        assert!(report.latency.p50_us > 0.0 && report.latency.max_us >= report.latency.p99_us);
    }
}
