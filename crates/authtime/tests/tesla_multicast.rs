//! `authtime tesla keygen|send|recv` as a user runs them: separate processes,
//! a TESLA stream over loopback multicast (239.255.x.y joined on 127.0.0.1,
//! high random ports), and the receiver's output compared byte for byte.
//! Forged, tampered, replayed, lost and reordered packets come from the test
//! itself or from the sender's documented fault-injection flags.

mod ntp_support;
mod tesla_support;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use ntp_support::{TempDir, authtime, text_of};
use tesla_support::{Endpoints, keygen, stat, test_bytes, transfer};

const FILE_LEN: usize = 200 * 1024;

/// The sender's interval and disclosure delay in every transfer. The
/// receiver stamps a packet when it reads it, so a packet is unsafe (and the
/// run fails) when the receiver is descheduled for about (d - 1) intervals
/// minus the sync round trip: 200 ms and d = 4 leave about 600 ms, far above
/// the stalls of a busy shared VM (the sender's default, 100 ms and d = 2,
/// leaves under 100 ms).
const TIMING: [&str; 4] = ["--interval-ms", "200", "--delay-intervals", "4"];

/// [`TIMING`] followed by `extra`.
fn send_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    TIMING
        .iter()
        .copied()
        .chain(extra.iter().copied())
        .collect()
}

/// The transfers of this file (and the CPU-heavy key generation) run one at
/// a time: each sender and receiver keeps its own clock schedule, and several
/// pairs on 2 CPUs only eat the margin that [`TIMING`] gives.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn keygen_writes_key_pairs_of_every_scheme_that_sign_and_verify() {
    use std::os::unix::fs::PermissionsExt as _;
    // Signing with slh-dsa-128s and lms keeps a CPU busy for a while.
    let _serial = one_at_a_time();
    let dir = TempDir::new("tesla-keygen");
    for scheme in [
        "ed25519",
        "p256",
        "ml-dsa-44",
        "ml-dsa-65",
        "slh-dsa-128s",
        "lms",
    ] {
        let (secret, public) = keygen(&dir, scheme);
        let mode = std::fs::metadata(&secret)
            .expect("secret")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{scheme}");
        let mut key = authtime_sign::SigningKey::load_key_file(&secret).expect("load secret");
        let verifying = authtime_sign::VerifyingKey::load_key_file(&public).expect("load public");
        assert_eq!(key.scheme().name(), scheme);
        let mut sig = key.sign(b"sync response").expect("sign");
        assert!(verifying.is_valid(b"sync response", &sig), "{scheme}");
        sig[3] ^= 0x10;
        assert!(!verifying.is_valid(b"sync response", &sig), "{scheme}");
        drop(key);
        // Never overwritten.
        let again = authtime(&[
            "tesla",
            "keygen",
            "--scheme",
            scheme,
            "--out",
            secret.to_str().expect("utf-8"),
        ]);
        assert_eq!(again.status.code(), Some(2), "{}", text_of(&again));
        assert!(ntp_support::text(&again.stderr).contains("file exists"));
    }
    let json = authtime(&[
        "tesla",
        "keygen",
        "--scheme",
        "ml-dsa-44",
        "--out",
        dir.path("j.key").to_str().expect("utf-8"),
        "--json",
    ]);
    assert!(json.status.success(), "{}", text_of(&json));
    let object: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(object["signature_bytes"], 2420);
    assert_eq!(object["public_key_bytes"], 1312);
    let bad = authtime(&["tesla", "keygen", "--scheme", "rsa", "--out", "x"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_file_goes_through_intact_with_ed25519_across_chain_switches() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("tesla-ed25519");
    let (secret, public) = keygen(&dir, "ed25519");
    let ends = Endpoints::new();
    let input = test_bytes(FILE_LEN, 1);
    let started = Instant::now();
    // 200 ms intervals, chains of 8 keys, 100 packets/s: the ~200 packets
    // span 10 intervals, so at least one switch to the next chain.
    let t = transfer(
        &dir,
        &ends,
        &input,
        (&secret, &public),
        &send_args(&["--chain-length", "8", "--rate", "100"]),
        &[],
        || {},
    );
    let took = started.elapsed();
    assert_eq!(t.recv_status.code(), Some(0), "{}", t.logs);
    assert!(t.send_status.success(), "{}", t.logs);
    assert!(
        t.output == input,
        "output differs ({} bytes)\n{}",
        t.output.len(),
        t.logs
    );
    assert_eq!(stat(&t.stats, &["missing"]), 0);
    assert!(stat(&t.stats, &["chain_switches"]) >= 1, "{}", t.stats);
    assert_eq!(stat(&t.stats, &["authenticated_failed"]), 0);
    println!(
        "ed25519: {FILE_LEN} bytes in {:.2} s, stats {}",
        took.as_secs_f64(),
        t.stats
    );
}

#[test]
fn a_file_goes_through_intact_with_ml_dsa_44() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("tesla-mldsa");
    let (secret, public) = keygen(&dir, "ml-dsa-44");
    let ends = Endpoints::new();
    let input = test_bytes(FILE_LEN, 2);
    let t = transfer(&dir, &ends, &input, (&secret, &public), &TIMING, &[], || {});
    assert_eq!(t.recv_status.code(), Some(0), "{}", t.logs);
    assert!(t.send_status.success(), "{}", t.logs);
    assert!(
        t.output == input,
        "output differs ({} bytes)\n{}",
        t.output.len(),
        t.logs
    );
    // ML-DSA-44's 2420-byte signature does not fit one 1200-byte datagram.
    assert!(
        stat(&t.stats, &["bootstrap", "fragments"]) >= 3,
        "{}",
        t.stats
    );
    println!("ml-dsa-44: stats {}", t.stats);
}

#[test]
fn a_receiver_with_the_wrong_public_key_refuses() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("tesla-wrongkey");
    let (secret, _) = keygen(&dir, "ed25519");
    let other = TempDir::new("tesla-wrongkey-other");
    let (_, wrong_public) = keygen(&other, "ed25519");
    let ends = Endpoints::new();
    let input = test_bytes(20 * 1024, 3);
    let t = transfer(
        &dir,
        &ends,
        &input,
        (&secret, &wrong_public),
        &TIMING,
        &[],
        || {},
    );
    assert_eq!(t.recv_status.code(), Some(1), "{}", t.logs);
    assert!(t.output.is_empty(), "{}", t.logs);
    assert!(t.logs.contains("does not verify"), "{}", t.logs);
    // The sender still finishes on its own.
    assert!(t.send_status.success(), "{}", t.logs);

    // A key of another scheme is refused as well.
    let (_, pq_public) = keygen(&other, "ml-dsa-44");
    let ends = Endpoints::new();
    let t = transfer(
        &dir,
        &ends,
        &input,
        (&secret, &pq_public),
        &TIMING,
        &[],
        || {},
    );
    assert_eq!(t.recv_status.code(), Some(1), "{}", t.logs);
    assert!(t.output.is_empty(), "{}", t.logs);
}

#[test]
fn forged_tampered_and_replayed_packets_are_never_written_and_are_counted() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("tesla-forged");
    let (secret, public) = keygen(&dir, "ed25519");
    let ends = Endpoints::new();
    let input = test_bytes(FILE_LEN, 4);
    let member =
        authtime::cmd_tesla_net::multicast_member(ends.group, Ipv4Addr::LOCALHOST).expect("join");
    member
        .set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    let injector =
        authtime::cmd_tesla_net::multicast_sender(Ipv4Addr::LOCALHOST, 1).expect("injector");
    let group = SocketAddr::V4(ends.group);
    let (mut tampered, mut forged, mut replayed) = (0, 0, 0);
    // 100 packets/s: the data lasts 2 s, long enough to replay a packet
    // whose key is already public (after d + 1 = 5 intervals of 200 ms, with
    // 1 s left to spare).
    let t = transfer(
        &dir,
        &ends,
        &input,
        (&secret, &public),
        &send_args(&["--rate", "100"]),
        &[],
        || {
            let deadline = Instant::now() + Duration::from_secs(15);
            let mut kept: Option<(Vec<u8>, Instant)> = None;
            let mut buf = vec![0u8; 65_536];
            let mut ours = std::collections::HashSet::new();
            while Instant::now() < deadline && (tampered < 5 || replayed < 1) {
                let Ok(n) = member.recv(&mut buf) else {
                    continue;
                };
                let packet = &buf[..n];
                // Data packets (kind 1) with stream bytes, not our own copies.
                if packet[0] & 7 != 1 || n < 200 || ours.contains(packet) {
                    continue;
                }
                if tampered < 5 {
                    let mut copy = packet.to_vec();
                    copy[20] ^= 0x01;
                    ours.insert(copy.clone());
                    injector.send_to(&copy, group).expect("inject");
                    tampered += 1;
                    let junk = test_bytes(300, 100 + tampered);
                    ours.insert(junk.clone());
                    injector.send_to(&junk, group).expect("inject");
                    forged += 1;
                }
                match &kept {
                    None => kept = Some((packet.to_vec(), Instant::now())),
                    // After d = 4 intervals of 200 ms its key is public: too late.
                    Some((old, at))
                        if at.elapsed() > Duration::from_millis(1_050) && replayed == 0 =>
                    {
                        ours.insert(old.clone());
                        injector.send_to(old, group).expect("replay");
                        replayed += 1;
                    }
                    Some(_) => {}
                }
            }
        },
    );
    assert_eq!((tampered, forged), (5, 5), "{}", t.logs);
    assert_eq!(t.recv_status.code(), Some(1), "{}", t.logs);
    assert!(
        t.output == input,
        "output differs ({} bytes)\n{}",
        t.output.len(),
        t.logs
    );
    assert!(stat(&t.stats, &["dropped", "bad_mac"]) >= 5, "{}", t.stats);
    assert!(
        stat(&t.stats, &["dropped", "malformed"]) >= 5,
        "{}",
        t.stats
    );
    assert_eq!(replayed, 1, "{}", t.logs);
    let late = stat(&t.stats, &["dropped", "unsafe"]) + stat(&t.stats, &["dropped", "replay"]);
    assert!(late >= 1, "{}", t.stats);
    println!("forged: stats {}", t.stats);
}

#[test]
fn with_loss_and_reordering_exactly_the_authenticated_packets_come_out() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("tesla-loss");
    let (secret, public) = keygen(&dir, "ed25519");
    let ends = Endpoints::new();
    let input = test_bytes(FILE_LEN, 5);
    let t = transfer(
        &dir,
        &ends,
        &input,
        (&secret, &public),
        &send_args(&["--drop-every", "5", "--reorder", "--payload-size", "1000"]),
        &[],
        || {},
    );
    let expected: Vec<u8> = input
        .chunks(1000)
        .enumerate()
        .filter(|(i, _)| (i + 1) % 5 != 0)
        .flat_map(|(_, c)| c.iter().copied())
        .collect();
    let dropped = input.chunks(1000).count() / 5;
    assert_eq!(t.recv_status.code(), Some(0), "{}", t.logs);
    assert!(t.send_status.success(), "{}", t.logs);
    assert!(
        t.output == expected,
        "output differs ({} bytes, expected {})\n{}",
        t.output.len(),
        expected.len(),
        t.logs
    );
    assert_eq!(stat(&t.stats, &["missing"]), dropped as u64, "{}", t.stats);
    println!("loss+reorder: stats {}", t.stats);
}

#[test]
fn a_receiver_without_a_sender_gives_up_with_exit_3() {
    let dir = TempDir::new("tesla-nosender");
    let (_, public) = keygen(&dir, "ed25519");
    let ends = Endpoints::new();
    let started = Instant::now();
    let out = authtime(&[
        "tesla",
        "recv",
        "--group",
        &ends.group.to_string(),
        "--iface",
        "127.0.0.1",
        "--sender",
        &ends.sync,
        "--pubkey",
        public.to_str().expect("utf-8"),
        "--timeout",
        "1.5",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    assert!(out.stdout.is_empty());
    assert!(started.elapsed() < Duration::from_secs(10));
    let bad = authtime(&[
        "tesla",
        "recv",
        "--group",
        "10.0.0.1:5000",
        "--sender",
        "127.0.0.1:1",
        "--pubkey",
        "x",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", text_of(&bad));
}
