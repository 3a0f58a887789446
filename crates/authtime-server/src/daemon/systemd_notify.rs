//! systemd's readiness protocol (`sd_notify(3)`): one datagram to the Unix
//! socket named by `NOTIFY_SOCKET`, a path or `@` and an abstract name. It is
//! small enough to write here rather than link libsystemd.

use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Sends `state` (`READY=1`, `STATUS=...`, one per line) when the process
/// runs under systemd with `Type=notify`; `Ok(false)` when it does not.
///
/// # Errors
/// The socket named by `NOTIFY_SOCKET` cannot be reached.
pub fn notify(state: &str) -> std::io::Result<bool> {
    let Some(name) = std::env::var_os("NOTIFY_SOCKET") else {
        return Ok(false);
    };
    let bytes = name.as_bytes();
    let addr = match bytes.strip_prefix(b"@") {
        Some(abstract_name) => SocketAddr::from_abstract_name(abstract_name)?,
        None => SocketAddr::from_pathname(std::path::Path::new(&name))?,
    };
    let socket = UnixDatagram::unbound()?;
    socket.send_to_addr(state.as_bytes(), &addr)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_reaches_a_path_socket() {
        let dir = std::env::temp_dir().join(format!("authtime-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let listener = UnixDatagram::bind(&path).expect("bind");
        let addr = SocketAddr::from_pathname(&path).expect("addr");
        let socket = UnixDatagram::unbound().expect("socket");
        socket.send_to_addr(b"READY=1", &addr).expect("send");
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).expect("recv");
        assert_eq!(&buf[..n], b"READY=1");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
