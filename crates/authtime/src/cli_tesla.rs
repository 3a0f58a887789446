//! The `authtime tesla ...` command line: keygen, send and recv, as clap
//! definitions with their help texts. The commands live in `cmd_tesla_*`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `authtime tesla ...`.
#[derive(Debug, Subcommand)]
pub enum TeslaCommand {
    /// Make a signature key pair for signing TESLA bootstraps.
    #[command(after_help = KEYGEN_HELP)]
    Keygen(TeslaKeygenArgs),
    /// Multicast a stream (standard input or a file) in TESLA-authenticated packets.
    #[command(after_help = SEND_HELP)]
    Send(TeslaSendArgs),
    /// Join a TESLA multicast group and write only the authenticated stream.
    #[command(after_help = RECV_HELP)]
    Recv(TeslaRecvArgs),
    /// Stream standard input or a file to DTLS receivers in TESLA-authenticated records.
    #[command(after_help = crate::cli_tesla_dtls::SEND_HELP)]
    DtlsSend(crate::cli_tesla_dtls::DtlsSendArgs),
    /// Connect to a `tesla dtls-send` sender over DTLS and write only the authenticated stream.
    #[command(after_help = crate::cli_tesla_dtls::RECV_HELP)]
    DtlsRecv(crate::cli_tesla_dtls::DtlsRecvArgs),
}

const KEYGEN_HELP: &str = "Schemes: ed25519, p256 (ECDSA), ml-dsa-44, ml-dsa-65 (FIPS 204), \
     slh-dsa-128s (FIPS 205, SHA2-128s; slow to sign), lms (RFC 8554, H10/W4: 1024 signatures \
     in all, one per answered sync request; its state is saved before each signature leaves). \
     The secret key file is created with mode 0600 and never overwritten; the public key goes \
     to --pub (default FILE.pub), also never overwritten. Sizes and the time taken go to \
     standard error (or, with --json, a JSON object to standard output).\n\n\
     Examples:\n  authtime tesla keygen --scheme ed25519 --out sender.key\n  \
     authtime tesla keygen --scheme ml-dsa-44 --out pq.key --pub pq.pub --json";

const SEND_HELP: &str = "Cuts the input into payloads of --payload-size bytes, sends each in \
     a TESLA data packet (RFC 4082: MAC under the current interval's key, the key of d \
     intervals ago disclosed) to the multicast group, and a key-disclosure packet at the start \
     of every interval. Each payload carries a 1-byte flag and an 8-byte sequence number so \
     receivers can restore the order. After the input ends the sender keeps sending \
     end-of-stream packets for d + 1 intervals, so that the last keys are disclosed, then \
     exits 0. Sync requests on --sync-listen get a signed, fragmented sync response (rate \
     limited by --max-syncs-per-s; signing blocks sending for its duration, which matters for \
     slh-dsa-128s and lms). Receivers bootstrapped by direct time synchronisation need the \
     round trip, signing included, below d * interval. Status goes to standard error.\n\n\
     --drop-every and --reorder are fault injection for tests: they damage the stream on \
     purpose.\n\n\
     Exit codes: 0 the stream was sent, 2 bad usage, bad key file or a network error.\n\n\
     Examples:\n  authtime tesla send --to 239.1.2.3:5000 --iface 127.0.0.1 --key sender.key \
     --sync-listen 127.0.0.1:5001 --wait-sync 1 < movie.ts\n  \
     authtime tesla send --to 239.1.2.3:5000 --key pq.key --sync-listen 0.0.0.0:5001 \
     --interval-ms 50 --delay-intervals 4 --in log.txt";

const RECV_HELP: &str = "Joins the group, asks the sender (--sender, its sync address) for a \
     signed sync response with a fresh nonce, verifies it with --pubkey and bounds the \
     sender's clock by the whole round trip, then writes only authenticated payloads, in \
     stream order, to standard output (or --out). Packets are buffered until their key is \
     disclosed (at most --max-buffer bytes); lost packets are skipped. A status line goes to \
     standard error every --status-every seconds. With --json the final statistics \
     (authenticated, waiting, missing, dropped by reason, bytes, bootstrap) are printed as one \
     JSON object on the last line of standard error; --stats FILE writes the same object to \
     FILE.\n\n\
     Exit codes: 0 the stream ended and every packet received was authenticated (lost \
     packets are reported, not failures); 1 some packets failed authentication or were unsafe \
     (only authenticated data was written), the sync response's signature does not verify \
     with --pubkey (nothing is written), or the clock bound was found violated; 2 bad usage or \
     bad input; 3 no bootstrap within --timeout, or no packet for --idle-exit seconds before \
     the end of the stream.\n\n\
     Examples:\n  authtime tesla recv --group 239.1.2.3:5000 --iface 127.0.0.1 \
     --sender 127.0.0.1:5001 --pubkey sender.key.pub > movie.ts\n  \
     authtime tesla recv --group 239.1.2.3:5000 --sender 192.0.2.7:5001 --pubkey pq.pub \
     --out log.txt --json --stats stats.json";

/// Arguments of `authtime tesla keygen`.
#[derive(Debug, Args)]
pub struct TeslaKeygenArgs {
    /// Signature scheme: ed25519, p256, ml-dsa-44, ml-dsa-65, slh-dsa-128s or lms.
    #[arg(long, value_name = "NAME")]
    pub scheme: String,
    /// Secret key file to create (mode 0600, never overwritten).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Public key file to create (default FILE.pub).
    #[arg(long = "pub", value_name = "FILE")]
    pub public: Option<PathBuf>,
    /// Print a JSON object (scheme, files, sizes, milliseconds) on standard output.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `authtime tesla send`.
#[derive(Debug, Args)]
pub struct TeslaSendArgs {
    /// Multicast group and port, `GROUP:PORT` (IPv4).
    #[arg(long, value_name = "GROUP:PORT")]
    pub to: String,
    /// Address of the interface to send from (default: the kernel's choice).
    #[arg(long, value_name = "IP")]
    pub iface: Option<String>,
    /// Multicast TTL (1: the local network only).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub ttl: u32,
    /// Secret key file from `authtime tesla keygen`.
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// UDP address answering sync requests, `IP:PORT`.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:4082")]
    pub sync_listen: String,
    /// Interval length T_int in milliseconds.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub interval_ms: u64,
    /// Key disclosure delay d, in intervals.
    #[arg(long, value_name = "D", default_value_t = 2)]
    pub delay_intervals: u32,
    /// Keys per chain; the next chain's commitment is sent before one ends.
    #[arg(long, value_name = "N", default_value_t = 65_536)]
    pub chain_length: u32,
    /// MAC algorithm (from `authtime mac list`; no nonce-based MACs).
    #[arg(long, value_name = "NAME", default_value = "hmac-sha256")]
    pub mac: String,
    /// MAC tag length in bytes (at least 10).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub mac_len: u8,
    /// Read the stream from FILE instead of standard input.
    #[arg(long = "in", value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Data packets per second at most.
    #[arg(long, value_name = "PKTS/S", default_value_t = 2000.0)]
    pub rate: f64,
    /// Stream bytes per packet at most.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub payload_size: usize,
    /// Hold the data until this many sync requests were answered (key disclosures still flow).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub wait_sync: u32,
    /// Start sending anyway after this many seconds of --wait-sync.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    pub wait_timeout: f64,
    /// Sync responses per second at most (each costs a signature; LMS keys have 1024).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_syncs_per_s: u32,
    /// Fault injection (tests): do not send every Nth data packet.
    #[arg(long, value_name = "N")]
    pub drop_every: Option<u32>,
    /// Fault injection (tests): send the data packets of each pair in swapped order.
    #[arg(long)]
    pub reorder: bool,
}

/// Arguments of `authtime tesla recv`.
#[derive(Debug, Args)]
pub struct TeslaRecvArgs {
    /// Multicast group and port, `GROUP:PORT` (IPv4).
    #[arg(long, value_name = "GROUP:PORT")]
    pub group: String,
    /// Address of the interface to join the group on (default: the kernel's choice).
    #[arg(long, value_name = "IP")]
    pub iface: Option<String>,
    /// The sender's sync address, `IP:PORT`.
    #[arg(long, value_name = "ADDR")]
    pub sender: String,
    /// The sender's public key file.
    #[arg(long, value_name = "FILE")]
    pub pubkey: PathBuf,
    /// Write the stream to FILE (created or truncated) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the final statistics as JSON on the last line of standard error.
    #[arg(long)]
    pub json: bool,
    /// Write the final statistics as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Bytes of packets held while their keys are pending.
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    pub max_buffer: usize,
    /// Seconds to wait for the bootstrap (sync requests are repeated after 1, 2, 4... s).
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub timeout: f64,
    /// Stop (exit 3) after this many seconds without a packet before the end of the stream.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub idle_exit: f64,
    /// Relative drift allowed between the two clocks, in parts per million.
    #[arg(long, value_name = "PPM", default_value_t = 100)]
    pub drift_ppm: u32,
    /// Seconds between status lines on standard error (0: none).
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub status_every: f64,
}
