//! A sender and a receiver over a simulated channel (in memory, seeded): loss,
//! reordering, delay, duplication and an active attacker. The receiver must
//! authenticate every packet that TESLA can authenticate and nothing else.

use std::collections::{BTreeMap, HashSet};

use authtime_mac::Algorithm;
use authtime_tesla::{
    BootstrapSigner, BootstrapVerifier, DataPacket, Failure, Params, Receiver, ReceiverConfig,
    Sender, SignError, Status, SyncClient, Time, latest_sender_interval,
};
use ed25519_dalek::{Signer as _, SigningKey, Verifier as _, VerifyingKey};

const MS: u64 = 1_000_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

struct Ed(SigningKey);

impl BootstrapSigner for Ed {
    fn scheme_id(&self) -> u16 {
        1
    }
    fn sign(&mut self, msg: &[u8]) -> Result<Vec<u8>, SignError> {
        Ok(self.0.sign(msg).to_bytes().to_vec())
    }
}

struct EdVerify(VerifyingKey);

impl BootstrapVerifier for EdVerify {
    fn scheme_id(&self) -> u16 {
        1
    }
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        ed25519_dalek::Signature::from_slice(sig).is_ok_and(|s| self.0.verify(msg, &s).is_ok())
    }
}

fn params() -> Params {
    Params {
        t0: Time::from_secs(1_700_000_000),
        interval_ns: 50 * MS,
        disclosure_delay: 4,
        chain_len: 64,
        mac: Algorithm::HmacSha256,
        tag_len: 16,
        rollover_lead: 8,
    }
}

/// The channel's behaviour.
#[derive(Clone, Copy)]
struct Channel {
    loss_percent: u64,
    dup_percent: u64,
    min_delay: u64,
    max_delay: u64,
}

/// Receiver's clock minus sender's clock.
const SKEW: i64 = -30 * MS as i64;

fn local(sender_time: u64) -> Time {
    Time(sender_time.wrapping_add_signed(SKEW))
}

/// Bootstraps through the channel (request and response delayed by it).
fn bootstrap(tx: &mut Sender, rng: &mut Rng, start: u64, ch: Channel) -> Receiver {
    let sk = SigningKey::from_bytes(&[11; 32]);
    let verifier = EdVerify(sk.verifying_key());
    let mut signer = Ed(sk);
    let nonce: Vec<u8> = (0..32).map(|_| rng.next() as u8).collect();
    let config = ReceiverConfig {
        drift_ppm: 50,
        ..ReceiverConfig::default()
    };
    let (mut client, request) = SyncClient::new(&nonce, local(start), config).expect("client");
    let at_sender = start + ch.min_delay + rng.below(ch.min_delay + 1);
    let fragments = tx
        .sync_response(&request, Time(at_sender), &mut signer)
        .expect("response");
    let arrive = at_sender + ch.min_delay;
    for f in &fragments {
        if let Some(rx) = client.handle(f, local(arrive), &verifier).expect("valid") {
            return rx;
        }
    }
    panic!("bootstrap incomplete");
}

struct Sent {
    interval: u32,
    payload: Vec<u8>,
}

/// One delivery: arrival (sender clock), index into `sent` or an attack.
struct Event {
    arrive: u64,
    seq: u64,
    bytes: Vec<u8>,
    genuine: Option<usize>,
}

/// Adds attack events, given the genuine ones and the last sequence number.
type Attack = fn(&mut Rng, &[Event], u64) -> Vec<Event>;

struct Run {
    released: Vec<(u32, Vec<u8>)>,
    statuses: Vec<Status>,
    expected: Vec<(u32, Vec<u8>)>,
    rx: Receiver,
}

/// Sends `intervals` intervals of traffic (`per_interval` packets each, plus a
/// key disclosure) through the channel, adds `attack` events, and computes
/// which genuine packets TESLA can authenticate:
/// a packet of interval `i` is authenticable iff its first copy arrives safe
/// (`x < i + d` by the receiver's bound) and a later arrival discloses a key
/// `K_g` of the same chain with `g >= i`.
fn run(seed: u64, ch: Channel, intervals: u32, per_interval: u32, attack: Attack) -> Run {
    let p = params();
    let mut rng = Rng(seed);
    let start = p.t0.0 + 3 * p.interval_ns;
    let mut tx = Sender::new(p.clone(), [seed as u8; 32], Time(start)).expect("sender");
    let mut rx = bootstrap(&mut tx, &mut rng, start, ch);
    let first = p.schedule().interval_at(Time(start)).expect("started") + 2;
    let mut sent = Vec::new();
    let mut events = Vec::new();
    let mut seq = 0;
    for i in first..first + intervals {
        let base = p.schedule().interval_start(i).expect("t").0;
        for k in 0..=per_interval {
            let at = base + u64::from(k) * p.interval_ns / u64::from(per_interval + 1);
            let (bytes, genuine) = if k == per_interval {
                (tx.key_disclosure(Time(at)).expect("kd"), None)
            } else {
                let payload = format!("{i}/{k}").into_bytes();
                sent.push(Sent {
                    interval: i,
                    payload: payload.clone(),
                });
                (
                    tx.packet(&payload, Time(at)).expect("packet"),
                    Some(sent.len() - 1),
                )
            };
            let copies = if rng.chance(ch.dup_percent) { 2 } else { 1 };
            for _ in 0..copies {
                if rng.chance(ch.loss_percent) {
                    continue;
                }
                let delay = ch.min_delay + rng.below(ch.max_delay - ch.min_delay + 1);
                seq += 1;
                events.push(Event {
                    arrive: at + delay,
                    seq,
                    bytes: bytes.clone(),
                    genuine,
                });
            }
        }
    }
    let attacks = attack(&mut rng, &events, seq);
    events.extend(attacks);
    events.sort_by_key(|e| (e.arrive, e.seq));

    // The oracle.
    let bound = *rx.clock_bound();
    let schedule = p.schedule();
    let d = p.disclosure_delay;
    let mut first_arrival: BTreeMap<usize, usize> = BTreeMap::new();
    for (n, e) in events.iter().enumerate() {
        if let Some(g) = e.genuine {
            first_arrival.entry(g).or_insert(n);
        }
    }
    let disclosures: Vec<(usize, u32)> = events
        .iter()
        .enumerate()
        .filter_map(|(n, e)| {
            let pkt = DataPacket::parse(&e.bytes, 16).ok()?;
            let genuine_key = e.genuine.is_some() || e.seq <= seq;
            (genuine_key && pkt.interval >= d).then(|| (n, pkt.interval - d))
        })
        .collect();
    let mut expected = Vec::new();
    for (&g, &n) in &first_arrival {
        let s = &sent[g];
        let x = latest_sender_interval(&schedule, &bound, local(events[n].arrive));
        let safe = x < i128::from(s.interval) + i128::from(d);
        let keyed = disclosures.iter().any(|&(m, key)| {
            m > n && key >= s.interval && p.chain_of(key) == p.chain_of(s.interval)
        });
        if safe && keyed {
            expected.push((s.interval, s.payload.clone()));
        }
    }
    expected.sort();

    let mut released = Vec::new();
    let mut statuses = Vec::new();
    for e in &events {
        let status = rx.handle(&e.bytes, local(e.arrive));
        if let Status::Authenticated { released: r, .. } = &status {
            released.extend(r.iter().map(|d| (d.interval, d.payload.clone())));
        }
        statuses.push(status);
    }
    Run {
        released,
        statuses,
        expected,
        rx,
    }
}

fn no_attack(_: &mut Rng, _: &[Event], _: u64) -> Vec<Event> {
    Vec::new()
}

fn assert_exact(r: &Run) {
    let mut got = r.released.clone();
    let unique: HashSet<_> = got.iter().cloned().collect();
    assert_eq!(unique.len(), got.len(), "a payload was released twice");
    got.sort();
    let expected: HashSet<_> = r.expected.iter().cloned().collect();
    let extra: Vec<_> = got
        .iter()
        .filter(|g| !expected.contains(*g))
        .take(5)
        .collect();
    let missing: Vec<_> = r
        .expected
        .iter()
        .filter(|e| !unique.contains(*e))
        .take(5)
        .collect();
    assert!(
        extra.is_empty(),
        "released but not authenticable: {extra:?}"
    );
    assert!(
        missing.is_empty(),
        "authenticable but not released: {missing:?}"
    );
}

#[test]
fn a_clean_stream_goes_through_intact_and_in_order() {
    let ch = Channel {
        loss_percent: 0,
        dup_percent: 0,
        min_delay: 10 * MS,
        max_delay: 10 * MS,
    };
    let r = run(1, ch, 200, 3, no_attack);
    assert_exact(&r);
    // All but the last d intervals (their keys are disclosed after the end).
    assert_eq!(r.released.len(), (200 - 4) * 3);
    let intervals: Vec<u32> = r.released.iter().map(|(i, _)| *i).collect();
    assert!(intervals.windows(2).all(|w| w[0] <= w[1]), "in order");
    let s = r.rx.stats();
    assert_eq!(s.chain_switches, 3);
    assert_eq!(s.bad_mac + s.bad_keys + s.unsafe_dropped + s.replays, 0);
}

#[test]
fn loss_reordering_delay_and_duplicates() {
    for seed in 2..6 {
        let ch = Channel {
            loss_percent: 25,
            dup_percent: 10,
            min_delay: 5 * MS,
            max_delay: 90 * MS,
        };
        let r = run(seed, ch, 300, 4, no_attack);
        assert_exact(&r);
        assert!(r.released.len() > 600, "seed {seed}: {}", r.released.len());
        let s = r.rx.stats();
        assert_eq!(s.bad_mac + s.bad_keys + s.clock_violations, 0);
        assert!(s.replays > 0, "seed {seed}: {s:?}");
    }
}

#[test]
fn long_delays_drop_exactly_the_unsafe_packets() {
    let ch = Channel {
        loss_percent: 10,
        dup_percent: 5,
        min_delay: 5 * MS,
        max_delay: 300 * MS,
    };
    let mut unsafe_dropped = 0;
    for seed in 40..50 {
        let r = run(seed, ch, 200, 4, no_attack);
        assert_exact(&r);
        unsafe_dropped += r.rx.stats().unsafe_dropped;
    }
    assert!(unsafe_dropped > 100, "{unsafe_dropped}");
}

#[test]
fn heavy_loss_still_authenticates_what_it_can() {
    let ch = Channel {
        loss_percent: 70,
        dup_percent: 0,
        min_delay: MS,
        max_delay: 60 * MS,
    };
    for seed in 7..40 {
        let r = run(seed, ch, 400, 6, no_attack);
        assert_exact(&r);
        assert!(!r.released.is_empty());
    }
}

/// Tampered copies, forged packets, replays long after, and copies held back
/// until after their key is disclosed.
fn attacker(rng: &mut Rng, events: &[Event], last_seq: u64) -> Vec<Event> {
    let mut out = Vec::new();
    for (seq, e) in (last_seq + 1..).zip(events.iter().filter(|e| e.genuine.is_some())) {
        let mut bytes = e.bytes.clone();
        match rng.below(5) {
            0 => {
                let at = 1 + rng.below(bytes.len() as u64 - 1) as usize;
                bytes[at] ^= 1 << rng.below(8);
            }
            1 => {
                let n = bytes.len();
                for b in &mut bytes[n - 16..] {
                    *b = rng.next() as u8;
                }
                bytes[1] ^= 0x55;
            }
            2 => {
                let n = bytes.len();
                for b in &mut bytes[n - 48..n - 16] {
                    *b = rng.next() as u8;
                }
            }
            3 => {
                out.push(Event {
                    arrive: e.arrive + 1_000 * MS,
                    seq,
                    bytes,
                    genuine: None,
                });
                continue;
            }
            _ => {
                out.push(Event {
                    arrive: e.arrive + 260 * MS,
                    seq,
                    bytes,
                    genuine: None,
                });
                continue;
            }
        }
        out.push(Event {
            arrive: e.arrive + rng.below(20 * MS),
            seq,
            bytes,
            genuine: None,
        });
    }
    out
}

#[test]
fn tampered_forged_replayed_and_late_packets_are_never_released() {
    let ch = Channel {
        loss_percent: 10,
        dup_percent: 0,
        min_delay: 5 * MS,
        max_delay: 40 * MS,
    };
    let (mut bad_mac, mut bad_keys, mut late, mut bad_key_status) = (0, 0, 0, false);
    for seed in 8..40 {
        let r = run(seed, ch, 200, 3, attacker);
        // Everything released was sent, once; the attack does not add to it
        // and (the oracle counts only genuine first copies) takes nothing away
        // that TESLA could still authenticate.
        assert_exact(&r);
        let s = r.rx.stats();
        assert_eq!(s.clock_violations, 0);
        bad_mac += s.bad_mac;
        bad_keys += s.bad_keys;
        late += s.replays + s.unsafe_dropped;
        bad_key_status |= r.statuses.contains(&Status::Failed(Failure::BadKey));
    }
    assert!(bad_mac > 0 && bad_keys > 0 && late > 0 && bad_key_status);
}

#[test]
fn a_sender_clock_ahead_of_the_bound_makes_the_receiver_refuse() {
    let p = params();
    let mut rng = Rng(9);
    let ch = Channel {
        loss_percent: 0,
        dup_percent: 0,
        min_delay: 2 * MS,
        max_delay: 2 * MS,
    };
    let start = p.t0.0 + 3 * p.interval_ns;
    let mut tx = Sender::new(p.clone(), [9; 32], Time(start)).expect("sender");
    let mut rx = bootstrap(&mut tx, &mut rng, start, ch);
    let mut delivered_before = 0;
    let mut refused = false;
    for n in 0..100u64 {
        let t = start + 10 * MS + n * p.interval_ns / 2;
        // After packet 40 the sender's clock steps 400 ms ahead of the truth.
        let sender_clock = if n < 40 { t } else { t + 400 * MS };
        let bytes = tx.packet(b"x", Time(sender_clock)).expect("packet");
        match rx.handle(&bytes, local(t + 2 * MS)) {
            Status::Authenticated { released, .. } if !refused => {
                delivered_before += released.len();
            }
            Status::Failed(Failure::ClockBoundViolated) => refused = true,
            Status::Failed(Failure::Refused) => assert!(refused),
            other => assert!(!refused, "after refusal: {other:?}"),
        }
    }
    assert!(refused && rx.is_refused());
    assert!(delivered_before > 0);
    assert_eq!(rx.stats().clock_violations, 1);
}

#[test]
fn a_forged_bootstrap_starts_nothing() {
    let p = params();
    let start = p.t0.0 + 3 * p.interval_ns;
    let mut tx = Sender::new(p.clone(), [1; 32], Time(start)).expect("sender");
    let genuine = SigningKey::from_bytes(&[11; 32]);
    let verifier = EdVerify(genuine.verifying_key());
    let mut forger = Ed(SigningKey::from_bytes(&[12; 32]));
    let (mut client, request) =
        SyncClient::new(&[5; 16], local(start), ReceiverConfig::default()).expect("client");
    let fragments = tx
        .sync_response(&request, Time(start + MS), &mut forger)
        .expect("response");
    let mut outcome = Ok(None);
    for f in &fragments {
        outcome = client.handle(f, local(start + 2 * MS), &verifier);
    }
    assert!(matches!(
        outcome,
        Err(authtime_tesla::BootstrapError::BadSignature)
    ));
    // The genuine response completes afterwards.
    let fragments = tx
        .sync_response(&request, Time(start + 3 * MS), &mut Ed(genuine))
        .expect("response");
    let mut rx = None;
    for f in &fragments {
        if let Ok(Some(r)) = client.handle(f, local(start + 4 * MS), &verifier) {
            rx = Some(r);
        }
    }
    assert!(rx.is_some());
}
