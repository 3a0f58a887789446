//! The `authtime broadcast ...` command line: serve and listen, as clap
//! definitions with their help texts. The commands live in `cmd_broadcast`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `authtime broadcast ...`.
#[derive(Debug, Subcommand)]
pub enum BroadcastCommand {
    /// Multicast TESLA-authenticated NTP broadcast packets and answer direct-sync requests.
    #[command(after_help = SERVE_HELP)]
    Serve(BroadcastServeArgs),
    /// Bootstrap from a broadcast server, join its group and report authenticated time samples.
    #[command(after_help = LISTEN_HELP)]
    Listen(BroadcastListenArgs),
}

const SERVE_HELP: &str = "Multicasts one NTPv4 broadcast packet (mode 5) at the start of \
     every TESLA interval to --group. Each carries its transmit timestamp and a TESLA trailer \
     (interval, the key of d intervals ago, MAC) in an extension field; the key disclosed d \
     intervals later authenticates it. Sync requests on --sync-listen get a signed sync \
     response (direct time synchronisation) with --key. The system clock is the time \
     served. Runs until --duration passes (or forever), status on standard error.\n\n\
     Exit codes: 0 the duration passed; 2 bad usage, bad key file or a network error.\n\n\
     Examples:\n  authtime broadcast serve --group 239.255.1.2:5123 --iface 127.0.0.1 \
     --sync-listen 127.0.0.1:5124 --key sender.key --duration 60\n  \
     authtime broadcast serve --group 239.1.2.3:123 --sync-listen 0.0.0.0:4082 --key pq.key \
     --interval-ms 250 --delay-intervals 2";

const LISTEN_HELP: &str = "Joins --group, bootstraps by direct time synchronisation with \
     --sync (a fresh nonce, a response signed with the key of --pubkey, the round trip as \
     uncertainty; repeated until --timeout), then accepts time only from packets that are \
     TESLA-authenticated and safe, below the bootstrap's upper bound and within --max-step-ms \
     of the current estimate. One line per accepted sample goes to standard output: the \
     sample (transmit time minus arrival, a lower bound on the sender's clock minus the \
     system clock), the estimate (the largest recent sample) and its uncertainty (upper bound \
     minus estimate), in milliseconds; with --json one JSON object per line instead. The \
     safety check runs on a monotonic clock that nothing here sets, which defeats the \
     Teichel-Sibold-Milius delay attack. The system clock is never changed.\n\n\
     Exit codes: 0 --count samples were accepted; 1 the sync response does not verify with \
     --pubkey, or broadcast packets failed authentication; 2 bad usage or bad input; 3 no \
     bootstrap or not enough samples within --timeout.\n\n\
     Examples:\n  authtime broadcast listen --group 239.255.1.2:5123 --iface 127.0.0.1 \
     --sync 127.0.0.1:5124 --pubkey sender.key.pub --count 5\n  \
     authtime broadcast listen --group 239.1.2.3:123 --sync 192.0.2.7:4082 --pubkey pq.pub \
     --json --count 100 --timeout 120";

/// Arguments of `authtime broadcast serve`.
#[derive(Debug, Args)]
pub struct BroadcastServeArgs {
    /// Multicast group and port, `GROUP:PORT` (IPv4).
    #[arg(long, value_name = "GROUP:PORT")]
    pub group: String,
    /// Address of the interface to send from (default: the kernel's choice).
    #[arg(long, value_name = "IP")]
    pub iface: Option<String>,
    /// Multicast TTL (1: the local network only).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub ttl: u32,
    /// UDP address answering sync requests, `IP:PORT`.
    #[arg(long, value_name = "ADDR")]
    pub sync_listen: String,
    /// Secret key file from `authtime tesla keygen`.
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// Interval length T_int in milliseconds (one broadcast packet per interval).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub interval_ms: u64,
    /// Key disclosure delay d, in intervals.
    #[arg(long, value_name = "D", default_value_t = 2)]
    pub delay_intervals: u32,
    /// Keys per chain.
    #[arg(long, value_name = "N", default_value_t = 65_536)]
    pub chain_length: u32,
    /// Stop after this many seconds (default: run until killed).
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Configuration file of `authtime serve` whose [clock] section says where
    /// the state of this clock comes from (default: chronyd if it answers,
    /// else the kernel). Packets carry that state: leap 3 and stratum 0
    /// while the clock is unsynchronized, which listeners refuse.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Arguments of `authtime broadcast listen`.
#[derive(Debug, Args)]
pub struct BroadcastListenArgs {
    /// Multicast group and port, `GROUP:PORT` (IPv4).
    #[arg(long, value_name = "GROUP:PORT")]
    pub group: String,
    /// Address of the interface to join the group on (default: the kernel's choice).
    #[arg(long, value_name = "IP")]
    pub iface: Option<String>,
    /// The server's sync address, `IP:PORT`.
    #[arg(long, value_name = "ADDR")]
    pub sync: String,
    /// The server's public key file.
    #[arg(long, value_name = "FILE")]
    pub pubkey: PathBuf,
    /// Exit 0 after this many accepted samples.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub count: u64,
    /// Largest change of the estimate one sample may cause, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 50.0)]
    pub max_step_ms: f64,
    /// Relative drift allowed between the two clocks, in parts per million.
    #[arg(long, value_name = "PPM", default_value_t = 100)]
    pub drift_ppm: u32,
    /// Print one JSON object per sample instead of a text line.
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for the bootstrap and the samples together.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    pub timeout: f64,
    /// Cross-check every sample with a unicast NTS measurement from this NTS-KE
    /// server (`HOST[:PORT]`, port 4460 by default): the broadcast estimate must
    /// agree with it within the broadcast uncertainty plus the NTS round trip
    /// plus --nts-tolerance-ms, else the sample is refused (exit 1).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub nts_check: Option<String>,
    /// With --nts-check: PEM file of the certificates to trust for NTS-KE.
    #[arg(long, value_name = "FILE", requires = "nts_check")]
    pub nts_ca: Option<PathBuf>,
    /// With --nts-check: extra disagreement allowed, in milliseconds (the two
    /// servers' own synchronisation error).
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 10.0,
        requires = "nts_check"
    )]
    pub nts_tolerance_ms: f64,
}
