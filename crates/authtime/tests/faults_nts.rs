//! Faults under a running NTS server, with nothing lost: `kill -9` at many
//! points of a key rotation (the key file is always a whole ring, and the
//! restarted server still opens the cookies it issued), rotation and a Redis
//! key store killed, restarted and frozen under an NTS load (no valid cookie
//! refused), and certificates replaced under a handshake load (no handshake
//! fails because of the swap).

mod hostile_support;
mod ntp_support;
use ntp_support::nts_cert;

use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use authtime_keys::store::{EmbeddedStore, MasterKeyStore as _};
use authtime_nts::KeyRing;
use hostile_support::{Exchange, Rng, exchange, query_nts, query_nts_within};
use ntp_support::{ChildGuard, Serve, TempDir, free_udp_port, text_of};

/// The tests of this file run one at a time: each puts a server under its
/// own load (or times its kills to its rotations), and two at once on 2 CPUs
/// blur what each proves.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// The master-key file must hold a ring that decodes.
fn assert_whole_ring(path: &std::path::Path) -> KeyRing {
    let blob = EmbeddedStore::new(path)
        .load()
        .expect("readable key file")
        .expect("a key file exists");
    KeyRing::from_bytes(&blob).unwrap_or_else(|e| panic!("torn key file ({e:?}): {blob:02x?}"))
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", text_of(out));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn kill_9_during_rotations_leaves_a_whole_key_file_and_cookies_stay_valid() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("faults-kill9");
    nts_cert(&dir, "nts", &[]);
    let (ntp_port, ke_port) = (free_udp_port(), free_tcp_port());
    let body = format!(
        "[ntp]\nlisten = [\"127.0.0.1:{ntp_port}\"]\nworkers = 1\n\
         [nts-ke]\nlisten = [\"127.0.0.1:{ke_port}\"]\ncertificate-chain = \"nts-chain.pem\"\n\
         private-key = \"nts-key.pem\"\nworkers = 1\n\
         [keystore]\npath = \"master-keys\"\nrotation-interval = 2\nold-keys = 3\n\
         poll-interval = 0.1\n"
    );
    let keys = dir.path("master-keys");
    let ca = dir.path("nts-ca.pem");
    let store = dir.path("cookies").display().to_string();
    // Kill points, in ms after a rotation boundary (even Unix seconds): the
    // keeper rotates within its 0.1 s poll of the boundary, so these land
    // before, inside and after the temporary-file write, fsync and rename.
    let offsets_ms = [0u64, 10, 25, 40, 55, 70, 85, 100, 130, 600];
    let (mut rotations_seen, mut leftovers) = (0, Vec::new());
    for (run, offset) in offsets_ms.iter().enumerate() {
        let mut serve = Serve::start_named(&dir, &format!("run{run}"), &body);
        // Cookies the previous (killed) server issued open here: its keys
        // reached the disk whole.
        let reply = json(&query_nts(&serve, &ca, &["--cookie-store", &store]));
        if run > 0 {
            assert_eq!(
                reply["nts"]["ke_exchanges"],
                0,
                "run {run}: the cookies of the killed server were refused: {reply}\n{}",
                serve.log_text()
            );
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_millis() as u64;
        let boundary = (now / 2000 + 1) * 2000;
        std::thread::sleep(Duration::from_millis(boundary + offset - now));
        rotations_seen += serve.metric("authtime_nts_key_rotations_total");
        serve.process.signal("KILL");
        assert!(
            serve
                .process
                .wait_for_exit(Duration::from_secs(5))
                .is_some()
        );
        assert_whole_ring(&keys);
        leftovers.extend(
            std::fs::read_dir(&dir.0)
                .expect("dir")
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(".tmp")),
        );
    }
    let serve = Serve::start_named(&dir, "last", &body);
    let reply = json(&query_nts(&serve, &ca, &["--cookie-store", &store]));
    assert_eq!(reply["nts"]["ke_exchanges"], 0, "{reply}");
    eprintln!(
        "kill -9: {} kills, {rotations_seen} rotations published by the killed servers, \
         temporary files left: {leftovers:?}",
        offsets_ms.len()
    );
    assert!(rotations_seen >= offsets_ms.len() as u64 / 2);
}

/// redis-server on loopback without persistence (killed on drop).
fn redis(port: u16) -> ChildGuard {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start redis-server ({e}); ./test.sh installs it"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    ChildGuard {
        child,
        name: "redis-server".into(),
    }
}

/// What the NTS load of [`nts_load`] got.
#[derive(Debug, Default)]
struct LoadOutcome {
    /// Authenticated replies.
    ok: u64,
    /// NAKs of cookies that were surely still valid: refusals.
    refused: u64,
    /// NAKs of cookies that may have expired while the exchange was delayed.
    late_naks: u64,
    /// Exchanges without a reply within 1 s (retried with the same cookie).
    lost: u64,
    /// New sessions taken from NTS-KE because every cookie was too old.
    new_sessions: u64,
}

/// A cookie is used while its request left less than this long ago...
const COOKIE_USE: Duration = Duration::from_millis(1200);
/// ...and is surely valid until this long after it: 2 s periods with one
/// old key kept make every cookie valid at least one whole period, less the
/// keeper's 0.2 s poll.
const COOKIE_VALID: Duration = Duration::from_millis(1500);

/// An NTS exchange every 5 ms against `serve` until `stop`, each with the
/// oldest cookie in hand whose request left less than [`COOKIE_USE`] ago.
fn nts_load(dir: &TempDir, serve: &Serve, ca: &std::path::Path, stop: &AtomicBool) -> LoadOutcome {
    let to = SocketAddr::new([127, 0, 0, 1].into(), serve.addr.port());
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut rng = Rng::new(5);
    let mut out = LoadOutcome::default();
    // Cookies with the time the request that brought them left.
    let fresh_session = || {
        let asked = Instant::now();
        let session = hostile_support::session(dir, serve, ca);
        let cookies: Vec<(Instant, Vec<u8>)> =
            session.cookies.into_iter().map(|c| (asked, c)).collect();
        (session.keys, cookies)
    };
    let (mut keys, mut cookies) = fresh_session();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        cookies.retain(|(t, _)| t.elapsed() < COOKIE_USE);
        if cookies.is_empty() {
            // Only after exchanges were lost (each takes 1 s): counted there.
            out.new_sessions += 1;
            (keys, cookies) = fresh_session();
        }
        let (issued, cookie) = cookies.remove(0);
        let asked = Instant::now();
        match exchange(
            &socket,
            to,
            &keys,
            &cookie,
            1,
            &mut rng,
            Duration::from_secs(1),
        ) {
            Exchange::Time(fresh) => {
                out.ok += 1;
                cookies.extend(fresh.into_iter().map(|c| (asked, c)));
            }
            // The cookie's age when the NAK came back bounds its age when
            // the server judged it.
            Exchange::Nak if issued.elapsed() < COOKIE_VALID => out.refused += 1,
            Exchange::Nak => out.late_naks += 1,
            Exchange::Lost => {
                out.lost += 1;
                cookies.insert(0, (issued, cookie));
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    out
}

#[test]
fn rotation_and_a_failing_redis_under_load_refuse_no_valid_cookie() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("faults-redis");
    nts_cert(&dir, "nts", &[]);
    let redis_port = free_tcp_port();
    let mut redis_server = redis(redis_port);
    let body = hostile_support::nts_config(
        "",
        "",
        &format!(
            "[keystore]\nkind = \"redis\"\nurl = \"redis://127.0.0.1:{redis_port}?key=faults\"\n\
             rotation-interval = 2\nold-keys = 1\npoll-interval = 0.2\n\
             [rate-limit]\nenabled = false\n"
        ),
    );
    let serve = Serve::start(&dir, &body);
    let ca = dir.path("nts-ca.pem");

    // The load runs through every phase below; a cookie is valid for at
    // least 1.5 s, so every one it uses must open.
    let stop = AtomicBool::new(false);
    let load = std::thread::scope(|scope| {
        let load = scope.spawn(|| nts_load(&dir, &serve, &ca, &stop));
        let phase = |what: &str, ms: u64| {
            eprintln!("redis: {what}");
            std::thread::sleep(Duration::from_millis(ms));
        };
        phase("running", 1500);
        redis_server.signal("KILL");
        let _ = redis_server.wait_for_exit(Duration::from_secs(5));
        phase("killed", 2500);
        assert_eq!(serve.wait_metric("authtime_nts_keystore_down", 1), 1);
        // NTS-KE keeps issuing cookies from the keys held.
        assert!(query_nts(&serve, &ca, &[]).status.success());
        let redis_server = redis(redis_port);
        phase("restarted empty", 2500);
        redis_server.signal("STOP");
        phase("frozen", 2500);
        assert!(query_nts(&serve, &ca, &[]).status.success());
        redis_server.signal("CONT");
        phase("thawed", 1500);
        stop.store(true, Ordering::Relaxed);
        load.join().expect("load")
    });
    let metrics = serve.scrape();
    eprintln!(
        "redis: {load:?}, key ring changes {}, store errors {}",
        ntp_support::metric(&metrics, "authtime_nts_key_ring_changes_total"),
        hostile_support::family_sum(&metrics, "authtime_nts_keystore_errors_total")
    );
    assert!(load.ok > 200, "{load:?}");
    assert_eq!(load.refused, 0, "valid cookies refused: {load:?}");
    // A busy machine may delay an exchange (lost, or a cookie too old when
    // it arrives), but the server kept answering: at most 5% of them.
    assert!(
        (load.lost + load.late_naks) * 20 <= load.ok,
        "the load was not served: {load:?}"
    );
    // Every NAK the server sent is one of those (a NAK later than 1 s counts
    // as lost).
    let naks = hostile_support::family_sum(&metrics, "authtime_nts_naks_total");
    assert!(naks <= load.late_naks + load.lost, "{naks} NAKs: {load:?}");
    assert!(ntp_support::metric(&metrics, "authtime_nts_key_ring_changes_total") >= 4);
}

/// Replaces `to` by `from`: through a temporary file and a rename, or by
/// rewriting it in place (what `cp` does).
fn replace(dir: &TempDir, from: &str, to: &str, in_place: bool) {
    let bytes = std::fs::read(dir.path(from)).expect("read");
    if in_place {
        std::fs::write(dir.path(to), bytes).expect("write");
    } else {
        let tmp = dir.path(&format!("{to}.new"));
        std::fs::write(&tmp, bytes).expect("write");
        std::fs::rename(tmp, dir.path(to)).expect("rename");
    }
}

#[test]
fn certificates_replaced_under_load_fail_no_handshake() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("faults-certs");
    nts_cert(&dir, "a", &[]);
    nts_cert(&dir, "b", &[]);
    // Clients trust both CAs, as during a planned CA change.
    let mut bundle = std::fs::read(dir.path("a-ca.pem")).expect("ca");
    bundle.extend(std::fs::read(dir.path("b-ca.pem")).expect("ca"));
    std::fs::write(dir.path("both-ca.pem"), bundle).expect("bundle");
    replace(&dir, "a-chain.pem", "nts-chain.pem", false);
    replace(&dir, "a-key.pem", "nts-key.pem", false);
    let serve = Serve::start(
        &dir,
        &hostile_support::nts_config(
            "",
            // Two clients on 127.0.0.1 handshake back to back for up to 60 s.
            "certificate-check-interval = 0.1\nclient-limit = false",
            "[keystore]\npath = \"master-keys\"\n[rate-limit]\nenabled = false\n",
        ),
    );
    let serve = Arc::new(serve);
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (serve, stop, ca) = (serve.clone(), stop.clone(), dir.path("both-ca.pem"));
            std::thread::spawn(move || {
                let (mut ok, mut no_answer, mut failures) = (0u64, 0u64, Vec::new());
                let mut in_a_row = 0;
                let deadline = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                    // A generous timeout: a busy machine may be slow to
                    // answer, and only a failed handshake is this test's fault.
                    let out = query_nts_within(&serve, &ca, "5", &[]);
                    match out.status.code() {
                        Some(0) => {
                            ok += 1;
                            in_a_row = 0;
                        }
                        // No answer in time: retried, three times in a row at most.
                        Some(3) if in_a_row < 2 => {
                            no_answer += 1;
                            in_a_row += 1;
                        }
                        _ => failures.push(text_of(&out)),
                    }
                }
                (ok, no_answer, failures)
            })
        })
        .collect();
    // Eight swaps, a then b then a..., half by rename and half in place,
    // the chain first and the key a moment later (a mismatched pair on disk
    // for that moment), some announced by SIGHUP too.
    for swap in 0..8 {
        let (next, in_place) = (if swap % 2 == 0 { "b" } else { "a" }, swap % 4 >= 2);
        std::thread::sleep(Duration::from_millis(400));
        replace(
            &dir,
            &format!("{next}-chain.pem"),
            "nts-chain.pem",
            in_place,
        );
        std::thread::sleep(Duration::from_millis(30));
        replace(&dir, &format!("{next}-key.pem"), "nts-key.pem", in_place);
        if swap % 3 == 0 {
            serve.process.signal("HUP");
        }
    }
    // The last swaps are reloaded within the 0.1 s check interval.
    let deadline = Instant::now() + Duration::from_secs(5);
    while serve
        .log_text()
        .matches("NTS-KE certificate reloaded")
        .count()
        < 4
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let (mut ok, mut no_answer, mut failures) = (0, 0, Vec::new());
    for client in clients {
        let (n, late, f) = client.join().expect("client");
        ok += n;
        no_answer += late;
        failures.extend(f);
    }
    let log = serve.log_text();
    let reloads = log.matches("NTS-KE certificate reloaded").count();
    eprintln!(
        "certificates: {ok} handshakes ok, {no_answer} without an answer in 5 s (retried), {} \
         failed, {reloads} reloads, {} reloads refused",
        failures.len(),
        log.matches("keeping the old one").count()
    );
    assert!(reloads >= 4, "{log}");
    assert!(ok >= 10, "{ok} handshakes");
    assert!(failures.is_empty(), "handshakes failed: {failures:#?}");
}
