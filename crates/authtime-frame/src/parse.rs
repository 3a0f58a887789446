//! A received Ethernet frame, classified: a UDP datagram for a served
//! endpoint ([`Verdict::Ours`]), a frame for the kernel ([`Verdict::Pass`]),
//! or a frame to a served endpoint that must not be answered
//! ([`Verdict::Drop`]). Sans-IO: bytes in, a view of them out; never panics.
//!
//! The rule behind the table in docs/xdp.md: a frame is dropped only when
//! its UDP destination is served, so that it is ours to count. Anything that
//! does not show a served destination in the plain form this crate reads
//! (untagged Ethernet II, IPv4 without options and unfragmented, IPv6 with
//! UDP as its first next header) is passed: the kernel checks it again and
//! does with it what it would do without the frame path.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::checksum::{self, Checksum};
use crate::reason::{DropReason, PassReason};
use crate::served::{Lookup, Served};
use crate::{ETHERNET_LEN, IPV4_LEN, IPV6_LEN, PROTO_UDP, UDP_LEN};

/// What to do with a received frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// A well-formed UDP datagram to a served endpoint, from a source that
    /// may be answered.
    Ours(UdpFrame<'a>),
    /// Not ours: give it to the kernel untouched.
    Pass(PassReason),
    /// To a served endpoint but malformed or unanswerable: drop it.
    Drop(DropReason),
}

/// The addresses of a received datagram at every layer, and what a reply
/// to it needs from its IP header. Only [`parse`] makes one, so a reply
/// built from it goes back where the request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Addressing {
    destination_mac: [u8; 6],
    source_mac: [u8; 6],
    source: SocketAddr,
    destination: SocketAddr,
    hop_limit: u8,
    traffic_class: u8,
}

impl Addressing {
    /// The frame's destination MAC address (ours).
    #[must_use]
    pub const fn destination_mac(&self) -> [u8; 6] {
        self.destination_mac
    }

    /// The frame's source MAC address (the next hop back to the peer).
    #[must_use]
    pub const fn source_mac(&self) -> [u8; 6] {
        self.source_mac
    }

    /// The peer's address and UDP port.
    #[must_use]
    pub const fn source(&self) -> SocketAddr {
        self.source
    }

    /// The served address and port the datagram was sent to.
    #[must_use]
    pub const fn destination(&self) -> SocketAddr {
        self.destination
    }

    /// The IPv4 TTL or IPv6 hop limit as received.
    #[must_use]
    pub const fn hop_limit(&self) -> u8 {
        self.hop_limit
    }

    /// The IPv4 type-of-service byte or IPv6 traffic class as received
    /// (DSCP in the upper six bits, ECN in the lower two).
    #[must_use]
    pub const fn traffic_class(&self) -> u8 {
        self.traffic_class
    }
}

/// A UDP datagram to a served endpoint, as a view of the received frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpFrame<'a> {
    addressing: Addressing,
    frame: &'a [u8],
    payload_start: usize,
    payload_end: usize,
}

impl<'a> UdpFrame<'a> {
    /// The addresses, owned: what [`crate::finish_reply`] needs once the
    /// frame's buffer is reused.
    #[must_use]
    pub const fn addressing(&self) -> &Addressing {
        &self.addressing
    }

    /// The peer's address and UDP port.
    #[must_use]
    pub const fn source(&self) -> SocketAddr {
        self.addressing.source
    }

    /// The served address and port the datagram was sent to.
    #[must_use]
    pub const fn destination(&self) -> SocketAddr {
        self.addressing.destination
    }

    /// The UDP payload (Ethernet padding after the IP packet excluded).
    #[must_use]
    pub fn payload(&self) -> &'a [u8] {
        self.frame
            .get(self.payload_start..self.payload_end)
            .unwrap_or_default()
    }

    /// Where the UDP payload lies in the frame.
    #[must_use]
    pub const fn payload_range(&self) -> core::ops::Range<usize> {
        self.payload_start..self.payload_end
    }

    /// The whole frame as received.
    #[must_use]
    pub const fn frame(&self) -> &'a [u8] {
        self.frame
    }
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
/// 802.1Q, 802.1ad, and the pre-standard 0x9100 of some switches.
const ETHERTYPE_VLAN: [u16; 3] = [0x8100, 0x88a8, 0x9100];
const IPV6_FRAGMENT: u8 = 44;
/// IPv6 extension headers (IANA "IPv6 Extension Header Types") other than
/// the fragment header: hop-by-hop, routing, ESP, AH, destination options,
/// mobility, HIP, shim6, and the two experimental values.
const IPV6_EXTENSIONS: [u8; 10] = [0, 43, 50, 51, 60, 135, 139, 140, 253, 254];

/// Classifies `frame`, a whole Ethernet frame as received (no FCS), for the
/// endpoints in `served`.
#[must_use]
pub fn parse<'a>(frame: &'a [u8], served: &Served) -> Verdict<'a> {
    let Some(ip) = frame.get(ETHERNET_LEN..) else {
        return Verdict::Pass(PassReason::Short);
    };
    let macs = Macs {
        destination: mac(frame, 0),
        source: mac(frame, 6),
    };
    match be16(frame, 12) {
        ETHERTYPE_IPV4 => ipv4(frame, ip, macs, served),
        ETHERTYPE_IPV6 => ipv6(frame, ip, macs, served),
        t if ETHERTYPE_VLAN.contains(&t) => Verdict::Pass(PassReason::Vlan),
        _ => Verdict::Pass(PassReason::NotIp),
    }
}

#[derive(Clone, Copy)]
struct Macs {
    destination: [u8; 6],
    source: [u8; 6],
}

fn ipv4<'a>(frame: &'a [u8], ip: &[u8], macs: Macs, served: &Served) -> Verdict<'a> {
    if ip.len() < IPV4_LEN {
        return Verdict::Pass(PassReason::Short);
    }
    let header_len = usize::from(ip[0] & 0x0f) * 4;
    if ip[0] >> 4 != 4 || header_len < IPV4_LEN {
        return Verdict::Pass(PassReason::BadIpHeader);
    }
    if ip[9] != PROTO_UDP {
        return Verdict::Pass(PassReason::NotUdp);
    }
    // More-fragments flag or a fragment offset; DF and the reserved bit
    // say nothing about fragmentation.
    if be16(ip, 6) & 0x3fff != 0 {
        return Verdict::Pass(PassReason::Fragment);
    }
    if header_len > IPV4_LEN {
        return Verdict::Pass(PassReason::IpOptions);
    }
    let source_ip = Ipv4Addr::from(word32(ip, 12));
    let destination_ip = Ipv4Addr::from(word32(ip, 16));
    let addresses = (IpAddr::V4(source_ip), IpAddr::V4(destination_ip));
    let udp = &ip[IPV4_LEN..];
    if let Err(pass) = check_destination(udp, addresses.1, macs, served) {
        return Verdict::Pass(pass);
    }
    if udp.len() < UDP_LEN {
        return Verdict::Drop(DropReason::Short);
    }
    let total = usize::from(be16(ip, 2));
    if total < IPV4_LEN + UDP_LEN {
        return Verdict::Drop(DropReason::BadLength);
    }
    if ip.len() < total {
        return Verdict::Drop(DropReason::Short);
    }
    if !checksum::verifies(&ip[..IPV4_LEN]) {
        return Verdict::Drop(DropReason::BadIpChecksum);
    }
    let datagram = Datagram {
        frame,
        start: ETHERNET_LEN + IPV4_LEN,
        len: total - IPV4_LEN,
        addresses,
        macs,
        hop_limit: ip[8],
        traffic_class: ip[1],
    };
    datagram.check(true)
}

fn ipv6<'a>(frame: &'a [u8], ip: &[u8], macs: Macs, served: &Served) -> Verdict<'a> {
    if ip.len() < IPV6_LEN {
        return Verdict::Pass(PassReason::Short);
    }
    if ip[0] >> 4 != 6 {
        return Verdict::Pass(PassReason::BadIpHeader);
    }
    match ip[6] {
        PROTO_UDP => {}
        IPV6_FRAGMENT => return Verdict::Pass(PassReason::Fragment),
        n if IPV6_EXTENSIONS.contains(&n) => return Verdict::Pass(PassReason::Ipv6Extension),
        _ => return Verdict::Pass(PassReason::NotUdp),
    }
    let source_ip = Ipv6Addr::from(word128(ip, 8));
    let destination_ip = Ipv6Addr::from(word128(ip, 24));
    let addresses = (IpAddr::V6(source_ip), IpAddr::V6(destination_ip));
    let udp = &ip[IPV6_LEN..];
    if let Err(pass) = check_destination(udp, addresses.1, macs, served) {
        return Verdict::Pass(pass);
    }
    if udp.len() < UDP_LEN {
        return Verdict::Drop(DropReason::Short);
    }
    let payload_len = usize::from(be16(ip, 4));
    // Zero would be a jumbogram, which needs a hop-by-hop header first.
    if payload_len < UDP_LEN {
        return Verdict::Drop(DropReason::BadLength);
    }
    if udp.len() < payload_len {
        return Verdict::Drop(DropReason::Short);
    }
    let traffic_class = ((ip[0] & 0x0f) << 4) | (ip[1] >> 4);
    let datagram = Datagram {
        frame,
        start: ETHERNET_LEN + IPV6_LEN,
        len: payload_len,
        addresses,
        macs,
        hop_limit: ip[7],
        traffic_class,
    };
    datagram.check(false)
}

/// Whether the UDP header starting `udp` is for a served endpoint that a
/// reply can come from; the reason to pass the frame if not.
fn check_destination(
    udp: &[u8],
    destination_ip: IpAddr,
    macs: Macs,
    served: &Served,
) -> Result<(), PassReason> {
    if udp.len() < 4 {
        return Err(PassReason::Short);
    }
    match served.lookup(SocketAddr::new(destination_ip, be16(udp, 2))) {
        Lookup::Served => {}
        Lookup::OtherAddress => return Err(PassReason::OtherAddress),
        Lookup::OtherPort => return Err(PassReason::OtherPort),
    }
    if !is_unicast_mac(macs.destination) || !is_answerable(destination_ip) {
        return Err(PassReason::BadDestination);
    }
    Ok(())
}

/// A UDP datagram to a served endpoint whose IP header checked out.
struct Datagram<'a> {
    frame: &'a [u8],
    /// Where the UDP header starts in `frame`.
    start: usize,
    /// The UDP length the IP header gives; `frame` holds at least this much.
    len: usize,
    addresses: (IpAddr, IpAddr),
    macs: Macs,
    hop_limit: u8,
    traffic_class: u8,
}

impl<'a> Datagram<'a> {
    fn check(self, zero_checksum_allowed: bool) -> Verdict<'a> {
        let Some(udp) = self.frame.get(self.start..self.start + self.len) else {
            return Verdict::Drop(DropReason::Short);
        };
        // Stricter than Linux, which trims an IP payload longer than the
        // UDP length: no client sends one, and it hides bytes from checks.
        if usize::from(be16(udp, 4)) != udp.len() {
            return Verdict::Drop(DropReason::BadLength);
        }
        if !is_unicast_mac(self.macs.source) {
            return Verdict::Drop(DropReason::BadSourceMac);
        }
        let (source_ip, destination_ip) = self.addresses;
        if !is_answerable(source_ip) {
            return Verdict::Drop(DropReason::BadSourceAddress);
        }
        let source_port = be16(udp, 0);
        if source_port == 0 {
            return Verdict::Drop(DropReason::SourcePortZero);
        }
        if be16(udp, 6) == 0 {
            if !zero_checksum_allowed {
                return Verdict::Drop(DropReason::MissingUdpChecksum);
            }
        } else {
            let mut sum = udp_pseudo_header(source_ip, destination_ip, udp.len());
            sum.add(udp);
            if sum.sum() != 0xffff {
                return Verdict::Drop(DropReason::BadUdpChecksum);
            }
        }
        Verdict::Ours(UdpFrame {
            addressing: Addressing {
                destination_mac: self.macs.destination,
                source_mac: self.macs.source,
                source: SocketAddr::new(source_ip, source_port),
                destination: SocketAddr::new(destination_ip, be16(udp, 2)),
                hop_limit: self.hop_limit,
                traffic_class: self.traffic_class,
            },
            frame: self.frame,
            payload_start: self.start + UDP_LEN,
            payload_end: self.start + self.len,
        })
    }
}

/// The sum of the UDP pseudo-header: RFC 768 for IPv4, RFC 8200 section
/// 8.1 for IPv6. Word order does not change a ones' complement sum, and a
/// UDP length always fits 16 bits here, so one sequence does for both.
pub(crate) fn udp_pseudo_header(source: IpAddr, destination: IpAddr, udp_len: usize) -> Checksum {
    let mut sum = Checksum::new();
    for ip in [source, destination] {
        match ip {
            IpAddr::V4(a) => sum.add(&a.octets()),
            IpAddr::V6(a) => sum.add(&a.octets()),
        }
    }
    sum.add_u16(u16::from(PROTO_UDP));
    sum.add_u16(u16::try_from(udp_len).unwrap_or(u16::MAX));
    sum
}

/// A unicast MAC address that is not all zeros (the group bit is the least
/// significant bit of the first byte; broadcast has it too).
fn is_unicast_mac(mac: [u8; 6]) -> bool {
    mac[0] & 1 == 0 && mac != [0; 6]
}

/// An address that may be the source or destination of a reply on a wire.
fn is_answerable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            !(a.is_unspecified() || a.is_loopback() || a.is_multicast() || a.is_broadcast())
        }
        IpAddr::V6(a) => {
            !(a.is_unspecified()
                || a.is_loopback()
                || a.is_multicast()
                || a.to_ipv4_mapped().is_some())
        }
    }
}

/// The big-endian u16 at `at`; 0 past the end (callers check lengths first).
fn be16(bytes: &[u8], at: usize) -> u16 {
    match bytes.get(at..at + 2) {
        Some(&[a, b]) => u16::from_be_bytes([a, b]),
        _ => 0,
    }
}

fn mac(bytes: &[u8], at: usize) -> [u8; 6] {
    bytes
        .get(at..at + 6)
        .and_then(|m| m.try_into().ok())
        .unwrap_or_default()
}

fn word32(bytes: &[u8], at: usize) -> [u8; 4] {
    bytes
        .get(at..at + 4)
        .and_then(|m| m.try_into().ok())
        .unwrap_or_default()
}

fn word128(bytes: &[u8], at: usize) -> [u8; 16] {
    bytes
        .get(at..at + 16)
        .and_then(|m| m.try_into().ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_and_destination_address_rules() {
        for bad in ["0.0.0.0", "127.0.0.1", "224.0.1.1", "255.255.255.255"] {
            assert!(!is_answerable(bad.parse().expect("ip")), "{bad}");
        }
        for bad in ["::", "::1", "ff02::101", "::ffff:192.0.2.1"] {
            assert!(!is_answerable(bad.parse().expect("ip")), "{bad}");
        }
        for good in ["192.0.2.1", "10.0.0.255", "2001:db8::1", "fe80::1"] {
            assert!(is_answerable(good.parse().expect("ip")), "{good}");
        }
        assert!(!is_unicast_mac([0xff; 6]));
        assert!(!is_unicast_mac([0x01, 0x00, 0x5e, 0, 1, 1]));
        assert!(!is_unicast_mac([0; 6]));
        assert!(is_unicast_mac([0x02, 0, 0, 0, 0, 1]));
    }

    #[test]
    fn short_or_foreign_ethernet_frames_are_passed() {
        let served = Served::ports(&[123]);
        for len in 0..ETHERNET_LEN {
            assert_eq!(
                parse(&vec![0; len], &served),
                Verdict::Pass(PassReason::Short)
            );
        }
        let mut arp = vec![0xff; 12];
        arp.extend_from_slice(&[0x08, 0x06]);
        arp.extend_from_slice(&[0; 28]);
        assert_eq!(parse(&arp, &served), Verdict::Pass(PassReason::NotIp));
        arp[12..14].copy_from_slice(&[0x81, 0x00]);
        assert_eq!(parse(&arp, &served), Verdict::Pass(PassReason::Vlan));
    }

    #[test]
    fn the_helpers_read_nothing_past_the_end() {
        assert_eq!(be16(&[1], 0), 0);
        assert_eq!(mac(&[1; 5], 0), [0; 6]);
        assert_eq!(word32(&[1; 7], 4), [0; 4]);
        assert_eq!(word128(&[1; 20], 8), [0; 16]);
    }
}
