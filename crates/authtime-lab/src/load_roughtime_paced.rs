//! Roughtime load at a fixed rate, for the xdp section: the requests of
//! [`crate::load_roughtime`]'s pool leave evenly spaced whether or not
//! earlier ones were answered (open loop, like [`crate::load_ntp`]), for a
//! bounded time and count, then late responses are waited for. A receiver
//! thread counts the responses and verifies a sample against the server's
//! long-term key.
//!
//! Unlike the windowed generator it sleeps between due requests (never
//! spins), so the machine's busy time is the servers' and the generator's
//! work, not a spinning core. It sends to loopback or to the lab's own
//! network namespaces only ([`crate::netns::in_lab_network`]).

use std::{
    net::{SocketAddr, UdpSocket},
    sync::{
        Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use serde::Serialize;

use crate::load_roughtime::{RoughtimeLoadReport, Version, request_pool, verify_sample};

/// Longest sending time.
pub const MAX_DURATION: Duration = Duration::from_secs(120);
/// Most requests in one run.
pub const MAX_REQUESTS: u64 = 10_000_000;
/// Longest wait for late responses.
pub const MAX_DRAIN: Duration = Duration::from_secs(5);
/// Distinct requests in the pool.
const POOL: usize = 1024;
/// A request that leaves this late counts as late; one that left over
/// [`BEHIND`] late means the generator fell behind.
const LATE: Duration = Duration::from_millis(1);
const BEHIND: Duration = Duration::from_millis(20);
/// Most requests sent in one go when the sender catches up.
const MAX_BURST: u64 = 64;
/// Longest sleep between checks of the schedule.
const PACING_SLEEP: Duration = Duration::from_micros(100);
/// The receiver's read timeout (it checks for the end between reads).
const RECEIVE_WAIT: Duration = Duration::from_millis(20);
/// Socket buffers asked for.
const SOCKET_BUFFER: usize = 4 << 20;

/// What to send.
#[derive(Debug, Clone)]
pub struct PacedOptions {
    /// The server: loopback, or an address of the lab's namespaces.
    pub target: SocketAddr,
    /// Its long-term Ed25519 public key.
    pub public_key: [u8; 32],
    /// Versions each request offers.
    pub versions: Vec<Version>,
    /// Requests per second.
    pub rate: f64,
    /// How long to send.
    pub duration: Duration,
    /// How long to wait for late responses after the last request.
    pub drain: Duration,
    /// Verify every n-th response (1: every one).
    pub verify_every: u64,
}

/// What a run measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PacedReport {
    /// Requests per second asked for.
    pub rate: f64,
    /// Requests scheduled.
    pub scheduled: u64,
    /// Requests sent.
    pub sent: u64,
    /// Send calls that failed.
    pub send_errors: u64,
    /// Responses received.
    pub received: u64,
    /// Seconds of sending asked for.
    pub duration_s: f64,
    /// Seconds the sending took.
    pub sent_for_s: f64,
    /// 1 − received ÷ sent.
    pub loss: f64,
    /// Responses per second of sending (over the longer of the planned and
    /// the actual sending time).
    pub received_rate: f64,
    /// Requests that left over 1 ms late.
    pub late_sends: u64,
    /// The worst lag behind the schedule, ms.
    pub max_lag_ms: f64,
    /// A request left over 20 ms late: the generator limited this run.
    pub fell_behind: bool,
    /// The sampled responses' verification (sent, received and the rest of
    /// the windowed generator's fields are not used here).
    pub verification: RoughtimeLoadReport,
}

/// Checks that `opts` is bounded and sends nowhere but here.
///
/// # Errors
/// The first bound that is not kept.
pub fn check(opts: &PacedOptions) -> Result<u64, String> {
    let ip = opts.target.ip();
    if !(ip.is_loopback() || crate::netns::in_lab_network(ip)) {
        return Err(format!(
            "{}: the Roughtime load generator sends to loopback or the lab's namespaces only",
            opts.target
        ));
    }
    if !(opts.rate.is_finite() && opts.rate > 0.0) {
        return Err(format!("rate {}: must be above 0", opts.rate));
    }
    if opts.duration.is_zero() || opts.duration > MAX_DURATION {
        return Err(format!(
            "duration {:?}: must be above 0 and at most {MAX_DURATION:?}",
            opts.duration
        ));
    }
    if opts.drain > MAX_DRAIN {
        return Err(format!("drain {:?}: at most {MAX_DRAIN:?}", opts.drain));
    }
    if opts.verify_every == 0 {
        return Err("verify_every must be at least 1".into());
    }
    if opts.versions.is_empty() {
        return Err("no version to offer".into());
    }
    let total = (opts.rate * opts.duration.as_secs_f64()).ceil();
    if total > MAX_REQUESTS as f64 {
        return Err(format!("{total} requests: at most {MAX_REQUESTS}"));
    }
    Ok((total as u64).max(1))
}

fn open_socket(target: SocketAddr) -> Result<UdpSocket, String> {
    use socket2::{Domain, Protocol, Socket, Type};
    let local: SocketAddr = if target.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| format!("cannot open a socket: {e}"))?;
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    s.bind(&local.into())
        .map_err(|e| format!("cannot bind {local}: {e}"))?;
    s.connect(&target.into())
        .map_err(|e| format!("cannot reach {target}: {e}"))?;
    s.set_read_timeout(Some(RECEIVE_WAIT))
        .map_err(|e| e.to_string())?;
    Ok(s.into())
}

/// What the sender did.
#[derive(Default)]
struct Sent {
    sent: u64,
    errors: u64,
    late: u64,
    max_lag: Duration,
    elapsed: Duration,
}

/// Sends `opts.rate` requests per second for `opts.duration`, then waits up
/// to `opts.drain` for the last responses.
///
/// # Errors
/// Unsafe options, or a socket that cannot be opened.
pub fn run_paced(opts: &PacedOptions) -> Result<PacedReport, String> {
    let total = check(opts)?;
    let pool = request_pool(POOL, &opts.versions, &opts.public_key)?;
    let socket = open_socket(opts.target)?;
    let received = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let verification = Mutex::new(RoughtimeLoadReport {
        request_bytes: pool[0].len(),
        ..RoughtimeLoadReport::default()
    });
    let sent = std::thread::scope(|scope| {
        scope.spawn(|| receive(&socket, &pool, opts, &received, &stop, &verification));
        let sent = send(&socket, &pool, opts, total);
        let drain_end = Instant::now() + opts.drain;
        while received.load(Ordering::Relaxed) < sent.sent && Instant::now() < drain_end {
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
        sent
    });
    let received = received.load(Ordering::Relaxed);
    let over = opts.duration.max(sent.elapsed).as_secs_f64();
    Ok(PacedReport {
        rate: opts.rate,
        scheduled: total,
        sent: sent.sent,
        send_errors: sent.errors,
        received,
        duration_s: opts.duration.as_secs_f64(),
        sent_for_s: sent.elapsed.as_secs_f64(),
        loss: if sent.sent == 0 {
            0.0
        } else {
            1.0 - (received.min(sent.sent) as f64 / sent.sent as f64)
        },
        received_rate: received as f64 / over.max(1e-9),
        late_sends: sent.late,
        max_lag_ms: sent.max_lag.as_secs_f64() * 1e3,
        fell_behind: sent.max_lag > BEHIND,
        verification: verification.into_inner().unwrap_or_else(|e| e.into_inner()),
    })
}

fn send(socket: &UdpSocket, pool: &[Vec<u8>], opts: &PacedOptions, total: u64) -> Sent {
    let _ = crate::scheduling::set_timer_slack(1_000);
    let mut out = Sent::default();
    let ns_per_request = 1e9 / opts.rate;
    let due = |seq: u64| Duration::from_nanos((seq as f64 * ns_per_request) as u64);
    // Bounded whatever happens to the clock or the socket.
    let deadline = opts.duration * 2 + Duration::from_secs(1);
    let start = Instant::now();
    let mut seq = 0u64;
    while seq < total {
        let now = start.elapsed();
        if now > deadline {
            break;
        }
        let next = due(seq);
        if next > now {
            std::thread::sleep((next - now).min(PACING_SLEEP));
            continue;
        }
        let mut burst = 0;
        while seq < total && due(seq) <= now && burst < MAX_BURST {
            let lag = start.elapsed().saturating_sub(due(seq));
            if lag > LATE {
                out.late += 1;
            }
            out.max_lag = out.max_lag.max(lag);
            match socket.send(&pool[(seq as usize) % pool.len()]) {
                Ok(_) => out.sent += 1,
                Err(_) => out.errors += 1,
            }
            seq += 1;
            burst += 1;
        }
    }
    out.elapsed = start.elapsed();
    out
}

fn receive(
    socket: &UdpSocket,
    pool: &[Vec<u8>],
    opts: &PacedOptions,
    received: &AtomicU64,
    stop: &AtomicBool,
    verification: &Mutex<RoughtimeLoadReport>,
) {
    let mut buf = vec![0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        let Ok(len) = socket.recv(&mut buf) else {
            // A timeout (checks `stop`), or an ICMP error for a request.
            continue;
        };
        let n = received.fetch_add(1, Ordering::Relaxed) + 1;
        if n % opts.verify_every == 1 || opts.verify_every == 1 {
            let mut v = verification.lock().unwrap_or_else(|e| e.into_inner());
            v.response_bytes_max = v.response_bytes_max.max(len);
            verify_sample(pool, &buf[..len], &opts.public_key, &mut v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roughtime_lab_server::LabServer;

    fn opts(target: SocketAddr, key: [u8; 32]) -> PacedOptions {
        PacedOptions {
            target,
            public_key: key,
            versions: vec![Version::Rfc1],
            rate: 1000.0,
            duration: Duration::from_millis(200),
            drain: Duration::from_millis(200),
            verify_every: 10,
        }
    }

    #[test]
    fn only_here_and_bounded() {
        let key = [0u8; 32];
        let away = opts("192.0.2.1:2002".parse().expect("addr"), key);
        assert!(check(&away).is_err());
        let lab = opts("10.200.7.3:2002".parse().expect("addr"), key);
        assert_eq!(check(&lab), Ok(200));
        let long = PacedOptions {
            duration: Duration::from_secs(121),
            ..lab.clone()
        };
        assert!(check(&long).is_err());
        let fast = PacedOptions {
            rate: 1e9,
            ..lab.clone()
        };
        assert!(check(&fast).is_err());
        let none = PacedOptions { rate: 0.0, ..lab };
        assert!(check(&none).is_err());
    }

    #[test]
    fn a_paced_run_is_answered_and_verified() {
        let server = LabServer::start(None).expect("lab server");
        let report = run_paced(&opts(server.addr, server.public_key)).expect("run");
        let _work = server.stop();
        assert_eq!(report.scheduled, 200);
        assert_eq!(report.sent, 200, "{report:?}");
        assert!(report.received > 0, "{report:?}");
        assert!(report.verification.verified > 0, "{report:?}");
        assert_eq!(report.verification.verify_failed, 0, "{report:?}");
    }
}
