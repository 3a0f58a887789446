//! The shared key stores the NTS fleet tests start: redis-server and
//! memcached on loopback, without persistence, killed on drop.

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::ChildGuard;

/// A TCP port on loopback that was free a moment ago.
pub(crate) fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// Waits (at most 10 s) until something accepts on loopback `port`.
pub(crate) fn wait_listening(port: u16, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{name} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// redis-server on loopback without persistence (killed on drop).
pub(crate) fn redis(port: u16) -> ChildGuard {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start redis-server ({e}); ./test.sh installs it"));
    wait_listening(port, "redis-server");
    ChildGuard {
        child,
        name: "redis-server".into(),
    }
}

/// memcached on loopback (killed on drop).
pub(crate) fn memcached(port: u16) -> ChildGuard {
    let mut command = Command::new("memcached");
    command.args([
        "-l",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-U",
        "0",
        "-m",
        "16",
    ]);
    if super::is_root() {
        command.args(["-u", "root"]);
    }
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start memcached ({e}); ./test.sh installs it"));
    wait_listening(port, "memcached");
    ChildGuard {
        child,
        name: "memcached".into(),
    }
}

/// `stored` opens under `kek` for `key_name`, and no 16-byte run of the
/// plaintext ring occurs in it.
pub(crate) fn assert_no_key_material(
    stored: &[u8],
    kek: &authtime_keys::store::KeyEncryptionKey,
    key_name: &str,
) {
    let (_, plain) = authtime_keys::store::open_blob(std::slice::from_ref(kek), key_name, stored)
        .expect("opens");
    assert!(plain.len() > 32, "a ring with keys");
    for window in plain[4..].windows(16) {
        assert!(
            !stored.windows(16).any(|w| w == window),
            "plaintext of the ring found in the store"
        );
    }
}
