//! Steps of the server's clock while it serves, with no real clock touched:
//! `authtime serve` runs under the `scripts/offset-clock.c` shim
//! (`LD_PRELOAD`), which adds the number of seconds in a file to every
//! real-time clock read and to the kernel's packet timestamps; the clients
//! (this test, `authtime query`) run without it, so after a step the server's
//! time really is off by the step. For each step (minus one hour, plus one
//! day, plus ten years, back to none) NTP answers (plain and with a symmetric
//! key) carry the stepped time, NTS cookies are opened only under their own
//! key (cookies from before a step back still work; cookies whose key was
//! rotated out are refused and the client does NTS-KE again), Roughtime signs the stepped time only under an
//! online key whose MINT..MAXT holds it, the daemon logs each step once and
//! counts it (`authtime_clock_steps_total`), and it goes on serving when the
//! clock comes back, without a restart. See docs/clock-steps.md.

#![allow(clippy::unwrap_used)]

mod ntp_support;

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use authtime_roughtime::{Verified, Version, build_request, verify_response};
use ntp_support::{Serve, TempDir, authtime, keygen, nts_cert, text, text_of};

/// Ten years of 365 days and two leap days, in seconds.
const TEN_YEARS: i64 = (10 * 365 + 2) * 86_400;

/// Builds the shim into `dir` with the system C compiler.
fn build_shim(dir: &TempDir) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/offset-clock.c");
    let shim = dir.path("offset-clock.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&shim)
        .arg(&source)
        .arg("-ldl")
        .output()
        .expect("a C compiler (cc) builds scripts/offset-clock.c");
    assert!(out.status.success(), "cc: {}", text_of(&out));
    shim
}

fn unix_now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// The Roughtime long-term public key made by `authtime roughtime keygen`.
fn roughtime_keygen(dir: &TempDir) -> [u8; 32] {
    let out = authtime(&[
        "roughtime",
        "keygen",
        "--out",
        &dir.path("lt.key").to_string_lossy(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let hex_key = stdout
        .lines()
        .find_map(|l| l.strip_prefix("public key (hex): "))
        .unwrap()
        .trim()
        .to_owned();
    hex::decode(hex_key).unwrap().try_into().unwrap()
}

/// One verified Roughtime exchange over UDP, if answered within 300 ms.
fn roughtime_once(addr: SocketAddr, public: &[u8; 32]) -> Option<Verified> {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut nonce = [0_u8; 32];
    getrandom::fill(&mut nonce).unwrap();
    let request = build_request(&[Version::Rfc1], &nonce, None).unwrap();
    socket.send_to(&request, addr).unwrap();
    let mut buf = [0_u8; 4096];
    let (n, _) = socket.recv_from(&mut buf).ok()?;
    Some(verify_response(&request, &buf[..n], public).expect("a verified response"))
}

/// `authtime query --json` of plain NTP. Right after a step the daemon may
/// answer "unsynchronized" for a few milliseconds, until it has read its
/// clock source again: retried for up to 3 s.
fn ntp_query(serve: &Serve, extra: &[&str]) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(3);
    let target = serve.addr.to_string();
    let mut args = vec!["query", target.as_str(), "--timeout", "1", "--json"];
    args.extend_from_slice(extra);
    loop {
        let out = authtime(&args);
        if out.status.success() || Instant::now() >= deadline {
            assert!(
                out.status.success(),
                "{}\n{}",
                text_of(&out),
                serve.log_text()
            );
            return serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", text_of(&out)));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `authtime query --nts --cookie-store jar --json`.
fn nts_query(dir: &TempDir, serve: &Serve, jar: &Path) -> serde_json::Value {
    let out = authtime(&[
        "query",
        "--nts",
        &format!("localhost:{}", serve.nts_ke.unwrap().port()),
        "--ca",
        &dir.path("nts-ca.pem").display().to_string(),
        "--cookie-store",
        &jar.display().to_string(),
        "--timeout",
        "1",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}\nserver log:\n{}\n{}",
        text_of(&out),
        serve.log_text(),
        serve.scrape()
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text_of(&out)))
}

/// The offset of the first reply, seconds.
fn offset_of(json: &serde_json::Value) -> f64 {
    json["replies"][0]["offset"]
        .as_f64()
        .unwrap_or_else(|| panic!("no offset in {json}"))
}

/// Presents a copy of `jar`: true when its cookies were accepted (no NTS-KE).
fn stored_cookies_accepted(dir: &TempDir, serve: &Serve, jar: &Path) -> (bool, serde_json::Value) {
    let copy = jar.with_extension("try");
    std::fs::copy(jar, &copy).unwrap();
    let json = nts_query(dir, serve, &copy);
    assert_eq!(json["replies"][0]["auth"], "nts", "{json}");
    let accepted =
        json["nts"]["ke_exchanges"] == 0 && json["nts"]["session_from_cookie_store"] == true;
    (accepted, json)
}

#[test]
fn steps_of_the_servers_clock_are_served_refused_as_the_rfcs_say_logged_once_and_survived() {
    let started = Instant::now();
    let dir = TempDir::new("clock-steps");
    let shim = build_shim(&dir);
    let offset_file = dir.path("offset");
    std::fs::write(&offset_file, "0\n").unwrap();
    nts_cert(&dir, "nts", &[]);
    let public = roughtime_keygen(&dir);
    let mut preload = std::ffi::OsString::from("LD_PRELOAD=");
    preload.push(&shim);
    let mut file_var = std::ffi::OsString::from("OFFSET_CLOCK_FILE=");
    file_var.push(&offset_file);
    let env = std::ffi::OsString::from("env");
    let keys = keygen(&dir, "ntp.keys", "ntpd", &[("aes128", 7)]);
    let config = format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\nkeys = \"{}\"\n\
         [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"nts-chain.pem\"\n\
         private-key = \"nts-key.pem\"\nworkers = 1\n\
         [keystore]\npath = \"keys\"\nrotation-interval = 3600\nold-keys = 3\n\
         [roughtime]\nlisten = [\"127.0.0.1:0\"]\nlong-term-key = \"lt.key\"\nrate-limit = 0\n\
         [rate-limit]\nenabled = false\n",
        keys.display()
    );
    let serve = Serve::start_via(&dir, "serve", &config, &[&env, &preload, &file_var]);
    let roughtime = serve.roughtime.expect("Roughtime address");

    // Before any step: cookies kept in jar0.
    let jar0 = dir.path("jar0.json");
    let json = nts_query(&dir, &serve, &jar0);
    assert_eq!(json["nts"]["ke_exchanges"], 1, "{json}");
    assert!(offset_of(&json).abs() < 1.0, "{json}");
    let v = roughtime_once(roughtime, &public).expect("a Roughtime answer");
    assert!(v.midpoint.abs_diff(unix_now().unsigned_abs()) <= 2, "{v:?}");

    let mut steps_seen = 0;
    for (step, name) in [
        (-3600, "minus one hour"),
        (86_400, "plus one day"),
        (TEN_YEARS, "plus ten years"),
        (0, "back"),
    ] {
        std::fs::write(&offset_file, format!("{step}\n")).unwrap();
        steps_seen += 1;
        // The daemon sees the step within 50 ms (the shim) plus 200 ms (the
        // watch); its metric says so.
        let seen = serve.wait_metric("authtime_clock_steps_total", steps_seen);
        assert_eq!(
            seen,
            steps_seen,
            "{name}: step not counted\n{}",
            serve.log_text()
        );

        // NTP: the answer carries the stepped time.
        #[expect(clippy::cast_precision_loss, reason = "seconds")]
        let expected = step as f64;
        let json = ntp_query(&serve, &[]);
        assert!(
            (offset_of(&json) - expected).abs() < 1.0,
            "{name}: NTP {json}"
        );
        // Symmetric key (the MAC does not depend on the time).
        let key_file = keys.display().to_string();
        let json = ntp_query(&serve, &["--key-file", &key_file, "--key-id", "7"]);
        assert_eq!(json["replies"][0]["authenticated"], true, "{name}: {json}");
        assert!(
            (offset_of(&json) - expected).abs() < 1.0,
            "{name}: NTP with a key {json}"
        );

        // NTS: cookies from before the step.
        let (accepted, json) = stored_cookies_accepted(&dir, &serve, &jar0);
        assert!(
            (offset_of(&json) - expected).abs() < 1.0,
            "{name}: NTS {json}"
        );
        match step {
            // The key of the period the cookies were sealed in is still held
            // (it is a key "from the future" now): they are accepted.
            -3600 => assert!(accepted, "{name}: {json}\n{}", serve.log_text()),
            // Rotated out (older than old-keys periods): NAK, new NTS-KE.
            86_400 | TEN_YEARS => assert!(!accepted, "{name}: {json}"),
            // Back: the key of that period was rotated out at +1 day and a new
            // one made under the same id; the cookies fail their AEAD check
            // (never opened under the wrong key) and the client does NTS-KE.
            _ => assert!(!accepted, "{name}: {json}"),
        }
        // A fresh session at the stepped time works, and its cookies are
        // accepted on the next exchange.
        let jar = dir.path(&format!("jar-{step}.json"));
        let _ = nts_query(&dir, &serve, &jar);
        let (accepted, json) = stored_cookies_accepted(&dir, &serve, &jar);
        assert!(accepted, "{name}: fresh cookies refused: {json}");

        // Roughtime: the midpoint is the stepped time, inside the online
        // key's validity; an answer may be missing only while the key is
        // replaced (within one second of the step).
        let deadline = Instant::now() + Duration::from_secs(5);
        let v = loop {
            if let Some(v) = roughtime_once(roughtime, &public) {
                break v;
            }
            assert!(
                Instant::now() < deadline,
                "{name}: no Roughtime answer\n{}",
                serve.log_text()
            );
        };
        let stepped = unix_now() + step;
        assert!(
            v.midpoint.abs_diff(stepped.unsigned_abs()) <= 2,
            "{name}: midpoint {v:?}, stepped time {stepped}"
        );
        assert!(
            v.delegation.0 <= v.midpoint && v.midpoint <= v.delegation.1,
            "{name}: signed outside the online key's validity: {v:?}"
        );
    }

    // Each step logged once, and nothing else counted as one.
    let log = serve.log_text();
    assert_eq!(
        log.matches("the system clock was stepped").count(),
        4,
        "{log}"
    );
    assert_eq!(serve.metric("authtime_clock_steps_total"), 4);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}
