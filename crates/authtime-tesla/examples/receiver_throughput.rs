//! TESLA receiver throughput: 64-byte payloads (HMAC-SHA-256, 16-byte tags,
//! 1 ms intervals, d = 2) fed to a bootstrapped receiver at 10, 100 and 1000
//! packets per interval; prints packets verified per CPU-second of this
//! thread, next to bare HMAC-SHA-256 over the same bytes.
//!
//! `cargo run --release -p authtime-tesla --example receiver_throughput [packets]`

#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Instant;

use authtime_tesla::{
    BootstrapSigner, BootstrapVerifier, Params, Receiver, ReceiverConfig, Sender, SignError,
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

/// CPU time of this thread in ns (Linux), else wall time.
fn cpu_ns(wall: Instant) -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| wall.elapsed().as_nanos() as u64)
}

const T0: u64 = 1_000_000_000_000;
const INTERVAL: u64 = 1_000_000;
const SIZE: usize = 64;

fn run(per_interval: usize, total: usize, runs: usize) -> (f64, usize) {
    let params = Params {
        t0: Time(T0),
        interval_ns: INTERVAL,
        disclosure_delay: 2,
        chain_len: 1 << 16,
        mac: authtime_mac::Algorithm::HmacSha256,
        tag_len: 16,
        rollover_lead: 16,
    };
    let start = T0 + 10 * INTERVAL;
    let intervals = (total / per_interval) as u64;
    let mut sender = Sender::new(params, [5; 32], Time(start)).unwrap();
    let config = ReceiverConfig {
        buffer_max_packets: per_interval * 8,
        buffer_max_bytes: per_interval * 8 * (SIZE + 128),
        // Equal clocks: without drift the bound stays valid for the whole run.
        drift_ppm: 0,
        ..ReceiverConfig::default()
    };
    let (sync, request) = SyncClient::new(&[1; 32], Time(start), config).unwrap();
    let frags = sender
        .sync_response(&request, Time(start), &mut Unsigned)
        .unwrap();
    let mut packets = Vec::with_capacity(total);
    for k in 0..intervals {
        let base = start + (k + 1) * INTERVAL;
        for j in 0..per_interval as u64 {
            let t = Time(base + (j * INTERVAL) / per_interval as u64);
            let mut payload = [0x33u8; SIZE];
            payload[..8].copy_from_slice(&(k * per_interval as u64 + j).to_be_bytes());
            packets.push((sender.packet(&payload, t).unwrap(), t));
        }
    }
    let mut best = 0f64;
    let mut delivered = 0;
    for _ in 0..runs {
        let mut client = sync.clone();
        let mut rx: Option<Receiver> = None;
        for f in &frags {
            if let Ok(Some(r)) = client.handle(f, Time(start + 1), &Unsigned) {
                rx = Some(r);
            }
        }
        let mut rx = rx.unwrap();
        let wall = Instant::now();
        let cpu = cpu_ns(wall);
        for (p, t) in &packets {
            std::hint::black_box(rx.handle(p, *t));
        }
        let secs = (cpu_ns(wall) - cpu) as f64 / 1e9;
        delivered = rx.stats().delivered as usize;
        if std::env::var_os("STATS").is_some() {
            eprintln!("{:?}", rx.stats());
        }
        best = best.max(delivered as f64 / secs);
    }
    (best, delivered)
}

fn hmac_rate(len: usize) -> f64 {
    let mac = authtime_mac::Algorithm::HmacSha256
        .new_mac(&[9; 32])
        .unwrap();
    let msg = vec![0x33u8; len];
    let n = 1_000_000;
    let wall = Instant::now();
    let cpu = cpu_ns(wall);
    for _ in 0..n {
        std::hint::black_box(mac.compute(&[], std::hint::black_box(&msg)).ok());
    }
    n as f64 / ((cpu_ns(wall) - cpu) as f64 / 1e9)
}

fn main() {
    let total: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300_000);
    println!(
        "bare HMAC-SHA-256 over the authenticated bytes: {:.0}/s",
        hmac_rate(SIZE + 40)
    );
    for per_interval in [10, 100, 1000] {
        let (pps, delivered) = run(per_interval, total, 3);
        println!(
            "{per_interval:>5} packets/interval: {pps:>10.0} packets verified per CPU-second \
             ({delivered} delivered of {total})"
        );
    }
}
