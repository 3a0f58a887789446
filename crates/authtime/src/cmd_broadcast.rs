//! `authtime broadcast serve` and `authtime broadcast listen`: the arguments
//! checked, the loops of `authtime-broadcast` run ([`run_server`],
//! [`Listener`]), and what they report printed.
//!
//! The server multicasts one mode-5 packet per TESLA interval and answers
//! direct-sync requests. The listener bootstraps (retrying until its
//! timeout), then accepts time only from authenticated, safe packets within
//! the bootstrap's bound and the maximum step, optionally checked against an
//! NTS measurement (`--nts-check`).

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use authtime_broadcast::{
    BroadcastServer, ClientConfig, ClockPair, ListenBootstrapError, ListenEvent, Listener,
    Reference, Rejection, ServeLoopError, ServeStatus, bootstrap_until, run_server, server_params,
    unix_time,
};
use authtime_server::clock::state::ClockState;
use authtime_server::config::clock::ClockSettings;
use authtime_sign::{SigningKey, VerifyingKey};
use authtime_tesla::{ReceiverConfig, Sender};
use serde_json::json;
use zeroize::Zeroizing;

use crate::cli_broadcast::{BroadcastListenArgs, BroadcastServeArgs};
use crate::cmd_tesla_net::{
    group_addr, iface_addr, multicast_member, multicast_sender, seconds, socket_addr,
};
use crate::{Outcome, Streams};
use authtime_tesla_dtls::{SchemeSigner, SchemeVerifier};

/// Runs the server until `--duration` passes.
///
/// # Errors
/// Bad arguments, an unreadable key, a socket the kernel refuses.
pub fn serve(args: &BroadcastServeArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let group = group_addr("--group", &args.group)?;
    let iface = iface_addr(args.iface.as_deref())?;
    let sync_addr = socket_addr("--sync-listen", &args.sync_listen)?;
    let duration = args
        .duration
        .map(|d| seconds("--duration", d, 0.0, 1e9))
        .transpose()?;
    let interval_ns = args
        .interval_ms
        .checked_mul(1_000_000)
        .filter(|&ns| ns > 0)
        .ok_or_else(|| anyhow!("--interval-ms {}: out of range", args.interval_ms))?;
    let now = unix_time();
    let params = server_params(now, interval_ns, args.delay_intervals, args.chain_length)
        .map_err(|e| anyhow!("{e}"))?;
    let key = SigningKey::load_key_file(&args.key).map_err(|e| anyhow!("--key: {e}"))?;
    let mut master = Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut *master).map_err(|e| anyhow!("no random bytes from the system: {e}"))?;
    let sender = Sender::new(params, *master, now).map_err(|e| anyhow!("{e}"))?;
    let data = multicast_sender(iface, args.ttl)?;
    let sync = std::net::UdpSocket::bind(sync_addr)
        .with_context(|| format!("--sync-listen {sync_addr}: cannot bind"))?;
    let clock_settings = match &args.config {
        None => ClockSettings::default(),
        Some(path) => {
            crate::cmd_config::read_settings(path)?
                .map_err(|problems| anyhow!("{}", problems.lines.join("\n")))?
                .clock
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let (clock, refresher) =
        authtime_server::clock::state::start_refresher(&clock_settings, Arc::clone(&stop))
            .map_err(|e| anyhow!("clock source: {e}"))?;
    let local_sync = sync
        .local_addr()
        .map_or_else(|_| args.sync_listen.clone(), |a| a.to_string());
    let scheme = key.scheme();
    let server = BroadcastServer::new(data, sync, group, sender, Box::new(SchemeSigner(key)));
    let result = serve_with_clock(
        args,
        streams,
        server,
        &clock,
        duration,
        (scheme, local_sync),
    );
    stop.store(true, Ordering::Relaxed);
    let _ = refresher.join();
    result
}

/// Runs [`run_server`] with the clock state running, and prints its reports.
fn serve_with_clock(
    args: &BroadcastServeArgs,
    streams: &mut Streams<'_>,
    mut server: BroadcastServer,
    clock: &ClockState,
    duration: Option<Duration>,
    (scheme, local_sync): (authtime_sign::Scheme, String),
) -> anyhow::Result<Outcome> {
    let (d, n) = (args.delay_intervals, args.chain_length);
    let group = server.group();
    let iface = iface_addr(args.iface.as_deref())?;
    let announced = clock.announce(authtime_server::clock::now_unix());
    writeln!(
        streams.stderr,
        "broadcast serve: clock from {}: {}",
        clock.description(),
        announced.unsynchronized.map_or_else(
            || format!("synchronized, stratum {}", announced.stratum),
            |cause| format!("UNSYNCHRONIZED ({cause}); packets say so and listeners refuse them"),
        )
    )?;
    writeln!(
        streams.stderr,
        "broadcast serve: to {group} via {iface}, sync on {local_sync}, {scheme} key, T_int {} \
         ms, d {d}, chain {n} keys",
        args.interval_ms
    )?;
    let mut write_error = None;
    let mut on_status = |s: ServeStatus| match writeln!(
        streams.stderr,
        "broadcast serve: {} packets sent, {} sync requests answered",
        s.sent, s.syncs
    ) {
        Ok(()) => ControlFlow::Continue(()),
        Err(e) => {
            write_error = Some(e);
            ControlFlow::Break(())
        }
    };
    let mut announce = || clock.announce(authtime_server::clock::now_unix());
    let done = run_server(&mut server, &mut announce, duration, &mut on_status);
    if let Some(e) = write_error {
        return Err(e.into());
    }
    let s = done.map_err(|e| match e {
        ServeLoopError::ScheduleEnded => anyhow!("{e} (--chain-length)"),
        other => anyhow!("{other}"),
    })?;
    writeln!(
        streams.stderr,
        "broadcast serve: done: {} packets sent, {} sync requests answered",
        s.sent, s.syncs
    )?;
    Ok(Outcome::Success)
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// Bootstraps, listens and reports samples until `--count` or `--timeout`.
///
/// # Errors
/// Bad arguments, an unreadable public key, a socket the kernel refuses, a
/// failed write.
pub fn listen(args: &BroadcastListenArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let group = group_addr("--group", &args.group)?;
    let iface = iface_addr(args.iface.as_deref())?;
    let sync_addr = socket_addr("--sync", &args.sync)?;
    let timeout = seconds("--timeout", args.timeout, 0.01, 86_400.0)?;
    if !(args.max_step_ms > 0.0 && args.max_step_ms <= 3.6e6) {
        return Err(anyhow!(
            "--max-step-ms {}: must be above 0 and at most 3600000",
            args.max_step_ms
        ));
    }
    if args.count == 0 {
        return Err(anyhow!("--count 0: must be at least 1"));
    }
    let public = VerifyingKey::load_key_file(&args.pubkey).map_err(|e| anyhow!("--pubkey: {e}"))?;
    let verifier = SchemeVerifier(public);
    let config = ClientConfig {
        max_step_ns: (args.max_step_ms * 1e6) as u64,
        ..ClientConfig::default()
    };
    let receiver_config = ReceiverConfig {
        drift_ppm: args.drift_ppm,
        ..ReceiverConfig::default()
    };
    let clocks = ClockPair::read();

    // Join first, so that packets sent during the bootstrap wait in the socket.
    let member = multicast_member(group, iface)?;
    member
        .set_read_timeout(Some(Duration::from_millis(100)))
        .context("group socket")?;
    let deadline = Instant::now() + timeout;
    let (client, rtt) =
        match bootstrap_until(sync_addr, &verifier, &receiver_config, config, deadline) {
            Ok(c) => c,
            Err(ListenBootstrapError::Refused(e)) => {
                return Ok(Outcome::Rejected(format!(
                    "the server's sync response does not verify with --pubkey ({e}): \
                     refusing to start"
                )));
            }
            Err(e @ ListenBootstrapError::NoAnswer { .. }) => {
                return Ok(Outcome::NoAnswer(format!(
                    "{e} within {:.1} s",
                    timeout.as_secs_f64()
                )));
            }
            Err(ListenBootstrapError::Connect { error, .. }) => {
                return Err(anyhow!("--sync {sync_addr}: cannot reach: {error}"));
            }
            Err(e) => return Err(anyhow!("{e}")),
        };
    let nts_reference = match &args.nts_check {
        None => None,
        Some(server) => {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(10));
            match crate::cmd_query_nts::nts_sample(server, args.nts_ca.as_deref(), left) {
                Ok((sample, addr)) => {
                    writeln!(
                        streams.stderr,
                        "broadcast listen: NTS reference from {server} (NTP at {addr}): offset \
                         {:+.3} ms, delay {:.3} ms",
                        sample.offset * 1e3,
                        sample.delay * 1e3
                    )?;
                    Some(sample)
                }
                Err(reason) => {
                    return Ok(Outcome::NoAnswer(format!(
                        "--nts-check {server}: no NTS reference: {reason}"
                    )));
                }
            }
        }
    };
    let reference = nts_reference.as_ref().map(|r| Reference {
        offset_s: r.offset,
        delay_s: r.delay,
        tolerance_ms: args.nts_tolerance_ms,
    });
    let p = client.receiver().params().clone();
    writeln!(
        streams.stderr,
        "broadcast listen: bootstrapped from {sync_addr} ({}): round trip {:.2} ms, T_int {} ms, \
         d {}",
        verifier.0.scheme(),
        rtt.as_secs_f64() * 1e3,
        p.interval_ns / 1_000_000,
        p.disclosure_delay,
    )?;

    let mut listener = Listener::new(client, clocks, reference);
    while listener.accepted() < args.count && Instant::now() < deadline {
        for event in listener.receive(&member) {
            print_event(args, streams, &event, reference.as_ref(), p.interval_ns)?;
        }
        streams.stdout.flush()?;
        if listener.client().stats().failed > 0 {
            break;
        }
    }
    let s = listener.client().stats();
    writeln!(
        streams.stderr,
        "broadcast listen: {} samples accepted, {} above the bound, {} steps too large, {} \
         unsafe, {} failed authentication, {} undecodable, {} from an unsynchronized sender",
        s.accepted,
        s.above_bound,
        s.step_too_large,
        s.unsafe_dropped,
        s.failed,
        s.undecodable,
        s.unsynchronized
    )?;
    if s.failed > 0 {
        return Ok(Outcome::Rejected(format!(
            "{} broadcast packets failed authentication",
            s.failed
        )));
    }
    if listener.disagreements() > 0 {
        return Ok(Outcome::Rejected(format!(
            "{} authenticated broadcast samples disagreed with NTS",
            listener.disagreements()
        )));
    }
    let accepted = listener.accepted();
    if accepted < args.count {
        return Ok(Outcome::NoAnswer(format!(
            "{accepted} of {} samples within {:.1} s{}",
            args.count,
            timeout.as_secs_f64(),
            if s.unsynchronized > 0 {
                format!(
                    " ({} authenticated samples came from a sender whose clock is unsynchronized)",
                    s.unsynchronized
                )
            } else {
                String::new()
            }
        )));
    }
    Ok(Outcome::Success)
}

/// Prints one listener event: accepted samples on standard output, the rest
/// on standard error.
fn print_event(
    args: &BroadcastListenArgs,
    streams: &mut Streams<'_>,
    event: &ListenEvent,
    reference: Option<&Reference>,
    interval_ns: u64,
) -> anyhow::Result<()> {
    match *event {
        ListenEvent::Accepted {
            count,
            offset_ns,
            estimate_ns,
            uncertainty_ns,
        } => {
            if args.json {
                writeln!(
                    streams.stdout,
                    "{}",
                    json!({
                        "sample": count,
                        "offset_ns": offset_ns,
                        "estimate_ns": estimate_ns,
                        "uncertainty_ns": uncertainty_ns,
                        "interval_ms": interval_ns / 1_000_000,
                        "nts_offset_ns": reference.map(|r| (r.offset_s * 1e9) as i64),
                    })
                )?;
            } else {
                writeln!(
                    streams.stdout,
                    "sample {count}: offset {:+.3} ms, estimate {:+.3} ms, uncertainty {:.3} ms",
                    ms(offset_ns),
                    ms(estimate_ns),
                    uncertainty_ns as f64 / 1e6,
                )?;
            }
        }
        ListenEvent::DisagreesWithReference {
            estimate_ns,
            disagreement_ms,
            allowed_ms,
        } => writeln!(
            streams.stderr,
            "broadcast listen: sample refused: the estimate {:+.3} ms disagrees with NTS \
             ({:+.3} ms) by {disagreement_ms:.3} ms, more than the {allowed_ms:.3} ms allowed",
            ms(estimate_ns),
            reference.map_or(0.0, |r| r.offset_s * 1e3)
        )?,
        ListenEvent::Refused { offset_ns, why } => {
            let why = match why {
                Rejection::AboveBound => "above the bootstrap's upper bound",
                Rejection::StepTooLarge => "a step larger than --max-step-ms",
                Rejection::NoArrival => "arrival time unknown",
                Rejection::Unsynchronized => {
                    "the sender says its clock is unsynchronized (leap 3 or stratum 0)"
                }
            };
            writeln!(
                streams.stderr,
                "broadcast listen: authenticated sample {:+.3} ms refused: {why}",
                ms(offset_ns)
            )?;
        }
    }
    Ok(())
}
