//! The NTS-KE server driver: TCP + TLS 1.3 (tokio-rustls) around [`KeServerCore`].
//!
//! Per connection: a permit from a semaphore (none left: the connection is closed at
//! once and counted, the fix for CVE-2024-38528), then, when configured, the client's
//! own limits ([`ClientLimiter`]: a handshake bucket and a cap on its open connections;
//! over either, closed at once and counted, before any TLS work), TCP_NODELAY, a handshake timeout and a
//! whole-session timeout (a slow or idle client cannot hold a slot), ALPN `ntske/1`
//! checked, the negotiated key exchange group counted, the request read through a
//! bounded [`MessageReader`], the response written in one buffer and flushed, then
//! close_notify. Certificates are re-read on
//! [`KeServerHandle::reload`] and when the files' modification times change; a failed
//! reload keeps the previous certificate.
//!
//! A pool member (pool token files configured, see [`crate::pool_member`]) may keep a
//! connection open: when the response to an authenticated pool request granted Keep
//! Alive, the response is written without close_notify and the next request is read,
//! waiting at most [`KeServerConfig::keep_alive_idle_timeout`] for it to start and then
//! [`KeServerConfig::session_timeout`] for the rest, up to
//! [`KeServerConfig::max_requests_per_connection`] requests. The connection closes after
//! any response that did not grant Keep Alive (an error, a non-pool request). The token
//! files are re-read with the certificate, on reload and when they change.
//!
//! What answers a request is a [`KeResponder`]: the local core, or a key-exchange load
//! balancer ([`Balancer`]) that gets the cookies from a pool member; the session
//! deadline bounds the wait on the member too, and the balancer's health checks run
//! with the server.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, timeout, timeout_at};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::ALPN_NTSKE;
use crate::balancer::Balancer;
use crate::client_limit::{Admission, ClientLimitConfig, ClientLimiter, ClientTicket};
use crate::message::{MessageError, MessageLimits, MessageReader, Progress};
use crate::metrics::{KeMetrics, KeMetricsSnapshot, SessionOutcome};
use crate::pool_member::{MAX_REQUESTS_PER_CONNECTION, PoolTokens};
use crate::pool_token_file::{PoolTokenFileError, read_pool_token_files, stamps};
use crate::record::Record;
use crate::server_core::{
    CookieIssuer, KeServerCore, Negotiated, RequestError, RespondOptions, ServerConfigError,
    ServerCoreConfig, ServerResponse,
};
use crate::tls_config::{TlsConfigError, negotiated_group, server_config_and_expiry};

/// Time allowed to write an Error record after the session timed out.
const TIMEOUT_REPLY_GRACE: Duration = Duration::from_millis(250);
/// Bytes read from TLS at a time.
const READ_CHUNK: usize = 4096;

/// Settings of the NTS-KE server.
#[derive(Clone, Debug)]
pub struct KeServerConfig {
    /// Addresses to listen on (port 0 picks a free port, see [`KeServer::local_addrs`]).
    pub listen: Vec<SocketAddr>,
    /// PEM file with the certificate chain, leaf first.
    pub certificate_chain_path: PathBuf,
    /// PEM file with the private key.
    pub private_key_path: PathBuf,
    /// Connections served at once; more are closed at once (default 512).
    pub max_connections: usize,
    /// Limits per client (source address or IPv6 prefix), checked before TLS;
    /// `None` (the default) limits only the total.
    pub client_limits: Option<ClientLimitConfig>,
    /// Limit on the TLS handshake (default 1 s).
    pub handshake_timeout: Duration,
    /// Limit on the whole session, handshake included (default 2 s).
    pub session_timeout: Duration,
    /// How often to check the certificate files' modification times; `None` disables
    /// polling (reload then only happens through [`KeServerHandle::reload`]). Default 5 s.
    pub reload_poll_interval: Option<Duration>,
    /// Negotiation settings.
    pub core: ServerCoreConfig,
    /// Files holding the Authentication tokens of the pool load balancers this server
    /// serves as a pool member, one token per file; empty (the default): not a member.
    pub pool_token_files: Vec<PathBuf>,
    /// How long a kept-alive connection may wait for its next request (default 30 s).
    pub keep_alive_idle_timeout: Duration,
    /// Requests one kept-alive connection may carry (default 1000).
    pub max_requests_per_connection: usize,
    /// Told of every TCP connection accepted, with its source and what the
    /// limits made of it, before TLS (client statistics); `None` by default.
    pub connection_observer: Option<ConnectionObserver>,
}

/// What the connection limits made of an accepted TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionVerdict {
    /// Served (TLS and the key exchange follow).
    Accepted,
    /// Closed by a per-client limit (handshake rate, open connections).
    Limited,
    /// Closed by the server's connection cap.
    Refused,
}

/// A callback told of every accepted connection ([`KeServerConfig::connection_observer`]).
#[derive(Clone)]
pub struct ConnectionObserver(pub Arc<dyn Fn(std::net::IpAddr, ConnectionVerdict) + Send + Sync>);

impl std::fmt::Debug for ConnectionObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectionObserver")
    }
}

impl KeServerConfig {
    /// Defaults for everything but the addresses and certificate files.
    pub fn new(
        listen: Vec<SocketAddr>,
        certificate_chain_path: PathBuf,
        private_key_path: PathBuf,
    ) -> Self {
        Self {
            listen,
            certificate_chain_path,
            private_key_path,
            max_connections: 512,
            client_limits: None,
            handshake_timeout: Duration::from_secs(1),
            session_timeout: Duration::from_secs(2),
            reload_poll_interval: Some(Duration::from_secs(5)),
            core: ServerCoreConfig::default(),
            pool_token_files: Vec::new(),
            keep_alive_idle_timeout: Duration::from_secs(30),
            max_requests_per_connection: MAX_REQUESTS_PER_CONNECTION,
            connection_observer: None,
        }
    }
}

/// Why the server could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum KeServerError {
    /// Invalid negotiation settings or a zero limit.
    Config(ServerConfigError),
    /// A zero connection cap or timeout.
    Limits(&'static str),
    /// The certificate or key could not be loaded.
    Tls(TlsConfigError),
    /// A pool token file cannot be used.
    PoolToken(PoolTokenFileError),
    /// A listening socket could not be bound.
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: io::Error,
    },
}

impl fmt::Display for KeServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "{e}"),
            Self::Limits(what) => write!(f, "{what} must not be zero"),
            Self::Tls(e) => write!(f, "{e}"),
            Self::PoolToken(e) => write!(f, "{e}"),
            Self::Bind { addr, source } => write!(f, "bind {addr}: {source}"),
        }
    }
}

impl std::error::Error for KeServerError {}

/// Size and modification time of the two certificate files, to notice replacements.
type FileStamp = Option<[(SystemTime, u64); 2]>;

/// What answers a request once it is read: the local core (cookies made here) or a
/// key-exchange load balancer (cookies made by a pool member).
#[derive(Clone, Debug)]
pub enum KeResponder {
    /// Cookies from this server's [`CookieIssuer`].
    Local(KeServerCore),
    /// Cookies from a backend chosen by the [`Balancer`]; its health checks run
    /// with the server, every check interval (run [`Balancer::check_all`] once
    /// before [`KeServer::run`]: backends are down until checked).
    Balancer(Arc<Balancer>),
}

impl KeResponder {
    /// The response to `records` (End of Message included) from a client whose TLS
    /// session is `connection`. `options` (keep-alive of pool requests) apply to the local core: a balancer
    /// answers ordinary key exchanges only and never keeps a connection open.
    pub async fn respond(
        &self,
        records: &[Record],
        connection: &rustls::ServerConnection,
        options: RespondOptions,
    ) -> ServerResponse {
        match self {
            Self::Local(core) => core.respond_to_records_with(records, connection, options),
            Self::Balancer(balancer) => balancer.respond(records, connection).await,
        }
    }
}

struct Shared {
    responder: KeResponder,
    tls: RwLock<Arc<rustls::ServerConfig>>,
    chain_path: PathBuf,
    key_path: PathBuf,
    stamp: Mutex<FileStamp>,
    metrics: Arc<KeMetrics>,
    permits: Arc<Semaphore>,
    max_connections: usize,
    client_limiter: Option<Mutex<ClientLimiter>>,
    /// Origin of the limiter's monotonic clock.
    epoch: std::time::Instant,
    handshake_timeout: Duration,
    session_timeout: Duration,
    keep_alive_idle_timeout: Duration,
    max_requests_per_connection: usize,
    pool_tokens: PoolTokens,
    pool_token_files: Vec<PathBuf>,
    pool_token_stamp: Mutex<Vec<Option<(SystemTime, u64)>>>,
    shutdown: watch::Sender<bool>,
    observer: Option<ConnectionObserver>,
}

impl Shared {
    fn current_tls(&self) -> Arc<rustls::ServerConfig> {
        match self.tls.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn file_stamp(&self) -> FileStamp {
        let one = |p: &PathBuf| {
            let m = std::fs::metadata(p).ok()?;
            Some((m.modified().ok()?, m.len()))
        };
        Some([one(&self.chain_path)?, one(&self.key_path)?])
    }

    fn reload_certificate(&self) -> Result<(), TlsConfigError> {
        let stamp = self.file_stamp();
        if let Ok(mut s) = self.stamp.lock() {
            *s = stamp;
        }
        match server_config_and_expiry(&self.chain_path, &self.key_path) {
            Ok((config, not_after)) => {
                self.metrics
                    .set_certificate_not_after(not_after.unwrap_or(0));
                match self.tls.write() {
                    Ok(mut guard) => *guard = config,
                    Err(poisoned) => *poisoned.into_inner() = config,
                }
                tracing::info!("NTS-KE certificate reloaded");
                Ok(())
            }
            Err(e) => {
                self.metrics.record_reload_failure();
                tracing::warn!("NTS-KE certificate reload failed, keeping the old one: {e}");
                Err(e)
            }
        }
    }

    /// Re-reads the pool token files (nothing to do when none is configured); on
    /// error the previous tokens stay, and the error (which names the file, never the
    /// token) is logged and counted.
    fn reload_pool_tokens(&self) -> Result<usize, PoolTokenFileError> {
        if self.pool_token_files.is_empty() {
            return Ok(0);
        }
        if let Ok(mut s) = self.pool_token_stamp.lock() {
            *s = stamps(&self.pool_token_files);
        }
        match read_pool_token_files(&self.pool_token_files) {
            Ok(tokens) => {
                let n = tokens.len();
                self.pool_tokens.replace(tokens);
                tracing::info!(tokens = n, "NTS pool tokens reloaded");
                Ok(n)
            }
            Err(e) => {
                self.metrics.record_pool_token_reload_failure();
                tracing::warn!("NTS pool token reload failed, keeping the old tokens: {e}");
                Err(e)
            }
        }
    }

    /// Reloads what changed since the last load attempt: the certificate if either of
    /// its files did, the pool tokens if any of their files did.
    fn reload_if_changed(&self) {
        let now = self.file_stamp();
        let changed = match self.stamp.lock() {
            Ok(s) => *s != now,
            Err(_) => false,
        };
        if changed && now.is_some() {
            // The error is logged and counted inside reload_certificate().
            let _ = self.reload_certificate();
        }
        if !self.pool_token_files.is_empty() {
            let now = stamps(&self.pool_token_files);
            let changed = match self.pool_token_stamp.lock() {
                Ok(s) => *s != now,
                Err(_) => false,
            };
            if changed && now.iter().all(Option::is_some) {
                // Logged and counted inside.
                let _ = self.reload_pool_tokens();
            }
        }
    }
}

/// Control of a running server: reload, metrics, shutdown. Cheap to clone.
#[derive(Clone)]
pub struct KeServerHandle {
    shared: Arc<Shared>,
}

impl fmt::Debug for KeServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeServerHandle").finish_non_exhaustive()
    }
}

impl KeServerHandle {
    /// Re-reads the certificate chain and key (call on SIGHUP), and the pool token
    /// files when configured. New connections use the new certificate; on error the old
    /// one stays and the error is returned. A pool token failure is logged and counted
    /// and keeps the old tokens (see [`KeServerHandle::reload_pool_tokens`]).
    pub fn reload(&self) -> Result<(), TlsConfigError> {
        let _ = self.shared.reload_pool_tokens();
        self.shared.reload_certificate()
    }

    /// Re-reads the pool token files; returns how many tokens are in force. On error
    /// the previous tokens stay.
    pub fn reload_pool_tokens(&self) -> Result<usize, PoolTokenFileError> {
        self.shared.reload_pool_tokens()
    }

    /// A copy of the counters and the latency histogram.
    pub fn metrics(&self) -> KeMetricsSnapshot {
        self.shared.metrics.snapshot()
    }

    /// The live counters, for an exporter that reads them itself.
    pub fn metrics_ref(&self) -> Arc<KeMetrics> {
        self.shared.metrics.clone()
    }

    /// Connections being served now.
    pub fn active_connections(&self) -> usize {
        self.shared
            .max_connections
            .saturating_sub(self.shared.permits.available_permits())
    }

    /// Stops accepting; [`KeServer::run`] returns once running sessions end (each is
    /// bounded by the session timeout).
    pub fn shutdown(&self) {
        self.shared.shutdown.send_replace(true);
    }
}

/// A bound NTS-KE server; call [`KeServer::run`] to serve.
pub struct KeServer {
    shared: Arc<Shared>,
    listeners: Vec<TcpListener>,
    local_addrs: Vec<SocketAddr>,
    reload_poll_interval: Option<Duration>,
}

impl fmt::Debug for KeServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeServer")
            .field("local_addrs", &self.local_addrs)
            .finish_non_exhaustive()
    }
}

impl KeServer {
    /// Loads the certificate, validates the settings and binds every listen address.
    pub async fn bind(
        config: KeServerConfig,
        issuer: Arc<dyn CookieIssuer>,
    ) -> Result<Self, KeServerError> {
        let core = KeServerCore::new(config.core.clone(), issuer).map_err(KeServerError::Config)?;
        Self::bind_responder(config, KeResponder::Local(core)).await
    }

    /// [`KeServer::bind`] answering through `responder` (`config.core` is then used only
    /// by a [`KeResponder::Local`], which carries its own).
    pub async fn bind_responder(
        config: KeServerConfig,
        responder: KeResponder,
    ) -> Result<Self, KeServerError> {
        if config.max_connections == 0 {
            return Err(KeServerError::Limits("max-connections"));
        }
        if let Some(limits) = &config.client_limits {
            if limits.max_connections == 0 {
                return Err(KeServerError::Limits("client max-connections"));
            }
            if !(limits.rate.is_finite() && limits.rate > 0.0) {
                return Err(KeServerError::Limits("client rate"));
            }
        }
        if config.handshake_timeout.is_zero() || config.session_timeout.is_zero() {
            return Err(KeServerError::Limits("timeout"));
        }
        if config.keep_alive_idle_timeout.is_zero() {
            return Err(KeServerError::Limits("keep-alive idle timeout"));
        }
        if config.max_requests_per_connection == 0 {
            return Err(KeServerError::Limits("requests per connection"));
        }
        let pool_tokens = PoolTokens::new(
            read_pool_token_files(&config.pool_token_files).map_err(KeServerError::PoolToken)?,
        );
        // Pool tokens make the local core a pool member; a balancer is not one.
        let responder = match responder {
            KeResponder::Local(core) => {
                KeResponder::Local(core.with_pool_tokens(pool_tokens.clone()))
            }
            balancer => balancer,
        };
        let (tls, not_after) =
            server_config_and_expiry(&config.certificate_chain_path, &config.private_key_path)
                .map_err(KeServerError::Tls)?;
        let metrics = Arc::new(KeMetrics::default());
        metrics.set_certificate_not_after(not_after.unwrap_or(0));
        let mut listeners = Vec::with_capacity(config.listen.len());
        let mut local_addrs = Vec::with_capacity(config.listen.len());
        for addr in config.listen {
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|source| KeServerError::Bind { addr, source })?;
            let local = listener
                .local_addr()
                .map_err(|source| KeServerError::Bind { addr, source })?;
            local_addrs.push(local);
            listeners.push(listener);
        }
        let (shutdown, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            responder,
            tls: RwLock::new(tls),
            chain_path: config.certificate_chain_path,
            key_path: config.private_key_path,
            stamp: Mutex::new(None),
            metrics,
            permits: Arc::new(Semaphore::new(config.max_connections)),
            max_connections: config.max_connections,
            client_limiter: config.client_limits.map(|limits| {
                Mutex::new(ClientLimiter::new(
                    limits,
                    std::collections::hash_map::RandomState::new(),
                ))
            }),
            epoch: std::time::Instant::now(),
            handshake_timeout: config.handshake_timeout,
            session_timeout: config.session_timeout,
            keep_alive_idle_timeout: config.keep_alive_idle_timeout,
            max_requests_per_connection: config.max_requests_per_connection,
            observer: config.connection_observer.clone(),
            pool_tokens,
            pool_token_stamp: Mutex::new(stamps(&config.pool_token_files)),
            pool_token_files: config.pool_token_files,
            shutdown,
        });
        let stamp = shared.file_stamp();
        if let Ok(mut s) = shared.stamp.lock() {
            *s = stamp;
        }
        Ok(Self {
            shared,
            listeners,
            local_addrs,
            reload_poll_interval: config.reload_poll_interval,
        })
    }

    /// The bound addresses (with the real port when port 0 was asked for).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// A handle for reload, metrics and shutdown.
    pub fn handle(&self) -> KeServerHandle {
        KeServerHandle {
            shared: self.shared.clone(),
        }
    }

    /// Serves until [`KeServerHandle::shutdown`], then waits for running sessions.
    pub async fn run(self) {
        let mut tasks = JoinSet::new();
        for listener in self.listeners {
            tasks.spawn(accept_loop(self.shared.clone(), listener));
        }
        if let KeResponder::Balancer(balancer) = &self.shared.responder {
            tasks.spawn(balancer.clone().run_health_checks());
        }
        if let Some(interval) = self.reload_poll_interval {
            let shared = self.shared.clone();
            tasks.spawn(async move {
                let mut tick = tokio::time::interval(interval);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let s = shared.clone();
                    // Reading PEM files is blocking I/O; keep it off the reactor.
                    let _ = tokio::task::spawn_blocking(move || s.reload_if_changed()).await;
                }
            });
        }
        let mut stop = self.shared.shutdown.subscribe();
        // An error means every sender is gone, which cannot happen while we hold `shared`.
        let _ = stop.wait_for(|stopped| *stopped).await;
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        let wait_all = self.shared.max_connections.min(u32::MAX as usize) as u32;
        let grace = self.shared.session_timeout + TIMEOUT_REPLY_GRACE;
        let _ = timeout(grace, self.shared.permits.acquire_many(wait_all)).await;
    }
}

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                // Typically EMFILE: back off briefly instead of spinning.
                tracing::debug!("NTS-KE accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        // The global cap first: a client refused there keeps its handshake token.
        let observe = |verdict| {
            if let Some(observer) = &shared.observer {
                (observer.0)(peer.ip(), verdict);
            }
        };
        let Ok(permit) = shared.permits.clone().try_acquire_owned() else {
            shared.metrics.record_outcome(SessionOutcome::RefusedAtCap);
            observe(ConnectionVerdict::Refused);
            drop(stream);
            continue;
        };
        let ticket = match admit(&shared, peer) {
            Ok(ticket) => ticket,
            Err(refusal) => {
                shared.metrics.record_outcome(refusal);
                observe(ConnectionVerdict::Limited);
                drop(stream);
                drop(permit);
                continue;
            }
        };
        observe(ConnectionVerdict::Accepted);
        let shared = shared.clone();
        tokio::spawn(async move {
            let _released = ticket.map(|ticket| TicketGuard {
                shared: shared.clone(),
                ticket: Some(ticket),
            });
            let outcome = serve_connection(&shared, stream, peer).await;
            shared.metrics.record_outcome(outcome);
            tracing::debug!(%peer, ?outcome, "NTS-KE session done");
            drop(permit);
        });
    }
}

/// A source that presented a valid pool token is a load balancer, not a client: the
/// per-client limits stop applying to it ([`ClientLimiter::trust`]).
fn trust_load_balancer(shared: &Shared, peer: SocketAddr) {
    let Some(limiter) = &shared.client_limiter else {
        return;
    };
    let now_ns = u64::try_from(shared.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    match limiter.lock() {
        Ok(mut limiter) => limiter.trust(peer.ip(), now_ns),
        Err(poisoned) => poisoned.into_inner().trust(peer.ip(), now_ns),
    }
}

/// The client limiter's verdict on `peer`: a ticket to release (or none when
/// there are no client limits), or the outcome to count for a refusal.
fn admit(shared: &Shared, peer: SocketAddr) -> Result<Option<ClientTicket>, SessionOutcome> {
    let Some(limiter) = &shared.client_limiter else {
        return Ok(None);
    };
    let now_ns = u64::try_from(shared.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let admission = match limiter.lock() {
        Ok(mut limiter) => limiter.admit(peer.ip(), now_ns),
        Err(poisoned) => poisoned.into_inner().admit(peer.ip(), now_ns),
    };
    match admission {
        Admission::Accepted(ticket) => Ok(Some(ticket)),
        Admission::RateLimited => Err(SessionOutcome::RateLimited),
        Admission::TooManyFromSource => Err(SessionOutcome::TooManyFromSource),
    }
}

/// Gives an accepted connection's ticket back when its task ends, however it ends.
struct TicketGuard {
    shared: Arc<Shared>,
    ticket: Option<ClientTicket>,
}

impl Drop for TicketGuard {
    fn drop(&mut self) {
        if let (Some(limiter), Some(ticket)) = (&self.shared.client_limiter, self.ticket.take()) {
            match limiter.lock() {
                Ok(mut limiter) => limiter.release(ticket),
                Err(poisoned) => poisoned.into_inner().release(ticket),
            }
        }
    }
}

enum ReadFailure {
    Io,
    Message(MessageError),
}

/// Reads one request; `first` holds bytes of it already read.
async fn read_request(
    tls: &mut TlsStream<TcpStream>,
    first: &[u8],
) -> Result<Vec<Record>, ReadFailure> {
    let mut reader = MessageReader::new(MessageLimits::REQUEST);
    if !first.is_empty() {
        match reader.feed(first) {
            Ok(Progress::Complete) => return reader.finish().map_err(ReadFailure::Message),
            Ok(Progress::NeedMore) => {}
            Err(e) => return Err(ReadFailure::Message(e)),
        }
    }
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let n = tls.read(&mut buf).await.map_err(|_| ReadFailure::Io)?;
        if n == 0 {
            return reader.finish().map_err(ReadFailure::Message);
        }
        match reader.feed(&buf[..n]) {
            Ok(Progress::Complete) => return reader.finish().map_err(ReadFailure::Message),
            Ok(Progress::NeedMore) => {}
            Err(e) => return Err(ReadFailure::Message(e)),
        }
    }
}

async fn serve_connection(shared: &Shared, stream: TcpStream, peer: SocketAddr) -> SessionOutcome {
    // Nagle plus delayed ACK cost ~40 ms per session (nts-anchors section 3).
    let _ = stream.set_nodelay(true);
    let deadline = Instant::now() + shared.session_timeout;
    let acceptor = TlsAcceptor::from(shared.current_tls());
    let handshake_deadline = deadline.min(Instant::now() + shared.handshake_timeout);
    let mut tls = match timeout_at(handshake_deadline, acceptor.accept(stream)).await {
        Err(_) => return SessionOutcome::Timeout,
        Ok(Err(e)) => {
            tracing::debug!("NTS-KE TLS handshake failed: {e}");
            return SessionOutcome::TlsError;
        }
        Ok(Ok(tls)) => tls,
    };
    if let Some(group) = negotiated_group(tls.get_ref().1) {
        shared.metrics.record_key_exchange_group(group);
    }
    if tls.get_ref().1.alpn_protocol() != Some(ALPN_NTSKE) {
        // RFC 8915 section 4: ALPN is required; a client without it is not speaking NTS-KE.
        let _ = timeout(TIMEOUT_REPLY_GRACE, tls.shutdown()).await;
        return SessionOutcome::TlsError;
    }
    let (mut outcome, mut keep_alive) =
        serve_request(shared, &mut tls, peer, deadline, &[], 0).await;
    // Only an authenticated pool request is ever granted Keep Alive.
    let mut served = 1;
    while keep_alive {
        let Some((first, deadline)) = wait_for_next_request(shared, &mut tls).await else {
            // The load balancer closed, went idle, or we are stopping.
            let _ = timeout(TIMEOUT_REPLY_GRACE, tls.shutdown()).await;
            break;
        };
        shared.metrics.record_pool_keep_alive_request();
        (outcome, keep_alive) =
            serve_request(shared, &mut tls, peer, deadline, &first, served).await;
        served += 1;
    }
    outcome
}

/// Waits (at most the keep-alive idle time, and not past shutdown) for the first bytes
/// of another request; returns them and the deadline for the rest of it.
async fn wait_for_next_request(
    shared: &Shared,
    tls: &mut TlsStream<TcpStream>,
) -> Option<(Vec<u8>, Instant)> {
    let mut stop = shared.shutdown.subscribe();
    let mut buf = vec![0u8; READ_CHUNK];
    let n = tokio::select! {
        read = timeout(shared.keep_alive_idle_timeout, tls.read(&mut buf)) => match read {
            Ok(Ok(n)) if n > 0 => n,
            _ => return None,
        },
        _ = stop.wait_for(|stopped| *stopped) => return None,
    };
    buf.truncate(n);
    Some((buf, Instant::now() + shared.session_timeout))
}

/// Reads, answers and writes one request. Returns its outcome and whether the response
/// granted Keep Alive (then the connection stays open, else close_notify was sent).
/// `served` is the number of requests this connection carried before.
async fn serve_request(
    shared: &Shared,
    tls: &mut TlsStream<TcpStream>,
    peer: SocketAddr,
    deadline: Instant,
    first: &[u8],
    served: usize,
) -> (SessionOutcome, bool) {
    let options = RespondOptions {
        allow_keep_alive: served + 1 < shared.max_requests_per_connection,
        kept_alive: served > 0,
    };
    let (response, mut outcome) = match timeout_at(deadline, read_request(tls, first)).await {
        Err(_) => (
            KeServerCore::error_response(RequestError::Timeout),
            SessionOutcome::Timeout,
        ),
        Ok(Err(ReadFailure::Io)) => return (SessionOutcome::TlsError, false),
        Ok(Err(ReadFailure::Message(e))) => (
            KeServerCore::error_response(RequestError::Message(e)),
            SessionOutcome::BadRequest,
        ),
        Ok(Ok(mut records)) => {
            let started = std::time::Instant::now();
            // A balancer waits on a backend: the session deadline bounds that too.
            let response = match timeout_at(
                deadline,
                shared.responder.respond(&records, tls.get_ref().1, options),
            )
            .await
            {
                Ok(response) => response,
                Err(_) => KeServerCore::error_response(RequestError::Backend(
                    "session timed out waiting for the backend".into(),
                )),
            };
            shared.metrics.record_latency(started.elapsed());
            // Pool records may carry a load balancer's token and fixed keys.
            crate::pool_member::zeroize_pool_records(&mut records);
            let outcome = classify(&response);
            (response, outcome)
        }
    };
    if let Ok(Negotiated::Ntpv4 { cookies, .. }) = &response.result {
        shared.metrics.add_cookies(*cookies);
    }
    if let Some(pool) = response.pool {
        shared.metrics.record_pool_request(pool.kind, pool.outcome);
        if pool.outcome == crate::pool_member::PoolOutcome::Ok {
            trust_load_balancer(shared, peer);
        }
    }
    let keep_alive = response.keep_alive;
    let write_deadline = deadline.max(Instant::now() + TIMEOUT_REPLY_GRACE);
    // The response and close_notify leave in one write; closing the socket
    // (when `tls` is dropped) then sends the FIN, so no shutdown call is needed.
    // A response granting Keep Alive goes without close_notify.
    let written = timeout_at(write_deadline, async {
        let connection = tls.get_mut().1;
        std::io::Write::write_all(&mut connection.writer(), &response.bytes)?;
        if !keep_alive {
            connection.send_close_notify();
        }
        tls.flush().await
    })
    .await;
    match written {
        Ok(Ok(())) => {}
        Ok(Err(_)) if outcome == SessionOutcome::Ok => outcome = SessionOutcome::TlsError,
        Err(_) if outcome == SessionOutcome::Ok => outcome = SessionOutcome::Timeout,
        _ => {}
    }
    (outcome, keep_alive && matches!(written, Ok(Ok(()))))
}

fn classify(response: &ServerResponse) -> SessionOutcome {
    match &response.result {
        Ok(Negotiated::Ntpv4 { .. } | Negotiated::PoolSupport) => SessionOutcome::Ok,
        Ok(_) => SessionOutcome::NoCommonAlgorithm,
        Err(e) if e.is_internal() => SessionOutcome::InternalError,
        Err(_) => SessionOutcome::BadRequest,
    }
}
