//! What `authtime tesla send` and `recv` (and `broadcast`) share on the
//! command line: address parsing, and the multicast sockets of
//! `authtime_tesla::multicast` with errors that name the flags.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use anyhow::anyhow;
use authtime_tesla::multicast::{self, SocketStep};

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

/// [`authtime_tesla::multicast::multicast_sender`], its errors worded for
/// the command line (`--iface`, `--ttl`).
///
/// # Errors
/// Any socket call refused by the kernel.
pub fn multicast_sender(iface: Ipv4Addr, ttl: u32) -> anyhow::Result<UdpSocket> {
    multicast::multicast_sender(iface, ttl).map_err(|e| {
        let context = match e.step {
            SocketStep::Bind(_) => format!("cannot bind to {iface}"),
            SocketStep::Interface(_) => format!("--iface {iface}: cannot send multicast from it"),
            SocketStep::Ttl(_) => format!("--ttl {ttl}"),
            step => step.to_string(),
        };
        anyhow::Error::new(e.error).context(context)
    })
}

/// [`authtime_tesla::multicast::multicast_member`], its errors as anyhow.
///
/// # Errors
/// Any socket call refused by the kernel.
pub fn multicast_member(group: SocketAddrV4, iface: Ipv4Addr) -> anyhow::Result<UdpSocket> {
    multicast::multicast_member(group, iface)
        .map_err(|e| anyhow::Error::new(e.error).context(e.step.to_string()))
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
