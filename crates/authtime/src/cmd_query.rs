//! `authtime query`: one or more client exchanges with an NTP server, plain
//! or authenticated with a symmetric key, and the verdict as an exit code.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs as _, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow};
use authtime_keys::{KeyEntry, KeyType};
use authtime_proto::{
    AuthStatus, ClientConfig, ClientError, ClientReaction, Sample, build_request,
};
use authtime_server::clock;
use authtime_wire::{LeapIndicator, NtpTimestamp};
use serde_json::json;

use crate::{Outcome, Streams, cli::QueryArgs};

const NTP_PORT: u16 = 123;
pub(crate) const MAX_COUNT: u32 = 1000;

/// Why a query gave no sample.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// The reply failed authentication, or the server refuses our key.
    Authentication(String),
    /// No usable reply.
    NoAnswer(String),
    /// The server answered (authenticated as `auth` says) that its clock is
    /// unsynchronized: an answer, but no time to use.
    Unsynchronized {
        /// Why, in words.
        reason: String,
        /// The leap indicator sent.
        leap: LeapIndicator,
        /// The stratum sent.
        stratum: u8,
        /// How the reply was authenticated.
        auth: AuthStatus,
    },
    /// The server answered, but its root distance exceeds RFC 5905's
    /// MAXDIST (1.5 s): unfit, its time is not used.
    Unfit {
        /// Why, in words.
        reason: String,
        /// The root distance computed, in seconds.
        root_distance: f64,
        /// The root delay sent, in seconds.
        root_delay: f64,
        /// The root dispersion sent, in seconds.
        root_dispersion: f64,
        /// How the reply was authenticated.
        auth: AuthStatus,
    },
}

impl Failure {
    pub(crate) fn reason(&self) -> &str {
        match self {
            Self::Authentication(r)
            | Self::NoAnswer(r)
            | Self::Unsynchronized { reason: r, .. }
            | Self::Unfit { reason: r, .. } => r,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Self::Authentication(_) => "authentication_failed",
            Self::NoAnswer(_) => "no_answer",
            Self::Unsynchronized { .. } => "unsynchronized",
            Self::Unfit { .. } => "root_distance_too_large",
        }
    }

    /// The failure for a client error that means "answered, but its time is
    /// not to be used" (unsynchronized, or unfit by root distance), if it is one.
    pub(crate) fn unsynchronized(error: &ClientError) -> Option<Self> {
        match *error {
            ClientError::RootDistanceTooLarge {
                root_distance,
                root_delay,
                root_dispersion,
                auth,
            } => Some(Self::Unfit {
                reason: format!(
                    "server unfit, {}: root distance {:.3} s (root delay {:.3} s / 2 + root \
                     dispersion {:.3} s + this exchange) exceeds RFC 5905's MAXDIST of {} s, \
                     its time is not used",
                    auth_text(auth),
                    root_distance.as_seconds_f64(),
                    root_delay.as_seconds_f64(),
                    root_dispersion.as_seconds_f64(),
                    authtime_proto::MAX_ROOT_DISTANCE
                ),
                root_distance: root_distance.as_seconds_f64(),
                root_delay: root_delay.as_seconds_f64(),
                root_dispersion: root_dispersion.as_seconds_f64(),
                auth,
            }),
            ClientError::Unsynchronized {
                leap,
                stratum,
                auth,
            } => Some(Self::Unsynchronized {
                reason: format!(
                    "server unsynchronized (leap {}, stratum {stratum}), {}: it answered but says its \
                     clock is not to be used",
                    leap.to_bits(),
                    auth_text(auth)
                ),
                leap,
                stratum,
                auth,
            }),
            _ => None,
        }
    }
}

/// Runs `--count` exchanges and prints a line (or a JSON object) per reply.
///
/// # Errors
/// Bad arguments, an unreadable key file, a key id it does not hold, a host
/// that does not resolve, a socket that cannot be opened.
pub fn query(args: &QueryArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    if args.interleaved {
        return crate::cmd_query_interleaved::query_interleaved(args, streams);
    }
    if args.nts {
        return crate::cmd_query_nts::query_nts(args, streams);
    }
    if !(1..=MAX_COUNT).contains(&args.count) {
        return Err(anyhow!("--count {}: must be 1 to {MAX_COUNT}", args.count));
    }
    let timeout = seconds("--timeout", args.timeout, 0.001, 60.0)?;
    let interval = seconds("--interval", args.interval, 0.0, 3600.0)?;
    let target = resolve(&args.server)?;
    let keys = load_keys(args, streams)?;
    let key = pick_key(keys.as_ref(), args.key_id)?;
    let socket = connect_udp(target)?;

    let mut results = Vec::new();
    for i in 0..args.count {
        if i > 0 {
            std::thread::sleep(interval);
        }
        let mut result = exchange(&socket, key, timeout);
        if let (Some(key), Err(Failure::NoAnswer(reason))) = (key, &result)
            && let Some(refused) = refused_key(&socket, key, reason, timeout)
        {
            result = Err(refused);
        }
        if !args.json {
            print_line(streams, target, &result)?;
        }
        results.push(result);
    }
    if args.json {
        print_json(streams, &args.server, target, &results, None)?;
    }
    Ok(verdict(target, &results))
}

/// The key file of `--key-file`, its warnings written to standard error.
pub(crate) fn load_keys(
    args: &QueryArgs,
    streams: &mut Streams<'_>,
) -> anyhow::Result<Option<authtime_keys::KeySet>> {
    let Some(path) = &args.key_file else {
        return Ok(None);
    };
    let (keys, warnings) = authtime_keys::KeySet::load(path, None).map_err(|e| anyhow!(e))?;
    for w in &warnings {
        writeln!(streams.stderr, "authtime: warning: {w}")?;
    }
    Ok(Some(keys))
}

/// Key `id` of `keys`, or an error naming the ids the file holds.
pub(crate) fn pick_key(
    keys: Option<&authtime_keys::KeySet>,
    id: Option<u32>,
) -> anyhow::Result<Option<&KeyEntry>> {
    let (Some(keys), Some(id)) = (keys, id) else {
        return Ok(None);
    };
    let key = keys.get(id).ok_or_else(|| {
        let ids: Vec<String> = keys.iter().map(|k| k.id().to_string()).collect();
        anyhow!(
            "--key-id {id}: not in the key file (it holds {})",
            if ids.is_empty() {
                "no keys".into()
            } else {
                ids.join(", ")
            }
        )
    })?;
    Ok(Some(key))
}

/// A UDP socket on the wildcard address of `target`'s family, connected to it.
pub(crate) fn connect_udp(target: SocketAddr) -> anyhow::Result<UdpSocket> {
    let local: SocketAddr = match target {
        SocketAddr::V4(_) => (IpAddr::from([0u8; 4]), 0).into(),
        SocketAddr::V6(_) => (IpAddr::from([0u16; 8]), 0).into(),
    };
    let socket = UdpSocket::bind(local).context("cannot open a UDP socket")?;
    socket
        .connect(target)
        .with_context(|| format!("cannot reach {target}"))?;
    Ok(socket)
}

/// After a keyed request got no answer (`reason`): one plain request tells
/// a server that refuses our key (the failure returned) from a silent one.
pub(crate) fn refused_key(
    socket: &UdpSocket,
    key: &KeyEntry,
    reason: &str,
    timeout: Duration,
) -> Option<Failure> {
    exchange(socket, None, timeout).ok().map(|_| {
        Failure::Authentication(format!(
            "{reason}, but the server answers unauthenticated requests: it does not \
             accept key {} (unknown key id, other key bytes or type)",
            key.id()
        ))
    })
}

pub(crate) fn seconds(flag: &str, value: f64, min: f64, max: f64) -> anyhow::Result<Duration> {
    if !(min..=max).contains(&value) {
        return Err(anyhow!("{flag} {value}: must be {min} to {max} seconds"));
    }
    Ok(Duration::from_secs_f64(value))
}

/// `HOST`, `HOST:PORT`, a bare IPv6 address or `[IPv6]:PORT`; port 123 by default.
pub(crate) fn resolve(server: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(addr) = server.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = server.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, NTP_PORT));
    }
    let (host, port) = match server.rsplit_once(':') {
        Some((host, port)) => (
            host,
            port.parse()
                .map_err(|_| anyhow!("{server}: `{port}` is not a port number"))?,
        ),
        None => (server, NTP_PORT),
    };
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}"))?
        .next()
        .ok_or_else(|| anyhow!("{host} has no address"))
}

/// One request and its reply: replies that do not answer our request, or
/// fail its MAC, are ignored while the timeout runs (anyone can send them);
/// the last such MAC failure is the verdict if nothing better arrives.
pub(crate) fn exchange(
    socket: &UdpSocket,
    key: Option<&KeyEntry>,
    timeout: Duration,
) -> Result<Sample, Failure> {
    let mut wire_ts = [0u8; 8];
    // A random transmit timestamp hides our clock from the path (the server
    // only echoes it); T1 is kept apart.
    getrandom::fill(&mut wire_ts)
        .map_err(|e| Failure::NoAnswer(format!("no random bytes: {e}")))?;
    let mut request = [0u8; 128];
    let (len, mut pending) = build_request(
        &ClientConfig::default(),
        NtpTimestamp::from_bits(u64::from_be_bytes(wire_ts)),
        key,
        &mut request,
    )
    .map_err(|e| Failure::NoAnswer(e.to_string()))?;
    pending.set_send_time(clock::now());
    if let Err(e) = socket.send(&request[..len]) {
        return Err(Failure::NoAnswer(format!("cannot send: {e}")));
    }
    let deadline = Instant::now() + timeout;
    let mut ignored: Option<ClientError> = None;
    let mut reply = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || socket.set_read_timeout(Some(left)).is_err() {
            break;
        }
        let n = match socket.recv(&mut reply) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(Failure::NoAnswer(
                    "connection refused: nothing listens on that port".into(),
                ));
            }
            Err(_) => break,
        };
        let t4 = clock::now();
        let error = match pending.process_response(&reply[..n], t4) {
            Ok(sample) => return Ok(sample),
            Err(e) => e,
        };
        if let Some(failure) = judge(error, &mut ignored) {
            return Err(failure);
        }
    }
    Err(no_reply(ignored, timeout))
}

/// What a reply the client refused says of the exchange: `None` to keep
/// waiting (a packet to ignore; one that failed authentication is kept in
/// `ignored`, to be named if nothing better comes), or the failure that ends
/// it.
pub(crate) fn judge(error: ClientError, ignored: &mut Option<ClientError>) -> Option<Failure> {
    match error.reaction() {
        ClientReaction::IgnorePacket => {
            if is_auth_error(&error) {
                *ignored = Some(error);
            }
            None
        }
        ClientReaction::AuthenticationFailed => Some(Failure::Authentication(error.to_string())),
        _ => Some(
            Failure::unsynchronized(&error).unwrap_or_else(|| Failure::NoAnswer(error.to_string())),
        ),
    }
}

/// The failure of an exchange that got no usable reply within `timeout`:
/// the authentication failure ignored on the way, if any.
pub(crate) fn no_reply(ignored: Option<ClientError>, timeout: Duration) -> Failure {
    match ignored {
        Some(e) => Failure::Authentication(e.to_string()),
        None => Failure::NoAnswer(format!("no reply within {} s", timeout.as_secs_f64())),
    }
}

pub(crate) fn is_auth_error(e: &ClientError) -> bool {
    matches!(
        e,
        ClientError::BadMac { .. }
            | ClientError::MissingMac
            | ClientError::UnexpectedMac
            | ClientError::WrongKeyId { .. }
    )
}

pub(crate) fn leap_name(leap: LeapIndicator) -> &'static str {
    match leap {
        LeapIndicator::NoWarning => "none",
        LeapIndicator::InsertSecond => "insert-second",
        LeapIndicator::DeleteSecond => "delete-second",
        LeapIndicator::Unsynchronized => "unsynchronized",
    }
}

fn mac_name(key_type: KeyType) -> &'static str {
    match key_type {
        KeyType::Aes128Cmac | KeyType::Aes256Cmac => "CMAC",
        _ => "legacy digest",
    }
}

pub(crate) fn auth_text(auth: AuthStatus) -> String {
    match auth {
        AuthStatus::Unauthenticated => "not authenticated".into(),
        AuthStatus::Nts { aead_id } => format!(
            "authenticated: NTS ({})",
            authtime_ntske::aead::name(aead_id).unwrap_or("unknown AEAD")
        ),
        AuthStatus::SymmetricKey { key_id, key_type } => {
            format!(
                "authenticated: key {key_id} {key_type} ({})",
                mac_name(key_type)
            )
        }
    }
}

fn auth_kind(auth: AuthStatus) -> &'static str {
    match auth {
        AuthStatus::Unauthenticated => "none",
        AuthStatus::SymmetricKey { .. } => "symmetric-key",
        AuthStatus::Nts { .. } => "nts",
    }
}

pub(crate) fn print_line(
    streams: &mut Streams<'_>,
    target: SocketAddr,
    result: &Result<Sample, Failure>,
) -> anyhow::Result<()> {
    match result {
        Ok(s) => writeln!(
            streams.stdout,
            "{target}: offset {:+.6} s, delay {:.6} s, stratum {}, reference {}, leap {}, {}",
            s.offset,
            s.delay,
            s.stratum,
            s.reference_id.at_stratum(s.stratum),
            leap_name(s.leap),
            auth_text(s.auth)
        )?,
        Err(f) => writeln!(streams.stdout, "{target}: {}", f.reason())?,
    }
    Ok(())
}

pub(crate) fn print_json(
    streams: &mut Streams<'_>,
    server: &str,
    target: SocketAddr,
    results: &[Result<Sample, Failure>],
    extra: Option<(&str, serde_json::Value)>,
) -> anyhow::Result<()> {
    let replies: Vec<_> = results.iter().map(reply_json).collect();
    write_json(
        streams,
        server,
        target,
        replies,
        &verdict(target, results),
        extra.into_iter(),
    )
}

/// The JSON object of one query's result.
pub(crate) fn reply_json(result: &Result<Sample, Failure>) -> serde_json::Value {
    match result {
        Ok(s) => {
            let (key_id, key_type) = match s.auth {
                AuthStatus::Unauthenticated | AuthStatus::Nts { .. } => (None, None),
                AuthStatus::SymmetricKey { key_id, key_type } => {
                    (Some(key_id), Some(key_type.chrony_name()))
                }
            };
            json!({
                "ok": true,
                "offset": s.offset,
                "delay": s.delay,
                "dispersion": s.dispersion,
                "stratum": s.stratum,
                "reference_id": s.reference_id.at_stratum(s.stratum).to_string(),
                "leap": leap_name(s.leap),
                "version": s.version,
                "root_delay": s.root_delay,
                "root_dispersion": s.root_dispersion,
                "root_distance": s.root_distance,
                "authenticated": s.auth != AuthStatus::Unauthenticated,
                "auth": auth_kind(s.auth),
                "key_id": key_id,
                "key_type": key_type,
            })
        }
        Err(Failure::Unsynchronized {
            reason,
            leap,
            stratum,
            auth,
        }) => json!({
            "ok": false,
            "answered": true,
            "error": "unsynchronized",
            "reason": reason,
            "stratum": stratum,
            "leap": leap_name(*leap),
            "authenticated": *auth != AuthStatus::Unauthenticated,
            "auth": auth_kind(*auth),
        }),
        Err(Failure::Unfit {
            reason,
            root_distance,
            root_delay,
            root_dispersion,
            auth,
        }) => json!({
            "ok": false,
            "answered": true,
            "error": "root_distance_too_large",
            "reason": reason,
            "root_distance": root_distance,
            "max_root_distance": authtime_proto::MAX_ROOT_DISTANCE,
            "root_delay": root_delay,
            "root_dispersion": root_dispersion,
            "authenticated": *auth != AuthStatus::Unauthenticated,
            "auth": auth_kind(*auth),
        }),
        Err(f) => {
            json!({ "ok": false, "answered": false, "error": f.kind(), "reason": f.reason() })
        }
    }
}

/// Prints the JSON object of a query: server, address, the replies, the
/// exit code of `outcome`, and `extra` members.
pub(crate) fn write_json<'a>(
    streams: &mut Streams<'_>,
    server: &str,
    target: SocketAddr,
    replies: Vec<serde_json::Value>,
    outcome: &Outcome,
    extra: impl Iterator<Item = (&'a str, serde_json::Value)>,
) -> anyhow::Result<()> {
    let mut out = json!({
        "server": server,
        "address": target.to_string(),
        "replies": replies,
        "exit_code": outcome.exit_code(),
    });
    if let Some(map) = out.as_object_mut() {
        for (name, value) in extra {
            map.insert(name.to_owned(), value);
        }
    }
    writeln!(streams.stdout, "{}", serde_json::to_string_pretty(&out)?)?;
    Ok(())
}

/// Exit 1 if any query failed authentication, else 3 if any got no usable
/// reply, else 0; the reason is the first such failure's.
pub(crate) fn verdict(target: SocketAddr, results: &[Result<Sample, Failure>]) -> Outcome {
    let failures = || results.iter().filter_map(|r| r.as_ref().err());
    let count = results.len();
    let summary = |f: &Failure| {
        let failed = failures().filter(|g| g.kind() == f.kind()).count();
        if count == 1 {
            format!("{target}: {}", f.reason())
        } else {
            format!(
                "{target}: {failed} of {count} queries failed: {}",
                f.reason()
            )
        }
    };
    if let Some(f) = failures().find(|f| matches!(f, Failure::Authentication(_))) {
        return Outcome::Rejected(summary(f));
    }
    if let Some(f) = failures().next() {
        return Outcome::NoAnswer(summary(f));
    }
    Outcome::Success
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_resolve_with_the_default_port() {
        let at = |s: &str| resolve(s).expect(s);
        assert_eq!(at("127.0.0.1"), "127.0.0.1:123".parse().expect("addr"));
        assert_eq!(
            at("127.0.0.1:11123"),
            "127.0.0.1:11123".parse().expect("addr")
        );
        assert_eq!(at("::1"), "[::1]:123".parse().expect("addr"));
        assert_eq!(at("[::1]"), "[::1]:123".parse().expect("addr"));
        assert_eq!(at("[::1]:5"), "[::1]:5".parse().expect("addr"));
        assert_eq!(at("localhost:7").port(), 7);
        assert!(resolve("localhost:x").is_err());
    }

    #[test]
    fn authentication_failures_outrank_silence() {
        let target: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        let silent = Err(Failure::NoAnswer("no reply".into()));
        let refused = Err(Failure::Authentication("bad MAC".into()));
        assert_eq!(verdict(target, &[]), Outcome::Success);
        assert_eq!(
            verdict(target, std::slice::from_ref(&silent)),
            Outcome::NoAnswer("127.0.0.1:1: no reply".into())
        );
        assert_eq!(
            verdict(target, &[silent, refused]),
            Outcome::Rejected("127.0.0.1:1: 1 of 2 queries failed: bad MAC".into())
        );
    }
}
