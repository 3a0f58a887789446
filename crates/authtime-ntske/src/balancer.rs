//! The NTS-KE load balancer (KELB) of draft-ietf-ntp-nts-keyexchange-pool-00: the
//! client's NTS-KE ends here (on the [`crate::server::KeServer`] listener, with its
//! limits, timeouts and certificate reload), and a pool member makes the cookies.
//!
//! Per request: the client's records are checked ([`parse_client_request`]), a
//! backend is chosen ([`BalancerCore::select`]), a TLS connection to it is opened;
//! only then are C2S and S2C exported from the client's session for the chosen AEAD
//! and sent in a Fixed Key Request with the backend's token. A connection or TLS
//! failure marks the backend down and another is tried (the keys have not left); a
//! failure after the request was sent is answered with Internal Server Error and no
//! other backend gets those keys (each client's keys go to at most one time source).
//! The client gets Next Protocol, AEAD, the backend's cookies, Server (the backend's
//! own record, else the backend's configured name), Port (the backend's, else the
//! configured one, else none) and End of Message.
//!
//! Health: a Support query to every backend every check interval (jittered by
//! +-25%), which marks it up or down and records its AEADs. One connection per
//! request and per check: Keep Alive reuse is not implemented.
//!
//! Credentials: a backend's token and TLS client configuration can be replaced while
//! serving ([`Balancer::replace_credentials`], for a reload of their files). Each
//! request and each health check takes the backend's current [`BackendConfig`] once
//! (an `Arc` behind an `RwLock`), so it uses the old or the new token and trust
//! anchors throughout, never a mix; the old token is zeroized when the last user
//! drops it.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use crate::aead;
use crate::balancer_core::{BalancerCore, Selection, parse_client_request};
use crate::key_export::{KeyExporter, export_session_keys};
use crate::ntp_server_name::{ServerNameError, validate_ntp_server_name};
use crate::pool_client::{FixedKeyAnswer, PoolToken, fixed_key_request, parse_fixed_key_response};
use crate::pool_client_io::{BackendEndpoint, BackendIoError, query_support};
use crate::record::{NEXT_PROTOCOL_NTPV4, Record, encode_records, peer_record_type};
use crate::server_core::{KeServerCore, Negotiated, RequestError, ServerResponse};

/// Most backends tried for one request (each failed connect costs up to the timeout).
pub const MAX_ATTEMPTS: usize = 3;

/// One pool member.
#[derive(Clone, Debug)]
pub struct BackendConfig {
    /// NTP server name given to clients when the backend sends no Server record; also
    /// what NTP Server Deny records match (ASCII case ignored).
    pub name: String,
    /// Its NTS-KE address and TLS settings.
    pub endpoint: BackendEndpoint,
    /// The balancer's token at this backend.
    pub token: PoolToken,
    /// Share of the clients (smooth weighted round-robin), at least 1.
    pub weight: u32,
    /// NTP port given to clients when the backend sends no Port record.
    pub ntp_port: Option<u16>,
}

/// The balancer's settings.
#[derive(Clone, Debug)]
pub struct BalancerConfig {
    /// The backends, at least one, names unique.
    pub backends: Vec<BackendConfig>,
    /// Time between health checks of a backend (jittered by +-25%).
    pub check_interval: Duration,
    /// Limit on each step with a backend (connect and TLS; request and answer).
    pub timeout: Duration,
    /// AEADs clients may get (the server's AEAD setting); empty: any a backend
    /// supports.
    pub aead_algorithms: Vec<u16>,
}

/// A balancer configuration that cannot work.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BalancerConfigError {
    /// No backend.
    NoBackends,
    /// Two backends with this name.
    DuplicateName(String),
    /// A name that cannot go in a Server record.
    BadName(String, ServerNameError),
    /// A zero check interval or timeout.
    ZeroDuration,
}

impl fmt::Display for BalancerConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoBackends => f.write_str("no backend"),
            Self::DuplicateName(n) => write!(f, "backend name {n:?} is used twice"),
            Self::BadName(n, e) => write!(f, "backend name {n:?}: {e}"),
            Self::ZeroDuration => f.write_str("check interval and timeout must not be zero"),
        }
    }
}

impl std::error::Error for BalancerConfigError {}

#[derive(Debug, Default)]
struct BackendCounters {
    ok: AtomicU64,
    backend_error: AtomicU64,
    connect_failed: AtomicU64,
    check_failures: AtomicU64,
}

/// One backend's counters and state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendMetricsSnapshot {
    /// Its name.
    pub name: String,
    /// Up after its last check or connection.
    pub up: bool,
    /// Requests answered with its cookies.
    pub ok: u64,
    /// Requests that failed after the keys were sent to it.
    pub backend_error: u64,
    /// Connections (or TLS handshakes) to it that failed; another backend was tried.
    pub connect_failed: u64,
    /// Health checks that failed.
    pub check_failures: u64,
}

/// The balancer's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalancerMetricsSnapshot {
    /// Per backend, in configuration order.
    pub backends: Vec<BackendMetricsSnapshot>,
    /// Requests answered with Internal Server Error because no backend was available.
    pub no_backend: u64,
    /// Reloads of a backend's token or CA file that failed (the backend kept its
    /// previous ones), as counted by [`Balancer::record_reload_failure`].
    pub reload_failures: u64,
}

/// [`Balancer::replace_credentials`] named no configured backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownBackend(pub String);

impl fmt::Display for UnknownBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no backend is named {:?}", self.0)
    }
}

impl std::error::Error for UnknownBackend {}

/// The load balancer: backends, their state and counters.
pub struct Balancer {
    core: Mutex<BalancerCore>,
    /// Each backend's current settings; replaced whole, never modified in place.
    backends: Vec<RwLock<Arc<BackendConfig>>>,
    counters: Vec<BackendCounters>,
    no_backend: AtomicU64,
    reload_failures: AtomicU64,
    check_interval: Duration,
    timeout: Duration,
}

impl fmt::Debug for Balancer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backends: Vec<_> = (0..self.backends.len())
            .filter_map(|i| self.backend(i))
            .collect();
        f.debug_struct("Balancer")
            .field("backends", &backends)
            .finish_non_exhaustive()
    }
}

impl Balancer {
    /// A balancer after checking `config`; every backend is down until checked.
    pub fn new(config: BalancerConfig) -> Result<Self, BalancerConfigError> {
        if config.backends.is_empty() {
            return Err(BalancerConfigError::NoBackends);
        }
        if config.check_interval.is_zero() || config.timeout.is_zero() {
            return Err(BalancerConfigError::ZeroDuration);
        }
        for (i, b) in config.backends.iter().enumerate() {
            validate_ntp_server_name(&b.name)
                .map_err(|e| BalancerConfigError::BadName(b.name.clone(), e))?;
            if config.backends[..i]
                .iter()
                .any(|o| o.name.eq_ignore_ascii_case(&b.name))
            {
                return Err(BalancerConfigError::DuplicateName(b.name.clone()));
            }
        }
        Ok(Self {
            core: Mutex::new(
                BalancerCore::new(config.backends.iter().map(|b| (b.name.clone(), b.weight)))
                    .with_allowed_aeads(config.aead_algorithms.clone()),
            ),
            counters: config
                .backends
                .iter()
                .map(|_| BackendCounters::default())
                .collect(),
            backends: config
                .backends
                .into_iter()
                .map(|b| RwLock::new(Arc::new(b)))
                .collect(),
            no_backend: AtomicU64::new(0),
            reload_failures: AtomicU64::new(0),
            check_interval: config.check_interval,
            timeout: config.timeout,
        })
    }

    fn core(&self) -> MutexGuard<'_, BalancerCore> {
        match self.core.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Backend `index`'s current settings (a snapshot: a later replacement does not
    /// change it).
    fn backend(&self, index: usize) -> Option<Arc<BackendConfig>> {
        let slot = self.backends.get(index)?;
        let guard = match slot.read() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        Some(Arc::clone(&guard))
    }

    /// Replaces the token and the TLS client configuration (trust anchors) of the
    /// backend named `name` (ASCII case ignored), together: requests and health checks
    /// that already started finish with the old ones, later ones use the new ones.
    /// The old token is zeroized once no request holds it.
    ///
    /// # Errors
    /// No backend has that name; nothing changes.
    pub fn replace_credentials(
        &self,
        name: &str,
        token: PoolToken,
        tls: Arc<rustls::ClientConfig>,
    ) -> Result<(), UnknownBackend> {
        let slot = self
            .backends
            .iter()
            .find(|slot| {
                let guard = match slot.read() {
                    Ok(guard) => guard,
                    Err(poisoned) => poisoned.into_inner(),
                };
                guard.name.eq_ignore_ascii_case(name)
            })
            .ok_or_else(|| UnknownBackend(name.to_owned()))?;
        let mut guard = match slot.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut next = BackendConfig::clone(&guard);
        next.token = token;
        next.endpoint.tls = tls;
        let old = std::mem::replace(&mut *guard, Arc::new(next));
        drop(guard);
        // Outside the lock: if this was the last holder, the token is zeroized here.
        drop(old);
        Ok(())
    }

    /// Counts a reload of a backend's files that failed (reported in
    /// [`BalancerMetricsSnapshot::reload_failures`]).
    pub fn record_reload_failure(&self) {
        self.reload_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters and each backend's state.
    pub fn metrics(&self) -> BalancerMetricsSnapshot {
        let core = self.core();
        BalancerMetricsSnapshot {
            backends: core
                .backends()
                .iter()
                .zip(&self.counters)
                .map(|(b, c)| BackendMetricsSnapshot {
                    name: b.name.clone(),
                    up: b.up,
                    ok: c.ok.load(Ordering::Relaxed),
                    backend_error: c.backend_error.load(Ordering::Relaxed),
                    connect_failed: c.connect_failed.load(Ordering::Relaxed),
                    check_failures: c.check_failures.load(Ordering::Relaxed),
                })
                .collect(),
            no_backend: self.no_backend.load(Ordering::Relaxed),
            reload_failures: self.reload_failures.load(Ordering::Relaxed),
        }
    }

    /// Answers one client request whose records were read; `exporter` is the client's
    /// TLS session.
    pub async fn respond(
        &self,
        records: &[Record],
        exporter: &(dyn KeyExporter + Sync),
    ) -> ServerResponse {
        let request = match parse_client_request(records) {
            Ok(r) => r,
            Err(e) => return KeServerCore::error_response(e),
        };
        let mut tried = Vec::new();
        loop {
            let selection = if tried.len() >= MAX_ATTEMPTS {
                Selection::NoBackend
            } else {
                self.core().select(&request, &tried)
            };
            let (index, aead_id, confirm) = match selection {
                Selection::NoCommonProtocol => {
                    return answer(
                        vec![Record::NextProtocol(vec![]), Record::EndOfMessage],
                        Negotiated::NoCommonProtocol,
                    );
                }
                Selection::NoCommonAead => {
                    return answer(
                        vec![
                            Record::NextProtocol(vec![NEXT_PROTOCOL_NTPV4]),
                            Record::AeadAlgorithm(vec![]),
                            Record::EndOfMessage,
                        ],
                        Negotiated::NoCommonAead,
                    );
                }
                Selection::NoBackend => {
                    self.no_backend.fetch_add(1, Ordering::Relaxed);
                    return KeServerCore::error_response(RequestError::NoBackend);
                }
                Selection::Backend {
                    index,
                    aead_id,
                    confirm_compliant,
                } => (index, aead_id, confirm_compliant),
            };
            tried.push(index);
            // One snapshot for the whole request: the token and trust anchors used
            // stay consistent even if the backend's credentials are replaced meanwhile.
            let (Some(backend), Some(counters)) = (self.backend(index), self.counters.get(index))
            else {
                continue;
            };
            let mut connection = match backend.endpoint.connect(self.timeout).await {
                Ok(c) => c,
                Err(e) => {
                    counters.connect_failed.fetch_add(1, Ordering::Relaxed);
                    self.core().mark_down(index);
                    tracing::warn!(backend = %backend.name, "NTS-KE backend connect failed, marked down: {e}");
                    continue;
                }
            };
            // From here the keys leave: whatever happens, no other backend gets them.
            // Counted as a backend error unless it succeeds, also when the session's
            // deadline drops this future.
            let mut failed = CountOnDrop(Some(&counters.backend_error));
            let result = self
                .exchange(&backend, &mut connection, aead_id, exporter)
                .await;
            tokio::spawn(connection.close());
            return match result {
                Ok(answer) => {
                    failed.0 = None;
                    counters.ok.fetch_add(1, Ordering::Relaxed);
                    client_answer(&backend, aead_id, confirm, answer)
                }
                Err(e) => {
                    tracing::warn!(backend = %backend.name, "NTS-KE backend failed after the keys were sent: {e}");
                    KeServerCore::error_response(match e {
                        ExchangeError::Export(e) => RequestError::KeyExport(e),
                        other => RequestError::Backend(other.to_string()),
                    })
                }
            };
        }
    }

    async fn exchange(
        &self,
        backend: &BackendConfig,
        connection: &mut crate::pool_client_io::BackendConnection,
        aead_id: u16,
        exporter: &(dyn KeyExporter + Sync),
    ) -> Result<FixedKeyAnswer, ExchangeError> {
        let key_len = aead::key_len(aead_id).ok_or(ExchangeError::Encode)?;
        let request = {
            let keys =
                export_session_keys(exporter, aead_id, key_len).map_err(ExchangeError::Export)?;
            fixed_key_request(&backend.token, aead_id, &keys, false)
                .map_err(|_| ExchangeError::Encode)?
        };
        let records = connection
            .exchange(&request, self.timeout)
            .await
            .map_err(ExchangeError::Io)?;
        drop(request);
        parse_fixed_key_response(&records, aead_id)
            .map_err(|e| ExchangeError::Io(BackendIoError::Backend(e)))
    }

    /// One health check of every backend (a Support query each, one after the other).
    pub async fn check_all(&self) {
        for index in 0..self.backends.len() {
            let Some(backend) = self.backend(index) else {
                continue;
            };
            let result = query_support(&backend.endpoint, &backend.token, self.timeout).await;
            let was_up = self.core().backends().get(index).is_some_and(|b| b.up);
            match result {
                Ok(support) => {
                    self.core().record_check(index, Some(&support));
                    if !was_up {
                        tracing::info!(backend = %backend.name, aeads = ?support.usable_aeads(), "NTS-KE backend up");
                    }
                }
                Err(e) => {
                    if let Some(c) = self.counters.get(index) {
                        c.check_failures.fetch_add(1, Ordering::Relaxed);
                    }
                    self.core().record_check(index, None);
                    if was_up {
                        tracing::warn!(backend = %backend.name, "NTS-KE backend down: {e}");
                    } else {
                        tracing::debug!(backend = %backend.name, "NTS-KE backend check failed: {e}");
                    }
                }
            }
        }
    }

    /// Checks every backend every check interval (jittered), forever; the first
    /// round comes after one interval: call [`Balancer::check_all`] before serving
    /// (every backend is down until checked).
    pub async fn run_health_checks(self: Arc<Self>) {
        let mut rng = std::collections::hash_map::RandomState::new().build_hasher();
        loop {
            rng.write_u64(0x9e37_79b9_7f4a_7c15);
            tokio::time::sleep(jittered(self.check_interval, rng.finish())).await;
            self.check_all().await;
        }
    }
}

/// Adds one to the counter when dropped, unless disarmed (`.0 = None`).
struct CountOnDrop<'a>(Option<&'a AtomicU64>);

impl Drop for CountOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(counter) = self.0 {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `interval` scaled by a factor in [0.75, 1.25) drawn from `random`.
pub fn jittered(interval: Duration, random: u64) -> Duration {
    // 768..1280 in 1024ths: 0.75 up to 1.25 (excluded).
    let factor = 768 + u128::from(random >> 55);
    let nanos = interval.as_nanos().saturating_mul(factor) / 1024;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

#[derive(Debug)]
enum ExchangeError {
    Export(crate::key_export::ExportError),
    Encode,
    Io(BackendIoError),
}

impl fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Export(e) => write!(f, "{e}"),
            Self::Encode => f.write_str("request not encodable"),
            Self::Io(e) => write!(f, "{e}"),
        }
    }
}

fn answer(records: Vec<Record>, negotiated: Negotiated) -> ServerResponse {
    match encode_records(&records) {
        Ok(bytes) => ServerResponse {
            bytes,
            result: Ok(negotiated),
            keep_alive: false,
            pool: None,
        },
        Err(e) => KeServerCore::error_response(RequestError::Backend(e.to_string())),
    }
}

/// The response to the client built from a backend's answer.
fn client_answer(
    backend: &BackendConfig,
    aead_id: u16,
    confirm_compliant: bool,
    answer_from_backend: FixedKeyAnswer,
) -> ServerResponse {
    let session = answer_from_backend.session;
    let mut out = Vec::with_capacity(session.cookies.len() + 6);
    out.push(Record::NextProtocol(vec![NEXT_PROTOCOL_NTPV4]));
    out.push(Record::AeadAlgorithm(vec![aead_id]));
    if confirm_compliant {
        out.push(Record::Unknown {
            critical: false,
            record_type: peer_record_type::CHRONY_COMPLIANT_128GCM_EXPORT,
            body: Vec::new(),
        });
    }
    out.push(Record::Server(
        session.ntp_server.unwrap_or_else(|| backend.name.clone()),
    ));
    if let Some(port) = session.ntp_port.or(backend.ntp_port) {
        out.push(Record::Port(port));
    }
    let cookies = session.cookies.len();
    out.extend(session.cookies.into_iter().map(Record::NewCookie));
    out.push(Record::EndOfMessage);
    answer(out, Negotiated::Ntpv4 { aead_id, cookies })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_a_quarter() {
        let i = Duration::from_secs(10);
        assert_eq!(jittered(i, 0), Duration::from_millis(7500));
        assert!(jittered(i, u64::MAX) < Duration::from_millis(12_500));
        assert!(jittered(i, u64::MAX) > Duration::from_millis(12_480));
    }

    fn balancer(token: &str) -> Balancer {
        let backend = BackendConfig {
            name: "ntp1.example.net".into(),
            endpoint: BackendEndpoint {
                host: "127.0.0.1".into(),
                port: 4460,
                tls_name: crate::pool_client_io::tls_server_name("ke1.example.net").expect("valid"),
                tls: crate::tls_config::client_config(None).expect("public roots"),
            },
            token: PoolToken::new(token).expect("valid"),
            weight: 1,
            ntp_port: None,
        };
        Balancer::new(BalancerConfig {
            backends: vec![backend],
            check_interval: Duration::from_secs(10),
            timeout: Duration::from_secs(1),
            aead_algorithms: Vec::new(),
        })
        .expect("valid")
    }

    #[test]
    fn credentials_are_replaced_whole_and_in_flight_users_keep_theirs() {
        let b = balancer("old-token");
        let old = PoolToken::new("old-token").expect("valid");
        let new = PoolToken::new("new-token").expect("valid");
        let in_flight = b.backend(0).expect("a backend");
        assert_eq!(in_flight.token, old);
        let tls = crate::tls_config::client_config(None).expect("public roots");
        b.replace_credentials("NTP1.example.net", new.clone(), Arc::clone(&tls))
            .expect("known backend");
        let now = b.backend(0).expect("a backend");
        assert_eq!(now.token, new);
        assert!(Arc::ptr_eq(&now.endpoint.tls, &tls));
        assert_eq!(now.name, "ntp1.example.net");
        // A request that took its snapshot before the swap still has the old token.
        assert_eq!(in_flight.token, old);
        assert!(!Arc::ptr_eq(&in_flight.endpoint.tls, &tls));
    }

    #[test]
    fn a_failed_replacement_keeps_the_old_token_and_is_counted() {
        let b = balancer("old-token");
        let tls = crate::tls_config::client_config(None).expect("public roots");
        let e = b
            .replace_credentials(
                "ntp2.example.net",
                PoolToken::new("new-token").expect("valid"),
                tls,
            )
            .expect_err("unknown backend");
        assert_eq!(e, UnknownBackend("ntp2.example.net".into()));
        let now = b.backend(0).expect("a backend");
        assert_eq!(now.token, PoolToken::new("old-token").expect("valid"));
        assert_eq!(b.metrics().reload_failures, 0);
        b.record_reload_failure();
        assert_eq!(b.metrics().reload_failures, 1);
        let shown = format!("{b:?}");
        assert!(!shown.contains("old-token"), "{shown}");
    }
}
