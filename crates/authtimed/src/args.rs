//! The daemon's command line as clap definitions (the man page and the shell
//! completions are generated from them).

use std::path::PathBuf;

use clap::Parser;

/// authtimed: NTP, NTS-KE and NTS server.
#[derive(Debug, Parser)]
#[command(
    name = "authtimed",
    version,
    about = "The authtime server: NTP (plain and with symmetric keys), NTS-KE and NTS, until SIGTERM.",
    after_help = "With no configuration it serves plain NTP on port 123 of every address \
                  (root or CAP_NET_BIND_SERVICE), rate limited, in basic mode and in RFC 9769 \
                  interleaved mode to clients that ask for it (kernel transmit timestamps), and \
                  announces the state of the host's clock as chronyd (or, without chronyd, the \
                  kernel) reports it. SIGHUP \
                  reloads the key file and the NTS certificate; SIGTERM and SIGINT stop.\n\n\
                  Started as root, it binds its sockets, then switches to the user `authtime` \
                  (or --user) and keeps no capability; it refuses to stay root unless \
                  --allow-root. Under systemd the unit starts it as that user.\n\n\
                  Every option but --allow-root can also come from the environment \
                  (AUTHTIMED_CONFIG, AUTHTIMED_LISTEN with commas between addresses, \
                  AUTHTIMED_KEYS, AUTHTIMED_METRICS, AUTHTIMED_WORKERS, AUTHTIMED_LOG_FORMAT, \
                  AUTHTIMED_USER, AUTHTIMED_GROUP), as the container image uses it; an option \
                  on the command line wins over its variable.\n\n\
                  Exit codes: 0 stopped by a signal, 1 could not start, 2 bad usage or \
                  configuration.\n\nExamples:\n  authtimed\n  authtimed --config \
                  /etc/authtime/authtimed.toml\n  authtimed --listen 127.0.0.1:11123\n\n\
                  Check a configuration with `authtime config check FILE`; see what the server \
                  announces about its clock with `authtime status`."
)]
pub struct Args {
    /// TOML configuration file (authtimed.toml(5); the package installs /etc/authtime/authtimed.toml).
    #[arg(long, value_name = "FILE", env = "AUTHTIMED_CONFIG")]
    pub config: Option<PathBuf>,
    /// UDP address to serve on, `IP:PORT` (repeat for several, or separate them with commas;
    /// replaces the file's list).
    #[arg(
        long,
        value_name = "ADDR",
        env = "AUTHTIMED_LISTEN",
        value_delimiter = ','
    )]
    pub listen: Vec<String>,
    /// Key file, ntpd or chrony format (replaces the file's).
    #[arg(long, value_name = "FILE", env = "AUTHTIMED_KEYS")]
    pub keys: Option<PathBuf>,
    /// Serve Prometheus metrics on this address, `IP:PORT` (replaces the file's).
    #[arg(long, value_name = "ADDR", env = "AUTHTIMED_METRICS")]
    pub metrics: Option<String>,
    /// Worker threads per address (0: one per CPU; replaces the file's).
    #[arg(long, value_name = "N", env = "AUTHTIMED_WORKERS")]
    pub workers: Option<usize>,
    /// Log format: auto (journald's under systemd, else text), text, journald or json
    /// (replaces the file's `[log] format`).
    #[arg(long, value_name = "FORMAT", env = "AUTHTIMED_LOG_FORMAT")]
    pub log_format: Option<String>,
    /// When started as root, switch to this user once the sockets are bound
    /// (default `authtime`; replaces the file's `[daemon] user`).
    #[arg(long, value_name = "NAME", env = "AUTHTIMED_USER")]
    pub user: Option<String>,
    /// The group to switch to (default: the user's primary group).
    #[arg(long, value_name = "NAME", env = "AUTHTIMED_GROUP")]
    pub group: Option<String>,
    /// When started as root, stay root instead of switching user (not recommended).
    #[arg(long)]
    pub allow_root: bool,
}
