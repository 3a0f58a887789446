//! `authtime tesla recv`: the arguments checked, the sockets opened, the
//! bootstrap and the receiving loop of `authtime-tesla`
//! ([`bootstrap_stream`], [`StreamReceiver`]) run, and the statistics
//! printed (a status line, or JSON with `--json`/`--stats`) with the exit
//! verdict.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use authtime_sign::VerifyingKey;
use authtime_tesla::stream_bootstrap::LastProblem;
use authtime_tesla::{
    BootstrapError, ReceiverConfig, RecvEnd, RecvError, RecvReport, StreamBootstrapError,
    StreamReceiver, bootstrap_stream,
};
use serde_json::{Value, json};

use crate::cli_tesla::TeslaRecvArgs;
use crate::cmd_tesla_net::{group_addr, iface_addr, multicast_member, seconds, socket_addr};
use crate::{Outcome, Streams};
use authtime_tesla_dtls::SchemeVerifier;

/// How long one wait on the group socket lasts during the bootstrap.
const POLL: Duration = Duration::from_millis(2);

/// Receives until the stream ends, the group falls silent or the clock bound fails.
///
/// # Errors
/// Bad arguments, an unreadable public key, an output file that cannot be
/// created, a socket the kernel refuses, a failed write.
pub fn recv(args: &TeslaRecvArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let group = group_addr("--group", &args.group)?;
    let iface = iface_addr(args.iface.as_deref())?;
    let sender = socket_addr("--sender", &args.sender)?;
    let timeout = seconds("--timeout", args.timeout, 0.01, 3600.0)?;
    let idle_exit = seconds("--idle-exit", args.idle_exit, 0.01, 86_400.0)?;
    let status_every = seconds("--status-every", args.status_every, 0.0, 86_400.0)?;
    if args.max_buffer < 1500 {
        return Err(anyhow!(
            "--max-buffer {}: at least 1500 bytes",
            args.max_buffer
        ));
    }
    let public = VerifyingKey::load_key_file(&args.pubkey).map_err(|e| anyhow!("--pubkey: {e}"))?;
    let verifier = SchemeVerifier(public);
    let Streams { stdout, stderr, .. } = streams;
    let stderr: &mut dyn Write = &mut **stderr;
    let mut file;
    let out: &mut dyn Write = match &args.out {
        Some(path) => {
            file = BufWriter::new(File::create(path).with_context(|| path.display().to_string())?);
            &mut file
        }
        None => &mut **stdout,
    };

    let group_socket = multicast_member(group, iface)?;
    group_socket
        .set_read_timeout(Some(POLL))
        .context("group socket")?;
    let unspecified = match sender {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let sync_socket = UdpSocket::bind((unspecified, 0)).context("cannot open a UDP socket")?;
    sync_socket
        .connect(sender)
        .with_context(|| format!("--sender {sender}: cannot reach"))?;
    sync_socket.set_nonblocking(true).context("sync socket")?;

    let config = ReceiverConfig {
        drift_ppm: args.drift_ppm,
        buffer_max_bytes: args.max_buffer,
        ..ReceiverConfig::default()
    };
    let boot = match bootstrap_stream(
        &group_socket,
        &sync_socket,
        &verifier,
        &config,
        timeout,
        args.max_buffer,
    ) {
        Ok(b) => b,
        Err(StreamBootstrapError::Refused(e)) => {
            let reason = format!(
                "the sender's sync response does not verify with --pubkey ({e}): refusing to \
                 start"
            );
            write_stats(args, stderr, &json!({"bootstrap": null, "refused": reason}))?;
            return Ok(Outcome::Rejected(reason));
        }
        Err(StreamBootstrapError::NoAnswer(last_problem)) => {
            let reason = format!(
                "no bootstrap from the sender within {:.1} s: {}",
                timeout.as_secs_f64(),
                problem_text(&last_problem)
            );
            write_stats(
                args,
                stderr,
                &json!({"bootstrap": null, "no_answer": reason}),
            )?;
            return Ok(Outcome::NoAnswer(reason));
        }
        Err(e) => return Err(anyhow!("{e}")),
    };
    let p = boot.receiver.params().clone();
    writeln!(
        stderr,
        "tesla recv: bootstrapped from {sender} ({}): round trip {:.1} ms in {} fragments, \
         T_int {} ms, d {}, chain {} keys, {} tag {} bytes",
        verifier.0.scheme(),
        boot.rtt.as_secs_f64() * 1e3,
        boot.fragments,
        p.interval_ns / 1_000_000,
        p.disclosure_delay,
        p.chain_len,
        p.mac.name(),
        p.tag_len,
    )?;
    let bootstrap_json = json!({
        "sender": sender.to_string(),
        "scheme": verifier.0.scheme().name(),
        "round_trip_ms": boot.rtt.as_secs_f64() * 1e3,
        "fragments": boot.fragments,
        "interval_ms": p.interval_ns as f64 / 1e6,
        "disclosure_delay": p.disclosure_delay,
        "chain_length": p.chain_len,
        "mac": p.mac.name(),
        "tag_len": p.tag_len,
        "early_packets": boot.early.len(),
    });

    // The eviction choices under a flood must be unpredictable to the
    // attacker, who may have seen our sync request's nonce: fresh bytes.
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| anyhow!("no random bytes from the system: {e}"))?;
    let mut run = StreamReceiver::new(boot, &seed, out).map_err(recv_error)?;
    let end = run
        .receive(&group_socket, out, idle_exit, status_every, &mut |report| {
            writeln!(stderr, "tesla recv: {}", status_line(report))
        })
        .map_err(recv_error)?;
    let report = run.report();
    let summary = summary_json(&report, bootstrap_json);
    if args.json || args.stats.is_some() {
        write_stats(args, stderr, &summary)?;
    } else {
        writeln!(stderr, "tesla recv: {}", status_line(&report))?;
    }
    Ok(verdict(&report, end == RecvEnd::Idle, idle_exit))
}

/// The last bootstrap problem, in the words of the command line.
fn problem_text(problem: &LastProblem) -> String {
    match problem {
        LastProblem::Response(BootstrapError::UncertaintyTooLarge) => {
            "the round trip (signing included) is d intervals or more: every packet would be \
             unsafe; the sender needs a larger --delay-intervals or --interval-ms"
                .into()
        }
        other => other.to_string(),
    }
}

/// The receiver's error, with the causes that `main` looks for (a closed
/// output) kept in the chain.
fn recv_error(e: RecvError) -> anyhow::Error {
    match e {
        RecvError::Output(io) => anyhow::Error::new(io).context("writing the stream"),
        RecvError::GroupSocket(io) => anyhow::Error::new(io).context("group socket"),
        RecvError::Report(io) => io.into(),
        other => anyhow!("{other}"),
    }
}

/// Prints `object` (with `--json`) and writes it to `--stats FILE`.
fn write_stats(args: &TeslaRecvArgs, stderr: &mut dyn Write, object: &Value) -> anyhow::Result<()> {
    if args.json {
        writeln!(stderr, "{object}")?;
    }
    if let Some(path) = &args.stats {
        write_json_file(path, object)?;
    }
    Ok(())
}

fn write_json_file(path: &Path, object: &Value) -> anyhow::Result<()> {
    std::fs::write(path, format!("{object}\n")).with_context(|| path.display().to_string())
}

fn status_line(r: &RecvReport) -> String {
    let s = &r.stats;
    let failed = r.failed();
    format!(
        "authenticated {} packets, {} bytes written, waiting {}, missing {}, dropped: \
         unsafe {}, bad MAC {}, malformed {}, other failures {}, replays {}, buffer full {}{}",
        s.delivered,
        r.written_bytes,
        s.buffered_packets,
        r.missing,
        r.unsafe_dropped(),
        s.bad_mac,
        s.malformed,
        failed - s.bad_mac - s.malformed,
        s.replays,
        s.buffer_full,
        if r.ended { ", stream ended" } else { "" },
    )
}

fn summary_json(r: &RecvReport, bootstrap: Value) -> Value {
    let s = &r.stats;
    json!({
        "bootstrap": bootstrap,
        "end_of_stream": r.ended,
        "clock_bound_violated": r.clock_bound_violated,
        "packets": s.packets,
        "authenticated": s.delivered,
        "authenticated_failed": r.failed(),
        "written_payloads": r.written_payloads,
        "written_bytes": r.written_bytes,
        "waiting": s.buffered_packets,
        "waiting_bytes": s.buffered_bytes,
        "missing": r.missing,
        "keys_accepted": s.keys_accepted,
        "chain_switches": s.chain_switches,
        "dropped": {
            "unsafe": r.unsafe_dropped(),
            "bad_mac": s.bad_mac,
            "malformed": s.malformed,
            "bad_key": s.bad_keys,
            "key_too_far": s.keys_too_far,
            "key_unreachable": s.keys_unreachable,
            "future_interval": s.future_interval,
            "future_key": s.future_keys,
            "clock_violation": s.clock_violations,
            "refused": s.refused,
            "replay": s.replays,
            "buffer_full": s.buffer_full,
            "evicted": s.evicted,
            "expired": s.expired,
            "unexpected_kind": s.unexpected_kind,
            "before_bootstrap_overflow": r.early_overflow,
            "before_bootstrap_unsafe": r.early_unsafe,
            "late": r.late,
            "unframed": r.unframed,
        },
    })
}

fn verdict(r: &RecvReport, idle: bool, idle_exit: Duration) -> Outcome {
    let (failed, unsafe_dropped) = (r.failed(), r.unsafe_dropped());
    if r.clock_bound_violated {
        return Outcome::Rejected(
            "an authentic key arrived before the clock bound allows: the bound is wrong, \
             stopped (only authenticated data was written)"
                .into(),
        );
    }
    if failed + unsafe_dropped > 0 {
        return Outcome::Rejected(format!(
            "{failed} packets failed authentication and {unsafe_dropped} arrived too late to \
             be safe (only authenticated data was written)"
        ));
    }
    if idle {
        return Outcome::NoAnswer(format!(
            "no packet for {:.1} s before the end of the stream",
            idle_exit.as_secs_f64()
        ));
    }
    Outcome::Success
}
