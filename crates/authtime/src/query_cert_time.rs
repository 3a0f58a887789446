//! What time `authtime query --nts` checks the NTS-KE certificate at, and
//! why: the local clock (or `--assume-local-time`), or, with
//! `--roughtime-servers`, the interval a quorum of Roughtime servers agree
//! on when the local clock is outside it or `--clock-unknown` is given
//! (RFC 8915 §8.5; docs/nts.md, "Starting with a wrong clock"). The
//! Roughtime servers are asked here (UDP, [`crate::roughtime_client`]); the
//! quorum rule is `authtime_roughtime::quorum` and the check at the
//! interval's ends `authtime_ntske::cert_time`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail};
use authtime_ntske::CertTime;
use authtime_roughtime::quorum::{QuorumError, agreed_by_quorum, default_quorum};
use serde_json::{Value, json};

use crate::Outcome;
use crate::cli::QueryArgs;
use crate::cmd_roughtime_report::utc;
use crate::rfc3339_input::parse_utc;
use crate::roughtime_client::{Answer, ask_in_chain, load_server_list, servers_json};

/// Resends of an unanswered Roughtime request.
const ROUGHTIME_RETRIES: u32 = 1;

/// The time to check the certificate at, with what to report about it.
pub(crate) struct CertTimeChoice {
    /// What the NTS-KE client checks the chain at.
    pub(crate) cert_time: CertTime,
    /// `local` or `roughtime`.
    pub(crate) source: &'static str,
    /// The line for standard error (none when the plain local clock is used
    /// with no Roughtime servers given).
    pub(crate) note: Option<String>,
    /// Seconds the assumed local clock is ahead of the system clock (0
    /// without `--assume-local-time`): NTP offsets are reported against the
    /// assumed clock.
    pub(crate) shift: f64,
    /// The `cert_time` object of `--json`.
    pub(crate) json: Value,
}

/// Either a time to check at, or a refusal before any NTS-KE.
pub(crate) enum Decision {
    /// Go on with NTS-KE.
    Check(CertTimeChoice),
    /// Refuse: the exit outcome, the JSON error value, and the report.
    Refuse {
        outcome: Outcome,
        error: &'static str,
        json: Value,
    },
}

/// The local clock: `--assume-local-time` or the system clock, in Unix
/// seconds, and whether it was assumed.
fn local_clock(args: &QueryArgs) -> anyhow::Result<(u64, bool, f64)> {
    let system = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| anyhow!("the system clock reads before 1970"))?
        .as_secs_f64();
    match &args.assume_local_time {
        Some(text) => {
            let assumed = parse_utc(text).map_err(|e| anyhow!("--assume-local-time {e}"))?;
            Ok((assumed, true, assumed as f64 - system))
        }
        None => Ok((system as u64, false, 0.0)),
    }
}

/// Decides the certificate check time (asking the Roughtime servers when
/// `--roughtime-servers` is given).
///
/// # Errors
/// Bad arguments: an unreadable server list, a quorum out of range, a
/// malformed `--assume-local-time`.
pub(crate) fn decide(args: &QueryArgs, timeout: Duration) -> anyhow::Result<Decision> {
    let (local, assumed, shift) = local_clock(args)?;
    let local_cert_time = if assumed {
        CertTime::At(local)
    } else {
        CertTime::SystemClock
    };
    let local_json = json!({
        "local_clock": utc(local),
        "local_clock_assumed": assumed,
    });
    let Some(path) = &args.roughtime_servers else {
        let mut json = local_json;
        json["source"] = json!("local");
        return Ok(Decision::Check(CertTimeChoice {
            cert_time: local_cert_time,
            source: "local",
            note: assumed.then(|| {
                format!(
                    "NTS: certificate checked against the assumed local clock {}",
                    utc(local)
                )
            }),
            shift,
            json,
        }));
    };

    let targets = load_server_list(path)
        .map_err(|e| anyhow!("--roughtime-servers {}: {e:#}", path.display()))?;
    let listed = targets.iter().filter(|t| !t.versions.is_empty()).count();
    if listed == 0 {
        bail!(
            "--roughtime-servers {}: no server this client can ask",
            path.display()
        );
    }
    let quorum = args.roughtime_quorum.unwrap_or(default_quorum(listed));
    if !(1..=listed).contains(&quorum) {
        bail!("--roughtime-quorum {quorum}: must be 1 to {listed} (the servers listed)");
    }
    let (chain, answers) = ask_in_chain(&targets, timeout, ROUGHTIME_RETRIES)?;
    let verdict = agreed_by_quorum(&chain, quorum);
    let answered = names(&answers);
    let mut report = json!({
        "servers": servers_json(&answers),
        "listed": listed,
        "quorum": quorum,
        "answered": answered.len(),
    });
    let (earliest, latest) = match verdict {
        Ok(interval) => interval,
        Err(e) => {
            let (outcome, error) = refusal(&e, &answered);
            report["error"] = json!(error);
            report["reason"] = json!(outcome_reason(&outcome));
            return Ok(Decision::Refuse {
                outcome,
                error,
                json: report,
            });
        }
    };
    report["agreed"] = json!({
        "earliest": earliest, "latest": latest,
        "earliest_utc": utc(earliest), "latest_utc": utc(latest),
    });
    report["servers_agreeing"] = json!(answered);
    let agreeing = format!(
        "{} of {listed} servers agree, quorum {quorum}",
        answered.len()
    );
    let interval_text = format!("{} .. {}", utc(earliest), utc(latest));
    // Positive: the local clock is ahead of the interval's middle.
    let local_minus_roughtime = i128::from(local) - i128::from(earliest / 2 + latest / 2);
    let mut json = local_json;
    json["local_minus_roughtime_s"] = json!(local_minus_roughtime);
    json["roughtime"] = report;
    let clock = if assumed {
        "the assumed local clock"
    } else {
        "the local clock"
    };
    let (cert_time, source, note) = if args.clock_unknown {
        (
            CertTime::Interval { earliest, latest },
            "roughtime",
            format!(
                "NTS: certificate checked against the Roughtime interval {interval_text} \
                 ({agreeing}): --clock-unknown"
            ),
        )
    } else if (earliest..=latest).contains(&local) {
        (
            local_cert_time,
            "local",
            format!(
                "NTS: certificate checked against {clock} {}, inside the Roughtime interval \
                 {interval_text} ({agreeing})",
                utc(local)
            ),
        )
    } else {
        let off_by = if local < earliest {
            earliest - local
        } else {
            local - latest
        };
        (
            CertTime::Interval { earliest, latest },
            "roughtime",
            format!(
                "NTS: certificate checked against the Roughtime interval {interval_text} \
                 ({agreeing}): {clock} {} is {off_by} s outside it",
                utc(local)
            ),
        )
    };
    json["source"] = json!(source);
    Ok(Decision::Check(CertTimeChoice {
        cert_time,
        source,
        note: Some(note),
        shift,
        json,
    }))
}

/// The names of the servers that answered, in chain order.
fn names(answers: &[Answer]) -> Vec<&str> {
    answers
        .iter()
        .filter(|a| a.result.is_ok())
        .map(|a| a.name.as_str())
        .collect()
}

/// The exit outcome and the JSON error value of a failed quorum.
fn refusal(error: &QuorumError, answered: &[&str]) -> (Outcome, &'static str) {
    let why = format!("refusing NTS-KE: {error}");
    match error {
        QuorumError::Malfeasance { earlier, later } => {
            let name = |i: &usize| answered.get(*i).copied().unwrap_or("?");
            (
                Outcome::Malfeasance(format!(
                    "refusing NTS-KE: Roughtime malfeasance: {} answered before {}'s interval \
                     begins, though asked after it",
                    name(later),
                    name(earlier)
                )),
                "roughtime_malfeasance",
            )
        }
        QuorumError::TooFewAnswers { .. } => (Outcome::NoQuorum(why), "roughtime_too_few_answers"),
        _ => (Outcome::NoQuorum(why), "roughtime_disagree"),
    }
}

fn outcome_reason(outcome: &Outcome) -> &str {
    match outcome {
        Outcome::Success => "",
        Outcome::Rejected(r)
        | Outcome::NoAnswer(r)
        | Outcome::Malfeasance(r)
        | Outcome::NoQuorum(r) => r,
    }
}

/// One line per Roughtime server of a report, on standard error.
pub(crate) fn print_servers(
    streams: &mut crate::Streams<'_>,
    report: &Value,
) -> anyhow::Result<()> {
    for server in report["servers"].as_array().into_iter().flatten() {
        let name = server["name"].as_str().unwrap_or("?");
        match (server["midpoint_utc"].as_str(), server["error"].as_str()) {
            (Some(midpoint), _) => writeln!(
                streams.stderr,
                "roughtime {name}: midpoint {midpoint}, radius {} s",
                server["radius"]
            )?,
            (None, error) => writeln!(
                streams.stderr,
                "roughtime {name}: {}",
                error.unwrap_or("no answer")
            )?,
        }
    }
    Ok(())
}
