//! A small blocking client for chronyd's command protocol: asks the host's
//! chronyd for its tracking report, as `chronyc tracking` does.
//!
//! Two ways in, as chronyc has:
//!
//! - [`ChronyEndpoint::Unix`]: chronyd's Unix datagram socket
//!   (`/run/chrony/chronyd.sock` on most systems). chronyd sends its reply to
//!   the sender's socket file, so the client binds its own socket in a
//!   directory of its choice, mode 0666 so that a chronyd running as its own
//!   user can write to it (chronyc does the same), and removes it afterwards
//!   whatever happens. Connecting needs write access to chronyd's socket,
//!   which chronyd creates under its umask (0755 with umask 022), in a
//!   directory only its user reaches (`/run/chrony`, 0750): in practice root
//!   or chronyd's user; others get "permission denied" from `connect`.
//! - [`ChronyEndpoint::Udp`]: chronyd's UDP command port (323), which
//!   answers read-only commands such as `tracking` to the addresses its
//!   `cmdallow` permits (localhost only by default).
//!
//! The bytes are built and checked by [`authtime_clock::chrony_cmd`].

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use authtime_clock::chrony_cmd::{
    ChronyReplyError, Tracking, parse_tracking_reply, tracking_request_attempt,
};

/// Where chronyd's commands are answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChronyEndpoint {
    /// chronyd's Unix datagram socket.
    Unix {
        /// chronyd's socket (its `bindcmdaddress` path).
        socket: PathBuf,
        /// A directory for the client's own socket, which chronyd replies to:
        /// writable by this process and reachable by chronyd's user.
        client_dir: PathBuf,
    },
    /// chronyd's UDP command port.
    Udp(SocketAddr),
}

impl fmt::Display for ChronyEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unix { socket, .. } => {
                write!(f, "chronyd command socket {}", socket.display())
            }
            Self::Udp(addr) => write!(f, "chronyd command port {addr}"),
        }
    }
}

/// What went wrong in a query.
#[non_exhaustive]
#[derive(Debug)]
pub enum ChronyClientErrorKind {
    /// The client's own Unix socket could not be created at `path`.
    ClientSocket {
        /// The socket file the client tried to create.
        path: PathBuf,
        /// The system's error.
        error: io::Error,
    },
    /// The client's UDP socket could not be bound.
    Bind(io::Error),
    /// Connecting to chronyd's socket or address failed.
    Connect(io::Error),
    /// Sending the request failed.
    Send(io::Error),
    /// Receiving failed with something else than a timeout.
    Receive(io::Error),
    /// No reply to the request nor to its resend.
    NoReply {
        /// How long each attempt waited.
        waited: Duration,
    },
    /// chronyd's reply is an error or is malformed.
    Reply(ChronyReplyError),
}

/// A failed query, naming the endpoint.
#[derive(Debug)]
pub struct ChronyClientError {
    endpoint: ChronyEndpoint,
    kind: ChronyClientErrorKind,
}

impl ChronyClientError {
    /// The endpoint queried.
    #[must_use]
    pub fn endpoint(&self) -> &ChronyEndpoint {
        &self.endpoint
    }

    /// What went wrong.
    #[must_use]
    pub fn kind(&self) -> &ChronyClientErrorKind {
        &self.kind
    }
}

/// Suggested in messages when the Unix socket is out of reach.
const UDP_HINT: &str = "use chrony-address = \"127.0.0.1:323\"";

impl fmt::Display for ChronyClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ChronyClientErrorKind as K;
        use io::ErrorKind as E;
        write!(f, "{}: ", self.endpoint)?;
        let unix = matches!(self.endpoint, ChronyEndpoint::Unix { .. });
        match &self.kind {
            K::ClientSocket { path, error } => write!(
                f,
                "cannot create the client socket {}: {error} (the client directory must exist and be writable)",
                path.display()
            ),
            K::Bind(e) => write!(f, "cannot bind a local UDP socket: {e}"),
            K::Connect(e) if unix && e.kind() == E::PermissionDenied => write!(
                f,
                "permission denied — only root and chronyd's user may use this socket: run as one of them, or {UDP_HINT}"
            ),
            K::Connect(e) if unix && e.kind() == E::NotFound => f.write_str(
                "no such socket — is chronyd running, and is this its bindcmdaddress?",
            ),
            K::Connect(e) if unix && e.kind() == E::ConnectionRefused => f.write_str(
                "connection refused — the socket is left over from a chronyd no longer running",
            ),
            K::Connect(e) => write!(f, "cannot connect: {e}"),
            K::Send(e) if unix && e.kind() == E::PermissionDenied => write!(
                f,
                "permission denied — only root and chronyd's user may use this socket: run as one of them, or {UDP_HINT}"
            ),
            K::Send(e) => write!(f, "cannot send the request: {e}"),
            K::Receive(e) if e.kind() == E::ConnectionRefused => f.write_str(
                "connection refused — nothing listens there (is chronyd running with this cmdport and bindcmdaddress?)",
            ),
            K::Receive(e) => write!(f, "cannot receive the reply: {e}"),
            K::NoReply { waited } if unix => write!(
                f,
                "no reply within {waited:?}, twice — chronyd's user must be able to reach the client directory"
            ),
            K::NoReply { waited } => write!(
                f,
                "no reply within {waited:?}, twice — is chronyd running, listening there, with cmdallow for this address?"
            ),
            K::Reply(ChronyReplyError::Unauthorised) if !unix => write!(
                f,
                "{} (over UDP chronyd answers only read-only commands, to cmdallow'ed addresses)",
                ChronyReplyError::Unauthorised
            ),
            K::Reply(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ChronyClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ChronyClientErrorKind::ClientSocket { error: e, .. }
            | ChronyClientErrorKind::Bind(e)
            | ChronyClientErrorKind::Connect(e)
            | ChronyClientErrorKind::Send(e)
            | ChronyClientErrorKind::Receive(e) => Some(e),
            ChronyClientErrorKind::Reply(e) => Some(e),
            ChronyClientErrorKind::NoReply { .. } => None,
        }
    }
}

/// Asks chronyd at `endpoint` for its tracking report.
///
/// Waits up to `timeout` for the reply, then resends once (same sequence
/// number, next attempt number, as chronyc does) and waits as long again.
/// Replies to other sequence numbers (late replies) are skipped.
///
/// # Errors
///
/// The endpoint cannot be reached, does not answer in time, or answers with
/// an error or something that is not a tracking report.
pub fn query_tracking(
    endpoint: &ChronyEndpoint,
    timeout: Duration,
) -> Result<Tracking, ChronyClientError> {
    let timeout = timeout.max(Duration::from_millis(1));
    let result = match endpoint {
        ChronyEndpoint::Unix { socket, client_dir } => query_unix(socket, client_dir, timeout),
        ChronyEndpoint::Udp(addr) => query_udp(*addr, timeout),
    };
    result.map_err(|kind| ChronyClientError {
        endpoint: endpoint.clone(),
        kind,
    })
}

/// Client sockets made by this process, for unique socket file names.
static CLIENT_SOCKETS: AtomicU32 = AtomicU32::new(0);

/// Removes the client's socket file when the query ends, however it ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn query_unix(
    socket: &Path,
    client_dir: &Path,
    timeout: Duration,
) -> Result<Tracking, ChronyClientErrorKind> {
    let n = CLIENT_SOCKETS.fetch_add(1, Ordering::Relaxed);
    let path = client_dir.join(format!("authtime-chronyc.{}.{n}.sock", std::process::id()));
    let client_socket = |error| ChronyClientErrorKind::ClientSocket {
        path: path.clone(),
        error,
    };
    // A file of this name can only be left over from an earlier process with
    // our process id.
    let _ = std::fs::remove_file(&path);
    let sock = UnixDatagram::bind(&path).map_err(client_socket)?;
    let _remove = RemoveOnDrop(path.clone());
    // chronyd may run as another user: let it send to our socket.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))
        .map_err(client_socket)?;
    sock.connect(socket)
        .map_err(ChronyClientErrorKind::Connect)?;
    exchange(&sock, timeout)
}

fn query_udp(addr: SocketAddr, timeout: Duration) -> Result<Tracking, ChronyClientErrorKind> {
    let local_ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_loopback() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(ip) if ip.is_loopback() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let sock =
        UdpSocket::bind(SocketAddr::new(local_ip, 0)).map_err(ChronyClientErrorKind::Bind)?;
    sock.connect(addr).map_err(ChronyClientErrorKind::Connect)?;
    exchange(&sock, timeout)
}

/// A connected datagram socket.
trait Datagram {
    fn send(&self, buf: &[u8]) -> io::Result<usize>;
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize>;
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
}

impl Datagram for UnixDatagram {
    fn send(&self, buf: &[u8]) -> io::Result<usize> {
        Self::send(self, buf)
    }
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        Self::recv(self, buf)
    }
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        Self::set_read_timeout(self, timeout)
    }
}

impl Datagram for UdpSocket {
    fn send(&self, buf: &[u8]) -> io::Result<usize> {
        Self::send(self, buf)
    }
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        Self::recv(self, buf)
    }
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        Self::set_read_timeout(self, timeout)
    }
}

/// A sequence number unlikely to match a late reply to another client.
fn new_sequence() -> u32 {
    let mut bytes = [0u8; 4];
    if getrandom::fill(&mut bytes).is_ok() {
        return u32::from_ne_bytes(bytes);
    }
    static NEXT: AtomicU32 = AtomicU32::new(0);
    std::process::id()
        .rotate_left(16)
        .wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Sends the request and waits for its reply, resending once.
fn exchange(sock: &impl Datagram, timeout: Duration) -> Result<Tracking, ChronyClientErrorKind> {
    let sequence = new_sequence();
    let mut buf = [0u8; 1024];
    for attempt in 0..2u16 {
        let request = tracking_request_attempt(sequence, attempt);
        match sock.send(&request) {
            Ok(n) if n == request.len() => {}
            Ok(n) => {
                return Err(ChronyClientErrorKind::Send(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("sent {n} of {} bytes", request.len()),
                )));
            }
            Err(e) => return Err(ChronyClientErrorKind::Send(e)),
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            sock.set_read_timeout(Some(left))
                .map_err(ChronyClientErrorKind::Receive)?;
            match sock.recv(&mut buf) {
                Ok(n) => match parse_tracking_reply(buf.get(..n).unwrap_or(&[]), sequence) {
                    Ok(tracking) => return Ok(tracking),
                    // A late reply to an earlier request: keep waiting.
                    Err(ChronyReplyError::Sequence { .. }) => {}
                    Err(e) => return Err(ChronyClientErrorKind::Reply(e)),
                },
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ChronyClientErrorKind::Receive(e)),
            }
        }
    }
    Err(ChronyClientErrorKind::NoReply { waited: timeout })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "authtime-chrony-client-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn chrony_client_missing_socket_is_named_and_cleaned_up() {
        let dir = temp_dir("missing");
        let endpoint = ChronyEndpoint::Unix {
            socket: dir.join("nothing.sock"),
            client_dir: dir.clone(),
        };
        let err = query_tracking(&endpoint, Duration::from_millis(50)).expect_err("no chronyd");
        let text = err.to_string();
        assert!(text.contains("nothing.sock"), "{text}");
        assert!(text.contains("no such socket"), "{text}");
        // Our own socket file is gone.
        assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn chrony_client_missing_client_dir() {
        let dir = temp_dir("nodir");
        let endpoint = ChronyEndpoint::Unix {
            socket: dir.join("chronyd.sock"),
            client_dir: dir.join("absent"),
        };
        let err = query_tracking(&endpoint, Duration::from_millis(50)).expect_err("no dir");
        assert!(matches!(
            err.kind(),
            ChronyClientErrorKind::ClientSocket { .. }
        ));
        assert!(err.to_string().contains("absent"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn chrony_client_silent_unix_peer_times_out_twice_and_cleans_up() {
        let dir = temp_dir("silent");
        let server_path = dir.join("server.sock");
        let server = UnixDatagram::bind(&server_path).expect("bind");
        let endpoint = ChronyEndpoint::Unix {
            socket: server_path.clone(),
            client_dir: dir.clone(),
        };
        let err = query_tracking(&endpoint, Duration::from_millis(50)).expect_err("silent");
        assert!(
            matches!(err.kind(), ChronyClientErrorKind::NoReply { .. }),
            "{err}"
        );
        // Two requests, the second a resend of the first.
        let mut buf = [0u8; 256];
        server.set_nonblocking(true).expect("nonblocking");
        let first = server.recv(&mut buf).expect("first");
        assert_eq!(first, 104);
        let first = buf;
        let second = server.recv(&mut buf).expect("second");
        assert_eq!(second, 104);
        assert_eq!(first[8..12], buf[8..12], "same sequence");
        assert_eq!((first[7], buf[7]), (0, 1), "attempts");
        drop(server);
        std::fs::remove_file(&server_path).expect("server socket");
        assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn chrony_client_permission_message_names_socket_and_way_out() {
        let err = ChronyClientError {
            endpoint: ChronyEndpoint::Unix {
                socket: "/run/chrony/chronyd.sock".into(),
                client_dir: "/run/authtime".into(),
            },
            kind: ChronyClientErrorKind::Connect(io::ErrorKind::PermissionDenied.into()),
        };
        assert_eq!(
            err.to_string(),
            "chronyd command socket /run/chrony/chronyd.sock: permission denied — only root and \
             chronyd's user may use this socket: run as one of them, or use \
             chrony-address = \"127.0.0.1:323\""
        );
    }

    #[test]
    fn chrony_client_udp_refused() {
        // A port with nothing behind it: bind one, note it, close it.
        let addr = UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .expect("port");
        let err = query_tracking(&ChronyEndpoint::Udp(addr), Duration::from_millis(100))
            .expect_err("nothing there");
        let text = err.to_string();
        assert!(text.contains(&addr.to_string()), "{text}");
    }
}
