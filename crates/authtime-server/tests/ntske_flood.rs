//! NTS-KE under a reconnect flood, against the real server with the daemon's
//! default per-client limits (issue 19, part 3).
//!
//! One address, 127.0.0.1, opens connections as fast as it can: a dozen
//! that connect and say nothing (they hold their slots until the handshake
//! timeout) and many full NTS-KE clients that reconnect at once. Sixteen
//! honest clients, each from an address of its own (127.0.0.2 to
//! 127.0.0.17), do one handshake a second: first without the flood, then
//! under it. At least 99% of the honest handshakes under the flood succeed;
//! their p99 latency is printed beside the unloaded one; the flood shows in
//! the metrics endpoint as rate_limited and too_many_from_source sessions,
//! and the flooder gets no more handshakes than its bucket allows.
//!
//! Bounded: the flood stops with the honest rounds (about 10 s) or after
//! 300 000 connections, whichever comes first; every client call has a
//! timeout. Loopback only.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use authtime_ntske::{ClientLimitConfig, KeClient};
use authtime_server::ConfigFile;

const HONEST_CLIENTS: u8 = 16;
const UNLOADED_ROUNDS: u32 = 4;
const FLOODED_ROUNDS: u32 = 10;
const ROUND: Duration = Duration::from_secs(1);
const HONEST_TIMEOUT: Duration = Duration::from_secs(10);
const FLOOD_CLIENTS: usize = 24;
const FLOOD_HOLDERS: usize = 12;
const FLOOD_MAX_CONNECTIONS: u64 = 300_000;
const TLS_NAME: &str = "localhost";

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("authtime-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("temp dir");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A self-signed certificate for `localhost`; returns the trust file.
fn write_certificate(dir: &Path) -> PathBuf {
    let key = rcgen::KeyPair::generate().expect("key");
    let params =
        rcgen::CertificateParams::new(vec![TLS_NAME.to_owned()]).expect("certificate params");
    let cert = params.self_signed(&key).expect("certificate");
    std::fs::write(dir.join("nts-chain.pem"), cert.pem()).expect("chain");
    std::fs::write(dir.join("nts-key.pem"), key.serialize_pem()).expect("key");
    let trust = dir.join("nts-ca.pem");
    std::fs::write(&trust, cert.pem()).expect("trust");
    trust
}

/// The server with the default limits, or with `client-limit = false`.
fn start_server(dir: &Path, client_limit: bool) -> authtime_server::Running {
    // Only the addresses, the files and the thread count are set: the
    // limits are the defaults an operator gets.
    let text = format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n\
         [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"nts-chain.pem\"\n\
         private-key = \"nts-key.pem\"\nworkers = 2\n{}\
         [keystore]\npath = \"master-keys\"\n\
         [metrics]\nlisten = \"127.0.0.1:0\"\n",
        if client_limit {
            ""
        } else {
            "client-limit = false\n"
        }
    );
    let settings = ConfigFile::parse(&text)
        .expect("parses")
        .validate(Some(dir))
        .unwrap_or_else(|problems| panic!("{problems:?}"));
    let limits = settings
        .nts
        .as_ref()
        .and_then(|nts| nts.ke.as_ref())
        .and_then(|ke| ke.client_limits);
    assert_eq!(limits, client_limit.then(ClientLimitConfig::default));
    authtime_server::start(&settings).expect("server starts")
}

/// One scrape of the metrics endpoint.
fn scrape(addr: SocketAddr) -> String {
    let mut stream = std::net::TcpStream::connect(addr).expect("metrics endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .expect("request");
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    text
}

fn sessions(metrics: &str, outcome: &str) -> u64 {
    let name = format!("authtime_ntske_sessions_total{{outcome=\"{outcome}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&name))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the metrics:\n{metrics}"))
}

/// Results of the honest clients: latencies of the successes, and failures.
#[derive(Default)]
struct Honest {
    latencies: Vec<Duration>,
    failures: Vec<String>,
}

impl Honest {
    fn attempts(&self) -> usize {
        self.latencies.len() + self.failures.len()
    }

    fn success_rate(&self) -> f64 {
        self.latencies.len() as f64 / self.attempts().max(1) as f64
    }

    fn p99(&self) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let rank = (sorted.len() * 99).div_ceil(100).max(1);
        sorted.get(rank - 1).copied().unwrap_or_default()
    }

    fn p50(&self) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        sorted.get(sorted.len() / 2).copied().unwrap_or_default()
    }
}

/// `rounds` handshakes from each honest address, one a second, spread over
/// the second so that the clients do not all start together.
async fn honest_rounds(client: Arc<KeClient>, server: SocketAddr, rounds: u32) -> Honest {
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..HONEST_CLIENTS {
        let client = Arc::clone(&client);
        let source = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + i));
        let offset = ROUND * u32::from(i) / u32::from(HONEST_CLIENTS);
        tasks.spawn(async move {
            let start = tokio::time::Instant::now() + offset;
            let mut out = Honest::default();
            for round in 0..rounds {
                tokio::time::sleep_until(start + ROUND * round).await;
                let began = Instant::now();
                match client
                    .fetch_from(source, server, TLS_NAME, HONEST_TIMEOUT)
                    .await
                {
                    Ok(_) => out.latencies.push(began.elapsed()),
                    Err(e) => out.failures.push(format!("{source}: {e}")),
                }
            }
            out
        });
    }
    let mut all = Honest::default();
    while let Some(done) = tasks.join_next().await {
        let done = done.expect("honest client task");
        all.latencies.extend(done.latencies);
        all.failures.extend(done.failures);
    }
    all
}

#[derive(Default)]
struct FloodCounts {
    connections: AtomicU64,
    handshakes_ok: AtomicU64,
}

/// The flood from 127.0.0.1 until `stop` or the connection bound: holders
/// first (so that some hold their slots while the bucket still has tokens),
/// then full NTS-KE clients reconnecting as fast as they can.
async fn flood(
    client: Arc<KeClient>,
    server: SocketAddr,
    stop: Arc<AtomicBool>,
    counts: Arc<FloodCounts>,
) {
    let running = {
        let stop = Arc::clone(&stop);
        let counts = Arc::clone(&counts);
        move || {
            !stop.load(Ordering::Relaxed)
                && counts.connections.fetch_add(1, Ordering::Relaxed) < FLOOD_MAX_CONNECTIONS
        }
    };
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..FLOOD_HOLDERS {
        let running = running.clone();
        tasks.spawn(async move {
            while running() {
                // Connect, send nothing, wait for the server to close.
                if let Ok(Ok(mut stream)) =
                    tokio::time::timeout(ROUND, tokio::net::TcpStream::connect(server)).await
                {
                    let mut buf = [0u8; 64];
                    let _ = tokio::time::timeout(
                        Duration::from_secs(5),
                        tokio::io::AsyncReadExt::read(&mut stream, &mut buf),
                    )
                    .await;
                }
            }
        });
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..FLOOD_CLIENTS {
        let (running, client, counts) = (running.clone(), Arc::clone(&client), Arc::clone(&counts));
        tasks.spawn(async move {
            while running() {
                if client
                    .fetch_at(server, TLS_NAME, Duration::from_secs(5))
                    .await
                    .is_ok()
                {
                    counts.handshakes_ok.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

fn runtime(threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("runtime")
}

/// What one run measured.
struct FloodRun {
    unloaded: Honest,
    flooded: Honest,
    flood_seconds: f64,
    flood_connections: u64,
    flood_ok: u64,
    metrics: String,
}

fn run_flood(name: &str, client_limit: bool) -> FloodRun {
    let dir = TempDir::new(name);
    let trust = write_certificate(&dir.0);
    let running = start_server(&dir.0, client_limit);
    let ke = running.nts_ke_addrs()[0];
    let metrics_addr = running.metrics_addr().expect("metrics endpoint");
    let client = Arc::new(KeClient::new(Some(&trust)).expect("client"));

    // The flood runs on a runtime of its own, so that the honest clients'
    // latencies do not include waiting behind flood tasks in one scheduler.
    let honest_rt = runtime(1);
    let unloaded = honest_rt.block_on(honest_rounds(Arc::clone(&client), ke, UNLOADED_ROUNDS));

    let flood_rt = runtime(1);
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(FloodCounts::default());
    let flood_started = Instant::now();
    let flooding = flood_rt.spawn(flood(
        Arc::clone(&client),
        ke,
        Arc::clone(&stop),
        Arc::clone(&counts),
    ));
    // Let the flood reach full speed first.
    std::thread::sleep(Duration::from_millis(500));
    let flooded = honest_rt.block_on(honest_rounds(Arc::clone(&client), ke, FLOODED_ROUNDS));
    stop.store(true, Ordering::Relaxed);
    flood_rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(20), flooding).await })
        .expect("the flood stops within its client timeouts")
        .expect("flood task");
    let run = FloodRun {
        unloaded,
        flooded,
        flood_seconds: flood_started.elapsed().as_secs_f64(),
        flood_connections: counts
            .connections
            .load(Ordering::Relaxed)
            .min(FLOOD_MAX_CONNECTIONS),
        flood_ok: counts.handshakes_ok.load(Ordering::Relaxed),
        metrics: scrape(metrics_addr),
    };
    running.shutdown();
    run.print(name);
    run
}

impl FloodRun {
    fn print(&self, name: &str) {
        let (unloaded, flooded, text) = (&self.unloaded, &self.flooded, &self.metrics);
        eprintln!(
            "{name}: unloaded: {}/{} honest handshakes, p50 {:?}, p99 {:?}",
            unloaded.latencies.len(),
            unloaded.attempts(),
            unloaded.p50(),
            unloaded.p99()
        );
        eprintln!(
            "{name}: flooded: {}/{} honest handshakes ({:.2}%), p50 {:?}, p99 {:?}",
            flooded.latencies.len(),
            flooded.attempts(),
            100.0 * flooded.success_rate(),
            flooded.p50(),
            flooded.p99()
        );
        eprintln!(
            "{name}: flood from 127.0.0.1: {} connections in {:.1} s ({:.0}/s), {} handshakes \
             completed; server: rate_limited {}, too_many_from_source {}, refused_at_cap {}, \
             timeout {}, ok {}",
            self.flood_connections,
            self.flood_seconds,
            self.flood_connections as f64 / self.flood_seconds,
            self.flood_ok,
            sessions(text, "rate_limited"),
            sessions(text, "too_many_from_source"),
            sessions(text, "refused_at_cap"),
            sessions(text, "timeout"),
            sessions(text, "ok"),
        );
        if !flooded.failures.is_empty() {
            eprintln!(
                "{name}: honest failures under the flood: {:?}",
                flooded.failures
            );
        }
    }
}

#[test]
fn honest_clients_get_their_handshakes_through_a_reconnect_flood() {
    let run = run_flood("ntske-flood", true);
    let text = &run.metrics;
    let (rate_limited, too_many, at_cap) = (
        sessions(text, "rate_limited"),
        sessions(text, "too_many_from_source"),
        sessions(text, "refused_at_cap"),
    );
    assert!(
        run.unloaded.success_rate() >= 0.99,
        "unloaded failures: {:?}",
        run.unloaded.failures
    );
    assert!(
        run.flooded.success_rate() >= 0.99,
        "honest failures under the flood: {:?}",
        run.flooded.failures
    );
    assert!(rate_limited > 0, "no rate_limited session:\n{text}");
    assert!(too_many > 0, "no too_many_from_source session:\n{text}");
    assert_eq!(at_cap, 0, "one source reached the global cap");
    // The flooder's handshakes are bounded by its bucket: the burst plus the
    // rate over the flood's duration (holders spend tokens too).
    let limits = ClientLimitConfig::default();
    let allowed = limits.burst + limits.rate * run.flood_seconds + 1.0;
    assert!(
        (run.flood_ok as f64) <= allowed,
        "the flooder completed {} handshakes, its bucket allows {allowed:.0}",
        run.flood_ok
    );
}

/// The same flood with `client-limit = false`, for the comparison in
/// docs/nts.md: `cargo test -p authtime-server --test ntske_flood --
/// --ignored --nocapture`. It asserts nothing about the honest clients.
#[test]
#[ignore = "a measurement for the docs, not a check"]
fn the_same_flood_without_client_limits() {
    let run = run_flood("ntske-flood-unlimited", false);
    assert_eq!(sessions(&run.metrics, "rate_limited"), 0);
}
