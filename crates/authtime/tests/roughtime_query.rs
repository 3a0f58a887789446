//! `authtime roughtime query` and `verify-report` against tiny Roughtime
//! servers in this test (threads on loopback, free ports, built on
//! `authtime_roughtime::respond_batch`): honest servers agree (exit 0); a
//! server ten minutes ahead, asked first, is caught out of causal order
//! (exit 4) and the report it leaves verifies on its own.

#![allow(clippy::unwrap_used)]

use std::net::UdpSocket;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use authtime_roughtime::request::srv_value;
use authtime_roughtime::{BatchTime, OnlineKey, SigningKey, respond_batch};

/// A server answering single requests with its clock `offset` seconds off.
struct TestServer {
    address: String,
    public_key: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    fn start(seed: u8, offset: i64) -> Self {
        let long = SigningKey::from_bytes(&[seed; 32]);
        let public = long.verifying_key().to_bytes();
        let key =
            OnlineKey::delegate(&long, SigningKey::from_bytes(&[!seed; 32]), 0, u64::MAX).unwrap();
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let address = socket.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            // Bounded even if the test forgets to stop it.
            let end = Instant::now() + Duration::from_secs(60);
            let mut buf = [0u8; 2048];
            while !flag.load(Ordering::Relaxed) && Instant::now() < end {
                let Ok((n, peer)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
                let time = BatchTime {
                    midpoint: now.as_secs().saturating_add_signed(offset),
                    radius: 5,
                };
                if let Ok(answers) = respond_batch(&[&buf[..n]], time, &key, &srv_value(&public))
                    && let Some(Ok(response)) = answers.first()
                {
                    let _ = socket.send_to(response, peer);
                }
            }
        });
        TestServer {
            address,
            public_key: hex::encode(public),
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn authtime(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_authtime"))
        .args(args)
        .output()
        .unwrap()
}

fn query_args<'a>(servers: &'a [TestServer], extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "roughtime",
        "query",
        "--timeout-ms",
        "500",
        "--retries",
        "1",
    ];
    for s in servers {
        args.extend(["--server", &s.address, "--public-key", &s.public_key]);
    }
    args.extend(extra);
    args
}

#[test]
fn two_honest_servers_agree() {
    let servers = [TestServer::start(1, 0), TestServer::start(2, 0)];
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
    for (entry, server) in doc["servers"].as_array().unwrap().iter().zip(&servers) {
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
    use base64::Engine;
    let b64 = |h: &str| base64::engine::general_purpose::STANDARD.encode(hex::decode(h).unwrap());
    let entry = |name: &str, version: &str, key: &str, address: &str| {
        serde_json::json!({"name": name, "version": version, "publicKeyType": "ed25519",
            "publicKey": key, "addresses": [{"protocol": "udp", "address": address}]})
    };
    let list = serde_json::json!({"servers": [
        entry("a", "IETF-Roughtime", &b64(&servers[0].public_key), &servers[0].address),
        entry("old", "Google-Roughtime", &b64(&servers[0].public_key), "127.0.0.1:9"),
        entry("b", "IETF-Roughtime", &b64(&servers[1].public_key), &servers[1].address),
    ]});
    let path = std::env::temp_dir().join(format!("authtime-rt-eco-{}.json", std::process::id()));
    std::fs::write(&path, list.to_string()).unwrap();
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
    let _ = std::fs::remove_file(&path);
}

#[test]
fn server_ten_minutes_ahead_is_reported_and_the_report_verifies() {
    let servers = [TestServer::start(3, 600), TestServer::start(4, 0)];
    let dir = std::env::temp_dir().join(format!("authtime-roughtime-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("report.json");
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
    let _ = std::fs::remove_dir_all(&dir);
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
