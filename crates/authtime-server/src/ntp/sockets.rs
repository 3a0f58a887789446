//! The listening sockets: one `SO_REUSEPORT` UDP socket per worker and
//! address, so the kernel spreads clients over the workers.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

/// How long a worker waits in `recvmmsg` before it looks at the stop flag.
pub(crate) const RECEIVE_TIMEOUT: Duration = Duration::from_millis(100);

/// What the kernel granted a group of sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SocketSupport {
    /// Every socket stamps received datagrams.
    pub(crate) rx_stamps: bool,
    /// Every socket returns transmit timestamps when asked.
    pub(crate) tx_stamps: bool,
    /// The smallest receive buffer granted, bytes.
    pub(crate) receive_buffer: usize,
}

/// `count` sockets bound to `addr` in one reuse-port group, with receive
/// buffers of `receive_buffer` bytes (as the kernel counts them). Port 0
/// binds the first socket to a free port and the others to the same one.
/// Returns the bound address, the sockets, and what the kernel granted.
/// With `stamps` off (Roughtime, which answers with the clock read once
/// per batch and reads no drop count), the kernel attaches neither receive
/// timestamps nor drop counts, and builds no control messages per datagram.
///
/// # Errors
/// The first socket that cannot be created or bound.
pub(crate) fn bind_group(
    addr: SocketAddr,
    count: usize,
    receive_buffer: usize,
    stamps: bool,
) -> io::Result<(SocketAddr, Vec<UdpSocket>, SocketSupport)> {
    let mut bound = addr;
    let mut sockets = Vec::with_capacity(count);
    let mut support = SocketSupport {
        rx_stamps: true,
        tx_stamps: true,
        receive_buffer: usize::MAX,
    };
    for _ in 0..count.max(1) {
        let socket = Socket::new(Domain::for_address(bound), Type::DGRAM, Some(Protocol::UDP))?;
        socket.set_reuse_port(true)?;
        if bound.is_ipv6() {
            // `[::]` would otherwise also take the IPv4 port, which
            // `0.0.0.0` may need.
            socket.set_only_v6(true)?;
        }
        // A buffer sized for a few milliseconds of requests at full load:
        // a request that would wait longer is better dropped by the kernel
        // than answered late (see ntp.receive-buffer). Best effort.
        let granted = authtime_packet_io::set_receive_buffer(&socket, receive_buffer).unwrap_or(0);
        support.receive_buffer = support.receive_buffer.min(granted);
        socket.set_read_timeout(Some(RECEIVE_TIMEOUT))?;
        socket.bind(&bound.into())?;
        if let Some(local) = socket.local_addr()?.as_socket() {
            bound = local;
        }
        if stamps {
            let granted = authtime_packet_io::enable_timestamps(&socket, true);
            support.rx_stamps &= granted.receive;
            support.tx_stamps &= granted.transmit;
            // Best effort: without it the kernel's drops are not counted.
            let _ = authtime_packet_io::enable_drop_counter(&socket);
        } else {
            support.rx_stamps = false;
            support.tx_stamps = false;
        }
        sockets.push(UdpSocket::from(socket));
    }
    Ok((bound, sockets, support))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_shares_one_port() {
        let (addr, sockets, support) =
            bind_group("127.0.0.1:0".parse().expect("addr"), 3, 65_536, true).expect("bind");
        assert_ne!(addr.port(), 0);
        assert_eq!(sockets.len(), 3);
        assert!(support.rx_stamps && support.tx_stamps, "{support:?}");
        assert!((4096..=65_536).contains(&support.receive_buffer));
        for s in &sockets {
            assert_eq!(s.local_addr().expect("addr"), addr);
        }
        // A socket without SO_REUSEPORT cannot join.
        assert!(UdpSocket::bind(addr).is_err());
    }
}
