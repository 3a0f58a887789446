//! Interop of the sans-IO Roughtime core with the real roughenough servers
//! and clients (issue 21), on 127.0.0.1 and ports picked here:
//! - authtime's client core against roughenough 2.2's server (version 1) and
//!   1.3.0-draft14's (0x8000000c, `batch_size: 1`);
//! - roughenough's clients against authtime's server core, answering single
//!   requests and batches under one Merkle tree, from a small UDP loop in
//!   this file (crates/authtime/tests/roughtime_serve.rs runs the same
//!   clients against the daemon).
//!
//! docs/roughtime-peers.md says how the peers are run and what this shows.

#![allow(clippy::unwrap_used)]

#[path = "../../authtime/tests/ntp_support/interop.rs"]
#[allow(dead_code, reason = "shared with the NTP interop tests")]
mod interop;
mod roughenough_support;

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use authtime_roughtime::message::{Message, unframe};
use authtime_roughtime::request::srv_value;
use authtime_roughtime::tags::Tag;
use authtime_roughtime::{
    BatchTime, OnlineKey, SigningKey, Verified, Version, build_request, respond_batch,
    verify_response,
};
use roughenough_support::{
    Server, assert_22_verified, install, now_secs, parse_13_time, random, spawn_client,
};

/// How far a midpoint may be from the host clock: both ends read the same
/// clock, so this only covers the second boundaries and a slow machine.
const CLOCK_SLACK: u64 = 3;

/// How long a server has to answer one request before it is sent again.
const REPLY_WAIT: Duration = Duration::from_millis(500);

/// How long a query retries while a freshly started server binds its socket.
const QUERY_LIMIT: Duration = Duration::from_secs(15);

/// How long a roughenough client run may take (its own timeouts are shorter).
const CLIENT_LIMIT: Duration = Duration::from_secs(20);

fn assert_near_now(midpoint: u64, what: &str) {
    let now = now_secs();
    assert!(
        midpoint.abs_diff(now) <= CLOCK_SLACK,
        "{what}: midpoint {midpoint} is {}s from the host clock {now}",
        midpoint.abs_diff(now)
    );
}

/// One request from authtime's client core to `port`, retried until an
/// answer comes or [`QUERY_LIMIT`] passes; the answer is verified.
fn query(port: u16, version: Version, public_key: &[u8; 32]) -> Verified {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(REPLY_WAIT)).unwrap();
    let request = build_request(&[version], &random::<32>(), Some(&srv_value(public_key))).unwrap();
    let deadline = Instant::now() + QUERY_LIMIT;
    let mut buf = [0u8; 2048];
    loop {
        socket.send_to(&request, ("127.0.0.1", port)).unwrap();
        if let Ok((n, _)) = socket.recv_from(&mut buf) {
            return verify_response(&request, &buf[..n], public_key)
                .unwrap_or_else(|e| panic!("response to {version:?} did not verify: {e:?}"));
        }
        assert!(
            Instant::now() < deadline,
            "no answer from 127.0.0.1:{port} within {QUERY_LIMIT:?}"
        );
    }
}

#[test]
fn authtime_client_verifies_roughenough_22_version_1() {
    let seed = random::<32>();
    let server = Server::start_22(&seed);
    let expected = SigningKey::from_bytes(&seed).verifying_key().to_bytes();
    assert_eq!(
        server.public_key, expected,
        "2.2 logged another key than its seed's"
    );
    for _ in 0..3 {
        let v = query(server.port, Version::Rfc1, &server.public_key);
        assert_eq!(v.version, Version::Rfc1);
        assert!(v.radius > 0, "zero radius: {v:?}");
        assert_near_now(v.midpoint, "roughenough 2.2");
    }
    interop::proven(interop::Row {
        peer: &format!("roughenough {}", install().version22),
        direction: interop::Direction::AuthtimeToPeer,
        feature: "Roughtime",
        result: "version 1 (RFC 10049) responses verified",
        test: "roughenough_interop::authtime_client_verifies_roughenough_22_version_1",
    });
}

#[test]
fn authtime_client_verifies_roughenough_13_draft_single_requests() {
    let seed = random::<32>();
    let server = Server::start_13(&seed, 1);
    let expected = SigningKey::from_bytes(&seed).verifying_key().to_bytes();
    assert_eq!(
        server.public_key, expected,
        "1.3 logged another key than its seed's"
    );
    for _ in 0..3 {
        let v = query(server.port, Version::Draft12, &server.public_key);
        assert_eq!(v.version, Version::Draft12);
        assert_eq!(v.radius, 5, "1.3 serves a fixed 5 s radius: {v:?}");
        assert_near_now(v.midpoint, "roughenough 1.3.0-draft14");
    }
    interop::proven(interop::Row {
        peer: &format!("roughenough {}", install().version13),
        direction: interop::Direction::AuthtimeToPeer,
        feature: "Roughtime",
        result: "0x8000000c (drafts 12 to 19) single responses verified",
        test: "roughenough_interop::authtime_client_verifies_roughenough_13_draft_single_requests",
    });
}

/// What became of a burst of requests sent at once.
#[derive(Debug, Default)]
struct Burst {
    verified: usize,
    unanswered: usize,
    /// Responses by the byte length of their PATH (0: a batch of one).
    path_bytes: BTreeMap<usize, usize>,
    /// Failures by error message.
    failed: BTreeMap<String, usize>,
}

/// Sends `count` requests for `version` to `server` from as many sockets, all
/// before reading any answer (the way to make a server batch them), and
/// verifies each answer.
fn burst(server: &Server, version: Version, count: usize) -> Burst {
    // Once answered, the server is bound: the burst is not lost to start-up.
    query(server.port, version, &server.public_key);
    let srv = srv_value(&server.public_key);
    let sent: Vec<(UdpSocket, Vec<u8>)> = (0..count)
        .map(|_| {
            let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            socket
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
            let request = build_request(&[version], &random::<32>(), Some(&srv)).unwrap();
            (socket, request)
        })
        .collect();
    for (socket, request) in &sent {
        socket.send_to(request, ("127.0.0.1", server.port)).unwrap();
    }
    let mut result = Burst::default();
    let mut buf = [0u8; 2048];
    for (socket, request) in &sent {
        match socket.recv_from(&mut buf) {
            Ok((n, _)) => {
                let response = &buf[..n];
                let path = Message::parse(unframe(response).unwrap())
                    .unwrap()
                    .get(Tag::PATH)
                    .map_or(0, <[u8]>::len);
                *result.path_bytes.entry(path).or_default() += 1;
                match verify_response(request, response, &server.public_key) {
                    Ok(_) => result.verified += 1,
                    Err(e) => *result.failed.entry(e.to_string()).or_default() += 1,
                }
            }
            Err(_) => result.unanswered += 1,
        }
    }
    result
}

const BURST: usize = 16;

/// With `batch_size: 1`, requests arriving at once are still answered one
/// by one, and every answer verifies.
#[test]
fn roughenough_13_batch_size_1_burst_verifies() {
    let server = Server::start_13(&random::<32>(), 1);
    let result = burst(&server, Version::Draft12, BURST);
    assert_eq!(result.verified, BURST, "1.3 with batch_size 1: {result:?}");
}

/// Requests arriving at once at 2.2 are answered in batches (PATH of 32-byte
/// siblings when they are), and every answer verifies: authtime's Merkle
/// path check for version 1 against an independent server.
#[test]
fn authtime_client_verifies_roughenough_22_bursts() {
    let server = Server::start_22(&random::<32>());
    let result = burst(&server, Version::Rfc1, BURST);
    eprintln!("roughenough 2.2, version 1, {BURST} requests at once: {result:?}");
    assert_eq!(result.verified, BURST, "2.2 burst: {result:?}");
}

/// Records, without asserting, how many responses of 1.3 with its default
/// batch size fail the draft's Merkle rules when requests arrive at once
/// (docs/roughtime-peers.md, "the 1.3.0-draft14 Merkle caveat").
#[test]
fn roughenough_13_batched_burst_is_recorded() {
    let server = Server::start_13(&random::<32>(), 64);
    let result = burst(&server, Version::Draft12, BURST);
    eprintln!("roughenough 1.3.0-draft14, batch_size 64, {BURST} requests at once: {result:?}");
}

/// authtime's server core behind a UDP loop on a thread: each batch is the
/// first datagram plus whatever else arrives within `window` (at most
/// `max_batch`), answered by one `respond_batch` call.
struct AuthtimeServer {
    port: u16,
    public_key: [u8; 32],
    /// The size of every batch answered, in order.
    batches: Arc<Mutex<Vec<usize>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The radius the test server answers with, in seconds.
const TEST_RADIUS: u32 = 1;

impl AuthtimeServer {
    fn start(window: Duration, max_batch: usize) -> Self {
        let long_term = SigningKey::from_bytes(&random::<32>());
        let public_key = long_term.verifying_key().to_bytes();
        let now = now_secs();
        let online = OnlineKey::delegate(
            &long_term,
            SigningKey::from_bytes(&random::<32>()),
            now - 3600,
            now + 3600,
        )
        .unwrap();
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let batches = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (batches, stop) = (batches.clone(), stop.clone());
            let srv = srv_value(&public_key);
            std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while !stop.load(Ordering::Relaxed) {
                    let mut received: Vec<(Vec<u8>, SocketAddr)> = Vec::new();
                    let Ok((n, from)) = socket.recv_from(&mut buf) else {
                        continue;
                    };
                    received.push((buf[..n].to_vec(), from));
                    let deadline = Instant::now() + window;
                    while received.len() < max_batch && Instant::now() < deadline {
                        if let Ok((n, from)) = socket.recv_from(&mut buf) {
                            received.push((buf[..n].to_vec(), from));
                        }
                    }
                    let packets: Vec<&[u8]> = received.iter().map(|(p, _)| p.as_slice()).collect();
                    let time = BatchTime {
                        midpoint: now_secs(),
                        radius: TEST_RADIUS,
                    };
                    let answers = respond_batch(&packets, time, &online, &srv).unwrap();
                    batches.lock().unwrap().push(received.len());
                    for ((_, from), answer) in received.iter().zip(answers) {
                        if let Ok(response) = answer {
                            let _ = socket.send_to(&response, from);
                        }
                    }
                }
            })
        };
        Self {
            port,
            public_key,
            batches,
            stop,
            thread: Some(thread),
        }
    }

    fn batches(&self) -> Vec<usize> {
        self.batches.lock().unwrap().clone()
    }
}

impl Drop for AuthtimeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// roughenough 2.2's client offering `protocol` (`1` or `19`) against `port`.
fn client_22(port: u16, key: &[u8; 32], protocol: &str) -> roughenough_support::PendingClient {
    let program = install().bin22.join("roughenough_client");
    let (key, port) = (hex::encode(key), port.to_string());
    spawn_client(
        &program,
        &[
            "-P",
            protocol,
            "-t",
            "5",
            "-f",
            "%s",
            "-k",
            &key,
            "127.0.0.1",
            &port,
        ],
    )
}

#[test]
fn roughenough_clients_verify_authtime_single_responses() {
    let server = AuthtimeServer::start(Duration::ZERO, 1);
    for protocol in ["1", "19"] {
        let run = client_22(server.port, &server.public_key, protocol).finish(CLIENT_LIMIT);
        assert_22_verified(
            &run,
            TEST_RADIUS,
            &format!("roughenough 2.2 client -P {protocol}"),
        );
    }
    let program = install().bin13.join("roughenough-client");
    let (key, port) = (hex::encode(server.public_key), server.port.to_string());
    let run = spawn_client(
        &program,
        &["-p", "14", "-j", "-t", "5", "-k", &key, "127.0.0.1", &port],
    )
    .finish(CLIENT_LIMIT);
    // It exits 0 on a timeout too: the line on standard output is the proof.
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("\"midpoint\""))
        .unwrap_or_else(|| {
            panic!(
                "roughenough 1.3 client printed no response (status {:?}): {}",
                run.status, run.stderr
            )
        });
    assert!(line.contains("\"verified\": Yes"), "1.3 client: {line}");
    assert!(
        line.contains(&format!("\"radius\": {TEST_RADIUS},")),
        "1.3 client: {line}"
    );
    let midpoint = line
        .split("\"midpoint\": \"")
        .nth(1)
        .and_then(|rest| parse_13_time(rest.split(" +").next()?))
        .unwrap_or_else(|| panic!("1.3 client midpoint: {line}"));
    assert_near_now(midpoint, "roughenough 1.3 client");
    assert_eq!(server.batches(), vec![1, 1, 1]);
}

/// Concurrent 2.2 client runs answered under one Merkle tree: their
/// verification checks authtime's PATH and INDX for each version. Batching
/// depends on the processes' timing, so a round that formed no batch of two
/// or more is repeated (at most a few times).
#[test]
fn roughenough_22_client_verifies_authtime_batches() {
    const CLIENTS: usize = 4;
    for protocol in ["1", "19"] {
        let mut formed = false;
        for _round in 0..3 {
            let server = AuthtimeServer::start(Duration::from_millis(1500), CLIENTS);
            let pending: Vec<_> = (0..CLIENTS)
                .map(|_| client_22(server.port, &server.public_key, protocol))
                .collect();
            for (i, client) in pending.into_iter().enumerate() {
                let run = client.finish(CLIENT_LIMIT);
                assert_22_verified(
                    &run,
                    TEST_RADIUS,
                    &format!("2.2 client -P {protocol} #{i} of a batch"),
                );
            }
            let batches = server.batches();
            eprintln!("-P {protocol}: batch sizes {batches:?}");
            if batches.iter().any(|&b| b >= 2) {
                formed = true;
                break;
            }
        }
        assert!(
            formed,
            "-P {protocol}: no batch of two or more formed in 3 rounds"
        );
    }
}
