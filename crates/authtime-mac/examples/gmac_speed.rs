//! AES-128-GMAC speed: one packet at a time (independent and chained) and
//! batches of 64, on every implementation this CPU runs.
//!
//! Method: each figure is the median of 5 samples of about 0.2 s of this
//! thread's CPU time (`/proc/thread-self/schedstat`; wall time with `--wall`
//! or where schedstat is missing). The VM has no cycle counter: cycles are
//! given at the clock probed in the same run, a chain of dependent
//! rotate-and-multiply steps of 4 cycles each. For OpenSSL in the same run,
//! use `authtime bench mac --alg aes128-gmac`.
//!
//! Run: `cargo run --release -p authtime-mac --example gmac_speed [-- --wall] [--best] [--only-sizes] [sizes...]`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use authtime_mac::{Algorithm, Isa, Mac, MacInput, Tag};

const SAMPLES: usize = 5;
const SAMPLE_TIME: Duration = Duration::from_millis(200);
/// With `--best`: many short samples, of which the fastest counts.
const BEST_SAMPLES: usize = 15;
const BEST_SAMPLE_TIME: Duration = Duration::from_millis(100);
const BATCH: usize = 64;

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

/// The core clock in GHz: 2^27 dependent steps of 4 cycles (rotate: 1, multiply: 3).
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

/// Median of [`SAMPLES`] samples (or with `--best`, the best of
/// [`BEST_SAMPLES`] shorter ones: the one least disturbed by other jobs on
/// a shared machine) of the rate of `op`, which handles `per_call` packets
/// per call, in packets per second.
fn rate(per_call: usize, mut op: impl FnMut()) -> f64 {
    let best = std::env::args().any(|a| a == "--best");
    let (samples, sample_time) = if best {
        (BEST_SAMPLES, BEST_SAMPLE_TIME)
    } else {
        (SAMPLES, SAMPLE_TIME)
    };
    let clock = Clock::new();
    let mut timed = |calls: u64| {
        let t0 = clock.now_ns();
        for _ in 0..calls {
            op();
        }
        (clock.now_ns() - t0) as f64 * 1e-9
    };
    let mut calls = 1u64;
    while timed(calls) < sample_time.as_secs_f64() / 10.0 {
        calls *= 2;
    }
    calls *= 10;
    let mut rates: Vec<f64> = (0..samples)
        .map(|_| (calls as f64 * per_call as f64) / timed(calls))
        .collect();
    rates.sort_by(f64::total_cmp);
    if best {
        rates[samples - 1]
    } else {
        rates[samples / 2]
    }
}

/// Distinct packets of `len` bytes.
fn packets(len: usize, count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| (0..len).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect()
}

/// Distinct nonces (timing only: real senders never repeat one under a key).
fn nonces(count: usize) -> Vec<[u8; 12]> {
    (0..count)
        .map(|i| {
            let mut n = [0x5a; 12];
            n[4..].copy_from_slice(&(i as u64).to_be_bytes());
            n
        })
        .collect()
}

/// Independent packets one call at a time; the tag feeds a one-byte
/// accumulator only, so that the next call does not wait for it.
fn one_packet(mac: &dyn Mac, len: usize) -> f64 {
    let (pkts, ns) = (packets(len, BATCH), nonces(BATCH));
    let mut i = 0;
    let mut acc = 0u8;
    let r = rate(1, || {
        i = (i + 1) % BATCH;
        let i = black_box(i);
        let tag = mac.compute(&ns[i], &pkts[i]).expect("tag");
        acc ^= tag.as_bytes()[0];
    });
    black_box(acc);
    r
}

/// Each packet starts with the previous tag: the latency of one packet.
fn one_packet_chained(mac: &dyn Mac, len: usize) -> f64 {
    let mut pkt = vec![0x5a; len.max(16)];
    pkt.truncate(len);
    let nonce = [7u8; 12];
    rate(1, || {
        let tag = mac.compute(&nonce, &pkt).expect("tag");
        let n = pkt.len().min(16);
        pkt[..n].copy_from_slice(&tag.as_bytes()[..n]);
    })
}

fn batch(mac: &dyn Mac, lens: &[usize]) -> f64 {
    let pkts: Vec<Vec<u8>> = (0..BATCH)
        .map(|i| {
            packets(lens[i % lens.len()], i + 1)
                .pop()
                .unwrap_or_default()
        })
        .collect();
    let ns = nonces(BATCH);
    let inputs: Vec<MacInput<'_>> = pkts
        .iter()
        .zip(&ns)
        .map(|(p, n)| MacInput {
            nonce: n,
            message: p,
        })
        .collect();
    let mut tags = vec![Tag::EMPTY; BATCH];
    rate(BATCH, || {
        mac.compute_many(black_box(&inputs), &mut tags)
            .expect("batch");
        black_box(&tags);
    })
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![48, 68, 256, 1024, 1500]
    } else {
        sizes
    };
    let key = [0x2b; 16];
    let ours = Algorithm::Aes128Gmac.new_mac(&key).expect("key");
    let no_vaes = Algorithm::Aes128Gmac
        .new_mac_with_isa(
            &key,
            Isa {
                vaes: false,
                ..Isa::current()
            },
        )
        .expect("key");
    let portable = Algorithm::Aes128Gmac
        .new_mac_with_isa(&key, Isa::PORTABLE)
        .expect("key");
    println!("AES-128-GMAC, {ours:?}, isa: {}", Isa::current().describe());
    let mut probes = vec![probe_ghz()];
    let mut rows = Vec::new();
    for &len in &sizes {
        rows.push((format!("one packet {len} B"), one_packet(&*ours, len)));
        rows.push((format!("batch {BATCH} x {len} B"), batch(&*ours, &[len])));
        rows.push((
            format!("batch {BATCH} x {len} B, xmm"),
            batch(&*no_vaes, &[len]),
        ));
    }
    probes.push(probe_ghz());
    let only_sizes = std::env::args().any(|a| a == "--only-sizes");
    if !only_sizes {
        mixed_rows(&*ours, &*portable, &mut rows);
    }
    probes.push(probe_ghz());
    probes.sort_by(f64::total_cmp);
    let ghz = probes[1];
    println!(
        "clock probe: {ghz:.2} GHz (of {:.2}, {:.2}, {:.2}); median of {SAMPLES} x {SAMPLE_TIME:?} (--best: best of {BEST_SAMPLES} x {BEST_SAMPLE_TIME:?})",
        probes[0], probes[1], probes[2]
    );
    println!("{:<36} {:>9} {:>9}", "case", "Mpkt/s", "c/pkt");
    for (name, pps) in rows {
        println!("{name:<36} {:>9.2} {:>9.1}", pps / 1e6, ghz * 1e9 / pps);
    }
}

/// Mixed batches, the latency, and the `aes-gcm` crate.
fn mixed_rows(ours: &dyn Mac, portable: &dyn Mac, rows: &mut Vec<(String, f64)>) {
    rows.push((
        "batch 64 x 48/68 B alternating".to_owned(),
        batch(ours, &[48, 68]),
    ));
    rows.push((
        "batch 64 x 0..300 B mixed".to_owned(),
        batch(ours, &[0, 17, 48, 68, 100, 256, 300, 33]),
    ));
    rows.push((
        "one packet 48 B, chained (latency)".to_owned(),
        one_packet_chained(ours, 48),
    ));
    rows.push((
        "one packet 48 B, aes-gcm crate".to_owned(),
        one_packet(portable, 48),
    ));
}
