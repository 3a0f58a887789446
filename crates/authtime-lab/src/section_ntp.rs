//! Section `ntp` (issue 4, "Speed"): the highest request rate that authtime
//! and chronyd each answer with under 0.1% loss, on this machine in the same
//! run, plain and with AES-128-CMAC keys, one core each.
//!
//! Each server runs as its own process on loopback (a temporary directory
//! holds its configuration and key file), pinned to CPU 0 when the kernel
//! allows; the open-loop load generator ([`crate::load_ntp`]) runs on CPU 1.
//! The rate is searched by a doubling ramp, then bisection between the last
//! passing and the first failing rate. Every process started here is killed
//! when its guard is dropped, on every path.

#![allow(unsafe_code, reason = "sysconf and geteuid FFI")]

use std::{
    fs,
    net::{SocketAddr, UdpSocket},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use authtime_keys::{KeyEntry, KeyFileFormat, KeyType, generate_keys, write_key_file};
use authtime_proto::{ClientConfig, build_request};
use authtime_wire::NtpTimestamp;

use crate::{
    Progress,
    load_ntp::{self, LoadOptions, LoadReport},
    plot::{Plot, Series},
    report::{Section, Table},
    scheduling::{pin, pin_process},
};

/// A trial passes below this loss.
const MAX_LOSS: f64 = 0.001;
/// The key id used for the CMAC runs.
const KEY_ID: u32 = 1;
/// The CPU the servers are pinned to, and the load generator's.
const SERVER_CPU: usize = 0;
const LOAD_CPU: usize = 1;
/// How long a server may take to answer its first request.
const START_LIMIT: Duration = Duration::from_secs(10);

/// How the rate is searched.
#[derive(Debug, Clone, Copy)]
pub struct SearchPlan {
    /// First rate of the ramp (requests per second).
    pub start: f64,
    /// Highest rate tried; the ramp doubles up to it.
    pub max: f64,
    /// Most bisection trials after the ramp.
    pub bisect_steps: usize,
    /// Bisection stops when the bracket is narrower than this fraction of its low end.
    pub resolution: f64,
}

impl SearchPlan {
    /// The plan of `--quick` (trials of 0.5 s) or of a full run (1 s).
    #[must_use]
    pub fn new(quick: bool) -> Self {
        if quick {
            Self {
                start: 10_000.0,
                max: 1_280_000.0,
                bisect_steps: 3,
                resolution: 0.05,
            }
        } else {
            Self {
                start: 5_000.0,
                max: 2_560_000.0,
                bisect_steps: 6,
                resolution: 0.02,
            }
        }
    }
}

/// The highest rate `passes` accepts under `plan`: a doubling ramp from
/// `plan.start`, then bisection between the last passing and first failing
/// rate. `None` when even `plan.start` fails. Errors of `passes` end the search.
///
/// The `[clock]` of the lab's authtime servers: declared as chronyd's
/// `local stratum 8` is, so that both servers announce the same thing.
pub const LAB_CLOCK: &str =
    "[clock]\nsource = \"static\"\nstratum = 8\nreference-id = \"127.127.1.1\"\n";

/// # Errors
/// The first error of `passes`.
pub fn search_rate(
    plan: &SearchPlan,
    mut passes: impl FnMut(f64) -> Result<bool, String>,
) -> Result<Option<f64>, String> {
    let mut rate = plan.start;
    let mut last_pass = None;
    let mut first_fail = None;
    while rate <= plan.max {
        if passes(rate)? {
            last_pass = Some(rate);
            rate *= 2.0;
        } else {
            first_fail = Some(rate);
            break;
        }
    }
    let (Some(mut lo), Some(mut hi)) = (last_pass, first_fail) else {
        return Ok(last_pass);
    };
    for _ in 0..plan.bisect_steps {
        if hi - lo <= lo * plan.resolution {
            break;
        }
        let mid = ((lo + hi) / 2.0 / 100.0).round() * 100.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if passes(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(lo))
}

/// A child process killed (and reaped) when dropped.
pub(crate) struct ServerProcess {
    pub(crate) child: Child,
    pub(crate) name: &'static str,
    pub(crate) log: PathBuf,
}

impl ServerProcess {
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// An error when the process has exited, with the end of its log.
    pub(crate) fn check_alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!(
                "{} exited ({status}): {}",
                self.name,
                log_tail(&self.log)
            )),
            Err(e) => Err(format!("{}: {e}", self.name)),
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A temporary directory removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self, String> {
        Self::named("ntp")
    }

    /// `authtime-lab-TAG-PID` in the temporary directory, empty.
    pub(crate) fn named(tag: &str) -> Result<Self, String> {
        let dir = std::env::temp_dir().join(format!("authtime-lab-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Self(dir))
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" / ")
}

/// A UDP port on 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16, String> {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free UDP port on 127.0.0.1: {e}"))
}

/// Waits until the server answers a plain request (bounded).
pub(crate) fn wait_ready(server: &mut ServerProcess, target: SocketAddr) -> Result<(), String> {
    let local: SocketAddr = if target.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(local).map_err(|e| e.to_string())?;
    socket.connect(target).map_err(|e| e.to_string())?;
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + START_LIMIT;
    let mut buf = [0u8; 512];
    while Instant::now() < deadline {
        server.check_alive()?;
        let (len, _) = build_request(
            &ClientConfig::default(),
            NtpTimestamp::from_bits(0x1234_5678_9abc_def0),
            None,
            &mut buf,
        )
        .map_err(|e| e.to_string())?;
        let _ = socket.send(&buf[..len]);
        if socket.recv(&mut buf).is_ok_and(|n| n >= 48) {
            return Ok(());
        }
    }
    Err(format!(
        "{} did not answer within {} s: {}",
        server.name,
        START_LIMIT.as_secs(),
        log_tail(&server.log)
    ))
}

/// `authtime serve` (the executable beside this one): one worker, no rate limit.
fn start_authtime(dir: &TempDir, keys: &Path) -> Result<(ServerProcess, SocketAddr), String> {
    let exe = crate::section_nts_server::authtime_exe()?;
    let port = free_port()?;
    let config = dir.path("serve.toml");
    fs::write(
        &config,
        format!(
            "[ntp]\nlisten = [\"127.0.0.1:{port}\"]\nkeys = \"{}\"\nkey-format = \"chrony\"\n\
             workers = 1\n[rate-limit]\nenabled = false\n{LAB_CLOCK}",
            keys.display()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let log = dir.path("serve.log");
    let child = Command::new(&exe)
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let mut server = ServerProcess {
        child,
        name: "authtime serve",
        log,
    };
    let target = SocketAddr::from(([127, 0, 0, 1], port));
    wait_ready(&mut server, target)?;
    Ok((server, target))
}

/// Whether chronyd is installed (`PATH`, or the usual sbin directories).
#[must_use]
pub fn chronyd_installed() -> bool {
    find_chronyd().is_some()
}

/// chronyd from `PATH` (or the usual sbin directories).
pub(crate) fn find_chronyd() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join("chronyd"))
        .find(|p| p.is_file())
}

/// chronyd on loopback, never touching the clock (`-x -d`), as the interop tests start it.
fn start_chronyd(
    chronyd: &Path,
    dir: &TempDir,
    keys: &Path,
) -> Result<(ServerProcess, SocketAddr), String> {
    let port = free_port()?;
    let conf = dir.path("chrony.conf");
    fs::write(
        &conf,
        format!(
            "port {port}\nbindaddress 127.0.0.1\nallow 127.0.0.1\nlocal stratum 8\n\
             keyfile {}\npidfile {}\ncmdport 0\nbindcmdaddress /\n",
            keys.display(),
            dir.path("chronyd.pid").display()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", conf.display()))?;
    let log = dir.path("chronyd.log");
    let mut command = Command::new(chronyd);
    command.args(["-x", "-d", "-f"]).arg(&conf);
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        command.args(["-u", "root"]);
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", chronyd.display()))?;
    let mut server = ServerProcess {
        child,
        name: "chronyd",
        log,
    };
    let target = SocketAddr::from(([127, 0, 0, 1], port));
    wait_ready(&mut server, target)?;
    Ok((server, target))
}

/// One trial at one rate.
#[derive(Debug, Clone, serde::Serialize)]
struct Trial {
    rate: f64,
    passed: bool,
    /// 1 − received ÷ (sent + send errors).
    loss: f64,
    /// Server CPU seconds per 1000 requests sent.
    cpu_s_per_1000: Option<f64>,
    /// The user-space part of it (the rest is the kernel's).
    user_s_per_1000: Option<f64>,
    load_pinned: bool,
    report: LoadReport,
}

/// What was found for one server and one auth mode.
#[derive(Debug, Clone, serde::Serialize)]
struct Outcome {
    server: &'static str,
    auth: &'static str,
    best: Option<f64>,
    error: Option<String>,
    trials: Vec<Trial>,
}

impl Outcome {
    fn trial(&self, rate: f64) -> Option<&Trial> {
        self.trials.iter().find(|t| t.rate == rate)
    }

    /// The lowest failing trial above the best rate.
    fn first_fail(&self) -> Option<&Trial> {
        let best = self.best.unwrap_or(0.0);
        self.trials
            .iter()
            .filter(|t| !t.passed && t.rate > best)
            .min_by(|a, b| a.rate.total_cmp(&b.rate))
    }

    /// Why the search stopped where it did.
    fn ceiling(&self, plan: &SearchPlan) -> String {
        match self.first_fail() {
            Some(t) if t.report.fell_behind => format!(
                "load generator fell behind at {} req/s (a lower bound)",
                fmt_rate(t.rate)
            ),
            Some(t) => format!("{:.2}% loss at {} req/s", 100.0 * t.loss, fmt_rate(t.rate)),
            None if self.best.is_some() => format!(
                "no failure up to the plan's {} req/s (a lower bound)",
                fmt_rate(plan.max)
            ),
            None => "–".into(),
        }
    }

    /// Whether the figure is a lower bound (the server was not what failed).
    fn lower_bound(&self) -> bool {
        self.best.is_some() && self.first_fail().is_none_or(|t| t.report.fell_behind)
    }
}

pub(crate) fn fmt_rate(rate: f64) -> String {
    if rate >= 10_000.0 {
        format!("{:.0}k", rate / 1000.0)
    } else {
        format!("{rate:.0}")
    }
}

struct TrialSetup {
    plan: SearchPlan,
    duration: Duration,
    drain: Duration,
    pause: Duration,
    pin: bool,
}

/// Sends load at `rate` for one trial, measuring the server's CPU meanwhile.
fn trial(
    server: &mut ServerProcess,
    target: SocketAddr,
    rate: f64,
    key: Option<&KeyEntry>,
    setup: &TrialSetup,
) -> Result<Trial, String> {
    server.check_alive()?;
    let opts = LoadOptions {
        sockets: 2,
        drain: setup.drain,
        ..LoadOptions::new(target, rate, setup.duration)
    };
    let pid = server.pid();
    let cpu0 = crate::section_nts_server::process_cpu_split(pid);
    let (report, load_pinned) = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // The receivers the generator spawns inherit this thread's CPU.
                let pinned = setup.pin && pin(0, LOAD_CPU);
                (load_ntp::run(&opts, key), pinned)
            })
            .join()
            .map_err(|_| "the load generator panicked".to_owned())
    })?;
    let report = report?;
    let cpu1 = crate::section_nts_server::process_cpu_split(pid);
    server.check_alive()?;
    std::thread::sleep(setup.pause);
    let offered = report.sent + report.send_errors;
    let loss = if offered == 0 {
        1.0
    } else {
        1.0 - report.received as f64 / offered as f64
    };
    let per_1000 = |f: fn((f64, f64)) -> f64| match (cpu0, cpu1) {
        (Some(a), Some(b)) if report.sent > 0 => Some((f(b) - f(a)) / report.sent as f64 * 1000.0),
        _ => None,
    };
    let cpu_s_per_1000 = per_1000(|(user, system)| user + system);
    let user_s_per_1000 = per_1000(|(user, _)| user);
    Ok(Trial {
        rate,
        passed: loss < MAX_LOSS && !report.fell_behind && report.sent > 0,
        loss,
        cpu_s_per_1000,
        user_s_per_1000,
        load_pinned,
        report,
    })
}

/// Searches both auth modes against one running server.
fn measure_server(
    name: &'static str,
    server: &mut ServerProcess,
    target: SocketAddr,
    key: &KeyEntry,
    setup: &TrialSetup,
    progress: &mut Progress<'_>,
    step: &mut usize,
) -> Vec<Outcome> {
    let mut out = Vec::new();
    for (auth, key) in [("none", None), ("AES-128-CMAC", Some(key))] {
        progress.step(&format!("ntp: {name}, auth {auth}: rate search"), *step, 4);
        *step += 1;
        let mut trials = Vec::new();
        let found = search_rate(&setup.plan, |rate| {
            let t = trial(server, target, rate, key, setup)?;
            let passed = t.passed;
            trials.push(t);
            Ok(passed)
        });
        let (best, error) = match found {
            Ok(best) => (best, None),
            Err(e) => (None, Some(e)),
        };
        out.push(Outcome {
            server: name,
            auth,
            best,
            error,
            trials,
        });
    }
    out
}

/// A fresh AES-128-CMAC key, written in chrony format (both servers read it).
pub(crate) fn make_key(dir: &TempDir) -> Result<(KeyEntry, PathBuf), String> {
    let mut random = vec![0u8; 16];
    let mut urandom =
        fs::File::open("/dev/urandom").map_err(|e| format!("cannot open /dev/urandom: {e}"))?;
    std::io::Read::read_exact(&mut urandom, &mut random).map_err(|e| e.to_string())?;
    let keys = generate_keys(KeyType::Aes128Cmac, KEY_ID, 1, &random).map_err(|e| e.to_string())?;
    let text = write_key_file(KeyFileFormat::Chrony, &keys).map_err(|e| e.to_string())?;
    let path = dir.path("chrony.keys");
    authtime_keys::create_key_file(&path, &text)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let entry = KeyEntry::new(&keys[0]).map_err(|e| e.to_string())?;
    Ok((entry, path))
}

/// Runs the section.
///
/// # Errors
/// A message when the temporary files or the key cannot be made.
pub fn run(quick: bool, progress: &mut Progress<'_>) -> Result<Section, String> {
    let started = Instant::now();
    let plan = SearchPlan::new(quick);
    let setup = TrialSetup {
        plan,
        duration: Duration::from_millis(if quick { 500 } else { 1000 }),
        drain: Duration::from_millis(if quick { 100 } else { 250 }),
        pause: Duration::from_millis(if quick { 50 } else { 200 }),
        pin: true,
    };
    let dir = TempDir::new()?;
    let (key, key_file) = make_key(&dir)?;
    let mut outcomes = Vec::new();
    let mut notes = Vec::new();
    let mut server_pinned = Vec::new();
    let mut step = 0;

    match start_authtime(&dir, &key_file) {
        Ok((mut server, target)) => {
            server_pinned.push(("authtime", pin_process(server.pid(), SERVER_CPU)));
            outcomes.extend(measure_server(
                "authtime",
                &mut server,
                target,
                &key,
                &setup,
                progress,
                &mut step,
            ));
        }
        Err(e) => notes.push(format!("authtime could not be measured: {e}.")),
    }
    step = 2;
    match find_chronyd() {
        None => notes.push(
            "chronyd was not found (PATH, /usr/sbin, /sbin): only authtime was measured \
             (Debian package `chrony`)."
                .into(),
        ),
        Some(chronyd) => match start_chronyd(&chronyd, &dir, &key_file) {
            Ok((mut server, target)) => {
                server_pinned.push(("chronyd", pin_process(server.pid(), SERVER_CPU)));
                outcomes.extend(measure_server(
                    "chronyd",
                    &mut server,
                    target,
                    &key,
                    &setup,
                    progress,
                    &mut step,
                ));
            }
            Err(e) => notes.push(format!("chronyd could not be measured: {e}.")),
        },
    }
    let elapsed = started.elapsed();
    let load_pinned = outcomes
        .iter()
        .flat_map(|o| &o.trials)
        .all(|t| t.load_pinned);
    Ok(section(
        &outcomes,
        &plan,
        &setup,
        &server_pinned,
        load_pinned,
        notes,
        elapsed,
        quick,
    ))
}

#[allow(clippy::too_many_arguments, reason = "one call site, all plain data")]
fn section(
    outcomes: &[Outcome],
    plan: &SearchPlan,
    setup: &TrialSetup,
    server_pinned: &[(&str, bool)],
    load_pinned: bool,
    mut findings: Vec<String>,
    elapsed: Duration,
    quick: bool,
) -> Section {
    let mut table = Table::new(
        "Highest request rate answered with under 0.1% loss (one core per server)",
        &[
            "server",
            "auth",
            "max rate, <0.1% loss (req/s)",
            "loss at that rate",
            "median latency (µs)",
            "p99 latency (µs)",
            "server CPU s / 1000 req",
            "of it, user space",
            "search stopped by",
        ],
    );
    for o in outcomes {
        let at = o.best.and_then(|b| o.trial(b));
        let best = match (o.best, &o.error) {
            (_, Some(e)) => format!("error: {e}"),
            (None, None) => format!("< {}", fmt_rate(plan.start)),
            (Some(b), None) if o.lower_bound() => format!("≥ {b:.0}"),
            (Some(b), None) => format!("{b:.0}"),
        };
        table.row(vec![
            o.server.into(),
            o.auth.into(),
            best,
            at.map_or("–".into(), |t| format!("{:.3}%", 100.0 * t.loss)),
            at.map_or("–".into(), |t| format!("{:.0}", t.report.latency.p50_us)),
            at.map_or("–".into(), |t| format!("{:.0}", t.report.latency.p99_us)),
            at.and_then(|t| t.cpu_s_per_1000)
                .map_or("–".into(), |c| format!("{c:.4}")),
            at.and_then(|t| t.user_s_per_1000)
                .map_or("–".into(), |c| format!("{c:.4}")),
            o.ceiling(plan),
        ]);
    }
    table.note = "Loss = 1 − time replies ÷ requests offered (sent + refused by the kernel); Kiss-o'-Death and crypto-NAK replies count as lost. \
                  CPU = user + system time of the server process (/proc/<pid>/stat, ticks of 10 ms) during the trial, per 1000 requests sent; user space is the utime part, the rest is the kernel's (the UDP path and the system calls). \
                  ≥: the server did not fail first (the load generator fell behind, or the ramp ended), so the figure is a lower bound."
        .into();

    let find = |server: &str, auth: &str| {
        outcomes
            .iter()
            .find(|o| o.server == server && o.auth == auth)
    };
    let mut ratios = Table::new(
        "authtime ÷ chronyd (issue 4 target: ≥ 2× with one core each)",
        &[
            "auth",
            "authtime (req/s)",
            "chronyd (req/s)",
            "rate ratio",
            "CPU per request, chronyd ÷ authtime",
        ],
    );
    for auth in ["none", "AES-128-CMAC"] {
        let (Some(a), Some(c)) = (find("authtime", auth), find("chronyd", auth)) else {
            continue;
        };
        let cpu = |o: &Outcome| {
            o.best
                .and_then(|b| o.trial(b))
                .and_then(|t| t.cpu_s_per_1000)
        };
        let cpu_ratio = match (cpu(a), cpu(c)) {
            (Some(x), Some(y)) if x > 0.0 => Some(y / x),
            _ => None,
        };
        let rate_ratio = match (a.best, c.best) {
            (Some(x), Some(y)) if y > 0.0 => Some(x / y),
            _ => None,
        };
        ratios.row(vec![
            auth.into(),
            a.best.map_or("–".into(), |b| format!("{b:.0}")),
            c.best.map_or("–".into(), |b| format!("{b:.0}")),
            rate_ratio.map_or("–".into(), |r| {
                format!("{}{r:.2}×", if a.lower_bound() { "≥ " } else { "" })
            }),
            cpu_ratio.map_or("–".into(), |r| format!("{r:.2}×")),
        ]);
        if let Some(r) = rate_ratio {
            let verdict = if r >= 2.0 {
                "meets the target (≥ 2×)"
            } else if a.lower_bound() && !c.lower_bound() {
                "is below the target, but authtime's figure is only a lower bound (its search was stopped by the load generator, not by loss)"
            } else {
                "misses the target (≥ 2×)"
            };
            findings.push(format!(
                "Auth {auth}: authtime answers {} req/s, chronyd {} req/s under 0.1% loss: {r:.2}× — {verdict}.{}",
                a.best.map_or(0.0, |b| b),
                c.best.map_or(0.0, |b| b),
                cpu_ratio.map_or(String::new(), |c| format!(
                    " Per request, chronyd spends {c:.2}× authtime's CPU time."
                ))
            ));
        }
    }
    for o in outcomes {
        let Some(t) = o.best.and_then(|b| o.trial(b)) else {
            continue;
        };
        let Some(busy) = t.cpu_s_per_1000.map(|c| c * t.rate / 1000.0) else {
            continue;
        };
        if busy < 0.7 {
            findings.push(format!(
                "{} ({}) used only {:.0}% of its core at {:.0} req/s (median latency {:.0} µs): \
                 its limit is likely outside the server process (the generator's single core or the kernel's loopback path), \
                 so its rate is indicative; the CPU per request is the steadier comparison.",
                o.server,
                o.auth,
                100.0 * busy,
                t.rate,
                t.report.latency.p50_us
            ));
        }
    }
    if ratios.rows.is_empty() {
        findings
            .push("No ratio: both servers are needed for authtime ÷ chronyd (see above).".into());
    }
    if outcomes
        .iter()
        .any(|o| o.first_fail().is_some_and(|t| t.report.fell_behind))
    {
        findings.push(
            "The load generator fell behind its schedule before the server lost requests in at least one search: \
             that server's figure is the generator's ceiling on this machine, not the server's."
                .into(),
        );
    }

    let plot = Plot {
        stem: "ntp-loss".into(),
        title: "Loss vs offered rate (one core per server)".into(),
        x_label: "offered rate (requests/s)".into(),
        y_label: "loss (%)".into(),
        log_x: true,
        log_y: false,
        series: outcomes
            .iter()
            .map(|o| {
                let mut points: Vec<(f64, f64)> =
                    o.trials.iter().map(|t| (t.rate, 100.0 * t.loss)).collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    name: format!("{} ({})", o.server, o.auth),
                    points,
                }
            })
            .collect(),
    };

    let pinning = {
        let servers: Vec<String> = server_pinned
            .iter()
            .map(|(name, ok)| {
                format!(
                    "{name} {}",
                    if *ok {
                        "pinned to CPU 0"
                    } else {
                        "not pinned (sched_setaffinity refused)"
                    }
                )
            })
            .collect();
        format!(
            "{}; load generator {}",
            servers.join(", "),
            if load_pinned {
                "pinned to CPU 1"
            } else {
                "not pinned (sched_setaffinity refused)"
            }
        )
    };
    Section {
        id: "ntp".into(),
        title: "NTP server request rate: authtime vs chronyd (issue 4, Speed)".into(),
        seed: "issue 4, \"Speed (benchmark, not a test)\": highest rate under 0.1% loss, authtime vs chronyd, plain and AES-CMAC; target authtime ≥ 2× chronyd with one core each".into(),
        method: format!(
            "Each server runs as its own process on 127.0.0.1 (a free high port): `authtime serve` (the executable beside this one) with one worker and rate limiting off, \
             and chronyd (`-x -d`, `local stratum 8`, `allow 127.0.0.1`, no command port), both reading the same AES-128-CMAC key file (chrony format, key {KEY_ID}). \
             Pinning: {pinning}. The open-loop generator (authtime-lab's load_ntp, 2 source sockets, sender and receivers on one core) sends each trial for {:.1} s then waits {} ms for late replies; \
             a trial passes under 0.1% loss when the generator kept its schedule. Rate search: a doubling ramp from {} req/s up to {} req/s, \
             then up to {} bisection steps between the last passing and first failing rate (stopping at {:.0}% resolution). \
             Replies are counted, not authenticated. The machine is shared and the generator shares it with the server, so the figures are indicative{}. \
             This section took {:.1} s.",
            setup.duration.as_secs_f64(),
            setup.drain.as_millis(),
            fmt_rate(plan.start),
            fmt_rate(plan.max),
            plan.bisect_steps,
            100.0 * plan.resolution,
            if quick { " (and `--quick` trials are short)" } else { "" },
            elapsed.as_secs_f64()
        ),
        tables: vec![table, ratios],
        plots: vec![plot],
        findings,
        data: serde_json::to_value(outcomes).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> SearchPlan {
        SearchPlan {
            start: 5_000.0,
            max: 640_000.0,
            bisect_steps: 6,
            resolution: 0.02,
        }
    }

    #[test]
    fn the_search_ramps_then_bisects_to_the_threshold() {
        let mut tried = Vec::new();
        let best = search_rate(&plan(), |r| {
            tried.push(r);
            Ok(r <= 57_000.0)
        })
        .expect("no error");
        let best = best.expect("a rate");
        assert!(best <= 57_000.0 && best > 57_000.0 * 0.9, "{best}");
        assert_eq!(
            &tried[..5],
            &[5_000.0, 10_000.0, 20_000.0, 40_000.0, 80_000.0]
        );
        assert!(tried.len() <= 5 + 6, "{tried:?}");
    }

    #[test]
    fn the_search_handles_the_edges() {
        assert_eq!(search_rate(&plan(), |_| Ok(false)), Ok(None));
        assert_eq!(search_rate(&plan(), |_| Ok(true)), Ok(Some(640_000.0)));
        assert_eq!(
            search_rate(&plan(), |r| if r > 10_000.0 {
                Err("died".into())
            } else {
                Ok(true)
            }),
            Err("died".to_owned())
        );
    }
}
