//! `authtime roughtime query`: asks Roughtime servers in turn over UDP, with
//! chained nonces, and prints what each signed and the interval they agree
//! on; writes a malfeasance report when two answers are out of causal order.
//! The protocol (requests, verification, chaining, reports) is
//! `authtime-roughtime`'s; this file does the sockets, the clock-free
//! waiting and the printing.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use authtime_roughtime::Version;
use authtime_roughtime::ecosystem::{decode_key, is_host_port};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use crate::cmd_roughtime_report::{VerifyReportArgs, utc};
use crate::roughtime_client::{
    Answer, Target, ask_in_chain, load_server_list, servers_json, version_name,
};
use crate::{Outcome, Streams};

/// `authtime roughtime ...`.
#[derive(Debug, Subcommand)]
pub enum RoughtimeCommand {
    /// Ask Roughtime servers for the time in turn, with chained nonces, and
    /// check that their signed answers agree.
    #[command(after_help = QUERY_HELP, disable_version_flag = true)]
    Query(QueryArgs),
    /// Check a malfeasance report (draft-ietf-ntp-roughtime-19 §8.2): its
    /// chain verifies and two of its answers are out of causal order.
    #[command(after_help = crate::cmd_roughtime_report::VERIFY_HELP)]
    VerifyReport(VerifyReportArgs),
    /// Make a Roughtime server's long-term key (an Ed25519 seed file) and
    /// print its public key.
    #[command(after_help = crate::cmd_roughtime_keys::KEYGEN_HELP)]
    Keygen(crate::cmd_roughtime_keys::RoughtimeKeygenArgs),
    /// Delegate to a fresh online key with a long-term key kept offline: the
    /// file the daemon takes as `[roughtime] delegation`.
    #[command(after_help = crate::cmd_roughtime_keys::DELEGATE_HELP)]
    Delegate(crate::cmd_roughtime_keys::RoughtimeDelegateArgs),
}

/// The wire version offered to a `--server`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtocolVersion {
    /// RFC 10049's version 1.
    #[value(name = "1")]
    Rfc1,
    /// The drafts' 0x8000000c (drafts 12 to 19, Cloudflare, roughenough 1.x).
    Draft,
}

/// `authtime roughtime query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// A server list in the ecosystem JSON format (Cloudflare's ecosystem.json).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["server", "public_key", "version"])]
    pub servers: Option<PathBuf>,
    /// A server to ask, in order; repeat for several. Each needs a --public-key.
    #[arg(long, value_name = "HOST:PORT", required_unless_present = "servers")]
    pub server: Vec<String>,
    /// The long-term Ed25519 public key of the --server in the same position.
    #[arg(long, value_name = "BASE64|HEX")]
    pub public_key: Vec<String>,
    /// The version to offer: once for every --server, or once per --server.
    /// Without it both are offered and the server picks.
    #[arg(long, value_enum)]
    pub version: Vec<ProtocolVersion>,
    /// How long to wait for each answer, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub timeout_ms: u64,
    /// How many times to resend an unanswered request.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub retries: u32,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Where to write the malfeasance report (JSON) when answers are out of causal order.
    #[arg(long, value_name = "FILE")]
    pub malfeasance_report: Option<PathBuf>,
}

/// After-help of `authtime roughtime query`.
pub const QUERY_HELP: &str = "Servers are asked one after the other; each request's nonce is \
the hash of the previous verified response and fresh random bytes \
(draft-ietf-ntp-roughtime-19 §8), so the answers are in a provable order. A server that \
gives no verifying answer within --timeout-ms after --retries resends is reported and \
skipped, as are list entries marked Google-Roughtime (the pre-IETF protocol). Each answer is verified against the server's long-term key; the midpoint is printed \
in UTC (RFC 3339) with its radius, then the interval every answer allows.\n\n\
Exit codes: 0 at least one server answered and all answers agree, 2 bad usage or input, \
3 no server answered or the answers do not overlap, 4 malfeasance: an answer's interval ends \
before an earlier answer's begins (the report goes to --malfeasance-report FILE).\n\n\
Examples:\n  authtime roughtime query --servers ecosystem.json\n  \
authtime roughtime query --server time.example:2002 --public-key <base64> --version 1 --json";

/// Runs `authtime roughtime query`.
pub fn query(args: &QueryArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let targets = targets(args)?;
    let timeout = Duration::from_millis(args.timeout_ms.max(1));
    let (chain, answers) = ask_in_chain(&targets, timeout, args.retries)?;

    let violation = chain.malfeasance();
    let agreed = chain.agreed_interval();
    let mut report_written = None;
    if violation.is_some()
        && let Some(path) = &args.malfeasance_report
    {
        std::fs::write(path, chain.report().to_json() + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        report_written = Some(path.display().to_string());
    }
    // Link k of the chain is the k-th server that answered.
    let answered: Vec<&str> = answers
        .iter()
        .filter(|a| a.result.is_ok())
        .map(|a| a.name.as_str())
        .collect();
    let named = violation.map(|(i, j)| (answered[i], answered[j]));

    if args.json {
        print_json(streams, &answers, agreed, named, report_written.as_deref())?;
    } else {
        print_text(streams, &answers, agreed, named, report_written.as_deref())?;
    }
    Ok(match (named, agreed) {
        (Some((a, b)), _) => Outcome::Malfeasance(format!(
            "malfeasance: {b} answered before {a}'s interval begins, though asked after it"
        )),
        (None, Some(_)) => Outcome::Success,
        (None, None) if answered.is_empty() => Outcome::NoAnswer("no server answered".into()),
        (None, None) => Outcome::NoAnswer("the answers do not overlap".into()),
    })
}

fn targets(args: &QueryArgs) -> anyhow::Result<Vec<Target>> {
    if let Some(path) = &args.servers {
        return load_server_list(path);
    }
    if args.public_key.len() != args.server.len() {
        bail!(
            "{} --server but {} --public-key: give one key per server, in the same order",
            args.server.len(),
            args.public_key.len()
        );
    }
    if args.version.len() > 1 && args.version.len() != args.server.len() {
        bail!("give --version once for all servers or once per --server");
    }
    let mut out = Vec::with_capacity(args.server.len());
    for (i, (server, key)) in args.server.iter().zip(&args.public_key).enumerate() {
        if !is_host_port(server) {
            bail!("--server {server:?} is not HOST:PORT");
        }
        let versions = match args.version.get(i).or(args.version.first()) {
            Some(ProtocolVersion::Rfc1) => vec![Version::Rfc1],
            Some(ProtocolVersion::Draft) => vec![Version::Draft12],
            None => vec![Version::Draft12, Version::Rfc1],
        };
        out.push(Target {
            name: server.clone(),
            versions,
            key: parse_key(key)?,
            addresses: vec![server.clone()],
        });
    }
    Ok(out)
}

fn parse_key(text: &str) -> anyhow::Result<[u8; 32]> {
    if let Some(key) = decode_key(text) {
        return Ok(key);
    }
    hex::decode(text)
        .ok()
        .and_then(|k| k.try_into().ok())
        .ok_or_else(|| anyhow!("--public-key {text:?} is neither base64 nor hex of 32 bytes"))
}

fn print_text(
    streams: &mut Streams<'_>,
    answers: &[Answer],
    agreed: Option<(u64, u64)>,
    violation: Option<(&str, &str)>,
    report: Option<&str>,
) -> anyhow::Result<()> {
    let mut out = String::new();
    for a in answers {
        let addr = a.address.map(|a| format!(" ({a})")).unwrap_or_default();
        match &a.result {
            Ok((v, midpoint, radius)) => writeln!(
                out,
                "{}{addr}: version {}, midpoint {}, radius {radius} s",
                a.name,
                version_name(*v),
                utc(*midpoint)
            )?,
            Err(why) => writeln!(out, "{}{addr}: {why}", a.name)?,
        }
    }
    match agreed {
        Some((lo, hi)) => writeln!(out, "agreed: {} .. {}", utc(lo), utc(hi))?,
        None => writeln!(out, "agreed: none")?,
    }
    if let Some((a, b)) = violation {
        writeln!(out, "malfeasance: {b}'s interval ends before {a}'s begins")?;
    }
    if let Some(path) = report {
        writeln!(out, "report: {path}")?;
    }
    streams.stdout.write_all(out.as_bytes())?;
    Ok(())
}

fn print_json(
    streams: &mut Streams<'_>,
    answers: &[Answer],
    agreed: Option<(u64, u64)>,
    violation: Option<(&str, &str)>,
    report: Option<&str>,
) -> anyhow::Result<()> {
    let doc = json!({
        "servers": servers_json(answers),
        "agreed": agreed.map(|(lo, hi)| json!({
            "earliest": lo, "latest": hi, "earliest_utc": utc(lo), "latest_utc": utc(hi),
        })),
        "malfeasance": violation.map(|(a, b)| json!({"earlier": a, "later": b})),
        "report": report,
    });
    writeln!(streams.stdout, "{doc}")?;
    Ok(())
}
