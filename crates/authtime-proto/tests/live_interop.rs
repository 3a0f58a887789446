//! Live interop on loopback: real NTP clients query `Server::handle` behind a
//! plain UDP socket, with key files written by `authtime_keys::write_key_file`.
//!
//! - chronyd (`-Q`: measure, never touch the clock) reads our chrony-format
//!   key file and must accept our replies under MD5, SHA1, AES128, AES256 and
//!   SHA256 keys, and refuse them under a wrong key or with a corrupted MAC.
//! - NTPsec's ntpdig reads our ntpd-format key file and must accept our
//!   replies under MD5, SHA1 and AES128CMAC keys (it only queries port 123, so
//!   this test is skipped when that port cannot be bound).
//!
//! Ignored by default because they start real peers (Debian packages
//! `chrony`, `ntpsec-ntpdig`) and take about half a minute:
//! `cargo test -p authtime-proto --test live_interop -- --ignored`. Every
//! process started is killed through its own handle when its time is up.

use std::io::Read as _;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use authtime_keys::{
    KeyFileFormat, KeyMaterial, KeySet, KeyType, generate_keys, random_bytes_needed, write_key_file,
};
use authtime_proto::{Server, ServerAction, ServerCounters};
use authtime_wire::NtpTimestamp;

fn find(names: &[&str]) -> Option<PathBuf> {
    names.iter().map(PathBuf::from).find(|p| p.exists())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

fn now() -> NtpTimestamp {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970");
    NtpTimestamp::from_unix(since.as_secs() as i64, since.subsec_nanos())
}

/// Key `i + 1` of each type, from fixed "random" bytes (test keys).
fn test_keys(types: &[KeyType]) -> Vec<KeyMaterial> {
    types
        .iter()
        .zip(1u32..)
        .flat_map(|(&t, id)| {
            let random: Vec<u8> = (0..random_bytes_needed(t, 1))
                .map(|i| (i as u8).wrapping_mul(37) ^ id as u8)
                .collect();
            generate_keys(t, id, 1, &random).expect("keys")
        })
        .collect()
}

/// A scratch directory removed when dropped: when the test ends, and when it
/// fails (the panic unwinds through it).
struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("authtime-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    TempDir(dir)
}

/// How a run ended.
struct Run {
    success: bool,
    output: String,
    stats: ServerCounters,
}

/// Answers on `socket` until `command` exits or 12 s pass, then reaps it.
/// `corrupt` flips a bit of every reply's MAC.
fn serve(socket: &UdpSocket, mut command: Command, keys: &KeySet, corrupt: bool) -> Run {
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the peer");
    let server = Server::default();
    let mut stats = ServerCounters::default();
    let deadline = Instant::now() + Duration::from_secs(12);
    let (mut buf, mut out) = ([0u8; 1500], [0u8; 1500]);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            // Our own child, through its handle.
            let _ = child.kill();
            break;
        }
        let Ok((n, peer)) = socket.recv_from(&mut buf) else {
            continue;
        };
        let recv = now();
        if let ServerAction::Send(len) =
            server.handle(&buf[..n], recv, now(), keys, &mut out, &mut stats)
        {
            if corrupt {
                out[len - 1] ^= 1;
            }
            socket.send_to(&out[..len], peer).expect("send");
        }
    }
    let status = child.wait().expect("reap");
    let mut output = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut output);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut output);
    }
    Run {
        success: status.success(),
        output,
        stats,
    }
}

fn run_chronyd(dir: &Path, key_file: &Path, key_id: u32, keys: &KeySet, corrupt: bool) -> Run {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let port = socket.local_addr().expect("addr").port();
    let conf = dir.join(format!("client-{key_id}-{corrupt}.conf"));
    std::fs::write(
        &conf,
        format!(
            "server 127.0.0.1 port {port} key {key_id} iburst maxsamples 2\n\
             keyfile {}\npidfile {}\ncmdport 0\n",
            key_file.display(),
            dir.join("chronyd.pid").display()
        ),
    )
    .expect("conf");
    let chronyd = find(&["/usr/sbin/chronyd", "/usr/bin/chronyd"]).expect("checked");
    let mut command = Command::new(chronyd);
    command.args(["-Q", "-t", "6", "-f"]).arg(&conf);
    if is_root() {
        command.args(["-u", "root"]);
    }
    serve(&socket, command, keys, corrupt)
}

#[test]
#[ignore = "starts chronyd; run with --ignored"]
fn chronyd_reads_our_key_file_and_accepts_our_replies() {
    if find(&["/usr/sbin/chronyd", "/usr/bin/chronyd"]).is_none() {
        eprintln!("chronyd not installed; skipping");
        return;
    }
    let dir = temp_dir("chronyd-live");
    let material = test_keys(&KeyType::ALL);
    let key_file = dir.join("chrony.keys");
    let text = write_key_file(KeyFileFormat::Chrony, &material).expect("write");
    std::fs::write(&key_file, text.as_bytes()).expect("key file");
    let keys = KeySet::new(&material).expect("key set");
    for key in &material {
        let run = run_chronyd(&dir, &key_file, key.id(), &keys, false);
        let accepted = run.success && run.output.contains("System clock wrong by");
        assert!(
            accepted,
            "{}: chronyd refused: {}",
            key.key_type(),
            run.output
        );
        assert!(run.stats.answered_authenticated > 0);
    }
    // Our server with other bytes for key 4 (AES128): chronyd's MACs fail here.
    let wrong = KeySet::new(&[KeyMaterial::new(4, KeyType::Aes128Cmac, &[0; 16])]).expect("set");
    let run = run_chronyd(&dir, &key_file, 4, &wrong, false);
    assert!(!run.success, "wrong key accepted: {}", run.output);
    assert!(run.stats.drops("bad_mac") > 0);
    // Replies whose MAC was corrupted on the way: chronyd must refuse them.
    let run = run_chronyd(&dir, &key_file, 2, &keys, true);
    assert!(!run.success, "corrupted MAC accepted: {}", run.output);
    assert!(run.stats.answered_authenticated > 0);
}

#[test]
#[ignore = "starts ntpdig and binds port 123; run with --ignored"]
fn ntpdig_reads_our_ntpd_key_file_and_accepts_our_replies() {
    let Some(ntpdig) = find(&["/usr/bin/ntpdig", "/usr/sbin/ntpdig"]) else {
        eprintln!("ntpdig not installed; skipping");
        return;
    };
    let Ok(socket) = UdpSocket::bind("127.0.0.1:123") else {
        eprintln!("cannot bind 127.0.0.1:123; skipping");
        return;
    };
    let dir = temp_dir("ntpdig-live");
    let material = test_keys(&[KeyType::Md5, KeyType::Sha1, KeyType::Aes128Cmac]);
    let key_file = dir.join("ntp.keys");
    let text = write_key_file(KeyFileFormat::Ntpd, &material).expect("write");
    std::fs::write(&key_file, text.as_bytes()).expect("key file");
    let keys = KeySet::new(&material).expect("key set");
    for (key, corrupt) in material
        .iter()
        .map(|k| (k, false))
        .chain([(&material[2], true)])
    {
        let mut command = Command::new(&ntpdig);
        command
            .args(["-d", "-t", "2", "-a", &key.id().to_string(), "-k"])
            .arg(&key_file)
            .arg("127.0.0.1");
        let run = serve(&socket, command, &keys, corrupt);
        let verified = run.output.contains("succeeded") && !run.output.contains("failed");
        assert_eq!(
            run.success && verified,
            !corrupt,
            "{} corrupt={corrupt}: {}",
            key.key_type(),
            run.output
        );
        assert_eq!(run.stats.answered_authenticated, 1);
    }
}
