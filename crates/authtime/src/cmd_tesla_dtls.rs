//! `authtime tesla dtls-send` and `authtime tesla dtls-recv`: the TESLA
//! stream of `tesla send`/`tesla recv`, carried in DTLS 1.2 records
//! (`authtime-tesla-dtls`) instead of multicast datagrams.
//!
//! The sender is a DTLS server: it accepts `--clients` receivers one after
//! another on one UDP socket, gives each its signed sync response (bound to
//! the session by the DTLS exporter, so no extra round trip), then writes the
//! same TESLA packets into every session: the payload framing of
//! `authtime_tesla::stream_frame`, a key disclosure every interval, and end markers for
//! `d + 1` intervals after the input so that the last keys are disclosed.
//! The receiver writes only authenticated payloads, in stream order.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::UdpSocket;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver as Channel, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use authtime_sign::{SigningKey, VerifyingKey};
use authtime_tesla::{BootstrapError, Params, ReceiverConfig, Sender, Stats, Status};
use authtime_tesla_dtls::{
    DtlsError, DtlsMode, FRAGMENT_SIZE, SchemeSigner, SchemeVerifier, SelfSigned, TeslaDtlsClient,
    TeslaDtlsServer, unix_time,
};
use clap::Args;
use serde_json::json;
use zeroize::Zeroizing;

use crate::cmd_tesla_net::{seconds, socket_addr};
use crate::cmd_tesla_send::{input_reader, session_params};
use crate::{Outcome, Streams};
use authtime_tesla::spawn_reader;
use authtime_tesla::stream_frame::{FRAME_HEADER_LEN, StreamWriter, encode_data, encode_end};

/// Help text of `authtime tesla dtls-send`.
pub const SEND_HELP: &str = "Listens on --listen (UDP) as a DTLS 1.2 server and accepts \
     --clients receivers one after another (each: cookie exchange, handshake, then the signed \
     TESLA sync response over the session's RFC 5705 exporter nonce as its first records). \
     Then it cuts the input into payloads of --payload-size bytes and writes each, in one \
     TESLA data packet (the same bytes for every receiver), into every session, with a key \
     disclosure at the start of every interval. After the input ends it sends end-of-stream \
     packets for d + 1 intervals so that the last keys are disclosed, closes the sessions and \
     exits 0. If --wait-timeout passes with fewer receivers, it streams to those it has.\n\n\
     DTLS modes: PSK (--psk-identity and --psk-hex, cipher suite PSK-AES128-CCM8) or \
     certificate (--cert-out FILE: a fresh P-256 key and self-signed certificate, the \
     certificate written to FILE in PEM for the receivers to pin; suite \
     ECDHE-ECDSA-AES128-GCM-SHA256). DTLS has no retransmission here: on a lossy path a \
     handshake fails and the receiver retries.\n\n\
     Exit codes: 0 the stream was sent; 2 bad usage, bad key file or a network error; 3 no \
     receiver within --wait-timeout.\n\n\
     Examples:\n  authtime tesla dtls-send --listen 127.0.0.1:5684 --key sender.key \
     --psk-identity lab --psk-hex 000102030405060708090a0b0c0d0e0f --clients 2 < movie.ts\n  \
     authtime tesla dtls-send --listen 0.0.0.0:5684 --key pq.key --cert-out sender.pem \
     --in log.txt --interval-ms 50 --delay-intervals 4";

/// Help text of `authtime tesla dtls-recv`.
pub const RECV_HELP: &str = "Connects to the sender (--server) over DTLS 1.2 (a new \
     handshake whenever one message takes over --attempt-ms, until --timeout), verifies the signed sync response bound to the session with \
     --pubkey and bounds the sender's clock by the whole handshake, then writes only \
     authenticated payloads, in stream order, to standard output (or --out). With --json the \
     final statistics are printed as one JSON object on the last line of standard error.\n\n\
     Exit codes: 0 the stream ended and every packet was authenticated; 1 the sync response \
     does not verify with --pubkey (nothing is written), or packets failed authentication or \
     were unsafe (only authenticated data was written); 2 bad usage or bad input; 3 no \
     bootstrap within --timeout, or the stream stopped (silence for --timeout, or the session \
     closed) before its end.\n\n\
     Examples:\n  authtime tesla dtls-recv --server 127.0.0.1:5684 --pubkey sender.key.pub \
     --psk-identity lab --psk-hex 000102030405060708090a0b0c0d0e0f > movie.ts\n  \
     authtime tesla dtls-recv --server 192.0.2.7:5684 --pubkey pq.pub --cert sender.pem \
     --out log.txt --json";

/// Arguments of `authtime tesla dtls-send`.
#[derive(Debug, Args)]
pub struct DtlsSendArgs {
    /// UDP address to accept DTLS receivers on, `IP:PORT`.
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// Secret key file from `authtime tesla keygen` (signs the sync responses).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// PSK mode: the identity receivers announce.
    #[arg(
        long,
        value_name = "S",
        requires = "psk_hex",
        conflicts_with = "cert_out"
    )]
    pub psk_identity: Option<String>,
    /// PSK mode: the pre-shared key in hex.
    #[arg(long, value_name = "HEX", requires = "psk_identity")]
    pub psk_hex: Option<String>,
    /// Certificate mode: write the fresh self-signed certificate (PEM) to FILE.
    #[arg(long, value_name = "FILE")]
    pub cert_out: Option<PathBuf>,
    /// Receivers to accept before streaming.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub clients: u32,
    /// Seconds to wait for the receivers.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    pub wait_timeout: f64,
    /// Read the stream from FILE instead of standard input.
    #[arg(long = "in", value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Interval length T_int in milliseconds.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub interval_ms: u64,
    /// Key disclosure delay d, in intervals.
    #[arg(long, value_name = "D", default_value_t = 2)]
    pub delay_intervals: u32,
    /// Keys per chain.
    #[arg(long, value_name = "N", default_value_t = 65_536)]
    pub chain_length: u32,
    /// MAC algorithm (from `authtime mac list`; no nonce-based MACs).
    #[arg(long, value_name = "NAME", default_value = "hmac-sha256")]
    pub mac: String,
    /// MAC tag length in bytes (at least 10).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub mac_len: u8,
    /// Data packets per second at most.
    #[arg(long, value_name = "PKTS/S", default_value_t = 2000.0)]
    pub rate: f64,
    /// Stream bytes per packet at most (a packet must fit one DTLS record).
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub payload_size: usize,
}

/// Arguments of `authtime tesla dtls-recv`.
#[derive(Debug, Args)]
pub struct DtlsRecvArgs {
    /// The sender's DTLS address, `IP:PORT`.
    #[arg(long, value_name = "ADDR")]
    pub server: String,
    /// The sender's public key file.
    #[arg(long, value_name = "FILE")]
    pub pubkey: PathBuf,
    /// PSK mode: the identity to announce.
    #[arg(long, value_name = "S", requires = "psk_hex", conflicts_with = "cert")]
    pub psk_identity: Option<String>,
    /// PSK mode: the pre-shared key in hex.
    #[arg(long, value_name = "HEX", requires = "psk_identity")]
    pub psk_hex: Option<String>,
    /// Certificate mode: the sender's certificate (PEM), trusted exactly.
    #[arg(long, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// Write the stream to FILE (created or truncated) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the final statistics as JSON on the last line of standard error.
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for the bootstrap, and for each record afterwards.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub timeout: f64,
    /// Relative drift allowed between the two clocks, in parts per million.
    #[arg(long, value_name = "PPM", default_value_t = 100)]
    pub drift_ppm: u32,
    /// Milliseconds to wait for each handshake message before starting a new
    /// handshake (keep it below the sender's d * T_int: the whole handshake is
    /// the clock uncertainty).
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub attempt_ms: u64,
}

/// The sender waits at most this long for each handshake message of a
/// receiver (a lost flight is not retransmitted: the receiver starts over).
const ATTEMPT: Duration = Duration::from_secs(1);

/// The DTLS mode from the PSK or certificate options.
fn psk_mode(identity: Option<&String>, hex_key: Option<&String>) -> anyhow::Result<DtlsMode> {
    let (Some(identity), Some(hex_key)) = (identity, hex_key) else {
        return Err(anyhow!(
            "give --psk-identity and --psk-hex, or a certificate option"
        ));
    };
    let key = hex::decode(hex_key.trim()).map_err(|e| anyhow!("--psk-hex: {e}"))?;
    if key.is_empty() || key.len() > 64 {
        return Err(anyhow!("--psk-hex: 1 to 64 bytes"));
    }
    if identity.is_empty() || identity.len() > 127 {
        return Err(anyhow!("--psk-identity: 1 to 127 bytes"));
    }
    Ok(DtlsMode::Psk {
        identity: identity.as_bytes().to_vec(),
        key,
    })
}

fn dtls_err(e: DtlsError) -> anyhow::Error {
    anyhow!("{e}")
}

/// Runs the sender until the input ends and the tail keys are disclosed.
///
/// # Errors
/// Bad arguments, unreadable key or input, a socket the kernel refuses.
pub fn send(args: &DtlsSendArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let listen = socket_addr("--listen", &args.listen)?;
    let wait_timeout = seconds("--wait-timeout", args.wait_timeout, 0.01, 86_400.0)?;
    if args.clients == 0 {
        return Err(anyhow!("--clients 0: must be at least 1"));
    }
    if !(args.rate > 0.0 && args.rate <= 1e6) {
        return Err(anyhow!(
            "--rate {}: must be above 0 and at most 1e6",
            args.rate
        ));
    }
    let params = params(args)?;
    let max_payload = FRAGMENT_SIZE
        .saturating_sub(FRAME_HEADER_LEN + params.overhead(true))
        .max(1);
    if !(1..=max_payload).contains(&args.payload_size) {
        return Err(anyhow!(
            "--payload-size {}: must be 1 to {max_payload} (one DTLS record)",
            args.payload_size
        ));
    }
    let mode = match &args.cert_out {
        Some(_) => DtlsMode::Certificate(
            SelfSigned::generate("authtime tesla dtls-send").map_err(dtls_err)?,
        ),
        None => psk_mode(args.psk_identity.as_ref(), args.psk_hex.as_ref())?,
    };
    let key = SigningKey::load_key_file(&args.key).map_err(|e| anyhow!("--key: {e}"))?;
    let scheme = key.scheme();
    let input = match &args.input {
        Some(path) => Some(File::open(path).with_context(|| path.display().to_string())?),
        None => None,
    };

    let mut master = Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut *master).map_err(|e| anyhow!("no random bytes from the system: {e}"))?;
    let sender = Sender::new(params, *master, unix_time()).map_err(|e| anyhow!("{e}"))?;
    let socket =
        UdpSocket::bind(listen).with_context(|| format!("--listen {listen}: cannot bind"))?;
    let mut server = TeslaDtlsServer::new(socket, &mode, sender, Box::new(SchemeSigner(key)))
        .map_err(dtls_err)?;
    let local = server.local_addr().map_err(dtls_err)?;
    // The certificate goes out only once the socket is bound: a receiver
    // waiting for the file can connect at once.
    if let (Some(path), DtlsMode::Certificate(s)) = (&args.cert_out, &mode) {
        let pem = s.cert.to_pem().context("certificate")?;
        std::fs::write(path, pem).with_context(|| path.display().to_string())?;
    }
    let p = server.sender().params().clone();
    writeln!(
        streams.stderr,
        "tesla dtls-send: listening on {local} ({} mode), {scheme} key, T_int {} ms, d {}, \
         chain {} keys, {} tag {} bytes; waiting for {} receivers",
        mode.name(),
        p.interval_ns / 1_000_000,
        p.disclosure_delay,
        p.chain_len,
        p.mac.name(),
        p.tag_len,
        args.clients,
    )?;

    // Accept receivers one after another, each attempt short so that a
    // stale or broken handshake costs little.
    let deadline = Instant::now() + wait_timeout;
    let mut failed_handshakes = 0u32;
    while server.sessions() < args.clients as usize {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match server.accept(&unix_time, left.min(ATTEMPT)) {
            Ok(a) => writeln!(
                streams.stderr,
                "tesla dtls-send: receiver {} from {}: sync response in {} records ({} bytes, \
                 {:.1} ms)",
                server.sessions(),
                a.peer,
                a.sync_records,
                a.sync_bytes,
                a.bootstrap_time.as_secs_f64() * 1e3,
            )?,
            Err(DtlsError::Timeout) => {
                // Keep the receivers already there informed.
                if server.sessions() > 0 {
                    server.disclose_key(unix_time()).map_err(dtls_err)?;
                }
            }
            Err(e) => {
                failed_handshakes += 1;
                writeln!(streams.stderr, "tesla dtls-send: a handshake failed: {e}")?;
            }
        }
    }
    if server.sessions() == 0 {
        return Ok(Outcome::NoAnswer(format!(
            "no receiver within --wait-timeout {:.1} s ({failed_handshakes} failed handshakes)",
            wait_timeout.as_secs_f64()
        )));
    }
    if server.sessions() < args.clients as usize {
        writeln!(
            streams.stderr,
            "tesla dtls-send: --wait-timeout passed with {} of {} receivers; sending",
            server.sessions(),
            args.clients
        )?;
    }

    let chunks = spawn_reader(input_reader(input), args.payload_size);
    let counts = stream(&mut server, args, &chunks)?;
    let sessions = server.sessions();
    server.close();
    writeln!(
        streams.stderr,
        "tesla dtls-send: done: {} data packets ({} stream bytes), {} key disclosures, {} end \
         markers, to {sessions} receivers",
        counts.data_packets, counts.stream_bytes, counts.key_disclosures, counts.end_markers,
    )?;
    Ok(Outcome::Success)
}

/// What the sending loop sent.
#[derive(Debug, Default)]
struct Counts {
    data_packets: u64,
    stream_bytes: u64,
    key_disclosures: u64,
    end_markers: u64,
}

/// Sends the input, key disclosures every interval and the end markers.
fn stream(
    server: &mut TeslaDtlsServer,
    args: &DtlsSendArgs,
    chunks: &Channel<io::Result<Vec<u8>>>,
) -> anyhow::Result<Counts> {
    let d = server.sender().params().disclosure_delay;
    let schedule = server.sender().params().schedule();
    let pace = Duration::from_secs_f64(1.0 / args.rate);
    let mut next_data_at = Instant::now();
    let mut last_interval: Option<u32> = None;
    let mut ending: Option<(u32, u64)> = None;
    let mut seq: u64 = 0;
    let mut counts = Counts::default();
    loop {
        let now = unix_time();
        let interval = schedule
            .interval_at(now)
            .ok_or_else(|| anyhow!("the sender's schedule ended"))?;
        if last_interval != Some(interval) {
            last_interval = Some(interval);
            if let Some((end, count)) = ending {
                server
                    .broadcast(&encode_end(count), now)
                    .map_err(dtls_err)?;
                counts.end_markers += 1;
                if interval >= end.saturating_add(d).saturating_add(1) {
                    return Ok(counts);
                }
            } else {
                server.disclose_key(now).map_err(dtls_err)?;
                counts.key_disclosures += 1;
            }
        }
        while ending.is_none() && Instant::now() >= next_data_at {
            match chunks.try_recv() {
                Ok(chunk) => {
                    let chunk = chunk.context("reading the input")?;
                    server
                        .broadcast(&encode_data(seq, &chunk), unix_time())
                        .map_err(dtls_err)?;
                    seq += 1;
                    counts.data_packets += 1;
                    counts.stream_bytes += chunk.len() as u64;
                    let floor = Instant::now()
                        .checked_sub(Duration::from_secs(1))
                        .unwrap_or_else(Instant::now);
                    next_data_at = (next_data_at + pace).max(floor);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    let now = unix_time();
                    server.broadcast(&encode_end(seq), now).map_err(dtls_err)?;
                    counts.end_markers += 1;
                    let at = schedule.interval_at(now).unwrap_or(interval);
                    last_interval = Some(at);
                    ending = Some((at, seq));
                }
            }
        }
        std::thread::sleep(Duration::from_micros(200).min(pace));
    }
}

/// The session parameters from the arguments, validated.
fn params(args: &DtlsSendArgs) -> anyhow::Result<Params> {
    session_params(
        &args.mac,
        args.mac_len,
        args.interval_ms,
        args.delay_intervals,
        args.chain_length,
        unix_time(),
    )
}

/// Connects, bootstraps and receives until the stream ends.
///
/// # Errors
/// Bad arguments, an unreadable public key or certificate, an output file
/// that cannot be created, a failed write.
pub fn recv(args: &DtlsRecvArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let server = socket_addr("--server", &args.server)?;
    let timeout = seconds("--timeout", args.timeout, 0.01, 3600.0)?;
    if !(10..=60_000).contains(&args.attempt_ms) {
        return Err(anyhow!(
            "--attempt-ms {}: must be 10 to 60000",
            args.attempt_ms
        ));
    }
    let attempt = Duration::from_millis(args.attempt_ms);
    let mode = match &args.cert {
        Some(path) => {
            let pem = std::fs::read(path).with_context(|| path.display().to_string())?;
            let cert = openssl::x509::X509::from_pem(&pem)
                .map_err(|e| anyhow!("--cert {}: not a PEM certificate: {e}", path.display()))?;
            // The client context uses only the certificate; the key is a placeholder.
            let mut pinned = SelfSigned::generate("pin").map_err(dtls_err)?;
            pinned.cert = cert;
            DtlsMode::Certificate(pinned)
        }
        None => psk_mode(args.psk_identity.as_ref(), args.psk_hex.as_ref())?,
    };
    let public = VerifyingKey::load_key_file(&args.pubkey).map_err(|e| anyhow!("--pubkey: {e}"))?;
    let scheme = public.scheme();
    let verifier = SchemeVerifier(public);
    let config = ReceiverConfig {
        drift_ppm: args.drift_ppm,
        ..ReceiverConfig::default()
    };
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

    // The handshake is retried: the sender may not listen yet, and a lost
    // flight is not retransmitted.
    let deadline = Instant::now() + timeout;
    let mut attempts = 0u32;
    let mut client = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let reason = format!(
                "no bootstrap from {server} within {:.1} s ({attempts} handshake attempts)",
                timeout.as_secs_f64()
            );
            if args.json {
                writeln!(
                    stderr,
                    "{}",
                    json!({"bootstrap": null, "no_answer": reason})
                )?;
            }
            return Ok(Outcome::NoAnswer(reason));
        }
        attempts += 1;
        match TeslaDtlsClient::connect(
            server,
            &mode,
            &verifier,
            config.clone(),
            &unix_time,
            left.min(attempt),
        ) {
            Ok(c) => break c,
            Err(DtlsError::Bootstrap(
                e @ (BootstrapError::BadSignature | BootstrapError::SchemeMismatch { .. }),
            )) => {
                let reason = format!(
                    "the sender's sync response does not verify with --pubkey ({e}): refusing \
                     to start"
                );
                if args.json {
                    writeln!(stderr, "{}", json!({"bootstrap": null, "refused": reason}))?;
                }
                return Ok(Outcome::Rejected(reason));
            }
            Err(DtlsError::Timeout | DtlsError::Io(_)) => {}
            // The handshake took too long for a useful clock bound (the
            // sender was busy with another receiver): a fresh one may not.
            Err(DtlsError::Bootstrap(e)) => {
                writeln!(
                    stderr,
                    "tesla dtls-recv: bootstrap attempt failed: {e}; retrying"
                )?;
            }
            Err(e) => {
                writeln!(stderr, "tesla dtls-recv: handshake attempt failed: {e}")?;
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    };
    let timing = client.timing();
    let p = client.receiver().params().clone();
    writeln!(
        stderr,
        "tesla dtls-recv: bootstrapped from {server} ({} mode, {scheme}): handshake {:.1} ms, \
         sync response in {} records, total {:.1} ms; T_int {} ms, d {}, {} tag {} bytes",
        mode.name(),
        timing.handshake.as_secs_f64() * 1e3,
        timing.sync_records,
        timing.total.as_secs_f64() * 1e3,
        p.interval_ns / 1_000_000,
        p.disclosure_delay,
        p.mac.name(),
        p.tag_len,
    )?;

    let mut writer = StreamWriter::default();
    let mut last_record = Instant::now();
    let mut closed = false;
    while !writer.ended && !client.receiver().is_refused() {
        match client.recv(&unix_time) {
            Ok(Status::Authenticated { released, .. }) => {
                last_record = Instant::now();
                writer
                    .deliver(released, out)
                    .context("writing the stream")?;
            }
            Ok(_) => last_record = Instant::now(),
            Err(DtlsError::Timeout) if last_record.elapsed() < timeout => {}
            Err(DtlsError::Timeout) => break,
            Err(e) => {
                writeln!(stderr, "tesla dtls-recv: session ended: {e}")?;
                closed = true;
                break;
            }
        }
    }
    out.flush().context("writing the stream")?;
    let stats = client.receiver().stats();
    let failed = failures(&stats);
    let summary = json!({
        "bootstrap": {
            "server": server.to_string(),
            "mode": mode.name(),
            "scheme": scheme.name(),
            "handshake_ms": timing.handshake.as_secs_f64() * 1e3,
            "total_ms": timing.total.as_secs_f64() * 1e3,
            "sync_records": timing.sync_records,
            "interval_ms": p.interval_ns as f64 / 1e6,
            "disclosure_delay": p.disclosure_delay,
        },
        "end_of_stream": writer.ended,
        "clock_bound_violated": client.receiver().is_refused(),
        "packets": stats.packets,
        "authenticated": stats.delivered,
        "authenticated_failed": failed,
        "unsafe": stats.unsafe_dropped,
        "written_payloads": writer.written_payloads,
        "written_bytes": writer.written_bytes,
        "missing": writer.missing,
        "late": writer.late,
        "unframed": writer.unframed,
    });
    if args.json {
        writeln!(stderr, "{summary}")?;
    } else {
        writeln!(
            stderr,
            "tesla dtls-recv: authenticated {} packets, {} bytes written, missing {}, failed {}, \
             unsafe {}{}",
            stats.delivered,
            writer.written_bytes,
            writer.missing,
            failed,
            stats.unsafe_dropped,
            if writer.ended { ", stream ended" } else { "" },
        )?;
    }
    Ok(verdict(
        &writer,
        client.receiver().is_refused(),
        failed,
        &stats,
        closed,
        timeout,
    ))
}

/// Packets rejected as forged or broken.
fn failures(s: &Stats) -> u64 {
    s.malformed
        + s.bad_mac
        + s.bad_keys
        + s.keys_too_far
        + s.keys_unreachable
        + s.future_interval
        + s.future_keys
        + s.clock_violations
        + s.refused
}

fn verdict(
    writer: &StreamWriter,
    refused: bool,
    failed: u64,
    stats: &Stats,
    closed: bool,
    timeout: Duration,
) -> Outcome {
    if refused {
        return Outcome::Rejected(
            "an authentic key arrived before the clock bound allows: the bound is wrong, \
             stopped (only authenticated data was written)"
                .into(),
        );
    }
    if failed + stats.unsafe_dropped > 0 {
        return Outcome::Rejected(format!(
            "{failed} packets failed authentication and {} arrived too late to be safe (only \
             authenticated data was written)",
            stats.unsafe_dropped
        ));
    }
    if !writer.ended {
        return Outcome::NoAnswer(if closed {
            "the session ended before the end of the stream".into()
        } else {
            format!(
                "no record for {:.1} s before the end of the stream",
                timeout.as_secs_f64()
            )
        });
    }
    Outcome::Success
}
