//! `authtime broadcast serve` and `authtime broadcast listen`: TESLA-protected
//! NTP broadcast (`authtime-broadcast`) as processes.
//!
//! The server multicasts one mode-5 packet per TESLA interval and answers
//! direct-sync requests. The listener bootstraps (retrying until its
//! timeout), then feeds every datagram of the group to the sans-IO
//! [`BroadcastClient`], which accepts time only from authenticated, safe
//! packets within the bootstrap's bound and the maximum step. Its clock is
//! the monotonic [`monotonic_time`]; samples are reported against the system
//! clock by the offset between the two read once at start.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use authtime_broadcast::{
    Bootstrap, BroadcastClient, BroadcastServer, ClientConfig, Rejection, monotonic_time, unix_time,
};
use authtime_server::clock_state::ClockState;
use authtime_server::config_clock::ClockSettings;
use authtime_sign::{SigningKey, VerifyingKey};
use authtime_tesla::{BootstrapError, Params, Receiver, ReceiverConfig, Sender, SyncClient, Time};
use serde_json::json;
use zeroize::Zeroizing;

use crate::cli_broadcast::{BroadcastListenArgs, BroadcastServeArgs};
use crate::cmd_tesla_net::{
    group_addr, iface_addr, multicast_member, multicast_sender, seconds, socket_addr,
};
use crate::{Outcome, Streams};
use authtime_tesla_dtls::{SchemeSigner, SchemeVerifier};

/// A sync request is repeated after this long without an answer.
const SYNC_RETRY: Duration = Duration::from_secs(1);

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
    let mac = authtime_tesla::mac_by_name("hmac-sha256").map_err(|e| anyhow!("{e}"))?;
    let interval_ns = args
        .interval_ms
        .checked_mul(1_000_000)
        .filter(|&ns| ns > 0)
        .ok_or_else(|| anyhow!("--interval-ms {}: out of range", args.interval_ms))?;
    let now = unix_time();
    let (d, n) = (args.delay_intervals, args.chain_length);
    let params = Params {
        t0: Time(now.0 - now.0 % interval_ns),
        interval_ns,
        disclosure_delay: d,
        chain_len: n,
        mac,
        tag_len: 16,
        rollover_lead: d.saturating_mul(4).max(16).min((n / 2).max(1)),
    };
    params.validate().map_err(|e| anyhow!("{e}"))?;
    let key = SigningKey::load_key_file(&args.key).map_err(|e| anyhow!("--key: {e}"))?;
    let mut master = Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut *master).map_err(|e| anyhow!("no random bytes from the system: {e}"))?;
    let sender = Sender::new(params, *master, now).map_err(|e| anyhow!("{e}"))?;
    let data = multicast_sender(iface, args.ttl)?;
    let sync = UdpSocket::bind(sync_addr)
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
        authtime_server::clock_state::start_refresher(&clock_settings, Arc::clone(&stop))
            .map_err(|e| anyhow!("clock source: {e}"))?;
    let result = serve_with_clock(
        args,
        streams,
        (data, sync, group, sender, key),
        &clock,
        duration,
    );
    stop.store(true, Ordering::Relaxed);
    let _ = refresher.join();
    result
}

/// The broadcast loop of [`serve`], with the clock state running.
fn serve_with_clock(
    args: &BroadcastServeArgs,
    streams: &mut Streams<'_>,
    (data, sync, group, sender, key): (UdpSocket, UdpSocket, SocketAddrV4, Sender, SigningKey),
    clock: &ClockState,
    duration: Option<Duration>,
) -> anyhow::Result<Outcome> {
    let scheme = key.scheme();
    let (d, n) = (args.delay_intervals, args.chain_length);
    let schedule = sender.params().schedule();
    let iface = iface_addr(args.iface.as_deref())?;
    let local_sync = sync
        .local_addr()
        .map_or_else(|_| args.sync_listen.clone(), |a| a.to_string());
    let mut server = BroadcastServer::new(data, sync, group, sender, Box::new(SchemeSigner(key)));
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
    let started = Instant::now();
    let mut last_interval = None;
    let mut last_status = Instant::now();
    loop {
        if duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        let now = unix_time();
        let interval = schedule
            .interval_at(now)
            .ok_or_else(|| anyhow!("the sender's schedule ended (--chain-length)"))?;
        if last_interval != Some(interval) {
            last_interval = Some(interval);
            server.set_clock(clock.announce(authtime_server::clock::now_unix()));
            server
                .broadcast()
                .map_err(|e| anyhow!("broadcast to {group}: {e}"))?;
        }
        // Wait for sync requests until the next interval starts (at most 10 ms).
        let next = schedule
            .interval_start(interval.saturating_add(1))
            .unwrap_or(now);
        let wait = Duration::from_nanos(next.0.saturating_sub(unix_time().0))
            .clamp(Duration::from_micros(100), Duration::from_millis(10));
        server
            .answer_syncs(wait)
            .map_err(|e| anyhow!("sync socket: {e}"))?;
        if last_status.elapsed() >= Duration::from_secs(10) {
            last_status = Instant::now();
            writeln!(
                streams.stderr,
                "broadcast serve: {} packets sent, {} sync requests answered",
                server.sent(),
                server.syncs()
            )?;
        }
    }
    writeln!(
        streams.stderr,
        "broadcast serve: done: {} packets sent, {} sync requests answered",
        server.sent(),
        server.syncs()
    )?;
    Ok(Outcome::Success)
}

/// How a bootstrap attempt ended without a client.
enum Refusal {
    /// The response does not verify (exit 1).
    Refused(String),
    /// Nothing usable in time (exit 3).
    NoAnswer(String),
}

/// Direct time synchronisation with `sync_addr` on the monotonic clock,
/// requests repeated every [`SYNC_RETRY`] until `deadline`.
fn bootstrap(
    sync_addr: SocketAddr,
    verifier: &SchemeVerifier,
    receiver_config: &ReceiverConfig,
    config: ClientConfig,
    deadline: Instant,
) -> anyhow::Result<Result<(BroadcastClient, Duration), Refusal>> {
    let unspecified = match sync_addr {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let socket = UdpSocket::bind((unspecified, 0)).context("cannot open a UDP socket")?;
    socket
        .connect(sync_addr)
        .with_context(|| format!("--sync {sync_addr}: cannot reach"))?;
    let mut buf = [0u8; 2048];
    let mut last_problem = String::from("no answer");
    while Instant::now() < deadline {
        let mut nonce = [0u8; 32];
        getrandom::fill(&mut nonce).map_err(|e| anyhow!("no random bytes: {e}"))?;
        let sent_at = monotonic_time();
        let (mut sync, request) = SyncClient::new(&nonce, sent_at, receiver_config.clone())
            .map_err(|e| anyhow!("{e}"))?;
        if let Err(e) = socket.send(&request) {
            last_problem = format!("cannot send the sync request: {e}");
        }
        let attempt_end = (Instant::now() + SYNC_RETRY).min(deadline);
        let receiver: Option<Receiver> = loop {
            let left = attempt_end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break None;
            }
            socket.set_read_timeout(Some(left)).context("sync socket")?;
            let Ok(n) = socket.recv(&mut buf) else {
                // A timeout, or the server not listening yet (ICMP refused).
                std::thread::sleep(left.min(Duration::from_millis(50)));
                continue;
            };
            match sync.handle(&buf[..n], monotonic_time(), verifier) {
                Ok(Some(r)) => break Some(r),
                Ok(None) | Err(BootstrapError::NotOurs) => {}
                Err(e @ (BootstrapError::BadSignature | BootstrapError::SchemeMismatch { .. })) => {
                    return Ok(Err(Refusal::Refused(format!(
                        "the server's sync response does not verify with --pubkey ({e}): \
                         refusing to start"
                    ))));
                }
                Err(e) => last_problem = e.to_string(),
            }
        };
        let Some(receiver) = receiver else { continue };
        let arrived = monotonic_time();
        let bound = *receiver.clock_bound();
        let sender_time = i128::from(bound.reference.0) + i128::from(bound.offset_ns);
        let lower = sender_time - i128::from(arrived.0);
        let sender_unix_secs = i64::try_from(sender_time / 1_000_000_000).unwrap_or(0);
        let rtt = Duration::from_nanos(arrived.0.saturating_sub(sent_at.0));
        let client = BroadcastClient::new(
            receiver,
            Bootstrap {
                bound,
                lower_offset_ns: i64::try_from(lower).unwrap_or(i64::MIN),
            },
            config,
            sender_unix_secs,
        );
        return Ok(Ok((client, rtt)));
    }
    Ok(Err(Refusal::NoAnswer(format!(
        "no bootstrap from {sync_addr}: {last_problem}"
    ))))
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
    // The monotonic clock against the system clock, read once.
    let mono = monotonic_time();
    let wall = unix_time();
    let wall_minus_mono = i128::from(wall.0) - i128::from(mono.0);
    let to_system = |offset: i64| -> i64 {
        i64::try_from(i128::from(offset) - wall_minus_mono).unwrap_or(i64::MIN)
    };

    // Join first, so that packets sent during the bootstrap wait in the socket.
    let member = multicast_member(group, iface)?;
    member
        .set_read_timeout(Some(Duration::from_millis(100)))
        .context("group socket")?;
    let deadline = Instant::now() + timeout;
    let (mut client, rtt) =
        match bootstrap(sync_addr, &verifier, &receiver_config, config, deadline)? {
            Ok(c) => c,
            Err(Refusal::Refused(reason)) => return Ok(Outcome::Rejected(reason)),
            Err(Refusal::NoAnswer(reason)) => {
                return Ok(Outcome::NoAnswer(format!(
                    "{reason} within {:.1} s",
                    timeout.as_secs_f64()
                )));
            }
        };
    // The delay attack on one-way time (Teichel, Sibold, Milius) can shift the
    // broadcast estimate within the TESLA bound; a unicast NTS measurement
    // (two-way, authenticated) bounds the shift independently.
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
    let mut nts_disagreements = 0u64;
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

    let mut buf = vec![0u8; 65_536];
    let mut accepted = 0u64;
    while accepted < args.count && Instant::now() < deadline {
        let Ok(n) = member.recv(&mut buf) else {
            continue;
        };
        let arrived = monotonic_time();
        for sample in client.handle(&buf[..n], arrived) {
            let now = monotonic_time();
            match sample.verdict {
                Ok(()) => {
                    let estimate = client.offset_ns().unwrap_or(sample.offset_ns);
                    let uncertainty = client.uncertainty_ns(now).unwrap_or(u64::MAX);
                    if let Some(reference) = &nts_reference {
                        let disagreement = (ms(to_system(estimate)) - reference.offset * 1e3).abs();
                        let allowed = uncertainty as f64 / 1e6
                            + reference.delay.abs() * 1e3
                            + args.nts_tolerance_ms;
                        if disagreement > allowed {
                            nts_disagreements += 1;
                            writeln!(
                                streams.stderr,
                                "broadcast listen: sample refused: the estimate {:+.3} ms \
                                 disagrees with NTS ({:+.3} ms) by {disagreement:.3} ms, more \
                                 than the {allowed:.3} ms allowed",
                                ms(to_system(estimate)),
                                reference.offset * 1e3
                            )?;
                            continue;
                        }
                    }
                    accepted += 1;
                    if args.json {
                        writeln!(
                            streams.stdout,
                            "{}",
                            json!({
                                "sample": accepted,
                                "offset_ns": to_system(sample.offset_ns),
                                "estimate_ns": to_system(estimate),
                                "uncertainty_ns": uncertainty,
                                "interval_ms": p.interval_ns / 1_000_000,
                                "nts_offset_ns": nts_reference
                                    .as_ref()
                                    .map(|r| (r.offset * 1e9) as i64),
                            })
                        )?;
                    } else {
                        writeln!(
                            streams.stdout,
                            "sample {accepted}: offset {:+.3} ms, estimate {:+.3} ms, \
                             uncertainty {:.3} ms",
                            ms(to_system(sample.offset_ns)),
                            ms(to_system(estimate)),
                            uncertainty as f64 / 1e6,
                        )?;
                    }
                }
                Err(reason) => {
                    let why = match reason {
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
                        ms(to_system(sample.offset_ns))
                    )?;
                }
            }
        }
        streams.stdout.flush()?;
        if client.stats().failed > 0 {
            break;
        }
    }
    let s = client.stats();
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
    if nts_disagreements > 0 {
        return Ok(Outcome::Rejected(format!(
            "{nts_disagreements} authenticated broadcast samples disagreed with NTS"
        )));
    }
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
