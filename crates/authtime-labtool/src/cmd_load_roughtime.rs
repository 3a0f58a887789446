//! `authtime-lab load roughtime`: the lab's Roughtime load generator from
//! the command line.

use std::{net::SocketAddr, time::Duration};

use anyhow::anyhow;
use authtime_lab::load_roughtime::{
    MAX_DURATION, RoughtimeLoadOptions, Version, parse_public_key, run,
};

use crate::{
    Streams,
    cli::{LoadRoughtimeArgs, RoughtimeVersionArg},
};

/// Runs the generator and prints its report.
///
/// # Errors
/// Bad arguments (a target off loopback, a key that does not parse, bounds),
/// a socket that cannot be opened.
pub fn load_roughtime(args: &LoadRoughtimeArgs, streams: &mut Streams<'_>) -> anyhow::Result<()> {
    let target: SocketAddr = args.target.trim().parse().map_err(|_| {
        anyhow!(
            "--target `{}`: not an address with a port (for example 127.0.0.1:2002)",
            args.target
        )
    })?;
    let public_key = parse_public_key(&args.public_key).map_err(|e| anyhow!("--public-key {e}"))?;
    if !(args.duration > 0.0 && args.duration <= MAX_DURATION.as_secs_f64()) {
        return Err(anyhow!(
            "--duration {}: must be above 0 and at most {} s",
            args.duration,
            MAX_DURATION.as_secs()
        ));
    }
    let versions = match args.offer {
        RoughtimeVersionArg::Rfc => vec![Version::Rfc1],
        RoughtimeVersionArg::Draft => vec![Version::Draft12],
        RoughtimeVersionArg::Both => vec![Version::Draft12, Version::Rfc1],
    };
    let opts = RoughtimeLoadOptions {
        target,
        public_key,
        versions,
        window: args.window,
        duration: Duration::from_secs_f64(args.duration),
        max_requests: args.max_requests,
        verify_every: args.verify_every,
        pool: 4096,
    };
    let r = run(&opts).map_err(|e| anyhow!(e))?;
    if args.json {
        writeln!(streams.stdout, "{}", serde_json::to_string_pretty(&r)?)?;
        return Ok(());
    }
    let versions: Vec<String> = r
        .versions_seen
        .iter()
        .map(|(v, n)| format!("{v:#x}: {n}"))
        .collect();
    writeln!(
        streams.stdout,
        "target {target}: {} requests of {} bytes, window {}\n\
         responses {} in {:.2} s ({:.0}/s), lost {}, send errors {}, largest response {} bytes\n\
         verified {} (versions {}), failed {}{}",
        r.sent,
        r.request_bytes,
        args.window,
        r.received,
        r.wall_s,
        r.responses_per_s,
        r.lost,
        r.send_errors,
        r.response_bytes_max,
        r.verified,
        if versions.is_empty() {
            "none".to_owned()
        } else {
            versions.join(", ")
        },
        r.verify_failed,
        r.first_failure
            .as_deref()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default()
    )?;
    Ok(())
}
