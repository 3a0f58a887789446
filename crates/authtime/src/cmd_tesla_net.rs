//! What `authtime tesla send` and `recv` share outside the protocol: address
//! parsing, multicast sockets (IPv4) and the wall clock as a TESLA [`Time`].

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, anyhow};
use authtime_tesla::Time;
use socket2::{Domain, Protocol, Socket, Type};

/// Receive buffer asked of the kernel for the group socket: bursts of
/// thousands of packets per second must not overflow it.
const GROUP_RECV_BUFFER: usize = 4 << 20;

/// The wall clock in nanoseconds since the Unix epoch. The sender's times and
/// the receiver's are both wall-clock readings; the bootstrap relates them.
#[must_use]
pub fn wall_clock() -> Time {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    Time(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
}

/// `IP:PORT` for `flag`.
///
/// # Errors
/// Anything that is not a socket address.
pub fn socket_addr(flag: &str, text: &str) -> anyhow::Result<SocketAddr> {
    text.parse()
        .map_err(|_| anyhow!("{flag} {text}: not an IP:PORT address"))
}

/// An IPv4 multicast `GROUP:PORT` for `flag`.
///
/// # Errors
/// Not an address, IPv6 (not supported yet), or not a multicast group.
pub fn group_addr(flag: &str, text: &str) -> anyhow::Result<SocketAddrV4> {
    match socket_addr(flag, text)? {
        SocketAddr::V4(a) if a.ip().is_multicast() && a.port() != 0 => Ok(a),
        SocketAddr::V4(_) => Err(anyhow!(
            "{flag} {text}: not an IPv4 multicast group (224.0.0.0/4) with a port"
        )),
        SocketAddr::V6(_) => Err(anyhow!("{flag} {text}: IPv6 groups are not supported")),
    }
}

/// An interface address for `--iface`; the kernel's choice when absent.
///
/// # Errors
/// Not an IPv4 address.
pub fn iface_addr(text: Option<&str>) -> anyhow::Result<Ipv4Addr> {
    match text {
        None => Ok(Ipv4Addr::UNSPECIFIED),
        Some(t) => t
            .parse()
            .map_err(|_| anyhow!("--iface {t}: not an IPv4 address")),
    }
}

/// A socket that sends to multicast groups out of `iface`, with `ttl`, and
/// loops its packets back to local members (receivers on the same host).
///
/// # Errors
/// Any socket call refused by the kernel.
pub fn multicast_sender(iface: Ipv4Addr, ttl: u32) -> anyhow::Result<UdpSocket> {
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
        .context("cannot open a UDP socket")?;
    socket
        .bind(&SocketAddr::from((iface, 0)).into())
        .with_context(|| format!("cannot bind to {iface}"))?;
    if !iface.is_unspecified() {
        socket
            .set_multicast_if_v4(&iface)
            .with_context(|| format!("--iface {iface}: cannot send multicast from it"))?;
    }
    socket
        .set_multicast_ttl_v4(ttl)
        .with_context(|| format!("--ttl {ttl}"))?;
    socket
        .set_multicast_loop_v4(true)
        .context("cannot loop multicast back")?;
    Ok(socket.into())
}

/// A socket bound to `group` (address reuse on, so several receivers on one
/// host can share the port) that joined it on `iface`.
///
/// # Errors
/// Any socket call refused by the kernel.
pub fn multicast_member(group: SocketAddrV4, iface: Ipv4Addr) -> anyhow::Result<UdpSocket> {
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
        .context("cannot open a UDP socket")?;
    socket
        .set_reuse_address(true)
        .context("cannot share the port")?;
    // Best effort: the kernel caps it (net.core.rmem_max).
    let _ = socket.set_recv_buffer_size(GROUP_RECV_BUFFER);
    socket
        .bind(&SocketAddr::V4(group).into())
        .with_context(|| format!("cannot bind to {group}"))?;
    socket
        .join_multicast_v4(group.ip(), &iface)
        .with_context(|| format!("cannot join {} on {iface}", group.ip()))?;
    Ok(socket.into())
}

/// `seconds` for `flag`, within `min ..= max`.
///
/// # Errors
/// Out of range or not a number.
pub fn seconds(flag: &str, value: f64, min: f64, max: f64) -> anyhow::Result<Duration> {
    if !(min..=max).contains(&value) {
        return Err(anyhow!("{flag} {value}: must be {min} to {max} seconds"));
    }
    Ok(Duration::from_secs_f64(value))
}
