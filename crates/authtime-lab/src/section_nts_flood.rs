//! Section `nts`, reconnect flood (issue 19): one address, 127.0.0.1, opens
//! NTS-KE connections as fast as it can while honest clients, each from an
//! address of its own (127.0.0.2 and up), do one handshake a round; the same
//! flood and the same clients against authtime with its default per-client
//! limits and against chronyd with `ntsratelimit interval 6 burst 8`.
//!
//! The flood mirrors authtime-server's `ntske_flood` test: a dozen
//! connections that say nothing (they hold their slots until the server
//! closes them) and two dozen full NTS-KE clients reconnecting at once,
//! bounded in time (it stops with the honest rounds) and in connections.
//! The honest clients of the unloaded rounds and of the flooded rounds use
//! different addresses, so that chronyd's per-address bucket (8 handshakes,
//! then one per 64 s) is not spent before the flood starts.

use std::{
    fmt::Write as _,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use authtime_ntske::KeClient;
use serde::Serialize;

use crate::{
    report::Table,
    section_nts_server::{Certificates, NtsServer, scrape},
};

/// chronyd's NTS-KE rate limit in this measurement (chrony.conf syntax).
pub const CHRONYD_NTSRATELIMIT: &str = "interval 6 burst 8";
/// The name in the servers' certificate.
const TLS_NAME: &str = "localhost";
/// Connections of the flood that send nothing.
const FLOOD_HOLDERS: usize = 12;
/// Full NTS-KE clients of the flood.
const FLOOD_CLIENTS: usize = 24;
/// The flood's source.
const FLOOD_SOURCE: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// Sizes of the flood measurement.
#[derive(Debug, Clone, Serialize)]
pub struct FloodPlan {
    /// Honest clients, one address each, per phase.
    pub honest_clients: u8,
    /// Handshakes per honest client without the flood.
    pub unloaded_rounds: u32,
    /// Handshakes per honest client under the flood.
    pub flooded_rounds: u32,
    /// One handshake per honest client per round.
    pub round: Duration,
    /// The flood runs this long before the honest rounds start.
    pub ramp: Duration,
    /// The flood stops after this many connections at the latest.
    pub max_connections: u64,
    /// Timeout of one honest handshake.
    pub timeout: Duration,
}

impl FloodPlan {
    /// `--quick` and full runs: 16 clients, 2 handshakes each unloaded and 5
    /// under a flood of about 5.5 s.
    #[must_use]
    pub fn new(quick: bool) -> Self {
        Self {
            honest_clients: 16,
            unloaded_rounds: 2,
            flooded_rounds: if quick { 5 } else { 8 },
            round: Duration::from_secs(1),
            ramp: Duration::from_millis(500),
            max_connections: 300_000,
            timeout: Duration::from_secs(5),
        }
    }

    /// For the smoke test: about 1.5 s per server; the figures mean nothing.
    #[must_use]
    pub fn smoke() -> Self {
        Self {
            honest_clients: 4,
            unloaded_rounds: 1,
            flooded_rounds: 2,
            round: Duration::from_millis(400),
            ramp: Duration::from_millis(200),
            max_connections: 20_000,
            timeout: Duration::from_secs(5),
        }
    }
}

/// Honest handshakes of one phase.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Honest {
    /// Handshakes tried.
    pub attempts: usize,
    /// Latencies of the successful ones, µs, sorted.
    pub ok_us: Vec<u64>,
    /// The failures, as `source: error`.
    pub failures: Vec<String>,
}

impl Honest {
    /// Share of the attempts that succeeded.
    #[must_use]
    pub fn success_rate(&self) -> f64 {
        self.ok_us.len() as f64 / self.attempts.max(1) as f64
    }

    /// Quantile `q` of the successful handshakes' latencies, µs (nearest rank).
    #[must_use]
    pub fn quantile_us(&self, q: f64) -> Option<u64> {
        let rank = ((self.ok_us.len() as f64 * q).ceil() as usize).max(1);
        self.ok_us.get(rank - 1).copied()
    }
}

/// The flood against one server.
#[derive(Debug, Clone, Serialize)]
pub struct FloodRun {
    /// `authtime` or `chronyd`.
    pub server: &'static str,
    /// Its per-client limit, as configured.
    pub limit: String,
    /// Honest handshakes without the flood.
    pub unloaded: Honest,
    /// Honest handshakes under the flood.
    pub flooded: Honest,
    /// How long the flood ran, s.
    pub flood_s: f64,
    /// Connections the flooder opened (or tried to).
    pub flood_connections: u64,
    /// Full handshakes the flooder completed.
    pub flood_handshakes: u64,
    /// Sessions the server refused as rate limited or over the per-source
    /// connection count during the run, from its metrics (authtime only).
    pub refused_by_server: Option<(u64, u64)>,
}

/// Measures the flood against `server`.
///
/// # Errors
/// When the client cannot be made, a runtime cannot start or the server dies.
pub fn measure(
    server: &mut NtsServer,
    limit: &str,
    certs: &Certificates,
    plan: &FloodPlan,
) -> Result<FloodRun, String> {
    server.check_alive()?;
    let client = Arc::new(KeClient::new(Some(&certs.ca)).map_err(|e| e.to_string())?);
    let before = server.metrics.and_then(|m| scrape(m).ok());
    // The flood runs on a runtime of its own, so that the honest clients'
    // latencies do not include waiting behind flood tasks in one scheduler.
    let honest_rt = runtime()?;
    let flood_rt = runtime()?;
    let unloaded = honest_rt.block_on(honest_rounds(
        &client,
        server.ke,
        0,
        plan.unloaded_rounds,
        plan,
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(FloodCounts::default());
    let flood_started = Instant::now();
    let flooding = flood_rt.spawn(flood(
        Arc::clone(&client),
        server.ke,
        Arc::clone(&stop),
        Arc::clone(&counts),
        plan.max_connections,
    ));
    std::thread::sleep(plan.ramp);
    let flooded = honest_rt.block_on(honest_rounds(
        &client,
        server.ke,
        1,
        plan.flooded_rounds,
        plan,
    ));
    stop.store(true, Ordering::Relaxed);
    let flood_s = flood_started.elapsed().as_secs_f64();
    // Dropping the flood's tasks closes their connections now, rather than
    // after their timeouts.
    flooding.abort();
    flood_rt.shutdown_background();
    server.check_alive()?;
    let after = server.metrics.and_then(|m| scrape(m).ok());
    let refused_by_server = before.zip(after).map(|(b, a)| {
        let delta = |outcome| sessions(&a, outcome).saturating_sub(sessions(&b, outcome));
        (delta("rate_limited"), delta("too_many_from_source"))
    });
    Ok(FloodRun {
        server: server.name,
        limit: limit.into(),
        unloaded,
        flooded,
        flood_s,
        flood_connections: counts
            .connections
            .load(Ordering::Relaxed)
            .min(plan.max_connections),
        flood_handshakes: counts.handshakes.load(Ordering::Relaxed),
        refused_by_server,
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))
}

/// A counter of authtime's `authtime_ntske_sessions_total`, 0 when absent.
fn sessions(metrics: &str, outcome: &str) -> u64 {
    let name = format!("authtime_ntske_sessions_total{{outcome=\"{outcome}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&name))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// `rounds` handshakes from each honest address of `phase` (127.0.`phase`.2
/// and up), one a round, spread over the round so that the clients do not
/// all start together.
async fn honest_rounds(
    client: &Arc<KeClient>,
    server: SocketAddr,
    phase: u8,
    rounds: u32,
    plan: &FloodPlan,
) -> Honest {
    let mut tasks = tokio::task::JoinSet::new();
    let n = plan.honest_clients;
    for i in 0..n {
        let client = Arc::clone(client);
        let source = IpAddr::V4(Ipv4Addr::new(127, 0, phase, 2 + i));
        let (round, timeout) = (plan.round, plan.timeout);
        let offset = round * u32::from(i) / u32::from(n.max(1));
        tasks.spawn(async move {
            let start = tokio::time::Instant::now() + offset;
            let mut out = Honest::default();
            for r in 0..rounds {
                tokio::time::sleep_until(start + round * r).await;
                let began = Instant::now();
                out.attempts += 1;
                match client.fetch_from(source, server, TLS_NAME, timeout).await {
                    Ok(_) => out.ok_us.push(began.elapsed().as_micros() as u64),
                    Err(e) => out.failures.push(format!("{source}: {e}")),
                }
            }
            out
        });
    }
    let mut all = Honest::default();
    while let Some(done) = tasks.join_next().await {
        if let Ok(done) = done {
            all.attempts += done.attempts;
            all.ok_us.extend(done.ok_us);
            all.failures.extend(done.failures);
        }
    }
    all.ok_us.sort_unstable();
    all
}

#[derive(Default)]
struct FloodCounts {
    connections: AtomicU64,
    handshakes: AtomicU64,
}

/// The flood from 127.0.0.1 until `stop` or `max` connections: holders
/// first, then full NTS-KE clients reconnecting as fast as they can.
async fn flood(
    client: Arc<KeClient>,
    server: SocketAddr,
    stop: Arc<AtomicBool>,
    counts: Arc<FloodCounts>,
    max: u64,
) {
    let running = {
        let counts = Arc::clone(&counts);
        move || {
            !stop.load(Ordering::Relaxed)
                && counts.connections.fetch_add(1, Ordering::Relaxed) < max
        }
    };
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..FLOOD_HOLDERS {
        let running = running.clone();
        tasks.spawn(async move {
            while running() {
                let connect = async {
                    let socket = tokio::net::TcpSocket::new_v4()?;
                    socket.bind(SocketAddr::new(IpAddr::V4(FLOOD_SOURCE), 0))?;
                    socket.connect(server).await
                };
                if let Ok(Ok(mut stream)) =
                    tokio::time::timeout(Duration::from_secs(1), connect).await
                {
                    let mut buf = [0u8; 64];
                    let _ = tokio::time::timeout(
                        Duration::from_secs(2),
                        tokio::io::AsyncReadExt::read(&mut stream, &mut buf),
                    )
                    .await;
                }
            }
        });
    }
    for _ in 0..FLOOD_CLIENTS {
        let (running, client, counts) = (running.clone(), Arc::clone(&client), Arc::clone(&counts));
        tasks.spawn(async move {
            while running() {
                let source = IpAddr::V4(FLOOD_SOURCE);
                if client
                    .fetch_from(source, server, TLS_NAME, Duration::from_secs(2))
                    .await
                    .is_ok()
                {
                    counts.handshakes.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

fn us(v: Option<u64>) -> String {
    v.map_or("–".into(), |v| format!("{:.1} ms", v as f64 / 1000.0))
}

/// The report's table: one row per server.
#[must_use]
pub fn table(runs: &[FloodRun], plan: &FloodPlan) -> Table {
    let mut t = Table::new(
        "NTS-KE under a reconnect flood (issue 19)",
        &[
            "server",
            "per-client limit",
            "honest ok unloaded",
            "honest ok flooded",
            "p50 unloaded",
            "p50 flooded",
            "p99 unloaded",
            "p99 flooded",
            "flood connections",
            "flood handshakes",
            "refused (rate / per-source cap)",
        ],
    );
    for r in runs {
        let ok = |h: &Honest| {
            format!(
                "{}/{} ({:.1}%)",
                h.ok_us.len(),
                h.attempts,
                100.0 * h.success_rate()
            )
        };
        t.row(vec![
            r.server.into(),
            r.limit.clone(),
            ok(&r.unloaded),
            ok(&r.flooded),
            us(r.unloaded.quantile_us(0.5)),
            us(r.flooded.quantile_us(0.5)),
            us(r.unloaded.quantile_us(0.99)),
            us(r.flooded.quantile_us(0.99)),
            format!(
                "{} in {:.1} s ({:.0}/s)",
                r.flood_connections,
                r.flood_s,
                r.flood_connections as f64 / r.flood_s.max(1e-9)
            ),
            r.flood_handshakes.to_string(),
            r.refused_by_server
                .map_or("no metrics".into(), |(rate, cap)| format!("{rate} / {cap}")),
        ]);
    }
    let mut note = String::new();
    let _ = write!(
        note,
        "Method: {} honest clients, each from its own loopback address, do one full NTS-KE handshake (TLS 1.3, no resumption, \
         timeout {:.0} s) every {:.1} s: {} round(s) unloaded from 127.0.0.2 and up, then {} round(s) under the flood from 127.0.1.2 and up \
         (fresh addresses, so chronyd's per-address bucket is full at the start). \
         The flood, from 127.0.0.1 only, starts {:.1} s before the flooded rounds and stops with them, its connections dropped (or after {} connections): \
         {FLOOD_HOLDERS} connections that send nothing until the server closes them (or 2 s) and {FLOOD_CLIENTS} full NTS-KE clients reconnecting at once (timeout 2 s), \
         on a one-thread tokio runtime of its own; the honest clients on another. Latencies are client-side, connect to last record, \
         percentiles by nearest rank over the successful handshakes. authtime: default `client-limit` (0.2 handshakes/s, burst 16, 8 open connections per address); \
         its refusals are the differences of `authtime_ntske_sessions_total{{outcome=rate_limited|too_many_from_source}}` over the run. \
         chronyd: `ntsratelimit {CHRONYD_NTSRATELIMIT}` (1 connection per 64 s, bursts of 8, default leak 2: on average at least every fourth connection over the limit is still served, per chrony.conf(5)), \
         which closes a limited connection right after accept; it exports no such counters. Both with 1 NTS-KE worker/helper and 512 connections, on the same CPU as the section's other measurements.",
        plan.honest_clients,
        plan.timeout.as_secs_f64(),
        plan.round.as_secs_f64(),
        plan.unloaded_rounds,
        plan.flooded_rounds,
        plan.ramp.as_secs_f64(),
        plan.max_connections,
    );
    t.note = note;
    t
}
