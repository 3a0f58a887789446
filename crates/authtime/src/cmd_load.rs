//! `authtime load ntp`: the lab's open-loop NTP load generator from the command line.

use std::time::Duration;

use anyhow::anyhow;
use authtime_lab::load_ntp::{LoadOptions, LoadReport, MAX_DURATION, run};
use authtime_server::config::parse_socket_addr;

use crate::{Outcome, Streams, cli::LoadNtpArgs};

/// Runs the generator and prints its report.
///
/// # Errors
/// Bad arguments, an unreadable key file or unknown key id, sockets that
/// cannot be opened.
pub fn load_ntp(args: &LoadNtpArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let target = parse_socket_addr(&args.target).map_err(|e| anyhow!("--target: {e}"))?;
    if !(args.duration > 0.0 && args.duration <= MAX_DURATION.as_secs_f64()) {
        return Err(anyhow!(
            "--duration {}: must be above 0 and at most {} s",
            args.duration,
            MAX_DURATION.as_secs()
        ));
    }
    let keys = match &args.key_file {
        Some(path) => Some(
            authtime_keys::KeySet::load(path, None)
                .map_err(|e| anyhow!(e))?
                .0,
        ),
        None => None,
    };
    let key = match (&keys, args.key_id) {
        (Some(keys), Some(id)) => Some(
            keys.get(id)
                .ok_or_else(|| anyhow!("--key-id {id}: not in the key file"))?,
        ),
        _ => None,
    };
    let opts = LoadOptions {
        target,
        rate: args.rate,
        duration: Duration::from_secs_f64(args.duration),
        sockets: args.sockets,
        drain: Duration::from_millis(500),
    };
    let report = run(&opts, key).map_err(|e| anyhow!(e))?;
    if args.json {
        writeln!(streams.stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_text(&report, streams)?;
    }
    Ok(Outcome::Success)
}

fn print_text(r: &LoadReport, streams: &mut Streams<'_>) -> anyhow::Result<()> {
    let l = &r.latency;
    writeln!(
        streams.stdout,
        "target {}: {} requests at {:.0}/s for {} s\n\
         sent {} ({:.0}/s, {} send errors), answered {} ({:.0}/s), loss {:.4}%\n\
         kiss-o'-death {}, crypto-NAK {}, unmatched {}\n\
         latency us: p50 {:.1}, p90 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}\n\
         schedule: {} requests late by more than 1 ms, worst {:.2} ms{}",
        r.target,
        r.sent + r.send_errors,
        r.rate,
        r.duration_s,
        r.sent,
        r.sent_rate,
        r.send_errors,
        r.received,
        r.received_rate,
        r.loss * 100.0,
        r.kisses,
        r.crypto_naks,
        r.unmatched,
        l.p50_us,
        l.p90_us,
        l.p99_us,
        l.p999_us,
        l.max_us,
        r.late_sends,
        r.max_lag_ms,
        if r.fell_behind {
            ": FELL BEHIND (the generator limited this run)"
        } else {
            ""
        }
    )?;
    Ok(())
}
