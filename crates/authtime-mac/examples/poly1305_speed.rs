//! Poly1305-ChaCha20 speed (RFC 8439 section 2.6, tag only): one packet at
//! a time (independent packets, and chained: each nonce from the previous
//! tag) and batches of 64, against the RustCrypto crates it replaced (`chacha20` for the one-time key, `poly1305` for the
//! tag, as this crate computed it before) in the same run.
//!
//! OpenSSL is not linked here (this crate does not depend on the lab). Its
//! per-packet EVP figure (EVP ChaCha20 for the one-time key, `EVP_MAC`
//! Poly1305 for the tag), measured in the same run as ours, comes from
//! `authtime bench mac --alg poly1305-chacha20` (release build).
//!
//! Method: each figure is the median of 5 samples; a sample repeats the
//! operation for about 0.2 s. Time is this thread's CPU time, read from
//! `/proc/thread-self/schedstat` (nanoseconds on CPU), so that other jobs on
//! the shared vCPUs do not count against us; with `--wall`, or where
//! schedstat is missing, wall time (`Instant`). Cycles are at the clock
//! probed in the same run: a chain of dependent rotate-and-multiply steps,
//! 4 cycles each.
//!
//! Run: `cargo run --release -p authtime-mac --example poly1305_speed [-- --wall]`;
//! with `AUTHTIME_ISA=portable` for the portable path.

use std::hint::black_box;
use std::time::{Duration, Instant};

use authtime_mac::{Algorithm, Isa, Mac, MacInput, Tag};
use chacha20::{
    ChaCha20,
    cipher::{KeyIvInit, StreamCipher},
};
use poly1305::{Poly1305, universal_hash::KeyInit};

const SAMPLES: usize = 5;
const SAMPLE_TIME: Duration = Duration::from_millis(200);
const BATCH: usize = 64;
const SIZES: [usize; 5] = [48, 68, 256, 1024, 1500];

/// A clock of this thread's CPU time in nanoseconds, or of wall time.
struct Clock {
    start: Instant,
    cpu: bool,
}

impl Clock {
    fn new() -> Self {
        let wall = std::env::args().any(|a| a == "--wall");
        Self {
            start: Instant::now(),
            cpu: !wall && Self::cpu_ns().is_some(),
        }
    }

    fn cpu_ns() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        text.split_whitespace().next()?.parse().ok()
    }

    fn now_ns(&self) -> u64 {
        match self.cpu.then(Self::cpu_ns).flatten() {
            Some(ns) => ns,
            None => self.start.elapsed().as_nanos() as u64,
        }
    }
}

/// The core clock in GHz: 2^27 dependent steps of 4 cycles (rotate: 1,
/// multiply: 3).
fn probe_ghz() -> f64 {
    let clock = Clock::new();
    let y = black_box(0x9e37_79b9_7f4a_7c15u64);
    let mut x = black_box(1u64);
    let steps = 1u64 << 27;
    let t0 = clock.now_ns();
    for _ in 0..steps {
        x = x.rotate_left(7).wrapping_mul(y);
    }
    black_box(x);
    4.0 * steps as f64 / (clock.now_ns() - t0) as f64
}

/// Median over [`SAMPLES`] samples of the rate of `op`, which handles
/// `per_call` packets per call, in packets per second.
fn rate(per_call: usize, mut op: impl FnMut()) -> f64 {
    let clock = Clock::new();
    let mut timed = |calls: u64| {
        let t0 = clock.now_ns();
        for _ in 0..calls {
            op();
        }
        (clock.now_ns() - t0) as f64 * 1e-9
    };
    let mut calls = 1u64;
    while timed(calls) < SAMPLE_TIME.as_secs_f64() / 10.0 {
        calls *= 2;
    }
    calls *= 10;
    let mut rates: Vec<f64> = (0..SAMPLES)
        .map(|_| (calls as f64 * per_call as f64) / timed(calls))
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[SAMPLES / 2]
}

/// Distinct packets of `len` bytes.
fn packets(len: usize, count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| (0..len).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect()
}

/// Distinct nonces. Timing only: a real sender never repeats one under a key.
fn nonces(count: usize) -> Vec<[u8; 12]> {
    (0..count)
        .map(|i| {
            let mut n = [0x5a; 12];
            n[..8].copy_from_slice(&(i as u64).to_le_bytes());
            n
        })
        .collect()
}

/// Independent packets one call at a time (the tag feeds only a one-byte
/// accumulator, so the next packet does not wait for it).
fn one_packet(mac: &dyn Mac, len: usize) -> f64 {
    let (pkts, nonces) = (packets(len, BATCH), nonces(BATCH));
    let mut i = 0;
    let mut acc = 0u8;
    let r = rate(1, || {
        i = (i + 1) % BATCH;
        let tag = mac
            .compute(&nonces[black_box(i)], &pkts[black_box(i)])
            .expect("tag");
        acc ^= tag.as_bytes()[0];
    });
    black_box(acc);
    r
}

/// Each packet's nonce starts with the previous tag: the serial latency.
fn one_packet_chained(mac: &dyn Mac, len: usize) -> f64 {
    let pkt = vec![0x5a; len];
    let mut nonce = [0u8; 12];
    rate(1, || {
        let tag = mac.compute(&nonce, &pkt).expect("tag");
        nonce.copy_from_slice(&tag.as_bytes()[..12]);
    })
}

fn batch(mac: &dyn Mac, len: usize) -> f64 {
    let (pkts, nonces) = (packets(len, BATCH), nonces(BATCH));
    let inputs: Vec<MacInput<'_>> = pkts
        .iter()
        .zip(&nonces)
        .map(|(message, nonce)| MacInput { nonce, message })
        .collect();
    let mut tags = vec![Tag::EMPTY; BATCH];
    rate(BATCH, || {
        mac.compute_many(black_box(&inputs), &mut tags)
            .expect("batch");
        black_box(&tags);
    })
}

/// The crates this MAC was built on before: `chacha20` for the one-time key,
/// `poly1305` (the build's backend) for the tag.
fn crates_one_packet(key: &[u8; 32], len: usize) -> f64 {
    let (pkts, nonces) = (packets(len, BATCH), nonces(BATCH));
    let mut i = 0;
    let mut acc = 0u8;
    let r = rate(1, || {
        i = (i + 1) % BATCH;
        let mut otk = [0u8; 32];
        ChaCha20::new(key.into(), (&nonces[black_box(i)]).into()).apply_keystream(&mut otk);
        let tag = Poly1305::new(&otk.into()).compute_unpadded(&pkts[black_box(i)]);
        acc ^= tag[0];
    });
    black_box(acc);
    r
}

fn main() {
    let key = [0x2b; 32];
    let ours = Algorithm::Poly1305ChaCha20.new_mac(&key).expect("key");
    let ghz = probe_ghz();
    println!(
        "poly1305-chacha20, Isa: {}, clock probe {ghz:.2} GHz (cycles below at this clock)",
        Isa::current().describe()
    );
    println!(
        "{:>5} {:>14} {:>10} {:>14} {:>10} {:>10}",
        "bytes", "1-pkt Mpps c", "chained c", "batch Mpps c", "crates c", "vs crates"
    );
    let cyc = |pps: f64| ghz * 1e9 / pps;
    for len in SIZES {
        let single = one_packet(&*ours, len);
        let chained = one_packet_chained(&*ours, len);
        let many = batch(&*ours, len);
        let crates = crates_one_packet(&key, len);
        println!(
            "{len:>5} {:>6.2} {:>7.0} {:>10.0} {:>6.2} {:>7.0} {:>10.0} {:>9.1}x",
            single / 1e6,
            cyc(single),
            cyc(chained),
            many / 1e6,
            cyc(many),
            cyc(crates),
            single / crates,
        );
    }
    println!(
        "\nOpenSSL (EVP ChaCha20 + EVP_MAC Poly1305) in the same run: \
         `authtime bench mac --alg poly1305-chacha20 --size 48 --size 68 --size 256 --size 1024 --size 1500`"
    );
}
