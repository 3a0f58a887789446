//! The batched NTS server ([`NtsServer::prepare_batch`] then
//! [`NtsServer::finish`]) against the one-at-a-time one
//! ([`NtsServer::respond_late`]) on random batches: every AEAD, cookies under
//! current, old and unknown master keys, tampered cookies and
//! authenticators, placeholders, garbage, batches of 1 to 64 requests
//! prepared in chunks of eight as the daemon does. Each request
//! must get the same answer both ways: a reply the client accepts with
//! cookies that open to its session, the same NAK, or the same drop.

use authtime_nts::aead::AeadAlgorithm;
use authtime_nts::client::{ClientOutcome, PendingRequest, build_request, check_response};
use authtime_nts::cookie::{SessionKeys, open_cookie, seal_cookie};
use authtime_nts::key_ring::{CookieAead, KeyRing, RotationPolicy};
use authtime_nts::server::{HeaderFor, NtsDrop, NtsServer, ServerAction};
use authtime_nts::{MAX_BATCH, PreparedNts};
use authtime_wire::{Header, Mode, NtpTimestamp};

const DAY: u64 = 86_400;
const NOW: u64 = 20_000 * DAY + 4321;

struct TestRng(u64);

impl TestRng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = (self.next() >> 24) as u8;
        }
    }
}

/// One request of a batch, with what its client needs to check the reply.
struct Case {
    request: Vec<u8>,
    client: Option<(PendingRequest, SessionKeys)>,
}

fn reply_header(request: &[u8], purpose: HeaderFor) -> Header {
    let mut h = Header::new(Mode::Server);
    h.stratum = 2;
    if let Ok(req) = Header::decode(&mut authtime_wire::Reader::new(request)) {
        h.origin_ts = req.transmit_ts;
    }
    h.receive_ts = NtpTimestamp::from_bits(0x1111_2222_3333_4444);
    h.transmit_ts = NtpTimestamp::from_bits(match purpose {
        HeaderFor::Reply => 0x5555_6666_7777_8888,
        HeaderFor::Nak => 0x9999_aaaa_bbbb_cccc,
    });
    h
}

fn make_case(rng: &mut TestRng, ring: &KeyRing) -> Case {
    let algorithm = [
        AeadAlgorithm::AesSivCmac256,
        AeadAlgorithm::AesSivCmac512,
        AeadAlgorithm::Aes128GcmSiv,
    ][rng.below(3) as usize];
    let mut c2s = vec![0u8; algorithm.key_len()];
    let mut s2c = vec![0u8; algorithm.key_len()];
    rng.fill(&mut c2s);
    rng.fill(&mut s2c);
    let keys = SessionKeys::new(algorithm, &c2s, &s2c).expect("keys");
    // Mostly the current key; sometimes an old one still accepted.
    let sealed_at = if rng.below(5) == 0 {
        NOW - 3 * DAY
    } else {
        NOW
    };
    let master = ring.sealing_key(sealed_at).expect("key");
    let mut cookie = vec![0u8; 256];
    let n = seal_cookie(master, &keys, &mut |b: &mut [u8]| rng.fill(b), &mut cookie).expect("seal");
    cookie.truncate(n);
    let placeholders = if rng.below(6) == 0 {
        1 + rng.below(3) as usize
    } else {
        0
    };
    let mut header = Header::new(Mode::Client);
    header.transmit_ts = NtpTimestamp::from_bits(rng.next());
    let mut request = vec![0u8; 1280];
    let pending = build_request(
        &header,
        &keys,
        &cookie,
        placeholders,
        &mut |b: &mut [u8]| rng.fill(b),
        &mut request,
    )
    .expect("request");
    request.truncate(pending.len());
    match rng.below(10) {
        // A flipped bit in the cookie (after the 4-byte key id), in the
        // authenticator, or in the associated data.
        0 => {
            let at = 48 + 36 + 4 + 4 + rng.below(n as u64 - 4) as usize;
            request[at] ^= 1;
        }
        1 => {
            let at = request.len() - 1 - rng.below(16) as usize;
            request[at] ^= 0x80;
        }
        2 => request[rng.below(48) as usize] ^= 0x04,
        // A key id the ring does not hold.
        3 => {
            let at = 48 + 36 + 4;
            request[at..at + 4].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        }
        // Truncated or garbage.
        4 => request.truncate(rng.below(request.len() as u64) as usize),
        5 => rng.fill(&mut request[48..]),
        _ => {}
    }
    Case {
        request,
        client: Some((pending, keys)),
    }
}

/// What a request got, in terms both paths must agree on.
#[derive(Debug, PartialEq)]
enum Answer {
    Time {
        cookies: usize,
        len: usize,
    },
    Nak(String, Vec<u8>),
    Drop(NtsDrop),
    /// A reply the client could not check (a tampered request's).
    Unchecked(Vec<u8>),
}

fn answer_of(
    result: Result<ServerAction, NtsDrop>,
    out: &[u8],
    case: &Case,
    ring: &KeyRing,
) -> Answer {
    match result {
        Err(e) => Answer::Drop(e),
        Ok(ServerAction::Nak { len, reason }) => {
            Answer::Nak(reason.name().to_owned(), out[..len].to_vec())
        }
        Ok(ServerAction::Reply { len, cookies }) => {
            let Some((pending, keys)) = &case.client else {
                return Answer::Unchecked(out[..len].to_vec());
            };
            match check_response(&out[..len], pending, keys) {
                Ok(ClientOutcome::Time { cookies: fresh, .. }) => {
                    assert_eq!(fresh.len(), cookies);
                    for c in &fresh {
                        let back = open_cookie(ring, NOW, c).expect("a fresh cookie opens");
                        assert_eq!(back.algorithm(), keys.algorithm());
                        assert_eq!(back.c2s().algorithm(), keys.c2s().algorithm());
                    }
                    Answer::Time { cookies, len }
                }
                other => panic!("the client refused a reply: {other:?}"),
            }
        }
    }
}

#[test]
fn a_batch_answers_every_request_as_one_at_a_time_does() {
    let mut rng = TestRng(0x5eed_1234_abcd_0001);
    let server = NtsServer::new();
    let mut ring = KeyRing::new(RotationPolicy::default())
        .plan_with(
            NOW - 3 * DAY,
            &mut |b: &mut [u8]| rng.fill(b),
            CookieAead::Fixed(AeadAlgorithm::AesSivCmac512),
        )
        .expect("ring");
    ring = ring
        .plan_with(
            NOW,
            &mut |b: &mut [u8]| rng.fill(b),
            CookieAead::Fixed(AeadAlgorithm::AesSivCmac256),
        )
        .expect("rotated");
    let mut replies = 0;
    let mut naks = 0;
    let mut batched_replies = 0;
    for round in 0..200 {
        // Up to 64 requests, prepared in chunks of MAX_BATCH as the daemon's
        // worker does with a receive batch.
        let size = 1 + rng.below(64) as usize;
        let cases: Vec<Case> = (0..size).map(|_| make_case(&mut rng, &ring)).collect();

        let mut one = vec![];
        for case in &cases {
            let mut out = vec![0u8; 1280];
            let r = server.respond_late(
                &case.request,
                &ring,
                NOW,
                &mut |b: &mut [u8]| rng.fill(b),
                &mut out,
                |p| reply_header(&case.request, p),
            );
            one.push(answer_of(r, &out, case, &ring));
        }

        for (chunk_at, chunk) in cases.chunks(MAX_BATCH).enumerate() {
            let requests: Vec<&[u8]> = chunk.iter().map(|c| c.request.as_slice()).collect();
            let mut bufs = vec![vec![0u8; 1280]; chunk.len()];
            let mut prepared: Vec<PreparedNts> =
                (0..chunk.len()).map(|_| PreparedNts::default()).collect();
            {
                let mut outs: Vec<&mut [u8]> = bufs.iter_mut().map(Vec::as_mut_slice).collect();
                server.prepare_batch(
                    &requests,
                    &ring,
                    NOW,
                    &mut |b: &mut [u8]| rng.fill(b),
                    &mut outs,
                    &mut prepared,
                );
            }
            for (k, case) in chunk.iter().enumerate() {
                let i = chunk_at * MAX_BATCH + k;
                let r = server.finish(
                    &case.request,
                    &prepared[k],
                    &ring,
                    NOW,
                    &mut |b: &mut [u8]| rng.fill(b),
                    &mut bufs[k],
                    |p| reply_header(&case.request, p),
                );
                let batched = answer_of(r, &bufs[k], case, &ring);
                assert_eq!(batched, one[i], "round {round}, request {i} of {size}");
                match batched {
                    Answer::Time { .. } if prepared[k].is_batched() => {
                        replies += 1;
                        batched_replies += 1;
                    }
                    Answer::Time { .. } => replies += 1,
                    Answer::Nak(..) => naks += 1,
                    _ => {}
                }
            }
        }
    }
    // The random cases reached both outcomes many times.
    assert!(
        replies > 500 && naks > 100,
        "{replies} replies, {naks} NAKs"
    );
    // Replies to AES-SIV sessions without placeholders come from the batch.
    assert!(
        batched_replies * 2 > replies,
        "{batched_replies} of {replies} replies batched"
    );
}
