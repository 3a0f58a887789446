//! Random frames, seeded: requests written by an encoder of this test's own
//! (textbook checksum loop, no code shared with the crate) parse to what
//! was written; replies built to them parse back, as their recipient sees
//! them, with everything swapped; and random mutations of either never make
//! the parser panic or call a broken frame ours.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use authtime_frame::{
    Served, Verdict, build_reply, finish_reply, parse, reply_len, reply_payload_offset,
};

/// xorshift64: reproducible, and enough to spread addresses and lengths.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        std::array::from_fn(|_| self.next() as u8)
    }
}

/// RFC 1071 the slow way: 16 bits at a time, carries folded at the end.
fn textbook_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    for pair in bytes.chunks(2) {
        sum += u64::from(pair[0]) << 8 | u64::from(*pair.get(1).unwrap_or(&0));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A random request: addresses a reply can use, ports other than 0.
#[derive(Debug, Clone)]
struct Request {
    source_mac: [u8; 6],
    destination_mac: [u8; 6],
    source: SocketAddr,
    destination: SocketAddr,
    ttl: u8,
    payload: Vec<u8>,
}

fn unicast_mac(rng: &mut Rng) -> [u8; 6] {
    let mut mac = rng.bytes::<6>();
    mac[0] = (mac[0] & 0xfe) | 0x02;
    mac
}

fn random_request(rng: &mut Rng, v6: bool) -> Request {
    let ip = |rng: &mut Rng| -> IpAddr {
        if v6 {
            let mut a = rng.bytes::<16>();
            a[0] = 0x20 | (a[0] & 0x0f); // 2000::/4, global unicast
            Ipv6Addr::from(a).into()
        } else {
            let mut a = rng.bytes::<4>();
            a[0] = 1 + (a[0] % 223); // 1.0.0.0 to 223.255.255.255
            if a[0] == 127 {
                a[0] = 10;
            }
            Ipv4Addr::from(a).into()
        }
    };
    let port = |rng: &mut Rng| 1 + rng.below(65535) as u16;
    let len = rng.below(1473);
    Request {
        source_mac: unicast_mac(rng),
        destination_mac: unicast_mac(rng),
        source: SocketAddr::new(ip(rng), port(rng)),
        destination: SocketAddr::new(ip(rng), port(rng)),
        ttl: rng.next() as u8,
        payload: (0..len).map(|_| rng.next() as u8).collect(),
    }
}

fn octets(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// The request as a frame, written field by field.
fn encode(r: &Request) -> Vec<u8> {
    let udp_len = 8 + r.payload.len();
    let mut udp = Vec::with_capacity(udp_len);
    udp.extend_from_slice(&r.source.port().to_be_bytes());
    udp.extend_from_slice(&r.destination.port().to_be_bytes());
    udp.extend_from_slice(&(udp_len as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(&r.payload);
    let mut pseudo = octets(r.source.ip());
    pseudo.extend(octets(r.destination.ip()));
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&(udp_len as u16).to_be_bytes());
    pseudo.extend_from_slice(&udp);
    let sum = match textbook_checksum(&pseudo) {
        0 => 0xffff,
        s => s,
    };
    udp[6..8].copy_from_slice(&sum.to_be_bytes());

    let mut frame = r.destination_mac.to_vec();
    frame.extend_from_slice(&r.source_mac);
    if r.source.is_ipv4() {
        frame.extend_from_slice(&[0x08, 0x00]);
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&((20 + udp_len) as u16).to_be_bytes());
        ip.extend_from_slice(&[0x12, 0x34, 0x40, 0, r.ttl, 17, 0, 0]);
        ip.extend(octets(r.source.ip()));
        ip.extend(octets(r.destination.ip()));
        let sum = textbook_checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        frame.extend(ip);
    } else {
        frame.extend_from_slice(&[0x86, 0xdd, 0x60, 0x01, 0x23, 0x45]);
        frame.extend_from_slice(&(udp_len as u16).to_be_bytes());
        frame.extend_from_slice(&[17, r.ttl]);
        frame.extend(octets(r.source.ip()));
        frame.extend(octets(r.destination.ip()));
    }
    frame.extend(udp);
    frame
}

#[test]
fn random_requests_parse_and_their_replies_parse_back_swapped() {
    let mut rng = Rng(0x00f7_a3e5_eed0_0031);
    for i in 0..3000 {
        let request = random_request(&mut rng, i % 2 == 1);
        let frame = encode(&request);
        let served = Served::new([request.destination]);
        let Verdict::Ours(parsed) = parse(&frame, &served) else {
            panic!("{request:?}: {:?}", parse(&frame, &served));
        };
        let to = *parsed.addressing();
        assert_eq!(to.source(), request.source);
        assert_eq!(to.destination(), request.destination);
        assert_eq!(to.source_mac(), request.source_mac);
        assert_eq!(to.destination_mac(), request.destination_mac);
        assert_eq!(to.hop_limit(), request.ttl);
        assert_eq!(parsed.payload(), &request.payload[..]);

        let len = rng.below(1473);
        let payload: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let mut buf = vec![0u8; 1600];
        let n = build_reply(&to, &payload, &mut buf).expect("room");
        assert_eq!(n, reply_len(&to, len));
        // What the test's own encoder writes for the reply, but for the
        // fields the builder sets its own way (IPv4 ID, IPv6 flow label).
        let mut want = encode(&Request {
            source_mac: request.destination_mac,
            destination_mac: request.source_mac,
            source: request.destination,
            destination: request.source,
            ttl: 64,
            payload: payload.clone(),
        });
        if request.source.is_ipv4() {
            want[18..20].fill(0);
            want[24..26].fill(0);
            let sum = textbook_checksum(&want[14..34]);
            want[24..26].copy_from_slice(&sum.to_be_bytes());
        } else {
            want[15..18].copy_from_slice(&[0, 0, 0]);
        }
        assert_eq!(&buf[..n], &want[..], "reply to {request:?}");

        let back = Served::new([request.source]);
        let Verdict::Ours(reply) = parse(&buf[..n], &back) else {
            panic!("reply to {request:?}: {:?}", parse(&buf[..n], &back));
        };
        assert_eq!(reply.source(), request.destination);
        assert_eq!(reply.destination(), request.source);
        assert_eq!(reply.payload(), &payload[..]);

        // In place: the same frame, whatever was in the buffer before.
        let mut in_place = vec![0xffu8; n];
        in_place[reply_payload_offset(&to)..].copy_from_slice(&payload);
        assert_eq!(finish_reply(&to, &mut in_place, len), Ok(n));
        assert_eq!(in_place, &buf[..n]);
    }
}

/// Bit flips, cut ends, inserted and removed bytes and edge values in
/// 16-bit fields: never a panic, and whatever still parses as ours goes
/// through the fuzz harness (a reply built both ways parses back swapped).
#[test]
fn random_mutations_never_panic() {
    let mut rng = Rng(0x0bad_f00d_0031);
    let mut ours = 0usize;
    for i in 0..4000 {
        let mut request = random_request(&mut rng, i % 2 == 0);
        // The fuzz harness serves port 123.
        if i % 4 < 2 {
            request.destination.set_port(123);
        }
        let mut frame = encode(&request);
        let served = if i % 3 == 0 {
            Served::ports(&[request.destination.port()])
        } else {
            Served::new([request.destination])
        };
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(frame.len());
            match rng.below(5) {
                0 => frame[at] ^= 1 << rng.below(8),
                1 => frame.truncate(at),
                2 => frame.insert(at, rng.next() as u8),
                3 => {
                    frame.remove(at);
                }
                _ if at + 2 <= frame.len() => {
                    let edge = [0u16, 1, 7, 8, 0x7fff, 0xffff][rng.below(6)];
                    frame[at..at + 2].copy_from_slice(&edge.to_be_bytes());
                }
                _ => frame.push(rng.next() as u8),
            }
            if frame.is_empty() {
                break;
            }
        }
        if let Verdict::Ours(_) = parse(&frame, &served) {
            ours += 1;
            authtime_frame::fuzz_harness::parse_build(&frame);
        }
        let random: Vec<u8> = (0..rng.below(120)).map(|_| rng.next() as u8).collect();
        let _ = parse(&random, &served);
    }
    // Some mutations (a payload byte and the checksum flipped to match, a
    // DF bit, a TTL) keep a frame ours; most do not.
    assert!(ours > 0 && ours < 4000, "{ours}");
}
