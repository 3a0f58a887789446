//! `authtime roughtime query` and `verify-report` against tiny Roughtime
//! servers in this test (threads on loopback, free ports, built on
//! `authtime_roughtime::respond_batch`): honest servers agree (exit 0); a
//! server ten minutes ahead, asked first, is caught out of causal order
//! (exit 4) and the report it leaves verifies on its own.

#![allow(clippy::unwrap_used)]

mod roughtime_support;

use std::net::UdpSocket;
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use roughtime_support::{ScratchDir, TestServer};

/// A test server and its public key in hex, as `--public-key` takes it.
fn start(seed: u8, offset: i64) -> (TestServer, String) {
    let server = TestServer::start(seed, offset);
    let key = hex::encode(server.public_key);
    (server, key)
}

fn authtime(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_authtime"))
        .args(args)
        .output()
        .unwrap()
}

fn query_args<'a>(servers: &'a [(TestServer, String)], extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "roughtime",
        "query",
        "--timeout-ms",
        "500",
        "--retries",
        "1",
    ];
    for (s, key) in servers {
        args.extend(["--server", &s.address, "--public-key", key]);
    }
    args.extend(extra);
    args
}

#[test]
fn two_honest_servers_agree() {
    let servers = [start(1, 0), start(2, 0)];
    let out = authtime(&query_args(&servers, &["--json"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (lo, hi) = (
        doc["agreed"]["earliest"].as_u64().unwrap(),
        doc["agreed"]["latest"].as_u64().unwrap(),
    );
    assert!(lo <= hi && hi - lo <= 10, "{stdout}");
    assert!(lo <= now && now <= hi + 1, "{stdout}");
    for (entry, (server, _)) in doc["servers"].as_array().unwrap().iter().zip(&servers) {
        assert_eq!(entry["name"], server.address.as_str());
        assert_eq!(entry["radius"], 5);
        assert!(entry["midpoint_utc"].as_str().unwrap().ends_with('Z'));
    }
    assert!(doc["malfeasance"].is_null());

    // The text form names both servers and the interval.
    let out = authtime(&query_args(&servers, &[]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("agreed: "), "{text}");
    assert_eq!(text.matches("radius 5 s").count(), 2, "{text}");

    // The same two from an ecosystem list, plus a Google-Roughtime entry
    // that is listed as skipped.
    let (a, b) = (&servers[0].0, &servers[1].0);
    let mut old = roughtime_support::entry("old", "127.0.0.1:9", &a.public_key);
    old["version"] = "Google-Roughtime".into();
    let dir = ScratchDir::new("rt-eco");
    let path = dir.path("servers.json");
    roughtime_support::write_list(
        &path,
        vec![
            roughtime_support::entry("a", &a.address, &a.public_key),
            old,
            roughtime_support::entry("b", &b.address, &b.public_key),
        ],
    );
    let out = authtime(&[
        "roughtime",
        "query",
        "--servers",
        path.to_str().unwrap(),
        "--timeout-ms",
        "500",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("old: skipped"), "{text}");
    assert_eq!(text.matches("radius 5 s").count(), 2, "{text}");
}

#[test]
fn server_ten_minutes_ahead_is_reported_and_the_report_verifies() {
    let servers = [start(3, 600), start(4, 0)];
    let dir = ScratchDir::new("roughtime");
    let report = dir.path("report.json");
    let report_arg = report.to_str().unwrap();
    let out = authtime(&query_args(&servers, &["--malfeasance-report", report_arg]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("malfeasance"), "{text}");
    assert!(text.contains("agreed: none"), "{text}");

    let check = authtime(&["roughtime", "verify-report", report_arg]);
    let checked = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{checked}");
    assert!(checked.contains("malfeasance: response 1"), "{checked}");

    // A tampered report (the second response's rand replaced) is refused.
    let json = std::fs::read_to_string(&report).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    doc["responses"][1]["rand"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into();
    std::fs::write(&report, doc.to_string()).unwrap();
    let check = authtime(&["roughtime", "verify-report", report_arg]);
    assert_eq!(check.status.code(), Some(1));
}

#[test]
fn silent_server_and_bad_arguments() {
    // A bound socket that never answers: exit 3 after the bounded retries.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let key = "AW5uAoTSTDfG5NfY1bTh08GUnOqlRb+HVhbJ3ODJvsE=";
    let started = Instant::now();
    let out = authtime(&[
        "roughtime",
        "query",
        "--server",
        &address,
        "--public-key",
        key,
        "--timeout-ms",
        "200",
        "--retries",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(started.elapsed() < Duration::from_secs(5));
    // One key for two servers is a usage error.
    let out = authtime(&[
        "roughtime",
        "query",
        "--server",
        &address,
        "--server",
        &address,
        "--public-key",
        key,
    ]);
    assert_eq!(out.status.code(), Some(2));
}
