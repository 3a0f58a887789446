//! Section `xdp` (issue 31, part 3): what a request costs the whole machine,
//! and how early its reply's transmit timestamp (T3) is, for chronyd,
//! authtime on sockets and authtime on AF_XDP side by side, at rising
//! request rates, NTP with AES-128-CMAC (and plain NTP).
//!
//! **Setup.** The accuracy section's ([`crate::section_accuracy`]): two
//! network namespaces of the section's own joined by a veth pair, the
//! servers in one (each on an address of its own, port 123, pinned to
//! CPU 0), the load generator ([`crate::load_ntp`]) in the other, as a
//! thread of the lab pinned to CPU 1. chronyd and authtime on sockets run
//! for the whole section; authtime on AF_XDP is the same `authtime serve`
//! with an `[xdp]` section naming the server-side veth (`attach =
//! "native"`), started for each of its measurements and stopped after it,
//! so that the others are measured on a veth with no XDP program (native
//! XDP switches veth's receive path to its NAPI mode). When `authtime
//! serve` refuses the `[xdp]` section (a build without the AF_XDP data
//! path), the section says so with the daemon's own message and measures
//! the other two.
//!
//! **What is measured, per server and step.** Offered and answered rate and
//! loss (the generator's counts); the server process's CPU (user and system
//! from `/proc/PID/stat`); the whole machine's busy CPU from `/proc/stat`
//! (all CPUs' time over the step less their idle, iowait and steal time:
//! [`MachineCpu::busy_since`] says why not the sampled busy fields); the
//! lab process's own CPU (the generator); kernel threads'; steal time; and
//! the T3 offset
//! (kernel receive time of the reply at the generator − its T3), as the
//! accuracy section measures it. Each is divided by the answered requests.
//! The whole machine's figure is the one to compare: on veth the receiving
//! side's softirq work often runs in the sender's context (the generator's
//! CPU for requests, the server's for replies), and with AF_XDP in copy mode
//! the kernel does part of the server's work outside its process, so a
//! server-process figure alone can hide cost moved elsewhere.
//!
//! Servers are measured in turn within each step, the order alternating
//! from round to round, every server of a step with the same schedule.

use std::{
    fs,
    net::{Ipv4Addr, SocketAddr},
    path::Path,
    time::{Duration, Instant},
};

use authtime_keys::KeyEntry;
use serde::Serialize;

use crate::{
    Progress,
    cpu_time::{MachineCpu, process_cpu_time},
    load_ntp::{self, Arrivals, LoadOptions, LoadReport},
    netns::{self, NetnsPair},
    report::Section,
    scheduling::{cpus_allowed, pin, pin_process},
    section_accuracy::spawn_logged,
    section_ntp::{ServerProcess, TempDir, find_chronyd, make_key, wait_ready},
};

/// The CPU the servers are pinned to, and the generator's.
const SERVER_CPU: usize = 0;
const GENERATOR_CPU: usize = 1;
/// The `[clock]` of the authtime servers: stratum 1, as chronyd's `local
/// stratum 1` announces.
const CLOCK: &str = "[clock]\nsource = \"static\"\nstratum = 1\nreference-id = \"LOCL\"\n";
/// How long the machine is watched idle (servers up, no load) before the
/// steps, for the idle baseline.
pub const IDLE_BASELINE: Duration = Duration::from_secs(1);

/// The request's authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Auth {
    /// A symmetric key, AES-128-CMAC (chrony key file, key 1).
    Cmac,
    /// No MAC.
    Plain,
}

impl Auth {
    /// How the report names it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Cmac => "AES-128-CMAC",
            Self::Plain => "plain NTP",
        }
    }
}

/// The servers compared, in the section's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ServerKind {
    /// chronyd, with the key.
    Chronyd,
    /// `authtime serve` on UDP sockets.
    Sockets,
    /// `authtime serve` with `[xdp]`: AF_XDP, native mode on the veth.
    Xdp,
}

impl ServerKind {
    /// All three, in the order of the tables.
    pub const ALL: [Self; 3] = [Self::Chronyd, Self::Sockets, Self::Xdp];

    /// How the report names it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Chronyd => "chronyd",
            Self::Sockets => "authtime (sockets)",
            Self::Xdp => "authtime (AF_XDP)",
        }
    }
}

/// What the section measures, and for how long.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Request rates, one step each.
    pub rates: Vec<f64>,
    /// Authentication modes measured at each step.
    pub auths: Vec<Auth>,
    /// Sending time per measurement.
    pub step: Duration,
    /// Measurements of each server per step and mode.
    pub rounds: usize,
    /// Wait for late replies after each measurement.
    pub drain: Duration,
    /// Pause between measurements.
    pub pause: Duration,
    /// Source sockets of the generator.
    pub sockets: usize,
}

impl Plan {
    /// A full run: 10k to 160k requests/s doubling, CMAC and plain, 2 s per
    /// measurement, 2 rounds (about 3 minutes).
    #[must_use]
    pub fn full() -> Self {
        Self {
            rates: vec![10_000.0, 20_000.0, 40_000.0, 80_000.0, 160_000.0],
            auths: vec![Auth::Cmac, Auth::Plain],
            step: Duration::from_secs(2),
            rounds: 2,
            drain: Duration::from_millis(300),
            pause: Duration::from_millis(200),
            sockets: 4,
        }
    }

    /// `--quick`: 10k, 40k and 160k requests/s, 1 s per measurement, one
    /// round (about 30 seconds).
    #[must_use]
    pub fn quick() -> Self {
        Self {
            rates: vec![10_000.0, 40_000.0, 160_000.0],
            step: Duration::from_secs(1),
            rounds: 1,
            drain: Duration::from_millis(200),
            pause: Duration::from_millis(100),
            ..Self::full()
        }
    }

    /// The smoke test's: one second of 10k CMAC requests/s per server
    /// (enough CPU for `/proc`'s 10 ms ticks to show).
    #[must_use]
    pub fn smoke() -> Self {
        Self {
            rates: vec![10_000.0],
            auths: vec![Auth::Cmac],
            step: Duration::from_secs(1),
            rounds: 1,
            drain: Duration::from_millis(200),
            pause: Duration::from_millis(50),
            sockets: 4,
        }
    }
}

/// CPU spent during one measurement, in seconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct StepCpu {
    /// Wall time of the measurement (the generator's whole run).
    pub wall_s: f64,
    /// The server process: user time.
    pub server_user_s: f64,
    /// The server process: system time.
    pub server_system_s: f64,
    /// The whole machine's busy time, all CPUs: the CPU time there was less
    /// idle, iowait and steal ([`MachineCpu::busy_since`]).
    pub machine_busy_s: f64,
    /// The `/proc/stat` counters over the measurement.
    pub machine: MachineCpu,
    /// The lab process (the generator's threads; nothing else of the lab
    /// runs during a measurement).
    pub generator_s: f64,
    /// Kernel threads (kthreadd and its children: kworkers, ksoftirqd,
    /// NAPI threads, ...).
    pub kernel_threads_s: f64,
}

impl StepCpu {
    /// The CPU the measurement can be charged with whatever else the
    /// machine runs: the server, the generator and kernel threads (each
    /// exact: the scheduler's run time). Softirq work the kernel did in
    /// the context of some other task, or of an idle CPU, is not in it.
    #[must_use]
    pub fn attributed_s(&self) -> f64 {
        self.server_user_s + self.server_system_s + self.generator_s + self.kernel_threads_s
    }
}

/// One measurement: one server, authentication, rate and round.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    /// Which server.
    pub server: ServerKind,
    /// Requests with a MAC or without.
    pub auth: Auth,
    /// Requests per second asked for.
    pub rate: f64,
    /// Round, from 0.
    pub round: usize,
    /// The generator's report.
    pub report: Option<LoadReport>,
    /// CPU spent meanwhile.
    pub cpu: Option<StepCpu>,
    /// Why there is no report (or what went wrong).
    pub error: Option<String>,
    /// The generator's thread was pinned to its CPU.
    pub generator_pinned: bool,
    /// The server was pinned to its CPU.
    pub server_pinned: bool,
}

/// Whether a server could be measured.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    /// Which server.
    pub server: ServerKind,
    /// Why it was not measured, if it was not (for AF_XDP, from `authtime
    /// serve`'s own message).
    pub not_available: Option<String>,
}

/// What a run of the section found, for the report.
#[derive(Debug, Serialize)]
pub struct Outcome {
    /// The plan run.
    pub plan: Plan,
    /// Every measurement, in the order made.
    pub measurements: Vec<Measurement>,
    /// Each of the three servers, measured or why not.
    pub servers: Vec<ServerStatus>,
    /// The server-side veth (the AF_XDP server's interface).
    pub interface: Option<String>,
    /// Transmit checksum offload was turned off on the generator's end.
    pub checksum_offload_off: bool,
    /// The machine's busy CPU seconds per second, all CPUs, with the
    /// servers up and no load (the idle baseline): the mean of one second
    /// before the measurements and one after.
    pub idle_busy_per_s: Option<f64>,
    /// The two baselines it is the mean of.
    pub idle_busy_before_after: (Option<f64>, Option<f64>),
    /// CPUs the kernel counts in `/proc/stat`'s `cpu` line.
    pub cpus: usize,
    /// Namespaces made (empty when none could be).
    pub namespaces: Vec<String>,
    /// They no longer exist after the section.
    pub namespaces_removed: bool,
    /// Why parts were skipped, and other remarks.
    pub notes: Vec<String>,
    /// Seconds the section took.
    pub elapsed_s: f64,
}

impl Outcome {
    /// Whether `server` was measured.
    #[must_use]
    pub fn measured(&self, server: ServerKind) -> bool {
        self.servers
            .iter()
            .any(|s| s.server == server && s.not_available.is_none())
    }
}

/// Runs the section (`--quick` or full).
///
/// # Errors
/// None in practice: what cannot be measured is said in the report.
pub fn run(quick: bool, progress: &mut Progress<'_>) -> Result<Section, String> {
    let plan = if quick { Plan::quick() } else { Plan::full() };
    let outcome = run_plan(plan, progress);
    Ok(crate::section_xdp_report::section(&outcome, quick))
}

/// Runs `plan`: skips with a note when namespaces cannot be made here (not
/// root, no iproute2), measures what it can otherwise.
pub fn run_plan(plan: Plan, progress: &mut Progress<'_>) -> Outcome {
    let started = Instant::now();
    let mut outcome = Outcome {
        plan,
        measurements: Vec::new(),
        servers: Vec::new(),
        interface: None,
        checksum_offload_off: false,
        idle_busy_per_s: None,
        idle_busy_before_after: (None, None),
        cpus: cpus_allowed(),
        namespaces: Vec::new(),
        namespaces_removed: true,
        notes: Vec::new(),
        elapsed_s: 0.0,
    };
    if let Some(why) = netns::unavailable() {
        outcome.notes.push(format!("Skipped: this section {why}."));
        return outcome;
    }
    if cpus_allowed() < 2 {
        outcome.notes.push(
            "Fewer than two CPUs: server and generator share one, and the generator's \
             scheduling shapes the arrivals the server sees."
                .into(),
        );
    }
    match TempDir::named("xdp") {
        Ok(dir) => measure_in_namespaces(&dir, &mut outcome, progress),
        Err(e) => outcome.notes.push(format!("Skipped: {e}.")),
    }
    let left = netns::list();
    outcome.namespaces_removed = outcome.namespaces.iter().all(|n| !left.contains(n));
    if !outcome.namespaces_removed {
        outcome.notes.push(format!(
            "Namespaces left behind (remove with `ip netns del`): {}.",
            outcome.namespaces.join(", ")
        ));
    }
    outcome.elapsed_s = started.elapsed().as_secs_f64();
    outcome
}

/// A server and how to reach it; the AF_XDP one runs only during its own
/// measurements (`process` is `None` between them).
struct Server {
    kind: ServerKind,
    process: Option<ServerProcess>,
    target: SocketAddr,
    /// The configuration `authtime serve` is started with (AF_XDP only).
    config: Option<std::path::PathBuf>,
    pinned: bool,
}

fn measure_in_namespaces(dir: &TempDir, outcome: &mut Outcome, progress: &mut Progress<'_>) {
    let (key, key_file) = match make_key(dir) {
        Ok(k) => k,
        Err(e) => {
            outcome.notes.push(format!("Skipped: no key: {e}."));
            return;
        }
    };
    let pair = match NetnsPair::create("xdp", 3) {
        Ok(pair) => pair,
        Err(e) => {
            outcome.notes.push(format!(
                "Skipped: the network namespaces could not be made: {e}."
            ));
            return;
        }
    };
    outcome.namespaces = vec![pair.server.clone(), pair.generator.clone()];
    outcome.interface = Some(pair.veth.0.clone());
    // For every server alike: checksums computed by the sender, as on a
    // real link (an AF_XDP server drops the veth's unfilled ones).
    let generator_if = pair.veth.1.clone();
    match netns::run_in(&pair.generator, || netns::tx_checksum_off(&generator_if)) {
        Ok(Ok(())) => outcome.checksum_offload_off = true,
        Ok(Err(e)) | Err(e) => outcome.notes.push(format!(
            "{e}: the AF_XDP server drops requests whose UDP checksum the veth left unfilled."
        )),
    }
    // Declared after `pair`, so dropped (killed) before the namespaces go.
    let mut servers = start_servers(&pair, dir, &key_file, outcome);
    let idle_before = idle_baseline();
    measure_steps(&pair, &mut servers, &key, outcome, progress);
    let idle_after = idle_baseline();
    outcome.idle_busy_before_after = (idle_before, idle_after);
    outcome.idle_busy_per_s = match (idle_before, idle_after) {
        (Some(a), Some(b)) => Some(f64::midpoint(a, b)),
        (a, b) => a.or(b),
    };
    drop(servers);
    drop(pair);
}

/// Every step of the plan: each rate, round and authentication, the
/// servers in turn (the order alternating between rounds).
fn measure_steps(
    pair: &NetnsPair,
    servers: &mut [Server],
    key: &KeyEntry,
    outcome: &mut Outcome,
    progress: &mut Progress<'_>,
) {
    let plan = outcome.plan.clone();
    let total = plan.rates.len() * plan.rounds * plan.auths.len() * servers.len();
    let mut done = 0;
    for &rate in &plan.rates {
        for round in 0..plan.rounds {
            for &auth in &plan.auths {
                let order: Vec<usize> = if round % 2 == 0 {
                    (0..servers.len()).collect()
                } else {
                    (0..servers.len()).rev().collect()
                };
                for i in order {
                    let server = &mut servers[i];
                    progress.step(
                        &format!(
                            "xdp: {} at {rate:.0}/s, {}, round {}",
                            server.kind.name(),
                            auth.name(),
                            round + 1
                        ),
                        done,
                        total,
                    );
                    done += 1;
                    let opts = LoadOptions {
                        sockets: plan.sockets,
                        drain: plan.drain,
                        arrivals: Arrivals::Even,
                        seed: 1 + round as u64 * 1_000_003 + rate as u64,
                        ..LoadOptions::new(server.target, rate, plan.step)
                    };
                    let key = (auth == Auth::Cmac).then_some(key);
                    let m = measure(pair, server, &opts, key, auth, round);
                    outcome.measurements.push(m);
                    std::thread::sleep(plan.pause);
                }
            }
        }
    }
}

/// Starts the three servers (the AF_XDP one only to see that it starts),
/// noting in `outcome` which could not be and why.
fn start_servers(
    pair: &NetnsPair,
    dir: &TempDir,
    key_file: &Path,
    outcome: &mut Outcome,
) -> Vec<Server> {
    let mut servers = Vec::new();
    for kind in ServerKind::ALL {
        let started = match kind {
            ServerKind::Chronyd => match find_chronyd() {
                None => Err(
                    "chronyd was not found (PATH, /usr/sbin, /sbin; Debian package `chrony`)"
                        .to_owned(),
                ),
                Some(chronyd) => start_chronyd(pair, dir, &chronyd, key_file, pair.server_addrs[0]),
            },
            ServerKind::Sockets => start_authtime(pair, dir, key_file, pair.server_addrs[1]),
            ServerKind::Xdp => probe_xdp(pair, dir, key_file, pair.server_addrs[2]),
        };
        let not_available = match started {
            Ok(server) => {
                servers.push(server);
                None
            }
            Err(e) => Some(e),
        };
        outcome.servers.push(ServerStatus {
            server: kind,
            not_available,
        });
    }
    servers
}

/// The machine's busy CPU seconds per second with no load.
fn idle_baseline() -> Option<f64> {
    let (a, t) = (MachineCpu::now()?, Instant::now());
    std::thread::sleep(IDLE_BASELINE);
    let (b, wall) = (MachineCpu::now()?, t.elapsed().as_secs_f64());
    Some(b.busy_since(&a, wall) / wall)
}

fn measure(
    pair: &NetnsPair,
    server: &mut Server,
    opts: &LoadOptions,
    key: Option<&KeyEntry>,
    auth: Auth,
    round: usize,
) -> Measurement {
    let mut m = Measurement {
        server: server.kind,
        auth,
        rate: opts.rate,
        round,
        report: None,
        cpu: None,
        error: None,
        generator_pinned: false,
        server_pinned: false,
    };
    // The AF_XDP server is started for this measurement, stopped after it.
    if let Some(config) = &server.config {
        match start_serve(pair, server.kind, config, server.target) {
            Ok(s) => {
                server.pinned = s.pinned;
                server.process = s.process;
            }
            Err(e) => {
                m.error = Some(e);
                return m;
            }
        }
    }
    m.server_pinned = server.pinned;
    let Some(process) = server.process.as_mut() else {
        m.error = Some("not running".into());
        return m;
    };
    if let Err(e) = process.check_alive() {
        m.error = Some(e);
        return m;
    }
    let pid = process.pid();
    let before = Snapshot::take(pid);
    let result = netns::run_in(&pair.generator, || {
        // The receivers the generator starts inherit this CPU (and namespace).
        let pinned = pin(0, GENERATOR_CPU);
        (load_ntp::run(opts, key), pinned)
    });
    let after = Snapshot::take(pid);
    m.cpu = after.since(&before);
    match result {
        Ok((Ok(report), pinned)) => {
            m.report = Some(report);
            m.generator_pinned = pinned;
        }
        Ok((Err(e), _)) | Err(e) => m.error = Some(e),
    }
    if let Err(e) = process.check_alive() {
        m.error = Some(e);
    }
    if server.config.is_some() {
        server.process = None;
    }
    m
}

/// The CPU counters a measurement is the difference of.
struct Snapshot {
    at: Instant,
    server: Option<(f64, f64)>,
    machine: Option<MachineCpu>,
    lab: Duration,
    kernel_threads: f64,
}

impl Snapshot {
    fn take(pid: u32) -> Self {
        Self {
            at: Instant::now(),
            server: crate::section_nts_server::process_cpu_split(pid),
            machine: MachineCpu::now(),
            lab: process_cpu_time(),
            kernel_threads: kernel_threads_cpu(),
        }
    }

    fn since(&self, before: &Self) -> Option<StepCpu> {
        let (u1, s1) = self.server?;
        let (u0, s0) = before.server?;
        let (m1, m0) = (self.machine?, before.machine?);
        let wall = (self.at - before.at).as_secs_f64();
        Some(StepCpu {
            wall_s: wall,
            server_user_s: u1 - u0,
            server_system_s: s1 - s0,
            machine_busy_s: m1.busy_since(&m0, wall),
            machine: m1.since(&m0),
            generator_s: (self.lab.saturating_sub(before.lab)).as_secs_f64(),
            kernel_threads_s: self.kernel_threads - before.kernel_threads,
        })
    }
}

/// User + system seconds of kthreadd and its children.
fn kernel_threads_cpu() -> f64 {
    let Ok(entries) = fs::read_dir("/proc") else {
        return 0.0;
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
            let ppid: u32 = rest.get(1)?.parse().ok()?;
            if !(pid == 2 || ppid == 2) {
                return None;
            }
            crate::section_nts_server::process_cpu_split(pid).map(|(u, s)| u + s)
        })
        .sum()
}

/// The `[ntp]` section shared by both authtime servers: one worker, the
/// key file, no rate limit, a stratum-1 static clock.
fn authtime_config(addr: Ipv4Addr, keys: &Path) -> String {
    format!(
        "[ntp]\nlisten = [\"{addr}:123\"]\nkeys = \"{}\"\nkey-format = \"chrony\"\nworkers = 1\n\
         [rate-limit]\nenabled = false\n{CLOCK}",
        keys.display()
    )
}

/// Starts `authtime serve --config CONFIG` in the server namespace, waits
/// until it answers at `target`, and pins it.
fn start_serve(
    pair: &NetnsPair,
    kind: ServerKind,
    config: &Path,
    target: SocketAddr,
) -> Result<Server, String> {
    let exe = crate::section_nts_server::authtime_exe()?;
    let mut command = pair.server_command(&exe);
    command.arg("serve").arg("--config").arg(config);
    let log = config.with_extension("log");
    let mut process = spawn_logged(command, log, "authtime serve")?;
    netns::run_in(&pair.generator, || wait_ready(&mut process, target))??;
    let pinned = pin_process(process.pid(), SERVER_CPU);
    Ok(Server {
        kind,
        process: Some(process),
        target,
        config: None,
        pinned,
    })
}

/// authtime on sockets, on `addr`, port 123.
fn start_authtime(
    pair: &NetnsPair,
    dir: &TempDir,
    keys: &Path,
    addr: Ipv4Addr,
) -> Result<Server, String> {
    let config = dir.path("authtime-sockets.toml");
    fs::write(&config, authtime_config(addr, keys))
        .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    start_serve(pair, ServerKind::Sockets, &config, (addr, 123).into())
}

/// authtime on AF_XDP, on `addr`, port 123, the server-side veth in native
/// mode: started once to see whether this build has the AF_XDP data path
/// (the daemon's own message when it has not), then stopped until its
/// measurements.
fn probe_xdp(
    pair: &NetnsPair,
    dir: &TempDir,
    keys: &Path,
    addr: Ipv4Addr,
) -> Result<Server, String> {
    let config = dir.path("authtime-xdp.toml");
    fs::write(
        &config,
        format!(
            "{}[xdp]\ninterface = \"{}\"\nattach = \"native\"\n",
            authtime_config(addr, keys),
            pair.veth.0
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let target = (addr, 123).into();
    let probe = start_serve(pair, ServerKind::Xdp, &config, target)?;
    drop(probe);
    Ok(Server {
        kind: ServerKind::Xdp,
        process: None,
        target,
        config: Some(config),
        pinned: false,
    })
}

/// chronyd on `addr`, port 123, as the accuracy section runs it (never
/// touching the clock, `local stratum 1`, answering everyone) with the key
/// file, no command socket.
fn start_chronyd(
    pair: &NetnsPair,
    dir: &TempDir,
    chronyd: &Path,
    keys: &Path,
    addr: Ipv4Addr,
) -> Result<Server, String> {
    let conf = dir.path("chrony.conf");
    fs::write(
        &conf,
        format!(
            "bindaddress {addr}\nport 123\nallow\nlocal stratum 1\nkeyfile {}\ncmdport 0\n\
             bindcmdaddress /\npidfile {}\n",
            keys.display(),
            dir.path("chronyd.pid").display()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", conf.display()))?;
    let mut command = pair.server_command(chronyd);
    command.args(["-x", "-u", "root", "-d", "-f"]).arg(&conf);
    let mut process = spawn_logged(command, dir.path("chronyd.log"), "chronyd")?;
    let target = (addr, 123).into();
    netns::run_in(&pair.generator, || wait_ready(&mut process, target))??;
    let pinned = pin_process(process.pid(), SERVER_CPU);
    Ok(Server {
        kind: ServerKind::Chronyd,
        process: Some(process),
        target,
        config: None,
        pinned,
    })
}
