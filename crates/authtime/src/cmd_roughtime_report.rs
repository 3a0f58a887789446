//! `authtime roughtime verify-report`: checks a Roughtime malfeasance report
//! on its own, with nothing but the report (draft-ietf-ntp-roughtime-19 §8.2).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use authtime_roughtime::MalfeasanceReport;
use clap::Args;

use crate::{Outcome, Streams};

/// `authtime roughtime verify-report`.
#[derive(Debug, Args)]
pub struct VerifyReportArgs {
    /// The report (JSON: {"responses": [{"rand", "request", "response", "publicKey"}, ...]}).
    #[arg(value_name = "FILE")]
    pub report: PathBuf,
}

/// After-help of `authtime roughtime verify-report`.
pub const VERIFY_HELP: &str = "Checks that every nonce after the first is the hash of the \
previous response and the entry's rand, that every response verifies against its request and \
public key, and that some answer's interval ends before an earlier answer's begins. Prints \
each answer's midpoint (UTC) and radius.\n\n\
Exit codes: 0 the report verifies and shows malfeasance, 1 it verifies but shows none, \
or does not verify (the reason is printed), 2 bad usage or an unreadable file.\n\n\
Example:\n  authtime roughtime verify-report report.json";

/// Runs `authtime roughtime verify-report`.
pub fn verify_report(
    args: &VerifyReportArgs,
    streams: &mut Streams<'_>,
) -> anyhow::Result<Outcome> {
    let json = std::fs::read(&args.report)
        .with_context(|| format!("reading {}", args.report.display()))?;
    let verdict = match MalfeasanceReport::from_json(&json).and_then(|r| r.verify()) {
        Ok(v) => v,
        Err(e) => return Ok(Outcome::Rejected(format!("report does not verify: {e}"))),
    };
    let mut out = String::new();
    for (i, v) in verdict.verified.iter().enumerate() {
        writeln!(
            out,
            "response {i}: midpoint {}, radius {} s",
            utc(v.midpoint),
            v.radius
        )?;
    }
    let outcome = match verdict.violation {
        Some((i, j)) => {
            writeln!(
                out,
                "malfeasance: response {j}'s interval ends before response {i}'s begins"
            )?;
            Outcome::Success
        }
        None => Outcome::Rejected("the report verifies but shows no malfeasance".into()),
    };
    streams.stdout.write_all(out.as_bytes())?;
    Ok(outcome)
}

/// Seconds since the Unix epoch as RFC 3339 UTC (`2026-03-16T18:26:11Z`).
pub fn utc(secs: u64) -> String {
    let secs = i64::try_from(secs).unwrap_or(i64::MAX);
    let (y, mo, d) = authtime_clock::announce::civil_date(secs.div_euclid(86_400));
    let t = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}Z",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn utc_formats() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(1_773_685_571), "2026-03-16T18:26:11Z");
    }
}
