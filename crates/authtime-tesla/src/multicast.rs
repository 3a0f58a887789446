//! IPv4 multicast sockets for the TESLA stream drivers, and the wall clock
//! as a TESLA [`Time`]. The sender's times and the receiver's are both
//! wall-clock readings; the bootstrap relates them.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use socket2::{Domain, Protocol, Socket, Type};

use crate::Time;

/// Receive buffer asked of the kernel for the group socket: bursts of
/// thousands of packets per second must not overflow it.
const GROUP_RECV_BUFFER: usize = 4 << 20;

/// The wall clock in nanoseconds since the Unix epoch.
#[must_use]
pub fn wall_clock() -> Time {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    Time(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
}

/// The socket call the kernel refused.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketStep {
    /// Opening a UDP socket.
    Open,
    /// Binding to this address.
    Bind(SocketAddr),
    /// Sending multicast from this interface.
    Interface(Ipv4Addr),
    /// Setting this multicast TTL.
    Ttl(u32),
    /// Looping multicast back to local members.
    Loop,
    /// Sharing the port with other members.
    Share,
    /// Joining this group on this interface.
    Join(Ipv4Addr, Ipv4Addr),
}

/// A multicast socket the kernel refused, and at which step.
#[derive(Debug)]
pub struct MulticastSocketError {
    /// The refused call.
    pub step: SocketStep,
    /// The kernel's error.
    pub error: std::io::Error,
}

impl fmt::Display for SocketStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Open => f.write_str("cannot open a UDP socket"),
            Self::Bind(addr) => write!(f, "cannot bind to {addr}"),
            Self::Interface(iface) => write!(f, "cannot send multicast from {iface}"),
            Self::Ttl(ttl) => write!(f, "cannot set the multicast TTL to {ttl}"),
            Self::Loop => f.write_str("cannot loop multicast back"),
            Self::Share => f.write_str("cannot share the port"),
            Self::Join(group, iface) => write!(f, "cannot join {group} on {iface}"),
        }
    }
}

impl fmt::Display for MulticastSocketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.step, self.error)
    }
}

impl std::error::Error for MulticastSocketError {}

fn at(step: SocketStep) -> impl FnOnce(std::io::Error) -> MulticastSocketError {
    move |error| MulticastSocketError { step, error }
}

/// A socket that sends to multicast groups out of `iface` (the kernel's
/// choice when unspecified), with `ttl`, and loops its packets back to local
/// members (receivers on the same host).
///
/// # Errors
/// Any socket call refused by the kernel.
pub fn multicast_sender(iface: Ipv4Addr, ttl: u32) -> Result<UdpSocket, MulticastSocketError> {
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
        .map_err(at(SocketStep::Open))?;
    let local = SocketAddr::from((iface, 0));
    socket
        .bind(&local.into())
        .map_err(at(SocketStep::Bind(local)))?;
    if !iface.is_unspecified() {
        socket
            .set_multicast_if_v4(&iface)
            .map_err(at(SocketStep::Interface(iface)))?;
    }
    socket
        .set_multicast_ttl_v4(ttl)
        .map_err(at(SocketStep::Ttl(ttl)))?;
    socket
        .set_multicast_loop_v4(true)
        .map_err(at(SocketStep::Loop))?;
    Ok(socket.into())
}

/// A socket bound to `group` (address reuse on, so several receivers on one
/// host can share the port) that joined it on `iface`.
///
/// # Errors
/// Any socket call refused by the kernel.
pub fn multicast_member(
    group: SocketAddrV4,
    iface: Ipv4Addr,
) -> Result<UdpSocket, MulticastSocketError> {
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
        .map_err(at(SocketStep::Open))?;
    socket
        .set_reuse_address(true)
        .map_err(at(SocketStep::Share))?;
    // Best effort: the kernel caps it (net.core.rmem_max).
    let _ = socket.set_recv_buffer_size(GROUP_RECV_BUFFER);
    socket
        .bind(&SocketAddr::V4(group).into())
        .map_err(at(SocketStep::Bind(SocketAddr::V4(group))))?;
    socket
        .join_multicast_v4(group.ip(), &iface)
        .map_err(at(SocketStep::Join(*group.ip(), iface)))?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_steps_say_what_was_refused() {
        let group = Ipv4Addr::new(239, 1, 2, 3);
        let iface = Ipv4Addr::LOCALHOST;
        assert_eq!(
            SocketStep::Join(group, iface).to_string(),
            "cannot join 239.1.2.3 on 127.0.0.1"
        );
        assert_eq!(
            SocketStep::Bind(SocketAddr::from((group, 5000))).to_string(),
            "cannot bind to 239.1.2.3:5000"
        );
        let e = MulticastSocketError {
            step: SocketStep::Share,
            error: std::io::Error::other("no"),
        };
        assert_eq!(e.to_string(), "cannot share the port: no");
    }

    #[test]
    fn a_sender_socket_opens_on_loopback() {
        let socket = multicast_sender(Ipv4Addr::LOCALHOST, 1).expect("socket");
        assert!(socket.local_addr().expect("addr").port() != 0);
    }
}
