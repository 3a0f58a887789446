//! `authtime tesla recv`: joins a TESLA multicast group, bootstraps by direct
//! time synchronisation with the sender (a nonce, a signed response, the
//! whole round trip as clock uncertainty), and writes only authenticated
//! payloads, in stream order, with statistics on standard error.
//!
//! Packets that arrive before the bootstrap completes are kept (bounded by
//! `--max-buffer`) with their arrival times and handed to the receiver
//! afterwards: the clock bound holds for any local time, so the safety check
//! of each is the one it would have had on arrival.
//!
//! Order: payloads carry sequence numbers (`cmd_tesla_stream`). Once a key
//! authenticates payload `s`, every payload before `s` was sent in the same or
//! an earlier interval, whose key is now known: such a packet arriving later
//! is unsafe. So a gap below a released payload is final, and the output is
//! written in order without waiting.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use authtime_sign::VerifyingKey;
use authtime_tesla::{BootstrapError, Receiver, ReceiverConfig, Stats, Status, SyncClient, Time};
use serde_json::{Value, json};

use crate::cli_tesla::TeslaRecvArgs;
use crate::cmd_tesla_net::{
    group_addr, iface_addr, multicast_member, seconds, socket_addr, wall_clock,
};
use crate::cmd_tesla_stream::StreamWriter;
use crate::{Outcome, Streams};
use authtime_tesla_dtls::SchemeVerifier;

/// The first sync request is repeated after this long without a response,
/// and each later one after twice as long as the one before: every request
/// costs the sender a signature (and an LMS key one of its 1024 leaves).
const FIRST_SYNC_RETRY: Duration = Duration::from_secs(1);
/// Outstanding requests whose responses are still accepted.
const MAX_OUTSTANDING: usize = 8;
/// Largest datagram read.
const MAX_DATAGRAM: usize = 65_536;
/// How long one wait on the group socket lasts.
const POLL: Duration = Duration::from_millis(2);

/// A completed bootstrap.
struct Bootstrapped {
    receiver: Receiver,
    rtt: Duration,
    fragments: u64,
    early: Vec<(Vec<u8>, Time)>,
    early_overflow: u64,
}

/// How the bootstrap ended without a receiver.
enum BootstrapFailure {
    /// The response's signature (or scheme) does not match the public key.
    Refused(String),
    /// Nothing usable in time.
    NoAnswer(String),
}

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
    let boot = match bootstrap(
        &group_socket,
        &sync_socket,
        &verifier,
        &config,
        timeout,
        args.max_buffer,
    )? {
        Ok(b) => b,
        Err(BootstrapFailure::Refused(reason)) => {
            write_stats(args, stderr, &json!({"bootstrap": null, "refused": reason}))?;
            return Ok(Outcome::Rejected(reason));
        }
        Err(BootstrapFailure::NoAnswer(reason)) => {
            write_stats(
                args,
                stderr,
                &json!({"bootstrap": null, "no_answer": reason}),
            )?;
            return Ok(Outcome::NoAnswer(reason));
        }
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
    let mut run = Run {
        receiver: boot.receiver.with_eviction_seed(&seed),
        writer: StreamWriter::default(),
        early_overflow: boot.early_overflow,
        early_unsafe: 0,
    };
    for (datagram, arrived) in &boot.early {
        run.handle(datagram, *arrived, out)?;
    }
    // Packets sent before the receiver could judge them (key disclosures of
    // intervals already over, mostly) are not the stream's fault.
    run.early_unsafe = run.receiver.stats().unsafe_dropped;
    let idle = run.receive(&group_socket, out, stderr, idle_exit, status_every)?;
    let stats = run.receiver.stats();
    let summary = run.json(&stats, bootstrap_json);
    if args.json || args.stats.is_some() {
        write_stats(args, stderr, &summary)?;
    } else {
        writeln!(stderr, "tesla recv: {}", run.status_line(&stats))?;
    }
    Ok(run.verdict(&stats, idle, idle_exit))
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

/// Sends sync requests until a response verifies, keeping group packets that
/// arrive meanwhile. The outer error is a local failure (exit 2).
fn bootstrap(
    group_socket: &UdpSocket,
    sync_socket: &UdpSocket,
    verifier: &SchemeVerifier,
    config: &ReceiverConfig,
    timeout: Duration,
    max_early_bytes: usize,
) -> anyhow::Result<Result<Bootstrapped, BootstrapFailure>> {
    let deadline = Instant::now() + timeout;
    let mut clients: Vec<SyncClient> = Vec::new();
    let mut last_request: Option<Instant> = None;
    let mut retry = FIRST_SYNC_RETRY;
    let mut last_problem = String::from("no answer");
    let mut early = Vec::new();
    let (mut early_bytes, mut early_overflow) = (0usize, 0u64);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    while Instant::now() < deadline {
        if last_request.is_none_or(|t| t.elapsed() >= retry) {
            if last_request.is_some() {
                retry = retry.saturating_mul(2);
            }
            last_request = Some(Instant::now());
            let mut nonce = [0u8; 32];
            getrandom::fill(&mut nonce).map_err(|e| anyhow!("no random bytes: {e}"))?;
            let (client, request) = SyncClient::new(&nonce, wall_clock(), config.clone())
                .map_err(|e| anyhow!("{e}"))?;
            match sync_socket.send(&request) {
                Ok(_) => {}
                Err(e) => last_problem = format!("cannot send the sync request: {e}"),
            }
            if clients.len() == MAX_OUTSTANDING {
                clients.remove(0);
            }
            clients.push(client);
        }
        // The sync socket first: its timing is the clock bound.
        for _ in 0..64 {
            let n = match sync_socket.recv(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    last_problem = format!("sync socket: {e}");
                    break;
                }
            };
            let now = wall_clock();
            for client in &mut clients {
                match client.handle(&buf[..n], now, verifier) {
                    Ok(None) | Err(BootstrapError::NotOurs) => {}
                    Ok(Some(receiver)) => {
                        return Ok(Ok(Bootstrapped {
                            receiver,
                            rtt: Duration::from_nanos(now.0.saturating_sub(client.sent_at().0)),
                            fragments: client.reassembly_stats().fragments,
                            early,
                            early_overflow,
                        }));
                    }
                    Err(
                        e @ (BootstrapError::BadSignature | BootstrapError::SchemeMismatch { .. }),
                    ) => {
                        return Ok(Err(BootstrapFailure::Refused(format!(
                            "the sender's sync response does not verify with --pubkey ({e}): \
                             refusing to start"
                        ))));
                    }
                    Err(BootstrapError::UncertaintyTooLarge) => {
                        last_problem = "the round trip (signing included) is d intervals or \
                                        more: every packet would be unsafe; the sender needs a \
                                        larger --delay-intervals or --interval-ms"
                            .into();
                    }
                    Err(e) => last_problem = e.to_string(),
                }
            }
        }
        // A timeout just means polling again.
        if let Ok(n) = group_socket.recv(&mut buf) {
            if early_bytes + n <= max_early_bytes {
                early_bytes += n;
                early.push((buf[..n].to_vec(), wall_clock()));
            } else {
                early_overflow += 1;
            }
        }
    }
    Ok(Err(BootstrapFailure::NoAnswer(format!(
        "no bootstrap from the sender within {:.1} s: {last_problem}",
        timeout.as_secs_f64()
    ))))
}

/// The receiving phase.
struct Run {
    receiver: Receiver,
    writer: StreamWriter,
    early_overflow: u64,
    /// Packets received before the bootstrap and found unsafe after it.
    early_unsafe: u64,
}

impl Run {
    fn handle(&mut self, datagram: &[u8], now: Time, out: &mut dyn Write) -> anyhow::Result<()> {
        if let Status::Authenticated { released, .. } = self.receiver.handle(datagram, now) {
            self.writer
                .deliver(released, out)
                .context("writing the stream")?;
        }
        Ok(())
    }

    /// Returns whether it stopped for silence.
    fn receive(
        &mut self,
        socket: &UdpSocket,
        out: &mut dyn Write,
        stderr: &mut dyn Write,
        idle_exit: Duration,
        status_every: Duration,
    ) -> anyhow::Result<bool> {
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .context("group socket")?;
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let mut last_packet = Instant::now();
        let mut last_status = Instant::now();
        while !self.writer.ended && !self.receiver.is_refused() {
            match socket.recv(&mut buf) {
                Ok(n) => {
                    last_packet = Instant::now();
                    self.handle(&buf[..n], wall_clock(), out)?;
                }
                Err(_) if last_packet.elapsed() >= idle_exit => return Ok(true),
                Err(_) => {}
            }
            if !status_every.is_zero() && last_status.elapsed() >= status_every {
                last_status = Instant::now();
                let stats = self.receiver.stats();
                writeln!(stderr, "tesla recv: {}", self.status_line(&stats))?;
            }
        }
        Ok(false)
    }

    /// Packets rejected as forged or broken, and packets too late to be safe.
    fn failures(&self, stats: &Stats) -> (u64, u64) {
        let failed = stats.malformed
            + stats.bad_mac
            + stats.bad_keys
            + stats.keys_too_far
            + stats.keys_unreachable
            + stats.future_interval
            + stats.future_keys
            + stats.clock_violations
            + stats.refused;
        (
            failed,
            stats.unsafe_dropped.saturating_sub(self.early_unsafe),
        )
    }

    fn status_line(&self, s: &Stats) -> String {
        let (failed, _) = self.failures(s);
        format!(
            "authenticated {} packets, {} bytes written, waiting {}, missing {}, dropped: \
             unsafe {}, bad MAC {}, malformed {}, other failures {}, replays {}, buffer full {}{}",
            s.delivered,
            self.writer.written_bytes,
            s.buffered_packets,
            self.writer.missing,
            self.failures(s).1,
            s.bad_mac,
            s.malformed,
            failed - s.bad_mac - s.malformed,
            s.replays,
            s.buffer_full,
            if self.writer.ended {
                ", stream ended"
            } else {
                ""
            },
        )
    }

    fn json(&self, s: &Stats, bootstrap: Value) -> Value {
        let (failed, unsafe_dropped) = self.failures(s);
        json!({
            "bootstrap": bootstrap,
            "end_of_stream": self.writer.ended,
            "clock_bound_violated": self.receiver.is_refused(),
            "packets": s.packets,
            "authenticated": s.delivered,
            "authenticated_failed": failed,
            "written_payloads": self.writer.written_payloads,
            "written_bytes": self.writer.written_bytes,
            "waiting": s.buffered_packets,
            "waiting_bytes": s.buffered_bytes,
            "missing": self.writer.missing,
            "keys_accepted": s.keys_accepted,
            "chain_switches": s.chain_switches,
            "dropped": {
                "unsafe": unsafe_dropped,
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
                "before_bootstrap_overflow": self.early_overflow,
                "before_bootstrap_unsafe": self.early_unsafe,
                "late": self.writer.late,
                "unframed": self.writer.unframed,
            },
        })
    }

    fn verdict(&self, s: &Stats, idle: bool, idle_exit: Duration) -> Outcome {
        let (failed, unsafe_dropped) = self.failures(s);
        if self.receiver.is_refused() {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd_tesla_stream::{encode_data, encode_end};
    use authtime_tesla::Delivered;

    fn delivered(payloads: &[Vec<u8>]) -> Vec<Delivered> {
        payloads
            .iter()
            .map(|p| Delivered {
                interval: 1,
                payload: p.clone(),
            })
            .collect()
    }

    #[test]
    fn writer_orders_payloads_counts_gaps_and_ignores_late_ones() {
        let mut w = StreamWriter::default();
        let mut out = Vec::new();
        w.deliver(
            delivered(&[
                encode_data(1, b"b"),
                encode_data(0, b"a"),
                encode_data(3, b"d"),
            ]),
            &mut out,
        )
        .expect("write");
        assert_eq!(out, b"abd");
        assert_eq!(w.missing, 1);
        w.deliver(delivered(&[encode_data(2, b"c"), encode_end(6)]), &mut out)
            .expect("write");
        assert_eq!(out, b"abd");
        assert_eq!((w.late, w.missing, w.ended), (1, 3, true));
        w.deliver(
            delivered(&[encode_data(6, b"x"), b"junk".to_vec()]),
            &mut out,
        )
        .expect("write");
        assert_eq!(out, b"abd");
        assert_eq!((w.late, w.unframed), (2, 1));
    }
}
