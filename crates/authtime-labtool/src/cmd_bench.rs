//! `authtime-lab bench mac`: the lab's mac section alone, printed as a table or JSON.

use anyhow::anyhow;
use authtime_lab::{
    clock_estimate::ClockEstimate,
    section_mac::{MacOptions, MacRow, SIZES, measure_rows},
};
use authtime_mac::Algorithm;

use crate::{Streams, cli::BenchMacArgs};

/// Measures the selected algorithms and sizes against OpenSSL's per-packet EVP API.
///
/// # Errors
/// An unknown algorithm, a size of 0 or above 65507 bytes, or a failed measurement.
pub fn bench_mac(args: &BenchMacArgs, streams: &mut Streams<'_>) -> anyhow::Result<()> {
    let algorithms = if args.alg.is_empty() {
        Algorithm::ALL.to_vec()
    } else {
        args.alg
            .iter()
            .map(|a| Algorithm::from_name(a).map_err(|e| anyhow!("--alg: {e}")))
            .collect::<Result<_, _>>()?
    };
    let sizes = if args.size.is_empty() {
        SIZES.to_vec()
    } else {
        args.size.clone()
    };
    if let Some(bad) = sizes.iter().find(|&&s| s == 0 || s > 65_507) {
        return Err(anyhow!(
            "--size {bad}: a packet size must be 1 to 65507 bytes"
        ));
    }
    let opts = MacOptions {
        quick: !args.long,
        sizes,
        algorithms,
        openssl_speed: false,
        ours_only: args.ours_only,
    };
    let clock = ClockEstimate::measure(11);
    let ghz = clock.ghz;
    let rows = {
        let stderr = &mut *streams.stderr;
        let mut progress = authtime_lab::Progress::new(|line| {
            let _ = writeln!(stderr, "{line}");
        });
        measure_rows(&opts, &mut progress).map_err(|e| anyhow!(e))?
    };
    if args.json {
        let rows: Vec<_> = rows.iter().map(|r| json_row(r, ghz)).collect();
        let out = serde_json::json!({
            "ghz": ghz,
            "clock": clock,
            "isa": authtime_mac::Isa::current().describe(),
            "rows": rows,
        });
        writeln!(streams.stdout, "{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        print_table(&rows, &clock, streams)?;
    }
    Ok(())
}

/// A row as JSON, with cycles per packet beside each rate when the clock is
/// trusted (`null` otherwise).
fn json_row(row: &MacRow, ghz: Option<f64>) -> serde_json::Value {
    let cycles = |pps: Option<f64>| ghz.zip(pps.filter(|&p| p > 0.0)).map(|(g, p)| g * 1e9 / p);
    let mut value = serde_json::to_value(row).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "single_cycles_per_packet".into(),
            cycles(Some(row.single)).into(),
        );
        object.insert(
            "batch_cycles_per_packet".into(),
            cycles(Some(row.batch)).into(),
        );
        object.insert(
            "openssl_evp_cycles_per_packet".into(),
            cycles(row.openssl_evp).into(),
        );
    }
    value
}

fn print_table(
    rows: &[MacRow],
    clock: &ClockEstimate,
    streams: &mut Streams<'_>,
) -> anyhow::Result<()> {
    let ghz = clock.ghz;
    let cycles = |pps: f64| ghz.map_or_else(|| "-".to_owned(), |g| format!("{:.0}", g * 1e9 / pps));
    writeln!(
        streams.stdout,
        "{:<18} {:>6} {:>11} {:>8} {:>11} {:>8} {:>11} {:>8} {:>9}",
        "algorithm",
        "bytes",
        "1-pkt Mpps",
        "c/pkt",
        "batch Mpps",
        "c/pkt",
        "OpenSSL",
        "c/pkt",
        "1-pkt/SSL"
    )?;
    for r in rows {
        let evp = r.openssl_evp.unwrap_or(0.0);
        writeln!(
            streams.stdout,
            "{:<18} {:>6} {:>11.2} {:>8} {:>11.2} {:>8} {:>11} {:>8} {:>9}",
            r.algorithm,
            r.size,
            r.single / 1e6,
            cycles(r.single),
            r.batch / 1e6,
            cycles(r.batch),
            if evp > 0.0 {
                format!("{:.2}", evp / 1e6)
            } else {
                "-".into()
            },
            if evp > 0.0 { cycles(evp) } else { "-".into() },
            if evp > 0.0 && r.openssl_evp_exact {
                format!("{:.1}x", r.single / evp)
            } else {
                "-".into()
            },
        )?;
    }
    writeln!(
        streams.stdout,
        "\nMpps: millions of packets per CPU-second of one core (median of runs); batch = 64 packets \
         per call; OpenSSL = its per-packet EVP API, same run.\nc/pkt: CPU cycles per packet; clock: {}.",
        clock.describe()
    )?;
    Ok(())
}
