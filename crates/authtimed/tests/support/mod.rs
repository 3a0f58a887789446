//! What the `authtimed` tests share: the binary, scratch directories, a
//! guard that kills a daemon left running, and who the tests run as.

#![allow(dead_code, reason = "each test file uses its own part of the support")]

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

/// The `authtimed` binary of this build.
pub(crate) fn authtimed() -> Command {
    Command::new(env!("CARGO_BIN_EXE_authtimed"))
}

/// Whether the tests run as root (CI does).
pub(crate) fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    })
}

/// Started as root, the daemon switches user: to `nobody`, which every
/// Debian system has, rather than `authtime`, which the package creates.
pub(crate) fn identity_args() -> &'static [&'static str] {
    if running_as_root() {
        &["--user", "nobody"]
    } else {
        &[]
    }
}

/// A fresh scratch directory for one test, removed when dropped: when the
/// test ends, and when it fails (the panic unwinds through it).
pub(crate) struct TempDir(PathBuf);

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

/// A fresh scratch directory for one test (`authtimed-NAME-PID` in the
/// system's temporary directory).
pub(crate) fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("authtimed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    TempDir(dir)
}

/// Kills the daemon if a test fails before it stops.
pub(crate) struct Guard(pub(crate) Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

/// One NTP client exchange with `addr`: checks the reply is a 48-byte
/// server reply (mode 4) to this request (origin = our transmit), and
/// returns it.
pub(crate) fn ntp_exchange(addr: SocketAddr) -> [u8; 48] {
    let client = UdpSocket::bind("127.0.0.1:0").expect("bind");
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut request = [0u8; 48];
    request[0] = 0x23;
    request[40..48].copy_from_slice(&7u64.to_be_bytes());
    client.send_to(&request, addr).expect("send");
    let mut reply = [0u8; 128];
    // A signal (SIGCHLD of another test's child) may interrupt the wait.
    let n = loop {
        match client.recv_from(&mut reply) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => break other.expect("a reply").0,
        }
    };
    assert_eq!(n, 48);
    assert_eq!(reply[0] & 0x07, 4, "mode 4");
    assert_eq!(reply[24..32], 7u64.to_be_bytes(), "origin = our transmit");
    let mut out = [0u8; 48];
    out.copy_from_slice(&reply[..48]);
    out
}
