//! Section `rfc1810` (seed 001, RFC 1810 "Report on MD5 Performance"): MD5
//! throughput in Mbit/s with the data in cache and out of cache, serial MD5
//! against RFC 1810's K-way interleaved MD5 (K = 4, 16) computed in parallel
//! lanes, next to the RFC's 1995 measurements and its prediction.

use authtime_mac::{Isa, md5, md5_kway_with_isa, md5_parallel8};

use crate::{
    Progress, openssl_speed,
    plot::{Plot, Series},
    rate::{Budget, measure},
    report::{Section, Table},
};

/// RFC 1810's measurements ("md5 -t", data not in the on-chip cache), Mbit/s.
pub const RFC1810_MEASURED: [(&str, f64); 8] = [
    ("DEC Alpha (190 MHz)", 87.0),
    ("HP 9000/720", 33.0),
    ("IBM RS/6000 7006 (PPC 601 @80 MHz)", 48.0),
    ("Intel i486/66 NetBSD", 31.0),
    ("Intel Pentium/90 NeXTStep", 44.0),
    ("SGI/IP-20 IRIX 5.2", 52.0),
    ("Sun SPARC-10/51, SPARC-20/50", 37.0),
    ("Sun SPARC-20/71", 57.0),
];

/// A hash of a whole buffer, as one variant computes it.
type Digest = dyn Fn(&[u8]) -> [u8; 16];

/// One measured variant.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Md5Row {
    /// What was hashed how.
    pub variant: String,
    /// Buffer size in bytes.
    pub buffer: usize,
    /// Whether the buffer is larger than the last-level cache.
    pub out_of_cache: bool,
    /// Mbit/s per core (median).
    pub mbit_s: f64,
}

fn buffer(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Runs the section.
///
/// # Errors
/// Never in practice; the signature matches the other sections.
pub fn run(quick: bool, ghz: Option<f64>, progress: &mut Progress<'_>) -> Result<Section, String> {
    let budget = if quick { Budget::QUICK } else { Budget::FULL };
    let in_cache = 16 * 1024;
    // 32 MiB of L3 on the machines we run on: 64 MiB (quick) or 256 MiB is out of every cache.
    let big = if quick { 64 << 20 } else { 256 << 20 };
    let isa = Isa::current();
    // The multi-buffer row hashes the buffer as 8 independent slices, one per lane:
    // the same bytes, the parallelism a server gets from 8 packets at once.
    let eighths = move |d: &[u8]| -> [u8; 16] {
        let n = d.len() / 8;
        let parts: [&[u8]; 8] = core::array::from_fn(|i| &d[i * n..(i + 1) * n]);
        md5_parallel8(parts, isa)[0]
    };
    let variants: [(&str, Box<Digest>); 6] = [
        ("MD5 (serial, one chain)", Box::new(md5)),
        (
            "K-way MD5, K=4, scalar (two chains interleaved)",
            Box::new(|d: &[u8]| md5_kway_with_isa(4, d, Isa::PORTABLE)),
        ),
        (
            "K-way MD5, K=4, SIMD lanes",
            Box::new(move |d: &[u8]| md5_kway_with_isa(4, d, isa)),
        ),
        (
            "K-way MD5, K=16, scalar (two chains interleaved)",
            Box::new(|d: &[u8]| md5_kway_with_isa(16, d, Isa::PORTABLE)),
        ),
        (
            "K-way MD5, K=16, SIMD lanes",
            Box::new(move |d: &[u8]| md5_kway_with_isa(16, d, isa)),
        ),
        (
            "MD5 of 8 independent buffers, SIMD lanes (multi-buffer)",
            Box::new(eighths),
        ),
    ];
    let mut rows = Vec::new();
    let total = variants.len() * 2 + 1;
    for (len, out_of_cache) in [(in_cache, false), (big, true)] {
        let data = buffer(len);
        for (name, f) in &variants {
            progress.step(
                &format!("rfc1810 {name}, {} KiB", len / 1024),
                rows.len(),
                total,
            );
            let bytes_per_s = measure(budget, len, || {
                std::hint::black_box(f(std::hint::black_box(&data)));
            })
            .median;
            rows.push(Md5Row {
                variant: (*name).into(),
                buffer: len,
                out_of_cache,
                mbit_s: bytes_per_s * 8.0 / 1e6,
            });
        }
    }
    progress.step("rfc1810 openssl speed md5 16 KiB", rows.len(), total);
    let openssl = openssl_speed::ops_per_sec(&["md5"], in_cache, 1, None).ok();
    if let Some(ops) = openssl {
        rows.push(Md5Row {
            variant: "OpenSSL MD5 (`openssl speed md5`)".into(),
            buffer: in_cache,
            out_of_cache: false,
            mbit_s: ops * in_cache as f64 * 8.0 / 1e6,
        });
    }

    let serial_in = rows
        .iter()
        .find(|r| !r.out_of_cache && r.variant.starts_with("MD5 ("))
        .map_or(1.0, |r| r.mbit_s);
    let serial_out = rows
        .iter()
        .find(|r| r.out_of_cache && r.variant.starts_with("MD5 ("))
        .map_or(1.0, |r| r.mbit_s);
    let mut table = Table::new(
        "MD5 throughput per core",
        &[
            "variant",
            "buffer",
            "Mbit/s",
            "× serial MD5",
            "c/B",
            "× RFC 1810's best (87 Mbit/s)",
        ],
    );
    for r in &rows {
        let base = if r.out_of_cache {
            serial_out
        } else {
            serial_in
        };
        table.row(vec![
            r.variant.clone(),
            if r.out_of_cache {
                format!("{} MiB (out of cache)", r.buffer >> 20)
            } else {
                format!("{} KiB (in cache)", r.buffer >> 10)
            },
            format!("{:.0}", r.mbit_s),
            format!("{:.2}", r.mbit_s / base),
            ghz.map_or_else(
                || "–".into(),
                |g| format!("{:.2}", g * 1e9 * 8.0 / (r.mbit_s * 1e6)),
            ),
            format!("{:.0}", r.mbit_s / 87.0),
        ]);
    }
    table.note =
        "Mbit/s = 10^6 bits per CPU-second of one core, median. c/B from the estimated clock."
            .into();

    let mut rfc = Table::new(
        "RFC 1810 (1995): measured MD5, data out of the on-chip cache",
        &["machine", "Mbit/s"],
    );
    for (m, v) in RFC1810_MEASURED {
        rfc.row(vec![m.into(), format!("{v:.0}")]);
    }
    let (pred_serial, pred_parallel) = ghz.map_or((None, None), |g| {
        // RFC 1810's software model: 32 dependent operations per 32-bit word serially
        // (Mbit/s = MIPS), 20 with the best operation tree (Mbit/s = 1.6 × MIPS); at one
        // operation per cycle, MIPS = MHz.
        (Some(g * 1e3), Some(1.6 * g * 1e3))
    });
    rfc.note = format!(
        "RFC 1810's prediction for one chain in software: Mbit/s = MIPS (serial) to 1.6 × MIPS (best tree). \
         At one operation per cycle on this core ({}) that is {} to {} Mbit/s; measured serial MD5 in cache: {:.0} Mbit/s. \
         The K-way proposal removes the chain dependency: K chains can use K SIMD lanes, so the RFC's limit becomes one of \
         lanes and issue width, not latency.",
        ghz.map_or_else(
            || format!("clock {}", crate::section_mac::UNTRUSTED_CLOCK),
            |g| format!("{g:.2} GHz"),
        ),
        pred_serial.map_or_else(|| "–".into(), |v| format!("{v:.0}")),
        pred_parallel.map_or_else(|| "–".into(), |v| format!("{v:.0}")),
        serial_in
    );

    let plot = Plot {
        stem: "rfc1810-md5-throughput".into(),
        title: "MD5 throughput: serial vs K-way lanes".into(),
        x_label: "K (number of chains; 1 = serial MD5)".into(),
        y_label: "Mbit/s per core".into(),
        log_x: true,
        log_y: false,
        series: [false, true]
            .iter()
            .map(|&ooc| {
                let pick = |prefix: &str| {
                    rows.iter()
                        .find(|r| r.out_of_cache == ooc && r.variant.starts_with(prefix))
                        .map(|r| r.mbit_s)
                };
                let points = [
                    (1.0, pick("MD5 (")),
                    (4.0, pick("K-way MD5, K=4, SIMD")),
                    (16.0, pick("K-way MD5, K=16, SIMD")),
                ]
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k, v)))
                .collect();
                Series {
                    name: if ooc {
                        "out of cache".into()
                    } else {
                        "in cache".into()
                    },
                    points,
                }
            })
            .collect(),
    };

    let speedup = |prefix: &str| {
        rows.iter()
            .find(|r| !r.out_of_cache && r.variant.starts_with(prefix))
            .map_or(0.0, |r| r.mbit_s / serial_in)
    };
    let (k4, k16) = (
        speedup("K-way MD5, K=4, SIMD"),
        speedup("K-way MD5, K=16, SIMD"),
    );
    let findings = vec![
        format!(
            "Serial MD5 runs at {serial_in:.0} Mbit/s in cache and {serial_out:.0} out of cache on one core: {:.0}× RFC 1810's best machine \
             (87 Mbit/s). In and out of cache differ little: the limit is the chain's latency, not memory, as the RFC argued.",
            serial_in / 87.0
        ),
        format!(
            "Breaking the chain as RFC 1810 proposes pays: K = 4 runs {k4:.1}× serial MD5 and K = 16 runs {k16:.1}× \
             (ideal: 4× and 16×; AVX2 has 8 lanes of 32 bits, so K = 4 leaves half of each register idle and K = 16 \
             is bound by the issue width, not the chain)."
        ),
    ];

    Ok(Section {
        id: "rfc1810".into(),
        title: "MD5 speed and K-way MD5 (seed 001: RFC 1810)".into(),
        seed: "001_e4088780163b59cb.txt: the measured rates (87 Mbit/s best), the software prediction (Mbit/s = 1 to 1.6 × MIPS), and the K-way proposal".into(),
        method: format!(
            "One core, thread CPU time, median of {} runs. In cache: a 16 KiB buffer hashed again and again. Out of cache: a {} MiB \
             buffer (larger than the 32 MiB last-level cache), hashed whole each time. K-way MD5 is authtime's definition \
             (crate docs of `md5_kway`), the SIMD-lane implementation checked equal to the scalar one by tests. \
             OpenSSL: `openssl speed -bytes 16384 md5` in the same run.",
            if quick { 5 } else { 7 },
            big >> 20
        ),
        tables: vec![table, rfc],
        plots: vec![plot],
        findings,
        data: serde_json::to_value(&rows).unwrap_or_default(),
    })
}
