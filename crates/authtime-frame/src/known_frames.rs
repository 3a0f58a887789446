//! Known frames as byte literals, each with where it comes from, and their
//! malformed variants mapped to the verdict each must get. The NTP frames
//! and their replies were written by a short Python script (struct packing
//! and its own RFC 1071 sum), so they check this crate against code that
//! shares nothing with it; the CAPTURED frames are what Linux sent.

use crate::checksum::internet_checksum;
use crate::{
    BuildError, DropReason, PassReason, Served, Verdict, build_reply, finish_reply, parse,
    reply_payload_offset,
};

/// An NTPv4 client request (RFC 5905 figure 8: LI 0, VN 4, mode 3, a
/// transmit timestamp) from 192.0.2.10:40000 to 198.51.100.1:123 (RFC 5737
/// addresses), between the RFC 7042 documentation MACs 00:00:5e:00:53:01
/// (client) and :02 (server); IPv4 ID 0, DF, TTL 64. Written by a Python
/// script with its own checksum code, not by this crate.
pub(crate) const NTP_REQUEST_V4: [u8; 90] = [
    0x00, 0x00, 0x5e, 0x00, 0x53, 0x02, 0x00, 0x00, 0x5e, 0x00, 0x53, 0x01, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x4c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x4e, 0x62, 0xc0, 0x00, 0x02, 0x0a, 0xc6, 0x33,
    0x64, 0x01, 0x9c, 0x40, 0x00, 0x7b, 0x00, 0x38, 0x4e, 0x71, 0x23, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xe9, 0xa1, 0xb2, 0xc3, 0x12, 0x34, 0x56, 0x78,
];

/// The same request over IPv6, 2001:db8::10 to 2001:db8::1 (RFC 3849).
pub(crate) const NTP_REQUEST_V6: [u8; 110] = [
    0x00, 0x00, 0x5e, 0x00, 0x53, 0x02, 0x00, 0x00, 0x5e, 0x00, 0x53, 0x01, 0x86, 0xdd, 0x60, 0x00,
    0x00, 0x00, 0x00, 0x38, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x9c, 0x40, 0x00, 0x7b, 0x00, 0x38, 0xdf, 0x2d, 0x23, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe9, 0xa1, 0xb2, 0xc3, 0x12, 0x34, 0x56, 0x78,
];

/// The reply this crate must build to NTP_REQUEST_V4 with NTP_REPLY_PAYLOAD
/// (the same script).
pub(crate) const NTP_REPLY_V4: [u8; 90] = [
    0x00, 0x00, 0x5e, 0x00, 0x53, 0x01, 0x00, 0x00, 0x5e, 0x00, 0x53, 0x02, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x4c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x4e, 0x62, 0xc6, 0x33, 0x64, 0x01, 0xc0, 0x00,
    0x02, 0x0a, 0x00, 0x7b, 0x9c, 0x40, 0x00, 0x38, 0x51, 0x99, 0x24, 0x01, 0x00, 0xe9, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// The reply this crate must build to NTP_REQUEST_V6 with NTP_REPLY_PAYLOAD.
pub(crate) const NTP_REPLY_V6: [u8; 110] = [
    0x00, 0x00, 0x5e, 0x00, 0x53, 0x01, 0x00, 0x00, 0x5e, 0x00, 0x53, 0x02, 0x86, 0xdd, 0x60, 0x00,
    0x00, 0x00, 0x00, 0x38, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x7b, 0x9c, 0x40, 0x00, 0x38, 0xe2, 0x55, 0x24, 0x01,
    0x00, 0xe9, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// Captured with AF_PACKET on a veth end by tests/kernel.rs (Linux 6.18):
/// a std UdpSocket at 10.201.7.1:54365 sending "authtime-frame 4 request" to
/// 10.201.7.2:4123, MACs 02:a7:0f:00:00:0a to :0b; the kernel chose the
/// IPv4 ID (ef4d), set DF and TTL 64.
pub(crate) const CAPTURED_V4: [u8; 66] = [
    0x02, 0xa7, 0x0f, 0x00, 0x00, 0x0b, 0x02, 0xa7, 0x0f, 0x00, 0x00, 0x0a, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x34, 0xef, 0x4d, 0x40, 0x00, 0x40, 0x11, 0x27, 0xd7, 0x0a, 0xc9, 0x07, 0x01, 0x0a, 0xc9,
    0x07, 0x02, 0xd4, 0x5d, 0x10, 0x1b, 0x00, 0x20, 0xa3, 0xd5, 0x61, 0x75, 0x74, 0x68, 0x74, 0x69,
    0x6d, 0x65, 0x2d, 0x66, 0x72, 0x61, 0x6d, 0x65, 0x20, 0x34, 0x20, 0x72, 0x65, 0x71, 0x75, 0x65,
    0x73, 0x74,
];

/// As CAPTURED_V4 over IPv6: [fd00:201::1]:44515 to [fd00:201::2]:4123,
/// "authtime-frame 6 request"; the kernel chose the flow label (0ada4a).
pub(crate) const CAPTURED_V6: [u8; 86] = [
    0x02, 0xa7, 0x0f, 0x00, 0x00, 0x0b, 0x02, 0xa7, 0x0f, 0x00, 0x00, 0x0a, 0x86, 0xdd, 0x60, 0x0a,
    0xda, 0x4a, 0x00, 0x20, 0x11, 0x40, 0xfd, 0x00, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xfd, 0x00, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xad, 0xe3, 0x10, 0x1b, 0x00, 0x20, 0xef, 0xdb, 0x61, 0x75,
    0x74, 0x68, 0x74, 0x69, 0x6d, 0x65, 0x2d, 0x66, 0x72, 0x61, 0x6d, 0x65, 0x20, 0x36, 0x20, 0x72,
    0x65, 0x71, 0x75, 0x65, 0x73, 0x74,
];

/// A 48-byte payload standing for an NTP server reply (LI 0, VN 4, mode 4,
/// stratum 1, precision 2^-23), as the same script wrote it.
pub(crate) const NTP_REPLY_PAYLOAD: [u8; 48] = {
    let mut p = [0; 48];
    p[0] = 0x24;
    p[1] = 1;
    p[3] = 0xe9;
    p
};

/// The verdict without the borrowed frame, for tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Ours,
    Pass(PassReason),
    Drop(DropReason),
}

fn verdict(frame: &[u8], served: &Served) -> Want {
    match parse(frame, served) {
        Verdict::Ours(_) => Want::Ours,
        Verdict::Pass(r) => Want::Pass(r),
        Verdict::Drop(r) => Want::Drop(r),
    }
}

fn ntp() -> Served {
    Served::ports(&[123])
}

fn lab() -> Served {
    Served::ports(&[4123])
}

/// Recomputes the IPv4 header checksum of an IPv4 frame (any header length).
fn fix_ipv4_header(frame: &mut [u8]) {
    let header_len = usize::from(frame[14] & 0x0f) * 4;
    frame[24..26].fill(0);
    let sum = internet_checksum(&frame[14..14 + header_len]);
    frame[24..26].copy_from_slice(&sum.to_be_bytes());
}

/// Recomputes the UDP checksum of an option-less IPv4 or IPv6 frame over
/// the whole IP payload.
fn fix_udp(frame: &mut [u8]) {
    let (udp_at, mut pseudo) = if frame[12] == 0x08 {
        (34, frame[26..34].to_vec())
    } else {
        (54, frame[22..54].to_vec())
    };
    let udp_len = frame.len() - udp_at;
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&(udp_len as u16).to_be_bytes());
    frame[udp_at + 6..udp_at + 8].fill(0);
    pseudo.extend_from_slice(&frame[udp_at..]);
    let sum = match internet_checksum(&pseudo) {
        0 => 0xffff,
        s => s,
    };
    frame[udp_at + 6..udp_at + 8].copy_from_slice(&sum.to_be_bytes());
}

fn edited(base: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut frame = base.to_vec();
    edit(&mut frame);
    frame
}

#[test]
fn ntp_requests_parse_with_their_addresses_and_payload() {
    for (frame, source, destination) in [
        (&NTP_REQUEST_V4[..], "192.0.2.10:40000", "198.51.100.1:123"),
        (
            &NTP_REQUEST_V6[..],
            "[2001:db8::10]:40000",
            "[2001:db8::1]:123",
        ),
    ] {
        let Verdict::Ours(request) = parse(frame, &ntp()) else {
            panic!("{:?}", parse(frame, &ntp()));
        };
        let to = request.addressing();
        assert_eq!(to.source(), source.parse().expect("address"));
        assert_eq!(to.destination(), destination.parse().expect("address"));
        assert_eq!(to.source_mac(), [0x00, 0x00, 0x5e, 0x00, 0x53, 0x01]);
        assert_eq!(to.destination_mac(), [0x00, 0x00, 0x5e, 0x00, 0x53, 0x02]);
        assert_eq!((to.hop_limit(), to.traffic_class()), (64, 0));
        assert_eq!(request.payload().len(), 48);
        assert_eq!(request.payload()[0], 0x23);
        assert_eq!(request.payload_range().end, frame.len());
    }
}

#[test]
fn kernel_captured_frames_parse() {
    for (frame, source, text) in [
        (
            &CAPTURED_V4[..],
            "10.201.7.1:54365",
            &b"authtime-frame 4 request"[..],
        ),
        (
            &CAPTURED_V6[..],
            "[fd00:201::1]:44515",
            b"authtime-frame 6 request",
        ),
    ] {
        let Verdict::Ours(request) = parse(frame, &lab()) else {
            panic!("{:?}", parse(frame, &lab()));
        };
        assert_eq!(request.source(), source.parse().expect("address"));
        assert_eq!(request.destination().port(), 4123);
        assert_eq!(request.payload(), text);
        // Not ours on another port, or on a served port at another address.
        assert_eq!(verdict(frame, &ntp()), Want::Pass(PassReason::OtherPort));
        let other: std::net::SocketAddr = if frame[12] == 0x08 {
            "10.201.7.9:4123".parse().expect("address")
        } else {
            "[fd00:201::9]:4123".parse().expect("address")
        };
        assert_eq!(
            verdict(frame, &Served::new([other])),
            Want::Pass(PassReason::OtherAddress)
        );
    }
}

#[test]
fn replies_are_the_known_frames_both_ways() {
    for (request, reply) in [
        (&NTP_REQUEST_V4[..], &NTP_REPLY_V4[..]),
        (&NTP_REQUEST_V6[..], &NTP_REPLY_V6[..]),
    ] {
        let Verdict::Ours(parsed) = parse(request, &ntp()) else {
            panic!("request does not parse");
        };
        let to = *parsed.addressing();
        let mut buf = [0xee; 1514];
        let len = build_reply(&to, &NTP_REPLY_PAYLOAD, &mut buf).expect("room");
        assert_eq!(&buf[..len], reply);
        assert!(buf[len..].iter().all(|&b| b == 0xee));
        let mut in_place = [0x11; 1514];
        let at = reply_payload_offset(&to);
        in_place[at..at + 48].copy_from_slice(&NTP_REPLY_PAYLOAD);
        assert_eq!(finish_reply(&to, &mut in_place, 48), Ok(len));
        assert_eq!(&in_place[..len], reply);
        assert_eq!(
            build_reply(&to, &NTP_REPLY_PAYLOAD, &mut buf[..len - 1]),
            Err(BuildError::BufferTooSmall {
                needed: len,
                available: len - 1
            })
        );
    }
}

#[test]
fn every_truncation_has_its_reason() {
    for (frame, served, udp_at) in [
        (&NTP_REQUEST_V4[..], ntp(), 34),
        (&NTP_REQUEST_V6[..], ntp(), 54),
        (&CAPTURED_V4[..], lab(), 34),
        (&CAPTURED_V6[..], lab(), 54),
    ] {
        for len in 0..frame.len() {
            let want = if len < udp_at + 4 {
                // The destination port is not there: perhaps not ours.
                Want::Pass(PassReason::Short)
            } else {
                Want::Drop(DropReason::Short)
            };
            assert_eq!(verdict(&frame[..len], &served), want, "cut at {len}");
        }
        assert_eq!(verdict(frame, &served), Want::Ours);
    }
}

#[test]
fn ethernet_padding_after_the_packet_is_not_payload() {
    for (frame, served) in [(&CAPTURED_V4[..], lab()), (&CAPTURED_V6[..], lab())] {
        let padded = edited(frame, |f| f.extend_from_slice(&[0; 20]));
        let Verdict::Ours(request) = parse(&padded, &served) else {
            panic!("padded frame");
        };
        assert_eq!(request.payload().len(), 24);
    }
}

#[test]
fn ipv4_variants() {
    let base = &NTP_REQUEST_V4[..];
    let cases: Vec<(&str, Vec<u8>, Want)> = vec![
        ("as is", base.to_vec(), Want::Ours),
        (
            "arp",
            edited(base, |f| f[12..14].copy_from_slice(&[0x08, 0x06])),
            Want::Pass(PassReason::NotIp),
        ),
        (
            "802.1Q tag",
            edited(base, |f| {
                f.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
            }),
            Want::Pass(PassReason::Vlan),
        ),
        (
            "version 6 header",
            edited(base, |f| f[14] = 0x65),
            Want::Pass(PassReason::BadIpHeader),
        ),
        (
            "header length 16",
            edited(base, |f| f[14] = 0x44),
            Want::Pass(PassReason::BadIpHeader),
        ),
        (
            "options (a 4-byte NOP row)",
            edited(base, |f| {
                f.splice(34..34, [1, 1, 1, 0]);
                f[14] = 0x46;
                f[16..18].copy_from_slice(&80u16.to_be_bytes());
                fix_ipv4_header(f);
            }),
            Want::Pass(PassReason::IpOptions),
        ),
        (
            "tcp",
            edited(base, |f| f[23] = 6),
            Want::Pass(PassReason::NotUdp),
        ),
        (
            "icmp",
            edited(base, |f| f[23] = 1),
            Want::Pass(PassReason::NotUdp),
        ),
        (
            "more fragments",
            edited(base, |f| f[20] = 0x20),
            Want::Pass(PassReason::Fragment),
        ),
        (
            "fragment offset",
            edited(base, |f| f[21] = 0xb9),
            Want::Pass(PassReason::Fragment),
        ),
        (
            "no DF flag",
            edited(base, |f| {
                f[20] = 0;
                fix_ipv4_header(f);
            }),
            Want::Ours,
        ),
        (
            "other port",
            edited(base, |f| f[37] = 124),
            Want::Pass(PassReason::OtherPort),
        ),
        (
            "multicast destination",
            edited(base, |f| {
                f[30..34].copy_from_slice(&[224, 0, 1, 1]);
                fix_ipv4_header(f);
            }),
            Want::Pass(PassReason::BadDestination),
        ),
        (
            "broadcast destination",
            edited(base, |f| {
                f[30..34].fill(0xff);
                fix_ipv4_header(f);
            }),
            Want::Pass(PassReason::BadDestination),
        ),
        (
            "broadcast MAC",
            edited(base, |f| f[0..6].fill(0xff)),
            Want::Pass(PassReason::BadDestination),
        ),
        (
            "total length 27",
            edited(base, |f| {
                f[16..18].copy_from_slice(&27u16.to_be_bytes());
                fix_ipv4_header(f);
            }),
            Want::Drop(DropReason::BadLength),
        ),
        (
            "total length past the frame",
            edited(base, |f| {
                f[17] += 1;
                fix_ipv4_header(f);
            }),
            Want::Drop(DropReason::Short),
        ),
        (
            "total length one short of the UDP length",
            edited(base, |f| {
                f[17] -= 1;
                fix_ipv4_header(f);
            }),
            Want::Drop(DropReason::BadLength),
        ),
        (
            "bad header checksum",
            edited(base, |f| f[25] ^= 1),
            Want::Drop(DropReason::BadIpChecksum),
        ),
        (
            "UDP length + 1",
            edited(base, |f| f[39] += 1),
            Want::Drop(DropReason::BadLength),
        ),
        (
            "UDP length - 1",
            edited(base, |f| f[39] -= 1),
            Want::Drop(DropReason::BadLength),
        ),
        (
            "UDP length 0",
            edited(base, |f| f[38..40].fill(0)),
            Want::Drop(DropReason::BadLength),
        ),
        (
            "bad UDP checksum",
            edited(base, |f| f[41] ^= 1),
            Want::Drop(DropReason::BadUdpChecksum),
        ),
        (
            "a payload bit flipped",
            edited(base, |f| f[60] ^= 8),
            Want::Drop(DropReason::BadUdpChecksum),
        ),
        (
            "zero UDP checksum",
            edited(base, |f| f[40..42].fill(0)),
            Want::Ours,
        ),
        (
            "multicast source MAC",
            edited(base, |f| f[6] = 0x01),
            Want::Drop(DropReason::BadSourceMac),
        ),
        (
            "zero source MAC",
            edited(base, |f| f[6..12].fill(0)),
            Want::Drop(DropReason::BadSourceMac),
        ),
        (
            "loopback source",
            edited(base, |f| {
                f[26..30].copy_from_slice(&[127, 0, 0, 1]);
                fix_ipv4_header(f);
                fix_udp(f);
            }),
            Want::Drop(DropReason::BadSourceAddress),
        ),
        (
            "unspecified source",
            edited(base, |f| {
                f[26..30].fill(0);
                fix_ipv4_header(f);
                fix_udp(f);
            }),
            Want::Drop(DropReason::BadSourceAddress),
        ),
        (
            "multicast source",
            edited(base, |f| {
                f[26..30].copy_from_slice(&[239, 1, 2, 3]);
                fix_ipv4_header(f);
                fix_udp(f);
            }),
            Want::Drop(DropReason::BadSourceAddress),
        ),
        (
            "source port 0",
            edited(base, |f| {
                f[34..36].fill(0);
                fix_udp(f);
            }),
            Want::Drop(DropReason::SourcePortZero),
        ),
    ];
    for (name, frame, want) in cases {
        assert_eq!(verdict(&frame, &ntp()), want, "{name}");
    }
}

#[test]
fn ipv6_variants() {
    let base = &NTP_REQUEST_V6[..];
    let source = |f: &mut Vec<u8>, ip: &str| {
        let ip: std::net::Ipv6Addr = ip.parse().expect("address");
        f[22..38].copy_from_slice(&ip.octets());
        fix_udp(f);
    };
    let cases: Vec<(&str, Vec<u8>, Want)> = vec![
        ("as is", base.to_vec(), Want::Ours),
        (
            "802.1ad tag",
            edited(base, |f| {
                f.splice(12..12, [0x88, 0xa8, 0x00, 0x05]);
            }),
            Want::Pass(PassReason::Vlan),
        ),
        (
            "version 4 header",
            edited(base, |f| f[14] = 0x40),
            Want::Pass(PassReason::BadIpHeader),
        ),
        (
            "hop-by-hop header",
            edited(base, |f| {
                f.splice(54..54, [17, 0, 1, 4, 0, 0, 0, 0]);
                f[20] = 0;
                f[19] += 8;
            }),
            Want::Pass(PassReason::Ipv6Extension),
        ),
        (
            "fragment header",
            edited(base, |f| {
                f.splice(54..54, [17, 0, 0, 1, 0, 0, 0, 7]);
                f[20] = 44;
                f[19] += 8;
            }),
            Want::Pass(PassReason::Fragment),
        ),
        (
            "icmpv6",
            edited(base, |f| f[20] = 58),
            Want::Pass(PassReason::NotUdp),
        ),
        (
            "no next header",
            edited(base, |f| f[20] = 59),
            Want::Pass(PassReason::NotUdp),
        ),
        (
            "other port",
            edited(base, |f| f[57] = 124),
            Want::Pass(PassReason::OtherPort),
        ),
        (
            "multicast destination",
            edited(base, |f| {
                f[38] = 0xff;
                fix_udp(f);
            }),
            Want::Pass(PassReason::BadDestination),
        ),
        (
            "multicast MAC",
            edited(base, |f| f[0..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1])),
            Want::Pass(PassReason::BadDestination),
        ),
        (
            "payload length 7",
            edited(base, |f| f[19] = 7),
            Want::Drop(DropReason::BadLength),
        ),
        (
            "payload length 0 (jumbogram)",
            edited(base, |f| f[19] = 0),
            Want::Drop(DropReason::BadLength),
        ),
        (
            "payload length past the frame",
            edited(base, |f| f[19] += 1),
            Want::Drop(DropReason::Short),
        ),
        (
            "payload length - 1",
            edited(base, |f| f[19] -= 1),
            Want::Drop(DropReason::BadLength),
        ),
        (
            "UDP length - 1",
            edited(base, |f| f[59] -= 1),
            Want::Drop(DropReason::BadLength),
        ),
        (
            "bad UDP checksum",
            edited(base, |f| f[61] ^= 0x10),
            Want::Drop(DropReason::BadUdpChecksum),
        ),
        (
            "a source bit flipped",
            edited(base, |f| f[37] ^= 2),
            Want::Drop(DropReason::BadUdpChecksum),
        ),
        (
            "zero UDP checksum",
            edited(base, |f| f[60..62].fill(0)),
            Want::Drop(DropReason::MissingUdpChecksum),
        ),
        (
            "broadcast source MAC",
            edited(base, |f| f[6..12].fill(0xff)),
            Want::Drop(DropReason::BadSourceMac),
        ),
        (
            "loopback source",
            edited(base, |f| source(f, "::1")),
            Want::Drop(DropReason::BadSourceAddress),
        ),
        (
            "unspecified source",
            edited(base, |f| source(f, "::")),
            Want::Drop(DropReason::BadSourceAddress),
        ),
        (
            "multicast source",
            edited(base, |f| source(f, "ff02::1")),
            Want::Drop(DropReason::BadSourceAddress),
        ),
        (
            "IPv4-mapped source",
            edited(base, |f| source(f, "::ffff:192.0.2.10")),
            Want::Drop(DropReason::BadSourceAddress),
        ),
        (
            "link-local source",
            edited(base, |f| source(f, "fe80::10")),
            Want::Ours,
        ),
        (
            "source port 0",
            edited(base, |f| {
                f[54..56].fill(0);
                fix_udp(f);
            }),
            Want::Drop(DropReason::SourcePortZero),
        ),
    ];
    for (name, frame, want) in cases {
        assert_eq!(verdict(&frame, &ntp()), want, "{name}");
    }
}
