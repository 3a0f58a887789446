//! `authtime tesla dtls-send` and `authtime tesla dtls-recv`: the TESLA
//! stream of `tesla send`/`tesla recv`, carried in DTLS 1.2 records. The
//! flows (accepting receivers, streaming, connecting with retries, writing
//! the authenticated stream) are in `authtime-tesla-dtls`; this module
//! checks the arguments, builds the DTLS mode, and prints what the flows
//! report.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::UdpSocket;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use authtime_sign::{SigningKey, VerifyingKey};
use authtime_tesla::stream_frame::FRAME_HEADER_LEN;
use authtime_tesla::{ReceiverConfig, Sender, spawn_reader};
use authtime_tesla_dtls::{
    AcceptEvent, ConnectEvent, ConnectFailure, DtlsError, DtlsFlowError, DtlsMode, FRAGMENT_SIZE,
    ReceiveOutcome, SchemeSigner, SchemeVerifier, SelfSigned, TeslaDtlsServer, accept_receivers,
    connect_retrying, receive_stream, stream_input, unix_time,
};
use serde_json::json;
use zeroize::Zeroizing;

pub use crate::cli_tesla_dtls::{DtlsRecvArgs, DtlsSendArgs};
use crate::cmd_tesla_net::{seconds, socket_addr};
use crate::cmd_tesla_send::{input_reader, session_params};
use crate::{Outcome, Streams};

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

/// A flow's error, with the causes that `main` looks for (a closed output)
/// kept in the chain.
fn flow_err(e: DtlsFlowError) -> anyhow::Error {
    match e {
        DtlsFlowError::Input(io) => anyhow::Error::new(io).context("reading the input"),
        DtlsFlowError::Output(io) => anyhow::Error::new(io).context("writing the stream"),
        DtlsFlowError::Report(io) => io.into(),
        other => anyhow!("{other}"),
    }
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
    let params = session_params(
        &args.mac,
        args.mac_len,
        args.interval_ms,
        args.delay_intervals,
        args.chain_length,
        unix_time(),
    )?;
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

    let stderr = &mut *streams.stderr;
    let failed_handshakes = accept_receivers(
        &mut server,
        args.clients as usize,
        wait_timeout,
        &mut |event| print_accept_event(stderr, &event),
    )
    .map_err(flow_err)?;
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
    let counts = stream_input(&mut server, args.rate, &chunks).map_err(flow_err)?;
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

fn print_accept_event(stderr: &mut dyn Write, event: &AcceptEvent) -> io::Result<()> {
    match event {
        AcceptEvent::Accepted { number, accepted } => writeln!(
            stderr,
            "tesla dtls-send: receiver {number} from {}: sync response in {} records ({} bytes, \
             {:.1} ms)",
            accepted.peer,
            accepted.sync_records,
            accepted.sync_bytes,
            accepted.bootstrap_time.as_secs_f64() * 1e3,
        ),
        AcceptEvent::HandshakeFailed(e) => {
            writeln!(stderr, "tesla dtls-send: a handshake failed: {e}")
        }
        _ => Ok(()),
    }
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

    let connected = connect_retrying(
        server,
        &mode,
        &verifier,
        &config,
        timeout,
        attempt,
        &mut |event| print_connect_event(stderr, &event),
    );
    let mut client = match connected {
        Ok(c) => c,
        Err(ConnectFailure::NoAnswer { attempts }) => {
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
        Err(ConnectFailure::Refused(e)) => {
            let reason = format!(
                "the sender's sync response does not verify with --pubkey ({e}): refusing to \
                 start"
            );
            if args.json {
                writeln!(stderr, "{}", json!({"bootstrap": null, "refused": reason}))?;
            }
            return Ok(Outcome::Rejected(reason));
        }
        Err(ConnectFailure::Report(io)) => return Err(io.into()),
        Err(other) => return Err(anyhow!("{other}")),
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

    let received = receive_stream(&mut client, out, timeout).map_err(flow_err)?;
    if let Some(e) = &received.closed {
        writeln!(stderr, "tesla dtls-recv: session ended: {e}")?;
    }
    let (stats, writer) = (&received.stats, &received.writer);
    let failed = received.failed();
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
        "clock_bound_violated": received.clock_bound_violated,
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
    Ok(verdict(&received, timeout))
}

fn print_connect_event(stderr: &mut dyn Write, event: &ConnectEvent) -> io::Result<()> {
    match event {
        ConnectEvent::BootstrapAttemptFailed(e) => writeln!(
            stderr,
            "tesla dtls-recv: bootstrap attempt failed: {e}; retrying"
        ),
        ConnectEvent::HandshakeAttemptFailed(e) => {
            writeln!(stderr, "tesla dtls-recv: handshake attempt failed: {e}")
        }
        _ => Ok(()),
    }
}

fn verdict(received: &ReceiveOutcome, timeout: Duration) -> Outcome {
    let (failed, unsafe_dropped) = (received.failed(), received.stats.unsafe_dropped);
    if received.clock_bound_violated {
        return Outcome::Rejected(
            "an authentic key arrived before the clock bound allows: the bound is wrong, \
             stopped (only authenticated data was written)"
                .into(),
        );
    }
    if failed + unsafe_dropped > 0 {
        return Outcome::Rejected(format!(
            "{failed} packets failed authentication and {unsafe_dropped} arrived too late to be \
             safe (only authenticated data was written)"
        ));
    }
    if !received.writer.ended {
        return Outcome::NoAnswer(if received.closed.is_some() {
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
