//! An open-loop NTS load generator (the NTS paper's section V): NTS-KE
//! handshakes, NTS-protected NTP exchanges in the paper's ratio to them, or
//! plain NTP exchanges, leaving on a fixed schedule whether or not earlier
//! ones were answered, for a bounded time and count.
//!
//! The schedule is kept inside a tokio runtime on the calling thread (one
//! thread by default, pinned by the lab to its own CPU): due requests leave in
//! bursts at the timer's 1 ms ticks; key exchanges become tasks of their own,
//! so a slow server cannot slow the schedule down, only fill the runtime; NTP
//! requests are built and sent by the scheduler itself. Every request notes
//! how late it left against its own scheduled time; a run with more than 5%
//! of its requests over 5 ms late, or whose sending overran its planned time
//! by 5%, fell behind, and the generator, not only the server, limited it.
//! NTS-KE connects to the address resolved once at the start and uses one
//! rustls client configuration for the whole run (full handshakes unless TLS
//! resumption is asked for: the paper's client kept no TLS state; the chain
//! check is remembered, every handshake's signature verified). NTP exchanges share a few connected UDP sockets; one
//! receiver task per socket matches replies by the origin timestamp (run id
//! and sequence number) and checks NTS replies with the session's keys.
//!
//! Per request it records the paper's client-side times (d_CKE: TCP connect
//! to keys ready; d_CNTS and d_CNTP: request sent to the kernel's receive
//! stamp of the reply, so the generator's own queueing is not counted) and
//! classifies failures. Latency percentiles are exact (every sample is kept,
//! at most [`MAX_REQUESTS`] per step), not bucketed.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use authtime_nts::{AeadAlgorithm, ClientOutcome, PendingRequest, SessionKeys};
use authtime_ntske::{KeClient, KeClientError};
use authtime_proto::{ClientConfig, build_request};
use authtime_wire::{Header, NtpTimestamp, Reader};
use serde::Serialize;
use tokio::net::UdpSocket;

use crate::load_nts_stats::{ErrorCounts, Percentiles, StepReport, Tally};

/// Longest step.
pub const MAX_STEP: Duration = Duration::from_secs(600);
/// Longest ramp (all steps together).
pub const MAX_TOTAL: Duration = Duration::from_secs(3600);
/// Most requests in one step (every latency sample is kept).
pub const MAX_REQUESTS: u64 = 2_000_000;
/// A request that starts this late counts as late (the schedule's timer
/// ticks every millisecond, so a few milliseconds are its normal jitter).
const LATE: Duration = Duration::from_millis(5);
/// A step fell behind when more than this share of its requests left late...
const BEHIND_SHARE: f64 = 0.05;
/// (and more than this many: a handful of late requests in a short step is a
/// stall, not a generator out of breath)...
const BEHIND_MIN: f64 = 10.0;
/// ...or when sending took this much longer than planned. A generator that
/// cannot keep the rate falls further behind with every request; one that is
/// only preempted now and then (a stall of the shared machine) delays a few
/// requests and catches up, and does not count.
const BEHIND_OVERRUN: f64 = 0.05;
/// Most requests dispatched in one go when the scheduler catches up.
const MAX_BURST: u64 = 64;
/// The scheduler lets other tasks run after this many requests of a burst.
const YIELD_EVERY: u64 = 8;
/// Cookies kept for NTS exchanges: below the floor they are reused
/// (the paper reused one cookie for three exchanges), above the cap the
/// oldest are dropped.
const COOKIE_FLOOR: usize = 64;
const COOKIE_CAP: usize = 4096;
/// Key exchanges made before an NTS step, so that its first exchanges have cookies.
const PREFILL_KE: usize = 8;
/// Socket buffers asked for.
const SOCKET_BUFFER: usize = 4 << 20;

/// What each scheduled request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One whole NTS-KE session (TCP, TLS 1.3, records, key export).
    Ke,
    /// One NTS-protected NTP exchange; every `ntp_per_ke`-th one also starts
    /// an NTS-KE session (0: no key exchanges during the step, the cookies of
    /// a few made beforehand are reused).
    Nts {
        /// NTS-NTP exchanges per NTS-KE session.
        ntp_per_ke: u32,
    },
    /// One plain NTP exchange (to `ntp_target`).
    Ntp,
}

/// The TLS key exchange groups the generator's NTS-KE client offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyExchangeOffer {
    /// authtime's client: X25519MLKEM768 first, then X25519, secp256r1 and
    /// secp384r1 (a server with the hybrid group negotiates it).
    X25519Mlkem768,
    /// X25519 alone, as a client without post-quantum key exchange.
    X25519,
}

impl KeyExchangeOffer {
    /// Both, the hybrid first.
    pub const ALL: [Self; 2] = [Self::X25519Mlkem768, Self::X25519];

    /// The IANA name of the group a server with both negotiates.
    #[must_use]
    pub fn group_name(self) -> &'static str {
        match self {
            Self::X25519Mlkem768 => "X25519MLKEM768",
            Self::X25519 => "X25519",
        }
    }

    fn groups(self) -> Vec<&'static dyn rustls::crypto::SupportedKxGroup> {
        match self {
            Self::X25519Mlkem768 => authtime_ntske::tls_config::key_exchange_groups(),
            Self::X25519 => vec![rustls::crypto::aws_lc_rs::kx_group::X25519],
        }
    }
}

/// What to send.
#[derive(Debug, Clone)]
pub struct NtsLoadOptions {
    /// NTS-KE server host (name or IP address).
    pub ke_host: String,
    /// NTS-KE server port.
    pub ke_port: u16,
    /// The certificates to trust (a CA); `None`: the webpki roots.
    pub ca: Option<PathBuf>,
    /// The plain NTP server, for [`Mode::Ntp`]; NTS modes use the one NTS-KE names.
    pub ntp_target: Option<SocketAddr>,
    /// What each request does.
    pub mode: Mode,
    /// Requests per second (NTS-NTP exchanges per second in [`Mode::Nts`]).
    pub rate: f64,
    /// How long to send.
    pub duration: Duration,
    /// How long one request may take.
    pub timeout: Duration,
    /// Most NTS-KE sessions open at once; requests beyond are not sent and
    /// count as `generator-cap` errors.
    pub connections_max: usize,
    /// UDP sockets for NTP exchanges.
    pub sockets: usize,
    /// Threads of the tokio runtime.
    pub threads: usize,
    /// Offer TLS 1.3 session resumption (off: a full handshake every time).
    pub tls_resumption: bool,
    /// The key exchange groups to offer.
    pub key_exchange: KeyExchangeOffer,
}

/// A ramp's rates: `from`, `from + step`, ... up to `to`.
///
/// # Errors
/// A message when the ramp is empty or too long.
pub fn ramp_rates(from: f64, to: f64, step: f64) -> Result<Vec<f64>, String> {
    if !(from > 0.0 && to >= from && step > 0.0 && from.is_finite() && to.is_finite()) {
        return Err(format!(
            "ramp {from}:{to}:{step}: needs 0 < FROM <= TO and STEP > 0"
        ));
    }
    let n = ((to - from) / step).floor() as usize + 1;
    if n > 1000 {
        return Err(format!("ramp {from}:{to}:{step}: {n} steps, at most 1000"));
    }
    Ok((0..n).map(|i| from + step * i as f64).collect())
}

/// Parses `FROM:TO:STEP`, or `paper` (the NTS paper's 100 to 8000 in steps of 100).
///
/// # Errors
/// A message naming the bad part.
pub fn parse_ramp(text: &str) -> Result<Vec<f64>, String> {
    if text == "paper" {
        return ramp_rates(100.0, 8000.0, 100.0);
    }
    let parts: Vec<&str> = text.split(':').collect();
    let [from, to, step] = parts.as_slice() else {
        return Err(format!("--ramp {text}: expected FROM:TO:STEP or `paper`"));
    };
    let num = |s: &str| {
        s.parse::<f64>()
            .map_err(|_| format!("--ramp {text}: `{s}` is not a number"))
    };
    ramp_rates(num(from)?, num(to)?, num(step)?)
}

/// One NTS session of the generator.
struct Session {
    keys: SessionKeys,
    ntp: SocketAddr,
}

/// Cookies ready for NTS exchanges, with their session.
#[derive(Default)]
struct CookiePool {
    cookies: Mutex<VecDeque<(Arc<Session>, Vec<u8>)>>,
    reused: AtomicU64,
}

impl CookiePool {
    fn add(&self, session: &Arc<Session>, cookies: Vec<Vec<u8>>) {
        let mut pool = self.cookies.lock().unwrap_or_else(|e| e.into_inner());
        for cookie in cookies {
            pool.push_back((session.clone(), cookie));
        }
        while pool.len() > COOKIE_CAP {
            pool.pop_front();
        }
    }

    fn take(&self, seq: u64) -> Option<(Arc<Session>, Vec<u8>)> {
        let mut pool = self.cookies.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() > COOKIE_FLOOR {
            return pool.pop_front();
        }
        self.reused.fetch_add(1, Ordering::Relaxed);
        let n = pool.len();
        (n > 0).then(|| pool[(seq as usize) % n].clone())
    }
}

/// An NTP request waiting for its reply.
struct Pending {
    sent: Instant,
    /// The same moment on the real-time clock, which the kernel's receive
    /// timestamps use.
    sent_wall: std::time::SystemTime,
    nts: Option<(PendingRequest, Arc<Session>)>,
}

/// What the tasks of one step share.
struct Step {
    start: Instant,
    run_id: u32,
    timeout: Duration,
    tally: Mutex<Tally>,
    pending: Mutex<HashMap<u64, Pending>>,
    ke_in_flight: AtomicUsize,
    late: AtomicU64,
    max_lag_ns: AtomicU64,
}

impl Step {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn started(&self, scheduled: Duration) {
        let lag = self.start.elapsed().saturating_sub(scheduled);
        if lag > LATE {
            self.late.fetch_add(1, Ordering::Relaxed);
        }
        self.max_lag_ns
            .fetch_max(lag.as_nanos() as u64, Ordering::Relaxed);
    }
}

/// The generator: a runtime, a TLS client, sockets and cookies kept across steps.
pub struct Generator {
    opts: NtsLoadOptions,
    /// The NTS-KE server's address, resolved once (`None`: the name did not resolve).
    ke_addr: Option<SocketAddr>,
    runtime: tokio::runtime::Runtime,
    client: KeClient,
    pool: Arc<CookiePool>,
    sockets: Vec<Arc<UdpSocket>>,
    stop: Arc<AtomicBool>,
    receivers: Vec<tokio::task::JoinHandle<()>>,
    current: Arc<Mutex<Option<Arc<Step>>>>,
    /// [`Generator::prepare`] made the sessions the next NTS step starts with.
    prepared: bool,
}

impl Drop for Generator {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for r in &self.receivers {
            r.abort();
        }
    }
}

impl Generator {
    /// A generator for `opts` (its rate and duration are those of [`Generator::step`]'s default).
    ///
    /// # Errors
    /// Bad options, unreadable trust anchors, a runtime or sockets that cannot be made.
    pub fn new(opts: NtsLoadOptions) -> Result<Self, String> {
        if !(1..=64).contains(&opts.sockets) {
            return Err(format!("{} sockets: must be 1 to 64", opts.sockets));
        }
        if !(1..=64).contains(&opts.threads) {
            return Err(format!("{} threads: must be 1 to 64", opts.threads));
        }
        if !(1..=100_000).contains(&opts.connections_max) {
            return Err(format!(
                "{} connections: must be 1 to 100000",
                opts.connections_max
            ));
        }
        if opts.timeout.is_zero() || opts.timeout > Duration::from_secs(30) {
            return Err(format!(
                "timeout {:?}: must be above 0 and at most 30 s",
                opts.timeout
            ));
        }
        // One thread: the scheduler, the key exchanges and the receivers share
        // the calling thread (no wake-ups across threads, one core's worth).
        let runtime = if opts.threads == 1 {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(opts.threads)
                .enable_all()
                .build()
        }
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        let tls = authtime_ntske::tls_config::load_generator_client_config_offering(
            opts.ca.as_deref(),
            opts.key_exchange.groups(),
        )
        .map_err(|e| format!("trust anchors: {e}"))?;
        let mut tls = (*tls).clone();
        if !opts.tls_resumption {
            tls.resumption = rustls::client::Resumption::disabled();
        }
        let client = KeClient::from_config(Arc::new(tls));
        let host = opts.ke_host.trim_start_matches('[').trim_end_matches(']');
        let ke_addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, opts.ke_port))
            .ok()
            .and_then(|mut a| a.next());
        Ok(Self {
            ke_addr,
            opts,
            runtime,
            client,
            pool: Arc::new(CookiePool::default()),
            sockets: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            receivers: Vec::new(),
            current: Arc::new(Mutex::new(None)),
            prepared: false,
        })
    }

    /// Opens the UDP sockets to `target` and starts their receivers (once).
    fn open_sockets(&mut self, target: SocketAddr) -> Result<(), String> {
        if !self.sockets.is_empty() {
            return Ok(());
        }
        for _ in 0..self.opts.sockets {
            let socket = udp_socket(target)?;
            let socket = {
                let _guard = self.runtime.enter();
                Arc::new(UdpSocket::from_std(socket).map_err(|e| e.to_string())?)
            };
            let receiver = receive(
                socket.clone(),
                self.current.clone(),
                self.pool.clone(),
                self.stop.clone(),
            );
            self.receivers.push(self.runtime.spawn(receiver));
            self.sockets.push(socket);
        }
        Ok(())
    }

    /// Makes the sessions an NTS step starts with; returns the NTP server they name.
    fn prefill(&mut self) -> Result<SocketAddr, String> {
        let mut ntp = None;
        let mut last_error = None;
        for _ in 0..PREFILL_KE {
            let fetched = self.runtime.block_on(self.client.fetch(
                &self.opts.ke_host,
                self.opts.ke_port,
                self.opts.timeout,
            ));
            // fetch resolves the name itself and so reports a name that does not resolve.
            match fetched.map_err(|e| e.to_string()).and_then(session_of) {
                Ok((session, cookies)) => {
                    ntp = Some(session.ntp);
                    self.pool.add(&session, cookies);
                }
                Err(e) => last_error = Some(e),
            }
        }
        ntp.ok_or_else(|| {
            format!(
                "no NTS-KE session with {}:{}: {}",
                self.opts.ke_host,
                self.opts.ke_port,
                last_error.unwrap_or_default()
            )
        })
    }

    /// Makes the NTS-KE sessions the next NTS step starts with and opens the
    /// sockets, so that a caller measuring the step's cost can leave them
    /// out (the step then does not make them again).
    ///
    /// # Errors
    /// No NTS-KE session, sockets that cannot be opened.
    pub fn prepare(&mut self) -> Result<(), String> {
        if let Mode::Nts { .. } = self.opts.mode {
            let ntp = self.prefill()?;
            self.open_sockets(ntp)?;
            self.prepared = true;
        }
        Ok(())
    }

    /// Runs one step at `rate` for `duration`; `keep_samples` keeps the
    /// sorted latencies (for CDF plots).
    ///
    /// # Errors
    /// Options out of range, no NTS-KE session to start from, sockets that cannot be opened.
    pub fn step(
        &mut self,
        rate: f64,
        duration: Duration,
        keep_samples: bool,
    ) -> Result<StepReport, String> {
        let total = check(rate, duration)?;
        match self.opts.mode {
            Mode::Ke => {}
            Mode::Ntp => {
                let target = self
                    .opts
                    .ntp_target
                    .ok_or("plain NTP load needs an NTP target")?;
                self.open_sockets(target)?;
            }
            Mode::Nts { .. } => {
                if !std::mem::take(&mut self.prepared) {
                    let ntp = self.prefill()?;
                    self.open_sockets(ntp)?;
                }
            }
        }
        let step = Arc::new(Step {
            start: Instant::now(),
            run_id: run_id(),
            timeout: self.opts.timeout,
            tally: Mutex::new(Tally::default()),
            pending: Mutex::new(HashMap::new()),
            ke_in_flight: AtomicUsize::new(0),
            late: AtomicU64::new(0),
            max_lag_ns: AtomicU64::new(0),
        });
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(step.clone());
        let reused_before = self.pool.reused.load(Ordering::Relaxed);
        let cpu0 = crate::cpu_time::process_cpu_time();
        let sent_for = self.runtime.block_on(self.schedule(&step, rate, total));
        self.runtime.block_on(drain(&step));
        let wall = step.start.elapsed();
        let cpu = crate::cpu_time::process_cpu_time().saturating_sub(cpu0);
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let mut tally = std::mem::take(&mut *step.tally());
        tally.cookies_reused = self.pool.reused.load(Ordering::Relaxed) - reused_before;
        let max_lag = Duration::from_nanos(step.max_lag_ns.load(Ordering::Relaxed));
        let late = step.late.load(Ordering::Relaxed);
        let behind = late as f64 > (BEHIND_SHARE * total as f64).max(BEHIND_MIN)
            || sent_for > duration.mul_f64(1.0 + BEHIND_OVERRUN) + LATE;
        Ok(tally.report(
            self.opts.mode,
            rate,
            duration,
            sent_for,
            late,
            max_lag,
            behind,
            cpu.as_secs_f64() / wall.as_secs_f64().max(1e-9),
            keep_samples,
        ))
    }

    /// Dispatches `total` requests on schedule; returns how long it took.
    ///
    /// It runs inside the runtime: key exchanges become tasks, NTP requests
    /// are built and sent right here (a UDP send does not wait for the
    /// server). Between due requests it sleeps on the runtime's timer (1 ms
    /// resolution), so due requests leave in small bursts; each records how
    /// late it left against its own scheduled time.
    async fn schedule(&self, step: &Arc<Step>, rate: f64, total: u64) -> Duration {
        let ns_per_request = 1e9 / rate;
        let mut seq = 0u64;
        while seq < total {
            let now = step.start.elapsed();
            let due = ((now.as_nanos() as f64 / ns_per_request) as u64 + 1).min(total);
            if seq >= due {
                let next = Duration::from_nanos((seq as f64 * ns_per_request) as u64);
                tokio::time::sleep(next.saturating_sub(now)).await;
                continue;
            }
            for i in 0..(due - seq).min(MAX_BURST) {
                let scheduled = Duration::from_nanos((seq as f64 * ns_per_request) as u64);
                self.dispatch(step, seq, scheduled).await;
                seq += 1;
                // Let the key exchanges and receivers run within a burst too.
                if i % YIELD_EVERY == YIELD_EVERY - 1 {
                    tokio::task::yield_now().await;
                }
            }
            tokio::task::yield_now().await;
        }
        step.start.elapsed()
    }

    async fn dispatch(&self, step: &Arc<Step>, seq: u64, scheduled: Duration) {
        let ke = match self.opts.mode {
            Mode::Ke => true,
            Mode::Nts { ntp_per_ke } => ntp_per_ke > 0 && seq.is_multiple_of(u64::from(ntp_per_ke)),
            Mode::Ntp => false,
        };
        if ke {
            if step.ke_in_flight.load(Ordering::Relaxed) >= self.opts.connections_max {
                step.tally().ke_errors.generator_cap += 1;
            } else if let Some(addr) = self.ke_addr {
                step.ke_in_flight.fetch_add(1, Ordering::Relaxed);
                let (step, client, pool) = (step.clone(), self.client.clone(), self.pool.clone());
                let name = self.opts.ke_host.clone();
                let feed = matches!(self.opts.mode, Mode::Nts { .. });
                tokio::spawn(async move {
                    step.started(scheduled);
                    let result = client.fetch_at(addr, &name, step.timeout).await;
                    step.ke_in_flight.fetch_sub(1, Ordering::Relaxed);
                    ke_done(&step, &pool, result, feed);
                });
            } else {
                step.tally().ke_errors.other += 1;
            }
        }
        if self.opts.mode == Mode::Ke {
            return;
        }
        let socket = &self.sockets[(seq as usize) % self.sockets.len()];
        let nts = self.opts.mode != Mode::Ntp;
        step.started(scheduled);
        ntp_exchange(step, &self.pool, socket, seq, nts).await;
    }
}

/// Waits for the answers of the last requests (bounded by the timeout),
/// then counts what is still pending as timeouts.
async fn drain(step: &Step) {
    let deadline = Instant::now() + step.timeout + Duration::from_millis(50);
    while Instant::now() < deadline {
        let pending = step.pending.lock().map_or(0, |p| p.len());
        if pending == 0 && step.ke_in_flight.load(Ordering::Relaxed) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let left = {
        let mut pending = step.pending.lock().unwrap_or_else(|e| e.into_inner());
        let n = pending.len() as u64;
        pending.clear();
        n
    };
    step.tally().ntp_errors.timeout += left;
    // A key exchange still open here ends by its own timeout; wait for it
    // (bounded) so that it is counted in this step.
    let deadline = Instant::now() + step.timeout;
    while step.ke_in_flight.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn check(rate: f64, duration: Duration) -> Result<u64, String> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!("rate {rate}: must be above 0"));
    }
    if duration.is_zero() || duration > MAX_STEP {
        return Err(format!(
            "duration {duration:?}: must be above 0 and at most {} s",
            MAX_STEP.as_secs()
        ));
    }
    let total = (rate * duration.as_secs_f64()).ceil();
    if total > MAX_REQUESTS as f64 {
        return Err(format!(
            "{total} requests: at most {MAX_REQUESTS} per step (lower the rate or the duration)"
        ));
    }
    Ok((total as u64).max(1))
}

fn udp_socket(target: SocketAddr) -> Result<std::net::UdpSocket, String> {
    use socket2::{Domain, Protocol, Socket, Type};
    let local: SocketAddr = if target.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| format!("cannot open a socket: {e}"))?;
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    s.bind(&local.into())
        .map_err(|e| format!("cannot bind {local}: {e}"))?;
    // Without stamps the round trip ends when the reply is read instead.
    let _ = authtime_packet_io::enable_timestamps(&s, false);
    s.connect(&target.into())
        .map_err(|e| format!("cannot reach {target}: {e}"))?;
    s.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(s.into())
}

/// Tells this step's replies from an earlier step's late ones; not a secret.
fn run_id() -> u32 {
    let mut b = [0u8; 4];
    if getrandom::fill(&mut b).is_err() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        return now.subsec_nanos() ^ std::process::id();
    }
    u32::from_le_bytes(b)
}

/// The NTS session of a key exchange, and its cookies.
fn session_of(outcome: authtime_ntske::KeOutcome) -> Result<(Arc<Session>, Vec<Vec<u8>>), String> {
    let algorithm = AeadAlgorithm::from_id(outcome.aead_id)
        .ok_or_else(|| format!("unsupported AEAD {}", outcome.aead_id))?;
    let keys = SessionKeys::new(algorithm, &outcome.keys.c2s, &outcome.keys.s2c)
        .map_err(|e| format!("session keys: {e}"))?;
    let ntp = (outcome.ntp_server.as_str(), outcome.ntp_port);
    let ntp = std::net::ToSocketAddrs::to_socket_addrs(&ntp)
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("cannot resolve the NTP server {}", outcome.ntp_server))?;
    if outcome.cookies.is_empty() {
        return Err("the server sent no cookie".into());
    }
    Ok((Arc::new(Session { keys, ntp }), outcome.cookies))
}

fn ke_done(
    step: &Step,
    pool: &CookiePool,
    result: Result<authtime_ntske::KeOutcome, KeClientError>,
    feed: bool,
) {
    match result {
        Ok(outcome) => {
            let micros = outcome.elapsed.as_micros().min(u128::from(u32::MAX)) as u32;
            let handshake = outcome
                .handshake_elapsed
                .as_micros()
                .min(u128::from(u32::MAX)) as u32;
            if feed && let Ok((session, cookies)) = session_of(outcome) {
                pool.add(&session, cookies);
            }
            let mut tally = step.tally();
            tally.ke_us.push(micros);
            tally.ke_handshake_us.push(handshake);
        }
        Err(e) => classify_ke(&mut step.tally().ke_errors, &e),
    }
}

/// Sorts a key-exchange failure into the paper's error classes.
pub fn classify_ke(errors: &mut ErrorCounts, e: &KeClientError) {
    use std::io::ErrorKind as K;
    let io_class = |errors: &mut ErrorCounts,
                    e: &std::io::Error,
                    otherwise: fn(&mut ErrorCounts)| match e.kind() {
        K::ConnectionRefused => errors.refused += 1,
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
            errors.reset += 1;
        }
        K::TimedOut => errors.timeout += 1,
        _ => otherwise(errors),
    };
    match e {
        KeClientError::Timeout => errors.timeout += 1,
        KeClientError::Connect(io) => io_class(errors, io, |c| c.other += 1),
        KeClientError::Io(io) => io_class(errors, io, |c| c.other += 1),
        KeClientError::Handshake(io) => io_class(errors, io, |c| c.tls += 1),
        KeClientError::NoAlpn => errors.tls += 1,
        KeClientError::Response(_) => errors.ke_refused += 1,
        _ => errors.other += 1,
    }
}

async fn ntp_exchange(step: &Step, pool: &CookiePool, socket: &UdpSocket, seq: u64, nts: bool) {
    let transmit = (u64::from(step.run_id) << 32) | (seq & 0xffff_ffff);
    let mut plain = [0u8; 128];
    let Ok((len, _)) = build_request(
        &ClientConfig::default(),
        NtpTimestamp::from_bits(transmit),
        None,
        &mut plain,
    ) else {
        step.tally().ntp_errors.other += 1;
        return;
    };
    let mut request = [0u8; 1500];
    let (wire, nts_state) = if nts {
        let Some((session, cookie)) = pool.take(seq) else {
            step.tally().ntp_errors.no_cookie += 1;
            return;
        };
        let Ok(header) = Header::decode(&mut Reader::new(&plain[..len])) else {
            step.tally().ntp_errors.other += 1;
            return;
        };
        let mut rng = |buf: &mut [u8]| {
            if getrandom::fill(buf).is_err() {
                buf.fill(0x5a);
            }
        };
        let built =
            authtime_nts::build_request(&header, &session.keys, &cookie, 0, &mut rng, &mut request);
        let Ok(pending) = built else {
            step.tally().ntp_errors.other += 1;
            return;
        };
        let n = pending.len();
        (&request[..n], Some((pending, session)))
    } else {
        (&plain[..len], None)
    };
    step.pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(
            transmit,
            Pending {
                sent: Instant::now(),
                sent_wall: std::time::SystemTime::now(),
                nts: nts_state,
            },
        );
    if let Err(e) = socket.send(wire).await {
        step.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&transmit);
        let mut tally = step.tally();
        if e.kind() == std::io::ErrorKind::ConnectionRefused {
            tally.ntp_errors.refused += 1;
        } else {
            tally.ntp_errors.send += 1;
        }
    }
}

/// Receives replies on one socket until stopped, checking each against its request.
async fn receive(
    socket: Arc<UdpSocket>,
    current: Arc<Mutex<Option<Arc<Step>>>>,
    pool: Arc<CookiePool>,
    stop: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        let ready = tokio::time::timeout(Duration::from_millis(50), socket.readable()).await;
        if !matches!(ready, Ok(Ok(()))) {
            continue;
        }
        // Everything queued, each reply timed by the kernel's arrival stamp.
        loop {
            let got = socket.try_io(tokio::io::Interest::READABLE, || {
                authtime_packet_io::recv_one(&*socket, &mut buf, false)
            });
            let (n, stamp) = match got {
                Ok(got) => (got.len, got.stamp.map(system_time)),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                // An ICMP port unreachable for an earlier request.
                Err(_) => {
                    if let Some(step) = current.lock().ok().and_then(|c| c.clone()) {
                        step.tally().icmp_refused += 1;
                    }
                    continue;
                }
            };
            take_reply(&current, &pool, &buf[..n], Instant::now(), stamp);
        }
    }
}

/// Matches one reply to its request, checks it and records its round trip:
/// from the send to the kernel's receive stamp when there is one, else to `at`.
fn take_reply(
    current: &Mutex<Option<Arc<Step>>>,
    pool: &CookiePool,
    buf: &[u8],
    at: Instant,
    stamp: Option<std::time::SystemTime>,
) {
    let n = buf.len();
    {
        let Some(step) = current.lock().ok().and_then(|c| c.clone()) else {
            return;
        };
        let Some(origin) = buf.get(24..32).and_then(|b| <[u8; 8]>::try_from(b).ok()) else {
            step.tally().unmatched += 1;
            return;
        };
        let entry = step
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&u64::from_be_bytes(origin));
        let Some(entry) = entry else {
            step.tally().unmatched += 1;
            return;
        };
        let rtt = stamp
            .and_then(|s| s.duration_since(entry.sent_wall).ok())
            .filter(|r| *r <= step.timeout)
            .unwrap_or_else(|| at.saturating_duration_since(entry.sent));
        let micros = rtt.as_micros().min(u128::from(u32::MAX)) as u32;
        let reply = &buf[..n];
        let mut fresh = None;
        let verdict = match &entry.nts {
            None => plain_verdict(reply),
            Some((pending, session)) => {
                match authtime_nts::check_response(reply, pending, &session.keys) {
                    Ok(ClientOutcome::Time { header, cookies }) => {
                        fresh = Some((session.clone(), cookies));
                        if header.stratum == 0 {
                            Err(Fault::Kiss)
                        } else {
                            Ok(header)
                        }
                    }
                    Ok(ClientOutcome::Nak { .. }) => Err(Fault::Nak),
                    Err(_) => Err(Fault::BadAuth),
                }
            }
        };
        if let Some((session, cookies)) = fresh {
            pool.add(&session, cookies);
        }
        let mut tally = step.tally();
        match verdict {
            _ if rtt > step.timeout => tally.ntp_errors.timeout += 1,
            Ok(header) => {
                tally.ntp_us.push(micros);
                if let Some(offset) = stamp.and_then(|s| t3_offset_ns(s, &header)) {
                    tally.t3_offsets_ns.push(offset);
                }
            }
            Err(Fault::Kiss) => tally.ntp_errors.kiss += 1,
            Err(Fault::Nak) => tally.ntp_errors.nak += 1,
            Err(Fault::BadAuth) => tally.ntp_errors.bad_auth += 1,
        }
    }
}

enum Fault {
    Kiss,
    Nak,
    BadAuth,
}

fn plain_verdict(reply: &[u8]) -> Result<Header, Fault> {
    let Ok(header) = Header::decode(&mut Reader::new(reply)) else {
        return Err(Fault::BadAuth);
    };
    if header.stratum == 0 {
        Err(Fault::Kiss)
    } else {
        Ok(header)
    }
}

/// How early the reply's transmit timestamp (T3) is: the kernel's receive
/// time of the reply − T3, in ns, saturated to ±2.1 s (as the NTP
/// generator's accuracy samples are).
fn t3_offset_ns(received: std::time::SystemTime, header: &Header) -> Option<i32> {
    let rx = received.duration_since(std::time::UNIX_EPOCH).ok()?;
    let secs = i64::try_from(rx.as_secs()).ok()?;
    let t3 = header.transmit_ts.to_unix_near(secs).as_nanos();
    let offset = i128::try_from(rx.as_nanos()).ok()? - t3;
    Some(offset.clamp(i128::from(i32::MIN), i128::from(i32::MAX)) as i32)
}

/// Runs `rates` one after the other, each for `step` (a ramp; one rate is one step).
///
/// # Errors
/// A step that could not be run, or a ramp longer than [`MAX_TOTAL`].
pub fn run_ramp(
    opts: NtsLoadOptions,
    rates: &[f64],
    step: Duration,
    mut on_step: impl FnMut(&StepReport),
) -> Result<Vec<StepReport>, String> {
    if step.saturating_mul(rates.len() as u32) > MAX_TOTAL {
        return Err(format!(
            "{} steps of {:?}: at most {} s in all",
            rates.len(),
            step,
            MAX_TOTAL.as_secs()
        ));
    }
    let mut generator = Generator::new(opts)?;
    let mut out = Vec::with_capacity(rates.len());
    for &rate in rates {
        let report = generator.step(rate, step, false)?;
        on_step(&report);
        out.push(report);
    }
    Ok(out)
}

/// Latency percentiles of a kept sample, for CDF plots: (µs, cumulative share).
#[must_use]
pub fn cdf_points(p: &Percentiles, points: usize) -> Vec<(f64, f64)> {
    let s = &p.samples_us;
    if s.is_empty() || points == 0 {
        return Vec::new();
    }
    (0..=points)
        .map(|i| {
            let q = i as f64 / points as f64;
            let idx = ((s.len() - 1) as f64 * q).round() as usize;
            (f64::from(s[idx.min(s.len() - 1)]), q)
        })
        .collect()
}

/// A kernel timestamp as a `SystemTime`; a stamp before 1970 (never seen) is
/// taken as 1970.
fn system_time(stamp: authtime_packet_io::Stamp) -> std::time::SystemTime {
    let secs = u64::try_from(stamp.secs).unwrap_or(0);
    std::time::UNIX_EPOCH + Duration::new(secs, stamp.nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramps_parse_and_are_bounded() {
        assert_eq!(parse_ramp("100:300:100"), Ok(vec![100.0, 200.0, 300.0]));
        assert_eq!(parse_ramp("paper").map(|r| r.len()), Ok(80));
        assert!(parse_ramp("100:50:10").is_err());
        assert!(parse_ramp("1:100000:1").is_err());
        assert!(parse_ramp("a:b:c").is_err());
        assert!(parse_ramp("1:2").is_err());
    }

    #[test]
    fn steps_are_bounded() {
        assert!(check(0.0, Duration::from_secs(1)).is_err());
        assert!(check(10.0, Duration::ZERO).is_err());
        assert!(check(10.0, Duration::from_secs(601)).is_err());
        assert!(check(1e7, Duration::from_secs(1)).is_err());
        assert_eq!(check(100.0, Duration::from_secs(2)), Ok(200));
    }

    #[test]
    fn ke_failures_are_classified() {
        use std::io::{Error, ErrorKind};
        let mut c = ErrorCounts::default();
        classify_ke(&mut c, &KeClientError::Timeout);
        classify_ke(
            &mut c,
            &KeClientError::Connect(Error::from(ErrorKind::ConnectionRefused)),
        );
        classify_ke(
            &mut c,
            &KeClientError::Handshake(Error::from(ErrorKind::ConnectionReset)),
        );
        classify_ke(
            &mut c,
            &KeClientError::Handshake(Error::new(ErrorKind::InvalidData, "bad certificate")),
        );
        classify_ke(&mut c, &KeClientError::NoAlpn);
        assert_eq!((c.timeout, c.refused, c.reset, c.tls), (1, 1, 1, 2));
        assert_eq!(c.total(), 5);
    }

    #[test]
    fn a_closed_port_is_counted_as_refused_and_the_schedule_is_kept() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("port");
        let opts = NtsLoadOptions {
            ke_host: "127.0.0.1".into(),
            ke_port: port,
            ca: None,
            ntp_target: None,
            mode: Mode::Ke,
            rate: 200.0,
            duration: Duration::from_millis(200),
            timeout: Duration::from_millis(500),
            connections_max: 100,
            sockets: 1,
            threads: 1,
            tls_resumption: false,
            key_exchange: KeyExchangeOffer::X25519Mlkem768,
        };
        let started = Instant::now();
        let mut generator = Generator::new(opts).expect("generator");
        let report = generator
            .step(200.0, Duration::from_millis(200), false)
            .expect("step");
        // Every request left and was counted as refused, in bounded time.
        // (`fell_behind` is not asserted: one stall of 10 ms near the end of
        // a 200 ms step on a busy machine sets it.)
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(report.scheduled, 40);
        assert_eq!(report.ke_errors.refused, 40, "{report:?}");
    }
}
