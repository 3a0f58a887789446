//! Packets per second of HMAC-SHA256 and HMAC-SHA1, one packet at a time and in
//! batches of 64, next to `openssl speed -hmac` measured in the same run.
//!
//! Method: 64 distinct random packets per size; "one packet" calls
//! `Mac::compute` on each in turn, "batch" calls `Mac::compute_many` on all 64.
//! Each sample runs for at least `SAMPLE_MS` of thread CPU time (read from
//! `/proc/thread-self/schedstat`, wall time when that is missing), the way
//! `openssl speed` divides by user CPU time, so a busy machine slows both sides
//! alike. Each cell is the median of 5 samples; ours and OpenSSL's samples
//! alternate. OpenSSL's rate is the `+F:` line of `openssl speed -mr -seconds 1
//! -bytes N -hmac <digest>`: bytes/s ÷ N. Cycles per packet use the core clock
//! estimated from a chain of dependent 64-bit `imul` + `xor` (3 + 1 cycles on
//! Zen 4; it agrees within 2 % with the `add`-chain probe of the kernels'
//! tests), or `GHZ` when set.
//!
//! Run: `cargo run --release -p authtime-mac --example sha_speed [-- quick]`.

use std::hint::black_box;
use std::process::Command;
use std::time::Instant;

use authtime_mac::{Algorithm, Isa, Mac, MacInput, Tag};

const BATCH: usize = 64;
const SIZES: [usize; 4] = [48, 68, 256, 1500];
const REPS: usize = 5;
const SAMPLE_MS: u64 = 200;

/// Thread CPU time in nanoseconds, from the scheduler's accounting.
fn cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// A clock: CPU time when the kernel reports it, wall time otherwise.
struct Clock {
    wall: Instant,
    cpu: Option<u64>,
}

impl Clock {
    fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: cpu_ns(),
        }
    }
    fn elapsed_ns(&self) -> u64 {
        match (self.cpu, cpu_ns()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => u64::try_from(self.wall.elapsed().as_nanos()).unwrap_or(u64::MAX),
        }
    }
}

/// Packets per second of `round` (which handles `BATCH` packets per call).
fn rate(mut round: impl FnMut()) -> f64 {
    let mut calls = 1u64;
    loop {
        let clock = Clock::start();
        for _ in 0..calls {
            round();
        }
        let ns = clock.elapsed_ns();
        if ns >= SAMPLE_MS * 1_000_000 {
            return (calls * BATCH as u64) as f64 * 1e9 / ns as f64;
        }
        calls = calls.saturating_mul(if ns < 10_000_000 { 8 } else { 2 });
    }
}

/// Core clock in GHz: a loop-carried `imul` (3 cycles) then `xor` (1 cycle),
/// fastest of many short runs so that one runs undisturbed on a busy machine.
fn clock_ghz() -> f64 {
    let n = 2_000_000u64;
    let mut best = f64::MAX;
    for _ in 0..50 {
        let clock = Instant::now();
        let mut x = black_box(1u64);
        for _ in 0..n {
            x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (x >> 29);
        }
        black_box(x);
        best = best.min(clock.elapsed().as_secs_f64());
    }
    4.0 * n as f64 / best / 1e9
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `openssl speed` packets/s for `-hmac digest` at `size` bytes, or NaN.
fn openssl_rate(digest: &str, size: usize) -> f64 {
    let out = Command::new("openssl")
        .args([
            "speed",
            "-mr",
            "-seconds",
            "1",
            "-bytes",
            &size.to_string(),
            "-hmac",
            digest,
        ])
        .output();
    let Ok(out) = out else { return f64::NAN };
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.starts_with("+F:"))
        .and_then(|l| l.rsplit(':').next())
        .and_then(|bytes_per_s| bytes_per_s.trim().parse::<f64>().ok())
        .map_or(f64::NAN, |b| b / size as f64)
}

struct Packets {
    data: Vec<Vec<u8>>,
}

impl Packets {
    fn new(size: usize, seed: u64) -> Self {
        let mut s = seed;
        let mut byte = move || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let z = (s ^ (s >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            (z >> 56) as u8
        };
        Self {
            data: (0..BATCH)
                .map(|_| (0..size).map(|_| byte()).collect())
                .collect(),
        }
    }
    fn inputs(&self) -> Vec<MacInput<'_>> {
        self.data.iter().map(|p| MacInput::message(p)).collect()
    }
}

fn one_packet(mac: &dyn Mac, inputs: &[MacInput<'_>], tags: &mut [Tag]) {
    for (input, tag) in inputs.iter().zip(tags.iter_mut()) {
        *tag = mac
            .compute(&[], black_box(input.message))
            .unwrap_or(Tag::EMPTY);
    }
    black_box(tags);
}

fn batch(mac: &dyn Mac, inputs: &[MacInput<'_>], tags: &mut [Tag]) {
    if mac.compute_many(black_box(inputs), tags).is_err() {
        tags.fill(Tag::EMPTY);
    }
    black_box(tags);
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let ghz: f64 = std::env::var("GHZ")
        .ok()
        .and_then(|g| g.parse().ok())
        .unwrap_or_else(clock_ghz);
    let sizes: &[usize] = if quick { &SIZES[..1] } else { &SIZES };
    let isa = Isa::current();
    println!(
        "# sha_speed: ours on `{}`, batch {BATCH}, median of {REPS}",
        isa.describe()
    );
    println!(
        "# time base: {}; cycles at {ghz:.3} GHz",
        if cpu_ns().is_some() {
            "thread CPU time"
        } else {
            "wall time"
        }
    );
    println!(
        "{:<12} {:>5} | {:>9} {:>9} {:>9} | {:>7} {:>7} | {:>6} {:>6} {:>6}",
        "alg",
        "bytes",
        "1pkt M/s",
        "b64 M/s",
        "ossl M/s",
        "1pkt/os",
        "b64/os",
        "c 1pkt",
        "c b64",
        "c ossl"
    );
    for (algorithm, digest, key_len) in [
        (Algorithm::HmacSha256, "sha256", 32),
        (Algorithm::HmacSha1, "sha1", 20),
    ] {
        let key: Vec<u8> = (0..key_len as u8)
            .map(|i| i.wrapping_mul(37) ^ 0x5c)
            .collect();
        let Ok(mac) = algorithm.new_mac(&key) else {
            continue;
        };
        for &size in sizes {
            let packets = Packets::new(size, size as u64);
            let inputs = packets.inputs();
            let mut tags = vec![Tag::EMPTY; BATCH];
            let (mut one, mut many, mut ossl) = (vec![], vec![], vec![]);
            for _ in 0..REPS {
                one.push(rate(|| one_packet(mac.as_ref(), &inputs, &mut tags)));
                many.push(rate(|| batch(mac.as_ref(), &inputs, &mut tags)));
                ossl.push(openssl_rate(digest, size));
            }
            let (one, many, ossl) = (median(one), median(many), median(ossl));
            let cycles = |pps: f64| ghz * 1e9 / pps;
            println!(
                "{:<12} {:>5} | {:>9.2} {:>9.2} {:>9.2} | {:>7.2} {:>7.2} | {:>6.0} {:>6.0} {:>6.0}",
                algorithm.name(),
                size,
                one / 1e6,
                many / 1e6,
                ossl / 1e6,
                one / ossl,
                many / ossl,
                cycles(one),
                cycles(many),
                cycles(ossl)
            );
        }
    }
    // Context rows: the portable (RustCrypto) path and the legacy digest, ours only.
    println!("# context, ours only (M pkts/s, 1pkt / b64):");
    for (algorithm, isa, label) in [
        (Algorithm::HmacSha256, Isa::PORTABLE, "portable"),
        (Algorithm::HmacSha1, Isa::PORTABLE, "portable"),
        (Algorithm::Sha1Legacy, isa, "sha-ni"),
        (Algorithm::HmacSha224, isa, "sha-ni"),
    ] {
        let Ok(mac) = algorithm.new_mac_with_isa(&[0x42; 20], isa) else {
            continue;
        };
        for size in [48, 68] {
            let packets = Packets::new(size, 7);
            let inputs = packets.inputs();
            let mut tags = vec![Tag::EMPTY; BATCH];
            let (mut one, mut many) = (vec![], vec![]);
            for _ in 0..REPS {
                one.push(rate(|| one_packet(mac.as_ref(), &inputs, &mut tags)));
                many.push(rate(|| batch(mac.as_ref(), &inputs, &mut tags)));
            }
            let (one, many) = (median(one), median(many));
            println!(
                "{:<12} {:>5} {:<8} {:>7.2} {:>7.2}   ({:.0} / {:.0} c)",
                algorithm.name(),
                size,
                label,
                one / 1e6,
                many / 1e6,
                ghz * 1e9 / one,
                ghz * 1e9 / many
            );
        }
    }
}
