//! The `authtime tesla dtls-send` and `dtls-recv` command lines: clap
//! definitions with their help texts. The commands live in `cmd_tesla_dtls`.

use std::path::PathBuf;

use clap::Args;

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
