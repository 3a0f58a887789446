//! The server's handling of single datagrams: what it answers, what it drops,
//! and what it counts.

use authtime_keys::{KeyMaterial, KeySet, KeyType};
use authtime_proto::{
    AuthFailurePolicy, ClientConfig, DropReason, RateVerdict, Server, ServerAction, ServerConfig,
    ServerCounters, build_request,
};
use authtime_wire::{
    ExtensionField, Header, KissCode, LeapIndicator, Mode, NtpShort, NtpTimestamp, Packet,
    PacketWriter, ReferenceId, Trailer, WireError,
};

const RECV: NtpTimestamp = NtpTimestamp::from_parts(3_900_000_000, 0x4000_0000);
const TX: NtpTimestamp = NtpTimestamp::from_parts(3_900_000_000, 0x4000_1000);
const CLIENT_TX: NtpTimestamp = NtpTimestamp::from_parts(0x1234_5678, 0x9abc_def0);

fn keys() -> KeySet {
    KeySet::new(&[
        KeyMaterial::new(1, KeyType::Md5, &[1; 16]),
        KeyMaterial::new(2, KeyType::Sha1, &[2; 20]),
        KeyMaterial::new(3, KeyType::Aes128Cmac, &[3; 16]),
        KeyMaterial::new(4, KeyType::Sha256, &[4; 32]),
        KeyMaterial::new(5, KeyType::Aes256Cmac, &[5; 32]),
    ])
    .expect("keys")
}

fn request(keys: &KeySet, key_id: Option<u32>, version: u8) -> Vec<u8> {
    let config = ClientConfig {
        version,
        ..ClientConfig::default()
    };
    let mut buf = [0u8; 128];
    let (n, _) = build_request(
        &config,
        CLIENT_TX,
        key_id.and_then(|id| keys.get(id)),
        &mut buf,
    )
    .expect("request");
    buf[..n].to_vec()
}

fn handle(
    server: &Server,
    keys: &KeySet,
    req: &[u8],
    stats: &mut ServerCounters,
) -> (ServerAction, Vec<u8>) {
    let mut out = [0u8; 1500];
    let action = server.handle(req, RECV, TX, keys, &mut out, stats);
    let len = match action {
        ServerAction::Send(len) => len,
        ServerAction::Drop(_) => 0,
    };
    (action, out[..len].to_vec())
}

#[test]
fn plain_request_gets_a_plain_reply_with_configured_fields() {
    let keys = keys();
    let config = ServerConfig {
        stratum: 3,
        reference_id: ReferenceId([192, 0, 2, 7]),
        reference_ts: NtpTimestamp::from_parts(3_899_999_000, 0),
        precision: -24,
        leap: LeapIndicator::InsertSecond,
        root_delay: NtpShort::from_seconds_f64(0.0125),
        root_dispersion: NtpShort::from_seconds_f64(0.002),
        ..ServerConfig::default()
    };
    let server = Server::new(config);
    let mut stats = ServerCounters::default();
    let req = request(&keys, None, 4);
    let (action, reply) = handle(&server, &keys, &req, &mut stats);
    assert_eq!(action, ServerAction::Send(48));
    let p = Packet::decode(&reply).expect("reply");
    let h = p.header();
    assert_eq!(
        (h.mode, h.version, h.stratum, h.precision, h.poll),
        (Mode::Server, 4, 3, -24, 6)
    );
    assert_eq!(h.leap, LeapIndicator::InsertSecond);
    assert_eq!(h.reference_id, ReferenceId([192, 0, 2, 7]));
    assert_eq!(h.reference_ts, config.reference_ts);
    assert_eq!(h.root_delay, config.root_delay);
    assert_eq!(h.root_dispersion, config.root_dispersion);
    // The lowest bit of the receive timestamp is set, that of the transmit
    // timestamp cleared (the interleaved-mode marker; RECV and TX have it clear).
    assert_eq!(
        (h.origin_ts, h.receive_ts, h.transmit_ts),
        (CLIENT_TX, NtpTimestamp::from_bits(RECV.to_bits() | 1), TX)
    );
    assert_eq!(p.trailer(), Trailer::None);
    assert_eq!((stats.received, stats.answered_plain), (1, 1));
}

#[test]
fn authenticated_requests_get_replies_under_the_same_key_and_no_larger() {
    let keys = keys();
    let server = Server::default();
    let mut stats = ServerCounters::default();
    for (key_id, version, digest_len) in [
        (1, 4, 16),
        (2, 4, 20),
        (3, 4, 16),
        (4, 4, 20),
        (4, 3, 32),
        (5, 4, 16),
        (1, 3, 16),
        (2, 2, 20),
    ] {
        let req = request(&keys, Some(key_id), version);
        let (action, reply) = handle(&server, &keys, &req, &mut stats);
        assert_eq!(
            action,
            ServerAction::Send(req.len()),
            "key {key_id} v{version}"
        );
        let p = Packet::decode(&reply).expect("reply");
        assert_eq!(p.header().version, version);
        let Trailer::Mac(mac) = p.trailer() else {
            panic!("no MAC")
        };
        assert_eq!((mac.key_id, mac.digest.len()), (key_id, digest_len));
        let tag = keys
            .get(key_id)
            .expect("key")
            .mac()
            .compute(&[], p.authenticated_bytes())
            .expect("tag");
        assert_eq!(mac.digest, &tag.as_bytes()[..digest_len]);
    }
    assert_eq!(stats.answered_authenticated, 8);
}

#[test]
fn failed_authentication_is_dropped_by_default_and_naked_on_request() {
    let keys = keys();
    let mut bad = request(&keys, Some(3), 4);
    let last = bad.len() - 1;
    bad[last] ^= 0x80;
    let mut unknown = request(&keys, Some(3), 4);
    unknown[48..52].copy_from_slice(&9u32.to_be_bytes());
    let mut wrong_len = request(&keys, Some(1), 4);
    wrong_len[48..52].copy_from_slice(&2u32.to_be_bytes());

    let mut stats = ServerCounters::default();
    let drop_server = Server::default();
    let cases = [
        (&bad, DropReason::BadMac { key_id: 3 }),
        (&unknown, DropReason::UnknownKey { key_id: 9 }),
        (&wrong_len, DropReason::BadMac { key_id: 2 }),
    ];
    for (req, reason) in &cases {
        assert_eq!(
            handle(&drop_server, &keys, req, &mut stats).0,
            ServerAction::Drop(*reason)
        );
    }
    assert_eq!(stats.drops("bad_mac"), 2);
    assert_eq!(stats.drops("unknown_key"), 1);
    assert_eq!(stats.mac_failures.get(&9), Some(&1));

    let nak_server = Server::new(ServerConfig {
        auth_failure: AuthFailurePolicy::CryptoNak,
        ..ServerConfig::default()
    });
    let mut stats = ServerCounters::default();
    for (req, _) in &cases {
        let (action, reply) = handle(&nak_server, &keys, req, &mut stats);
        assert_eq!(action, ServerAction::Send(52));
        let p = Packet::decode(&reply).expect("nak");
        assert_eq!(p.trailer(), Trailer::CryptoNak);
        assert_eq!(p.header().origin_ts, CLIENT_TX);
    }
    assert_eq!(stats.crypto_naks, 3);
    assert_eq!(stats.answered_plain, 3);
    assert_eq!(stats.mac_failures.values().sum::<u64>(), 3);
}

#[test]
fn only_client_requests_of_versions_1_to_4_are_answered() {
    let keys = keys();
    let server = Server::default();
    let mut stats = ServerCounters::default();
    for mode in 0..8u8 {
        let mut req = request(&keys, None, 4);
        req[0] = (req[0] & !7) | mode;
        let (action, _) = handle(&server, &keys, &req, &mut stats);
        if mode == 3 {
            assert_eq!(action, ServerAction::Send(48));
        } else {
            assert_eq!(
                action,
                ServerAction::Drop(DropReason::NotARequest {
                    mode: Mode::from_bits(mode)
                })
            );
        }
    }
    for version in [0u8, 5, 6, 7] {
        let mut req = request(&keys, None, 4);
        req[0] = (req[0] & !0x38) | (version << 3);
        assert_eq!(
            handle(&server, &keys, &req, &mut stats).0,
            ServerAction::Drop(DropReason::UnsupportedVersion { version })
        );
    }
}

#[test]
fn malformed_datagrams_are_dropped_and_counted() {
    let keys = keys();
    let server = Server::default();
    let mut stats = ServerCounters::default();
    let good = request(&keys, Some(1), 4);
    let mut cases: Vec<(Vec<u8>, WireError)> = vec![
        (Vec::new(), WireError::HeaderTooShort { len: 0 }),
        (good[..47].to_vec(), WireError::HeaderTooShort { len: 47 }),
        (
            good[..50].to_vec(),
            WireError::NotMultipleOfFour { len: 50 },
        ),
        (
            good[..56].to_vec(),
            WireError::UnparsableTrailer { offset: 48, len: 8 },
        ),
        (good[..52].to_vec(), WireError::CryptoNakKeyId { key_id: 1 }),
    ];
    // A MAC of the wrong size: 28 bytes are read as an extension field.
    let mut long_mac = good.clone();
    long_mac.extend_from_slice(&[0; 8]);
    cases.push((
        long_mac,
        WireError::ExtensionFieldTooShort {
            offset: 48,
            length: 1,
        },
    ));
    // Extension field lengths: too short, misaligned, huge.
    for (length, error) in [
        (
            8u16,
            WireError::ExtensionFieldTooShort {
                offset: 48,
                length: 8,
            },
        ),
        (
            30,
            WireError::ExtensionFieldMisaligned {
                offset: 48,
                length: 30,
            },
        ),
        (
            0xfff0,
            WireError::ExtensionFieldOverrun {
                offset: 48,
                length: 0xfff0,
                available: 32,
            },
        ),
    ] {
        let mut req = good[..48].to_vec();
        req.extend_from_slice(&[0x01, 0x04]);
        req.extend_from_slice(&length.to_be_bytes());
        req.extend_from_slice(&[0; 28]);
        cases.push((req, error));
    }
    for (req, error) in &cases {
        assert_eq!(
            handle(&server, &keys, req, &mut stats).0,
            ServerAction::Drop(DropReason::Malformed(*error)),
            "{error}"
        );
    }
    assert_eq!(stats.drops("malformed"), cases.len() as u64);
    assert_eq!(stats.received, cases.len() as u64);
}

#[test]
fn extension_fields_are_covered_by_the_mac_and_not_echoed() {
    let keys = keys();
    let mut header = Header::new(Mode::Client);
    header.transmit_ts = CLIENT_TX;
    let mut buf = [0u8; 256];
    let mut w = PacketWriter::new(&mut buf, &header).expect("header");
    w.push_extension_field(ExtensionField {
        field_type: 0x2005,
        value: &[0xee; 28],
    })
    .expect("ef");
    let key = keys.get(2).expect("key");
    let tag = key
        .mac()
        .compute(&[], w.authenticated_bytes())
        .expect("tag");
    let n = w.finish_with_mac(2, tag.as_bytes()).expect("mac");
    let server = Server::default();
    let mut stats = ServerCounters::default();
    let (action, reply) = handle(&server, &keys, &buf[..n], &mut stats);
    assert_eq!(action, ServerAction::Send(72));
    assert!(
        Packet::decode(&reply)
            .expect("reply")
            .extension_fields()
            .is_empty()
    );
    // Changing the extension field breaks the MAC.
    buf[60] ^= 1;
    assert_eq!(
        handle(&server, &keys, &buf[..n], &mut stats).0,
        ServerAction::Drop(DropReason::BadMac { key_id: 2 })
    );
}

#[test]
fn crypto_nak_requests_and_unauthenticated_ones_under_required_auth_are_dropped() {
    let keys = keys();
    let mut nak = request(&keys, None, 4);
    nak.extend_from_slice(&[0; 4]);
    let mut stats = ServerCounters::default();
    assert_eq!(
        handle(&Server::default(), &keys, &nak, &mut stats).0,
        ServerAction::Drop(DropReason::CryptoNakInRequest)
    );
    let strict = Server::new(ServerConfig {
        require_authentication: true,
        ..ServerConfig::default()
    });
    assert_eq!(
        handle(&strict, &keys, &request(&keys, None, 4), &mut stats).0,
        ServerAction::Drop(DropReason::Unauthenticated)
    );
    assert!(matches!(
        handle(&strict, &keys, &request(&keys, Some(5), 4), &mut stats).0,
        ServerAction::Send(68)
    ));
}

#[test]
fn output_buffer_too_small_is_a_drop_not_a_panic() {
    let keys = keys();
    let req = request(&keys, Some(2), 4);
    let mut out = [0u8; 60];
    let mut stats = ServerCounters::default();
    assert_eq!(
        Server::default().handle(&req, RECV, TX, &keys, &mut out, &mut stats),
        ServerAction::Drop(DropReason::OutputTooSmall)
    );
}

#[test]
fn rate_limited_requests_get_a_kiss_or_nothing() {
    let keys = keys();
    let server = Server::default();
    let mut stats = ServerCounters::default();
    let req = request(&keys, Some(1), 4);
    let mut out = [0u8; 128];
    let action = server.handle_limited(
        &req,
        RateVerdict::Kiss,
        RECV,
        TX,
        &keys,
        &mut out,
        &mut stats,
    );
    assert_eq!(action, ServerAction::Send(68));
    let p = Packet::decode(&out[..68]).expect("kiss");
    assert_eq!(p.header().kiss_code(), Some(KissCode::RATE));
    assert_eq!(p.header().leap, LeapIndicator::Unsynchronized);
    assert!(matches!(p.trailer(), Trailer::Mac(m) if m.key_id == 1));
    assert_eq!(
        server.handle_limited(
            &req,
            RateVerdict::Drop,
            RECV,
            TX,
            &keys,
            &mut out,
            &mut stats
        ),
        ServerAction::Drop(DropReason::RateLimited)
    );
    assert_eq!(
        server.handle_limited(
            &req,
            RateVerdict::Allow,
            RECV,
            TX,
            &keys,
            &mut out,
            &mut stats
        ),
        ServerAction::Send(68)
    );
    assert_eq!(stats.rate_limited, 2);
    assert_eq!(stats.received, 3);
    let deny = server.kiss(&req, KissCode::DENY, RECV, TX, &keys, &mut out, &mut stats);
    assert_eq!(deny, ServerAction::Send(68));
    assert_eq!(
        Packet::decode(&out[..68])
            .expect("deny")
            .header()
            .kiss_code(),
        Some(KissCode::DENY)
    );
}
