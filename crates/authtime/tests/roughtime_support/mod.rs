//! Tiny Roughtime servers for tests (threads on loopback, free ports, built
//! on `authtime_roughtime::respond_batch`; roughtime_query.rs and the
//! wrong-clock NTS tests use them), with a
//! clock offset of their own so that a test can make one lie, and the
//! ecosystem JSON list that names them.

#![allow(dead_code, reason = "each test binary uses a different part")]

use std::net::UdpSocket;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use authtime_roughtime::request::srv_value;
use authtime_roughtime::{BatchTime, OnlineKey, SigningKey, respond_batch};
use base64::Engine as _;

/// A server answering single requests with its clock `offset` seconds off.
pub(crate) struct TestServer {
    pub(crate) address: String,
    pub(crate) public_key: [u8; 32],
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Keys from `seed`; midpoints `offset` seconds from the system clock,
    /// radius 5 s. It stops when dropped, or after 120 s.
    pub(crate) fn start(seed: u8, offset: i64) -> Self {
        let long = SigningKey::from_bytes(&[seed; 32]);
        let public_key = long.verifying_key().to_bytes();
        let key = OnlineKey::delegate(&long, SigningKey::from_bytes(&[!seed; 32]), 0, u64::MAX)
            .expect("delegation");
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let address = socket.local_addr().expect("address").to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(120);
            let mut buf = [0u8; 2048];
            while !flag.load(Ordering::Relaxed) && Instant::now() < end {
                let Ok((n, peer)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                let time = BatchTime {
                    midpoint: now.as_secs().saturating_add_signed(offset),
                    radius: 5,
                };
                if let Ok(answers) =
                    respond_batch(&[&buf[..n]], time, &key, &srv_value(&public_key))
                    && let Some(Ok(response)) = answers.first()
                {
                    let _ = socket.send_to(response, peer);
                }
            }
        });
        TestServer {
            address,
            public_key,
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

/// An ecosystem JSON entry for `name` at `address` with `public_key`.
pub(crate) fn entry(name: &str, address: &str, public_key: &[u8; 32]) -> serde_json::Value {
    serde_json::json!({
        "name": name,
        "version": "IETF-Roughtime",
        "publicKeyType": "ed25519",
        "publicKey": base64::engine::general_purpose::STANDARD.encode(public_key),
        "addresses": [{"protocol": "udp", "address": address}],
    })
}

/// Writes an ecosystem list of `entries` to `path`.
pub(crate) fn write_list(path: &Path, entries: Vec<serde_json::Value>) {
    let list = serde_json::json!({ "servers": entries });
    std::fs::write(path, list.to_string()).expect("write the server list");
}

/// Writes the list of `servers`, named rt0, rt1, ... in order.
pub(crate) fn write_servers(path: &Path, servers: &[&TestServer]) {
    let entries = servers
        .iter()
        .enumerate()
        .map(|(i, s)| entry(&format!("rt{i}"), &s.address, &s.public_key))
        .collect();
    write_list(path, entries);
}

/// A fresh scratch directory (`authtime-NAME-PID` in the system's temporary
/// directory), removed when dropped: when the test ends, and when it fails
/// (the panic unwinds through it).
pub(crate) struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    pub(crate) fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("authtime-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Self(dir)
    }

    /// A path inside.
    pub(crate) fn path(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
