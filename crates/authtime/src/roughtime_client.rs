//! Asking Roughtime servers over UDP, one after the other with chained
//! nonces: the I/O half of `authtime roughtime query` and of `authtime query
//! --nts --roughtime-servers`. Requests, verification and chaining are
//! `authtime-roughtime`'s; this module sends, waits (monotonic deadlines,
//! no wall clock) and collects what each server said.

use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use authtime_roughtime::chain::Pending;
use authtime_roughtime::ecosystem::{Server, parse_ecosystem};
use authtime_roughtime::{Chain, Version};

/// One server to ask.
pub(crate) struct Target {
    pub(crate) name: String,
    /// Versions to offer; empty for entries this client cannot speak
    /// (Google-Roughtime), which are reported as skipped.
    pub(crate) versions: Vec<Version>,
    pub(crate) key: [u8; 32],
    pub(crate) addresses: Vec<String>,
}

impl From<Server> for Target {
    fn from(s: Server) -> Self {
        Target {
            name: s.name,
            versions: s.versions,
            key: s.public_key,
            addresses: s.addresses,
        }
    }
}

/// A verified answer: version, midpoint, radius.
pub(crate) type Said = (Version, u64, u32);

/// What one server said.
pub(crate) struct Answer {
    pub(crate) name: String,
    pub(crate) address: Option<SocketAddr>,
    pub(crate) result: Result<Said, String>,
}

/// The servers of an ecosystem JSON file.
pub(crate) fn load_server_list(path: &Path) -> anyhow::Result<Vec<Target>> {
    let json = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let list = parse_ecosystem(&json).with_context(|| path.display().to_string())?;
    Ok(list.into_iter().map(Target::from).collect())
}

/// Asks every target in order, each request's nonce chained from the last
/// verified answer: the chain of verified answers, and one [`Answer`] per
/// target (link k of the chain is the k-th answer that is `Ok`).
///
/// # Errors
/// No random bytes from the system, or a request that cannot be built.
pub(crate) fn ask_in_chain(
    targets: &[Target],
    timeout: Duration,
    retries: u32,
) -> anyhow::Result<(Chain, Vec<Answer>)> {
    let mut chain = Chain::new();
    let mut answers = Vec::with_capacity(targets.len());
    for t in targets {
        if t.versions.is_empty() {
            answers.push(Answer {
                name: t.name.clone(),
                address: None,
                result: Err("skipped: Google-Roughtime (pre-IETF) is not spoken".into()),
            });
            continue;
        }
        let mut rand = [0u8; 32];
        getrandom::fill(&mut rand).map_err(|e| anyhow!("no random bytes from the system: {e}"))?;
        let pending = chain.request(&t.versions, &t.key, rand)?;
        let (address, result) = match ask(t, &pending, &mut chain, timeout, retries) {
            Ok((addr, link)) => (Some(addr), Ok(link)),
            Err((addr, why)) => (addr, Err(why)),
        };
        answers.push(Answer {
            name: t.name.clone(),
            address,
            result,
        });
    }
    Ok((chain, answers))
}

/// Sends `pending` to the target's first address that resolves, resending
/// up to `retries` times, and keeps the first answer that verifies.
fn ask(
    t: &Target,
    pending: &Pending,
    chain: &mut Chain,
    timeout: Duration,
    retries: u32,
) -> Result<(SocketAddr, Said), (Option<SocketAddr>, String)> {
    let addr = t
        .addresses
        .iter()
        .find_map(|a| a.to_socket_addrs().ok()?.next())
        .ok_or((None, "no address resolves".to_string()))?;
    let fail = |why: String| (Some(addr), why);
    let bind: SocketAddr = if addr.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(bind).map_err(|e| fail(format!("socket: {e}")))?;
    socket.connect(addr).map_err(|e| fail(format!("{e}")))?;
    let mut last_error = None;
    let mut buf = vec![0u8; 4096];
    for _ in 0..=retries {
        socket
            .send(&pending.request)
            .map_err(|e| fail(format!("send: {e}")))?;
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if left.is_zero() || socket.set_read_timeout(Some(left)).is_err() {
                break;
            }
            let Ok(n) = socket.recv(&mut buf) else { break };
            // Something that does not verify may be forged: keep waiting.
            match chain.accept(pending, &buf[..n]) {
                Ok(link) => {
                    let v = link.verified;
                    return Ok((addr, (v.version, v.midpoint, v.radius)));
                }
                Err(e) => last_error = Some(e),
            }
        }
    }
    Err(fail(match last_error {
        Some(e) => format!("no valid answer ({e})"),
        None if retries == 0 => "no answer".to_string(),
        None => format!("no answer after {} tries", retries + 1),
    }))
}

/// The name `authtime` prints for a wire version.
pub(crate) fn version_name(v: Version) -> &'static str {
    match v {
        Version::Rfc1 => "1",
        Version::Draft12 => "draft-0x8000000c",
    }
}

/// Each server's answer (version, midpoint, radius) or failure, as `--json`
/// prints it in `authtime roughtime query` and `authtime query --nts`.
pub(crate) fn servers_json(answers: &[Answer]) -> Vec<serde_json::Value> {
    use crate::cmd_roughtime_report::utc;
    answers
        .iter()
        .map(|a| {
            let address = a.address.map(|a| a.to_string());
            match &a.result {
                Ok((v, midpoint, radius)) => serde_json::json!({
                    "name": a.name, "address": address, "version": version_name(*v),
                    "midpoint": midpoint, "midpoint_utc": utc(*midpoint), "radius": radius,
                }),
                Err(why) => serde_json::json!({"name": a.name, "address": address, "error": why}),
            }
        })
        .collect()
}
