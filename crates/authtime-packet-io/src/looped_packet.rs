//! The UDP payload of a packet the kernel looped back with its transmit
//! timestamp. Sans-IO: bytes in, a view of them out; never panics.
//!
//! The copy starts where the driver's view of the packet starts: an Ethernet
//! header (loopback, veth and Ethernet cards), possibly with 802.1Q/802.1ad
//! tags, or directly the IP header (tunnels and other interfaces without a
//! link layer). Then IPv4 (options skipped by its header length, first
//! fragment only) or IPv6 (hop-by-hop, routing, destination, mobility,
//! authentication and first-fragment extension headers skipped), then UDP.
//! The payload may be cut: the copy holds what the reader kept.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A UDP datagram found in a looped packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopedUdp<'a> {
    /// Where the datagram was sent.
    pub destination: SocketAddr,
    /// The payload, or as much of it as the copy holds.
    pub payload: &'a [u8],
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: [u16; 2] = [0x8100, 0x88a8];
const PROTO_UDP: u8 = 17;
/// Most extension headers followed in an IPv6 packet.
const MAX_EXTENSION_HEADERS: usize = 8;

/// The UDP datagram in `packet`, or `None` when it is not an IPv4 or IPv6
/// UDP packet (first fragment) in one of the forms above.
#[must_use]
pub fn parse(packet: &[u8]) -> Option<LoopedUdp<'_>> {
    ethernet(packet).or_else(|| ip(packet))
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]))
}

fn ethernet(packet: &[u8]) -> Option<LoopedUdp<'_>> {
    let mut at = 12;
    let mut ethertype = be16(packet, at)?;
    // At most two tags (802.1ad outer, 802.1Q inner).
    for _ in 0..2 {
        if !ETHERTYPE_VLAN.contains(&ethertype) {
            break;
        }
        at += 4;
        ethertype = be16(packet, at)?;
    }
    let rest = packet.get(at + 2..)?;
    let version = rest.first()? >> 4;
    match (ethertype, version) {
        (ETHERTYPE_IPV4, 4) => ipv4(rest),
        (ETHERTYPE_IPV6, 6) => ipv6(rest),
        _ => None,
    }
}

fn ip(packet: &[u8]) -> Option<LoopedUdp<'_>> {
    match packet.first()? >> 4 {
        4 => ipv4(packet),
        6 => ipv6(packet),
        _ => None,
    }
}

fn ipv4(packet: &[u8]) -> Option<LoopedUdp<'_>> {
    let header_len = usize::from(packet.first()? & 0x0f) * 4;
    if header_len < 20 || *packet.get(9)? != PROTO_UDP {
        return None;
    }
    // A later fragment carries no UDP header.
    if be16(packet, 6)? & 0x1fff != 0 {
        return None;
    }
    let d = packet.get(16..20)?;
    let destination = IpAddr::V4(Ipv4Addr::new(d[0], d[1], d[2], d[3]));
    udp(packet.get(header_len..)?, destination)
}

fn ipv6(packet: &[u8]) -> Option<LoopedUdp<'_>> {
    let d: [u8; 16] = packet.get(24..40)?.try_into().ok()?;
    let destination = IpAddr::V6(Ipv6Addr::from(d));
    let mut next = *packet.get(6)?;
    let mut rest = packet.get(40..)?;
    for _ in 0..MAX_EXTENSION_HEADERS {
        if next == PROTO_UDP {
            return udp(rest, destination);
        }
        let len = match next {
            // Fragment: only the first fragment holds the UDP header.
            44 => {
                if be16(rest, 2)? >> 3 != 0 {
                    return None;
                }
                8
            }
            // Hop-by-hop, routing, destination options, mobility.
            0 | 43 | 60 | 135 => 8 * (usize::from(*rest.get(1)?) + 1),
            // Authentication header: length in 4-byte units, minus 2.
            51 => 4 * (usize::from(*rest.get(1)?) + 2),
            _ => return None,
        };
        next = *rest.first()?;
        rest = rest.get(len..)?;
    }
    None
}

fn udp(segment: &[u8], address: IpAddr) -> Option<LoopedUdp<'_>> {
    let port = be16(segment, 2)?;
    let length = usize::from(be16(segment, 4)?);
    if length < 8 {
        return None;
    }
    let payload = segment.get(8..)?;
    Some(LoopedUdp {
        destination: SocketAddr::new(address, port),
        payload: &payload[..payload.len().min(length - 8)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 UDP packet to 192.0.2.9:123 from port 4000 with `payload`.
    fn ipv4_udp(payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, PROTO_UDP, 0, 0];
        p.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 9]);
        p.extend_from_slice(&4000u16.to_be_bytes());
        p.extend_from_slice(&123u16.to_be_bytes());
        p.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        p
    }

    fn ipv6_udp(extension: &[u8], first_next: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0, 0, 0, first_next, 64];
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        p.extend_from_slice(&[0; 12]);
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        p.extend_from_slice(&[0; 11]);
        p.push(2);
        p.extend_from_slice(extension);
        p.extend_from_slice(&[0x0f, 0xa0, 0x11, 0x94]);
        p.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        p
    }

    fn ethernet_frame(tags: &[u16], ethertype: u16, ip: &[u8]) -> Vec<u8> {
        let mut f = vec![2; 12];
        for tag in tags {
            f.extend_from_slice(&tag.to_be_bytes());
            f.extend_from_slice(&[0, 5]);
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(ip);
        f
    }

    #[test]
    fn ipv4_behind_ethernet_vlan_or_nothing() {
        let ip = ipv4_udp(b"ntp-reply");
        let want = LoopedUdp {
            destination: "192.0.2.9:123".parse().expect("addr"),
            payload: b"ntp-reply",
        };
        assert_eq!(parse(&ip), Some(want));
        assert_eq!(parse(&ethernet_frame(&[], ETHERTYPE_IPV4, &ip)), Some(want));
        let tagged = ethernet_frame(&[0x88a8, 0x8100], ETHERTYPE_IPV4, &ip);
        assert_eq!(parse(&tagged), Some(want));
    }

    #[test]
    fn ipv6_with_extension_headers() {
        let payload = b"reply";
        let want_dst: SocketAddr = "[2001:db8::2]:4500".parse().expect("addr");
        let plain = ipv6_udp(&[], PROTO_UDP, payload);
        let frame = ethernet_frame(&[], ETHERTYPE_IPV6, &plain);
        let got = parse(&frame).expect("parsed");
        assert_eq!((got.destination, got.payload), (want_dst, &payload[..]));
        // Hop-by-hop (8 bytes), then a first fragment (8 bytes), then UDP.
        let mut ext = vec![44, 0, 0, 0, 0, 0, 0, 0];
        ext.extend_from_slice(&[PROTO_UDP, 0, 0, 1, 0, 0, 0, 7]);
        let with_ext = ipv6_udp(&ext, 0, payload);
        assert_eq!(parse(&with_ext).map(|u| u.payload), Some(&payload[..]));
        // A later fragment has no UDP header to find.
        let mut later = ext.clone();
        later[10..12].copy_from_slice(&(185u16 << 3).to_be_bytes());
        assert_eq!(parse(&ipv6_udp(&later, 0, payload)), None);
    }

    #[test]
    fn a_cut_payload_is_what_the_copy_holds() {
        let ip = ipv4_udp(&[7; 100]);
        let got = parse(&ip[..28 + 48]).expect("parsed");
        assert_eq!(got.payload, &[7; 48][..]);
    }

    #[test]
    fn malformed_packets_are_refused() {
        let ip = ipv4_udp(b"x");
        for bad in [
            Vec::new(),
            vec![0x45],
            ip[..27].to_vec(),
            // Not UDP.
            {
                let mut p = ip.clone();
                p[9] = 6;
                p
            },
            // A header length below 20 bytes.
            {
                let mut p = ip.clone();
                p[0] = 0x44;
                p
            },
            // A later fragment.
            {
                let mut p = ip.clone();
                p[7] = 1;
                p
            },
            // A UDP length below its header's.
            {
                let mut p = ip.clone();
                p[24..26].copy_from_slice(&4u16.to_be_bytes());
                p
            },
            // Ethernet saying IPv6 around an IPv4 packet.
            ethernet_frame(&[], ETHERTYPE_IPV6, &ip),
            // An unknown IPv6 extension header.
            ipv6_udp(&[PROTO_UDP, 0, 0, 0, 0, 0, 0, 0], 99, b"x"),
        ] {
            assert_eq!(parse(&bad), None, "{bad:02x?}");
        }
    }

    #[test]
    fn every_prefix_of_a_frame_parses_without_panic() {
        let frame = ethernet_frame(&[0x8100], ETHERTYPE_IPV6, &ipv6_udp(&[], PROTO_UDP, b"abc"));
        for end in 0..=frame.len() {
            let _ = parse(&frame[..end]);
        }
    }
}
