//! Section `roughtime` (issue 21, part 5): what a Roughtime response costs
//! authtime by batch size, and how many responses per second one core
//! serves, against roughenough 2.2's server in the same run.
//!
//! 1. **Cost by batch size**, in process: `respond_batch` on batches of 1 to
//!    64 valid 1024-byte requests, each version alone; CPU time of the
//!    measuring thread per response, median of several runs, and its ratio
//!    to a batch of one. One Ed25519 signature per batch is the point.
//!    Beside it, the Merkle leaves of a batch of 64 alone ([`leaf_costs`]):
//!    `sha2` one request at a time against `sha512_many`'s SIMD lanes.
//! 2. **Responses per second per core**: each server pinned to CPU 0, the
//!    load generator ([`crate::load_roughtime`]) on CPU 1, the servers
//!    measured in alternating rounds (the order swaps every round); per
//!    round the responses per wall-clock second and per server CPU-second,
//!    and the ratio authtime ÷ roughenough; medians of the rounds.
//!
//! authtime's side is the daemon (`authtime serve` with a `[roughtime]`
//! section) when this build's `authtime` accepts one; otherwise the lab's
//! own loop over the same core ([`crate::roughtime_lab_server`]), and the
//! report says so.

use std::{
    fs,
    net::{SocketAddr, UdpSocket},
    path::{Path, PathBuf},
    process::{Child, Command},
    time::{Duration, Instant},
};

use authtime_mac::{Isa, sha512_many_with_isa};
use authtime_roughtime::{BatchTime, OnlineKey, SigningKey, Version, merkle, respond_batch};

use crate::{
    Progress,
    cpu_time::thread_cpu_time,
    load_roughtime::{self, RoughtimeLoadOptions, RoughtimeLoadReport},
    report::Section,
    roughtime_lab_server::LabServer,
    section_nts_server::{
        Scratch, free_tcp_port, free_udp_port, log_tail, parse_histogram, process_cpu, scrape,
        spawn_pinned,
    },
    stats::median,
};

/// Batch sizes measured in process.
pub const BATCH_SIZES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// The servers' CPU and the generator's.
const SERVER_CPU: usize = 0;
const LOAD_CPU: usize = 1;
/// How long a server may take to answer its first request.
const START_LIMIT: Duration = Duration::from_secs(15);

/// How much to measure.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Runs per batch size (the median is kept).
    pub batch_runs: usize,
    /// CPU time of one run.
    pub batch_run_time: Duration,
    /// Rounds per server in the comparison.
    pub rounds: usize,
    /// Sending time of one round.
    pub round_time: Duration,
    /// Most requests of one round.
    pub round_requests: u64,
    /// Requests outstanding.
    pub window: usize,
    /// Verify every n-th response.
    pub verify_every: u64,
}

impl Plan {
    /// A full run: 7 runs of 300 ms per batch size, 7 rounds of 3 s per server.
    #[must_use]
    pub fn full() -> Self {
        Self {
            batch_runs: 7,
            batch_run_time: Duration::from_millis(300),
            rounds: 7,
            round_time: Duration::from_secs(3),
            round_requests: 5_000_000,
            window: 64,
            verify_every: 512,
        }
    }

    /// `--quick`: 5 runs of 50 ms, 3 rounds of 1 s.
    #[must_use]
    pub fn quick() -> Self {
        Self {
            batch_runs: 5,
            batch_run_time: Duration::from_millis(50),
            rounds: 3,
            round_time: Duration::from_secs(1),
            round_requests: 2_000_000,
            window: 64,
            verify_every: 256,
        }
    }

    /// The tests' plan: tiny counts, every fourth response verified.
    #[must_use]
    pub fn smoke() -> Self {
        Self {
            batch_runs: 3,
            batch_run_time: Duration::from_millis(5),
            rounds: 2,
            round_time: Duration::from_millis(300),
            round_requests: 400,
            window: 16,
            verify_every: 4,
        }
    }
}

/// One batch size of one version.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BatchCost {
    /// Wire version.
    pub version: u32,
    /// Requests per batch.
    pub batch: usize,
    /// Median CPU microseconds per response.
    pub us_per_response: f64,
    /// Every run's figure.
    pub runs: Vec<f64>,
    /// Median ÷ the batch of one's median.
    pub ratio_to_1: f64,
}

/// Measures `respond_batch` for every batch size and both versions.
///
/// # Errors
/// When a batch cannot be built or answered, or its answers do not verify.
pub fn batch_costs(plan: &Plan) -> Result<Vec<BatchCost>, String> {
    let long_term = SigningKey::from_bytes(&[0x11; 32]);
    let public = long_term.verifying_key().to_bytes();
    let now = 1_764_000_000;
    let key = OnlineKey::delegate(&long_term, SigningKey::from_bytes(&[0x22; 32]), 0, u64::MAX)
        .map_err(|e| e.to_string())?;
    let srv = authtime_roughtime::request::srv_value(&public);
    let time = BatchTime {
        midpoint: now,
        radius: 1,
    };
    let mut out = Vec::new();
    for version in [Version::Rfc1, Version::Draft12] {
        let pool = load_roughtime::request_pool(64, &[version], &public)?;
        let mut base = None;
        for &n in &BATCH_SIZES {
            let batch: Vec<&[u8]> = pool[..n].iter().map(Vec::as_slice).collect();
            // Once, checked: every answer is a response that verifies.
            let answers = respond_batch(&batch, time, &key, &srv).map_err(|e| e.to_string())?;
            for (request, answer) in batch.iter().zip(&answers) {
                let response = answer.as_ref().map_err(|e| e.to_string())?;
                authtime_roughtime::verify_response(request, response, &public)
                    .map_err(|e| format!("batch of {n}: {e}"))?;
            }
            let mut runs = Vec::with_capacity(plan.batch_runs);
            for _ in 0..plan.batch_runs {
                let start = thread_cpu_time();
                let mut responses = 0usize;
                while thread_cpu_time() - start < plan.batch_run_time {
                    let answers = respond_batch(std::hint::black_box(&batch), time, &key, &srv)
                        .map_err(|e| e.to_string())?;
                    responses += answers.len();
                }
                let cpu = (thread_cpu_time() - start).as_secs_f64();
                runs.push(cpu * 1e6 / responses as f64);
            }
            let us = median(&mut runs.clone()).unwrap_or(f64::NAN);
            let one = *base.get_or_insert(us);
            out.push(BatchCost {
                version: version.wire(),
                batch: n,
                us_per_response: us,
                runs,
                ratio_to_1: us / one,
            });
        }
    }
    Ok(out)
}

/// The Merkle leaves of one batch, hashed one way.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LeafCost {
    /// How: one at a time with `sha2`, or `sha512_many` under an ISA.
    pub kernel: String,
    /// Median CPU microseconds per request (per leaf).
    pub us_per_request: f64,
    /// Every run's figure.
    pub runs: Vec<f64>,
    /// Median ÷ the one-at-a-time median.
    pub ratio_to_one_at_a_time: f64,
}

/// Requests per batch in [`leaf_costs`]: the Roughtime worker's largest batch.
pub const LEAF_BATCH: usize = 64;

/// Measures the SHA-512 Merkle leaves (H(0x00 || request)) of a batch of
/// [`LEAF_BATCH`] 1036-byte requests: one at a time with `sha2` (the
/// server core's path before issue 27) and in lanes with
/// `authtime_mac::sha512_many` under each ISA the CPU allows.
///
/// # Errors
/// When the request pool cannot be built or a kernel disagrees with `sha2`.
pub fn leaf_costs(plan: &Plan) -> Result<Vec<LeafCost>, String> {
    let public = SigningKey::from_bytes(&[0x11; 32])
        .verifying_key()
        .to_bytes();
    let pool = load_roughtime::request_pool(LEAF_BATCH, &[Version::Rfc1], &public)?;
    let batch: Vec<&[u8]> = pool.iter().map(Vec::as_slice).collect();
    let one_at_a_time: Vec<[u8; 32]> = batch.iter().map(|p| merkle::leaf_hash(p)).collect();
    let detected = Isa::current();
    let mut kernels: Vec<(String, Option<Isa>)> =
        vec![("sha2, one request at a time".into(), None)];
    kernels.push((
        format!("sha512_many ({})", detected.describe()),
        Some(detected),
    ));
    if detected.avx512 && detected.avx2 {
        let avx2 = detected.restricted("no-avx512")?;
        kernels.push((format!("sha512_many ({})", avx2.describe()), Some(avx2)));
    }
    let mut out = Vec::new();
    let mut digests = vec![[0u8; 64]; batch.len()];
    for (name, isa) in kernels {
        if let Some(isa) = isa {
            sha512_many_with_isa(&[0x00], &batch, &mut digests, isa);
            if digests
                .iter()
                .zip(&one_at_a_time)
                .any(|(d, o)| d[..32] != o[..])
            {
                return Err(format!("{name} disagrees with sha2"));
            }
        }
        let mut runs = Vec::with_capacity(plan.batch_runs);
        for _ in 0..plan.batch_runs {
            let start = thread_cpu_time();
            let mut leaves = 0usize;
            while thread_cpu_time() - start < plan.batch_run_time {
                let batch = std::hint::black_box(&batch);
                match isa {
                    None => {
                        for p in batch {
                            std::hint::black_box(merkle::leaf_hash(p));
                        }
                    }
                    Some(isa) => {
                        sha512_many_with_isa(&[0x00], batch, &mut digests, isa);
                        std::hint::black_box(&digests);
                    }
                }
                leaves += batch.len();
            }
            let cpu = (thread_cpu_time() - start).as_secs_f64();
            runs.push(cpu * 1e6 / leaves as f64);
        }
        let us = median(&mut runs.clone()).unwrap_or(f64::NAN);
        let base = out.first().map_or(us, |b: &LeafCost| b.us_per_request);
        out.push(LeafCost {
            kernel: name,
            us_per_request: us,
            runs,
            ratio_to_one_at_a_time: us / base,
        });
    }
    Ok(out)
}

/// An Ed25519 signer under test: message in, signature out.
type Sign<'a> = dyn Fn(&[u8]) -> [u8; 64] + 'a;

/// One Ed25519 signer's cost for a batch's signature.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SignerCost {
    /// The crate.
    pub signer: String,
    /// Median CPU microseconds per signature.
    pub us_per_signature: f64,
    /// Every run's figure.
    pub runs: Vec<f64>,
}

/// Measures one Ed25519 signature over what a batch signs (version 1's
/// context string and a 5-tag SREP, 156 bytes) with ed25519-dalek (the
/// server core's signer) and with aws-lc-rs (linked through rustls), after
/// checking that both give the same signature (Ed25519 is deterministic).
///
/// # Errors
/// When aws-lc-rs refuses the seed or the signatures differ.
pub fn signer_costs(plan: &Plan) -> Result<Vec<SignerCost>, String> {
    use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
    use ed25519_dalek::Signer as _;
    let seed = [0x22u8; 32];
    let dalek = SigningKey::from_bytes(&seed);
    let aws = Ed25519KeyPair::from_seed_unchecked(&seed).map_err(|e| e.to_string())?;
    if aws.public_key().as_ref() != dalek.verifying_key().as_bytes() {
        return Err("aws-lc-rs derives another public key".into());
    }
    let mut message = b"RoughTime v1 response signature\0".to_vec();
    message.resize(156, 0x5a);
    if aws.sign(&message).as_ref() != dalek.sign(&message).to_bytes() {
        return Err("aws-lc-rs and ed25519-dalek sign differently".into());
    }
    let signers: [(&str, &Sign<'_>); 2] = [
        ("ed25519-dalek", &|m| dalek.sign(m).to_bytes()),
        ("aws-lc-rs", &|m| {
            let mut out = [0u8; 64];
            out.copy_from_slice(aws.sign(m).as_ref());
            out
        }),
    ];
    let mut out = Vec::new();
    for (name, sign) in signers {
        let mut runs = Vec::with_capacity(plan.batch_runs);
        for _ in 0..plan.batch_runs {
            let start = thread_cpu_time();
            let mut count = 0usize;
            while thread_cpu_time() - start < plan.batch_run_time {
                std::hint::black_box(sign(std::hint::black_box(&message)));
                count += 1;
            }
            runs.push((thread_cpu_time() - start).as_secs_f64() * 1e6 / count as f64);
        }
        out.push(SignerCost {
            signer: name.into(),
            us_per_signature: median(&mut runs.clone()).unwrap_or(f64::NAN),
            runs,
        });
    }
    Ok(out)
}

/// Where roughenough 2.2's server is: `scripts/ensure-roughenough.sh` builds it.
#[must_use]
pub fn roughenough_server() -> Option<PathBuf> {
    let cache = std::env::var_os("AUTHTIME_PEER_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/authtime-peers"))
        })?;
    let bin = cache.join("roughenough-2.2/bin/roughenough_server");
    bin.is_file().then_some(bin)
}

/// A server under load: a child process, or the lab's own thread.
enum Server {
    Process {
        child: Child,
        log: PathBuf,
        name: &'static str,
    },
    Lab(LabServer),
}

impl Server {
    fn cpu_seconds(&self) -> Option<f64> {
        match self {
            Self::Process { child, .. } => process_cpu(child.id()),
            Self::Lab(lab) => Some(lab.cpu_seconds()),
        }
    }

    fn check_alive(&mut self) -> Result<(), String> {
        match self {
            Self::Process { child, log, name } => match child.try_wait() {
                Ok(None) => Ok(()),
                Ok(Some(status)) => Err(format!("{name} exited ({status}): {}", log_tail(log))),
                Err(e) => Err(format!("{name}: {e}")),
            },
            Self::Lab(_) => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Self::Process { child, .. } = self {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// A server the comparison runs against.
struct Target {
    name: &'static str,
    what: String,
    server: Server,
    addr: SocketAddr,
    public_key: [u8; 32],
    pinned: bool,
    /// authtime's Prometheus endpoint (the daemon only).
    metrics: Option<SocketAddr>,
}

/// Writes `text` to a new file of mode 0600.
fn write_secret(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn fresh_seed() -> Result<[u8; 32], String> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| format!("no randomness: {e}"))?;
    Ok(seed)
}

/// roughenough 2.2 on 127.0.0.1 (a free port; it binds with `SO_REUSEPORT`,
/// so the port must be one nobody uses), one worker, quiet, pinned.
fn start_roughenough(bin: &Path, dir: &Scratch) -> Result<Target, String> {
    let seed = fresh_seed()?;
    let seed_file = dir.path("roughenough-seed.hex");
    write_secret(&seed_file, &format!("{}\n", hex(&seed)))?;
    let port = free_udp_port()?;
    let mut command = Command::new(bin);
    command
        .args(["-i", "127.0.0.1", "-p", &port.to_string(), "-j", "1", "-q"])
        .arg("--seed-file")
        .arg(&seed_file)
        .env("NO_COLOR", "1");
    let log = dir.path("roughenough.log");
    let (child, pinned) = spawn_pinned(command, Some(SERVER_CPU), &log, "roughenough_server")?;
    // Both roughenough and ed25519-dalek derive the key pair from the seed as RFC 8032 does.
    let public_key = SigningKey::from_bytes(&seed).verifying_key().to_bytes();
    let mut target = Target {
        name: "roughenough",
        what: "roughenough 2.2 `roughenough_server -j 1` (one worker, batches of up to 64)".into(),
        server: Server::Process {
            child,
            log,
            name: "roughenough_server",
        },
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        public_key,
        pinned,
        metrics: None,
    };
    wait_ready(&mut target)?;
    Ok(target)
}

/// authtime's daemon (`authtime serve`, a `[roughtime]` section with one
/// UDP worker and no per-client limit: all the load comes from one address)
/// when this build has it.
fn start_authtime_daemon(dir: &Scratch) -> Result<Target, String> {
    let exe = crate::section_nts_server::authtime_exe()?;
    let seed = fresh_seed()?;
    let key_file = dir.path("authtime-roughtime.key");
    write_secret(&key_file, &format!("{}\n", hex(&seed)))?;
    let (ntp, rt, metrics) = (free_udp_port()?, free_udp_port()?, free_tcp_port()?);
    let config = dir.path("roughtime.toml");
    fs::write(
        &config,
        format!(
            "[ntp]\nlisten = [\"127.0.0.1:{ntp}\"]\nworkers = 1\n[rate-limit]\nenabled = false\n{}\
             [roughtime]\nlisten = [\"127.0.0.1:{rt}\"]\nlong-term-key = \"{}\"\n\
             workers = 1\nrate-limit = 0\n[metrics]\nlisten = \"127.0.0.1:{metrics}\"\n",
            crate::section_ntp::LAB_CLOCK,
            key_file.display()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let check = Command::new(&exe)
        .args(["config", "check"])
        .arg(&config)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !check.status.success() {
        return Err(format!(
            "this build's authtime takes no [roughtime] section ({})",
            String::from_utf8_lossy(&check.stderr).trim()
        ));
    }
    let mut command = Command::new(&exe);
    command.arg("serve").arg("--config").arg(&config);
    let log = dir.path("authtime.log");
    let (child, pinned) = spawn_pinned(command, Some(SERVER_CPU), &log, "authtime serve")?;
    let mut target = Target {
        name: "authtime",
        what: "authtimed (`authtime serve`, one worker, `[roughtime]`)".into(),
        server: Server::Process {
            child,
            log,
            name: "authtime serve",
        },
        addr: SocketAddr::from(([127, 0, 0, 1], rt)),
        public_key: SigningKey::from_bytes(&seed).verifying_key().to_bytes(),
        pinned,
        metrics: Some(SocketAddr::from(([127, 0, 0, 1], metrics))),
    };
    wait_ready(&mut target)?;
    Ok(target)
}

/// The lab's own loop over `respond_batch`, pinned.
fn start_lab_server() -> Result<Target, String> {
    let lab = LabServer::start(Some(SERVER_CPU))?;
    let (addr, public_key) = (lab.addr, lab.public_key);
    let mut target = Target {
        name: "authtime",
        what: "authtime's Roughtime core in the lab's own UDP loop (NOT the daemon)".into(),
        server: Server::Lab(lab),
        addr,
        public_key,
        pinned: true,
        metrics: None,
    };
    wait_ready(&mut target)?;
    Ok(target)
}

/// Waits until the server answers a request with a response that verifies.
fn wait_ready(target: &mut Target) -> Result<(), String> {
    let pool = load_roughtime::request_pool(1, &[Version::Rfc1], &target.public_key)?;
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + START_LIMIT;
    let mut buf = [0u8; 2048];
    let mut last = String::from("no answer");
    while Instant::now() < deadline {
        target.server.check_alive()?;
        let _ = socket.send_to(&pool[0], target.addr);
        if let Ok((n, _)) = socket.recv_from(&mut buf) {
            match authtime_roughtime::verify_response(&pool[0], &buf[..n], &target.public_key) {
                Ok(_) => return Ok(()),
                Err(e) => last = format!("a response that does not verify: {e}"),
            }
        }
    }
    Err(format!(
        "{} did not answer within {} s ({last})",
        target.name,
        START_LIMIT.as_secs()
    ))
}

/// One round against one server.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Round {
    /// `authtime` or `roughenough`.
    pub server: &'static str,
    /// Round number.
    pub round: usize,
    /// Server CPU seconds during the round.
    pub server_cpu_s: Option<f64>,
    /// Responses per server CPU-second.
    pub per_cpu_s: Option<f64>,
    /// Requests per signed batch, mean over the round (authtime's
    /// `authtime_roughtime_batch_size` histogram; the daemon only).
    pub mean_batch: Option<f64>,
    /// Whether the generator's thread was pinned.
    pub load_pinned: bool,
    /// What the generator saw.
    pub load: RoughtimeLoadReport,
}

fn round(target: &mut Target, plan: &Plan, n: usize) -> Result<Round, String> {
    target.server.check_alive()?;
    let opts = RoughtimeLoadOptions {
        target: target.addr,
        public_key: target.public_key,
        versions: vec![Version::Draft12, Version::Rfc1],
        window: plan.window,
        duration: plan.round_time,
        max_requests: plan.round_requests,
        verify_every: plan.verify_every,
        pool: 4096,
    };
    let batches = |t: &Target| {
        let text = scrape(t.metrics?).ok()?;
        parse_histogram(&text, "authtime_roughtime_batch_size")
    };
    let batches0 = batches(target);
    let cpu0 = target.server.cpu_seconds();
    let (load, load_pinned) = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let pinned = crate::section_nts_server::pin_current(LOAD_CPU);
                (load_roughtime::run(&opts), pinned)
            })
            .join()
            .map_err(|_| "the load generator panicked".to_owned())
    })?;
    let load = load?;
    let cpu1 = target.server.cpu_seconds();
    let mean_batch = match (batches0, batches(target)) {
        (Some(a), Some(b)) => {
            let d = b.since(&a);
            (d.count > 0).then(|| d.sum / d.count as f64)
        }
        _ => None,
    };
    target.server.check_alive()?;
    let server_cpu_s = match (cpu0, cpu1) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let per_cpu_s = server_cpu_s
        .filter(|&s| s > 0.0)
        .map(|s| load.received as f64 / s);
    Ok(Round {
        server: target.name,
        round: n,
        server_cpu_s,
        per_cpu_s,
        mean_batch,
        load_pinned,
        load,
    })
}

/// Everything the section measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Measured {
    /// In-process cost by batch size.
    pub batch: Vec<BatchCost>,
    /// The Merkle leaves of a batch, by kernel.
    pub leaves: Vec<LeafCost>,
    /// The batch's Ed25519 signature, by signer.
    pub signers: Vec<SignerCost>,
    /// What served as authtime's side.
    pub authtime_server: Option<String>,
    /// Why the daemon was not used, when it was not.
    pub daemon_note: Option<String>,
    /// Rounds, in the order run.
    pub rounds: Vec<Round>,
    /// Why the comparison did not run, when it did not.
    pub comparison_error: Option<String>,
    /// Whether both servers were pinned to their CPU.
    pub servers_pinned: bool,
}

/// Runs the comparison, authtime and roughenough in alternating rounds.
fn compare(plan: &Plan, progress: &mut Progress<'_>, m: &mut Measured) -> Result<(), String> {
    let bin = roughenough_server()
        .ok_or("roughenough 2.2 not found in the peer cache: run scripts/ensure-roughenough.sh")?;
    let dir = Scratch::new()?;
    let mut authtime = match start_authtime_daemon(&dir) {
        Ok(t) => t,
        Err(e) => {
            m.daemon_note = Some(e);
            start_lab_server()?
        }
    };
    m.authtime_server = Some(authtime.what.clone());
    let mut roughenough = start_roughenough(&bin, &dir)?;
    m.servers_pinned = authtime.pinned && roughenough.pinned;
    for n in 0..plan.rounds {
        progress.step(
            &format!("roughtime: round {} of {}", n + 1, plan.rounds),
            n + 1,
            plan.rounds + 1,
        );
        let order: [&mut Target; 2] = if n % 2 == 0 {
            [&mut authtime, &mut roughenough]
        } else {
            [&mut roughenough, &mut authtime]
        };
        for target in order {
            m.rounds.push(round(target, plan, n)?);
        }
    }
    Ok(())
}

/// Measures everything in `plan`.
///
/// # Errors
/// When the in-process measurement fails (the comparison's failure is
/// recorded in the result instead).
pub fn measure(plan: &Plan, progress: &mut Progress<'_>) -> Result<Measured, String> {
    progress.step("roughtime: cost by batch size", 0, plan.rounds + 1);
    let mut m = Measured {
        batch: batch_costs(plan)?,
        leaves: leaf_costs(plan)?,
        signers: signer_costs(plan)?,
        authtime_server: None,
        daemon_note: None,
        rounds: Vec::new(),
        comparison_error: None,
        servers_pinned: false,
    };
    if let Err(e) = compare(plan, progress, &mut m) {
        m.comparison_error = Some(e);
    }
    Ok(m)
}

/// The section of `authtime-lab run --only roughtime`.
///
/// # Errors
/// As [`measure`].
pub fn run(quick: bool, progress: &mut Progress<'_>) -> Result<Section, String> {
    run_plan(if quick { Plan::quick() } else { Plan::full() }, progress)
}

/// The section under any plan (the tests use [`Plan::smoke`]).
///
/// # Errors
/// As [`measure`].
pub fn run_plan(plan: Plan, progress: &mut Progress<'_>) -> Result<Section, String> {
    let m = measure(&plan, progress)?;
    Ok(crate::section_roughtime_report::section(&plan, &m))
}
