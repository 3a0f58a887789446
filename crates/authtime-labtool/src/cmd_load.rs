//! `authtime-lab load ntp`, `load nts-ke` and `load nts`: the lab's open-loop
//! load generators from the command line.

use std::{net::SocketAddr, time::Duration};

use anyhow::anyhow;
use authtime_lab::load_ntp::{Arrivals, LoadOptions, LoadReport, MAX_CLIENTS, MAX_DURATION, run};
use authtime_lab::load_ntp_accuracy::{OffsetStats, ResponseStats};

use crate::{
    Streams,
    cli::{ArrivalsArg, GroupArg, LoadNtpArgs, LoadNtsArgs, LoadNtsCommonArgs, LoadNtsKeArgs},
};

/// Runs the generator and prints its report.
///
/// # Errors
/// Bad arguments, an unreadable key file or unknown key id, sockets that
/// cannot be opened.
pub fn load_ntp(args: &LoadNtpArgs, streams: &mut Streams<'_>) -> anyhow::Result<()> {
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
    if let Some(clients) = args.clients
        && !(1..=MAX_CLIENTS).contains(&clients)
    {
        return Err(anyhow!("--clients {clients}: must be 1 to {MAX_CLIENTS}"));
    }
    let opts = LoadOptions {
        sockets: args.sockets,
        arrivals: match args.arrivals {
            ArrivalsArg::Even => Arrivals::Even,
            ArrivalsArg::Poisson => Arrivals::Poisson,
        },
        seed: args.seed,
        interleaved: args.interleaved,
        clients: args.clients.unwrap_or(0),
        ..LoadOptions::new(target, args.rate, Duration::from_secs_f64(args.duration))
    };
    let report = run(&opts, key).map_err(|e| anyhow!(e))?;
    if args.json {
        writeln!(streams.stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_text(&report, streams)?;
    }
    Ok(())
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
    print_accuracy(r, streams)
}

/// The T3 offset lines, after the lines `load ntp` always printed.
fn print_accuracy(r: &LoadReport, streams: &mut Streams<'_>) -> anyhow::Result<()> {
    writeln!(
        streams.stdout,
        "requests: {} mode, {} arrivals, {} clients, {:.2} requests per sender wake-up{}",
        if r.interleaved {
            "interleaved"
        } else {
            "basic"
        },
        r.arrivals.name(),
        r.clients,
        r.mean_send_burst,
        if r.not_sent > 0 {
            format!(", {} not sent (time limit)", r.not_sent)
        } else {
            String::new()
        }
    )?;
    let Some(a) = &r.accuracy else {
        writeln!(
            streams.stdout,
            "T3 offset: not measured (no kernel receive timestamps on the replies)"
        )?;
        return Ok(());
    };
    let offsets = |what: &str, o: &OffsetStats| {
        format!(
            "T3 offset us ({what}, n {}): mean {:.3}, median {:.3}, p99 {:.3}, stddev {:.3}, \
             IQR {:.3}, min {:.3}, max {:.3}",
            o.count, o.mean_us, o.median_us, o.p99_us, o.stddev_us, o.iqr_us, o.min_us, o.max_us
        )
    };
    let response = |what: &str, s: &ResponseStats| {
        format!(
            "server response time us ({what}, n {}): median {:.1}, p99 {:.1}",
            s.count, s.median_us, s.p99_us
        )
    };
    if r.interleaved {
        writeln!(
            streams.stdout,
            "interleaved replies: {:.2}% of time replies, {:.2}% after each client's first two",
            100.0 * a.interleaved_share,
            100.0 * a.interleaved_share_after_warmup
        )?;
    }
    if a.basic.count > 0 {
        writeln!(
            streams.stdout,
            "{}",
            offsets("basic replies: receive time - T3", &a.basic)
        )?;
        writeln!(
            streams.stdout,
            "{}",
            response("basic replies: T3 - T2", &a.response_basic)
        )?;
    }
    if a.interleaved.count > 0 {
        writeln!(
            streams.stdout,
            "{}",
            offsets(
                "interleaved replies: previous reply's receive time - T3",
                &a.interleaved
            )
        )?;
        writeln!(
            streams.stdout,
            "{}",
            response(
                "interleaved replies: previous reply's actual T3 - its T2",
                &a.response_interleaved
            )
        )?;
    }
    if a.unstamped > 0 || a.interleaved_unmeasured > 0 {
        writeln!(
            streams.stdout,
            "not measured: {} replies without a receive timestamp, {} interleaved replies whose \
             previous reply had none",
            a.unstamped, a.interleaved_unmeasured
        )?;
    }
    Ok(())
}

/// `authtime-lab load nts-ke`: whole NTS-KE sessions on an open-loop schedule.
///
/// # Errors
/// Bad arguments, unreadable trust anchors, a file that cannot be written.
pub fn load_nts_ke(args: &LoadNtsKeArgs, streams: &mut Streams<'_>) -> anyhow::Result<()> {
    run_nts(&args.common, authtime_lab::load_nts::Mode::Ke, streams)
}

/// `authtime-lab load nts`: NTS-NTP exchanges with NTS-KE in a fixed ratio.
///
/// # Errors
/// Bad arguments, no NTS-KE session to start from, a file that cannot be written.
pub fn load_nts(args: &LoadNtsArgs, streams: &mut Streams<'_>) -> anyhow::Result<()> {
    let mode = authtime_lab::load_nts::Mode::Nts {
        ntp_per_ke: args.ntp_per_ke,
    };
    run_nts(&args.common, mode, streams)
}

/// `IP:PORT`, with the message `authtime serve` gives for its addresses.
fn parse_socket_addr(text: &str) -> Result<SocketAddr, String> {
    text.trim().parse().map_err(|_| {
        format!(
            "`{text}` is not an address with a port (for example 127.0.0.1:11123 or [::1]:11123)"
        )
    })
}

fn positive_seconds(name: &str, value: f64, max: f64) -> anyhow::Result<Duration> {
    if !(value > 0.0 && value <= max) {
        return Err(anyhow!(
            "{name} {value}: must be above 0 and at most {max} s"
        ));
    }
    Ok(Duration::from_secs_f64(value))
}

fn run_nts(
    args: &LoadNtsCommonArgs,
    mode: authtime_lab::load_nts::Mode,
    streams: &mut Streams<'_>,
) -> anyhow::Result<()> {
    use authtime_lab::load_nts::{self as nts, KeyExchangeOffer, MAX_STEP, NtsLoadOptions};
    let (host, port) = args
        .target
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
        .ok_or_else(|| anyhow!("--target {}: expected HOST:PORT", args.target))?;
    if let Some(ca) = &args.ca
        && !ca.is_file()
    {
        return Err(anyhow!("--ca {}: no such file", ca.display()));
    }
    let duration = positive_seconds("--duration", args.duration, MAX_STEP.as_secs_f64())?;
    let step = match args.step_seconds {
        Some(s) => positive_seconds("--step-seconds", s, MAX_STEP.as_secs_f64())?,
        None => duration,
    };
    let timeout = positive_seconds("--timeout", args.timeout, 30.0)?;
    let (rates, step) = match (&args.ramp, args.rate) {
        (Some(ramp), _) => (nts::parse_ramp(ramp).map_err(|e| anyhow!(e))?, step),
        (None, Some(rate)) => (vec![rate], duration),
        (None, None) => return Err(anyhow!("give --rate or --ramp")),
    };
    let offers = match args.group {
        GroupArg::X25519mlkem768 => vec![KeyExchangeOffer::X25519Mlkem768],
        GroupArg::X25519 => vec![KeyExchangeOffer::X25519],
        GroupArg::Both => KeyExchangeOffer::ALL.to_vec(),
    };
    let opts = NtsLoadOptions {
        ke_host: host.to_owned(),
        ke_port: port,
        ca: args.ca.clone(),
        ntp_target: None,
        mode,
        rate: rates[0],
        duration: step,
        timeout,
        connections_max: args.connections_max,
        sockets: args.sockets,
        threads: args.threads,
        tls_resumption: args.tls_resumption,
        key_exchange: offers[0],
    };
    // With `--group both`, each group runs the whole ramp in turn; every line
    // then names its group.
    let mut runs = Vec::new();
    for &offer in &offers {
        let mut lines = Vec::new();
        let opts = NtsLoadOptions {
            key_exchange: offer,
            ..opts.clone()
        };
        let steps = nts::run_ramp(opts, &rates, step, |s| lines.push(step_line(s)))
            .map_err(|e| anyhow!(e))?;
        for line in &lines {
            if offers.len() > 1 {
                write!(streams.stdout, "{}: ", offer.group_name())?;
            }
            writeln!(streams.stdout, "{line}")?;
        }
        // A server that closes most sessions before or during TLS is most
        // likely limiting this generator's address, not overloaded.
        let (resets, errors) = steps.iter().fold((0, 0), |(r, e), s| {
            (r + s.ke_errors.reset, e + s.ke_errors.total())
        });
        if errors > 0 && resets * 2 > errors {
            writeln!(
                streams.stderr,
                "authtime-lab: the server closed most failed sessions (reset {resets} of \
                 {errors} errors): an authtime server limits each client address ([nts-ke] \
                 client-limit, client-rate, client-burst, client-max-connections); all of this \
                 load comes from one address. Measure capacity with client-limit = false on \
                 the server."
            )?;
        }
        runs.push(serde_json::json!({ "key_exchange": offer, "steps": steps }));
    }
    if let Some(path) = &args.json {
        let mut json = serde_json::json!({
            "target": args.target,
            "mode": mode,
            "tls_resumption": args.tls_resumption,
        });
        // One group: its steps at the top, as before `--group`; several: one
        // entry per group.
        match <[_; 1]>::try_from(runs) {
            Ok([run]) => {
                json["key_exchange"] = run["key_exchange"].clone();
                json["steps"] = run["steps"].clone();
            }
            Err(runs) => json["groups"] = serde_json::Value::Array(runs),
        }
        std::fs::write(path, serde_json::to_string_pretty(&json)?)
            .map_err(|e| anyhow!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

fn step_line(s: &authtime_lab::load_nts_stats::StepReport) -> String {
    let p = |x: &authtime_lab::load_nts_stats::Percentiles| {
        format!(
            "p50 {:.0} p95 {:.0} p99 {:.0} max {:.0} us",
            x.p50_us, x.p95_us, x.p99_us, x.max_us
        )
    };
    let classes = |e: &authtime_lab::load_nts_stats::ErrorCounts| {
        if e.total() == 0 {
            String::new()
        } else {
            format!(": {}", e.breakdown())
        }
    };
    let mut line = format!(
        "rate {:.0}/s for {} s: {} scheduled; KE ok {} errors {} ({:.2}%{})",
        s.rate,
        s.duration_s,
        s.scheduled,
        s.ke_ok,
        s.ke_errors.total(),
        100.0 * s.ke_error_share,
        classes(&s.ke_errors)
    );
    if s.d_cke.count > 0 {
        line.push_str(&format!(" d_CKE {}", p(&s.d_cke)));
    }
    if !matches!(s.mode, authtime_lab::load_nts::Mode::Ke) {
        line.push_str(&format!(
            "; NTS ok {} errors {} ({:.2}%{}) d_CNTS {}",
            s.ntp_ok,
            s.ntp_errors.total(),
            100.0 * s.ntp_error_share,
            classes(&s.ntp_errors),
            p(&s.d_ntp)
        ));
    }
    line.push_str(&format!(
        "; generator CPU {:.0}%, worst start lag {:.1} ms{}",
        100.0 * s.generator_cpu,
        s.max_lag_ms,
        if s.fell_behind {
            ": FELL BEHIND (the generator limited this step)"
        } else {
            ""
        }
    ));
    line
}
