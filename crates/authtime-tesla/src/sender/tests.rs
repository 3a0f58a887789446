use super::*;
use crate::owf::f;
use crate::testkit::{MS, ed25519_pair, params};
use crate::wire::DataPacket;

/// `K^c_j` computed the slow way, from the chain's seed.
fn naive_key(p: &Params, chain: u32, j: u32) -> ChainKey {
    let mut k = chain_seed(&ChainKey::from_bytes([42; 32]), chain);
    for _ in j..p.chain_len {
        k = f(&k);
    }
    k
}

fn at(p: &Params, interval: u32, offset_ms: u64) -> Time {
    p.schedule()
        .interval_start(interval)
        .expect("in range")
        .plus_nanos(offset_ms * MS)
}

fn check_packet(p: &Params, bytes: &[u8], interval: u32, payload: &[u8]) {
    let pkt = DataPacket::parse(bytes, usize::from(p.tag_len)).expect("parse");
    assert_eq!(pkt.interval, interval);
    assert_eq!(pkt.payload, payload);
    let key = naive_key(p, p.chain_of(interval), p.key_index(interval));
    let mac = IntervalMac::new(p, &key).expect("mac");
    assert!(
        mac.verify(pkt.authenticated_bytes(), pkt.tag),
        "MAC of {interval}"
    );
    if let Some(g) = interval.checked_sub(p.disclosure_delay) {
        let disclosed = naive_key(p, p.chain_of(g), p.key_index(g));
        assert_eq!(
            pkt.disclosed_key,
            disclosed.as_bytes(),
            "K_{g} in {interval}"
        );
    } else {
        assert_eq!(pkt.disclosed_key, &[0; 32]);
    }
    assert_eq!(
        pkt.next_commitment.is_some(),
        p.carries_next_commitment(interval)
    );
    if let Some(c) = pkt.next_commitment {
        let next = naive_key(p, p.chain_of(interval) + 1, 0);
        assert_eq!(c, next.as_bytes());
    }
}

#[test]
fn packets_over_three_chains_carry_the_right_keys() {
    let p = params();
    let mut tx = Sender::new(p.clone(), [42; 32], p.t0).expect("sender");
    for i in 0..(3 * p.chain_len) {
        let data = tx.packet(&i.to_be_bytes(), at(&p, i, 10)).expect("packet");
        check_packet(&p, &data, i, &i.to_be_bytes());
        let again = tx.packet(b"x", at(&p, i, 90)).expect("same interval");
        check_packet(&p, &again, i, b"x");
        let kd = tx.key_disclosure(at(&p, i, 95)).expect("disclosure");
        check_packet(&p, &kd, i, b"");
        assert!(tx.stored_keys() <= 4 * 2 * 5, "{}", tx.stored_keys());
    }
}

#[test]
fn idle_sender_jumps_within_and_across_chains() {
    let p = params();
    let mut tx = Sender::new(p.clone(), [42; 32], p.t0).expect("sender");
    for i in [0, 1, 7, 15, 16, 17, 40, 41, 90, 200, 201] {
        let data = tx.packet(b"j", at(&p, i, 0)).expect("packet");
        check_packet(&p, &data, i, b"j");
    }
}

#[test]
fn sender_started_late_builds_the_chains_it_needs() {
    let p = params();
    for start in [0u32, 16, 17, 33, 47] {
        let mut tx = Sender::new(p.clone(), [42; 32], at(&p, start, 0)).expect("sender");
        for i in start..start + 20 {
            let data = tx.packet(b"s", at(&p, i, 1)).expect("packet");
            check_packet(&p, &data, i, b"s");
        }
    }
}

#[test]
fn times_outside_the_schedule_and_backwards_clocks_are_refused() {
    let p = params();
    let mut tx = Sender::new(p.clone(), [42; 32], p.t0).expect("sender");
    assert_eq!(
        tx.packet(b"", Time(p.t0.0 - 1)),
        Err(SenderError::NotStarted)
    );
    tx.packet(b"", at(&p, 5, 0)).expect("packet");
    assert_eq!(
        tx.packet(b"", at(&p, 4, 99)),
        Err(SenderError::ClockWentBackwards {
            interval: 4,
            latest: 5
        })
    );
    // Within the same interval a small step back is harmless.
    tx.packet(b"", at(&p, 5, 0)).expect("same interval");
    let end = p
        .schedule()
        .interval_start(u32::MAX)
        .expect("fits")
        .plus_nanos(p.interval_ns);
    assert_eq!(tx.packet(b"", end), Err(SenderError::ScheduleEnded));
}

#[test]
fn the_last_interval_of_the_u32_range_works() {
    let mut p = params();
    p.t0 = Time(0);
    let last = at(&p, u32::MAX, 0);
    let mut tx = Sender::new(p.clone(), [42; 32], last).expect("sender");
    let data = tx.packet(b"end", last).expect("last interval");
    let pkt = DataPacket::parse(&data, 16).expect("parse");
    assert_eq!(pkt.interval, u32::MAX);
    assert_eq!(p.key_index(u32::MAX), u32::MAX % 16 + 1);
}

#[test]
fn warm_restart_continues_exactly() {
    let p = params();
    let mut a = Sender::new(p.clone(), [42; 32], p.t0).expect("sender");
    for i in 0..13 {
        a.packet(b"a", at(&p, i, 0)).expect("packet");
    }
    let mut b = Sender::from_bytes(&a.to_bytes()).expect("restore");
    assert_eq!(b.to_bytes(), a.to_bytes());
    for i in 13..60 {
        let t = at(&p, i, 3);
        assert_eq!(a.packet(b"p", t), b.packet(b"p", t), "interval {i}");
        if i % 7 == 0 {
            b = Sender::from_bytes(&b.to_bytes()).expect("restore again");
        }
    }
    assert!(matches!(
        b.packet(b"", at(&p, 10, 0)),
        Err(SenderError::ClockWentBackwards { .. })
    ));
    let bytes = a.to_bytes();
    for cut in [0, 1, 20, bytes.len() / 2, bytes.len() - 1] {
        assert!(Sender::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn next_chain_is_built_in_small_steps() {
    let mut p = params();
    p.chain_len = 4096;
    p.rollover_lead = 8;
    p.disclosure_delay = 3;
    let mut tx = Sender::new(p.clone(), [42; 32], p.t0).expect("sender");
    let mut worst = 0;
    for i in 0..p.chain_len - p.rollover_lead {
        let before = match &tx.next {
            NextChain::Building(b) => b.remaining_work(),
            NextChain::Ready(..) => 0,
        };
        tx.packet(b"", at(&p, i, 0)).expect("packet");
        let after = match &tx.next {
            NextChain::Building(b) => b.remaining_work(),
            NextChain::Ready(..) => 0,
        };
        worst = worst.max(before - after);
    }
    assert!(
        worst <= 2,
        "at most 2 setup hashes per interval, saw {worst}"
    );
    assert!(matches!(tx.next, NextChain::Building(ref b) if b.is_done()));
}

#[test]
fn sync_response_commits_to_a_disclosed_key() {
    let p = params();
    let mut tx = Sender::new(p.clone(), [42; 32], p.t0).expect("sender");
    let (mut signer, _) = ed25519_pair(1);
    let request = SyncRequest::encode(&[1; 16]);
    for (i, expected) in [
        (0u32, 0u32),
        (1, 0),
        (2, 1),
        (9, 8),
        (16, 0),
        (17, 0),
        (18, 1),
    ] {
        let frags = tx
            .sync_response(&request, at(&p, i, 5), &mut signer)
            .expect("response");
        assert_eq!(frags.len(), 1);
        let body_len = usize::from(u16::from_be_bytes([frags[0][11], frags[0][12]]));
        let r = SyncResponse::decode_body(&frags[0][13..13 + body_len]).expect("body");
        assert_eq!(r.current_interval, i);
        assert_eq!(r.commitment_chain, p.chain_of(i));
        assert_eq!(r.commitment_index, expected, "interval {i}");
        assert_eq!(r.commitment, naive_key(&p, r.commitment_chain, expected));
    }
    assert!(matches!(
        tx.sync_response(&[0x13, 1, 2], at(&p, 20, 0), &mut signer),
        Err(SenderError::Request(_))
    ));
}
