//! Measurements of section `tesla`: DTLS sessions with and without TESLA on
//! loopback, per signature scheme, and the TESLA receiver's throughput.

use std::{
    net::{SocketAddr, UdpSocket},
    thread,
    time::{Duration, Instant},
};

use authtime_sign::{Scheme, SigningKey};
use authtime_tesla::{Params, ReceiverConfig, Sender, Status, SyncClient, Time, mac_by_name};
use authtime_tesla_dtls::{
    DtlsMode, SchemeSigner, SchemeVerifier, TeslaDtlsClient, TeslaDtlsServer, accept_session,
    client_context, connect_session, flights, read_record, server_context, unix_time, write_record,
};

use crate::cpu_time::thread_cpu_time;

const TIMEOUT: Duration = Duration::from_secs(10);

/// The PSK the lab's sessions use (TinyDTLS's setting in the talk).
pub(crate) fn psk() -> DtlsMode {
    DtlsMode::Psk {
        identity: b"authtime-lab".to_vec(),
        key: vec![0x4c; 16],
    }
}

fn sender(interval_ns: u64, delay: u32) -> Result<Sender, String> {
    let now = unix_time();
    let params = Params {
        t0: Time(now.0 - now.0 % interval_ns),
        interval_ns,
        disclosure_delay: delay,
        chain_len: 1 << 16,
        mac: mac_by_name("hmac-sha256").map_err(|e| e.to_string())?,
        tag_len: 16,
        rollover_lead: 16,
    };
    let mut master = [0u8; 32];
    getrandom::fill(&mut master).map_err(|e| e.to_string())?;
    Sender::new(params, master, now).map_err(|e| e.to_string())
}

/// One DTLS + TESLA handshake's bytes and the sessions' timings.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct HandshakeRun {
    /// `plain` or the scheme's name.
    pub(crate) label: String,
    /// (record name, bytes) of the handshake, in order.
    pub(crate) records: Vec<(String, usize)>,
    /// Sync-response bytes on the wire (DTLS records included).
    pub(crate) sync_wire_bytes: usize,
    /// Sync-response records.
    pub(crate) sync_records: usize,
    /// Median Client Hello to verified bootstrap (plain: to Finished), ms.
    pub(crate) latency_ms: f64,
    /// Median DTLS handshake alone, ms.
    pub(crate) handshake_ms: f64,
    /// Handshakes timed.
    pub(crate) runs: usize,
}

fn median_ms(mut v: Vec<f64>) -> f64 {
    crate::stats::median(&mut v).unwrap_or(0.0)
}

/// Plain DTLS handshakes (no TESLA): bytes and latency.
pub(crate) fn plain_handshakes(mode: &DtlsMode, runs: usize) -> Result<HandshakeRun, String> {
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = socket.local_addr().map_err(|e| e.to_string())?;
    let ctx = server_context(mode, [7; 32]).map_err(|e| e.to_string())?;
    let server = thread::spawn(move || -> Result<(), String> {
        for _ in 0..runs {
            accept_session(&socket, &ctx, TIMEOUT).map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let cctx = client_context(mode).map_err(|e| e.to_string())?;
    let mut times = Vec::new();
    let mut records = Vec::new();
    for _ in 0..runs {
        let log = flights::DatagramLog::default();
        let start = Instant::now();
        let stream =
            connect_session(addr, &cctx, TIMEOUT, log.clone()).map_err(|e| e.to_string())?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        records = flights::handshake_rows(&flights::records(&log.snapshot()));
        drop(stream);
    }
    server.join().map_err(|_| "server thread panicked")??;
    let ms = median_ms(times);
    Ok(HandshakeRun {
        label: "plain".into(),
        records,
        sync_wire_bytes: 0,
        sync_records: 0,
        latency_ms: ms,
        handshake_ms: ms,
        runs,
    })
}

fn tesla_server(
    mode: &DtlsMode,
    scheme: Scheme,
    interval_ns: u64,
    delay: u32,
) -> Result<(TeslaDtlsServer, SchemeVerifier), String> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| e.to_string())?;
    let key = SigningKey::generate_from_seed(scheme, seed);
    let verifier = SchemeVerifier(key.verifying_key());
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let server = TeslaDtlsServer::new(
        socket,
        mode,
        sender(interval_ns, delay)?,
        Box::new(SchemeSigner(key)),
    )
    .map_err(|e| e.to_string())?;
    Ok((server, verifier))
}

/// DTLS + TESLA handshakes with `scheme`: bytes and latency (Client Hello to
/// a verified sync response).
pub(crate) fn tesla_handshakes(
    mode: &DtlsMode,
    scheme: Scheme,
    runs: usize,
) -> Result<HandshakeRun, String> {
    // A long interval: slow signers (SLH-DSA) must fit in d * T_int.
    let (mut server, verifier) = tesla_server(mode, scheme, 1_000_000_000, 4)?;
    let addr = server.local_addr().map_err(|e| e.to_string())?;
    let handle = thread::spawn(move || -> Result<(), String> {
        for _ in 0..runs {
            server
                .accept(&unix_time, TIMEOUT)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let mut totals = Vec::new();
    let mut handshakes = Vec::new();
    let mut records = Vec::new();
    let mut sync_wire_bytes = 0;
    let mut sync_records = 0;
    for _ in 0..runs {
        let client = TeslaDtlsClient::connect(
            addr,
            mode,
            &verifier,
            ReceiverConfig::default(),
            &unix_time,
            TIMEOUT,
        )
        .map_err(|e| format!("{}: {e}", scheme.name()))?;
        let t = client.timing();
        totals.push(t.total.as_secs_f64() * 1e3);
        handshakes.push(t.handshake.as_secs_f64() * 1e3);
        let all = flights::records(&client.log().snapshot());
        records = flights::handshake_rows(&all);
        let app: Vec<_> = all.iter().filter(|r| r.content_type == 23).collect();
        sync_wire_bytes = app.iter().map(|r| r.len).sum();
        sync_records = app.len();
    }
    handle.join().map_err(|_| "server thread panicked")??;
    Ok(HandshakeRun {
        label: scheme.name().into(),
        records,
        sync_wire_bytes,
        sync_records,
        latency_ms: median_ms(totals),
        handshake_ms: median_ms(handshakes),
        runs,
    })
}

/// Median one-way latency (µs) per payload size: build and protect at the
/// sender, DTLS record over loopback, decrypt and (TESLA) safety check and
/// buffering at the receiver, in one thread so no wake-up is counted.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct LatencyRow {
    /// Payload bytes.
    pub(crate) size: usize,
    /// Plain DTLS record.
    pub(crate) dtls_us: f64,
    /// DTLS + TESLA (Ed25519 bootstrap).
    pub(crate) tesla_us: f64,
    /// DTLS + TESLA (ML-DSA-44 bootstrap).
    pub(crate) pq_tesla_us: f64,
    /// Record bytes on the wire, plain DTLS.
    pub(crate) dtls_wire: usize,
    /// Record bytes on the wire with TESLA.
    pub(crate) tesla_wire: usize,
}

/// Payload sizes of the data-latency table.
pub(crate) const SIZES: [usize; 8] = [8, 16, 32, 64, 128, 256, 512, 1024];

fn plain_pair(
    mode: &DtlsMode,
) -> Result<
    (
        authtime_tesla_dtls::DtlsStream,
        authtime_tesla_dtls::DtlsStream,
    ),
    String,
> {
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr: SocketAddr = socket.local_addr().map_err(|e| e.to_string())?;
    let ctx = server_context(mode, [7; 32]).map_err(|e| e.to_string())?;
    let server =
        thread::spawn(move || accept_session(&socket, &ctx, TIMEOUT).map_err(|e| e.to_string()));
    let cctx = client_context(mode).map_err(|e| e.to_string())?;
    let client = connect_session(addr, &cctx, TIMEOUT, flights::DatagramLog::default())
        .map_err(|e| e.to_string())?;
    let server = server.join().map_err(|_| "server thread panicked")??;
    Ok((server, client))
}

fn tesla_pair(
    mode: &DtlsMode,
    scheme: Scheme,
) -> Result<(TeslaDtlsServer, TeslaDtlsClient), String> {
    let (mut server, verifier) = tesla_server(mode, scheme, 10_000_000, 10)?;
    let addr = server.local_addr().map_err(|e| e.to_string())?;
    let handle = thread::spawn(move || -> Result<TeslaDtlsServer, String> {
        server
            .accept(&unix_time, TIMEOUT)
            .map_err(|e| e.to_string())?;
        Ok(server)
    });
    let client = TeslaDtlsClient::connect(
        addr,
        mode,
        &verifier,
        ReceiverConfig::default(),
        &unix_time,
        TIMEOUT,
    )
    .map_err(|e| e.to_string())?;
    let server = handle.join().map_err(|_| "server thread panicked")??;
    Ok((server, client))
}

/// The data-latency table.
pub(crate) fn data_latency(mode: &DtlsMode, runs: usize) -> Result<Vec<LatencyRow>, String> {
    let (mut s, mut c) = plain_pair(mode)?;
    let (mut ts, mut tc) = tesla_pair(mode, Scheme::Ed25519)?;
    let (mut ps, mut pc) = tesla_pair(mode, Scheme::MlDsa44)?;
    let mut buf = vec![0u8; 65_535];
    let mut rows = Vec::new();
    for size in SIZES {
        let payload = vec![0x5au8; size];
        let mut plain = Vec::new();
        let mut tesla = Vec::new();
        let mut pq = Vec::new();
        let mut tesla_wire = 0;
        for run in 0..runs {
            // A counter in the payload: identical payloads in one interval
            // carry identical MACs, which the receiver rightly calls replays.
            let mut payload = payload.clone();
            let n = payload.len().min(8);
            payload[..n].copy_from_slice(&(run as u64).to_be_bytes()[..n]);
            let start = Instant::now();
            write_record(&mut s, &payload).map_err(|e| e.to_string())?;
            read_record(&mut c, &mut buf).map_err(|e| e.to_string())?;
            plain.push(start.elapsed().as_secs_f64() * 1e6);
            for (server, client, out) in
                [(&mut ts, &mut tc, &mut tesla), (&mut ps, &mut pc, &mut pq)]
            {
                let start = Instant::now();
                let packet = server
                    .broadcast(&payload, unix_time())
                    .map_err(|e| e.to_string())?;
                let status = client.recv(&unix_time).map_err(|e| e.to_string())?;
                out.push(start.elapsed().as_secs_f64() * 1e6);
                if matches!(status, Status::DroppedUnsafe | Status::Failed(_)) {
                    return Err(format!("TESLA packet refused: {status:?}"));
                }
                tesla_wire = packet.len();
            }
        }
        rows.push(LatencyRow {
            size,
            dtls_us: median_ms(plain),
            tesla_us: median_ms(tesla),
            pq_tesla_us: median_ms(pq),
            dtls_wire: size + crate::section_tesla::DTLS_PSK_RECORD_OVERHEAD,
            tesla_wire: tesla_wire + crate::section_tesla::DTLS_PSK_RECORD_OVERHEAD,
        });
    }
    ts.close();
    ps.close();
    Ok(rows)
}

/// Receiver throughput for one payload size and packets per interval.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct ThroughputRow {
    /// Payload bytes.
    pub(crate) size: usize,
    /// Packets per interval (the buffer holds about `d + 1` intervals of them).
    pub(crate) per_interval: usize,
    /// Packets authenticated per CPU-second through `Receiver::handle`.
    pub(crate) receiver_pps: f64,
    /// HMAC-SHA-256 verifications of the same bytes per CPU-second (the ceiling).
    pub(crate) hmac_pps: f64,
    /// Packets fed per run.
    pub(crate) packets: usize,
}

/// Feeds pre-built TESLA packets to a bootstrapped receiver on a simulated
/// clock (sender and receiver clocks equal, 1 ms intervals, d = 2) and counts
/// authenticated payloads per CPU-second of the receiving thread.
pub(crate) fn receiver_throughput(
    size: usize,
    per_interval: usize,
    intervals: u32,
    runs: usize,
) -> Result<ThroughputRow, String> {
    const T0: u64 = 1_000_000_000_000;
    const INTERVAL: u64 = 1_000_000;
    let params = Params {
        t0: Time(T0),
        interval_ns: INTERVAL,
        disclosure_delay: 2,
        chain_len: 1 << 16,
        mac: mac_by_name("hmac-sha256").map_err(|e| e.to_string())?,
        tag_len: 16,
        rollover_lead: 16,
    };
    let start = T0 + 10 * INTERVAL;
    let key = SigningKey::generate_from_seed(Scheme::Ed25519, [3; 32]);
    let verifier = SchemeVerifier(key.verifying_key());
    let mut signer = SchemeSigner(key);
    let mut samples = Vec::new();
    let mut packets = Vec::new();
    let mut sender = Sender::new(params, [5; 32], Time(start)).map_err(|e| e.to_string())?;
    let (sync, request) = SyncClient::new(&[1; 32], Time(start), ReceiverConfig::default())
        .map_err(|e| e.to_string())?;
    let frags = sender
        .sync_response(&request, Time(start), &mut signer)
        .map_err(|e| e.to_string())?;
    let payload = vec![0x33u8; size];
    for k in 0..intervals {
        let base = start + (u64::from(k) + 1) * INTERVAL;
        for j in 0..per_interval {
            let t = Time(base + (j as u64 * INTERVAL) / per_interval as u64);
            let mut payload = payload.clone();
            let n = payload.len().min(8);
            let seq = u64::from(k) * per_interval as u64 + j as u64;
            payload[..n].copy_from_slice(&seq.to_be_bytes()[..n]);
            packets.push((sender.packet(&payload, t).map_err(|e| e.to_string())?, t));
        }
    }
    let config = ReceiverConfig {
        buffer_max_packets: per_interval * 8,
        buffer_max_bytes: per_interval * 8 * (size + 128),
        ..ReceiverConfig::default()
    };
    for _ in 0..runs.max(1) {
        let mut client = sync.clone();
        let mut receiver = None;
        for f in &frags {
            receiver = client
                .handle(f, Time(start + 1), &verifier)
                .map_err(|e| e.to_string())?;
        }
        let mut receiver = receiver.ok_or("no receiver")?;
        // The bootstrap's config is the default one; rebuild with the larger buffer.
        receiver = authtime_tesla::Receiver::new_trusted(
            receiver.params().clone(),
            *receiver.clock_bound(),
            config.clone(),
            bootstrap_commitment(&frags, &sync, &verifier)?,
            None,
        );
        let cpu = thread_cpu_time();
        for (p, t) in &packets {
            std::hint::black_box(receiver.handle(p, *t));
        }
        let elapsed = (thread_cpu_time() - cpu).as_secs_f64();
        let delivered = receiver.stats().delivered;
        samples.push(delivered as f64 / elapsed.max(1e-9));
    }
    let mac = authtime_mac::Algorithm::HmacSha256
        .new_mac(&[9; 32])
        .map_err(|e| e.to_string())?;
    let bytes = packets.first().map(|(p, _)| p.len() - 16).unwrap_or(size);
    let msg = vec![0x33u8; bytes];
    let hmac = crate::rate::measure(
        crate::rate::Budget {
            per_run: Duration::from_millis(50),
            runs: 5,
        },
        1,
        || {
            std::hint::black_box(mac.compute(&[], std::hint::black_box(&msg)).ok());
        },
    );
    Ok(ThroughputRow {
        size,
        per_interval,
        receiver_pps: median_ms(samples),
        hmac_pps: hmac.median,
        packets: packets.len(),
    })
}

fn bootstrap_commitment(
    frags: &[Vec<u8>],
    sync: &SyncClient,
    verifier: &SchemeVerifier,
) -> Result<(u32, u32, authtime_tesla::ChainKey), String> {
    let mut r =
        authtime_tesla::Reassembler::new(authtime_tesla::fragment_tag(&[1; 32]), 64, 1 << 20);
    let mut blob = None;
    for f in frags {
        blob = r.push(f).map_err(|e| e.to_string())?;
    }
    let resp = sync
        .verify(&blob.ok_or("incomplete")?, verifier)
        .map_err(|e| e.to_string())?;
    Ok((
        resp.commitment_chain,
        resp.commitment_index,
        resp.commitment,
    ))
}
