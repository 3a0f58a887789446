use super::*;
use crate::sender::Sender;
use crate::testkit::{MS, ed25519_pair, params};

fn exact() -> ReceiverConfig {
    ReceiverConfig {
        drift_ppm: 0,
        ..ReceiverConfig::default()
    }
}

fn response(p: &Params, nonce: &[u8], interval: u32) -> SyncResponse {
    let t = p
        .schedule()
        .interval_start(interval)
        .expect("t")
        .plus_nanos(MS);
    SyncResponse {
        scheme_id: 1,
        nonce: nonce.to_vec(),
        sender_time: t,
        params: p.clone(),
        current_interval: interval,
        commitment_chain: p.chain_of(interval),
        commitment_index: 0,
        commitment: ChainKey::from_bytes([1; 32]),
        next_commitment: None,
    }
}

/// Runs `client` over `fragments` at local time `now`; the last result.
fn feed(
    client: &mut SyncClient,
    fragments: &[Vec<u8>],
    now: Time,
    verifier: &dyn BootstrapVerifier,
) -> Result<Option<Receiver>, BootstrapError> {
    let mut last = Ok(None);
    for f in fragments {
        last = client.handle(f, now, verifier);
    }
    last
}

#[test]
fn body_round_trips_and_every_prefix_fails() {
    let p = params();
    let mut r = response(&p, &[7; 20], 3);
    r.next_commitment = Some(ChainKey::from_bytes([2; 32]));
    let body = r.encode_body();
    assert_eq!(SyncResponse::decode_body(&body), Ok(r.clone()));
    for n in 0..body.len() {
        assert!(SyncResponse::decode_body(&body[..n]).is_err(), "prefix {n}");
    }
    let mut longer = body.clone();
    longer.push(0);
    assert_eq!(
        SyncResponse::decode_body(&longer),
        Err(WireError::TrailingBytes(1))
    );
    r.next_commitment = None;
    assert_eq!(
        r.encode_body().len(),
        1 + 2 + 1 + 20 + 24 + 16 + 1 + 11 + 1 + 40 + 1
    );
}

#[test]
fn ed25519_bootstrap_starts_a_receiver() {
    let p = params();
    let now = p.schedule().interval_start(5).expect("t");
    let mut tx = Sender::new(p.clone(), [42; 32], now).expect("sender");
    let (mut signer, verifier) = ed25519_pair(3);
    let sent = Time(now.0 - 20 * MS);
    let (mut client, request) = SyncClient::new(&[4; 32], sent, exact()).expect("client");
    let frags = tx
        .sync_response(&request, now, &mut signer)
        .expect("response");
    let rx = feed(&mut client, &frags, now.plus_nanos(10 * MS), &verifier)
        .expect("verified")
        .expect("complete");
    assert_eq!(rx.params(), &p);
    assert_eq!(
        rx.newest_key(),
        (0, 4),
        "K_4 (interval 3) disclosed in interval 5"
    );
    // delta = t_s - t_r = 20 ms.
    assert_eq!(rx.clock_bound().offset_ns, 20 * MS as i64);
}

#[test]
fn refusals_start_no_receiver() {
    let p = params();
    let (mut signer, verifier) = ed25519_pair(3);
    let (mut other, _) = ed25519_pair(4);
    let nonce = [4u8; 16];
    let t = p.schedule().interval_start(5).expect("t");
    let run = |r: &SyncResponse, s: &mut dyn BootstrapSigner, sent: Time, now: Time| {
        let (mut c, _) = SyncClient::new(&nonce, sent, exact()).expect("client");
        let frags = r.sign_and_fragment(s, 1200).expect("sign");
        feed(&mut c, &frags, now, &verifier)
    };
    let good = response(&p, &nonce, 5);
    assert!(matches!(
        run(&good, &mut signer, t, t.plus_nanos(MS)),
        Ok(Some(_))
    ));
    assert_eq!(
        run(&good, &mut other, t, t).err(),
        Some(BootstrapError::BadSignature)
    );
    let mut wrong_nonce = good.clone();
    wrong_nonce.nonce = vec![4; 15];
    wrong_nonce.nonce.push(5);
    // The fragment tag still matches (first 8 bytes), the nonce does not.
    assert_eq!(
        run(&wrong_nonce, &mut signer, t, t).err(),
        Some(BootstrapError::NonceMismatch)
    );
    let mut absurd = good.clone();
    absurd.params.interval_ns = 10;
    assert!(matches!(
        run(&absurd, &mut signer, t, t),
        Err(BootstrapError::Params(ParamError::Interval(10)))
    ));
    let mut zero_delay = good.clone();
    zero_delay.params.disclosure_delay = 0;
    assert!(matches!(
        run(&zero_delay, &mut signer, t, t),
        Err(BootstrapError::Params(_))
    ));
    let mut wrong_interval = good.clone();
    wrong_interval.current_interval = 6;
    assert_eq!(
        run(&wrong_interval, &mut signer, t, t).err(),
        Some(BootstrapError::Inconsistent("current interval"))
    );
    let mut undisclosed = good.clone();
    undisclosed.commitment_index = 5;
    assert_eq!(
        run(&undisclosed, &mut signer, t, t).err(),
        Some(BootstrapError::Inconsistent("commitment not disclosed yet"))
    );
    // Round trip: 2 intervals (d * T_int) or more is refused.
    assert_eq!(
        run(&good, &mut signer, t, t.plus_nanos(200 * MS)).err(),
        Some(BootstrapError::UncertaintyTooLarge)
    );
    assert!(matches!(
        run(&good, &mut signer, t, t.plus_nanos(199 * MS)),
        Ok(Some(_))
    ));
    assert_eq!(
        run(&good, &mut signer, t, Time(t.0 - 1)).err(),
        Some(BootstrapError::ClockWentBackwards)
    );
    let mut slow = params();
    slow.interval_ns = 10_000 * MS;
    let slow_response = response(&slow, &nonce, 5);
    let slow_t = slow.schedule().interval_start(5).expect("t");
    assert_eq!(
        run(
            &slow_response,
            &mut signer,
            slow_t,
            slow_t.plus_nanos(6_000 * MS)
        )
        .err(),
        Some(BootstrapError::RoundTripTooLong(6_000 * MS))
    );
}

#[test]
fn scheme_mismatch_is_reported() {
    struct Other;
    impl BootstrapVerifier for Other {
        fn scheme_id(&self) -> u16 {
            9
        }
        fn verify(&self, _: &[u8], _: &[u8]) -> bool {
            true
        }
    }
    let p = params();
    let (mut signer, _) = ed25519_pair(3);
    let r = response(&p, &[4; 16], 5);
    let (mut c, _) = SyncClient::new(&[4; 16], r.sender_time, exact()).expect("client");
    let frags = r.sign_and_fragment(&mut signer, 1200).expect("sign");
    assert_eq!(
        feed(&mut c, &frags, r.sender_time, &Other).err(),
        Some(BootstrapError::SchemeMismatch {
            got: 1,
            expected: 9
        })
    );
}

/// A stand-in for SLH-DSA-SHA2-128s: 7856-byte signatures (a keyed hash
/// repeated), to exercise fragmentation at real sizes.
struct BigSigner;

impl BootstrapSigner for BigSigner {
    fn scheme_id(&self) -> u16 {
        7
    }
    fn sign(&mut self, msg: &[u8]) -> Result<Vec<u8>, SignError> {
        let k = crate::owf::f(&ChainKey::from_bytes([msg.len() as u8; 32]));
        let digest = crate::owf::f_prime(&k);
        let mut sig = Vec::with_capacity(7856);
        while sig.len() < 7856 {
            sig.extend_from_slice(digest.as_bytes());
            sig.push(msg.iter().fold(0u8, |a, b| a.wrapping_add(*b)));
        }
        sig.truncate(7856);
        Ok(sig)
    }
}

impl BootstrapVerifier for BigSigner {
    fn scheme_id(&self) -> u16 {
        7
    }
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        BigSigner.clone_sign(msg) == sig
    }
}

impl BigSigner {
    fn clone_sign(&self, msg: &[u8]) -> Vec<u8> {
        BigSigner.sign(msg).unwrap_or_default()
    }
}

#[test]
fn large_signatures_fragment_and_reassemble_in_any_order() {
    let p = params();
    let mut r = response(&p, &[8; 16], 5);
    r.scheme_id = 7;
    let frags = r.sign_and_fragment(&mut BigSigner, 1200).expect("sign");
    assert_eq!(frags.len(), 7);
    assert!(frags.iter().all(|f| f.len() <= 1200));
    // Reversed, with duplicates and a foreign fragment in between.
    let foreign = fragment(&[1; 100], &[0xee; 8], 1200).expect("foreign");
    let mut order: Vec<Vec<u8>> = frags.iter().rev().cloned().collect();
    order.insert(2, frags[3].clone());
    order.insert(4, foreign[0].clone());
    order.insert(5, frags[6].clone());
    let (mut c, _) = SyncClient::new(&[8; 16], r.sender_time, exact()).expect("client");
    let mut started = None;
    let mut not_ours = 0;
    for f in &order {
        match c.handle(f, r.sender_time, &BigSigner) {
            Ok(Some(rx)) => started = Some(rx),
            Ok(None) => {}
            Err(BootstrapError::NotOurs) => not_ours += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(started.is_some());
    assert_eq!(not_ours, 1);
    assert_eq!(c.reassembly_stats().duplicates, 2);
    // Small datagrams: more fragments, same result.
    let small = r.sign_and_fragment(&mut BigSigner, 300).expect("sign");
    assert!(small.len() > 20 && small.iter().all(|f| f.len() <= 300));
    assert!(r.sign_and_fragment(&mut BigSigner, 40).is_err());
}

#[test]
fn reassembler_rejects_garbage_and_contradictions() {
    let tag = [3u8; 8];
    let blob: Vec<u8> = (0..250u8).collect();
    let frags = fragment(&blob, &tag, 100).expect("fragments");
    assert_eq!(frags.len(), 3);
    let mut re = Reassembler::new(tag, 8, 1000);
    assert_eq!(re.push(&frags[0]), Ok(None));
    // Same index, other bytes: restart.
    let mut changed = frags[1].clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    assert_eq!(re.push(&frags[1]), Ok(None));
    assert_eq!(re.push(&changed), Err(BootstrapError::FragmentConflict));
    // Other count: restart.
    assert_eq!(re.push(&frags[0]), Ok(None));
    let other_count = Fragment::encode(&tag, 1, 4, &frags[1][FRAGMENT_HEADER_LEN..]);
    assert_eq!(re.push(&other_count), Err(BootstrapError::FragmentConflict));
    // Garbage and bounds.
    assert!(matches!(re.push(&[0x14, 1]), Err(BootstrapError::Wire(_))));
    assert_eq!(
        re.push(&Fragment::encode(&tag, 0, 9, b"x")),
        Err(BootstrapError::TooLarge)
    );
    // A clean run completes.
    for f in frags.iter().rev() {
        if let Some(out) = re.push(f).expect("fragment") {
            assert_eq!(out, blob);
        }
    }
    // A last chunk longer than the others contradicts them.
    let mut re = Reassembler::new(tag, 8, 1000);
    assert_eq!(re.push(&Fragment::encode(&tag, 2, 3, &[0; 90])), Ok(None));
    assert_eq!(
        re.push(&Fragment::encode(&tag, 0, 3, &[0; 80])),
        Err(BootstrapError::FragmentConflict)
    );
    assert_eq!(re.stats.conflicts, 1);
}

#[test]
fn indirect_bound_is_checked_against_the_signed_time() {
    let p = params();
    let (mut signer, verifier) = ed25519_pair(3);
    let r = response(&p, &[4; 16], 5);
    let frags = r.sign_and_fragment(&mut signer, 1200).expect("sign");
    let local = r.sender_time;
    // The other source says the sender is at most 1 ms behind... it is not.
    let tight = ClockBound::indirect(local, -2 * MS as i64, MS, 0);
    let (mut c, _) = SyncClient::new(&[4; 16], local, exact()).expect("client");
    let mut last = Ok(None);
    for f in &frags {
        last = c.handle_indirect(f, local, &verifier, tight);
    }
    assert_eq!(last.err(), Some(BootstrapError::ClockBoundViolated));
    let fair = ClockBound::indirect(local, 0, 5 * MS, 0);
    let (mut c, _) = SyncClient::new(&[4; 16], local, exact()).expect("client");
    let mut rx = None;
    for f in &frags {
        if let Ok(Some(r)) = c.handle_indirect(f, local, &verifier, fair) {
            rx = Some(r);
        }
    }
    assert_eq!(rx.expect("started").clock_bound().offset_ns, 5 * MS as i64);
    assert!(matches!(
        SyncClient::new(&[0; 15], local, exact()),
        Err(BootstrapError::NonceLength(15))
    ));
}

/// Found by the issue-29 fuzz campaign (`tesla_bootstrap_parsing`, input in
/// `fuzz/corpus/tesla_bootstrap_parsing/regression-mac-name-case`): a body
/// naming `hmAc-sha256` decoded, and re-encoded as `hmac-sha256`, so one
/// response had two encodings. Only the canonical name is accepted now.
#[test]
fn a_mac_name_in_another_case_is_refused() {
    let body = response(&params(), &[7; 20], 3).encode_body();
    let at = body
        .windows(11)
        .position(|w| w == b"hmac-sha256")
        .expect("the MAC name");
    let mut odd = body.clone();
    odd[at + 2] = b'A';
    assert_eq!(
        SyncResponse::decode_body(&odd),
        Err(WireError::InvalidField("MAC name"))
    );
    assert!(SyncResponse::decode_body(&body).is_ok());
}
