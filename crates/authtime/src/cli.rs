//! The command line as clap definitions: every subcommand, flag and help text.
//!
//! Arguments are kept as the user typed them (strings) and parsed by the
//! commands, not by clap value parsers: clap's "invalid value" errors repeat the
//! value, and a key must never be repeated in an error message.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::secret_arg::SecretArg;

/// authtime: authenticated network time and fast packet authentication.
#[derive(Debug, Parser)]
#[command(
    name = "authtime",
    version,
    propagate_version = true,
    after_help = "Exit codes: 0 success, 1 a check said no (tag does not match), \
                  2 bad usage or bad input.\n\n\
                  The lab, the MAC benchmark and the load generators are a command of their \
                  own: authtime-lab run|bench|load.\n\n\
                  Examples:\n  authtime mac list\n  \
                  printf abc | authtime hash --alg md5"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compute, verify and list message authentication codes.
    #[command(subcommand)]
    Mac(MacCommand),
    /// Hash a message with MD5 or with RFC 1810's K-way interleaved MD5.
    #[command(
        after_help = "The message is read as raw bytes from --in FILE or from \
                            standard input; the digest is printed in lowercase hex.\n\n\
                            Examples:\n  \
                            printf abc | authtime hash --alg md5\n  \
                            authtime hash --alg md5-kway4 --in packet.bin"
    )]
    Hash(HashArgs),
    /// Serve NTP (plain, symmetric-key authenticated, and NTS with NTS-KE) until SIGTERM.
    #[command(after_help = SERVE_HELP)]
    Serve(ServeArgs),
    /// Work with `authtime serve` configuration files.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Ask an NTP server for the time, optionally authenticated with a symmetric key or NTS.
    #[command(after_help = QUERY_HELP)]
    Query(QueryArgs),
    /// Write a new key file that chrony, ntpd and NTPsec read.
    #[command(after_help = KEYGEN_HELP)]
    Keygen(KeygenArgs),
    /// Network Time Security (RFC 8915) tools.
    #[command(subcommand)]
    Nts(NtsCommand),
    /// TESLA (RFC 4082) broadcast authentication: key pairs, multicast sender and receiver.
    #[command(subcommand)]
    Tesla(crate::cli_tesla::TeslaCommand),
    /// NTP broadcast (mode 5) authenticated with TESLA: multicast server and listener.
    #[command(subcommand)]
    Broadcast(crate::cli_broadcast::BroadcastCommand),
    /// What `authtime serve` announces about its clock now (stratum, leap, root
    /// dispersion, or unsynchronized), and why.
    #[command(after_help = crate::cmd_status::STATUS_HELP)]
    Status(crate::cmd_status::StatusArgs),
    /// Roughtime (RFC 10049 and the drafts' 0x8000000c): ask servers in a
    /// chain, verify malfeasance reports, make a server's keys.
    #[command(subcommand)]
    Roughtime(crate::cmd_roughtime::RoughtimeCommand),
}

/// `authtime nts ...`.
#[derive(Debug, Subcommand)]
pub enum NtsCommand {
    /// Make a certificate and key for an NTS-KE server (a new CA and a leaf, or self-signed).
    #[command(after_help = NTS_CERT_HELP)]
    Cert(NtsCertArgs),
    /// Make a key-encryption key file for sealing the NTS master keys in a shared store.
    #[command(after_help = NTS_KEK_HELP)]
    Kek(NtsKekArgs),
}

const NTS_KEK_HELP: &str = "Writes 32 random bytes as a key-encryption key file (a header \
     line, then 64 hex digits) with mode 0600, never overwriting, and prints the key's id. Name \
     the file in [keystore] key-encryption-key and copy it to every server of the fleet like a \
     TLS private key: the NTS master keys are then sealed under it before they reach Redis, \
     memcached or the embedded file. Changing it across a running fleet: see \
     accepted-key-encryption-keys in authtimed.toml(5) and docs/security.md.\n\n\
     Example:\n  authtime nts kek --out /etc/authtime/nts-kek";

/// Arguments of `authtime nts kek`.
#[derive(Debug, Args)]
pub struct NtsKekArgs {
    /// The file to create.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

const NTS_CERT_HELP: &str = "Writes PREFIX-chain.pem (the leaf, then the CA), PREFIX-key.pem \
     (the leaf's private key, mode 0600) and PREFIX-ca.pem (the certificate clients trust) into \
     --out-dir, never overwriting. Keys are ECDSA P-256. For servers on private networks and for \
     tests; a public server should use a certificate from a public CA (ACME).\n\n\
     Examples:\n  authtime nts cert --out-dir /etc/authtime --name time.example.net\n  \
     authtime nts cert --out-dir . --ip 127.0.0.1 --ip ::1 --self-signed";

/// Arguments of `authtime nts cert`.
#[derive(Debug, Args)]
pub struct NtsCertArgs {
    /// Directory to write the files into.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out_dir: PathBuf,
    /// File name prefix.
    #[arg(long, value_name = "PREFIX", default_value = "nts")]
    pub prefix: String,
    /// DNS name of the server (repeat for several; default localhost when no --ip either).
    #[arg(long, value_name = "DNS")]
    pub name: Vec<String>,
    /// IP address of the server (repeat for several).
    #[arg(long, value_name = "IP")]
    pub ip: Vec<std::net::IpAddr>,
    /// Days of validity.
    #[arg(long, value_name = "N", default_value_t = 365)]
    pub days: u32,
    /// One self-signed certificate instead of a CA and a leaf.
    #[arg(long)]
    pub self_signed: bool,
}

const SERVE_HELP: &str = "Without --config, serves on the standard port 123 of every IPv4 and \
     IPv6 address with the embedded defaults (no keys: plain NTP; rate limiting on; no metrics). \
     Port 123 needs root or CAP_NET_BIND_SERVICE; elsewhere use --listen 127.0.0.1:11123. \
     --listen, --keys and --metrics replace the configuration file's values. The clock served is \
     the system clock; what replies say about it (leap, stratum, reference, root dispersion, or \
     unsynchronized) follows the [clock] source: chronyd if it answers, else the kernel, by \
     default (see docs/clock.md and `authtime status`). `authtimed` is the same server as a \
     daemon of its own, without the tools. SIGHUP reloads the key file (a bad file keeps the old keys); SIGTERM and \
     SIGINT stop the server (exit 0). Logs go to standard error.\n\n\
     Examples:\n  authtime serve --listen 127.0.0.1:11123\n  \
     authtime serve --config examples/authtime.toml\n  \
     authtime serve --listen [::1]:11123 --keys ntp.keys --metrics 127.0.0.1:9123";

const QUERY_HELP: &str = "Prints one line per reply: offset and delay in seconds, stratum, \
     reference id, leap indicator, and how the reply was authenticated. With --key-file and \
     --key-id the request carries a MAC and only replies whose MAC verifies count. When a keyed \
     request gets no answer, one plain request is sent to tell a refused key from a silent \
     server.\n\n\
     Exit codes: 0 every query got a valid reply (authenticated, when a key was given); \
     1 authentication failed (bad or missing MAC in the reply, crypto-NAK, or the server answers \
     plain requests but not keyed ones); 2 bad usage or bad input (key file, key id, host); \
     3 no usable reply (no answer within --timeout, Kiss-o'-Death, or a server that answers \
     but says it is unsynchronized: leap 3, or stratum 0 with reference id 0 as chrony sends, \
     or a server unfit by RFC 5905's root distance: max(10 ms, root delay + round-trip delay) / 2 + root dispersion + the sample's dispersion, over 1.5 s, \
     shown as root_distance_too_large with --json; with --nts its fresh cookies are still kept). \
     With several queries the first of 1, 3 in that order wins.\n\n\
     With --interleaved (RFC 9769), the --count requests go out on one socket, --interval \
     apart, each echoing the server's previous reply (its receive timestamp as origin, our \
     receive time as receive). A server that serves interleaved mode (chronyd, authtime serve) then answers \
     with the time its previous reply really left, taken by its kernel or network card, \
     instead of the time it read its clock before sending: the sample (of the previous \
     exchange) is exact. The first reply is always basic (there is nothing to echo yet), and \
     chronyd and authtime answer the second in basic mode too (they keep transmit timestamps only of \
     replies to requests that ask for interleaved mode): hence --count defaults to 4 there \
     (2 interleaved samples) and must be at least 2. T1 and T4 are the kernel's \
     transmit timestamps of our requests and receive timestamps of the replies, or the clock \
     read next to the system call where the kernel gives none. Each line names the mode of \
     its sample (basic or interleaved) and where T1 and T4 came from; the last line counts \
     the interleaved samples, or says that the server answered in basic mode only. Exit \
     codes as above: a basic-only server that answers every request exits 0. Works with \
     --key-file/--key-id; --nts is refused (authtime's NTS client has no interleaved mode). \
     docs/interleaved.md explains what is measured.\n\n\
     With --nts, the server is an NTS-KE server: authtime runs NTS-KE (TLS 1.3), then sends \
     NTS-protected requests to the NTP server it names, using each cookie once and keeping the \
     fresh ones; an NTS NAK makes it redo NTS-KE once, and so does a session from --cookie-store \
     whose request gets no reply (a server that changed its keys may drop old cookies without \
     a NAK): that session is dropped, its cookies removed from the store. Only authenticated \
     replies count; a reply that fails NTS authentication is ignored like a forgery, and exit \
     code 1 means the key exchange or every reply failed authentication.\n\n\
     A machine whose clock is wrong (no RTC) cannot check the NTS-KE certificate's validity: \
     with --roughtime-servers FILE, authtime first asks those Roughtime servers (chained, \
     signed answers) and, when at least --roughtime-quorum of them answer and all answers \
     overlap, checks the certificate against their interval (it must be valid over all of it) \
     whenever the local clock is outside it or --clock-unknown is given; otherwise against the \
     local clock, as without Roughtime. Too few answers or answers that do not overlap exit \
     with 5, answers out of causal order (malfeasance) with 4, before any NTS-KE. \
     docs/nts.md explains this answer to chrony's nocerttimecheck.\n\n\
     Examples:\n  authtime query 127.0.0.1:11123\n  \
     authtime query ntp.example.net --key-file ntp.keys --key-id 1 --count 4 --json\n  \
     authtime query 127.0.0.1:11123 --interleaved --count 8 --interval 0.5\n  \
     authtime query --nts time.cloudflare.com\n  \
     authtime query --nts localhost:14460 --ca nts-ca.pem --count 3 --cookie-store nts.cookies\n  \
     authtime query --nts time.cloudflare.com --roughtime-servers ecosystem.json --json";

const KEYGEN_HELP: &str = "Keys come from the operating system's random generator. The file is \
     created with mode 0600 and never overwritten; without --out the keys go to standard output. \
     Hash keys (md5, sha1, sha256) are 20 random bytes, AES keys 16 or 32. ntpd files hold key \
     ids up to 65535; ntpd 4.2.8 does not read aes256.\n\n\
     Examples:\n  authtime keygen --format chrony --type aes128 --count 4 --out chrony.keys\n  \
     authtime keygen --format ntpd --type sha1";

/// Arguments of `authtime serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// TOML configuration file (see examples/authtime.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// UDP address to serve on, `IP:PORT` (repeat for several; replaces the file's list).
    #[arg(long, value_name = "ADDR")]
    pub listen: Vec<String>,
    /// Key file, ntpd or chrony format (replaces the file's).
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// Serve Prometheus metrics on this address, `IP:PORT` (replaces the file's).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Worker threads per address (0: one per CPU; replaces the file's).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
}

/// `authtime config ...`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Check a configuration file (and the key files and certificate it
    /// names): prints "ok", or each problem as FILE:LINE:COLUMN: message.
    #[command(
        after_help = "Exit codes: 0 valid, 2 invalid or unreadable. Warnings (a key file others \
                      can read, short keys) go to standard error and do not fail the check.\n\n\
                      Example:\n  authtime config check examples/authtime.toml"
    )]
    Check(ConfigCheckArgs),
}

/// Arguments of `authtime config check`.
#[derive(Debug, Args)]
pub struct ConfigCheckArgs {
    /// The configuration file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// Arguments of `authtime query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// Server, `HOST`, `HOST:PORT`, `IPv6` or `[IPv6]:PORT` (port 123 by default).
    #[arg(value_name = "HOST[:PORT]")]
    pub server: String,
    /// Key file (ntpd or chrony format) holding --key-id.
    #[arg(long, value_name = "FILE", requires = "key_id")]
    pub key_file: Option<PathBuf>,
    /// Key id to authenticate with.
    #[arg(long, value_name = "N", requires = "key_file")]
    pub key_id: Option<u32>,
    /// Number of queries (4 by default with --interleaved: the first reply is
    /// always basic, and chronyd and authtime answer the second in basic mode too).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        default_value_if("interleaved", "true", "4")
    )]
    pub count: u32,
    /// Seconds to wait for each reply.
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    pub timeout: f64,
    /// Seconds between queries.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub interval: f64,
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// RFC 9769 interleaved mode: exact offsets from servers that serve it
    /// (chronyd, authtime serve). Not with --nts.
    ///
    /// Each request echoes the server's last reply, so that a server that
    /// serves interleaved mode answers with the exact time that reply left.
    /// All requests go out on one socket; T1 and T4 are kernel timestamps
    /// where the kernel gives them.
    #[arg(long)]
    pub interleaved: bool,
    /// Use NTS (RFC 8915): HOST[:PORT] is the NTS-KE server (port 4460 by default).
    #[arg(long, conflicts_with_all = ["key_file", "key_id"])]
    pub nts: bool,
    /// With --nts: PEM file of the certificates to trust (a CA, or the server's
    /// self-signed certificate) instead of the system's web PKI roots.
    #[arg(long, value_name = "FILE", requires = "nts")]
    pub ca: Option<PathBuf>,
    /// With --nts: keep keys and unused cookies in FILE (mode 0600) between runs,
    /// so the next run needs no NTS-KE.
    #[arg(long, value_name = "FILE", requires = "nts")]
    pub cookie_store: Option<PathBuf>,
    /// With --nts: Roughtime servers (ecosystem JSON, as for `authtime roughtime
    /// query --servers`) asked before NTS-KE; when the local clock is outside the
    /// interval a quorum of them agree on, the certificate is checked against that
    /// interval instead.
    #[arg(long, value_name = "FILE", requires = "nts")]
    pub roughtime_servers: Option<PathBuf>,
    /// How many Roughtime servers must answer, verified and agreeing (default: a
    /// majority of those listed, at least 2 when 2 or more are listed).
    #[arg(long, value_name = "K", requires = "roughtime_servers")]
    pub roughtime_quorum: Option<usize>,
    /// Check the certificate against the Roughtime interval even when the local
    /// clock is inside it (for a device that knows it has no trustworthy clock).
    #[arg(long, requires = "roughtime_servers")]
    pub clock_unknown: bool,
    /// With --nts: take the local clock to read this time (RFC 3339, e.g.
    /// 2036-01-01T00:00:00Z, or @SECONDS), for tests and for devices that know
    /// their clock is wrong. It changes only the certificate check and the offsets
    /// reported; no clock is set.
    #[arg(long, value_name = "RFC3339", requires = "nts")]
    pub assume_local_time: Option<String>,
}

/// Arguments of `authtime keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Key file format.
    #[arg(long, value_enum)]
    pub format: KeyFormatArg,
    /// Key type.
    #[arg(long = "type", value_name = "TYPE")]
    pub key_type: String,
    /// Number of keys.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub count: u32,
    /// Id of the first key; the others follow.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub first_id: u32,
    /// Create this file (mode 0600; never overwritten) instead of printing.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// The key file formats of `authtime keygen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeyFormatArg {
    /// chrony's chrony.keys.
    Chrony,
    /// ntpd's and NTPsec's ntp.keys.
    Ntpd,
}

/// `authtime mac ...`.
#[derive(Debug, Subcommand)]
pub enum MacCommand {
    /// List every MAC algorithm with its key, nonce and tag sizes in bytes.
    #[command(
        after_help = "Key sizes are exact (\"16\") or a range (\"1-32\"); a nonce of \
                            \"-\" means the algorithm takes none. The last line is the \
                            partial-MAC family, which wraps any algorithm of the list: its key and tag are the \
                            inner algorithm's, its nonce is 8 bytes (a sequence number), or the \
                            inner's 12 when the inner algorithm takes a nonce.\n\n\
                            Examples:\n  authtime mac list\n  authtime mac list --json"
    )]
    List(ListArgs),
    /// Compute the tag of a message and print it in lowercase hex.
    #[command(
        after_help = "The message is read as raw bytes from --in FILE or from \
                            standard input. Algorithms with a nonce (aes128-gmac, \
                            poly1305-chacha20, partial:...) need --nonce, and a nonce must \
                            never be used twice with one key.\n\n\
                            Examples:\n  \
                            printf 'hello' | authtime mac tag --alg hmac-sha256 --key 0b0b0b0b\n  \
                            authtime mac tag --alg aes128-gmac --key 000102030405060708090a0b0c0d0e0f \
                            --nonce 000000000000000000000001 --in packet.bin\n  \
                            authtime mac tag --alg partial:aes128-cmac:0.25 \
                            --key 2b7e151628aed2a6abf7158809cf4f3c --nonce 0000000000000001 --in packet.bin"
    )]
    Tag(TagArgs),
    /// Check a tag over a message: exit 0 when it matches, 1 when it does not.
    #[command(
        after_help = "The message is read as raw bytes from --in FILE or from \
                            standard input. Nothing is printed on standard output; \
                            \"tag ok\" or the reason for a refusal goes to standard error. \
                            Exit codes: 0 the tag matches, 1 it does not, 2 bad usage \
                            or bad input.\n\n\
                            Example (RFC 4493 example 2):\n  \
                            printf 6bc1bee22e409f96e93d7e117393172a | xxd -r -p | \
                            authtime mac verify --alg aes128-cmac \
                            --key 2b7e151628aed2a6abf7158809cf4f3c --tag 070a16b46b4d4144f79bdd9dd04a287c"
    )]
    Verify(VerifyArgs),
}

/// Arguments of `authtime mac list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print a JSON array of objects {name, kind, key_min, key_max, nonce_len,
    /// tag_len, summary} instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The algorithm, key, nonce and message shared by `mac tag` and `mac verify`.
#[derive(Debug, Args)]
pub struct MacInputArgs {
    /// Algorithm name from `authtime mac list`, or `partial:<inner>:<rate>`.
    #[arg(long, value_name = "NAME")]
    pub alg: String,
    /// Key as hex digits (two per byte, no 0x prefix, no spaces).
    #[arg(long, value_name = "HEX")]
    pub key: SecretArg,
    /// Nonce as hex digits, for algorithms that take one.
    #[arg(long, value_name = "HEX")]
    pub nonce: Option<String>,
    /// Read the message from FILE instead of standard input ("-" is standard input).
    #[arg(long = "in", value_name = "FILE")]
    pub input: Option<PathBuf>,
}

/// Arguments of `authtime mac tag`.
#[derive(Debug, Args)]
pub struct TagArgs {
    /// Algorithm, key, nonce and message.
    #[command(flatten)]
    pub mac: MacInputArgs,
}

/// Arguments of `authtime mac verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Algorithm, key, nonce and message.
    #[command(flatten)]
    pub mac: MacInputArgs,
    /// The tag to check, as hex digits.
    #[arg(long, value_name = "HEX")]
    pub tag: String,
}

/// Arguments of `authtime hash`.
#[derive(Debug, Args)]
pub struct HashArgs {
    /// Hash function.
    #[arg(long, value_enum, value_name = "ALG")]
    pub alg: HashAlgorithm,
    /// Read the message from FILE instead of standard input ("-" is standard input).
    #[arg(long = "in", value_name = "FILE")]
    pub input: Option<PathBuf>,
}

/// The hash functions of `authtime hash`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HashAlgorithm {
    /// MD5 (RFC 1321).
    Md5,
    /// RFC 1810's interleaved MD5 with 4 chains (not MD5: different digests).
    #[value(name = "md5-kway4")]
    Md5Kway4,
    /// RFC 1810's interleaved MD5 with 16 chains (not MD5: different digests).
    #[value(name = "md5-kway16")]
    Md5Kway16,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("authtime").chain(args.iter().copied()))
    }

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn mac_tag_arguments_are_kept_as_typed() {
        let cli = parse(&[
            "mac",
            "tag",
            "--alg",
            "AES128-cmac",
            "--key",
            "00ff",
            "--in",
            "f.bin",
        ])
        .expect("parses");
        let Command::Mac(MacCommand::Tag(args)) = cli.command else {
            panic!("not mac tag");
        };
        assert_eq!(args.mac.alg, "AES128-cmac");
        assert_eq!(args.mac.key.expose(), "00ff");
        assert_eq!(args.mac.nonce, None);
        assert_eq!(args.mac.input, Some(PathBuf::from("f.bin")));
    }

    #[test]
    fn verify_needs_a_tag_and_hash_a_known_algorithm() {
        let err = parse(&["mac", "verify", "--alg", "x", "--key", "00"]).expect_err("no tag");
        assert_eq!(err.exit_code(), 2);
        let err = parse(&["hash", "--alg", "sha1"]).expect_err("unknown");
        assert_eq!(err.exit_code(), 2);
        let cli = parse(&["hash", "--alg", "md5-kway16"]).expect("parses");
        assert!(matches!(
            cli.command,
            Command::Hash(HashArgs {
                alg: HashAlgorithm::Md5Kway16,
                ..
            })
        ));
    }

    #[test]
    fn help_and_version_are_not_usage_errors() {
        for args in [&["--help"][..], &["--version"], &["mac", "tag", "--help"]] {
            let err = parse(args).expect_err("help is an early exit");
            assert_eq!(err.exit_code(), 0, "{args:?}");
        }
    }

    #[test]
    fn debug_output_hides_the_key() {
        let cli =
            parse(&["mac", "tag", "--alg", "siphash24", "--key", "deadbeefcafe"]).expect("parses");
        let shown = format!("{cli:?}");
        assert!(!shown.contains("deadbeefcafe"), "{shown}");
    }
}
