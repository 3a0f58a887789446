//! A TESLA receiver under a forged flood larger than its buffer (the
//! scenario of `a_flood_larger_than_the_buffer_still_lets_the_genuine_stream_through`
//! in `crates/authtime/tests/hostile_sans_io.rs`): before each of 300 genuine
//! packets, `forged` datagrams (a second sender's chain, genuine packets with
//! a bit flipped, replays, random bytes) reach a receiver with a 64-packet
//! buffer. A first come, first served buffer refused every genuine packet at
//! 200 forged per interval (38 of 300 delivered); random eviction lets most
//! of the stream through.

#![allow(clippy::unwrap_used, missing_docs)]

use authtime_tesla::{
    BootstrapSigner, BootstrapVerifier, Params, ReceiverConfig, Sender, SignError, Status,
    SyncClient, Time,
};

struct Unsigned;

impl BootstrapSigner for Unsigned {
    fn scheme_id(&self) -> u16 {
        0
    }
    fn sign(&mut self, _: &[u8]) -> Result<Vec<u8>, SignError> {
        Ok(Vec::new())
    }
}

impl BootstrapVerifier for Unsigned {
    fn scheme_id(&self) -> u16 {
        0
    }
    fn verify(&self, _: &[u8], _: &[u8]) -> bool {
        true
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const INTERVAL_NS: u64 = 1_000;
const BUFFER_PACKETS: usize = 64;
const BUFFER_BYTES: usize = 16 * 1024;
const INTERVALS: u32 = 300;

fn params() -> Params {
    Params {
        t0: Time(1_000_000),
        interval_ns: INTERVAL_NS,
        disclosure_delay: 2,
        chain_len: 1024,
        mac: authtime_mac::Algorithm::HmacSha256,
        tag_len: 10,
        rollover_lead: 4,
    }
}

struct Outcome {
    sent: u64,
    delivered: u64,
    evicted: u64,
    buffered_genuine: u64,
}

/// Runs 300 intervals with `forged` datagrams before each genuine packet,
/// the receiver bootstrapped with `nonce` (which seeds its evictions).
fn run(forged: usize, nonce: &[u8]) -> Outcome {
    let mut now = Time(1_000_000);
    let mut tx = Sender::new(params(), [7; 32], now).unwrap();
    let mut forger = Sender::new(params(), [9; 32], now).unwrap();
    let config = ReceiverConfig {
        buffer_max_packets: BUFFER_PACKETS,
        buffer_max_bytes: BUFFER_BYTES,
        ..ReceiverConfig::default()
    };
    let (mut client, request) = SyncClient::new(nonce, now, config).unwrap();
    let mut rx = None;
    for fragment in tx.sync_response(&request, now, &mut Unsigned).unwrap() {
        if let Ok(Some(r)) = client.handle(&fragment, now, &Unsigned) {
            rx = Some(r);
        }
    }
    let mut rx = rx.unwrap();
    let mut rng = Rng(0x7e51a);
    let mut out = Outcome {
        sent: 0,
        delivered: 0,
        evicted: 0,
        buffered_genuine: 0,
    };
    let mut genuine_sent: Vec<Vec<u8>> = Vec::new();
    let count = |status: Status, out: &mut Outcome| {
        if let Status::Authenticated { released, .. } = status {
            for d in &released {
                assert!(d.payload.starts_with(b"genuine"), "forged payload released");
            }
            out.delivered += released.len() as u64;
        }
    };
    for i in 0..INTERVALS {
        now = now.plus_nanos(INTERVAL_NS);
        let genuine = tx.packet(format!("genuine {i}").as_bytes(), now).unwrap();
        for k in 0..forged {
            let datagram = match k % 5 {
                0 | 1 => forger
                    .packet(format!("forged {i} {k}").as_bytes(), now)
                    .unwrap(),
                2 => {
                    let mut p = genuine.clone();
                    let at = (rng.next() as usize) % p.len();
                    p[at] ^= 1 << (rng.next() % 8);
                    p
                }
                3 => genuine_sent
                    .get((rng.next() as usize) % genuine_sent.len().max(1))
                    .cloned()
                    .unwrap_or_default(),
                _ => {
                    let len = (rng.next() % 200) as usize;
                    (0..len).map(|_| rng.next() as u8).collect()
                }
            };
            count(rx.handle(&datagram, now), &mut out);
            let s = rx.stats();
            assert!(s.buffered_packets <= BUFFER_PACKETS as u64, "{s:?}");
            assert!(s.buffered_bytes <= BUFFER_BYTES as u64, "{s:?}");
        }
        out.sent += 1;
        let status = rx.handle(&genuine, now);
        match &status {
            Status::Waiting => out.buffered_genuine += 1,
            Status::Authenticated { own, .. } => {
                assert_eq!(*own, authtime_tesla::Own::Buffered, "interval {i}");
                out.buffered_genuine += 1;
            }
            other => panic!("interval {i}: genuine packet refused: {other:?}"),
        }
        count(status, &mut out);
        genuine_sent.push(genuine);
        if i % 10 == 0 {
            let disclosure = forger.key_disclosure(now).unwrap();
            count(rx.handle(&disclosure, now), &mut out);
        }
    }
    out.evicted = rx.stats().evicted;
    eprintln!(
        "{forged} forged per interval: {}/{} delivered, {} evicted, {:?}",
        out.delivered,
        out.sent,
        out.evicted,
        rx.stats()
    );
    out
}

#[test]
fn a_flood_larger_than_the_buffer_still_lets_the_genuine_stream_through() {
    // Of 200 forged per interval, the second sender's 80 carry a disclosed
    // key the receiver already holds, and a mismatch is refused before
    // buffering; the ~27 genuine copies with a bit flipped outside the key
    // are buffered for about two intervals next to the genuine packet: ~55
    // waiting in 64 slots, few evictions (~70 in 300 intervals), so each
    // genuine packet survives with probability above 0.98. Expected: all but
    // the last two (their keys are never sent), asserted: 90%, as in
    // hostile_sans_io.rs.
    for seed in 0..4u8 {
        let out = run(200, &[seed; 16]);
        assert_eq!(out.buffered_genuine, out.sent, "no genuine packet refused");
        assert!(out.evicted > 0, "the flood must fill the buffer");
        assert!(
            out.delivered * 10 >= out.sent * 9,
            "seed {seed}: {}/{} delivered",
            out.delivered,
            out.sent
        );
    }
}

#[test]
fn a_flood_many_times_the_buffer_degrades_in_proportion() {
    // 2000 forged per interval: ~270 bufferable forgeries per interval for
    // 64 slots, ~107 random evictions per interval. A genuine packet waits
    // through about one interval of them before its key comes, so it
    // survives with probability about (1 - 1/64)^n for the n evictions after
    // it: measured 209/300 (70%); asserted: half. A first come, first served
    // buffer delivers none of them.
    let out = run(2000, &[0x5a; 32]);
    assert_eq!(out.buffered_genuine, out.sent, "no genuine packet refused");
    assert!(out.evicted > 10_000, "{}", out.evicted);
    assert!(
        out.delivered * 2 >= out.sent,
        "{}/{} delivered",
        out.delivered,
        out.sent
    );
}
