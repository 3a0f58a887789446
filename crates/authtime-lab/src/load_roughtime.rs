//! A Roughtime load generator for the lab's roughtime section: valid
//! 1024-byte requests to one server on loopback, as fast as the server
//! answers, bounded in count and in time, with a sample of the responses
//! verified against the server's long-term key.
//!
//! Closed loop with a window: at most `window` requests are outstanding, a
//! new one leaves for every response, so the server's queue never runs dry
//! (it can batch up to `window` requests) and never overflows its socket
//! buffer. When nothing comes back for [`STALL`], the outstanding requests
//! count as lost and the window refills. One thread, one connected socket:
//! pin the calling thread to a CPU of its own.
//!
//! The requests come from a pool built once (the server neither knows nor
//! cares that nonces repeat between rounds): the first eight bytes of each
//! nonce are its index in the pool, which finds the request a sampled
//! response answers.

use std::{
    io::ErrorKind,
    net::{SocketAddr, UdpSocket},
    time::{Duration, Instant},
};

pub use authtime_roughtime::Version;
use authtime_roughtime::{
    build_request,
    message::{Message, unframe},
    request::srv_value,
    tags::Tag,
    verify_response,
};
use serde::Serialize;

/// Longest run.
pub const MAX_DURATION: Duration = Duration::from_secs(120);
/// Most requests in one run.
pub const MAX_REQUESTS: u64 = 20_000_000;
/// Most requests outstanding.
pub const MAX_WINDOW: usize = 1024;
/// No response for this long: the outstanding requests are lost. Well
/// above a scheduler time slice: on a shared machine a server descheduled
/// for a few milliseconds must not look like loss (the window would refill
/// on top of a full queue and overflow the server's socket buffer).
pub const STALL: Duration = Duration::from_millis(50);

/// What to send.
#[derive(Debug, Clone)]
pub struct RoughtimeLoadOptions {
    /// The server (loopback).
    pub target: SocketAddr,
    /// Its long-term Ed25519 public key: requests carry its SRV, and sampled
    /// responses are verified with it.
    pub public_key: [u8; 32],
    /// Versions each request offers.
    pub versions: Vec<Version>,
    /// Requests outstanding at once.
    pub window: usize,
    /// How long to send.
    pub duration: Duration,
    /// Stop after this many requests even when time remains.
    pub max_requests: u64,
    /// Verify every n-th response (1: every one).
    pub verify_every: u64,
    /// Distinct requests in the pool (at least `window`).
    pub pool: usize,
}

/// What a run measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RoughtimeLoadReport {
    /// Requests sent.
    pub sent: u64,
    /// Send calls that failed (the kernel's buffer full, say).
    pub send_errors: u64,
    /// Responses received.
    pub received: u64,
    /// Requests counted lost after a stall.
    pub lost: u64,
    /// Responses verified (signature, delegation, Merkle path, nonce).
    pub verified: u64,
    /// Sampled responses that did not verify.
    pub verify_failed: u64,
    /// The first verification error, if any.
    pub first_failure: Option<String>,
    /// Versions of the verified responses: wire number and count.
    pub versions_seen: Vec<(u32, u64)>,
    /// Size of every request packet.
    pub request_bytes: usize,
    /// Largest response packet.
    pub response_bytes_max: usize,
    /// Seconds from the first send to the last response.
    pub wall_s: f64,
    /// Responses per wall-clock second.
    pub responses_per_s: f64,
}

/// Checks that `opts` is bounded and sane.
///
/// # Errors
/// The first bound that is not kept.
pub fn check(opts: &RoughtimeLoadOptions) -> Result<(), String> {
    if !opts.target.ip().is_loopback() {
        return Err(format!(
            "{}: the Roughtime load generator sends to loopback only",
            opts.target
        ));
    }
    if opts.duration.is_zero() || opts.duration > MAX_DURATION {
        return Err(format!(
            "duration {:?}: must be above 0 and at most {MAX_DURATION:?}",
            opts.duration
        ));
    }
    if opts.max_requests == 0 || opts.max_requests > MAX_REQUESTS {
        return Err(format!(
            "{} requests: must be 1 to {MAX_REQUESTS}",
            opts.max_requests
        ));
    }
    if opts.window == 0 || opts.window > MAX_WINDOW {
        return Err(format!("window {}: must be 1 to {MAX_WINDOW}", opts.window));
    }
    if opts.verify_every == 0 {
        return Err("verify_every must be at least 1".into());
    }
    if opts.versions.is_empty() {
        return Err("no version to offer".into());
    }
    Ok(())
}

/// The request pool: `n` requests whose nonces start with their index.
///
/// # Errors
/// When a request cannot be built.
pub fn request_pool(
    n: usize,
    versions: &[Version],
    public_key: &[u8; 32],
) -> Result<Vec<Vec<u8>>, String> {
    let srv = srv_value(public_key);
    let mut tail = [0u8; 24];
    getrandom::fill(&mut tail).map_err(|e| format!("no randomness: {e}"))?;
    (0..n)
        .map(|i| {
            let mut nonce = [0u8; 32];
            nonce[..8].copy_from_slice(&(i as u64).to_le_bytes());
            nonce[8..].copy_from_slice(&tail);
            build_request(versions, &nonce, Some(&srv)).map_err(|e| e.to_string())
        })
        .collect()
}

/// A long-term public key as `authtime roughtime keygen` prints it and
/// roughenough logs it: 64 hex digits or base64.
///
/// # Errors
/// Neither form of 32 bytes.
pub fn parse_public_key(text: &str) -> Result<[u8; 32], String> {
    let text = text.trim();
    let from_hex = || {
        let bytes: Option<Vec<u8>> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
            .collect();
        bytes?.try_into().ok()
    };
    match text.len() {
        64 => from_hex(),
        _ => authtime_roughtime::ecosystem::decode_key(text),
    }
    .ok_or_else(|| format!("`{text}`: not a 32-byte public key in hex or base64"))
}

/// The pool index a response's nonce names.
fn pool_index(response: &[u8]) -> Option<usize> {
    let msg = Message::parse(unframe(response).ok()?).ok()?;
    let nonce = msg.get(Tag::NONC)?;
    let index = u64::from_le_bytes(nonce.get(..8)?.try_into().ok()?);
    usize::try_from(index).ok()
}

/// Sends load to `opts.target` until the time or the count runs out.
///
/// # Errors
/// Unsafe options, or a socket that cannot be opened.
pub fn run(opts: &RoughtimeLoadOptions) -> Result<RoughtimeLoadReport, String> {
    check(opts)?;
    let pool = request_pool(opts.pool.max(opts.window), &opts.versions, &opts.public_key)?;
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    socket
        .connect(opts.target)
        .map_err(|e| format!("connect {}: {e}", opts.target))?;
    socket
        .set_nonblocking(true)
        .map_err(|e| format!("nonblocking: {e}"))?;
    let mut report = RoughtimeLoadReport {
        request_bytes: pool[0].len(),
        ..RoughtimeLoadReport::default()
    };
    let mut buf = vec![0u8; 2048];
    let mut outstanding = 0usize;
    let mut next = 0usize;
    let started = Instant::now();
    let end = started + opts.duration;
    let mut last_progress = started;
    let mut last_response = started;
    let mut sending = true;
    loop {
        let now = Instant::now();
        if sending && (now >= end || report.sent >= opts.max_requests) {
            sending = false;
        }
        while sending && outstanding < opts.window && report.sent < opts.max_requests {
            match socket.send(&pool[next]) {
                Ok(_) => {
                    report.sent += 1;
                    outstanding += 1;
                    next = (next + 1) % pool.len();
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    report.send_errors += 1;
                    break;
                }
            }
        }
        if outstanding == 0 && !sending {
            break;
        }
        match socket.recv(&mut buf) {
            Ok(len) => {
                report.received += 1;
                outstanding = outstanding.saturating_sub(1);
                report.response_bytes_max = report.response_bytes_max.max(len);
                last_progress = Instant::now();
                last_response = last_progress;
                if report.received % opts.verify_every == 1 || opts.verify_every == 1 {
                    verify_sample(&pool, &buf[..len], &opts.public_key, &mut report);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let now = Instant::now();
                if now.duration_since(last_progress) >= STALL {
                    report.lost += outstanding as u64;
                    outstanding = 0;
                    last_progress = now;
                } else {
                    std::hint::spin_loop();
                }
            }
            Err(_) => {}
        }
    }
    report.wall_s = last_response.duration_since(started).as_secs_f64();
    if report.wall_s > 0.0 {
        report.responses_per_s = report.received as f64 / report.wall_s;
    }
    Ok(report)
}

pub(crate) fn verify_sample(
    pool: &[Vec<u8>],
    response: &[u8],
    key: &[u8; 32],
    report: &mut RoughtimeLoadReport,
) {
    let verdict = match pool_index(response).and_then(|i| pool.get(i)) {
        Some(request) => verify_response(request, response, key).map_err(|e| e.to_string()),
        None => Err("the response's nonce names no request that was sent".into()),
    };
    match verdict {
        Ok(v) => {
            report.verified += 1;
            let wire = v.version.wire();
            match report.versions_seen.iter_mut().find(|(w, _)| *w == wire) {
                Some((_, n)) => *n += 1,
                None => report.versions_seen.push((wire, 1)),
            }
        }
        Err(e) => {
            report.verify_failed += 1;
            report.first_failure.get_or_insert(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roughtime_lab_server::LabServer;

    fn opts(target: SocketAddr, key: [u8; 32]) -> RoughtimeLoadOptions {
        RoughtimeLoadOptions {
            target,
            public_key: key,
            versions: vec![Version::Rfc1, Version::Draft12],
            window: 16,
            duration: Duration::from_millis(300),
            max_requests: 500,
            verify_every: 1,
            pool: 64,
        }
    }

    #[test]
    fn public_keys_parse_in_hex_and_base64() {
        // roughenough's documented key for the seed of its example.cfg
        // (docs/roughtime-peers.md), in both forms.
        let hex = "d0756ee69ff5fe96cbcf9273208fec53124b1dd3a24d3910e07c7c54e2473012";
        let key = parse_public_key(hex).expect("hex");
        assert_eq!(key[0], 0xd0);
        assert_eq!(key[31], 0x12);
        let b64 = "0HVu5p/1/pbLz5JzII/sUxJLHdOiTTkQ4Hx8VOJHMBI=";
        assert_eq!(parse_public_key(b64), Ok(key));
        assert!(parse_public_key("d0756e").is_err());
        assert!(parse_public_key(&hex.replace('d', "x")).is_err());
    }

    #[test]
    fn options_are_bounded() {
        let key = [0u8; 32];
        let local = SocketAddr::from(([127, 0, 0, 1], 9));
        assert!(check(&opts(local, key)).is_ok());
        let far = SocketAddr::from(([192, 0, 2, 1], 9));
        assert!(check(&opts(far, key)).is_err());
        let mut o = opts(local, key);
        o.duration = Duration::from_secs(3600);
        assert!(check(&o).is_err());
        let mut o = opts(local, key);
        o.window = 0;
        assert!(check(&o).is_err());
    }

    #[test]
    fn every_response_of_the_lab_server_verifies() {
        let server = LabServer::start(None).expect("lab server");
        // Ended by the count, not the clock: a debug build on a busy machine
        // signs slowly.
        let mut o = opts(server.addr, server.public_key);
        o.duration = Duration::from_secs(20);
        let report = run(&o).expect("load");
        let cpu = server.stop();
        assert_eq!(report.sent, 500, "{report:?}");
        // A response that comes after its request was counted lost counts too.
        assert!(report.received + report.lost >= report.sent, "{report:?}");
        assert!(report.received > 0, "{report:?}");
        assert_eq!(report.verified, report.received, "{report:?}");
        assert_eq!(report.verify_failed, 0, "{report:?}");
        assert_eq!(report.versions_seen, vec![(1, report.verified)]);
        assert!(report.response_bytes_max <= report.request_bytes);
        // A response the generator gave up on (a stall on a busy machine) was still sent.
        assert!(cpu.batches > 0 && cpu.responses >= report.received);
    }

    #[test]
    fn a_silent_target_loses_everything_within_the_bounds() {
        let silent = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let mut o = opts(silent.local_addr().expect("addr"), [7; 32]);
        o.max_requests = 40;
        let started = Instant::now();
        let report = run(&o).expect("load");
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!((report.sent, report.received, report.lost), (40, 0, 40));
    }
}
