//! What the TESLA command-line tests share: key pairs from `authtime tesla
//! keygen`, a fresh multicast group and ports per test, the sender and the
//! receiver as child processes (killed on drop, via `ntp_support`), test
//! data, and the receiver's JSON statistics. Every wait is bounded.

#![allow(dead_code, reason = "each test binary uses a different part")]

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::ntp_support::{ChildGuard, TempDir, authtime, authtime_bin, text_of};

/// The longest any one process of these tests may run.
pub(crate) const PROCESS_LIMIT: Duration = Duration::from_secs(40);

/// A multicast group of 239.255.0.0/16 (administratively scoped) and two UDP
/// ports, different for every test of every run.
pub(crate) struct Endpoints {
    /// `GROUP:PORT` of the data.
    pub(crate) group: SocketAddrV4,
    /// `127.0.0.1:PORT` of the sender's sync socket.
    pub(crate) sync: String,
}

impl Endpoints {
    pub(crate) fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let salt = std::process::id().wrapping_mul(31).wrapping_add(n * 7919);
        let group = Ipv4Addr::new(239, 255, (salt >> 8) as u8, (salt as u8).max(1));
        let data_port = crate::ntp_support::free_udp_port();
        let sync_port = crate::ntp_support::free_udp_port();
        Self {
            group: SocketAddrV4::new(group, data_port),
            sync: format!("127.0.0.1:{sync_port}"),
        }
    }
}

/// `authtime tesla keygen --scheme <scheme>` into `dir`: (secret, public).
pub(crate) fn keygen(dir: &TempDir, scheme: &str) -> (PathBuf, PathBuf) {
    let secret = dir.path(&format!("{scheme}.key"));
    let out = authtime(&[
        "tesla",
        "keygen",
        "--scheme",
        scheme,
        "--out",
        secret.to_str().expect("utf-8 path"),
    ]);
    assert!(out.status.success(), "keygen {scheme}: {}", text_of(&out));
    let mut public = secret.clone().into_os_string();
    public.push(".pub");
    (secret, PathBuf::from(public))
}

/// `len` pseudo-random bytes (xorshift64*, seeded).
pub(crate) fn test_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Starts `authtime tesla <args>` with its standard error in `log`.
pub(crate) fn spawn(name: &str, args: &[String], log: &std::path::Path) -> ChildGuard {
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

/// A sender and a receiver run to completion.
pub(crate) struct Transfer {
    /// The receiver's exit status.
    pub(crate) recv_status: ExitStatus,
    /// The sender's exit status.
    pub(crate) send_status: ExitStatus,
    /// What the receiver wrote.
    pub(crate) output: Vec<u8>,
    /// The receiver's `--stats` JSON object.
    pub(crate) stats: serde_json::Value,
    /// Both logs, for messages.
    pub(crate) logs: String,
}

/// Runs `tesla send --in <input>` (plus `send_extra`) and `tesla recv`
/// (plus `recv_extra`) on `ends`, the sender first; `during` runs after both
/// started (fault injection from the test), then both are awaited.
pub(crate) fn transfer(
    dir: &TempDir,
    ends: &Endpoints,
    input: &[u8],
    (secret, public): (&std::path::Path, &std::path::Path),
    send_extra: &[&str],
    recv_extra: &[&str],
    during: impl FnOnce(),
) -> Transfer {
    let input_path = dir.path("input.bin");
    std::fs::write(&input_path, input).expect("input");
    let (out_path, stats_path) = (dir.path("output.bin"), dir.path("stats.json"));
    let (send_log, recv_log) = (dir.path("send.log"), dir.path("recv.log"));
    let path = |p: &std::path::Path| p.to_str().expect("utf-8 path").to_owned();
    let mut send_args: Vec<String> = [
        "send",
        "--to",
        &ends.group.to_string(),
        "--iface",
        "127.0.0.1",
        "--key",
        &path(secret),
        "--sync-listen",
        &ends.sync,
        "--in",
        &path(&input_path),
        "--wait-sync",
        "1",
        "--wait-timeout",
        "15",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    send_args.extend(send_extra.iter().map(|s| (*s).to_owned()));
    let mut recv_args: Vec<String> = [
        "recv",
        "--group",
        &ends.group.to_string(),
        "--iface",
        "127.0.0.1",
        "--sender",
        &ends.sync,
        "--pubkey",
        &path(public),
        "--out",
        &path(&out_path),
        "--stats",
        &path(&stats_path),
        "--timeout",
        "10",
        "--idle-exit",
        "5",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    recv_args.extend(recv_extra.iter().map(|s| (*s).to_owned()));

    let mut sender = spawn("tesla send", &send_args, &send_log);
    let mut receiver = spawn("tesla recv", &recv_args, &recv_log);
    during();
    let recv_status = receiver.wait_for_exit(PROCESS_LIMIT);
    let send_status = sender.wait_for_exit(PROCESS_LIMIT);
    let logs = format!(
        "--- send log:\n{}\n--- recv log:\n{}",
        std::fs::read_to_string(&send_log).unwrap_or_default(),
        std::fs::read_to_string(&recv_log).unwrap_or_default()
    );
    let recv_status = recv_status.unwrap_or_else(|| panic!("recv did not finish\n{logs}"));
    let send_status = send_status.unwrap_or_else(|| panic!("send did not finish\n{logs}"));
    let stats = std::fs::read_to_string(&stats_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    Transfer {
        recv_status,
        send_status,
        output: std::fs::read(&out_path).unwrap_or_default(),
        stats,
        logs,
    }
}

/// `stats[a][b]...` as a number (0 when absent).
pub(crate) fn stat(stats: &serde_json::Value, path: &[&str]) -> u64 {
    path.iter().fold(stats, |v, k| &v[*k]).as_u64().unwrap_or(0)
}
