//! Roughtime over TCP: requests framed as on UDP (the "ROUGHTIM" magic and a
//! little-endian 32-bit length, draft-ietf-ntp-roughtime-19 §4.3), one
//! response per request, several requests per connection.
//!
//! Bounded everywhere: at most `max-connections` open, and at most
//! [`PER_CLIENT`] from one address (more are closed at once, counted), each
//! request must arrive whole within `tcp-timeout` of the previous response (a
//! deadline, not a timeout per read, so a client sending a byte at a time
//! cannot hold a connection), a frame
//! longer than [`MAX_FRAME`] closes the connection, and anything that is not
//! a frame closes it silently (counted). One thread per connection.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::clock;
use crate::roughtime::metrics::Refusal;
use crate::roughtime::worker::{RoughtimeShared, answer_requests};

/// The largest request frame, header included (as the UDP receive buffer).
pub(crate) const MAX_FRAME: usize = authtime_packet_io::DATAGRAM_LEN;

const MAGIC: &[u8; 8] = b"ROUGHTIM";

/// Connections one client address may hold open at once.
pub(crate) const PER_CLIENT: u32 = 4;

/// Open connections per client address.
#[derive(Debug, Default)]
struct OpenPerClient(Mutex<HashMap<IpAddr, u32>>);

impl OpenPerClient {
    /// Counts a new connection from `ip`, unless it has [`PER_CLIENT`] open.
    fn enter(&self, ip: IpAddr) -> bool {
        let mut open = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let n = open.entry(ip).or_insert(0);
        if *n >= PER_CLIENT {
            return false;
        }
        *n += 1;
        true
    }

    fn leave(&self, ip: IpAddr) {
        let mut open = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&ip);
            }
        }
    }
}

/// How often the accept loop looks at the stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// Binds `addr` for TCP.
///
/// # Errors
/// The address cannot be bound.
pub(crate) fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        // `[::]` would otherwise also take the IPv4 port, which `0.0.0.0`
        // (the other default address) needs.
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(128)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Accepts connections until the stop flag is set.
pub(crate) fn spawn_acceptor(
    listener: TcpListener,
    shared: Arc<RoughtimeShared>,
    max_connections: usize,
    timeout: Duration,
) -> std::io::Result<JoinHandle<()>> {
    let name = format!(
        "roughtime-tcp-{}",
        listener
            .local_addr()
            .map_or_else(|_| "?".into(), |a| a.to_string())
    );
    std::thread::Builder::new().name(name).spawn(move || {
        let open = Arc::new(AtomicUsize::new(0));
        let per_client = Arc::new(OpenPerClient::default());
        while !shared.stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, peer)) => {
                    let ip = peer.ip().to_canonical();
                    if open.load(Ordering::Relaxed) >= max_connections {
                        shared.metrics.tcp_refused.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    if !per_client.enter(ip) {
                        shared.metrics.tcp_refused.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    shared
                        .metrics
                        .tcp_connections
                        .fetch_add(1, Ordering::Relaxed);
                    open.fetch_add(1, Ordering::Relaxed);
                    let (shared, open_here) = (Arc::clone(&shared), Arc::clone(&open));
                    let per_client_here = Arc::clone(&per_client);
                    let spawned = std::thread::Builder::new()
                        .name("roughtime-conn".into())
                        .spawn(move || {
                            serve_connection(stream, peer, &shared, timeout);
                            open_here.fetch_sub(1, Ordering::Relaxed);
                            per_client_here.leave(ip);
                        });
                    if let Err(e) = spawned {
                        tracing::warn!(error = %e, "no thread for a Roughtime TCP connection");
                        open.fetch_sub(1, Ordering::Relaxed);
                        per_client.leave(ip);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(ACCEPT_POLL);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "Roughtime TCP accept failed");
                    std::thread::sleep(ACCEPT_POLL);
                }
            }
        }
    })
}

/// Answers frames on `stream` until the peer closes it, a read times out,
/// a frame is bad, or the server stops.
fn serve_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    shared: &RoughtimeShared,
    timeout: Duration,
) {
    if stream.set_nonblocking(false).is_err() || stream.set_write_timeout(Some(timeout)).is_err() {
        return;
    }
    let m = &shared.metrics;
    let mut frame = vec![0u8; MAX_FRAME];
    while !shared.stop.load(Ordering::Relaxed) {
        let deadline = Instant::now() + timeout;
        if !read_by(&mut stream, &mut frame[..12], deadline) {
            return;
        }
        m.received.fetch_add(1, Ordering::Relaxed);
        let length = u32::from_le_bytes([frame[8], frame[9], frame[10], frame[11]]) as usize;
        if &frame[..8] != MAGIC {
            m.refuse(Refusal::Malformed, 1);
            return;
        }
        let Some(total) = length.checked_add(12).filter(|t| *t <= MAX_FRAME) else {
            m.refuse(Refusal::TooLarge, 1);
            return;
        };
        if !read_by(&mut stream, &mut frame[12..total], deadline) {
            m.refuse(Refusal::Malformed, 1);
            return;
        }
        let now = clock::now_unix();
        let announcement = shared.clock.announce(now);
        let mut answers =
            answer_requests(shared, &announcement, now, &[(&frame[..total], peer.ip())]);
        if let Some(Some(response)) = answers.pop()
            && stream.write_all(&response).is_err()
        {
            return;
        }
    }
}

/// Fills `buf` from `stream` before `deadline`; false when the peer closed,
/// failed or was too slow.
fn read_by(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> bool {
    let mut at = 0;
    while at < buf.len() {
        let Some(left) = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
        else {
            return false;
        };
        if stream.set_read_timeout(Some(left)).is_err() {
            return false;
        }
        match stream.read(&mut buf[at..]) {
            Ok(0) => return false,
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client sending one byte every 50 ms never finishes its 12-byte
    /// header within a 300 ms deadline, though no single read waits long.
    #[test]
    fn a_trickling_client_misses_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let client = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).expect("connect");
            let end = Instant::now() + Duration::from_secs(10);
            // Bounded: it stops once the server has closed, or after 10 s.
            while Instant::now() < end && c.write_all(b"R").is_ok() {
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let (mut server, _) = listener.accept().expect("accept");
        let started = Instant::now();
        let mut header = [0u8; 12];
        let deadline = started + Duration::from_millis(300);
        assert!(!read_by(&mut server, &mut header, deadline));
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(server);
        client.join().expect("client");

        // A whole header sent at once is read.
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut c = TcpStream::connect(addr).expect("connect");
        c.write_all(b"ROUGHTIM\x00\x04\x00\x00").expect("write");
        let (mut server, _) = listener.accept().expect("accept");
        let deadline = Instant::now() + Duration::from_secs(5);
        assert!(read_by(&mut server, &mut header, deadline));
        assert_eq!(&header[..8], MAGIC);
    }

    #[test]
    fn one_client_holds_at_most_per_client_connections() {
        let open = OpenPerClient::default();
        let (a, b): (IpAddr, IpAddr) = (
            "192.0.2.1".parse().expect("ip"),
            "192.0.2.2".parse().expect("ip"),
        );
        for _ in 0..PER_CLIENT {
            assert!(open.enter(a));
        }
        assert!(!open.enter(a));
        assert!(open.enter(b));
        open.leave(a);
        assert!(open.enter(a));
        for _ in 0..=PER_CLIENT {
            open.leave(a);
        }
        assert!(open.0.lock().expect("lock").get(&a).is_none());
    }
}
