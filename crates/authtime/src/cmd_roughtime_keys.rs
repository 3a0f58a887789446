//! `authtime roughtime keygen` and `authtime roughtime delegate`: the keys
//! of a Roughtime server (`[roughtime] long-term-key` and `delegation` of
//! the daemon's configuration). The text forms are
//! `authtime_roughtime::delegation_file`'s; the files are written by
//! `authtime_server::roughtime::key_files` (mode 0600, never overwriting).

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, anyhow, bail};
use authtime_roughtime::delegation_file::{delegation_text, seed_text};
use authtime_roughtime::{OnlineKey, SigningKey};
use authtime_server::roughtime::key_files::{create_private_file, read_long_term_key};
use base64::Engine as _;
use clap::Args;

use crate::{Outcome, Streams};

/// `authtime roughtime keygen`.
#[derive(Debug, Args)]
pub struct RoughtimeKeygenArgs {
    /// Where to write the long-term seed (hex, mode 0600); an existing file
    /// is never overwritten.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// `authtime roughtime delegate`.
#[derive(Debug, Args)]
pub struct RoughtimeDelegateArgs {
    /// The long-term seed file (from `authtime roughtime keygen`).
    #[arg(long, value_name = "FILE")]
    pub long_term_key: PathBuf,
    /// How long the online key is valid from now: seconds, or a number
    /// with s, m, h, d or w (30d). MINT is set 5 minutes before now for
    /// clients whose clocks lag.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub valid_for: u64,
    /// Where to write the delegation (mode 0600); an existing file is never
    /// overwritten.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// After-help of `authtime roughtime keygen`.
pub const KEYGEN_HELP: &str = "Prints the public key in base64 (as Roughtime server lists \
publish it) and in hex. Give the seed file to the daemon as `[roughtime] long-term-key`, \
or keep it offline and hand the daemon delegations made with `authtime roughtime delegate`.\n\n\
Example:\n  authtime roughtime keygen --out /etc/authtime/roughtime.key";

/// After-help of `authtime roughtime delegate`.
pub const DELEGATE_HELP: &str = "Makes a fresh online key and signs its certificate (DELE, \
for both wire versions) with the long-term key, for a daemon whose long-term key stays \
offline: give it the file as `[roughtime] delegation`. The daemon re-reads the file when it \
changes, warns as MAXT comes near and answers nothing after it: write the next delegation \
before then. The file holds the online key's secret; it is written with mode 0600.\n\n\
Example:\n  authtime roughtime delegate --long-term-key roughtime.key --valid-for 30d \
--out roughtime.delegation";

/// Seconds from `30`, `90s`, `15m`, `12h`, `30d` or `2w`.
///
/// # Errors
/// Anything else, zero, or more than ten years.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "`{text}`: give seconds or a number with s, m, h, d or w"
            ));
        }
    };
    let seconds = number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("`{text}`: give seconds or a number with s, m, h, d or w"))?;
    if seconds == 0 || seconds > 10 * 366 * 86_400 {
        return Err(format!("`{text}`: must be 1 second to 10 years"));
    }
    Ok(seconds)
}

fn random_seed() -> anyhow::Result<SigningKey> {
    let mut seed = zeroize::Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut seed[..]).map_err(|e| anyhow!("no random bytes: {e}"))?;
    Ok(SigningKey::from_bytes(&seed))
}

fn print_public(public: &[u8; 32], streams: &mut Streams<'_>) -> anyhow::Result<()> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(public);
    writeln!(
        streams.stdout,
        "public key (base64): {b64}\npublic key (hex): {}",
        hex::encode(public)
    )
    .context("stdout")
}

/// Writes a new long-term seed and prints its public key.
///
/// # Errors
/// The file exists or cannot be written, or no random bytes.
pub fn keygen(args: &RoughtimeKeygenArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let key = random_seed()?;
    create_private_file(&args.out, &seed_text(&key)).map_err(|e| anyhow!(e))?;
    print_public(&key.verifying_key().to_bytes(), streams)?;
    writeln!(
        streams.stderr,
        "wrote {} (mode 0600): the Roughtime long-term key; keep it like a TLS private key",
        args.out.display()
    )
    .context("stderr")?;
    Ok(Outcome::Success)
}

/// Writes a delegation to a fresh online key.
///
/// # Errors
/// The long-term key cannot be read, the output exists or cannot be written.
pub fn delegate(
    args: &RoughtimeDelegateArgs,
    streams: &mut Streams<'_>,
) -> anyhow::Result<Outcome> {
    let long_term = read_long_term_key(&args.long_term_key).map_err(|e| anyhow!(e))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("the system clock is before 1970")?
        .as_secs();
    let Some(maxt) = now.checked_add(args.valid_for) else {
        bail!("--valid-for is too long");
    };
    let mint = now.saturating_sub(300);
    let key = OnlineKey::delegate(&long_term, random_seed()?, mint, maxt)?;
    let public = long_term.verifying_key().to_bytes();
    create_private_file(&args.out, &delegation_text(&public, &key)).map_err(|e| anyhow!(e))?;
    print_public(&public, streams)?;
    writeln!(
        streams.stdout,
        "valid from {} to {} (MINT {mint}, MAXT {maxt})",
        crate::cmd_roughtime_report::utc(mint),
        crate::cmd_roughtime_report::utc(maxt)
    )
    .context("stdout")?;
    writeln!(
        streams.stderr,
        "wrote {} (mode 0600): give it to the daemon as [roughtime] delegation",
        args.out.display()
    )
    .context("stderr")?;
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_scratch::ScratchDir;

    fn streams<'a>(out: &'a mut Vec<u8>, err: &'a mut Vec<u8>) -> Streams<'a> {
        Streams {
            stdin: Box::leak(Box::new(std::io::empty())),
            stdin_is_terminal: false,
            stdout: out,
            stderr: err,
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(90));
        assert_eq!(parse_duration("15m"), Ok(900));
        assert_eq!(parse_duration("30d"), Ok(30 * 86_400));
        assert_eq!(parse_duration("2w"), Ok(14 * 86_400));
        for bad in ["", "0", "d", "5y", "1.5d", "-3", "99999999999999999999w"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keygen_then_delegate_make_files_the_daemon_reads() {
        let dir = ScratchDir::new("cmd-rt-keys");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let seed = dir.path("lt.key");
        let args = RoughtimeKeygenArgs { out: seed.clone() };
        keygen(&args, &mut streams(&mut out, &mut err)).expect("keygen");
        let text = String::from_utf8(out).expect("utf8");
        let public = read_long_term_key(&seed)
            .expect("reads")
            .verifying_key()
            .to_bytes();
        assert!(text.contains(&hex::encode(public)), "{text}");
        assert!(keygen(&args, &mut streams(&mut Vec::new(), &mut Vec::new())).is_err());

        let d = RoughtimeDelegateArgs {
            long_term_key: seed,
            valid_for: 3600,
            out: dir.path("d"),
        };
        delegate(&d, &mut streams(&mut Vec::new(), &mut Vec::new())).expect("delegate");
        let back = authtime_server::roughtime::key_files::read_delegation(&d.out).expect("reads");
        assert_eq!(back.long_term_public, public);
        let (mint, maxt) = back.key.window();
        assert_eq!(maxt - mint, 3600 + 300);
    }
}
