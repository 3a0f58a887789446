//! `authtime tesla dtls-send` and `dtls-recv` as a user runs them: separate
//! processes on loopback (a high random UDP port), a ~50 KB file streamed
//! to two receivers in PSK mode and to one in certificate mode and compared
//! byte for byte, and a receiver with the wrong public key refused.

mod ntp_support;
mod tesla_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ntp_support::{ChildGuard, TempDir, authtime_bin, free_udp_port};
use tesla_support::{keygen, test_bytes};

const FILE_LEN: usize = 50 * 1024;
/// The longest any process of these tests may run.
const LIMIT: Duration = Duration::from_secs(15);
const PSK: &[&str] = &[
    "--psk-identity",
    "authtime-cli-test",
    "--psk-hex",
    "00112233445566778899aabbccddeeff",
];

/// The tests of this file run one at a time: each sender and its receivers
/// keep their own clock schedule (100 ms intervals, d = 4), and several
/// streams on 2 CPUs only eat its margin.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn path(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_owned()
}

/// Starts `authtime tesla <args>` with standard error in `log`.
fn spawn(name: &str, args: &[String], log: &Path) -> ChildGuard {
    let child = Command::new(authtime_bin())
        .arg("tesla")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("start authtime tesla");
    ChildGuard {
        child,
        name: name.into(),
    }
}

/// Waits (bounded) until the sender's log says it listens.
fn wait_listening(log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(log).is_ok_and(|t| t.contains("listening on")) {
        assert!(
            Instant::now() < deadline,
            "sender not listening\n{}",
            logs(&[log])
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

fn logs(paths: &[&Path]) -> String {
    paths
        .iter()
        .map(|p| {
            format!(
                "--- {}:\n{}\n",
                p.display(),
                std::fs::read_to_string(p).unwrap_or_default()
            )
        })
        .collect()
}

/// The sender's arguments for `input` on `listen`.
fn send_args(listen: &str, key: &Path, input: &Path, clients: u32, mode: &[&str]) -> Vec<String> {
    let mut args = strings(&[
        "dtls-send",
        "--listen",
        listen,
        "--key",
        &path(key),
        "--in",
        &path(input),
        "--clients",
        &clients.to_string(),
        "--wait-timeout",
        "10",
        "--interval-ms",
        "100",
        "--delay-intervals",
        "4",
    ]);
    args.extend(strings(mode));
    args
}

fn recv_args(server: &str, public: &Path, out: &Path, mode: &[&str]) -> Vec<String> {
    let mut args = strings(&[
        "dtls-recv",
        "--server",
        server,
        "--pubkey",
        &path(public),
        "--out",
        &path(out),
        "--timeout",
        "8",
        "--json",
    ]);
    args.extend(strings(mode));
    args
}

#[test]
fn psk_file_reaches_two_receivers_intact() {
    let _serial = one_at_a_time();
    let started = Instant::now();
    let dir = TempDir::new("dtls-psk");
    let (secret, public) = keygen(&dir, "ed25519");
    let input = test_bytes(FILE_LEN, 7);
    let input_path = dir.path("input.bin");
    std::fs::write(&input_path, &input).expect("input");
    let listen = format!("127.0.0.1:{}", free_udp_port());
    let send_log = dir.path("send.log");
    let mut sender = spawn(
        "dtls-send",
        &send_args(&listen, &secret, &input_path, 2, PSK),
        &send_log,
    );
    wait_listening(&send_log);
    let mut receivers = Vec::new();
    let mut log_paths = vec![send_log.clone()];
    for k in 0..2 {
        let out = dir.path(&format!("out{k}.bin"));
        let log = dir.path(&format!("recv{k}.log"));
        let child = spawn("dtls-recv", &recv_args(&listen, &public, &out, PSK), &log);
        log_paths.push(log.clone());
        receivers.push((child, out, log));
    }
    let all_logs: Vec<&Path> = log_paths.iter().map(PathBuf::as_path).collect();
    for (child, out, _) in &mut receivers {
        let status = child.wait_for_exit(LIMIT);
        let text = logs(&all_logs);
        assert_eq!(status.and_then(|s| s.code()), Some(0), "{text}");
        let got = std::fs::read(&*out).expect("output");
        assert_eq!(got.len(), input.len(), "{text}");
        assert!(got == input, "output differs\n{text}");
    }
    let status = sender.wait_for_exit(LIMIT);
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        logs(&all_logs)
    );
    let recv_log = std::fs::read_to_string(&receivers[0].2).expect("log");
    let last = recv_log.lines().last().expect("a JSON line");
    let stats: serde_json::Value = serde_json::from_str(last).expect("json");
    assert_eq!(stats["end_of_stream"], true);
    assert_eq!(stats["authenticated_failed"], 0);
    assert_eq!(stats["bootstrap"]["mode"], "psk");
    eprintln!("psk round trip: {:.2} s", started.elapsed().as_secs_f64());
}

#[test]
fn certificate_mode_file_arrives_intact() {
    let _serial = one_at_a_time();
    let started = Instant::now();
    let dir = TempDir::new("dtls-cert");
    let (secret, public) = keygen(&dir, "ed25519");
    let input = test_bytes(FILE_LEN, 11);
    let input_path = dir.path("input.bin");
    std::fs::write(&input_path, &input).expect("input");
    let listen = format!("127.0.0.1:{}", free_udp_port());
    let cert = dir.path("sender.pem");
    let (send_log, recv_log, out) = (
        dir.path("send.log"),
        dir.path("recv.log"),
        dir.path("out.bin"),
    );
    let mut sender = spawn(
        "dtls-send",
        &send_args(
            &listen,
            &secret,
            &input_path,
            1,
            &["--cert-out", &path(&cert)],
        ),
        &send_log,
    );
    // The certificate is written once the sender listens.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !std::fs::read(&cert).is_ok_and(|c| c.ends_with(b"-----END CERTIFICATE-----\n")) {
        assert!(
            Instant::now() < deadline,
            "no certificate\n{}",
            logs(&[&send_log])
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut receiver = spawn(
        "dtls-recv",
        &recv_args(&listen, &public, &out, &["--cert", &path(&cert)]),
        &recv_log,
    );
    let status = receiver.wait_for_exit(LIMIT);
    let text = logs(&[&send_log, &recv_log]);
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{text}");
    assert!(std::fs::read(&out).expect("output") == input, "{text}");
    assert_eq!(
        sender.wait_for_exit(LIMIT).and_then(|s| s.code()),
        Some(0),
        "{text}"
    );
    assert!(text.contains("certificate mode"), "{text}");
    eprintln!(
        "certificate round trip: {:.2} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_receiver_with_the_wrong_public_key_refuses_and_writes_nothing() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("dtls-wrong-key");
    let (secret, _) = keygen(&dir, "ed25519");
    let other_dir = TempDir::new("dtls-wrong-key-other");
    let (_, wrong_public) = keygen(&other_dir, "ed25519");
    let input_path = dir.path("input.bin");
    std::fs::write(&input_path, test_bytes(4096, 3)).expect("input");
    let listen = format!("127.0.0.1:{}", free_udp_port());
    let (send_log, recv_log, out) = (
        dir.path("send.log"),
        dir.path("recv.log"),
        dir.path("out.bin"),
    );
    let _sender = spawn(
        "dtls-send",
        &send_args(&listen, &secret, &input_path, 1, PSK),
        &send_log,
    );
    wait_listening(&send_log);
    let mut receiver = spawn(
        "dtls-recv",
        &recv_args(&listen, &wrong_public, &out, PSK),
        &recv_log,
    );
    let status = receiver.wait_for_exit(LIMIT);
    let text = logs(&[&send_log, &recv_log]);
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{text}");
    assert!(text.contains("does not verify with --pubkey"), "{text}");
    assert!(std::fs::read(&out).unwrap_or_default().is_empty(), "{text}");
}
