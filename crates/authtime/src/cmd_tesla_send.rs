//! `authtime tesla send`: the arguments checked, an
//! [`authtime_tesla::StreamSender`] run over the input (the protocol loop,
//! the signing thread and the input reader are in `authtime-tesla`), and its
//! reports printed on standard error.

use std::fs::File;
use std::io::{self, Read};
use std::net::UdpSocket;
use std::time::Instant;

use anyhow::{Context as _, anyhow};
use authtime_sign::SigningKey;
use authtime_tesla::multicast::wall_clock;
use authtime_tesla::{
    FRAME_HEADER_LEN, Params, SendError, SendEvent, Sender, StreamParamsError, StreamSender,
    StreamSenderConfig, Time, spawn_reader, stream_params,
};
use zeroize::Zeroizing;

use crate::cli_tesla::TeslaSendArgs;
use crate::cmd_tesla_net::{group_addr, iface_addr, multicast_sender, seconds, socket_addr};
use crate::{Outcome, Streams};
use authtime_tesla_dtls::SchemeSigner;

/// Largest payload: stream bytes, framing and TESLA trailer stay in one UDP datagram.
const MAX_PAYLOAD: usize = 60_000;
/// Largest sync response fragment (fits a 1280-byte IPv6 minimum MTU path).
const SYNC_DATAGRAM: usize = 1200;

/// Runs the sender until the input ends and the tail keys are disclosed.
///
/// # Errors
/// Bad arguments, an unreadable key or input file, a socket the kernel
/// refuses, a failed send to the group.
pub fn send(args: &TeslaSendArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let group = group_addr("--to", &args.to)?;
    let iface = iface_addr(args.iface.as_deref())?;
    let sync_addr = socket_addr("--sync-listen", &args.sync_listen)?;
    if !(1..=MAX_PAYLOAD).contains(&args.payload_size) {
        return Err(anyhow!(
            "--payload-size {}: must be 1 to {MAX_PAYLOAD}",
            args.payload_size
        ));
    }
    if !(args.rate > 0.0 && args.rate <= 1e6) {
        return Err(anyhow!(
            "--rate {}: must be above 0 and at most 1e6",
            args.rate
        ));
    }
    let wait_timeout = seconds("--wait-timeout", args.wait_timeout, 0.0, 86_400.0)?;
    if args.drop_every == Some(0) {
        return Err(anyhow!("--drop-every 0: must be at least 1"));
    }
    let params = session_params(
        &args.mac,
        args.mac_len,
        args.interval_ms,
        args.delay_intervals,
        args.chain_length,
        wall_clock(),
    )?;
    let key = SigningKey::load_key_file(&args.key).map_err(|e| anyhow!("--key: {e}"))?;
    let input = match &args.input {
        Some(path) => Some(File::open(path).with_context(|| path.display().to_string())?),
        None => None,
    };

    let mut master = Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut *master).map_err(|e| anyhow!("no random bytes from the system: {e}"))?;
    let setup = Instant::now();
    let mut sender = Sender::new(params, *master, wall_clock()).map_err(|e| anyhow!("{e}"))?;
    sender.set_max_datagram(SYNC_DATAGRAM);
    let setup_ms = setup.elapsed().as_secs_f64() * 1e3;

    let data_socket = multicast_sender(iface, args.ttl)?;
    let sync_socket = UdpSocket::bind(sync_addr)
        .with_context(|| format!("--sync-listen {sync_addr}: cannot bind"))?;
    let p = sender.params().clone();
    writeln!(
        streams.stderr,
        "tesla send: to {group} via {iface}, sync on {}, {} key, T_int {} ms, d {}, chain {} \
         keys ({} stored, built in {setup_ms:.0} ms), {} tag {} bytes, overhead {} bytes/packet",
        sync_socket.local_addr().unwrap_or(sync_addr),
        key.scheme(),
        p.interval_ns / 1_000_000,
        p.disclosure_delay,
        p.chain_len,
        sender.stored_keys(),
        p.mac.name(),
        p.tag_len,
        p.overhead(false) + FRAME_HEADER_LEN,
    )?;

    let chunks = spawn_reader(input_reader(input), args.payload_size);
    let mut driver = StreamSender::new(
        sender,
        Box::new(SchemeSigner(key)),
        group,
        data_socket,
        sync_socket,
    )
    .map_err(send_error)?;
    let config = StreamSenderConfig {
        rate: args.rate,
        wait_sync: args.wait_sync,
        wait_timeout,
        max_syncs_per_s: args.max_syncs_per_s,
        drop_every: args.drop_every,
        reorder: args.reorder,
    };
    let stderr = &mut *streams.stderr;
    let s = driver
        .run(&config, &chunks, &mut |event| print_event(stderr, &event))
        .map_err(send_error)?;
    writeln!(
        streams.stderr,
        "tesla send: done: {} data packets ({} stream bytes, {} on the wire), {} key \
         disclosures, {} end markers, {} dropped on purpose; sync: {} answered in {} fragments, \
         {} rate-limited, {} failed",
        s.data_packets,
        s.stream_bytes,
        s.wire_bytes,
        s.key_disclosures,
        s.end_markers,
        s.dropped_on_purpose,
        s.syncs_answered,
        s.sync_fragments,
        s.syncs_rate_limited,
        s.syncs_failed,
    )?;
    Ok(Outcome::Success)
}

fn print_event(stderr: &mut dyn io::Write, event: &SendEvent) -> io::Result<()> {
    match event {
        SendEvent::WaitTimedOut { answered, wanted } => writeln!(
            stderr,
            "tesla send: --wait-timeout passed with {answered} of {wanted} sync requests \
             answered; sending"
        ),
        SendEvent::Status { interval, stats } => writeln!(
            stderr,
            "tesla send: interval {interval}, {} data packets, {} stream bytes, {} syncs \
             answered",
            stats.data_packets, stats.stream_bytes, stats.syncs_answered
        ),
        SendEvent::SignFailed(e) => {
            writeln!(stderr, "tesla send: cannot sign sync responses: {e}")
        }
        SendEvent::AnswerFailed(e) => {
            writeln!(stderr, "tesla send: cannot answer sync requests: {e}")
        }
        _ => Ok(()),
    }
}

/// The error of the stream sender, with the causes that `main` looks for
/// (a closed standard error) kept in the chain.
fn send_error(e: SendError) -> anyhow::Error {
    match e {
        SendError::Report(io) => io.into(),
        SendError::Input(io) => anyhow::Error::new(io).context("reading the input"),
        SendError::Send { group, error } => {
            anyhow::Error::new(error).context(format!("cannot send to {group}"))
        }
        SendError::SyncSocket(io) => anyhow::Error::new(io).context("sync socket"),
        SendError::SignerThread(io) => {
            anyhow::Error::new(io).context("cannot start the signing thread")
        }
        other => anyhow!("{other}"),
    }
}

/// The input file, or standard input (read on the reader thread).
pub(crate) fn input_reader(file: Option<File>) -> Box<dyn Read + Send> {
    match file {
        Some(file) => Box::new(file),
        None => Box::new(io::stdin()),
    }
}

/// [`stream_params`] with its errors naming the flags (shared by `tesla
/// send` and `tesla dtls-send`).
pub(crate) fn session_params(
    mac_name: &str,
    mac_len: u8,
    interval_ms: u64,
    d: u32,
    n: u32,
    t0: Time,
) -> anyhow::Result<Params> {
    stream_params(mac_name, mac_len, interval_ms, d, n, t0).map_err(|e| match e {
        StreamParamsError::Mac(e) => anyhow!("--mac {mac_name}: {e}"),
        StreamParamsError::IntervalTooLong(_) => anyhow!("--interval-ms {interval_ms}: too long"),
        other => anyhow!("{other}"),
    })
}
