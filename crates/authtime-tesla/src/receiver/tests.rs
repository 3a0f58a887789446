use super::*;
use crate::sender::Sender;
use crate::testkit::{MS, pair, params};

fn exact() -> ReceiverConfig {
    ReceiverConfig {
        drift_ppm: 0,
        ..ReceiverConfig::default()
    }
}

fn at(p: &Params, interval: u32, offset_ns: u64) -> Time {
    p.schedule()
        .interval_start(interval)
        .expect("in range")
        .plus_nanos(offset_ns)
}

fn released(s: &Status) -> Vec<(u32, Vec<u8>)> {
    match s {
        Status::Authenticated { released, .. } => released
            .iter()
            .map(|d| (d.interval, d.payload.clone()))
            .collect(),
        _ => Vec::new(),
    }
}

/// Sends one packet per interval from `from` to `to` and returns everything released.
fn stream(
    tx: &mut Sender,
    rx: &mut Receiver,
    p: &Params,
    from: u32,
    to: u32,
) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    for i in from..to {
        let t = at(p, i, MS);
        let data = tx.packet(&i.to_be_bytes(), t).expect("packet");
        out.extend(released(&rx.handle(&data, t)));
    }
    out
}

#[test]
fn in_order_stream_is_released_d_intervals_later_and_in_order() {
    let p = params();
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, exact());
    let t = at(&p, 0, MS);
    assert_eq!(
        rx.handle(&tx.packet(b"first", t).expect("packet"), t),
        Status::Waiting
    );
    let got = stream(&mut tx, &mut rx, &p, 1, 60);
    let want: Vec<(u32, Vec<u8>)> = std::iter::once((0, b"first".to_vec()))
        .chain((1..58).map(|i: u32| (i, i.to_be_bytes().to_vec())))
        .collect();
    assert_eq!(got, want);
    let s = rx.stats();
    assert_eq!(s.delivered, 58);
    assert_eq!(s.chain_switches, 3);
    assert_eq!(s.bad_mac + s.bad_keys + s.unsafe_dropped, 0);
}

#[test]
fn safety_boundary_is_exact_to_the_nanosecond() {
    let p = params();
    // Round trip 3 ns: the receiver allows the sender to be 3 ns ahead.
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 3, exact());
    let i = 5;
    let data = tx.packet(b"edge", at(&p, i, 0)).expect("packet");
    // K_5 is disclosed from the start of interval 7.
    let disclosure = at(&p, i + p.disclosure_delay, 0).0;
    let mut late = rx_clone(&rx);
    assert_eq!(
        late.handle(&data, Time(disclosure - 3)),
        Status::DroppedUnsafe
    );
    let mut later = rx_clone(&rx);
    assert_eq!(
        later.handle(&data, Time(disclosure - 2)),
        Status::DroppedUnsafe
    );
    assert_eq!(rx.handle(&data, Time(disclosure - 4)), Status::Waiting);
}

fn rx_clone(rx: &Receiver) -> Receiver {
    Receiver::from_bytes(&rx.to_bytes()).expect("clone by state")
}

#[test]
fn loss_reordering_and_duplicates() {
    let p = params();
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 5 * MS, exact());
    let packets: Vec<(u32, Vec<u8>)> = (0..40)
        .map(|i: u32| {
            (
                i,
                tx.packet(&i.to_be_bytes(), at(&p, i, 20 * MS))
                    .expect("packet"),
            )
        })
        .collect();
    let mut delivered = Vec::new();
    // Deliver with each packet 50 ms late, swap neighbours, lose every 3rd.
    let mut order: Vec<usize> = (0..40).collect();
    for pair in order.chunks_mut(2) {
        pair.reverse();
    }
    for &k in &order {
        let (i, bytes) = &packets[k];
        if i % 3 == 2 {
            continue;
        }
        let t = at(&p, *i, 70 * MS);
        let status = rx.handle(bytes, t);
        delivered.extend(released(&status));
        // An immediate duplicate is a replay.
        assert_eq!(rx.handle(bytes, t), Status::Failed(Failure::Replay), "{i}");
    }
    let mut got: Vec<u32> = delivered.iter().map(|(i, _)| *i).collect();
    got.sort_unstable();
    let mut dedup = got.clone();
    dedup.dedup();
    assert_eq!(got, dedup, "nothing delivered twice");
    // K_15 = K^0_16, the last key of chain 0, is disclosed only in interval
    // 17, which is lost, and no key of chain 1 leads back to it.
    let expected: Vec<u32> = (0..38).filter(|i| i % 3 != 2 && *i != 15).collect();
    assert_eq!(got, expected);
    // A replay of a delivered packet much later is not delivered again.
    let (i, bytes) = &packets[0];
    assert!(matches!(
        rx.handle(bytes, at(&p, 45, 0)),
        Status::Failed(Failure::Replay) | Status::DroppedUnsafe
    ));
    assert_eq!(*i, 0);
}

#[test]
fn forged_payload_and_forged_key_are_never_released() {
    let p = params();
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, exact());
    let t = at(&p, 3, MS);
    let mut forged = tx.packet(b"genuine", t).expect("packet");
    forged[1] ^= 0x20;
    assert_eq!(rx.handle(&forged, t), Status::Waiting);
    let t5 = at(&p, 5, MS);
    let mut bad_key = tx.packet(b"five", t5).expect("packet");
    let key_at = bad_key.len() - 16 - 32;
    bad_key[key_at] ^= 1;
    assert_eq!(rx.handle(&bad_key, t5), Status::Failed(Failure::BadKey));
    let good = tx.packet(b"five", t5).expect("packet");
    assert_eq!(
        rx.handle(&good, t5),
        Status::Authenticated {
            released: Vec::new(),
            mac_failures: 1,
            own: Own::Buffered
        }
    );
    let s = rx.stats();
    assert_eq!((s.bad_mac, s.bad_keys, s.delivered), (1, 1, 0));
}

#[test]
fn a_forgery_with_a_copied_tag_does_not_block_the_genuine_packet() {
    let p = params();
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, exact());
    let t = at(&p, 3, MS);
    let genuine = tx.packet(b"real", t).expect("packet");
    let mut forged = genuine.clone();
    forged[1] = b'f';
    assert_eq!(rx.handle(&forged, t), Status::Waiting);
    assert_eq!(rx.handle(&genuine, t), Status::Waiting);
    let t5 = at(&p, 5, MS);
    let status = rx.handle(&tx.packet(b"five", t5).expect("packet"), t5);
    assert_eq!(released(&status), vec![(3, b"real".to_vec())]);
}

#[test]
fn buffer_bounds_are_hard_and_counted() {
    let p = params();
    let config = ReceiverConfig {
        buffer_max_packets: 3,
        buffer_max_bytes: 1 << 20,
        ..exact()
    };
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, config);
    let t = at(&p, 1, 0);
    // A full buffer evicts a buffered packet at random for each newcomer.
    for n in 0..5u8 {
        let data = tx.packet(&[n], t).expect("packet");
        assert_eq!(rx.handle(&data, t), Status::Waiting);
        assert!(rx.stats().buffered_packets <= 3);
    }
    assert_eq!(rx.stats().evicted, 2);
    assert_eq!(rx.stats().buffer_full, 0);
    let by_bytes = ReceiverConfig {
        buffer_max_bytes: 200,
        ..exact()
    };
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, by_bytes);
    let big = tx.packet(&[0; 120], t).expect("packet");
    assert_eq!(rx.handle(&big, t), Status::Waiting);
    let big2 = tx.packet(&[1; 120], t).expect("packet");
    assert_eq!(rx.handle(&big2, t), Status::Waiting);
    assert_eq!(rx.stats().evicted, 1);
    assert!(rx.stats().buffered_bytes <= 200);
    // A packet larger than the whole buffer is refused.
    let huge = tx.packet(&[2; 220], t).expect("packet");
    assert_eq!(rx.handle(&huge, t), Status::Failed(Failure::BufferFull));
    assert_eq!(rx.stats().buffer_full, 1);
    assert_eq!(rx.stats().buffered_packets, 1);
    assert!(rx.stats().buffered_bytes <= 200);
}

#[test]
fn evictions_follow_the_seed() {
    let p = params();
    let config = ReceiverConfig {
        buffer_max_packets: 4,
        buffer_max_bytes: 1 << 20,
        ..exact()
    };
    let run = |seed: &[u8]| {
        let (mut tx, rx) = pair(p.clone(), at(&p, 0, 0), 0, config.clone());
        let mut rx = rx.with_eviction_seed(seed);
        let t = at(&p, 1, 0);
        for n in 0..40u8 {
            rx.handle(&tx.packet(&[n], t).expect("packet"), t);
        }
        let t3 = at(&p, 3, 0);
        let status = rx.handle(&tx.packet(b"k", t3).expect("packet"), t3);
        assert_eq!(rx.stats().evicted, 36);
        released(&status)
    };
    assert_eq!(run(b"seed one"), run(b"seed one"));
    let kept: Vec<_> = (0..8).map(|s| run(&[s; 16])).collect();
    assert!(kept.iter().all(|k| k.len() == 4));
    assert!(kept.iter().any(|k| k != &kept[0]), "{kept:?}");
}

#[test]
fn keys_beyond_the_step_bound_are_rejected() {
    let mut p = params();
    p.chain_len = 1000;
    let config = ReceiverConfig {
        max_key_steps: 20,
        ..exact()
    };
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, config);
    // After a loss of 15 intervals the key is still within reach.
    let t = at(&p, 17, 0);
    assert_eq!(
        rx.handle(&tx.packet(b"a", t).expect("packet"), t),
        Status::Waiting
    );
    assert_eq!(rx.newest_key(), (0, 16));
    // 30 more intervals lost: 30 steps > 20.
    let t = at(&p, 48, 0);
    assert_eq!(
        rx.handle(&tx.packet(b"b", t).expect("packet"), t),
        Status::Failed(Failure::KeyTooFar)
    );
    assert_eq!(rx.stats().keys_too_far, 1);
}

#[test]
fn a_sender_ahead_of_the_bound_makes_the_receiver_refuse() {
    let p = params();
    let (mut tx, rx) = pair(p.clone(), at(&p, 0, 0), 0, exact());
    // The receiver's clock runs 250 ms ahead of the truth... no: the sender's
    // clock is 250 ms ahead of what the bound allows. Model it by sending with
    // sender time t + 250 ms while the receiver handles at local time t.
    let mut rx = rx;
    let mut refused_at = None;
    for i in 1..20u32 {
        let local = at(&p, i, 0);
        let data = tx.packet(b"x", local.plus_nanos(250 * MS)).expect("packet");
        if let Status::Failed(Failure::ClockBoundViolated) = rx.handle(&data, local) {
            refused_at = Some(i);
            break;
        }
    }
    assert!(refused_at.is_some(), "violation detected");
    assert!(rx.is_refused());
    let t = at(&p, 30, 0);
    assert_eq!(
        rx.handle(&tx.packet(b"y", t).expect("packet"), t),
        Status::Failed(Failure::Refused)
    );
    assert_eq!(
        rx.stats().delivered,
        0,
        "nothing from the violated bound released"
    );
}

#[test]
fn packets_from_the_future_are_rejected() {
    let p = params();
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, exact());
    // Interval 1 discloses no key (1 < d), so only the interval is judged.
    let data = tx.packet(b"f", at(&p, 1, 0)).expect("packet");
    assert_eq!(
        rx.handle(&data, at(&p, 0, 99 * MS)),
        Status::Failed(Failure::FutureInterval)
    );
    // A genuine packet from the future also carries a key disclosed early:
    // that proves the bound wrong.
    let data = tx.packet(b"g", at(&p, 4, 0)).expect("packet");
    assert_eq!(
        rx.handle(&data, at(&p, 3, 99 * MS)),
        Status::Failed(Failure::ClockBoundViolated)
    );
}

#[test]
fn sync_datagrams_and_garbage_are_counted() {
    let p = params();
    let (_, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, exact());
    let t = at(&p, 1, 0);
    assert_eq!(
        rx.handle(&crate::wire::SyncRequest::encode(&[0; 16]), t),
        Status::Failed(Failure::UnexpectedKind)
    );
    assert!(matches!(
        rx.handle(&[0x11, 1, 2], t),
        Status::Failed(Failure::Malformed(_))
    ));
    assert!(matches!(
        rx.handle(&[], t),
        Status::Failed(Failure::Malformed(_))
    ));
    let s = rx.stats();
    assert_eq!((s.unexpected_kind, s.malformed, s.packets), (1, 2, 3));
}

#[test]
fn key_disclosures_keep_keys_flowing_and_carry_the_next_commitment() {
    let p = params();
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, exact());
    let t = at(&p, 0, MS);
    assert_eq!(
        rx.handle(&tx.packet(b"only", t).expect("packet"), t),
        Status::Waiting
    );
    let mut got = Vec::new();
    for i in 1..40 {
        let t = at(&p, i, MS);
        got.extend(released(&rx.handle(&tx.key_disclosure(t).expect("kd"), t)));
    }
    assert_eq!(got, vec![(0, b"only".to_vec())]);
    let s = rx.stats();
    assert_eq!(
        s.chain_switches, 2,
        "crossed two chains on key disclosures alone"
    );
    assert!(s.commitments_learned >= 2);
}

#[test]
fn warm_restart_of_the_receiver() {
    let p = params();
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, exact());
    let first = stream(&mut tx, &mut rx, &p, 0, 10);
    let bytes = rx.to_bytes();
    let mut back = Receiver::from_bytes(&bytes).expect("restore");
    assert_eq!(back.to_bytes(), bytes);
    assert_eq!(back.stats().delivered, first.len() as u64);
    let more = stream(&mut tx, &mut back, &p, 10, 20);
    // Packets 8 and 9 were buffered in the old receiver and are lost.
    assert_eq!(more.first().map(|(i, _)| *i), Some(10));
    for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
        assert!(Receiver::from_bytes(&bytes[..cut]).is_err());
    }
}

#[test]
fn buffered_packets_expire_when_their_key_cannot_come() {
    let p = params();
    let config = ReceiverConfig {
        max_key_steps: 5,
        ..exact()
    };
    let (mut tx, mut rx) = pair(p.clone(), at(&p, 0, 0), 0, config);
    let t = at(&p, 1, 0);
    assert_eq!(
        rx.handle(&tx.packet(b"e", t).expect("packet"), t),
        Status::Waiting
    );
    let t = at(&p, 12, 0);
    rx.handle(&tx.packet(b"f", t).expect("packet"), t);
    assert_eq!(rx.stats().expired, 1);
}
