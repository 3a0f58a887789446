//! The command line of `authtime-lab` as clap definitions: every subcommand,
//! flag and help text.
//!
//! Arguments are kept as the user typed them where the command checks them
//! itself (a section name, an algorithm, an address), so that the error says
//! which flag was wrong in the command's own words.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// authtime-lab: authtime's lab, MAC benchmark and load generators.
#[derive(Debug, Parser)]
#[command(
    name = "authtime-lab",
    version,
    propagate_version = true,
    after_help = "These commands measure: they are kept out of `authtime` and `authtimed` so that \
                  the everyday tool and the daemon carry no OpenSSL peer, plotting or load \
                  generator. The ntp and nts sections of `run` start the `authtime` executable \
                  found beside this one (`authtime serve`, `authtime nts cert`) and chronyd.\n\n\
                  Exit codes: 0 success, 2 bad usage, bad input or a run that failed (the \
                  reason on standard error).\n\n\
                  Examples:\n  authtime-lab run --quick --out lab-out\n  \
                  authtime-lab run --only mac --out lab-out\n  \
                  authtime-lab bench mac --size 48\n  \
                  authtime-lab load ntp --target 127.0.0.1:11123 --rate 20000 --duration 5\n  \
                  authtime-lab load roughtime --target 127.0.0.1:2002 --public-key KEY"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Rerun the experiments of the seed documents and write a report.
    #[command(
        after_help = "Sections: mac (seed 000: MACs on NTP packets vs OpenSSL), rfc1810 (seed 001: \
                      MD5 and K-way MD5 in and out of cache), partial (seed 004: partial MACs, cost \
                      and detection), stack (seed 004: kernel path vs MAC cost), ntp (issue 4: \
                      NTP request rate vs chronyd), nts (seed 002, issue 6: NTS-KE and NTS-NTP \
                      unloaded and under load vs chronyd), tesla (seed 003: post-quantum TESLA over \
                      DTLS, handshake flights, signature costs, receiver throughput), roughtime \
                      (issue 21: Roughtime cost per response by batch size, and responses per \
                      second per core against roughenough 2.2's server), accuracy (issue 26: \
                      how early each reply's transmit timestamp is, authtime vs chronyd, basic \
                      and interleaved, even and Poisson arrivals, in two network namespaces \
                      joined by a veth pair; needs root, skipped otherwise), xdp (issue 31: \
                      CPU per answered request, the server's and the whole machine's, and T3 \
                      accuracy, chronyd vs authtime on sockets vs authtime on AF_XDP, NTP with \
                      AES-128-CMAC and plain, in the accuracy section's namespaces; needs \
                      root, skipped otherwise). The report is \
                      DIR/index.md with PNG and SVG plots, one JSON file per section and one CSV \
                      file per table. Progress goes to standard error. The ntp and nts sections \
                      need the `authtime` executable beside this one and chronyd (so does \
                      accuracy and xdp, which also need root and iproute2); roughtime needs \
                      roughenough 2.2 from scripts/ensure-roughenough.sh. soak (issue 29, \
                      only with --only soak): authtime serve with NTP, MACs, NTS-KE, NTS and \
                      Roughtime, its NTS keys in a redis-server it starts, steady load and a \
                      schedule of faults, RSS, fds, threads and counters sampled, and a PASS or \
                      FAIL verdict (--duration, default 1h; --quick: 150 s; docs/soak.md).\n\n\
                      Examples:\n  authtime-lab run --quick --out lab-out\n  \
                      authtime-lab run --only mac --out lab-out\n  \
                      sudo authtime-lab run --only accuracy --quick --out lab-out\n  \
                      sudo authtime-lab run --only xdp --quick --out lab-out\n  \
                      authtime-lab run --only soak --duration 1h --out soak-out"
    )]
    Run(RunArgs),
    /// Quick benchmarks of this machine.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Load generators.
    #[command(subcommand)]
    Load(LoadCommand),
}

/// Arguments of `authtime-lab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Short runs: the whole lab in about four minutes on a 2-CPU machine (figures indicative).
    #[arg(long)]
    pub quick: bool,
    /// Run only this section: mac, rfc1810, partial, stack, ntp, nts, tesla, roughtime, accuracy,
    /// xdp or soak (soak runs only when named).
    #[arg(long, value_name = "SECTION")]
    pub only: Option<String>,
    /// Directory for the report (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Length of the soak section's run: seconds, or with a unit (90s, 20m, 1h); default 1h
    /// (150 s with --quick). Only the soak section uses it.
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,
    /// The protocols the xdp section measures, comma-separated: ntp, nts, roughtime (default:
    /// all). Only the xdp section uses it.
    #[arg(long, value_name = "LIST")]
    pub protocols: Option<String>,
}

/// `authtime-lab bench ...`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Every MAC's speed on this CPU against OpenSSL (the lab's mac section alone).
    #[command(
        after_help = "Prints, per algorithm and size, packets per CPU-second one packet at a time and \
                      in batches of 64, cycles per packet, and OpenSSL's per-packet EVP figure \
                      measured in the same run, with the ratio.\n\n\
                      Examples:\n  authtime-lab bench mac --size 48\n  \
                      authtime-lab bench mac --size 48 --alg aes128-cmac --json"
    )]
    Mac(BenchMacArgs),
}

/// Arguments of `authtime-lab bench mac`.
#[derive(Debug, Args)]
pub struct BenchMacArgs {
    /// Packet size in bytes (repeat for several; default 48, 68, 256, 1024, 1500).
    #[arg(long, value_name = "N")]
    pub size: Vec<usize>,
    /// Only this algorithm (repeat for several; default all).
    #[arg(long, value_name = "NAME")]
    pub alg: Vec<String>,
    /// Longer runs, steadier figures (7 runs of 200 ms instead of 5 of 20 ms).
    #[arg(long)]
    pub long: bool,
    /// Print the measurements as JSON.
    #[arg(long)]
    pub json: bool,
    /// Measure only authtime (no portable paths, no OpenSSL): used by the lab.
    #[arg(long, hide = true)]
    pub ours_only: bool,
}

/// `authtime-lab load ...`.
#[derive(Debug, Subcommand)]
pub enum LoadCommand {
    /// Send NTP requests at a fixed rate (open loop) and measure the replies.
    #[command(
        after_help = "Requests leave on schedule whether or not earlier ones were answered; the \
                      run is bounded by --duration (at most 600 s) and stops by itself. Reports \
                      requests sent and answered, loss, latency percentiles, Kiss-o'-Death and \
                      crypto-NAK replies, and whether the sender fell behind its schedule (then \
                      the rate measured is the generator's, not the server's). When the kernel \
                      stamps the replies it receives (Linux), it also reports how early each \
                      reply's transmit timestamp (T3) was: the reply's kernel receive time minus \
                      its T3 (mean, median, p99, standard deviation, min, max), with the server's \
                      response time T3 - T2. That is the server's error only when generator and \
                      server share one clock (one machine; the lab's accuracy section runs both \
                      in network namespaces joined by a veth pair). With --interleaved, replies \
                      the server answers interleaved are measured against the receive time of \
                      the previous reply, and their share is reported. Only loopback and other \
                      local addresses should be targets.\n\n\
                      Examples:\n  authtime-lab load ntp --target 127.0.0.1:11123 --rate 20000 --duration 5\n  \
                      authtime-lab load ntp --target 127.0.0.1:11123 --rate 50000 --duration 5 \
                      --key-file ntp.keys --key-id 1 --json\n  \
                      authtime-lab load ntp --target 10.200.7.3:123 --rate 40000 --duration 2 \
                      --arrivals poisson --interleaved"
    )]
    Ntp(LoadNtpArgs),
    /// Run whole NTS-KE sessions at a fixed rate (open loop) and measure them.
    #[command(
        name = "nts-ke",
        after_help = "Each scheduled request is one NTS-KE session (TCP, a full TLS 1.3 handshake \
                      unless --tls-resumption, records, key export), started on schedule whether \
                      or not earlier ones finished, at most --connections-max open at once (more \
                      count as generator-cap errors). Reports d_CKE percentiles (p50, p95, p99, \
                      max), errors by class (timeout, refused, reset, tls, ke-refused, ...) and \
                      whether the generator fell behind its schedule (over 5% of requests, and over 10, more \
                      than 5 ms late, or sending overran by 5%). The certificate chain check is \
                      done once per chain and name; every handshake's signature is verified. \
                      --ramp runs one step per rate (--step-seconds each); `--ramp paper` is the \
                      NTS paper's 100 to 8000 in steps of 100. With --threads 1 (the default) \
                      the generator is one thread: pin it with `taskset` to a core of its own.\n\n\
                      Examples:\n  authtime-lab load nts-ke --target localhost:14460 --ca nts-ca.pem --rate 500 --duration 5\n  \
                      authtime-lab load nts-ke --target localhost:14460 --ca nts-ca.pem --ramp 500:3000:500 --step-seconds 3 --json ke.json\n  \
                      authtime-lab load nts-ke --target localhost:14460 --ca nts-ca.pem --rate 200 --duration 5 --group both"
    )]
    NtsKe(LoadNtsKeArgs),
    /// Run NTS-protected NTP exchanges at a fixed rate (open loop), with NTS-KE in a fixed ratio.
    #[command(
        after_help = "--rate counts NTS-NTP exchanges per second; every --ntp-per-ke-th exchange \
                      also starts an NTS-KE session (the NTS paper used 3), whose cookies feed \
                      the exchanges (0: no key exchanges during the run, the cookies of 8 made \
                      beforehand and those of each reply are used). The NTP server is the one \
                      NTS-KE names. Every reply is authenticated; its round trip ends at the \
                      kernel's receive stamp, so the generator's own queueing is not counted. \
                      Reports d_CNTS and d_CKE percentiles and errors by class (timeout, nak, \
                      bad-auth, ...).\n\n\
                      Examples:\n  authtime-lab load nts --target localhost:14460 --ca nts-ca.pem --rate 3000 --duration 5\n  \
                      authtime-lab load nts --target localhost:14460 --ca nts-ca.pem --ntp-per-ke 0 --ramp 5000:50000:5000 --step-seconds 2"
    )]
    Nts(LoadNtsArgs),
    /// Send Roughtime requests to a server on loopback as fast as it answers, and verify a sample.
    #[command(
        after_help = "Closed loop: --window requests outstanding, a new one for every response \
                      (a request without a response for 50 ms counts as lost), for --duration \
                      seconds (at most 120) or --max-requests requests, whichever ends first. \
                      Requests are 1036-byte packets (a 1024-byte message) offering --offer, \
                      with the SRV of --public-key; every --verify-every-th response is verified \
                      with authtime's client core (signatures, delegation, Merkle path, nonce). \
                      One thread: pin it with `taskset` to a core the server does not use. \
                      Loopback targets only. Reports requests sent, responses, losses, \
                      responses per second and the verification tally. The lab's roughtime \
                      section (`run --only roughtime`) runs this generator against authtimed and \
                      roughenough in alternating rounds.\n\n\
                      Examples:\n  authtime-lab load roughtime --target 127.0.0.1:2002 \
                      --public-key 0HVu5p/1/pbLz5JzII/sUxJLHdOiTTkQ4Hx8VOJHMBI= --duration 5\n  \
                      taskset -c 1 authtime-lab load roughtime --target 127.0.0.1:2002 \
                      --public-key d0756ee69ff5fe96cbcf9273208fec53124b1dd3a24d3910e07c7c54e2473012 \
                      --offer 1 --json"
    )]
    Roughtime(LoadRoughtimeArgs),
}

/// `--offer` of `authtime-lab load roughtime`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RoughtimeVersionArg {
    /// RFC 10049's version 1 only.
    #[value(name = "1")]
    Rfc,
    /// The drafts' 0x8000000c only.
    #[value(name = "draft")]
    Draft,
    /// Both (the server picks; version 1 ranks first).
    #[value(name = "both")]
    Both,
}

/// Arguments of `authtime-lab load roughtime`.
#[derive(Debug, Args)]
pub struct LoadRoughtimeArgs {
    /// Server address, `IP:PORT` (loopback).
    #[arg(long, value_name = "ADDR")]
    pub target: String,
    /// The server's long-term public key, hex or base64.
    #[arg(long, value_name = "KEY")]
    pub public_key: String,
    /// Seconds to send for (at most 120).
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    pub duration: f64,
    /// Stop after this many requests.
    #[arg(long, value_name = "N", default_value_t = 10_000_000)]
    pub max_requests: u64,
    /// Requests outstanding at once.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub window: usize,
    /// Verify every N-th response (1: all).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub verify_every: u64,
    /// Versions each request offers (`--version` is the command's own).
    #[arg(long, value_enum, value_name = "VERSION", default_value_t = RoughtimeVersionArg::Both)]
    pub offer: RoughtimeVersionArg,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `authtime-lab load nts-ke` and `authtime-lab load nts` share.
#[derive(Debug, Args)]
pub struct LoadNtsCommonArgs {
    /// NTS-KE server, `HOST:PORT` (the host is also the TLS name checked).
    #[arg(long, value_name = "HOST:PORT")]
    pub target: String,
    /// Requests per second (one step; or use --ramp).
    #[arg(long, value_name = "N", required_unless_present = "ramp")]
    pub rate: Option<f64>,
    /// Seconds to send for (one step).
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    pub duration: f64,
    /// PEM file of the certificates to trust (a CA); default: the webpki roots.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// A ramp of rates, `FROM:TO:STEP` or `paper` (100:8000:100).
    #[arg(long, value_name = "FROM:TO:STEP", conflicts_with = "rate")]
    pub ramp: Option<String>,
    /// Seconds per ramp step (default: --duration).
    #[arg(long, value_name = "S")]
    pub step_seconds: Option<f64>,
    /// Most NTS-KE sessions open at once.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub connections_max: usize,
    /// Seconds one request may take.
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    pub timeout: f64,
    /// Threads of the generator's async runtime.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
    /// UDP sockets for NTP exchanges.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub sockets: usize,
    /// Offer TLS 1.3 session resumption (default: a full handshake every time; authtime's
    /// NTS-KE server issues one ticket per handshake and takes it back).
    #[arg(long)]
    pub tls_resumption: bool,
    /// TLS key exchange to offer: `x25519mlkem768` (authtime's client: the hybrid
    /// post-quantum group first, then the classical ones), `x25519` (X25519 alone), or
    /// `both` (every step once with each, side by side).
    #[arg(long, value_enum, value_name = "GROUP", default_value_t = GroupArg::X25519mlkem768)]
    pub group: GroupArg,
    /// Also write the full report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `--group` of `authtime-lab load nts-ke` and `load nts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupArg {
    /// X25519MLKEM768 first, then the classical groups.
    #[value(name = "x25519mlkem768")]
    X25519mlkem768,
    /// X25519 alone.
    #[value(name = "x25519")]
    X25519,
    /// Each step once with each.
    #[value(name = "both")]
    Both,
}

/// Arguments of `authtime-lab load nts-ke`.
#[derive(Debug, Args)]
pub struct LoadNtsKeArgs {
    /// Target, rate and report.
    #[command(flatten)]
    pub common: LoadNtsCommonArgs,
}

/// Arguments of `authtime-lab load nts`.
#[derive(Debug, Args)]
pub struct LoadNtsArgs {
    /// Target, rate and report.
    #[command(flatten)]
    pub common: LoadNtsCommonArgs,
    /// NTS-NTP exchanges per NTS-KE session (0: none during the run).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub ntp_per_ke: u32,
}

/// Arguments of `authtime-lab load ntp`.
#[derive(Debug, Args)]
pub struct LoadNtpArgs {
    /// Server address, `IP:PORT`.
    #[arg(long, value_name = "ADDR")]
    pub target: String,
    /// Requests per second.
    #[arg(long, value_name = "N")]
    pub rate: f64,
    /// Seconds to send for.
    #[arg(long, value_name = "S")]
    pub duration: f64,
    /// Key file holding --key-id (requests then carry a MAC).
    #[arg(long, value_name = "FILE", requires = "key_id")]
    pub key_file: Option<PathBuf>,
    /// Key id to authenticate with.
    #[arg(long, value_name = "N", requires = "key_file")]
    pub key_id: Option<u32>,
    /// Source sockets (each its own port, so SO_REUSEPORT spreads them over workers).
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub sockets: usize,
    /// How requests are spaced: `even` (request k at k/rate) or `poisson`
    /// (exponential gaps from a seeded generator: the bursts many independent
    /// clients make).
    #[arg(long, value_enum, value_name = "KIND", default_value_t = ArrivalsArg::Even)]
    pub arrivals: ArrivalsArg,
    /// Seed of the Poisson gaps (the same seed repeats the same schedule).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Interleaved requests (RFC 9769, as chrony's client sends them): each
    /// logical client's request carries the server's receive timestamp of its
    /// previous reply as origin, and a server that supports it answers with
    /// the exact transmit time of that previous reply.
    #[arg(long)]
    pub interleaved: bool,
    /// Logical clients the requests are spread over, each with its own
    /// interleaved state (default: one per 10 requests/s, at most 16384).
    #[arg(long, value_name = "N")]
    pub clients: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--arrivals` of `authtime-lab load ntp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ArrivalsArg {
    /// Evenly spaced.
    Even,
    /// A Poisson process.
    Poisson,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("authtime-lab").chain(args.iter().copied()))
    }

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_takes_the_old_lab_flags() {
        let cli = parse(&["run", "--quick", "--only", "mac", "--out", "lab-out"]).expect("parses");
        let Command::Run(args) = cli.command else {
            panic!("not run");
        };
        assert!(args.quick);
        assert_eq!(args.only.as_deref(), Some("mac"));
        assert_eq!(args.out, PathBuf::from("lab-out"));
        let err = parse(&["run", "--quick"]).expect_err("no --out");
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn load_nts_needs_a_rate_or_a_ramp_not_both() {
        let err = parse(&["load", "nts", "--target", "localhost:4460"]).expect_err("no rate");
        assert_eq!(err.exit_code(), 2);
        let err = parse(&[
            "load", "nts-ke", "--target", "a:1", "--rate", "5", "--ramp", "paper",
        ])
        .expect_err("both");
        assert_eq!(err.exit_code(), 2);
        let cli = parse(&["load", "nts", "--target", "a:1", "--ramp", "paper"]).expect("parses");
        assert!(matches!(cli.command, Command::Load(LoadCommand::Nts(ref a)) if a.ntp_per_ke == 3));
        let group = |extra: &[&str]| {
            let args = [
                &["load", "nts-ke", "--target", "a:1", "--rate", "5"][..],
                extra,
            ]
            .concat();
            match parse(&args).map(|c| c.command) {
                Ok(Command::Load(LoadCommand::NtsKe(a))) => Ok(a.common.group),
                Ok(_) => panic!("not load nts-ke"),
                Err(e) => Err(e.exit_code()),
            }
        };
        assert_eq!(group(&[]), Ok(GroupArg::X25519mlkem768));
        assert_eq!(group(&["--group", "x25519"]), Ok(GroupArg::X25519));
        assert_eq!(group(&["--group", "both"]), Ok(GroupArg::Both));
        assert_eq!(group(&["--group", "x448"]), Err(2));
    }

    #[test]
    fn load_roughtime_takes_a_key_and_the_versions_to_offer() {
        let cli = parse(&[
            "load",
            "roughtime",
            "--target",
            "127.0.0.1:2002",
            "--public-key",
            "abc",
        ])
        .expect("parses");
        let Command::Load(LoadCommand::Roughtime(a)) = cli.command else {
            panic!("not load roughtime");
        };
        assert_eq!((a.window, a.offer), (64, RoughtimeVersionArg::Both));
        let err = parse(&["load", "roughtime", "--target", "127.0.0.1:2002"]).expect_err("no key");
        assert_eq!(err.exit_code(), 2);
        let cli = parse(&[
            "load",
            "roughtime",
            "--target",
            "a",
            "--public-key",
            "k",
            "--offer",
            "draft",
        ])
        .expect("parses");
        assert!(
            matches!(cli.command, Command::Load(LoadCommand::Roughtime(ref a)) if a.offer == RoughtimeVersionArg::Draft)
        );
    }

    #[test]
    fn help_and_version_are_not_usage_errors() {
        for args in [&["--help"][..], &["--version"], &["bench", "mac", "--help"]] {
            let err = parse(args).expect_err("help is an early exit");
            assert_eq!(err.exit_code(), 0, "{args:?}");
        }
    }
}
