//! Whole reply frames, written into a buffer the caller owns. A reply goes
//! back to the request's source, from the address and port the request was
//! sent to: [`Addressing`] comes only from [`crate::parse`], and no function
//! here takes another destination.
//!
//! Two ways to fill a frame: [`build_reply`] copies a payload in; or the
//! caller writes its payload at [`reply_payload_offset`] (an NTP reply
//! encoded in place) and [`finish_reply`] writes the headers around it.
//!
//! The headers: Ethernet II with the request's MAC addresses swapped; IPv4
//! with a 20-byte header, DSCP and ECN zero, identification 0 with DF set
//! (RFC 6864 section 4.1: an atomic datagram needs no unique ID), TTL 64;
//! or IPv6 with traffic class and flow label zero and hop limit 64; then UDP
//! with the ports swapped and the checksum always computed. DSCP is zero as
//! from a socket without IP_TOS: a client does not choose the class of the
//! reply in the server's network. The frame is not padded to Ethernet's
//! 60-byte minimum: NICs pad short frames when they send them.

use std::net::IpAddr;

use crate::parse::{Addressing, udp_pseudo_header};
use crate::{ETHERNET_LEN, IPV4_LEN, IPV6_LEN, PROTO_UDP, UDP_LEN, checksum};

/// Why a reply frame was not written.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildError {
    /// The buffer is shorter than the frame.
    BufferTooSmall {
        /// The frame's length.
        needed: usize,
        /// The buffer's length.
        available: usize,
    },
    /// The payload does not fit one IP packet's length field.
    PayloadTooLong {
        /// The payload's length.
        len: usize,
        /// The longest payload for this IP version.
        max: usize,
    },
}

impl core::fmt::Display for BuildError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::BufferTooSmall { needed, available } => write!(
                f,
                "a {needed}-byte reply frame does not fit a {available}-byte buffer"
            ),
            Self::PayloadTooLong { len, max } => {
                write!(f, "a {len}-byte UDP payload is over the {max}-byte limit")
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// The IP version's TTL or hop limit for replies: Linux's default.
const HOP_LIMIT: u8 = 64;
const DONT_FRAGMENT: u16 = 0x4000;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;

/// Whether replies to `request` are IPv4 (parse never mixes families; were
/// they mixed, both would be written as IPv6, IPv4-mapped).
fn is_ipv4(request: &Addressing) -> bool {
    request.source().is_ipv4() && request.destination().is_ipv4()
}

fn ip_header_len(request: &Addressing) -> usize {
    if is_ipv4(request) { IPV4_LEN } else { IPV6_LEN }
}

/// Where the UDP payload of a reply to `request` starts in the frame.
#[must_use]
pub fn reply_payload_offset(request: &Addressing) -> usize {
    ETHERNET_LEN + ip_header_len(request) + UDP_LEN
}

/// The length of a reply frame to `request` with a `payload_len`-byte
/// payload.
#[must_use]
pub fn reply_len(request: &Addressing, payload_len: usize) -> usize {
    reply_payload_offset(request) + payload_len
}

/// The longest UDP payload of a reply to `request`: what the IP length
/// field holds (IPv4 counts its own header in it, IPv6 does not).
#[must_use]
pub fn max_payload_len(request: &Addressing) -> usize {
    let counted = if is_ipv4(request) { IPV4_LEN } else { 0 };
    usize::from(u16::MAX) - counted - UDP_LEN
}

/// Writes a reply to `request` carrying `payload` into `buf`; returns the
/// frame's length (the rest of `buf` is untouched).
///
/// # Errors
/// The payload is too long for one IP packet, or `buf` is too short.
pub fn build_reply(
    request: &Addressing,
    payload: &[u8],
    buf: &mut [u8],
) -> Result<usize, BuildError> {
    let len = check(request, payload.len(), buf.len())?;
    let offset = reply_payload_offset(request);
    buf[offset..len].copy_from_slice(payload);
    finish_reply(request, buf, payload.len())
}

/// Writes the headers of a reply to `request` whose `payload_len`-byte
/// payload is already at [`reply_payload_offset`] in `buf`; returns the
/// frame's length.
///
/// # Errors
/// The payload is too long for one IP packet, or `buf` is too short.
pub fn finish_reply(
    request: &Addressing,
    buf: &mut [u8],
    payload_len: usize,
) -> Result<usize, BuildError> {
    let len = check(request, payload_len, buf.len())?;
    let frame = &mut buf[..len];
    let (ip, udp) = frame[ETHERNET_LEN..].split_at_mut(ip_header_len(request));
    // Both lengths fit 16 bits: `check` bounded the payload.
    let udp_len = u16::try_from(udp.len()).unwrap_or(u16::MAX);
    // Swapped: the reply goes where the request came from.
    let (source, destination) = (request.destination(), request.source());
    match (source.ip(), destination.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            ip.fill(0);
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&(udp_len + IPV4_LEN as u16).to_be_bytes());
            ip[6..8].copy_from_slice(&DONT_FRAGMENT.to_be_bytes());
            ip[8] = HOP_LIMIT;
            ip[9] = PROTO_UDP;
            ip[12..16].copy_from_slice(&s.octets());
            ip[16..20].copy_from_slice(&d.octets());
            let sum = checksum::internet_checksum(ip);
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
        }
        (s, d) => {
            ip[..8].copy_from_slice(&[0x60, 0, 0, 0, 0, 0, PROTO_UDP, HOP_LIMIT]);
            ip[4..6].copy_from_slice(&udp_len.to_be_bytes());
            ip[8..24].copy_from_slice(&octets(s));
            ip[24..40].copy_from_slice(&octets(d));
        }
    }
    udp[0..2].copy_from_slice(&source.port().to_be_bytes());
    udp[2..4].copy_from_slice(&destination.port().to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    udp[6..8].fill(0);
    let mut sum = udp_pseudo_header(source.ip(), destination.ip(), udp.len());
    sum.add(udp);
    // A computed zero is sent as all ones: zero means "no checksum"
    // (RFC 768), which IPv6 forbids.
    let checksum = match sum.finish() {
        0 => 0xffff,
        c => c,
    };
    udp[6..8].copy_from_slice(&checksum.to_be_bytes());
    let ethertype = if is_ipv4(request) {
        ETHERTYPE_IPV4
    } else {
        ETHERTYPE_IPV6
    };
    frame[0..6].copy_from_slice(&request.source_mac());
    frame[6..12].copy_from_slice(&request.destination_mac());
    frame[12..14].copy_from_slice(&ethertype.to_be_bytes());
    Ok(len)
}

/// The frame's length, if the payload fits the IP length field and the
/// frame fits the buffer.
fn check(request: &Addressing, payload_len: usize, available: usize) -> Result<usize, BuildError> {
    let max = max_payload_len(request);
    if payload_len > max {
        return Err(BuildError::PayloadTooLong {
            len: payload_len,
            max,
        });
    }
    let needed = reply_len(request, payload_len);
    if needed > available {
        return Err(BuildError::BufferTooSmall { needed, available });
    }
    Ok(needed)
}

/// An IPv6 address's bytes; an IPv4 one (never: parse pairs families) as
/// IPv4-mapped.
fn octets(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::known_frames::{NTP_REQUEST_V4, NTP_REQUEST_V6};
    use crate::{Served, Verdict, parse};

    fn ntp() -> Served {
        Served::ports(&[123])
    }

    fn verdict_is_ours(frame: &[u8], served: &Served) -> bool {
        matches!(parse(frame, served), Verdict::Ours(_))
    }

    #[test]
    fn offsets_and_limits_per_ip_version() {
        let Verdict::Ours(v4) = parse(&NTP_REQUEST_V4, &ntp()) else {
            panic!("v4");
        };
        let Verdict::Ours(v6) = parse(&NTP_REQUEST_V6, &ntp()) else {
            panic!("v6");
        };
        assert_eq!(reply_payload_offset(v4.addressing()), 42);
        assert_eq!(reply_payload_offset(v6.addressing()), 62);
        assert_eq!(reply_len(v6.addressing(), 48), 110);
        assert_eq!(max_payload_len(v4.addressing()), 65_507);
        assert_eq!(max_payload_len(v6.addressing()), 65_527);
        let err = BuildError::BufferTooSmall {
            needed: 90,
            available: 64,
        };
        assert_eq!(
            err.to_string(),
            "a 90-byte reply frame does not fit a 64-byte buffer"
        );
    }

    #[test]
    fn a_reply_is_not_longer_than_an_ip_packet() {
        let Verdict::Ours(v4) = parse(&NTP_REQUEST_V4, &ntp()) else {
            panic!("v4");
        };
        let Verdict::Ours(v6) = parse(&NTP_REQUEST_V6, &ntp()) else {
            panic!("v6");
        };
        let mut buf = vec![0; 70_000];
        for (to, max) in [(v4.addressing(), 65_507), (v6.addressing(), 65_527)] {
            assert!(finish_reply(to, &mut buf, max).is_ok());
            assert_eq!(
                finish_reply(to, &mut buf, max + 1),
                Err(BuildError::PayloadTooLong { len: max + 1, max })
            );
        }
    }

    /// A payload that makes the UDP sum all ones: the checksum computes to
    /// zero and must go out as ffff, or IPv6 receivers drop the reply.
    #[test]
    fn a_computed_zero_udp_checksum_is_sent_as_ffff() {
        for request in [&NTP_REQUEST_V4[..], &NTP_REQUEST_V6[..]] {
            let Verdict::Ours(parsed) = parse(request, &ntp()) else {
                panic!("request does not parse");
            };
            let to = *parsed.addressing();
            let mut buf = [0; 200];
            let len = build_reply(&to, &[0, 0], &mut buf).expect("room");
            let udp = len - 10;
            // The checksum with a zero payload is the word that, added, makes
            // the sum all ones.
            let word = [buf[udp + 6], buf[udp + 7]];
            let len = build_reply(&to, &word, &mut buf).expect("room");
            assert_eq!(&buf[udp + 6..udp + 8], &[0xff, 0xff]);
            let back = Served::new([to.source()]);
            assert!(verdict_is_ours(&buf[..len], &back));
        }
    }
}
