//! Crash consistency of the daemon's key state (issue 29, part 3), from the
//! outside, on the real `authtime serve`:
//! - `kill -9` at seeded random moments of NTS master-key rotation (some at a
//!   rotation boundary, some while the store's temporary file exists, that
//!   is inside the write, fsync and rename): after each kill the key file is
//!   a whole ring that lost no unexpired key, the restarted daemon serves and
//!   accepts every stored cookie still within its lifetime without a new
//!   NTS-KE;
//! - the same for the Roughtime online key: after each kill the stored key
//!   parses under the long-term key, the restarted daemon answers with a
//!   valid signature, and serves the stored key while it is not due;
//! - a read-only state directory and a full disk (a 64 KiB tmpfs) during
//!   rotations: the daemon keeps serving with the keys it holds, says so in
//!   its log and its metrics, leaves the old files whole, starts again on
//!   them, and writes the keys it made meanwhile once the directory takes
//!   writes again, so that cookies sealed under them survive the next crash;
//!   a client whose cookie store is on the full disk keeps its old store
//!   whole and is told the new one could not be saved.
//!
//! The state directory of the last two is a tmpfs mounted in a private mount
//! namespace (`unshare -m`), held by a `sleep` process; the daemon joins it
//! with `nsenter`. Root ignores mode bits (a `chmod 0555` directory stays
//! writable to it), so "read-only" is a read-only remount of that tmpfs:
//! writes fail with EROFS as they would with EACCES for an unprivileged
//! daemon, through the same code. Without the privileges to mount, those
//! tests fail and say why.
//!
//! Seeded: `AUTHTIME_CRASH_SEED=N` replays a run (the seed is printed);
//! `AUTHTIME_CRASH_ROUNDS=N` sets the number of NTS kills (default 24; the
//! Roughtime campaign runs half as many) for a longer campaign.

mod ntp_support;

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use authtime_nts::KeyRing;
use authtime_roughtime::delegation_file::parse_delegation;
use authtime_roughtime::{Verified, Version, build_request, verify_response};
use ntp_support::{ChildGuard, Serve, TempDir, authtime, free_udp_port, nts_cert, text, text_of};

/// `[keystore] rotation-interval` of every test here (the least allowed).
const ROTATION_S: u64 = 2;

/// Old keys kept by the kill campaign: a cookie lives 3 to 4 periods.
const OLD_KEYS: u64 = 3;

/// A small xorshift generator: the kill moments are reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// The seed of this run (`AUTHTIME_CRASH_SEED` or the clock), printed.
fn seed(test: &str) -> u64 {
    let seed = std::env::var("AUTHTIME_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("{test}: seed {seed} (AUTHTIME_CRASH_SEED={seed} replays it)");
    seed
}

/// NTS kills of the campaign (`AUTHTIME_CRASH_ROUNDS`, default 24).
fn rounds() -> u64 {
    std::env::var("AUTHTIME_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24)
        .clamp(1, 5000)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The rotation period of a Unix time in milliseconds.
fn period(ms: u64) -> u64 {
    ms / 1000 / ROTATION_S
}

fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// Kills the daemon with SIGKILL (no `kill` process in between: the signal
/// leaves at the moment chosen) and reaps it.
fn kill_9(serve: &mut Serve) {
    serve.process.child.kill().expect("SIGKILL");
    assert!(
        serve
            .process
            .wait_for_exit(Duration::from_secs(5))
            .is_some(),
        "the killed daemon was not reaped"
    );
}

/// Names in `dir` that are temporary files of a store write.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(".tmp."))
                .collect()
        })
        .unwrap_or_default()
}

/// The ring in the key file at `path`, which must decode whole.
fn ring_at(path: &Path) -> KeyRing {
    let blob = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    KeyRing::from_bytes(&blob)
        .unwrap_or_else(|e| panic!("{}: torn key file ({e:?})", path.display()))
}

fn newest_period(ring: &KeyRing) -> u64 {
    ring.keys()
        .last()
        .map_or(0, authtime_nts::key_ring::MasterKey::period)
}

/// The stored NTS session `jar` of the NTS-KE server on `ke_port`: one
/// `authtime query --nts --cookie-store` and its JSON report.
fn nts_query(dir: &TempDir, ke_port: u16, jar: &Path) -> serde_json::Value {
    let out = authtime(&[
        "query",
        "--nts",
        &format!("localhost:{ke_port}"),
        "--ca",
        &dir.path("nts-ca.pem").display().to_string(),
        "--cookie-store",
        &jar.display().to_string(),
        "--timeout",
        "1",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text_of(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text_of(&out)))
}

/// A new session from NTS-KE, kept in `jar`.
fn new_session(dir: &TempDir, ke_port: u16, jar: &Path) {
    let _ = std::fs::remove_file(jar);
    let json = nts_query(dir, ke_port, jar);
    assert_eq!(json["nts"]["ke_exchanges"], 1, "{json}");
    assert_eq!(json["replies"][0]["auth"], "nts", "{json}");
}

/// The cookies in `jar` (a copy of it, so that the same cookies can be
/// presented again later) are accepted: an NTS exchange with no NTS-KE.
fn assert_cookies_accepted(dir: &TempDir, ke_port: u16, jar: &Path, what: &str, log: &str) {
    let copy = jar.with_extension("try");
    std::fs::copy(jar, &copy).expect("copy the cookie store");
    let json = nts_query(dir, ke_port, &copy);
    let nts = &json["nts"];
    assert!(
        nts["session_from_cookie_store"] == true
            && nts["stored_session_dropped"] == false
            && nts["ke_exchanges"] == 0
            && json["replies"][0]["auth"] == "nts",
        "{what}: stored cookies refused: {json}\nserver log:\n{log}"
    );
}

/// The NTS part of a daemon's configuration on fixed ports (a cookie store
/// names the NTP port NTS-KE gave, so a restarted daemon keeps it).
fn nts_body(ntp_port: u16, ke_port: u16, old_keys: u64) -> String {
    format!(
        "[ntp]\nlisten = [\"127.0.0.1:{ntp_port}\"]\nworkers = 1\n\
         [nts-ke]\nlisten = [\"127.0.0.1:{ke_port}\"]\ncertificate-chain = \"nts-chain.pem\"\n\
         private-key = \"nts-key.pem\"\nworkers = 1\n\
         [keystore]\npath = \"state/keys\"\nrotation-interval = {ROTATION_S}\n\
         old-keys = {old_keys}\npoll-interval = 0.1\n"
    )
}

/// Every key seen in a key file before, whose period is not yet expired at
/// the ring's time, is still there: a key once written is never lost.
fn assert_no_key_lost(ring: &KeyRing, known: &mut BTreeMap<u64, u32>, what: &str) {
    let newest = newest_period(ring);
    let oldest_kept = newest.saturating_sub(1 + OLD_KEYS);
    for (&p, &id) in known.range(oldest_kept..) {
        assert!(
            ring.keys().iter().any(|k| k.period() == p && k.id() == id),
            "{what}: the key of period {p} was lost (ring: {:?})",
            ring.keys()
                .iter()
                .map(authtime_nts::key_ring::MasterKey::period)
                .collect::<Vec<_>>()
        );
    }
    for k in ring.keys() {
        known.insert(k.period(), k.id());
    }
}

/// Waits until `f` holds, polling every 20 ms for at most `limit`.
fn wait_until(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < deadline, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sleeps until `ms` (Unix milliseconds).
fn sleep_until_ms(ms: u64) {
    let now = now_ms();
    if ms > now {
        std::thread::sleep(Duration::from_millis(ms - now));
    }
}

/// Sleeps to the moment a file named `prefix.tmp.*` exists in `dir` (a store
/// write under way), at most `limit`; whether it was seen.
fn wait_for_temporary(dir: &Path, prefix: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let wanted = format!("{prefix}.tmp.");
    while Instant::now() < deadline {
        if let Ok(entries) = std::fs::read_dir(dir)
            && entries
                .filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().starts_with(&wanted))
        {
            return true;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    false
}

#[test]
fn kill_9_during_master_key_rotation_loses_no_key_and_refuses_no_valid_cookie() {
    let started = Instant::now();
    let seed = seed("NTS kill -9");
    let mut rng = Rng::new(seed);
    let dir = TempDir::new("crash-nts");
    nts_cert(&dir, "nts", &[]);
    let state = dir.path("state");
    std::fs::create_dir_all(&state).expect("state dir");
    let keys = state.join("keys");
    let (ntp_port, ke_port) = (free_udp_port(), free_tcp_port());
    let body = nts_body(ntp_port, ke_port, OLD_KEYS);
    let rounds = rounds();
    // Stored sessions with the time the request that filled them left.
    let mut jars: VecDeque<(PathBuf, u64)> = VecDeque::new();
    let mut known = BTreeMap::new();
    let (mut modes, mut inside_write, mut accepted, mut expired) = ([0u64; 3], 0, 0, 0);
    for round in 0..rounds {
        let what = format!("seed {seed}, round {round}");
        let mut serve = Serve::start_named(&dir, "serve", &body);
        // Every stored session still within its lifetime (its cookies were
        // sealed in a period at most OLD_KEYS back when this query ends)
        // opens without NTS-KE.
        let mut kept = VecDeque::new();
        for (jar, issued) in jars.drain(..) {
            let asked = now_ms();
            if period(asked + 1500) <= period(issued) + OLD_KEYS {
                assert_cookies_accepted(&dir, ke_port, &jar, &what, &serve.log_text());
                accepted += 1;
                kept.push_back((jar, issued));
            } else {
                expired += 1;
                let _ = std::fs::remove_file(&jar);
            }
        }
        jars = kept;
        let jar = dir.path(&format!("jar-{round}"));
        let issued = now_ms();
        new_session(&dir, ke_port, &jar);
        jars.push_back((jar, issued));
        if jars.len() > 3
            && let Some((old, _)) = jars.pop_front()
        {
            let _ = std::fs::remove_file(old);
        }
        // The kill: at a random moment, just after a rotation boundary (the
        // keeper polls every 0.1 s), or while a temporary file exists.
        let mode = rng.below(3) as usize;
        modes[mode] += 1;
        match mode {
            0 => std::thread::sleep(Duration::from_millis(rng.below(2500))),
            1 => sleep_until_ms((period(now_ms()) + 1) * ROTATION_S * 1000 + rng.below(150)),
            _ => {
                let delay = Duration::from_micros(rng.below(3000));
                if wait_for_temporary(&state, "keys", Duration::from_millis(2600)) {
                    std::thread::sleep(delay);
                }
            }
        }
        let killed = now_ms();
        kill_9(&mut serve);
        if !temporaries(&state).is_empty() {
            inside_write += 1;
        }
        let ring = ring_at(&keys);
        let newest = newest_period(&ring);
        assert!(
            (period(killed)..=period(killed) + 1).contains(&newest)
                && (2..=OLD_KEYS as usize + 2).contains(&ring.keys().len()),
            "{what}: killed in period {}, the key file holds periods {:?}",
            period(killed),
            ring.keys()
                .iter()
                .map(authtime_nts::key_ring::MasterKey::period)
                .collect::<Vec<_>>()
        );
        assert_no_key_lost(&ring, &mut known, &what);
    }
    // A last start: the stored sessions open, and the next write removes the
    // temporary files the kills left.
    let serve = Serve::start_named(&dir, "serve", &body);
    for (jar, issued) in &jars {
        if period(now_ms() + 1500) <= period(*issued) + OLD_KEYS {
            assert_cookies_accepted(&dir, ke_port, jar, "last start", &serve.log_text());
            accepted += 1;
        }
    }
    let written = serve.metric("authtime_nts_key_rotations_total");
    assert!(
        serve.wait_metric("authtime_nts_key_rotations_total", written + 1) > written,
        "no rotation: {}",
        serve.log_text()
    );
    assert_eq!(
        temporaries(&state),
        Vec::<String>::new(),
        "temporary files of killed writes remain after a later write"
    );
    assert_no_key_lost(&ring_at(&keys), &mut known, "last start");
    eprintln!(
        "NTS kill -9: seed {seed}: {rounds} kills ({} at a random moment, {} just after a \
         rotation boundary, {} while a temporary file existed); {inside_write} left a \
         temporary file (killed inside the write); {accepted} stored sessions accepted after \
         a restart, {expired} expired and not tried; {:.1} s",
        modes[0],
        modes[1],
        modes[2],
        started.elapsed().as_secs_f64()
    );
    assert!(accepted >= rounds, "too few sessions were checked");
}

/// `authtime roughtime keygen` into `dir/lt.key`: the public key.
fn roughtime_keygen(dir: &TempDir) -> [u8; 32] {
    let out = authtime(&[
        "roughtime",
        "keygen",
        "--out",
        &dir.path("lt.key").to_string_lossy(),
    ]);
    assert!(out.status.success(), "{}", text_of(&out));
    let stdout = text(&out.stdout);
    let hex_key = stdout
        .lines()
        .find_map(|l| l.strip_prefix("public key (hex): "))
        .unwrap_or_else(|| panic!("public key in {stdout}"));
    hex::decode(hex_key.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .expect("32 bytes")
}

/// One Roughtime exchange over UDP, verified under `public` (which checks
/// that the midpoint lies in the online key's validity).
fn roughtime_ask(addr: SocketAddr, public: &[u8; 32], rng: &mut Rng, log: &str) -> Verified {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let mut buf = [0u8; 4096];
    let mut last = String::new();
    for _ in 0..4 {
        let mut nonce = [0u8; 32];
        for b in &mut nonce {
            *b = rng.below(256) as u8;
        }
        let request = build_request(&[Version::Rfc1], &nonce, None).expect("request");
        socket.send_to(&request, addr).expect("send");
        match socket.recv_from(&mut buf) {
            Ok((n, _)) => match verify_response(&request, &buf[..n], public) {
                Ok(v) => {
                    let now = now_ms() / 1000;
                    assert!(v.midpoint.abs_diff(now) <= 5, "midpoint {v:?} at {now}");
                    return v;
                }
                Err(e) => last = format!("bad response: {e}"),
            },
            Err(e) => last = format!("no response: {e}"),
        }
    }
    panic!("Roughtime at {addr}: {last}\n{log}");
}

/// The online key's window in the stored blob, which must parse under `public`.
fn stored_window(path: &Path, public: &[u8; 32]) -> (u64, u64) {
    let blob = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let d = std::str::from_utf8(&blob)
        .ok()
        .map(parse_delegation)
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("{}: torn online key", path.display()));
    assert_eq!(&d.long_term_public, public, "stored under another key");
    d.key.window()
}

fn roughtime_body() -> String {
    "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[roughtime]\nlisten = [\"127.0.0.1:0\"]\n\
     long-term-key = \"lt.key\"\nonline-key-lifetime = 4\nrate-limit = 0\n\
     [keystore]\npath = \"state/keys\"\npoll-interval = 0.1\n"
        .into()
}

#[test]
fn kill_9_during_online_key_rotation_leaves_a_key_that_verifies() {
    let started = Instant::now();
    let seed = seed("Roughtime kill -9");
    let mut rng = Rng::new(seed ^ 0x5254);
    let dir = TempDir::new("crash-roughtime");
    let public = roughtime_keygen(&dir);
    let state = dir.path("state");
    std::fs::create_dir_all(&state).expect("state dir");
    let stored = state.join("keys.roughtime");
    let rounds = rounds().div_ceil(2);
    let (mut adopted, mut inside_write, mut on_temporary) = (0, 0, 0);
    let mut at_kill: Option<(u64, u64)> = None;
    for round in 0..rounds {
        let mut serve = Serve::start_named(&dir, "serve", &roughtime_body());
        let addr = serve.roughtime.expect("Roughtime address");
        let v = roughtime_ask(addr, &public, &mut rng, &serve.log_text());
        // A stored key that was not due (more than a third of its 4 s left)
        // is served as it was, not replaced.
        if let Some(window) = at_kill
            && window.1 >= now_ms() / 1000 + 2
        {
            assert_eq!(
                v.delegation,
                window,
                "seed {seed}, round {round}: the stored online key was not adopted\n{}",
                serve.log_text()
            );
            adopted += 1;
        }
        if rng.below(2) == 0 {
            std::thread::sleep(Duration::from_millis(rng.below(3500)));
        } else {
            let delay = Duration::from_micros(rng.below(3000));
            if wait_for_temporary(&state, "keys.roughtime", Duration::from_millis(4000)) {
                on_temporary += 1;
                std::thread::sleep(delay);
            }
        }
        kill_9(&mut serve);
        if temporaries(&state)
            .iter()
            .any(|n| n.starts_with("keys.roughtime."))
        {
            inside_write += 1;
        }
        at_kill = Some(stored_window(&stored, &public));
        // The NTS master keys beside it are whole too.
        ring_at(&state.join("keys"));
    }
    // A last start: it answers, and its first rotation removes the
    // temporary files the kills left.
    let serve = Serve::start_named(&dir, "serve", &roughtime_body());
    roughtime_ask(
        serve.roughtime.expect("address"),
        &public,
        &mut rng,
        &serve.log_text(),
    );
    assert!(
        serve.wait_metric("authtime_roughtime_key_rotations_total", 1) >= 1,
        "no rotation: {}",
        serve.log_text()
    );
    assert_eq!(
        temporaries(&state),
        Vec::<String>::new(),
        "temporary files of killed writes remain after a later write"
    );
    eprintln!(
        "Roughtime kill -9: seed {seed}: {rounds} kills ({on_temporary} while a temporary file \
         existed, {inside_write} left one); the stored key was served as it was after {adopted} \
         restarts (the others found it due); {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// A tmpfs mounted on `state` in a private mount namespace, held by a
/// `sleep` (killed on drop); daemons join it through [`Holder::launcher`].
struct Holder {
    process: ChildGuard,
    state: PathBuf,
}

impl Holder {
    /// Mounts a tmpfs of `size` on `state`; fails the test, saying why, when
    /// this machine does not allow it.
    fn start(state: &Path, size: &str) -> Self {
        let script = format!(
            "mount -t tmpfs -o size={size},mode=0700 authtime-test \"$1\" && echo mounted && \
             exec sleep 600"
        );
        let mut child = Command::new("unshare")
            .args([
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                &script,
                "sh",
            ])
            .arg(state)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run unshare(1) ({e}): this test needs util-linux's unshare")
            });
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mounted = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
        let mut process = ChildGuard {
            child,
            name: "unshare (tmpfs holder)".into(),
        };
        if mounted.trim() != "mounted" {
            let _ = process.child.kill();
            let mut err = String::new();
            if let Some(mut stderr) = process.child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
            }
            panic!(
                "NOT TESTED: cannot mount a tmpfs in a private mount namespace ({}). The \
                 read-only and full-disk tests need CAP_SYS_ADMIN (root, as in the CI \
                 container); they fail rather than pass without testing anything.",
                err.trim()
            );
        }
        Self {
            process,
            state: state.to_path_buf(),
        }
    }

    /// `name` in the tmpfs, as this process reaches it (through the holder's
    /// root, which sees its mount namespace).
    fn file(&self, name: &str) -> PathBuf {
        let mut path = PathBuf::from(format!("/proc/{}/root", self.process.pid()));
        path.push(self.state.strip_prefix("/").expect("absolute"));
        path.push(name);
        path
    }

    /// The tmpfs itself, as [`Holder::file`] reaches it.
    fn dir(&self) -> PathBuf {
        self.file("")
    }

    /// `mount -o remount,OPTIONS` of the tmpfs.
    fn remount(&self, options: &str) {
        let out = Command::new("nsenter")
            .args(["-t", &self.process.pid().to_string(), "-m", "--"])
            .args(["mount", "-o", &format!("remount,{options}")])
            .arg(&self.state)
            .output()
            .expect("nsenter");
        assert!(out.status.success(), "remount,{options}: {}", text_of(&out));
    }

    /// `nsenter -t PID -m --`: starts a command inside the namespace.
    fn launcher(&self) -> Vec<OsString> {
        ["nsenter", "-t", &self.process.pid().to_string(), "-m", "--"]
            .iter()
            .map(OsString::from)
            .collect()
    }
}

fn start_in(holder: &Holder, dir: &TempDir, name: &str, body: &str) -> Serve {
    let launcher = holder.launcher();
    let launcher: Vec<&OsStr> = launcher.iter().map(OsString::as_os_str).collect();
    Serve::start_via(dir, name, body, &launcher)
}

/// What a daemon with both key kinds in a held tmpfs shares with its checks.
struct Faulted {
    dir: TempDir,
    holder: Holder,
    ke_port: u16,
    body: String,
    public: [u8; 32],
    rng: Rng,
}

impl Faulted {
    /// NTS (rotation every 2 s, 30 old keys: cookies live a minute) and
    /// Roughtime (a 4 s online key) with their keys in a tmpfs of `size`.
    fn new(name: &str, size: &str) -> Self {
        let dir = TempDir::new(name);
        nts_cert(&dir, "nts", &[]);
        let public = roughtime_keygen(&dir);
        let state = dir.path("state");
        std::fs::create_dir_all(&state).expect("state dir");
        let holder = Holder::start(&state, size);
        let ke_port = free_tcp_port();
        let body = format!(
            "{}[roughtime]\nlisten = [\"127.0.0.1:0\"]\nlong-term-key = \"lt.key\"\n\
             online-key-lifetime = 4\nrate-limit = 0\n",
            nts_body(free_udp_port(), ke_port, 30)
        );
        Self {
            dir,
            holder,
            ke_port,
            body,
            public,
            rng: Rng::new(now_ms()),
        }
    }

    fn start(&self, name: &str) -> Serve {
        start_in(&self.holder, &self.dir, name, &self.body)
    }

    fn keys(&self) -> PathBuf {
        self.holder.file("keys")
    }

    fn ask_roughtime(&mut self, serve: &Serve) -> Verified {
        let addr = serve.roughtime.expect("Roughtime address");
        roughtime_ask(addr, &self.public, &mut self.rng, &serve.log_text())
    }

    fn accepted(&self, jar: &str, what: &str, serve: &Serve) {
        assert_cookies_accepted(
            &self.dir,
            self.ke_port,
            &self.dir.path(jar),
            what,
            &serve.log_text(),
        );
    }

    fn new_session(&self, jar: &str) {
        new_session(&self.dir, self.ke_port, &self.dir.path(jar));
    }

    /// Waits for the first key-file write of the next rotation period.
    fn wait_for_a_rotation(&self) -> KeyRing {
        sleep_until_ms((period(now_ms()) + 1) * ROTATION_S * 1000);
        let mut ring = None;
        wait_until(Duration::from_secs(3), "a rotation written", || {
            let r = ring_at(&self.keys());
            let done = newest_period(&r) == period(now_ms()) + 1;
            ring = Some(r);
            done
        });
        ring.expect("ring")
    }

    /// The daemon stays up, says the store cannot be written in its log and
    /// its metrics (`keystore_down` stays 1 while it holds keys the store
    /// lacks), and the files are as they were.
    fn assert_serving_without_writes(
        &mut self,
        serve: &mut Serve,
        why: &str,
        frozen: &[Vec<u8>; 2],
    ) {
        wait_until(Duration::from_secs(5), "a failed NTS key write", || {
            serve.metric("authtime_nts_keystore_errors_total") >= 1
        });
        wait_until(
            Duration::from_secs(8),
            "a failed Roughtime key write",
            || serve.metric("authtime_roughtime_keystore_errors_total") >= 1,
        );
        for _ in 0..6 {
            assert_eq!(
                serve.metric("authtime_nts_keystore_down"),
                1,
                "the store cannot take the keys, yet keystore_down is 0\n{}",
                serve.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            serve.process.child.try_wait().expect("wait").is_none(),
            "daemon exited"
        );
        let log = serve.log_text();
        assert!(
            log.contains("NTS key store unavailable") && log.contains(why),
            "no clear NTS log line naming `{why}`:\n{log}"
        );
        assert!(
            log.contains("Roughtime key store") && log.matches(why).count() >= 2,
            "no clear Roughtime log line naming `{why}`:\n{log}"
        );
        self.ask_roughtime(serve);
        assert_eq!(std::fs::read(self.keys()).expect("keys"), frozen[0]);
        assert_eq!(
            std::fs::read(self.holder.file("keys.roughtime")).expect("online key"),
            frozen[1]
        );
        assert_eq!(temporaries(&self.holder.dir()), Vec::<String>::new());
    }

    /// `authtime query --cookie-store` with its store on the full disk: the
    /// new cookies cannot be saved, which it says (naming the file and the
    /// cause); the old store is left whole and no partial copy remains.
    fn assert_client_store_kept_whole(&self) {
        let store = self.holder.file("client-jar");
        let before = std::fs::read(&store).expect("client store");
        let out = Command::new("nsenter")
            .args(["-t", &self.holder.process.pid().to_string(), "-m", "--"])
            .arg(ntp_support::authtime_bin())
            .args(["query", "--nts", &format!("localhost:{}", self.ke_port)])
            .arg("--ca")
            .arg(self.dir.path("nts-ca.pem"))
            .arg("--cookie-store")
            .arg(self.holder.state.join("client-jar"))
            .args(["--timeout", "1", "--json"])
            .output()
            .expect("nsenter authtime query");
        let stderr = text(&out.stderr);
        assert!(
            !out.status.success()
                && stderr.contains("--cookie-store")
                && stderr.contains("No space left on device"),
            "{}",
            text_of(&out)
        );
        assert_eq!(std::fs::read(&store).expect("client store"), before);
        assert!(
            !self.holder.file("client-jar.tmp").exists(),
            "a partial cookie store was left behind"
        );
    }

    fn frozen(&self) -> [Vec<u8>; 2] {
        [
            std::fs::read(self.keys()).expect("keys"),
            std::fs::read(self.holder.file("keys.roughtime")).expect("online key"),
        ]
    }

    /// Waits until the period's sealing key is one the store lacks (made in
    /// memory after the failed writes), and takes a session sealed under it.
    fn session_under_a_key_only_in_memory(&self, frozen: &KeyRing, jar: &str) -> u64 {
        let newest = newest_period(frozen);
        sleep_until_ms((newest + 1) * ROTATION_S * 1000 + 50);
        let sealed_in = period(now_ms());
        self.new_session(jar);
        assert!(sealed_in > newest);
        assert!(
            !ring_at(&self.keys())
                .keys()
                .iter()
                .any(|k| k.period() == sealed_in)
        );
        sealed_in
    }

    /// Once the store takes writes, the keys held in memory reach it within
    /// a poll or two (before the next rotation would write them anyway), and
    /// the online key served is the one stored.
    fn assert_caught_up(&mut self, serve: &Serve, sealed_in: u64) -> Duration {
        let since = Instant::now();
        wait_until(
            Duration::from_secs(5),
            "the keys held written to the store",
            || {
                ring_at(&self.keys())
                    .keys()
                    .iter()
                    .any(|k| k.period() == sealed_in)
                    && serve.metric("authtime_nts_keystore_down") == 0
            },
        );
        let took = since.elapsed();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let served = self.ask_roughtime(serve).delegation;
            let stored = stored_window(&self.holder.file("keys.roughtime"), &self.public);
            if served == stored {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the online key served ({served:?}) never reached the store ({stored:?})\n{}",
                serve.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(temporaries(&self.holder.dir()), Vec::<String>::new());
        took
    }
}

#[test]
fn a_read_only_state_directory_keeps_the_daemon_serving_and_loses_no_key() {
    let started = Instant::now();
    let mut t = Faulted::new("crash-readonly", "1m");
    let mut serve = t.start("before");
    t.new_session("jar-a");
    t.ask_roughtime(&serve);
    let ring = t.wait_for_a_rotation();
    t.holder.remount("ro");
    let frozen = t.frozen();
    t.assert_serving_without_writes(&mut serve, "Read-only file system", &frozen);
    t.accepted("jar-a", "read-only directory", &serve);
    let sealed_in = t.session_under_a_key_only_in_memory(&ring, "jar-b");
    t.holder.remount("rw");
    let took = t.assert_caught_up(&serve, sealed_in);
    let failed = serve.metric("authtime_nts_keystore_errors_total");
    kill_9(&mut serve);
    let serve = t.start("after");
    t.accepted("jar-a", "restart after the read-only time", &serve);
    t.accepted(
        "jar-b",
        "restart after the read-only time (key made then)",
        &serve,
    );
    t.ask_roughtime(&serve);
    eprintln!(
        "read-only state directory: served throughout, {failed} failed NTS store operations, \
         keys written {} ms after the directory took writes again; {:.1} s",
        took.as_millis(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_full_disk_keeps_the_daemon_serving_and_loses_no_key() {
    let started = Instant::now();
    let mut t = Faulted::new("crash-full-disk", "64k");
    let mut serve = t.start("before");
    t.new_session("jar-a");
    t.ask_roughtime(&serve);
    // A client's cookie store on the same disk.
    std::fs::copy(t.dir.path("jar-a"), t.holder.file("client-jar")).expect("copy");
    let ring = t.wait_for_a_rotation();
    // Fill the tmpfs (root gets no reserve on tmpfs).
    let filler = t.holder.file("filler");
    let mut file = std::fs::File::create(&filler).expect("filler");
    let mut full = false;
    for _ in 0..64 {
        if let Err(e) = file.write_all(&[0x55; 4096]) {
            assert_eq!(e.raw_os_error(), Some(28), "{e}");
            full = true;
            break;
        }
    }
    assert!(full, "a 64 KiB tmpfs took 256 KiB");
    drop(file);
    let frozen = t.frozen();
    t.assert_serving_without_writes(&mut serve, "No space left on device", &frozen);
    t.accepted("jar-a", "full disk", &serve);
    t.assert_client_store_kept_whole();
    // A crash while the disk is full: the daemon starts on the files it
    // finds and serves the cookies sealed under them.
    kill_9(&mut serve);
    let mut serve = t.start("full");
    t.accepted("jar-a", "restart on a full disk", &serve);
    t.ask_roughtime(&serve);
    let sealed_in = t.session_under_a_key_only_in_memory(&ring, "jar-b");
    std::fs::remove_file(&filler).expect("free the space");
    let took = t.assert_caught_up(&serve, sealed_in);
    kill_9(&mut serve);
    let serve = t.start("after");
    t.accepted("jar-a", "restart after the full disk", &serve);
    t.accepted(
        "jar-b",
        "restart after the full disk (key made then)",
        &serve,
    );
    t.ask_roughtime(&serve);
    eprintln!(
        "full disk: served throughout and across a crash, keys written {} ms after space was \
         freed; {:.1} s",
        took.as_millis(),
        started.elapsed().as_secs_f64()
    );
}
