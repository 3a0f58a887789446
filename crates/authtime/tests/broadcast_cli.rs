//! `authtime broadcast serve` and `broadcast listen` as a user runs them:
//! separate processes, a loopback multicast group (239.255.x.y joined on
//! 127.0.0.1, high random ports), at least three authenticated time samples,
//! and a listener with the wrong public key refused.

mod ntp_support;
mod tesla_support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ntp_support::{ChildGuard, Serve, TempDir, authtime, authtime_bin, text_of};
use tesla_support::{Endpoints, keygen};

const LIMIT: Duration = Duration::from_secs(15);

fn path(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_owned()
}

/// Starts `authtime broadcast <args>`, standard output and error to files.
fn spawn(name: &str, args: &[&str], out: &Path, log: &Path) -> ChildGuard {
    let child = Command::new(authtime_bin())
        .arg("broadcast")
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(out).expect("out file"))
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("start authtime broadcast");
    ChildGuard {
        child,
        name: name.into(),
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// Runs a server with `secret` and a listener trusting `public`; returns the
/// listener's exit code, its standard output and all logs.
fn run(dir: &TempDir, secret: &Path, public: &Path) -> (Option<i32>, String, String) {
    run_with(dir, secret, public, &[])
}

/// [`run`] with more arguments for the listener.
fn run_with(
    dir: &TempDir,
    secret: &Path,
    public: &Path,
    extra: &[&str],
) -> (Option<i32>, String, String) {
    run_with_clock(dir, secret, public, extra, ntp_support::LAB_CLOCK)
}

/// [`run_with`] with the server's `[clock]` section.
fn run_with_clock(
    dir: &TempDir,
    secret: &Path,
    public: &Path,
    extra: &[&str],
    clock: &str,
) -> (Option<i32>, String, String) {
    let config = dir.path("broadcast-serve.toml");
    std::fs::write(&config, clock).expect("config");
    let config = path(&config);
    let ends = Endpoints::new();
    let group = ends.group.to_string();
    let (serve_out, serve_log) = (dir.path("serve.out"), dir.path("serve.log"));
    let (listen_out, listen_log) = (dir.path("listen.out"), dir.path("listen.log"));
    let _server = spawn(
        "broadcast serve",
        &[
            "serve",
            "--group",
            &group,
            "--iface",
            "127.0.0.1",
            "--sync-listen",
            &ends.sync,
            "--key",
            &path(secret),
            // A packet read up to about 300 ms late is still safe: room
            // for the stalls of a busy machine (50 ms and d = 2 left 50 ms).
            "--interval-ms",
            "100",
            "--delay-intervals",
            "4",
            "--duration",
            "14",
            "--config",
            &config,
        ],
        &serve_out,
        &serve_log,
    );
    let public = path(public);
    let mut listen_args = vec![
        "listen",
        "--group",
        &group,
        "--iface",
        "127.0.0.1",
        "--sync",
        &ends.sync,
        "--pubkey",
        &public,
        "--count",
        "3",
        "--json",
    ];
    if !extra.contains(&"--timeout") {
        listen_args.extend_from_slice(&["--timeout", "10"]);
    }
    listen_args.extend_from_slice(extra);
    let mut listener = spawn("broadcast listen", &listen_args, &listen_out, &listen_log);
    let status = listener.wait_for_exit(LIMIT);
    let logs = format!(
        "--- serve log:\n{}\n--- listen log:\n{}\n--- listen out:\n{}",
        read(&serve_log),
        read(&listen_log),
        read(&listen_out)
    );
    (status.and_then(|s| s.code()), read(&listen_out), logs)
}

#[test]
fn a_listener_gets_three_authenticated_samples_over_loopback_multicast() {
    let started = Instant::now();
    let dir = TempDir::new("broadcast-ok");
    let (secret, public) = keygen(&dir, "ed25519");
    let (code, out, logs) = run(&dir, &secret, &public);
    assert_eq!(code, Some(0), "{logs}");
    let samples: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(samples.len(), 3, "{logs}");
    for (k, s) in samples.iter().enumerate() {
        assert_eq!(s["sample"], k as u64 + 1, "{logs}");
        // Same host, same clock: the true offset, 0, lies between the
        // estimate (a lower bound: the best sample's delay, a few ms unless
        // the listener was descheduled) and the upper bound, give or take
        // 50 ms for the listener's one reading of its two clocks.
        let offset = s["estimate_ns"].as_i64().expect("estimate");
        let uncertainty = s["uncertainty_ns"].as_u64().expect("uncertainty");
        assert!(offset.abs() < 500_000_000, "{logs}");
        assert!(uncertainty < 1_000_000_000, "{logs}");
        let upper = offset.saturating_add_unsigned(uncertainty);
        assert!(offset <= 50_000_000 && upper >= -50_000_000, "{logs}");
    }
    assert!(logs.contains("3 samples accepted"), "{logs}");
    eprintln!(
        "broadcast round trip: {:.2} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_listener_with_the_wrong_public_key_refuses_the_bootstrap() {
    let dir = TempDir::new("broadcast-wrong-key");
    let (secret, _) = keygen(&dir, "ed25519");
    let other = TempDir::new("broadcast-wrong-key-other");
    let (_, wrong_public) = keygen(&other, "ed25519");
    let (code, out, logs) = run(&dir, &secret, &wrong_public);
    assert_eq!(code, Some(1), "{logs}");
    assert!(out.is_empty(), "{logs}");
}

#[test]
fn samples_are_cross_checked_with_a_real_nts_server() {
    let dir = TempDir::new("broadcast-nts-check");
    let out_dir = dir.0.display().to_string();
    let out = authtime(&["nts", "cert", "--out-dir", &out_dir, "--name", "localhost"]);
    assert!(out.status.success(), "{}", text_of(&out));
    let nts = Serve::start_named(
        &dir,
        "nts",
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[nts-ke]\nlisten = [\"127.0.0.1:0\"]\n\
         certificate-chain = \"nts-chain.pem\"\nprivate-key = \"nts-key.pem\"\nworkers = 1\n\
         [keystore]\npath = \"keys\"\n",
    );
    let ke = format!("localhost:{}", nts.nts_ke.expect("NTS-KE").port());
    let ca = path(&dir.path("nts-ca.pem"));
    let (secret, public) = keygen(&dir, "ed25519");
    // Same host, same clock: broadcast and NTS agree.
    let (code, out, logs) = run_with(
        &dir,
        &secret,
        &public,
        &["--nts-check", &ke, "--nts-ca", &ca],
    );
    assert_eq!(code, Some(0), "{logs}");
    assert!(logs.contains("NTS reference from"), "{logs}");
    for line in out.lines() {
        let s: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        // Off by at most half the NTS round trip: room for a busy machine.
        assert!(s["nts_offset_ns"].as_i64().expect("NTS offset").abs() < 500_000_000);
    }
    assert!(nts.metric("authtime_nts_answered_total") >= 1);
    // No NTS server there: the listener says so instead of trusting broadcast alone.
    let (code, _, logs) = run_with(
        &dir,
        &secret,
        &public,
        &["--nts-check", "127.0.0.1:1", "--nts-ca", &ca],
    );
    assert_eq!(code, Some(3), "{logs}");
    assert!(logs.contains("no NTS reference"), "{logs}");
}

#[test]
fn a_sender_whose_clock_is_unsynchronized_gives_no_sample() {
    let dir = TempDir::new("broadcast-unsync");
    let (secret, public) = keygen(&dir, "ed25519");
    // chronyd's command port where nothing listens: the sender's clock state
    // cannot be read, so its packets say unsynchronized (leap 3, stratum 0).
    let nobody = ntp_support::free_udp_port();
    let clock = format!("[clock]\nsource = \"chrony\"\nchrony-address = \"127.0.0.1:{nobody}\"\n");
    let (code, out, logs) = run_with_clock(&dir, &secret, &public, &["--timeout", "3"], &clock);
    assert_eq!(code, Some(3), "{logs}");
    assert!(out.is_empty(), "{logs}");
    assert!(
        logs.contains("UNSYNCHRONIZED"),
        "the server says so: {logs}"
    );
    assert!(
        logs.contains("sender says its clock is unsynchronized"),
        "the listener says why: {logs}"
    );
}
