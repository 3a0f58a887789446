//! Server and client in memory: round trips for every AEAD and every rule of
//! RFC 8915 section 5.7 the server must enforce.

use authtime_nts::aead::AeadAlgorithm;
use authtime_nts::client::{
    ClientError, ClientOutcome, PendingRequest, build_request, check_response,
};
use authtime_nts::cookie::{SessionKeys, cookie_len, open_cookie, seal_cookie};
use authtime_nts::extension::{
    EF_AUTHENTICATOR, EF_COOKIE, EF_COOKIE_PLACEHOLDER, EF_UNIQUE_IDENTIFIER, NtsPacket, padded4,
};
use authtime_nts::key_ring::{KeyRing, RotationPolicy};
use authtime_nts::server::{NakReason, NtsDrop, NtsServer, ServerAction};
use authtime_wire::{Header, KissCode, Mode, NtpTimestamp, ReferenceId};

const DAY: u64 = 86_400;
const NOW: u64 = 20_000 * DAY + 4321;

/// A seeded xorshift: reproducible "randomness" for keys, nonces and cases.
struct TestRng(u64);

impl TestRng {
    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = (self.next() >> 24) as u8;
        }
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn as_fn(&mut self) -> impl FnMut(&mut [u8]) + '_ {
        |b: &mut [u8]| self.fill(b)
    }
}

struct Fixture {
    rng: TestRng,
    ring: KeyRing,
    keys: SessionKeys,
    cookie: Vec<u8>,
}

impl Fixture {
    fn new(alg: AeadAlgorithm) -> Self {
        let mut rng = TestRng(0x0123_4567_89ab_cdef ^ u64::from(alg.id()));
        let ring = KeyRing::new(RotationPolicy::default())
            .plan(NOW, &mut rng.as_fn())
            .expect("ring");
        let mut c2s = vec![0u8; alg.key_len()];
        let mut s2c = vec![0u8; alg.key_len()];
        rng.fill(&mut c2s);
        rng.fill(&mut s2c);
        let keys = SessionKeys::new(alg, &c2s, &s2c).expect("keys");
        let mut fx = Self {
            rng,
            ring,
            keys,
            cookie: Vec::new(),
        };
        fx.cookie = fx.seal_cookie_at(NOW);
        fx
    }

    fn seal_cookie_at(&mut self, now: u64) -> Vec<u8> {
        let mut cookie = vec![0u8; 256];
        let master = self.ring.sealing_key(now).expect("key");
        let n = seal_cookie(master, &self.keys, &mut self.rng.as_fn(), &mut cookie).expect("seal");
        cookie.truncate(n);
        cookie
    }

    fn request(&mut self, placeholders: usize) -> Vec<u8> {
        self.request_pending(placeholders).0
    }

    /// A request with the fixture's cookie and `placeholders`, and what the
    /// client keeps to check its reply.
    fn request_pending(&mut self, placeholders: usize) -> (Vec<u8>, PendingRequest) {
        let mut out = vec![0u8; 2048];
        let cookie = self.cookie.clone();
        let pending = build_request(
            &client_header(),
            &self.keys,
            &cookie,
            placeholders,
            &mut self.rng.as_fn(),
            &mut out,
        )
        .expect("request");
        out.truncate(pending.len());
        (out, pending)
    }

    fn respond_at(&mut self, request: &[u8], now: u64) -> (Result<ServerAction, NtsDrop>, Vec<u8>) {
        let mut out = vec![0u8; request.len().max(64)];
        let result = NtsServer::new().respond(
            request,
            &server_header(),
            &self.ring,
            now,
            &mut self.rng.as_fn(),
            &mut out,
        );
        let len = match result {
            Ok(ServerAction::Reply { len, .. } | ServerAction::Nak { len, .. }) => len,
            Err(_) => 0,
        };
        out.truncate(len);
        (result, out)
    }

    fn respond(&mut self, request: &[u8]) -> (Result<ServerAction, NtsDrop>, Vec<u8>) {
        self.respond_at(request, NOW)
    }

    /// A request assembled by hand: `before` fields, an authenticator over
    /// them (C2S) encrypting `encrypted`, then `after` fields.
    fn custom(&mut self, spec: &Custom) -> Vec<u8> {
        let mut packet = vec![0u8; 48];
        let mut w = authtime_wire::Writer::new(&mut packet);
        client_header().encode(&mut w).expect("header");
        for (t, body) in &spec.before {
            packet.extend(ef(*t, body));
        }
        let plaintext: Vec<u8> = spec.encrypted.iter().flat_map(|(t, b)| ef(*t, b)).collect();
        let mut nonce = vec![0u8; spec.nonce_len];
        self.rng.fill(&mut nonce);
        let mut ct = vec![0u8; plaintext.len() + 16];
        // A nonce the AEAD refuses (testing that path) gets a random "ciphertext".
        let n = match self.keys.c2s().seal(&nonce, &packet, &plaintext, &mut ct) {
            Ok(n) => n,
            Err(_) => {
                self.rng.fill(&mut ct);
                ct.len()
            }
        };
        ct.truncate(n);
        let mut body = Vec::new();
        body.extend_from_slice(&u16::try_from(nonce.len()).expect("nonce").to_be_bytes());
        body.extend_from_slice(&u16::try_from(ct.len()).expect("ct").to_be_bytes());
        body.extend_from_slice(&nonce);
        body.resize(4 + padded4(nonce.len()), 0);
        body.extend_from_slice(&ct);
        body.resize(
            4 + padded4(nonce.len()) + padded4(ct.len()) + spec.extra_padding,
            0,
        );
        packet.extend(ef(EF_AUTHENTICATOR, &body));
        for (t, body) in &spec.after {
            packet.extend(ef(*t, body));
        }
        packet
    }

    fn standard(&mut self) -> Custom {
        let mut uid = vec![0u8; 32];
        self.rng.fill(&mut uid);
        Custom {
            before: vec![
                (EF_UNIQUE_IDENTIFIER, uid),
                (EF_COOKIE, self.cookie.clone()),
            ],
            encrypted: vec![],
            after: vec![],
            nonce_len: 16,
            extra_padding: 0,
        }
    }
}

struct Custom {
    before: Vec<(u16, Vec<u8>)>,
    encrypted: Vec<(u16, Vec<u8>)>,
    after: Vec<(u16, Vec<u8>)>,
    nonce_len: usize,
    extra_padding: usize,
}

fn ef(field_type: u16, body: &[u8]) -> Vec<u8> {
    let mut v = field_type.to_be_bytes().to_vec();
    v.extend_from_slice(&u16::try_from(body.len() + 4).expect("len").to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn client_header() -> Header {
    let mut h = Header::new(Mode::Client);
    h.transmit_ts = NtpTimestamp::from_parts(0xeb00_0000, 0x1234_5678);
    h
}

fn server_header() -> Header {
    let mut h = Header::new(Mode::Server);
    h.stratum = 2;
    h.reference_id = ReferenceId([127, 0, 0, 1]);
    h.origin_ts = NtpTimestamp::from_parts(0xeb00_0000, 0x1234_5678);
    h.receive_ts = NtpTimestamp::from_parts(0xeb00_0001, 1);
    h.transmit_ts = NtpTimestamp::from_parts(0xeb00_0001, 2);
    h
}

fn assert_drop(result: Result<ServerAction, NtsDrop>, expected: NtsDrop) {
    assert_eq!(result, Err(expected));
}

fn assert_nak(
    fx: &Fixture,
    result: Result<ServerAction, NtsDrop>,
    reply: &[u8],
    uid: &[u8],
) -> NakReason {
    let Ok(ServerAction::Nak { reason, len }) = result else {
        panic!("expected a NAK, got {result:?}");
    };
    assert_eq!(len, reply.len());
    let packet = NtsPacket::parse(reply).expect("NAK parses");
    assert_eq!(packet.header().stratum, 0);
    assert_eq!(
        packet.header().reference_id,
        ReferenceId::from(KissCode::NTSN)
    );
    assert!(packet.authenticator().is_none(), "NAK has no authenticator");
    let fields: Vec<_> = packet.plaintext_fields().collect();
    assert_eq!(fields.len(), 1, "NAK carries only the UID");
    assert_eq!(fields[0].field_type, EF_UNIQUE_IDENTIFIER);
    assert_eq!(fields[0].value, uid);
    let _ = fx;
    reason
}

fn uid_of(request: &[u8]) -> Vec<u8> {
    NtsPacket::parse(request)
        .expect("parse")
        .plaintext_fields()
        .find(|f| f.field_type == EF_UNIQUE_IDENTIFIER)
        .expect("uid")
        .value
        .to_vec()
}

#[test]
fn round_trip_every_aead_and_placeholder_count() {
    for alg in AeadAlgorithm::ALL {
        let mut fx = Fixture::new(alg);
        for placeholders in 0..=7 {
            let (request, pending) = fx.request_pending(placeholders);
            let (result, reply) = fx.respond(&request);
            assert_eq!(
                result,
                Ok(ServerAction::Reply {
                    len: reply.len(),
                    cookies: 1 + placeholders
                }),
                "{alg} with {placeholders} placeholders"
            );
            assert!(reply.len() <= request.len());
            let outcome = check_response(&reply, &pending, &fx.keys).expect("client accepts");
            let ClientOutcome::Time { header, cookies } = outcome else {
                panic!("not a time reply");
            };
            assert_eq!(header, server_header());
            assert_eq!(cookies.len(), 1 + placeholders);
            for c in &cookies {
                assert_eq!(c.len(), cookie_len(alg));
                let keys = open_cookie(&fx.ring, NOW, c).expect("fresh cookie opens");
                assert_eq!(keys.algorithm(), alg);
            }
        }
    }
}

#[test]
fn siv_cmac_256_request_and_reply_sizes() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    assert_eq!(fx.cookie.len(), 104);
    // 48 header + 36 UID + 108 cookie + 40 authenticator.
    let request = fx.request(0);
    assert_eq!(request.len(), 232);
    let (_, reply) = fx.respond(&request);
    // 48 header + 36 UID + 4 + 4 + 16 nonce + 108 cookie EF + 16 tag.
    assert_eq!(reply.len(), 232);
    let request = fx.request(7);
    assert_eq!(request.len(), 232 + 7 * 108);
    let (_, reply) = fx.respond(&request);
    assert_eq!(reply.len(), 232 + 7 * 108);
    assert!(reply.len() < 1280);
}

#[test]
fn two_cookies_are_dropped() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let mut spec = fx.standard();
    spec.before.push((EF_COOKIE, fx.cookie.clone()));
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::MultipleCookies);
}

#[test]
fn missing_cookie_or_uid_is_dropped() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let mut spec = fx.standard();
    spec.before.retain(|(t, _)| *t != EF_COOKIE);
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::MissingCookie);

    let mut spec = fx.standard();
    spec.before.retain(|(t, _)| *t != EF_UNIQUE_IDENTIFIER);
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::MissingUniqueId);

    let mut spec = fx.standard();
    spec.before[0].1.truncate(28);
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::UniqueIdTooShort);

    let mut spec = fx.standard();
    let uid = spec.before[0].1.clone();
    spec.before.push((EF_UNIQUE_IDENTIFIER, uid));
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::DuplicateUniqueId);
}

#[test]
fn placeholder_of_wrong_length_is_dropped() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let mut spec = fx.standard();
    spec.before.push((EF_COOKIE_PLACEHOLDER, vec![0; 104]));
    spec.before.push((EF_COOKIE_PLACEHOLDER, vec![0; 100]));
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::PlaceholderLength);

    let mut spec = fx.standard();
    spec.encrypted.push((EF_COOKIE_PLACEHOLDER, vec![0; 108]));
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::PlaceholderLength);
}

#[test]
fn more_than_seven_placeholders_are_dropped() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let mut spec = fx.standard();
    for _ in 0..5 {
        spec.before.push((EF_COOKIE_PLACEHOLDER, vec![0; 104]));
    }
    for _ in 0..3 {
        spec.encrypted.push((EF_COOKIE_PLACEHOLDER, vec![0; 104]));
    }
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::TooManyPlaceholders);
    spec.before.pop();
    let request = fx.custom(&spec);
    assert!(matches!(
        fx.respond(&request).0,
        Ok(ServerAction::Reply { cookies: 8, .. })
    ));
}

#[test]
fn encrypted_placeholders_count_and_encrypted_cookies_are_refused() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let mut spec = fx.standard();
    spec.encrypted.push((EF_COOKIE_PLACEHOLDER, vec![0; 104]));
    spec.encrypted.push((0x7777, vec![1; 4]));
    let request = fx.custom(&spec);
    assert!(matches!(
        fx.respond(&request).0,
        Ok(ServerAction::Reply { cookies: 2, .. })
    ));
    let mut spec = fx.standard();
    spec.encrypted.push((EF_COOKIE, fx.cookie.clone()));
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::EncryptedCookie);
}

#[test]
fn fields_after_the_authenticator_do_not_count() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    // The cookie after the authenticator: as if there were none.
    let mut spec = fx.standard();
    let cookie = spec.before.remove(1);
    spec.after.push(cookie);
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::MissingCookie);
    // The UID after the authenticator.
    let mut spec = fx.standard();
    let uid = spec.before.remove(0);
    spec.after.push(uid);
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::MissingUniqueId);
}

#[test]
fn fields_after_the_authenticator_are_ignored() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let mut spec = fx.standard();
    spec.after.push((EF_COOKIE, vec![9; 104]));
    spec.after.push((EF_COOKIE_PLACEHOLDER, vec![0; 104]));
    spec.after.push((EF_AUTHENTICATOR, vec![0xff; 40]));
    let request = fx.custom(&spec);
    let (result, reply) = fx.respond(&request);
    assert!(matches!(result, Ok(ServerAction::Reply { cookies: 1, .. })));
    assert!(reply.len() <= request.len());
    // Trailing bytes that are not even extension fields are ignored too.
    let spec = fx.standard();
    let mut request = fx.custom(&spec);
    request.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef, 1, 2]);
    assert!(matches!(
        fx.respond(&request).0,
        Ok(ServerAction::Reply { .. })
    ));
}

#[test]
fn any_tampered_authenticated_byte_gets_no_reply() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let request = fx.request(1);
    let uid = uid_of(&request);
    let packet = NtsPacket::parse(&request).expect("parse");
    let ad_len = packet.associated_data().len();
    let mut naks = 0;
    for i in 0..request.len() {
        let mut bad = request.clone();
        bad[i] ^= 0x01;
        let (result, reply) = fx.respond(&bad);
        assert!(
            !matches!(result, Ok(ServerAction::Reply { .. })),
            "byte {i} (authenticated part ends at {ad_len}) was not covered"
        );
        if let Ok(ServerAction::Nak { .. }) = result {
            let bad_uid = uid_of(&bad);
            assert_nak(&fx, result, &reply, &bad_uid);
            naks += 1;
        }
    }
    assert!(naks > 100);
    // Tampering in the UID or the header's timestamps: authentication fails.
    let mut bad = request.clone();
    bad[60] ^= 0x80;
    let (result, reply) = fx.respond(&bad);
    let bad_uid = uid_of(&bad);
    assert_eq!(
        assert_nak(&fx, result, &reply, &bad_uid),
        NakReason::Unauthenticated
    );
    assert_ne!(bad_uid, uid);
}

#[test]
fn tampered_ciphertext_or_nonce_is_a_nak() {
    for alg in AeadAlgorithm::ALL {
        let mut fx = Fixture::new(alg);
        let request = fx.request(0);
        let uid = uid_of(&request);
        let auth_at = request.len() - 4 - 4 - alg.nonce_len() - 16;
        for i in auth_at + 8..request.len() {
            let mut bad = request.clone();
            bad[i] ^= 0x10;
            let (result, reply) = fx.respond(&bad);
            assert_eq!(
                assert_nak(&fx, result, &reply, &uid),
                NakReason::Unauthenticated
            );
        }
    }
}

#[test]
fn unknown_key_id_is_a_nak_the_client_accepts_unauthenticated() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    fx.cookie[..4].copy_from_slice(&0xdead_beefu32.to_be_bytes());
    let (request, pending) = fx.request_pending(0);
    let (result, reply) = fx.respond(&request);
    let reason = assert_nak(&fx, result, &reply, pending.unique_id());
    assert_eq!(reason, NakReason::UnknownKey { id: 0xdead_beef });
    assert!(matches!(
        check_response(&reply, &pending, &fx.keys),
        Ok(ClientOutcome::Nak {
            authenticated: false,
            ..
        })
    ));
    // A NAK for another request's UID is not believed.
    let (_, other) = fx.request_pending(0);
    assert_eq!(
        check_response(&reply, &other, &fx.keys),
        Err(ClientError::UniqueIdMismatch)
    );
}

#[test]
fn undecryptable_cookie_is_a_nak() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    fx.cookie[50] ^= 1;
    let request = fx.request(0);
    let uid = uid_of(&request);
    let (result, reply) = fx.respond(&request);
    assert_eq!(assert_nak(&fx, result, &reply, &uid), NakReason::BadCookie);
}

#[test]
fn rotation_keeps_old_cookies_valid_then_expires_them() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let request = fx.request(0);
    let uid = uid_of(&request);
    // Three days on, the ring rotated: the old cookie still works, and the
    // fresh cookies are sealed under the new key.
    let later = NOW + 3 * DAY;
    let mut ring = fx.ring.clone();
    for day in 1..=3 {
        if let Some(next) = ring.plan(NOW + day * DAY, &mut fx.rng.as_fn()) {
            ring = next;
        }
    }
    fx.ring = ring;
    let (result, reply) = fx.respond_at(&request, later);
    assert!(
        matches!(result, Ok(ServerAction::Reply { .. })),
        "{result:?}"
    );
    let packet = NtsPacket::parse(&reply).expect("reply");
    assert!(packet.authenticator().is_some());
    let fresh = fx.ring.sealing_key(later).expect("key").id();
    assert_eq!(fresh, 20_003);

    // Eight days on (seven old keys kept), the cookie's key is gone: NAK.
    let expired = NOW + 8 * DAY;
    let mut ring = fx.ring.clone();
    if let Some(next) = ring.plan(expired, &mut fx.rng.as_fn()) {
        ring = next;
    }
    assert!(ring.keys().iter().all(|k| k.id() != 20_000));
    fx.ring = ring;
    let (result, reply) = fx.respond_at(&request, expired);
    assert_eq!(
        assert_nak(&fx, result, &reply, &uid),
        NakReason::UnknownKey { id: 20_000 }
    );
}

#[test]
fn next_key_is_published_ahead() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    // A peer whose clock already turned to the next period seals under the
    // next key; this server, still in the current period, accepts it.
    fx.cookie = fx.seal_cookie_at(NOW + DAY);
    assert_eq!(
        u32::from_be_bytes(fx.cookie[..4].try_into().expect("id")),
        20_001
    );
    let request = fx.request(0);
    assert!(matches!(
        fx.respond_at(&request, NOW).0,
        Ok(ServerAction::Reply { .. })
    ));
}

#[test]
fn a_shared_ring_serves_cookies_of_another_server() {
    let mut fx = Fixture::new(AeadAlgorithm::Aes128GcmSiv);
    let request = fx.request(2);
    let blob = fx.ring.to_bytes();
    fx.ring = KeyRing::from_bytes(&blob).expect("load");
    assert!(matches!(
        fx.respond(&request).0,
        Ok(ServerAction::Reply { cookies: 3, .. })
    ));
}

#[test]
fn short_nonce_needs_additional_padding() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let mut spec = fx.standard();
    spec.nonce_len = 4;
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::NoncePadding);
    spec.extra_padding = 12;
    let request = fx.custom(&spec);
    assert!(matches!(
        fx.respond(&request).0,
        Ok(ServerAction::Reply { .. })
    ));
    // A 5-byte nonce pads to 8: 8 more bytes needed.
    spec.nonce_len = 5;
    spec.extra_padding = 4;
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::NoncePadding);
    spec.extra_padding = 8;
    let request = fx.custom(&spec);
    assert!(matches!(
        fx.respond(&request).0,
        Ok(ServerAction::Reply { .. })
    ));

    // GCM-SIV takes 12-byte nonces only.
    let mut fx = Fixture::new(AeadAlgorithm::Aes128GcmSiv);
    let mut spec = fx.standard();
    spec.nonce_len = 16;
    let request = fx.custom(&spec);
    assert_drop(fx.respond(&request).0, NtsDrop::NonceLength);
}

/// chrony's authenticator for AEAD 30 (nts_ntp_auth.c NNA_GenerateAuthEF, tags 4.6 and
/// 4.6.1): nonce length min(16, SIV_GetMaxNonceLength) = 12 (siv_nettle.c,
/// SIV_GCM_NONCE_SIZE), no nonce padding and no additional padding, since
/// min(NTS_MIN_UNPADDED_NONCE_LENGTH = 16, 12) - 12 = 0; a 32-byte unique identifier
/// (NTS_MIN_UNIQ_ID_LENGTH). We take it, and our client's own request has the same layout.
#[test]
fn chrony_gcm_siv_authenticator_layout_is_accepted() {
    let mut fx = Fixture::new(AeadAlgorithm::Aes128GcmSiv);
    assert_eq!(AeadAlgorithm::Aes128GcmSiv.nonce_len(), 12);
    assert_eq!(AeadAlgorithm::Aes128GcmSiv.required_padded_nonce_len(), 12);
    let mut spec = fx.standard();
    spec.nonce_len = 12;
    spec.extra_padding = 0;
    let request = fx.custom(&spec);
    assert!(matches!(
        fx.respond(&request).0,
        Ok(ServerAction::Reply { .. })
    ));
}

#[test]
fn non_nts_and_non_client_packets_are_dropped() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let mut request = fx.request(0);
    assert_drop(fx.respond(&request[..48]).0, NtsDrop::MissingAuthenticator);
    request[0] = (request[0] & !7) | 4;
    assert_drop(fx.respond(&request).0, NtsDrop::NotClientRequest);
    assert!(matches!(
        fx.respond(&[0u8; 20]).0,
        Err(NtsDrop::Malformed(_))
    ));
    let request = fx.request(0);
    let mut small = vec![0u8; request.len() - 4];
    let result = NtsServer::new().respond(
        &request,
        &server_header(),
        &fx.ring,
        NOW,
        &mut fx.rng.as_fn(),
        &mut small,
    );
    assert_eq!(result, Err(NtsDrop::BufferTooSmall));
}

#[test]
fn client_drops_replies_it_cannot_trust() {
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let (request, pending) = fx.request_pending(0);
    let cookie = fx.cookie.clone();
    let mut out = vec![0u8; 1024];
    let (_, reply) = fx.respond(&request);
    assert!(check_response(&reply, &pending, &fx.keys).is_ok());

    // A UID the client never sent.
    let other = build_request(
        &client_header(),
        &fx.keys,
        &cookie,
        0,
        &mut fx.rng.as_fn(),
        &mut out,
    )
    .expect("request");
    assert_eq!(
        check_response(&reply, &other, &fx.keys),
        Err(ClientError::UniqueIdMismatch)
    );
    // The reply stripped of its authenticator.
    let unprotected = &reply[..48 + 36];
    assert_eq!(
        check_response(unprotected, &pending, &fx.keys),
        Err(ClientError::Unauthenticated)
    );
    // Any flipped byte after the header's first byte.
    for i in 1..reply.len() {
        let mut bad = reply.clone();
        bad[i] ^= 0x04;
        assert!(
            !matches!(
                check_response(&bad, &pending, &fx.keys),
                Ok(ClientOutcome::Time { .. })
            ),
            "byte {i}"
        );
    }
    // Under another session's keys.
    let other_keys =
        SessionKeys::new(AeadAlgorithm::AesSivCmac256, &[9; 32], &[8; 32]).expect("keys");
    assert_eq!(
        check_response(&reply, &pending, &other_keys),
        Err(ClientError::AuthenticationFailed)
    );
}

/// RFC 8915 section 5.7: a reply is never longer than its request, over
/// random valid requests: every AEAD, 0 to 7 placeholders split between the
/// plaintext and the encrypted part, unknown fields, nonce sizes with the
/// padding they require, and discarded trailing fields.
#[test]
fn reply_is_never_longer_than_request() {
    let mut cases = 0;
    for alg in AeadAlgorithm::ALL {
        let mut fx = Fixture::new(alg);
        let body_len = fx.cookie.len();
        for _ in 0..60 {
            let mut spec = fx.standard();
            let placeholders = fx.rng.below(8) as usize;
            let encrypted = fx.rng.below(placeholders as u64 + 1) as usize;
            for i in 0..placeholders {
                let field = (EF_COOKIE_PLACEHOLDER, vec![0; body_len]);
                if i < encrypted {
                    spec.encrypted.push(field);
                } else {
                    spec.before.push(field);
                }
            }
            if fx.rng.below(2) == 0 {
                spec.before
                    .push((0x2222, vec![5; 12 + 4 * fx.rng.below(4) as usize]));
            }
            if fx.rng.below(3) == 0 {
                spec.after.push((0x3333, vec![6; 12]));
            }
            if alg != AeadAlgorithm::Aes128GcmSiv {
                spec.nonce_len = 1 + fx.rng.below(24) as usize;
                spec.extra_padding = 16usize.saturating_sub(padded4(spec.nonce_len));
            } else {
                spec.nonce_len = 12;
            }
            spec.extra_padding += 4 * fx.rng.below(3) as usize;
            let order_shuffle = fx.rng.below(spec.before.len() as u64) as usize;
            spec.before.rotate_left(order_shuffle);
            let request = fx.custom(&spec);
            let (result, reply) = fx.respond(&request);
            let Ok(ServerAction::Reply { len, cookies }) = result else {
                panic!("{alg}: {result:?}");
            };
            assert_eq!(cookies, 1 + placeholders);
            assert_eq!(len, reply.len());
            assert!(len <= request.len(), "{len} > {}", request.len());
            cases += 1;
        }
    }
    assert_eq!(cases, 180);
}

/// `respond_late` asks for the header after every random byte of the reply
/// (nonce and cookies) was drawn, once, and the client accepts the header it
/// returned; a bad cookie gets a NAK with a header asked for a NAK; a
/// dropped request never asks.
#[test]
fn the_late_header_is_asked_for_last_and_once() {
    use authtime_nts::HeaderFor;
    let mut fx = Fixture::new(AeadAlgorithm::AesSivCmac256);
    let (request, pending) = fx.request_pending(3);
    let late = Header {
        transmit_ts: NtpTimestamp::from_parts(3_900_000_123, 42),
        ..server_header()
    };
    let draws = std::cell::Cell::new(0usize);
    let mut asked = Vec::new();
    let mut reply = vec![0u8; request.len()];
    let mut rng = |b: &mut [u8]| {
        draws.set(draws.get() + 1);
        fx.rng.fill(b);
    };
    let result =
        NtsServer::new().respond_late(&request, &fx.ring, NOW, &mut rng, &mut reply, |purpose| {
            asked.push((purpose, draws.get()));
            late
        });
    let Ok(ServerAction::Reply { len, cookies: 4 }) = result else {
        panic!("{result:?}")
    };
    let total_draws = draws.get();
    assert_eq!(
        asked,
        vec![(HeaderFor::Reply, total_draws)],
        "asked once, after every draw"
    );
    let ClientOutcome::Time { header, .. } =
        check_response(&reply[..len], &pending, &fx.keys).expect("client accepts")
    else {
        panic!("not a time reply")
    };
    assert_eq!(header, late);

    // A cookie that does not open: a NAK, its header asked for a NAK.
    let mut bad = request.clone();
    let cookie_at = 48 + 36 + 4;
    bad[cookie_at + 20] ^= 1;
    let mut asked = Vec::new();
    let result =
        NtsServer::new().respond_late(&bad, &fx.ring, NOW, &mut fx.rng.as_fn(), &mut reply, |p| {
            asked.push(p);
            late
        });
    assert!(matches!(result, Ok(ServerAction::Nak { .. })), "{result:?}");
    assert_eq!(asked, vec![HeaderFor::Nak]);

    // A request that is dropped never asks.
    let result = NtsServer::new().respond_late(
        &request[..40],
        &fx.ring,
        NOW,
        &mut fx.rng.as_fn(),
        &mut reply,
        |_| panic!("asked for a header of a dropped request"),
    );
    assert!(result.is_err());
}
