//! `authtime query --nts`: NTS-KE (RFC 8915 section 4) over TLS 1.3, then
//! NTS-protected NTP exchanges (section 5) with the server it names. Each
//! cookie is used once and the fresh ones are kept; an NTS NAK makes the
//! client redo NTS-KE once. Keys and unused cookies can be kept in a file
//! between runs (`--cookie-store`, RFC 8915 section 6's SHOULD).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs as _, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use authtime_nts::{AeadAlgorithm, ClientOutcome, SessionKeys, check_response};
use authtime_proto::{AuthStatus, ClientConfig, Sample, build_request};
use authtime_server::clock;
use authtime_wire::{Header, NtpTimestamp, Reader};
use serde_json::json;

use crate::cmd_query::{Failure, MAX_COUNT, print_json, print_line, seconds, verdict};
use crate::nts_cookie_store::{CookieJar, load_jar, save_jar};
use crate::{Outcome, Streams, cli::QueryArgs};

/// The NTS-KE port (RFC 8915 section 4).
const NTS_KE_PORT: u16 = 4460;
/// Cookies a client wants to hold (RFC 8915 section 4.1.6: servers send 8).
const WANTED_COOKIES: usize = 8;

/// What happened to NTS-KE in this run, for the report.
#[derive(Debug, Default)]
struct KeReport {
    exchanges: u32,
    last_ms: Option<f64>,
    from_store: bool,
}

/// Splits `HOST`, `HOST:PORT`, `[IPv6]:PORT` or a bare IPv6 address.
fn host_and_port(server: &str) -> anyhow::Result<(String, u16)> {
    if let Ok(addr) = server.parse::<SocketAddr>() {
        return Ok((addr.ip().to_string(), addr.port()));
    }
    if let Ok(ip) = server.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok((ip.to_string(), NTS_KE_PORT));
    }
    match server.rsplit_once(':') {
        Some((host, port)) => Ok((
            host.to_owned(),
            port.parse()
                .map_err(|_| anyhow!("{server}: `{port}` is not a port number"))?,
        )),
        None => Ok((server.to_owned(), NTS_KE_PORT)),
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
    let ke_id = format!("{ke_host}:{ke_port}");
    // Shown for failures before any NTP server is known: the NTS-KE server.
    let ke_addr = (ke_host.as_str(), ke_port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| SocketAddr::new(IpAddr::from([0u8; 4]), ke_port));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let client =
        authtime_ntske::KeClient::new(args.ca.as_deref()).map_err(|e| anyhow!("--ca: {e}"))?;

    let mut report = KeReport::default();
    let mut jar = match &args.cookie_store {
        Some(path) => load_jar(path, &ke_id)?,
        None => None,
    };
    report.from_store = jar.is_some();
    let mut results: Vec<Result<Sample, Failure>> = Vec::new();
    let mut target: Option<SocketAddr> = None;
    for i in 0..args.count {
        if i > 0 {
            std::thread::sleep(interval);
        }
        let mut retried_after_nak = false;
        let result = loop {
            if jar.as_ref().is_none_or(|j| j.cookies.is_empty()) {
                match key_exchange(&runtime, &client, &ke_host, ke_port, timeout, &mut report) {
                    Ok(fresh) => jar = Some(fresh),
                    Err(failure) => break Err(failure),
                }
            }
            let Some(current) = jar.as_mut() else {
                break Err(Failure::NoAnswer("no NTS session".into()));
            };
            let addr = match resolve_ntp(current) {
                Ok(addr) => addr,
                Err(e) => break Err(Failure::NoAnswer(e.to_string())),
            };
            target = Some(addr);
            match exchange(current, addr, timeout) {
                Err(ExchangeError::Nak) if !retried_after_nak => {
                    // RFC 8915 section 5.7: the cookies are useless; redo NTS-KE.
                    retried_after_nak = true;
                    jar = None;
                }
                Err(ExchangeError::Nak) => {
                    break Err(Failure::Authentication(
                        "the server answered with an NTS NAK again after a fresh NTS-KE".into(),
                    ));
                }
                Err(ExchangeError::Failed(f)) => break Err(f),
                Ok(sample) => break Ok(sample),
            }
        };
        let shown = target.unwrap_or(ke_addr);
        if !args.json {
            print_line(streams, shown, &result)?;
        }
        results.push(result);
    }
    if let (Some(path), Some(jar)) = (&args.cookie_store, &jar) {
        save_jar(path, jar)?;
    }
    let shown = target.unwrap_or(ke_addr);
    let nts = json!({
        "ke_server": ke_id,
        "ke_exchanges": report.exchanges,
        "ke_ms": report.last_ms,
        "session_from_cookie_store": report.from_store,
        "aead": jar.as_ref().and_then(|j| authtime_ntske::aead::name(j.aead_id)),
        "ntp_server": jar.as_ref().map(|j| format!("{}:{}", j.ntp_server, j.ntp_port)),
        "cookies_left": jar.as_ref().map_or(0, |j| j.cookies.len()),
    });
    if args.json {
        print_json(streams, &args.server, shown, &results, Some(("nts", nts)))?;
    } else {
        writeln!(
            streams.stderr,
            "NTS: {} key exchange(s){}{}, {} cookie(s) left",
            report.exchanges,
            report
                .last_ms
                .map(|ms| format!(" (last {ms:.1} ms)"))
                .unwrap_or_default(),
            if report.from_store {
                ", session taken from the cookie store"
            } else {
                ""
            },
            jar.as_ref().map_or(0, |j| j.cookies.len())
        )?;
    }
    Ok(verdict(shown, &results))
}

/// One NTS-KE and one protected exchange with the NTP server it names: the
/// authenticated sample, or why there is none. For commands that check their
/// time against an NTS server (`authtime broadcast listen --nts-check`).
///
/// # Errors
/// A message saying what failed (resolution, NTS-KE, the exchange).
pub fn nts_sample(
    server: &str,
    ca: Option<&std::path::Path>,
    timeout: Duration,
) -> Result<(Sample, SocketAddr), String> {
    let (host, port) = host_and_port(server).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let client = authtime_ntske::KeClient::new(ca).map_err(|e| e.to_string())?;
    let mut report = KeReport::default();
    let mut jar = key_exchange(&runtime, &client, &host, port, timeout, &mut report)
        .map_err(|f| f.reason().to_owned())?;
    let addr = resolve_ntp(&jar).map_err(|e| e.to_string())?;
    match exchange(&mut jar, addr, timeout) {
        Ok(sample) => Ok((sample, addr)),
        Err(ExchangeError::Nak) => Err("the NTP server answered with an NTS NAK".into()),
        Err(ExchangeError::Failed(f)) => Err(f.reason().to_owned()),
    }
}

/// One NTS-KE: a fresh jar, or the failure (authentication: TLS or the
/// server's NTS-KE error record; no answer: connection, timeout).
fn key_exchange(
    runtime: &tokio::runtime::Runtime,
    client: &authtime_ntske::KeClient,
    host: &str,
    port: u16,
    timeout: Duration,
    report: &mut KeReport,
) -> Result<CookieJar, Failure> {
    use authtime_ntske::KeClientError as E;
    report.exchanges += 1;
    let outcome = runtime
        .block_on(client.fetch(host, port, timeout))
        .map_err(|e| match e {
            E::Handshake(_) | E::NoAlpn | E::Response(_) => {
                Failure::Authentication(format!("NTS-KE with {host}:{port}: {e}"))
            }
            other => Failure::NoAnswer(format!("NTS-KE with {host}:{port}: {other}")),
        })?;
    report.last_ms = Some(outcome.elapsed.as_secs_f64() * 1e3);
    if outcome.cookies.is_empty() {
        return Err(Failure::Authentication(format!(
            "NTS-KE with {host}:{port}: the server sent no cookie"
        )));
    }
    Ok(CookieJar {
        ke_server: format!("{host}:{port}"),
        aead_id: outcome.aead_id,
        c2s: outcome.keys.c2s.to_vec(),
        s2c: outcome.keys.s2c.to_vec(),
        ntp_server: outcome.ntp_server,
        ntp_port: outcome.ntp_port,
        cookies: outcome.cookies,
    })
}

fn resolve_ntp(jar: &CookieJar) -> anyhow::Result<SocketAddr> {
    (jar.ntp_server.as_str(), jar.ntp_port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve the NTP server {}", jar.ntp_server))?
        .next()
        .ok_or_else(|| anyhow!("the NTP server {} has no address", jar.ntp_server))
}

enum ExchangeError {
    /// An NTS NAK (authenticated by its unique identifier).
    Nak,
    Failed(Failure),
}

/// One protected request and its reply. Replies that fail any check are
/// ignored while the timeout runs (anyone can send them).
fn exchange(
    jar: &mut CookieJar,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<Sample, ExchangeError> {
    let failed = |f: Failure| ExchangeError::Failed(f);
    let algorithm = AeadAlgorithm::from_id(jar.aead_id).ok_or_else(|| {
        failed(Failure::Authentication(format!(
            "unsupported AEAD {}",
            jar.aead_id
        )))
    })?;
    let keys = SessionKeys::new(algorithm, &jar.c2s, &jar.s2c)
        .map_err(|e| failed(Failure::Authentication(format!("session keys: {e}"))))?;
    let Some(cookie) = jar.cookies.pop() else {
        return Err(failed(Failure::NoAnswer("no cookie left".into())));
    };
    let placeholders = WANTED_COOKIES.saturating_sub(jar.cookies.len() + 1).min(7);

    let mut wire_ts = [0u8; 8];
    getrandom::fill(&mut wire_ts).map_err(|e| failed(Failure::NoAnswer(e.to_string())))?;
    let transmit = NtpTimestamp::from_bits(u64::from_be_bytes(wire_ts));
    // The plain request's header: version 4, mode 3, our transmit timestamp.
    let mut plain = [0u8; 128];
    let (len, mut pending) = build_request(&ClientConfig::default(), transmit, None, &mut plain)
        .map_err(|e| failed(Failure::NoAnswer(e.to_string())))?;
    let header = Header::decode(&mut Reader::new(&plain[..len]))
        .map_err(|e| failed(Failure::NoAnswer(e.to_string())))?;
    let mut rng = |buf: &mut [u8]| {
        if getrandom::fill(buf).is_err() {
            buf.fill(0);
        }
    };
    let mut request = [0u8; 1500];
    let nts_pending = authtime_nts::build_request(
        &header,
        &keys,
        &cookie,
        placeholders,
        &mut rng,
        &mut request,
    )
    .map_err(|e| failed(Failure::NoAnswer(format!("cannot build the request: {e}"))))?;

    let local: SocketAddr = match addr {
        SocketAddr::V4(_) => (IpAddr::from([0u8; 4]), 0).into(),
        SocketAddr::V6(_) => (IpAddr::from([0u16; 8]), 0).into(),
    };
    let socket = UdpSocket::bind(local)
        .and_then(|s| s.connect(addr).map(|()| s))
        .map_err(|e| failed(Failure::NoAnswer(format!("cannot reach {addr}: {e}"))))?;
    pending.set_send_time(clock::now());
    socket
        .send(&request[..nts_pending.len()])
        .map_err(|e| failed(Failure::NoAnswer(format!("cannot send: {e}"))))?;
    let deadline = Instant::now() + timeout;
    let mut reply = [0u8; 2048];
    let mut ignored: Option<String> = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || socket.set_read_timeout(Some(left)).is_err() {
            break;
        }
        let n = match socket.recv(&mut reply) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(failed(Failure::NoAnswer(
                    "connection refused: nothing listens on that port".into(),
                )));
            }
            Err(_) => break,
        };
        let t4 = clock::now();
        match check_response(&reply[..n], &nts_pending, &keys) {
            Ok(ClientOutcome::Time { header, cookies }) => {
                // The reply is authenticated: its fresh cookies are good
                // whatever its header says (an unsynchronized server still
                // hands them out, and a client polling it must not drain
                // its jar).
                jar.cookies.extend(cookies);
                jar.cookies.truncate(WANTED_COOKIES);
                let sample = pending
                    .check_header(
                        &header,
                        t4,
                        AuthStatus::Nts {
                            aead_id: jar.aead_id,
                        },
                    )
                    .map_err(|e| {
                        failed(
                            Failure::unsynchronized(&e)
                                .unwrap_or_else(|| Failure::NoAnswer(e.to_string())),
                        )
                    })?;
                return Ok(sample);
            }
            Ok(ClientOutcome::Nak { .. }) => return Err(ExchangeError::Nak),
            Err(e) => ignored = Some(e.to_string()),
        }
    }
    Err(failed(match ignored {
        Some(reason) => Failure::Authentication(format!(
            "only replies that failed NTS checks arrived (last: {reason})"
        )),
        None => Failure::NoAnswer(format!("no reply within {} s", timeout.as_secs_f64())),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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

    #[test]
    fn a_missing_path_is_not_a_store() {
        assert!(
            load_jar(Path::new("/nonexistent/authtime.cookies"), "x:1")
                .expect("ok")
                .is_none()
        );
    }
}
