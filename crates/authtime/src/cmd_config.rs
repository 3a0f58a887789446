//! `authtime config check`, and reading a configuration file for `authtime serve`.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, anyhow};
use authtime_server::Settings;
use authtime_server::config::location::locate;

use crate::{Outcome, Streams, cli::ConfigCheckArgs};

pub use authtime_server::config::file::ConfigProblems;

/// Reads, parses and validates the configuration file at `path`.
///
/// # Errors
/// The file cannot be read (an error), or it has problems ([`ConfigProblems`]).
pub fn read_settings(path: &Path) -> anyhow::Result<Result<Settings, ConfigProblems>> {
    authtime_server::config::file::read_settings(path)
        .with_context(|| format!("{}", path.display()))
}

/// Checks a configuration file and the key file it names: prints `ok`, or
/// each problem on standard output and fails (exit 2).
///
/// # Errors
/// An unreadable or invalid file.
pub fn check(args: &ConfigCheckArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let mut lines = match read_settings(&args.file)? {
        Ok(settings) => {
            let mut lines = check_key_file(&args.file, &settings, streams)?;
            lines.extend(check_nts_certificate(&args.file, &settings));
            lines.extend(check_pool_files(&args.file, &settings));
            lines.extend(check_roughtime_keys(&args.file, &settings));
            lines
        }
        Err(problems) => problems.lines,
    };
    if lines.is_empty() {
        writeln!(streams.stdout, "ok")?;
        return Ok(Outcome::Success);
    }
    for line in &lines {
        writeln!(streams.stdout, "{line}")?;
    }
    let count = lines.len();
    lines.clear();
    Err(anyhow!(
        "{} is not valid: {count} problem{}",
        args.file.display(),
        if count == 1 { "" } else { "s" }
    ))
}

/// Loads the NTS-KE certificate chain and private key the settings name, as
/// the server would; a failure becomes a problem.
fn check_nts_certificate(config: &Path, settings: &Settings) -> Vec<String> {
    let Some(ke) = settings.nts.as_ref().and_then(|n| n.ke.as_ref()) else {
        return Vec::new();
    };
    match authtime_ntske::tls_config::server_config_from_files(
        &ke.certificate_chain,
        &ke.private_key,
    ) {
        Ok(_) => Vec::new(),
        Err(e) => {
            let text = std::fs::read_to_string(config).unwrap_or_default();
            let mut line = format!("{}:", config.display());
            if let Some(l) = locate(&text, "nts-ke.certificate-chain") {
                let _ = write!(line, "{}:{}:", l.line, l.column);
            }
            let _ = write!(line, " nts-ke.certificate-chain: {e}");
            vec![line]
        }
    }
}

/// Reads the NTS pool token files (a member's `pool-token-files`, a load
/// balancer's backend `token-file`s) and the backends' `ca-file`s as the
/// server would at start: mode, content, certificates. A failure becomes a
/// problem that names the file, never a token.
fn check_pool_files(config: &Path, settings: &Settings) -> Vec<String> {
    use authtime_ntske::pool_token_file::read_pool_token_file;
    let Some(ke) = settings.nts.as_ref().and_then(|n| n.ke.as_ref()) else {
        return Vec::new();
    };
    let text = std::fs::read_to_string(config).unwrap_or_default();
    let problem = |key: &str, located: &str, e: &dyn std::fmt::Display| {
        let mut line = format!("{}:", config.display());
        if let Some(l) = locate(&text, located) {
            let _ = write!(line, "{}:{}:", l.line, l.column);
        }
        let _ = write!(line, " {key}: {e}");
        line
    };
    let mut lines = Vec::new();
    for (i, path) in ke.pool_token_files.iter().enumerate() {
        if let Err(e) = read_pool_token_file(path) {
            lines.push(problem(
                &format!("nts-ke.pool-token-files[{i}]"),
                "nts-ke.pool-token-files",
                &e,
            ));
        }
    }
    for (i, backend) in ke.balancer.iter().flat_map(|b| &b.backends).enumerate() {
        if let Err(e) = read_pool_token_file(&backend.token_file) {
            lines.push(problem(
                &format!("nts-ke-balancer.backend[{i}].token-file"),
                "nts-ke-balancer",
                &e,
            ));
        }
        if let Some(ca) = &backend.ca_file
            && let Err(e) = authtime_ntske::tls_config::client_config(Some(ca))
        {
            lines.push(problem(
                &format!("nts-ke-balancer.backend[{i}].ca-file"),
                "nts-ke-balancer",
                &e,
            ));
        }
    }
    lines
}

/// Reads the Roughtime long-term key or delegation as the server would
/// (permissions, format, certificates); a failure becomes a problem.
fn check_roughtime_keys(config: &Path, settings: &Settings) -> Vec<String> {
    use authtime_server::config::roughtime::RoughtimeKeySource;
    use authtime_server::roughtime::key_files::{read_delegation, read_long_term_key};
    let Some(rt) = &settings.roughtime else {
        return Vec::new();
    };
    let (key, result) = match &rt.keys {
        RoughtimeKeySource::LongTerm(path) => (
            "roughtime.long-term-key",
            read_long_term_key(path).map(|_| ()),
        ),
        RoughtimeKeySource::Delegation(path) => {
            ("roughtime.delegation", read_delegation(path).map(|_| ()))
        }
    };
    let Err(e) = result else {
        return Vec::new();
    };
    let text = std::fs::read_to_string(config).unwrap_or_default();
    let mut line = format!("{}:", config.display());
    if let Some(l) = locate(&text, key) {
        let _ = write!(line, "{}:{}:", l.line, l.column);
    }
    let _ = write!(line, " {key}: {e}");
    vec![line]
}

/// Loads the key file the settings name; its error becomes a problem, its
/// warnings go to standard error.
fn check_key_file(
    config: &Path,
    settings: &Settings,
    streams: &mut Streams<'_>,
) -> anyhow::Result<Vec<String>> {
    let Some(source) = &settings.keys else {
        return Ok(Vec::new());
    };
    match authtime_keys::read_key_file(&source.path, source.format) {
        Ok(parsed) => {
            for warning in &parsed.warnings {
                writeln!(streams.stderr, "authtime: warning: {warning}")?;
            }
            Ok(Vec::new())
        }
        Err(e) => {
            let text = std::fs::read_to_string(config).unwrap_or_default();
            let mut line = format!("{}:", config.display());
            if let Some(l) = locate(&text, "ntp.keys") {
                let _ = write!(line, "{}:{}:", l.line, l.column);
            }
            let _ = write!(line, " ntp.keys: {e}");
            Ok(vec![line])
        }
    }
}
