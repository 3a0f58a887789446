//! `authtime query --nts`: the arguments checked, an
//! [`authtime_ntske::NtsSession`] run `--count` times (NTS-KE, protected
//! exchanges, NAK recovery: all in `authtime-ntske`), the cookie store read
//! and saved (`--cookie-store`), and the results printed.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs as _};
use std::path::Path;
use std::time::Duration;

use anyhow::anyhow;
use authtime_ntske::cookie_store::{forget_jar, load_jar, save_jar};
use authtime_ntske::{FailureClass, NtsSession, SessionError, SessionSetupError};
use authtime_proto::Sample;
use serde_json::json;

use crate::cmd_query::{Failure, MAX_COUNT, print_json, print_line, seconds, verdict};
use crate::query_cert_time::{self, Decision};
use crate::{Outcome, Streams, cli::QueryArgs};

/// Splits `HOST`, `HOST:PORT`, `[IPv6]:PORT` or a bare IPv6 address.
fn host_and_port(server: &str) -> anyhow::Result<(String, u16)> {
    let default_port = authtime_ntske::NTS_KE_PORT;
    if let Ok(addr) = server.parse::<SocketAddr>() {
        return Ok((addr.ip().to_string(), addr.port()));
    }
    if let Ok(ip) = server.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok((ip.to_string(), default_port));
    }
    match server.rsplit_once(':') {
        Some((host, port)) => Ok((
            host.to_owned(),
            port.parse()
                .map_err(|_| anyhow!("{server}: `{port}` is not a port number"))?,
        )),
        None => Ok((server.to_owned(), default_port)),
    }
}

/// The verdict for a session error.
fn failure(error: &SessionError) -> Failure {
    match (error.class(), error) {
        (FailureClass::Unsynchronized, SessionError::Reply(e)) => {
            Failure::unsynchronized(e).unwrap_or_else(|| Failure::NoAnswer(error.to_string()))
        }
        (FailureClass::Authentication, _) => Failure::Authentication(error.to_string()),
        _ => Failure::NoAnswer(error.to_string()),
    }
}

fn setup_error(error: SessionSetupError) -> anyhow::Error {
    match error {
        SessionSetupError::Client(e) => anyhow!("--ca: {e}"),
        other => anyhow!("{other}"),
    }
}

/// Runs NTS-KE (unless the cookie store has what it needs), then `--count`
/// protected exchanges.
///
/// # Errors
/// Bad arguments or an unusable cookie store; key-exchange failures are
/// verdicts (exit 1 or 3), not errors.
pub fn query_nts(args: &QueryArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    if !(1..=MAX_COUNT).contains(&args.count) {
        return Err(anyhow!("--count {}: must be 1 to {MAX_COUNT}", args.count));
    }
    let timeout = seconds("--timeout", args.timeout, 0.001, 60.0)?;
    let interval = seconds("--interval", args.interval, 0.0, 3600.0)?;
    let (ke_host, ke_port) = host_and_port(&args.server)?;
    if let Some(ca) = &args.ca
        && !ca.is_file()
    {
        return Err(anyhow!("--ca {}: no such file", ca.display()));
    }
    // Shown for failures before any NTP server is known: the NTS-KE server.
    let ke_addr = (ke_host.as_str(), ke_port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| SocketAddr::new(IpAddr::from([0u8; 4]), ke_port));
    let choice = match query_cert_time::decide(args, timeout)? {
        Decision::Check(choice) => choice,
        Decision::Refuse {
            outcome,
            error,
            json,
        } => return refuse(args, streams, ke_addr, outcome, error, json),
    };
    if let Some(note) = &choice.note {
        writeln!(streams.stderr, "{note}")?;
    }
    let mut session = NtsSession::new_at(
        &ke_host,
        ke_port,
        args.ca.as_deref(),
        timeout,
        choice.cert_time,
    )
    .map_err(setup_error)?;
    let ke_id = session.ke_server();
    if let Some(path) = &args.cookie_store {
        let jar = load_jar(path, &ke_id).map_err(|e| store_error(path, &e))?;
        session.restore(jar);
    }

    let mut results: Vec<Result<Sample, Failure>> = Vec::new();
    let mut cert_outside_validity = false;
    for i in 0..args.count {
        if i > 0 {
            std::thread::sleep(interval);
        }
        let result = session
            .query()
            .map(|mut sample| {
                // Offsets against the clock the client believes in.
                sample.offset -= choice.shift;
                sample
            })
            .map_err(|e| {
                cert_outside_validity |= e.is_certificate_validity();
                failure(&e)
            });
        let shown = session.ntp_addr().unwrap_or(ke_addr);
        if !args.json {
            print_line(streams, shown, &result)?;
        }
        results.push(result);
    }
    if let Some(path) = &args.cookie_store {
        match session.jar() {
            Some(jar) => save_jar(path, jar).map_err(|e| store_error(path, &e))?,
            // The stored session was dropped and NTS-KE gave none in its
            // place: its cookies must not be tried again on the next run.
            None if session.ke_stats().stored_session_dropped => {
                forget_jar(path).map_err(|e| store_error(path, &e))?;
            }
            None => {}
        }
    }
    let shown = session.ntp_addr().unwrap_or(ke_addr);
    let report = session.ke_stats();
    let jar = session.jar();
    let nts = json!({
        "ke_server": ke_id,
        "ke_exchanges": report.exchanges,
        "ke_ms": report.last_ms,
        "tls_group": report.tls_group,
        "session_from_cookie_store": report.from_store,
        "aead": jar.and_then(|j| authtime_ntske::aead::name(j.aead_id)),
        "ntp_server": jar.map(|j| format!("{}:{}", j.ntp_server, j.ntp_port)),
        "cookies_left": jar.map_or(0, |j| j.cookies.len()),
        "stored_session_dropped": report.stored_session_dropped,
        "cert_time_source": choice.source,
        "cert_time": choice.json,
        "certificate_outside_validity": cert_outside_validity,
    });
    if cert_outside_validity {
        writeln!(
            streams.stderr,
            "NTS: the server's certificate is outside its validity period at the time it was \
             checked against ({}); if the local clock is wrong, --roughtime-servers FILE checks \
             it against time from Roughtime instead",
            choice.source
        )?;
    }
    if report.stored_session_dropped && !args.json {
        writeln!(
            streams.stderr,
            "NTS: the session from the cookie store got no reply and was dropped (its cookies \
             removed from the store); NTS-KE was redone"
        )?;
    }
    if args.json {
        print_json(streams, &args.server, shown, &results, Some(("nts", nts)))?;
    } else {
        writeln!(
            streams.stderr,
            "NTS: {} key exchange(s){}{}{}, {} cookie(s) left",
            report.exchanges,
            report
                .last_ms
                .map(|ms| format!(" (last {ms:.1} ms)"))
                .unwrap_or_default(),
            report
                .tls_group
                .map(|group| format!(", TLS key exchange {group}"))
                .unwrap_or_default(),
            if report.from_store {
                ", session taken from the cookie store"
            } else {
                ""
            },
            jar.map_or(0, |j| j.cookies.len())
        )?;
    }
    Ok(verdict(shown, &results))
}

/// Reports a refusal to run NTS-KE for want of a trusted time.
fn refuse(
    args: &QueryArgs,
    streams: &mut Streams<'_>,
    ke_addr: SocketAddr,
    outcome: Outcome,
    error: &str,
    roughtime: serde_json::Value,
) -> anyhow::Result<Outcome> {
    if args.json {
        let doc = json!({
            "server": args.server,
            "address": ke_addr.to_string(),
            "replies": [],
            "exit_code": outcome.exit_code(),
            "error": error,
            "nts": {
                "cert_time_source": null,
                "cert_time": { "source": null, "roughtime": roughtime },
            },
        });
        writeln!(streams.stdout, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        query_cert_time::print_servers(streams, &roughtime)?;
    }
    Ok(outcome)
}

fn store_error(path: &Path, error: &authtime_ntske::CookieStoreError) -> anyhow::Error {
    anyhow!("--cookie-store {}: {error}", path.display())
}

/// One NTS-KE and one protected exchange with the NTP server it names: the
/// authenticated sample, or why there is none. For commands that check their
/// time against an NTS server (`authtime broadcast listen --nts-check`).
///
/// # Errors
/// A message saying what failed (resolution, NTS-KE, the exchange).
pub fn nts_sample(
    server: &str,
    ca: Option<&Path>,
    timeout: Duration,
) -> Result<(Sample, SocketAddr), String> {
    let (host, port) = host_and_port(server).map_err(|e| e.to_string())?;
    let mut session = NtsSession::new(&host, port, ca, timeout).map_err(|e| e.to_string())?;
    session.key_exchange().map_err(|e| e.to_string())?;
    let sample = session
        .exchange()
        .map_err(|e| failure(&e).reason().to_owned())?;
    let addr = session.ntp_addr().ok_or("no NTP server")?;
    Ok((sample, addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ke_servers_take_port_4460_by_default() {
        let at = |s: &str| host_and_port(s).expect(s);
        assert_eq!(at("time.example"), ("time.example".into(), 4460));
        assert_eq!(at("time.example:14460"), ("time.example".into(), 14460));
        assert_eq!(at("127.0.0.1"), ("127.0.0.1".into(), 4460));
        assert_eq!(at("[::1]:5"), ("::1".into(), 5));
        assert_eq!(at("::1"), ("::1".into(), 4460));
        assert!(host_and_port("host:port").is_err());
    }
}
