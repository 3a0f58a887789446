//! The `authtime` command line: argument definitions, the parsers behind them and
//! one module per command.
//!
//! `main.rs` only parses the arguments, calls [`run`] and turns its result into
//! an exit code ([`exit_code`]). Everything else lives here so that tests can run
//! commands in-process and the fuzz targets (`fuzz/`) can reach the parsers:
//! [`hex_input`] for hex arguments, [`mac_name`] for algorithm names,
//! [`cli::Cli`] for the whole argument vector.
//!
//! Commands read their input from and write their output to [`Streams`], never
//! to the process's own handles, and report what went wrong as an error (exit 2)
//! or as [`Outcome::Rejected`] (exit 1) or [`Outcome::NoAnswer`] (exit 3).
//! This crate does no cryptography itself (that is `authtime-mac`) and no
//! protocol logic (`authtime-proto`); `authtime serve` runs `authtime-server`.
//! The drivers the commands run are library code too: the NTS client session
//! (`authtime-ntske`), the TESLA stream sender and receiver (`authtime-tesla`),
//! the DTLS flows (`authtime-tesla-dtls`) and the broadcast loops
//! (`authtime-broadcast`); the commands check arguments and print.

use std::io::{Read, Write};

pub mod cli;
pub mod cli_broadcast;
pub mod cli_tesla;
pub mod cli_tesla_dtls;
pub mod cmd_broadcast;
pub mod cmd_config;
pub mod cmd_hash;
pub mod cmd_keygen;
pub mod cmd_mac;
pub mod cmd_mac_list;
pub mod cmd_nts_cert;
pub mod cmd_nts_kek;
pub mod cmd_query;
pub mod cmd_query_interleaved;
pub mod cmd_query_nts;
pub mod cmd_roughtime;
pub mod cmd_roughtime_keys;
pub mod cmd_roughtime_report;
pub mod cmd_serve;
pub mod cmd_status;
pub mod cmd_tesla_dtls;
pub mod cmd_tesla_keygen;
pub mod cmd_tesla_net;
pub mod cmd_tesla_recv;
pub mod cmd_tesla_send;
pub mod error_line;
pub mod hex_input;
pub mod mac_name;
pub mod message_input;
mod query_cert_time;
pub mod rfc3339_input;
mod roughtime_client;
pub mod secret_arg;

/// The exit codes of `authtime`, the same for every command.
pub mod exit_code {
    /// The command did what was asked (a tag was printed, a tag verified).
    pub const SUCCESS: u8 = 0;
    /// The command ran and the answer is "no": a tag that does not match.
    pub const REJECTED: u8 = 1;
    /// Bad usage or bad input: unknown algorithm, malformed hex, a wrong key
    /// length, an unreadable file. clap's own usage errors exit with 2 as well.
    pub const USAGE: u8 = 2;
    /// A network peer gave no usable answer (`authtime query`: no reply in
    /// time, a Kiss-o'-Death, an unsynchronized server, a server whose root
    /// distance exceeds 1.5 s).
    pub const NO_ANSWER: u8 = 3;
    /// Signed answers that prove a server lied (`authtime roughtime query`:
    /// two Roughtime answers out of causal order).
    pub const MALFEASANCE: u8 = 4;
    /// No time to trust for a certificate check (`authtime query --nts
    /// --roughtime-servers`: fewer Roughtime servers than the quorum answered,
    /// or their answers do not overlap).
    pub const NO_QUORUM: u8 = 5;
}

/// How a command that ran to the end came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Success,
    /// Exit 1, with the one-line reason to show on standard error.
    Rejected(String),
    /// Exit 3, with the one-line reason to show on standard error.
    NoAnswer(String),
    /// Exit 4, with the one-line reason to show on standard error.
    Malfeasance(String),
    /// Exit 5, with the one-line reason to show on standard error.
    NoQuorum(String),
}

impl Outcome {
    /// The process exit code for this outcome.
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Success => exit_code::SUCCESS,
            Self::Rejected(_) => exit_code::REJECTED,
            Self::NoAnswer(_) => exit_code::NO_ANSWER,
            Self::Malfeasance(_) => exit_code::MALFEASANCE,
            Self::NoQuorum(_) => exit_code::NO_QUORUM,
        }
    }
}

/// The standard streams a command uses, so tests can give it buffers instead.
pub struct Streams<'a> {
    /// Where messages come from when no `--in FILE` is given.
    pub stdin: &'a mut dyn Read,
    /// Whether standard input is a terminal, so that a command waiting for a
    /// message there can say so instead of seeming to hang.
    pub stdin_is_terminal: bool,
    /// Results: tags, digests, listings.
    pub stdout: &'a mut dyn Write,
    /// Notes for the person at the terminal ("tag ok").
    pub stderr: &'a mut dyn Write,
}

/// Runs the command `cli` describes.
///
/// # Errors
/// Anything that stops the command before it has an answer: bad arguments,
/// unreadable input, a failed write. `main` prints it on one line and exits with
/// [`exit_code::USAGE`].
pub fn run(cli: &cli::Cli, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    match &cli.command {
        cli::Command::Mac(cli::MacCommand::List(args)) => cmd_mac_list::list(args, streams),
        cli::Command::Mac(cli::MacCommand::Tag(args)) => cmd_mac::tag(args, streams),
        cli::Command::Mac(cli::MacCommand::Verify(args)) => cmd_mac::verify(args, streams),
        cli::Command::Hash(args) => cmd_hash::hash(args, streams),
        cli::Command::Serve(args) => cmd_serve::serve(args, streams),
        cli::Command::Config(cli::ConfigCommand::Check(args)) => cmd_config::check(args, streams),
        cli::Command::Query(args) => cmd_query::query(args, streams),
        cli::Command::Keygen(args) => cmd_keygen::keygen(args, streams),
        cli::Command::Nts(cli::NtsCommand::Cert(args)) => cmd_nts_cert::cert(args, streams),
        cli::Command::Nts(cli::NtsCommand::Kek(args)) => cmd_nts_kek::kek(args, streams),
        cli::Command::Tesla(cli_tesla::TeslaCommand::Keygen(args)) => {
            cmd_tesla_keygen::keygen(args, streams)
        }
        cli::Command::Tesla(cli_tesla::TeslaCommand::Send(args)) => {
            cmd_tesla_send::send(args, streams)
        }
        cli::Command::Tesla(cli_tesla::TeslaCommand::Recv(args)) => {
            cmd_tesla_recv::recv(args, streams)
        }
        cli::Command::Tesla(cli_tesla::TeslaCommand::DtlsSend(args)) => {
            cmd_tesla_dtls::send(args, streams)
        }
        cli::Command::Tesla(cli_tesla::TeslaCommand::DtlsRecv(args)) => {
            cmd_tesla_dtls::recv(args, streams)
        }
        cli::Command::Status(args) => cmd_status::status(args, streams),
        cli::Command::Broadcast(cli_broadcast::BroadcastCommand::Serve(args)) => {
            cmd_broadcast::serve(args, streams)
        }
        cli::Command::Broadcast(cli_broadcast::BroadcastCommand::Listen(args)) => {
            cmd_broadcast::listen(args, streams)
        }
        cli::Command::Roughtime(cmd_roughtime::RoughtimeCommand::Query(args)) => {
            cmd_roughtime::query(args, streams)
        }
        cli::Command::Roughtime(cmd_roughtime::RoughtimeCommand::VerifyReport(args)) => {
            cmd_roughtime_report::verify_report(args, streams)
        }
        cli::Command::Roughtime(cmd_roughtime::RoughtimeCommand::Keygen(args)) => {
            cmd_roughtime_keys::keygen(args, streams)
        }
        cli::Command::Roughtime(cmd_roughtime::RoughtimeCommand::Delegate(args)) => {
            cmd_roughtime_keys::delegate(args, streams)
        }
    }
}
