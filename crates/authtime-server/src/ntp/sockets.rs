//! The listening sockets: one `SO_REUSEPORT` UDP socket per worker and
//! address, so the kernel spreads clients over the workers.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

/// How long a worker waits in `recvmmsg` before it looks at the stop flag.
pub(crate) const RECEIVE_TIMEOUT: Duration = Duration::from_millis(100);

/// Receive buffer asked for (the kernel caps it at `net.core.rmem_max`):
/// room for a burst while a worker is busy with the previous batch.
const RECEIVE_BUFFER: usize = 2 << 20;

/// `count` sockets bound to `addr` in one reuse-port group. Port 0 binds the
/// first socket to a free port and the others to the same one. Returns the
/// bound address, the sockets, and whether kernel receive timestamps are on.
///
/// # Errors
/// The first socket that cannot be created or bound.
pub(crate) fn bind_group(
    addr: SocketAddr,
    count: usize,
) -> io::Result<(SocketAddr, Vec<UdpSocket>, bool)> {
    let mut bound = addr;
    let mut sockets = Vec::with_capacity(count);
    let mut timestamps = true;
    for _ in 0..count.max(1) {
        let socket = Socket::new(Domain::for_address(bound), Type::DGRAM, Some(Protocol::UDP))?;
        socket.set_reuse_port(true)?;
        if bound.is_ipv6() {
            // `[::]` would otherwise also take the IPv4 port, which
            // `0.0.0.0` may need.
            socket.set_only_v6(true)?;
        }
        // Best effort: a smaller buffer only means more drops in bursts.
        let _ = socket.set_recv_buffer_size(RECEIVE_BUFFER);
        socket.set_read_timeout(Some(RECEIVE_TIMEOUT))?;
        socket.bind(&bound.into())?;
        if let Some(local) = socket.local_addr()?.as_socket() {
            bound = local;
        }
        timestamps &= authtime_packet_io::enable_timestamps(&socket, false).receive;
        sockets.push(UdpSocket::from(socket));
    }
    Ok((bound, sockets, timestamps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_shares_one_port() {
        let (addr, sockets, timestamps) =
            bind_group("127.0.0.1:0".parse().expect("addr"), 3).expect("bind");
        assert_ne!(addr.port(), 0);
        assert_eq!(sockets.len(), 3);
        assert!(timestamps);
        for s in &sockets {
            assert_eq!(s.local_addr().expect("addr"), addr);
        }
        // A socket without SO_REUSEPORT cannot join.
        assert!(UdpSocket::bind(addr).is_err());
    }
}
