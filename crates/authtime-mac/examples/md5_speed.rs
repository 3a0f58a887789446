//! MD5-family speed next to OpenSSL, in one run: MD5(key ‖ packet) and HMAC-MD5
//! per packet and in batches of 64, and MD5 throughput serial vs RFC 1810's
//! K-way lanes vs eight independent buffers in lanes.
//!
//! Method: every figure is the median of 5 samples. For packets, a sample is
//! the best rate over back-to-back chunks of ~0.5 ms (wall clock) during
//! ~40 ms, which drops the time slices this thread lost on a shared machine.
//! For the 64 MiB buffer one hash takes longer than a time slice, so a sample
//! is bytes per CPU second of this thread (`/proc/thread-self/stat`, 10 ms
//! ticks) over at least 0.4 s. Cycles come from a dependent 64-bit multiply
//! chain (3 cycles each on Zen) timed like the packets, because the VM has no
//! PMU. OpenSSL's figures are `openssl speed -mr -seconds 1` (`+F:` lines,
//! bytes per CPU second), median of 5 runs.
//!
//! Run: `cargo run --release -p authtime-mac --example md5_speed` (set
//! `MD5_SPEED_QUICK=1` for one OpenSSL run per size and 16 MiB instead of 64).

use std::hint::black_box;
use std::process::Command;
use std::time::Instant;

use authtime_mac::{Algorithm, Isa, Mac, MacInput, Tag, md5, md5_kway_with_isa, md5_parallel8};
use hmac::{Hmac, KeyInit, Mac as _};
use md5::{Digest, Md5};

const SAMPLES: usize = 5;

/// Median of `SAMPLES` samples of `items` per second, `f` doing `items` per call.
fn rate(items: usize, mut f: impl FnMut()) -> f64 {
    let mut reps = 1usize;
    loop {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        if t.elapsed().as_secs_f64() > 5e-4 || reps > 1 << 24 {
            break;
        }
        reps *= 2;
    }
    let mut samples: Vec<f64> = (0..SAMPLES)
        .map(|_| {
            let start = Instant::now();
            let mut best: f64 = 0.0;
            while start.elapsed().as_secs_f64() < 0.04 {
                let t = Instant::now();
                for _ in 0..reps {
                    f();
                }
                best = best.max((reps * items) as f64 / t.elapsed().as_secs_f64());
            }
            best
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[SAMPLES / 2]
}

/// CPU time of this thread in seconds (utime + stime, 100 Hz ticks), Linux only.
fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Median of `SAMPLES` samples of `items` per CPU second, for calls that take
/// longer than a time slice; falls back to [`rate`] without `/proc`.
fn rate_cpu(items: usize, mut f: impl FnMut()) -> f64 {
    if thread_cpu_seconds().is_none() {
        return rate(items, f);
    }
    let mut samples: Vec<f64> = (0..SAMPLES)
        .map(|_| {
            let start = thread_cpu_seconds().unwrap_or(0.0);
            let mut calls = 0usize;
            let mut spent = 0.0;
            while spent < 0.4 {
                f();
                calls += 1;
                spent = thread_cpu_seconds().unwrap_or(0.0) - start;
            }
            (calls * items) as f64 / spent
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[SAMPLES / 2]
}

/// Core clock in GHz from a chain of dependent multiplies (3 cycles each).
/// Squaring, so that the compiler cannot fold unrolled multiplies into one.
fn clock_ghz() -> f64 {
    const N: u64 = 200_000;
    let muls_per_s = rate(N as usize, || {
        let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
        for _ in 0..black_box(N) {
            x = x.wrapping_mul(x);
        }
        black_box(x);
    });
    3.0 * muls_per_s / 1e9
}

/// Bytes per CPU second from `openssl speed -mr`, the median of `runs` runs.
fn openssl_speed(args: &[&str], bytes: usize, runs: usize) -> Option<f64> {
    let mut got: Vec<f64> = (0..runs)
        .filter_map(|_| {
            let out = Command::new("openssl")
                .args([
                    "speed",
                    "-mr",
                    "-seconds",
                    "1",
                    "-bytes",
                    &bytes.to_string(),
                ])
                .args(args)
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.lines()
                .find_map(|l| l.strip_prefix("+F:"))
                .and_then(|l| l.rsplit(':').next())
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .collect();
    got.sort_by(f64::total_cmp);
    got.get(got.len() / 2).copied()
}

/// splitmix64: reproducible packet bytes.
fn bytes(seed: &mut u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| {
            *seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = *seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

fn one_packet(mac: &dyn Mac, packet: &[u8]) -> f64 {
    rate(1, || {
        black_box(mac.compute(&[], black_box(packet)).ok());
    })
}

fn batch(mac: &dyn Mac, packets: &[Vec<u8>]) -> f64 {
    let inputs: Vec<MacInput<'_>> = packets.iter().map(|p| MacInput::message(p)).collect();
    let mut tags = vec![Tag::EMPTY; inputs.len()];
    rate(inputs.len(), || {
        mac.compute_many(black_box(&inputs), &mut tags).ok();
        black_box(&tags);
    })
}

fn show(label: &str, pps: f64, ghz: f64, openssl_pps: Option<f64>) {
    let vs = openssl_pps.map_or_else(|| "–".into(), |o| format!("{:.2}×", pps / o));
    println!(
        "  {label:<44} {:>8.2} M pkt/s {:>7.0} c/pkt   vs OpenSSL {vs}",
        pps / 1e6,
        ghz * 1e9 / pps
    );
}

fn main() {
    let quick = std::env::var_os("MD5_SPEED_QUICK").is_some();
    let runs = if quick { 1 } else { 5 };
    let isa = Isa::current();
    let ghz = clock_ghz();
    println!(
        "md5_speed: isa = {}, clock ≈ {ghz:.2} GHz (dependent imul chain)",
        isa.describe()
    );
    let mut seed = 1;
    let key = bytes(&mut seed, 16);
    let legacy = Algorithm::Md5Legacy
        .new_mac_with_isa(&key, isa)
        .expect("16-byte key");
    let legacy_portable = Algorithm::Md5Legacy
        .new_mac_with_isa(&key, Isa::PORTABLE)
        .expect("key");
    let hmac = Algorithm::HmacMd5
        .new_mac_with_isa(&key, isa)
        .expect("16-byte key");
    let hmac_portable = Algorithm::HmacMd5
        .new_mac_with_isa(&key, Isa::PORTABLE)
        .expect("key");
    let rustcrypto_hmac = <Hmac<Md5> as KeyInit>::new_from_slice(&key).expect("any key length");

    for size in [48usize, 68, 256, 1500] {
        let packets: Vec<Vec<u8>> = (0..64).map(|_| bytes(&mut seed, size)).collect();
        let packet = &packets[0];
        let ossl_hmac = openssl_speed(&["-hmac", "md5"], size, runs).map(|b| b / size as f64);
        let ossl_md5 = openssl_speed(&["md5"], size + 16, runs).map(|b| b / (size + 16) as f64);
        println!("\n{size}-byte packets, 16-byte key");
        println!(
            "md5-legacy = MD5(key ‖ packet); OpenSSL: `openssl speed -bytes {} md5`",
            size + 16
        );
        if let Some(o) = ossl_md5 {
            show("OpenSSL MD5 (EVP, one call per packet)", o, ghz, Some(o));
        }
        show(
            "RustCrypto md-5 (Digest: key then packet)",
            rate(1, || {
                black_box(
                    Md5::new()
                        .chain_update(&key)
                        .chain_update(black_box(packet))
                        .finalize(),
                );
            }),
            ghz,
            ossl_md5,
        );
        show(
            "authtime one packet (scalar)",
            one_packet(legacy.as_ref(), packet),
            ghz,
            ossl_md5,
        );
        show(
            "authtime batch of 64, portable (scalar loop)",
            batch(legacy_portable.as_ref(), &packets),
            ghz,
            ossl_md5,
        );
        show(
            "authtime batch of 64, AVX2 (24+24+16 lanes)",
            batch(legacy.as_ref(), &packets),
            ghz,
            ossl_md5,
        );
        println!("hmac-md5; OpenSSL: `openssl speed -bytes {size} -hmac md5`");
        if let Some(o) = ossl_hmac {
            show(
                "OpenSSL HMAC-MD5 (EVP_MAC init/update/final)",
                o,
                ghz,
                Some(o),
            );
        }
        show(
            "RustCrypto hmac + md-5 (keyed state cloned)",
            rate(1, || {
                black_box(
                    rustcrypto_hmac
                        .clone()
                        .chain_update(black_box(packet))
                        .finalize(),
                );
            }),
            ghz,
            ossl_hmac,
        );
        show(
            "authtime one packet (scalar)",
            one_packet(hmac.as_ref(), packet),
            ghz,
            ossl_hmac,
        );
        show(
            "authtime batch of 64, portable (scalar loop)",
            batch(hmac_portable.as_ref(), &packets),
            ghz,
            ossl_hmac,
        );
        show(
            "authtime batch of 64, AVX2 (24+24+16 lanes)",
            batch(hmac.as_ref(), &packets),
            ghz,
            ossl_hmac,
        );
    }

    let big = if quick { 16 << 20 } else { 64 << 20 };
    for (len, label) in [(16 << 10, "16 KiB (in cache)"), (big, "out of cache")] {
        let data = bytes(&mut seed, len);
        let eighth = len / 8;
        let parts: [&[u8]; 8] = core::array::from_fn(|i| &data[i * eighth..(i + 1) * eighth]);
        println!("\nMD5 throughput, {} KiB buffer, {label}", len >> 10);
        let mbit = |bytes_per_s: f64| bytes_per_s * 8.0 / 1e6;
        let measure = |items: usize, f: &mut dyn FnMut()| {
            if len > 1 << 20 {
                rate_cpu(items, f)
            } else {
                rate(items, f)
            }
        };
        let serial = measure(len, &mut || {
            black_box(md5(black_box(&data)));
        });
        let rows: Vec<(&str, f64)> = vec![
            ("MD5, one chain (authtime scalar)", serial),
            (
                "MD5, one chain (RustCrypto md-5)",
                measure(len, &mut || {
                    black_box(Md5::digest(black_box(&data)));
                }),
            ),
            (
                "K-way MD5, K=4, scalar chains",
                measure(len, &mut || {
                    black_box(md5_kway_with_isa(4, black_box(&data), Isa::PORTABLE));
                }),
            ),
            (
                "K-way MD5, K=4, AVX2 lanes",
                measure(len, &mut || {
                    black_box(md5_kway_with_isa(4, black_box(&data), isa));
                }),
            ),
            (
                "K-way MD5, K=16, AVX2 lanes (2 regs × 8)",
                measure(len, &mut || {
                    black_box(md5_kway_with_isa(16, black_box(&data), isa));
                }),
            ),
            (
                "8 independent MD5s, AVX2 8 lanes",
                measure(len, &mut || {
                    black_box(md5_parallel8(black_box(parts), isa));
                }),
            ),
        ];
        for (name, r) in &rows {
            println!(
                "  {name:<44} {:>8.0} Mbit/s {:>6.2} c/B {:>6.2}× serial",
                mbit(*r),
                ghz * 1e9 / r,
                r / serial
            );
        }
        if len == 16 << 10
            && let Some(o) = openssl_speed(&["md5"], len, runs)
        {
            println!(
                "  {:<44} {:>8.0} Mbit/s {:>6.2} c/B {:>6.2}× serial",
                "OpenSSL MD5 (`openssl speed -bytes 16384 md5`)",
                mbit(o),
                ghz * 1e9 / o,
                o / serial
            );
        }
    }
}
