//! NTS-KE abuse against the real `authtime serve` on loopback: hundreds of
//! idle connections over the connection cap (the CVE-2024-38528 class),
//! clients that reconnect as soon as they are dropped, half-finished TLS
//! handshakes, slow writers, oversized records and messages, and requests
//! that repeat records. The server must refuse cleanly, cut each abuser off
//! within its timeouts, keep its descriptors bounded, and serve the honest
//! client again.

mod hostile_support;
mod ntp_support;
use ntp_support::nts_cert;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hostile_support::{Rng, fd_count, nts_config, query_nts, status_kib};
use ntp_support::{Serve, TempDir, text_of};

/// A one-worker NTS server with a cap of `cap` connections, a 1 s handshake
/// and a 2 s session timeout. The attackers and the honest client share
/// 127.0.0.1, so the per-client limits are off: these tests are about the
/// global cap and the timeouts (`authtime-server/tests/ntske_flood.rs` is
/// about the per-client limits).
fn server(dir: &TempDir, cap: usize) -> Serve {
    nts_cert(dir, "nts", &[]);
    let config = nts_config(
        "",
        &format!(
            "max-connections = {cap}\nhandshake-timeout = 1.0\nsession-timeout = 2.0\n\
             client-limit = false"
        ),
        "[keystore]\npath = \"master-keys\"\n",
    );
    let serve = Serve::start(dir, &config);
    assert!(serve.nts_ke.is_some(), "{}", serve.log_text());
    serve
}

/// The tests of this file run one at a time: each measures the server
/// under its own attack, and two attacks at once on 2 CPUs slow the
/// accept loops enough to blur what each proves.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn ke_addr(serve: &Serve) -> SocketAddr {
    serve.nts_ke.expect("NTS-KE")
}

fn sessions(serve: &Serve, outcome: &str) -> u64 {
    serve.metric(&format!(
        "authtime_ntske_sessions_total{{outcome=\"{outcome}\"}}"
    ))
}

/// Queries until one succeeds or `limit` passes; returns the time it took.
fn honest_query_within(serve: &Serve, ca: &std::path::Path, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if query_nts(serve, ca, &[]).status.success() {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// Waits (up to 5 s) until the server holds at most `limit` descriptors,
/// and returns how many it holds: closed connections are released by its
/// event loop, not at once.
fn fds_settle(pid: u32, limit: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let fds = fd_count(pid);
        if fds <= limit || Instant::now() >= deadline {
            return fds;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_alive(serve: &mut Serve) {
    assert!(
        matches!(serve.process.child.try_wait(), Ok(None)),
        "the server died: {}",
        serve.log_text()
    );
}

#[test]
fn idle_connections_over_the_cap_are_refused_and_the_honest_client_is_served() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-ke-idle");
    let mut serve = server(&dir, 64);
    let ca = dir.path("nts-ca.pem");
    assert!(query_nts(&serve, &ca, &[]).status.success());
    let pid = serve.process.pid();
    let fds_before = fd_count(pid);
    let rss_before = status_kib(pid, "VmRSS");

    // 600 connections that never send a byte.
    let idle: Vec<TcpStream> = (0..600)
        .filter_map(|_| TcpStream::connect_timeout(&ke_addr(&serve), Duration::from_secs(1)).ok())
        .collect();
    assert!(idle.len() >= 500, "connected {}", idle.len());
    // Wait until the server has taken every connection off its backlog
    // (under CPU contention this takes a moment).
    let connected = idle.len() as u64;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut fds_held = fd_count(pid);
    let settled = |serve: &Serve| {
        sessions(serve, "refused_at_cap")
            + sessions(serve, "timeout")
            + serve.metric("authtime_ntske_active_connections")
            + 8
            >= connected
    };
    while !settled(&serve) && Instant::now() < deadline {
        fds_held = fds_held.max(fd_count(pid));
        std::thread::sleep(Duration::from_millis(50));
    }
    let fds_held = fds_held.max(fd_count(pid));
    let active = serve.metric("authtime_ntske_active_connections");
    let refused = sessions(&serve, "refused_at_cap");
    eprintln!(
        "idle: {} connections, server fds {fds_before} -> {fds_held}, active {active}, \
         refused {refused}",
        idle.len()
    );
    assert!(active <= 64, "active {active} over the cap");
    assert!(
        fds_held <= fds_before + 64 + 8,
        "descriptors {fds_before} -> {fds_held}"
    );
    // Every connection was either refused at once or held in a slot.
    assert!(settled(&serve), "refused {refused}, active {active}");
    assert!(refused >= connected / 2, "refused {refused}");

    // The idle ones time out after the 1 s handshake limit, freeing the
    // slots while the attacker still holds its sockets open.
    let took = honest_query_within(&serve, &ca, Duration::from_secs(10));
    eprintln!("idle: honest client served after {took:?}");
    assert!(took.is_some(), "the honest client was never served");
    // The first slot freed served the client; the others time out at about
    // the same moment, counted a little later.
    let timeouts = serve.wait_metric("authtime_ntske_sessions_total{outcome=\"timeout\"}", 60);
    assert!(timeouts >= 60, "timeouts {timeouts}");
    assert_alive(&mut serve);
    drop(idle);
    let fds_after = fds_settle(pid, fds_before + 4);
    let rss_after = status_kib(pid, "VmRSS");
    eprintln!("idle: fds after {fds_after}, RSS {rss_before} -> {rss_after} KiB");
    assert!(
        fds_after <= fds_before + 4,
        "descriptors leaked: {fds_after}"
    );
    assert!(
        rss_after <= rss_before + 16 * 1024,
        "RSS {rss_before} -> {rss_after}"
    );
}

#[test]
fn a_reconnecting_slowloris_cannot_exhaust_descriptors() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-ke-slowloris");
    let mut serve = server(&dir, 64);
    let ca = dir.path("nts-ca.pem");
    let pid = serve.process.pid();
    let fds_before = fd_count(pid);
    let addr = ke_addr(&serve);

    // 400 sockets, each reconnected as soon as the server closes it, for 4 s.
    let attacker = std::thread::spawn(move || {
        let connect = || {
            let s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
            s.set_nonblocking(true).ok()?;
            Some(s)
        };
        let mut socks: Vec<Option<TcpStream>> = (0..400).map(|_| connect()).collect();
        let (mut connects, started) = (400u64, Instant::now());
        let mut buf = [0u8; 64];
        while started.elapsed() < Duration::from_secs(4) {
            for slot in &mut socks {
                let closed = match slot {
                    Some(s) => {
                        matches!(s.read(&mut buf), Ok(0))
                            || matches!(s.read(&mut buf), Err(e) if e.kind() != std::io::ErrorKind::WouldBlock)
                    }
                    None => true,
                };
                if closed {
                    *slot = connect();
                    connects += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        connects
    });
    let (mut max_fds, mut honest_ok, mut honest_tries) = (0, 0, 0);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(4) {
        max_fds = max_fds.max(fd_count(pid));
        honest_tries += 1;
        if query_nts(&serve, &ca, &[]).status.success() {
            honest_ok += 1;
        }
        max_fds = max_fds.max(fd_count(pid));
    }
    let connects = attacker.join().expect("attacker");
    eprintln!(
        "slowloris: {connects} attacker connections, server fds {fds_before} -> max {max_fds}, \
         honest {honest_ok}/{honest_tries}, refused {}",
        sessions(&serve, "refused_at_cap")
    );
    assert!(
        max_fds <= fds_before + 64 + 8,
        "descriptors up to {max_fds}"
    );
    assert_alive(&mut serve);
    // Once the attack stops, the server is at the honest client's service.
    assert!(honest_query_within(&serve, &ca, Duration::from_secs(10)).is_some());
}

/// `openssl s_client` speaking ALPN ntske/1 to `addr`: writes `chunks` with
/// `gap` between them, and returns the bytes the server sent back and the
/// time until it closed (or `None` after `limit`).
fn tls_client(
    addr: SocketAddr,
    chunks: Vec<Vec<u8>>,
    gap: Duration,
    limit: Duration,
) -> (Vec<u8>, Option<Duration>) {
    let mut child = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &addr.to_string(),
            "-servername",
            "localhost",
            "-alpn",
            "ntske/1",
            "-tls1_3",
            "-quiet",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl s_client (./test.sh installs openssl)");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        for chunk in chunks {
            if stdin
                .write_all(&chunk)
                .and_then(|()| stdin.flush())
                .is_err()
            {
                break;
            }
            std::thread::sleep(gap);
        }
        // Keep stdin open: s_client -quiet ignores EOF anyway.
        std::thread::sleep(Duration::from_secs(6));
    });
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let mut guard = ntp_support::ChildGuard {
        child,
        name: "openssl s_client".into(),
    };
    let closed = guard.wait_for_exit(limit).map(|_| started.elapsed());
    drop(guard);
    let out = reader.join().unwrap_or_default();
    // The writer thread ends by itself once s_client is gone.
    let _ = writer;
    (out, closed)
}

/// NTS-KE records of `bytes`: (type without the critical bit, body).
fn records(mut bytes: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::new();
    while bytes.len() >= 4 {
        let kind = u16::from_be_bytes([bytes[0], bytes[1]]) & 0x7fff;
        let len = usize::from(u16::from_be_bytes([bytes[2], bytes[3]]));
        let Some(body) = bytes.get(4..4 + len) else {
            break;
        };
        out.push((kind, body.to_vec()));
        bytes = &bytes[4 + len..];
    }
    out
}

fn record(kind: u16, body: &[u8]) -> Vec<u8> {
    let mut r = kind.to_be_bytes().to_vec();
    r.extend_from_slice(&u16::try_from(body.len()).unwrap_or(u16::MAX).to_be_bytes());
    r.extend_from_slice(body);
    r
}

const CRITICAL: u16 = 0x8000;

fn good_request() -> Vec<u8> {
    let mut r = record(CRITICAL | 1, &[0, 0]);
    r.extend(record(4, &[0, 15]));
    r.extend(record(CRITICAL, &[]));
    r
}

fn is_error_response(response: &[u8]) -> bool {
    records(response).iter().any(|(kind, _)| *kind == 2)
}

#[test]
fn half_handshakes_slow_writers_and_oversized_requests_are_cut_off_in_time() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-ke-abuse");
    let mut serve = server(&dir, 64);
    let ca = dir.path("nts-ca.pem");
    let addr = ke_addr(&serve);
    let pid = serve.process.pid();
    let fds_before = fd_count(pid);

    // Half a TLS ClientHello, then silence: closed at the handshake timeout.
    let mut half = TcpStream::connect(addr).expect("connect");
    half.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03])
        .expect("write");
    half.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let started = Instant::now();
    let mut buf = [0u8; 256];
    let _ = half.read(&mut buf);
    let half_closed = started.elapsed();

    // Random bytes instead of TLS: closed at once.
    let mut junk = TcpStream::connect(addr).expect("connect");
    junk.write_all(&Rng::new(3).bytes(2048)).expect("write");
    junk.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let started = Instant::now();
    while matches!(junk.read(&mut buf), Ok(n) if n > 0) {}
    let junk_closed = started.elapsed();

    // A valid request (30 bytes with an unknown non-critical record) written
    // one byte every 150 ms: the 2 s session limit ends it with an Error record.
    let mut slow_request = record(0x4000, &[0; 10]);
    slow_request.extend(good_request());
    let slow: Vec<Vec<u8>> = slow_request.into_iter().map(|b| vec![b]).collect();
    let (slow_reply, slow_closed) = tls_client(
        addr,
        slow,
        Duration::from_millis(150),
        Duration::from_secs(10),
    );

    // A critical record announcing 65535 bytes, then 8 KiB: Bad Request
    // without waiting for the rest.
    let mut huge = record(CRITICAL | 1, &[0, 0]);
    huge.extend_from_slice(&(CRITICAL | 1).to_be_bytes());
    huge.extend_from_slice(&u16::MAX.to_be_bytes());
    huge.extend(vec![0u8; 8192]);
    let (huge_reply, huge_closed) =
        tls_client(addr, vec![huge], Duration::ZERO, Duration::from_secs(10));

    // A message of 6000 small unknown records (24 KB, over the 16 KiB limit).
    let mut long = record(CRITICAL | 1, &[0, 0]);
    for _ in 0..6000 {
        long.extend(record(0x4000, &[]));
    }
    long.extend(record(CRITICAL, &[]));
    let (long_reply, long_closed) =
        tls_client(addr, vec![long], Duration::ZERO, Duration::from_secs(10));

    // Every record repeated (1000 AEAD lists of every id): at most the
    // configured 8 cookies come back, or an error.
    let mut many = Vec::new();
    for _ in 0..500 {
        many.extend(record(CRITICAL | 1, &[0, 0]));
        many.extend(record(4, &[0, 15, 0, 17, 0, 30]));
    }
    many.extend(record(CRITICAL, &[]));
    let (many_reply, many_closed) =
        tls_client(addr, vec![many], Duration::ZERO, Duration::from_secs(10));
    let many_cookies = records(&many_reply)
        .iter()
        .filter(|(kind, _)| *kind == 5)
        .count();

    eprintln!(
        "abuse: half handshake closed after {half_closed:?}, junk after {junk_closed:?}, \
         slow writer {slow_closed:?} ({} reply bytes), 64 KiB record {huge_closed:?}, \
         24 KB message {long_closed:?}, repeated records {many_closed:?} ({many_cookies} \
         cookies, error: {})",
        slow_reply.len(),
        is_error_response(&many_reply)
    );
    // The upper bounds are each limit (1 s handshake, 2 s session) plus a
    // margin for a busy machine (the times include starting openssl); the
    // session outcomes below tell why each connection ended.
    assert!(
        half_closed >= Duration::from_millis(800) && half_closed < Duration::from_secs(6),
        "half handshake held {half_closed:?}"
    );
    assert!(
        junk_closed < Duration::from_secs(6),
        "junk held {junk_closed:?}"
    );
    let slow_closed = slow_closed.expect("the slow writer was cut off");
    assert!(
        slow_closed < Duration::from_secs(7),
        "slow writer held {slow_closed:?}"
    );
    assert!(is_error_response(&slow_reply), "{slow_reply:02x?}");
    assert!(huge_closed.expect("closed") < Duration::from_secs(7));
    assert!(is_error_response(&huge_reply), "{huge_reply:02x?}");
    assert!(long_closed.expect("closed") < Duration::from_secs(7));
    assert!(is_error_response(&long_reply), "{long_reply:02x?}");
    assert!(many_closed.expect("closed") < Duration::from_secs(7));
    assert!(many_cookies <= 8);
    assert!(many_cookies > 0 || is_error_response(&many_reply));

    // Two timeouts (the half handshake and the slow writer), the junk a TLS
    // error, the oversized ones bad requests: none of them was answered at a
    // timeout instead of at once.
    let bad_requests =
        serve.wait_metric("authtime_ntske_sessions_total{outcome=\"bad_request\"}", 2);
    let tls_errors = serve.wait_metric("authtime_ntske_sessions_total{outcome=\"tls_error\"}", 1);
    let timeouts = serve.wait_metric("authtime_ntske_sessions_total{outcome=\"timeout\"}", 2);
    assert_eq!(timeouts, 2, "timeouts");
    assert!(bad_requests >= 2, "bad requests {bad_requests}");
    assert!(tls_errors >= 1, "TLS errors {tls_errors}");
    assert_alive(&mut serve);
    let out = query_nts(&serve, &ca, &[]);
    assert!(out.status.success(), "{}", text_of(&out));
    drop((half, junk));
    let fds_after = fds_settle(pid, fds_before + 4);
    assert!(
        fds_after <= fds_before + 4,
        "descriptors leaked: {fds_after}"
    );
}
