//! AES-128-CMAC speed: one packet at a time and batches of 64, against
//! `openssl speed -cmac aes-128-cbc` in the same run.
//!
//! Method: each figure is the median of 5 samples; a sample repeats the
//! operation for about 0.2 s. Time is this thread's CPU time, read without libc
//! from `/proc/thread-self/schedstat` (nanoseconds on CPU, updated at each
//! scheduler tick: ±2 % on a sample), so that other jobs on the shared vCPUs
//! do not count against us; OpenSSL's `speed` likewise divides by user CPU
//! time. With `--wall` (for runs under `chrt -f`, where nothing preempts us),
//! or where schedstat is missing, wall time (`Instant`) is used.
//!
//! The VM has no cycle counter. Cycles are given at `CMAC_GHZ` (default 3.6)
//! GHz and at the clock probed in the same run: a chain of dependent
//! rotate-and-multiply steps, 4 cycles each (as the anchors' add chain).
//!
//! Run: `cargo run --release -p authtime-mac --example cmac_speed [-- --no-openssl] [--wall]`.

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use authtime_mac::{Algorithm, Isa, Mac, MacInput, Tag};

const SAMPLES: usize = 5;
const SAMPLE_TIME: Duration = Duration::from_millis(200);
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

/// The core clock in GHz: 2^27 dependent steps of 4 cycles (rotate: 1,
/// multiply: 3 on Zen 4 and on Intel cores since Sandy Bridge).
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
    // Calibrate: calls per sample.
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

/// OpenSSL's AES-128-CMAC rate at `bytes`, in packets per second (median of
/// `runs` one-second runs), or `None` when `openssl` is missing or says nothing.
fn openssl_rate(bytes: usize, runs: usize) -> Option<f64> {
    let mut rates = Vec::new();
    for _ in 0..runs {
        let out = Command::new("openssl")
            .args(["speed", "-mr", "-seconds", "1", "-bytes"])
            .arg(bytes.to_string())
            .args(["-cmac", "aes-128-cbc"])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        // `+F:<n>:cmac(aes-128-cbc):<bytes per second>`
        let bytes_per_s: f64 = text
            .lines()
            .find(|l| l.starts_with("+F:"))?
            .rsplit(':')
            .next()?
            .trim()
            .parse()
            .ok()?;
        rates.push(bytes_per_s / bytes as f64);
    }
    rates.sort_by(f64::total_cmp);
    rates.get(rates.len() / 2).copied()
}

/// Distinct packets of `len` bytes, so that no call sees the same input twice in a row.
fn packets(len: usize, count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| (0..len).map(|j| (i * 31 + j * 7) as u8).collect())
        .collect()
}

/// Independent packets one call at a time. The tag feeds only a one-byte
/// accumulator: `black_box(tag)` would store it where the next call's
/// arguments go, and the CPU would then wait for each tag before starting the
/// next packet (a latency measurement, which `one_packet_chained` makes on
/// purpose).
fn one_packet(mac: &dyn Mac, len: usize) -> f64 {
    let pkts = packets(len, BATCH);
    let mut i = 0;
    let mut acc = 0u8;
    let r = rate(1, || {
        i = (i + 1) % BATCH;
        let tag = mac.compute(&[], &pkts[black_box(i)]).expect("tag");
        acc ^= tag.as_bytes()[0];
    });
    black_box(acc);
    r
}

/// Each packet starts with the previous tag: the serial latency.
fn one_packet_chained(mac: &dyn Mac, len: usize) -> f64 {
    let mut pkt = vec![0x5a; len];
    rate(1, || {
        let tag = mac.compute(&[], &pkt).expect("tag");
        pkt[..16].copy_from_slice(tag.as_bytes());
    })
}

fn batch(mac: &dyn Mac, len: usize) -> f64 {
    let pkts = packets(len, BATCH);
    let inputs: Vec<MacInput<'_>> = pkts.iter().map(|p| MacInput::message(p)).collect();
    let mut tags = vec![Tag::EMPTY; BATCH];
    rate(BATCH, || {
        mac.compute_many(black_box(&inputs), &mut tags)
            .expect("batch");
        black_box(&tags);
    })
}

/// Batch of alternating 48- and 68-byte packets (two block-count groups).
fn batch_mixed(mac: &dyn Mac) -> f64 {
    let (a, b) = (packets(48, BATCH / 2), packets(68, BATCH / 2));
    let inputs: Vec<MacInput<'_>> = a
        .iter()
        .zip(&b)
        .flat_map(|(x, y)| [MacInput::message(x), MacInput::message(y)])
        .collect();
    let mut tags = vec![Tag::EMPTY; BATCH];
    rate(BATCH, || {
        mac.compute_many(black_box(&inputs), &mut tags)
            .expect("batch");
        black_box(&tags);
    })
}

fn main() {
    let with_openssl = !std::env::args().any(|a| a == "--no-openssl");
    let ghz: f64 = std::env::var("CMAC_GHZ")
        .ok()
        .and_then(|g| g.parse().ok())
        .unwrap_or(3.6);
    let key = [0x2b; 16];
    let ours = Algorithm::Aes128Cmac.new_mac(&key).expect("key");
    let no_vaes = Algorithm::Aes128Cmac
        .new_mac_with_isa(
            &key,
            Isa {
                vaes: false,
                ..Isa::current()
            },
        )
        .expect("key");
    let portable = Algorithm::Aes128Cmac
        .new_mac_with_isa(&key, Isa::PORTABLE)
        .expect("key");
    let mut probes = vec![probe_ghz()];
    println!("AES-128-CMAC, {ours:?}, isa: {}", Isa::current().describe());
    let clock = if Clock::new().cpu {
        "thread CPU time"
    } else {
        "wall time"
    };
    println!("median of {SAMPLES} samples of ~{SAMPLE_TIME:?} of {clock}");
    let mut rows = Vec::new();
    for len in [48, 68, 256, 1500] {
        rows.push((format!("batch {BATCH} x {len} B"), len, batch(&*ours, len)));
        rows.push((
            format!("batch {BATCH} x {len} B, xmm AES-NI"),
            len,
            batch(&*no_vaes, len),
        ));
        rows.push((format!("one packet {len} B"), len, one_packet(&*ours, len)));
    }
    probes.push(probe_ghz());
    rows.push((
        "batch 64 x 48/68 B alternating".to_owned(),
        48,
        batch_mixed(&*ours),
    ));
    rows.push((
        "one packet 48 B, chained (latency)".to_owned(),
        48,
        one_packet_chained(&*ours, 48),
    ));
    rows.push((
        "one packet 48 B, RustCrypto cmac".to_owned(),
        48,
        one_packet(&*portable, 48),
    ));
    rows.push((
        "batch 64 x 48 B, RustCrypto cmac".to_owned(),
        48,
        batch(&*portable, 48),
    ));
    probes.push(probe_ghz());
    probes.sort_by(f64::total_cmp);
    let probed = probes[1];
    println!(
        "clock probe: {probed:.2} GHz (of {:.2}, {:.2}, {:.2})",
        probes[0], probes[1], probes[2]
    );

    let mut openssl = std::collections::HashMap::new();
    if with_openssl {
        for len in [48, 68, 256, 1500] {
            openssl.insert(len, openssl_rate(len, if len == 48 { 3 } else { 1 }));
        }
    }
    println!(
        "{:<36} {:>9} {:>11} {:>11} {:>12} {:>8}",
        "case",
        "Mpkt/s",
        format!("c/pkt@{ghz}"),
        format!("c/pkt@{probed:.2}"),
        "OpenSSL M/s",
        "ratio"
    );
    for (name, len, pps) in rows {
        let (peer, ratio) = match openssl.get(&len).copied().flatten() {
            Some(p) => (format!("{:.2}", p / 1e6), format!("{:.1}x", pps / p)),
            None => ("-".to_owned(), "-".to_owned()),
        };
        println!(
            "{name:<36} {:>9.2} {:>11.1} {:>11.1} {peer:>12} {ratio:>8}",
            pps / 1e6,
            ghz * 1e9 / pps,
            probed * 1e9 / pps
        );
    }
}
