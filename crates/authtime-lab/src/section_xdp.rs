//! Section `xdp` (issue 31, part 3): what a request costs the whole machine,
//! and how early its reply's transmit timestamp (T3) is, for chronyd,
//! authtime on sockets and authtime on AF_XDP side by side, at rising
//! request rates, NTP with AES-128-CMAC (and plain NTP), NTS-NTP (chronyd
//! as an NTS server) and Roughtime (roughenough 2.2 in chronyd's place).
//!
//! **Setup.** The accuracy section's ([`crate::section_accuracy`]): two
//! network namespaces of the section's own joined by a veth pair, the
//! servers in one (each on an address of its own, port 123, pinned to
//! CPU 0), the load generator in the other, as a thread of the lab pinned
//! to CPU 1. chronyd (or roughenough) and authtime on sockets run for all
//! of their protocol's measurements; authtime on AF_XDP is the same `authtime serve`
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
//!
//! **Protocols.** One after the other, each with its own three servers
//! (module `section_xdp_servers`) on the same three addresses: NTP (the
//! generator [`crate::load_ntp`]), NTS-NTP (the generator
//! [`crate::load_nts`], its cookies from NTS-KE over TCP made before each
//! measurement: on AF_XDP that TCP goes through the kernel beside the XDP
//! program), Roughtime (the open-loop [`crate::load_roughtime_paced`]). A
//! peer that is missing (chronyd, roughenough) leaves its column with the
//! reason and the rest is measured.

use std::{
    fs,
    time::{Duration, Instant},
};

use authtime_keys::KeyEntry;
use serde::Serialize;

use crate::{
    Progress,
    cpu_time::{MachineCpu, process_cpu_time},
    load_ntp::{self, Arrivals, LoadOptions, LoadReport},
    load_nts::{self, KeyExchangeOffer, NtsLoadOptions},
    load_nts_stats::StepReport,
    load_roughtime::Version,
    load_roughtime_paced::{self, PacedOptions, PacedReport},
    netns::{self, NetnsPair},
    report::Section,
    scheduling::{cpus_allowed, pin},
    section_ntp::{TempDir, make_key},
    section_xdp_servers::{self, Credentials, Material, Server},
};

/// The CPU the servers are pinned to, and the generator's.
pub(crate) const SERVER_CPU: usize = 0;
const GENERATOR_CPU: usize = 1;
/// Verify every n-th Roughtime response.
const ROUGHTIME_VERIFY_EVERY: u64 = 64;
/// How long the machine is watched idle (servers up, no load) before the
/// steps, for the idle baseline.
pub const IDLE_BASELINE: Duration = Duration::from_secs(1);

/// The request's protocol and authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Auth {
    /// NTP with a symmetric key, AES-128-CMAC (chrony key file, key 1).
    Cmac,
    /// NTP without a MAC.
    Plain,
    /// NTP with AES-128-CMAC in interleaved mode (RFC 9769, as chrony's
    /// client asks: each request names the previous reply).
    Interleaved,
    /// NTS-protected NTP (RFC 8915; the generator offers
    /// AEAD_AES_SIV_CMAC_256 first).
    Nts,
    /// Roughtime (1024-byte requests, RFC version offered).
    Roughtime,
}

impl Auth {
    /// All five, in the order of the report.
    pub const ALL: [Self; 5] = [
        Self::Cmac,
        Self::Plain,
        Self::Interleaved,
        Self::Nts,
        Self::Roughtime,
    ];

    /// How the report names it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Cmac => "AES-128-CMAC",
            Self::Plain => "plain NTP",
            Self::Interleaved => "AES-128-CMAC interleaved",
            Self::Nts => "NTS-NTP",
            Self::Roughtime => "Roughtime",
        }
    }

    /// The protocol whose servers answer it.
    #[must_use]
    pub fn protocol(self) -> Protocol {
        match self {
            Self::Cmac | Self::Plain | Self::Interleaved => Protocol::Ntp,
            Self::Nts => Protocol::Nts,
            Self::Roughtime => Protocol::Roughtime,
        }
    }
}

/// The protocols, each measured with servers of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Protocol {
    /// NTP, with a MAC or without: chronyd with the key file.
    Ntp,
    /// NTS-NTP: chronyd as an NTS server.
    Nts,
    /// Roughtime: roughenough 2.2 in chronyd's place.
    Roughtime,
}

impl Protocol {
    /// All three, in the order measured.
    pub const ALL: [Self; 3] = [Self::Ntp, Self::Nts, Self::Roughtime];

    /// How the report names it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Ntp => "NTP",
            Self::Nts => "NTS-NTP",
            Self::Roughtime => "Roughtime",
        }
    }

    /// A short tag for file names, and the name `--protocols` takes.
    #[must_use]
    pub fn tag(self) -> &'static str {
        match self {
            Self::Ntp => "ntp",
            Self::Nts => "nts",
            Self::Roughtime => "roughtime",
        }
    }

    /// A comma-separated list of tags (`ntp,nts`), each once at most.
    ///
    /// # Errors
    /// An empty list, an unknown name or one named twice.
    pub fn parse_list(text: &str) -> Result<Vec<Self>, String> {
        let mut out = Vec::new();
        for name in text.split(',').map(str::trim) {
            let p = Self::ALL
                .into_iter()
                .find(|p| p.tag() == name)
                .ok_or_else(|| format!("`{name}`: not a protocol (ntp, nts, roughtime)"))?;
            if out.contains(&p) {
                return Err(format!("`{name}` named twice"));
            }
            out.push(p);
        }
        Ok(out)
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

    /// How the report names it (NTP's and NTS-NTP's names).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Chronyd => "chronyd",
            Self::Sockets => "authtime (sockets)",
            Self::Xdp => "authtime (AF_XDP)",
        }
    }

    /// How the report names it for `protocol`: the peer of Roughtime is
    /// roughenough.
    #[must_use]
    pub fn name_for(self, protocol: Protocol) -> &'static str {
        match (self, protocol) {
            (Self::Chronyd, Protocol::Roughtime) => "roughenough",
            _ => self.name(),
        }
    }
}

/// What the section measures, and for how long.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// NTP request rates, one step each.
    pub rates: Vec<f64>,
    /// NTS-NTP request rates.
    pub nts_rates: Vec<f64>,
    /// Roughtime request rates.
    pub roughtime_rates: Vec<f64>,
    /// Authentication modes (and protocols) measured.
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
    /// A full run: NTP at 10k to 160k requests/s doubling, CMAC and plain;
    /// NTS-NTP at 5k to 80k; Roughtime at 2.5k to 40k; 2 s per measurement,
    /// 2 rounds (about 5 minutes).
    #[must_use]
    pub fn full() -> Self {
        Self {
            rates: vec![10_000.0, 20_000.0, 40_000.0, 80_000.0, 160_000.0],
            nts_rates: vec![5_000.0, 10_000.0, 20_000.0, 40_000.0, 80_000.0],
            roughtime_rates: vec![2_500.0, 5_000.0, 10_000.0, 20_000.0, 40_000.0],
            auths: Auth::ALL.to_vec(),
            step: Duration::from_secs(2),
            rounds: 2,
            drain: Duration::from_millis(300),
            pause: Duration::from_millis(200),
            sockets: 4,
        }
    }

    /// `--quick`: NTP at 10k, 40k and 160k requests/s, NTS-NTP at 5k and
    /// 20k, Roughtime at 2.5k and 10k, 1 s per measurement, one round (about
    /// a minute).
    #[must_use]
    pub fn quick() -> Self {
        Self {
            rates: vec![10_000.0, 40_000.0, 160_000.0],
            nts_rates: vec![5_000.0, 20_000.0],
            roughtime_rates: vec![2_500.0, 10_000.0],
            step: Duration::from_secs(1),
            rounds: 1,
            drain: Duration::from_millis(200),
            pause: Duration::from_millis(100),
            ..Self::full()
        }
    }

    /// The smoke test's: one second of 10k CMAC requests/s per server
    /// (enough CPU for `/proc`'s 10 ms ticks to show), one second of 2k
    /// NTS-NTP and of 2k Roughtime requests/s.
    #[must_use]
    pub fn smoke() -> Self {
        Self {
            rates: vec![10_000.0],
            nts_rates: vec![2_000.0],
            roughtime_rates: vec![2_000.0],
            auths: vec![Auth::Cmac, Auth::Interleaved, Auth::Nts, Auth::Roughtime],
            step: Duration::from_secs(1),
            rounds: 1,
            drain: Duration::from_millis(200),
            pause: Duration::from_millis(50),
            sockets: 4,
        }
    }

    /// The rates of `auth`'s steps.
    #[must_use]
    pub fn rates_for(&self, auth: Auth) -> &[f64] {
        match auth.protocol() {
            Protocol::Ntp => &self.rates,
            Protocol::Nts => &self.nts_rates,
            Protocol::Roughtime => &self.roughtime_rates,
        }
    }

    /// This plan with only `protocol`'s authentications.
    #[must_use]
    pub fn only(&self, protocol: Protocol) -> Self {
        let mut plan = self.clone();
        plan.auths.retain(|a| a.protocol() == protocol);
        plan
    }

    /// The protocols of `auths`, in the order measured.
    #[must_use]
    pub fn protocols(&self) -> Vec<Protocol> {
        Protocol::ALL
            .into_iter()
            .filter(|&p| self.auths.iter().any(|a| a.protocol() == p))
            .collect()
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
    /// The NTP generator's report.
    pub report: Option<LoadReport>,
    /// The NTS generator's report (NTS-NTP).
    pub nts: Option<StepReport>,
    /// The Roughtime generator's report.
    pub roughtime: Option<PacedReport>,
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
    /// The protocol it serves here.
    pub protocol: Protocol,
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
    /// Each of the three servers of each protocol, measured or why not.
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
    /// Whether `server` was measured for `protocol`.
    #[must_use]
    pub fn measured(&self, protocol: Protocol, server: ServerKind) -> bool {
        self.servers
            .iter()
            .any(|s| s.protocol == protocol && s.server == server && s.not_available.is_none())
    }
}

/// Runs the section (`--quick` or full), only `protocols` when given
/// (`--protocols`; default all).
///
/// # Errors
/// None in practice: what cannot be measured is said in the report.
pub fn run(
    quick: bool,
    protocols: Option<&[Protocol]>,
    progress: &mut Progress<'_>,
) -> Result<Section, String> {
    let mut plan = if quick { Plan::quick() } else { Plan::full() };
    if let Some(protocols) = protocols {
        plan.auths.retain(|a| protocols.contains(&a.protocol()));
    }
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
    let material = Material::make(&pair, dir, key_file);
    let protocols = outcome.plan.protocols();
    let mut total = measurement_count(&outcome.plan);
    let mut done = 0;
    let (mut idle_before, mut idle_after) = (None, None);
    for (i, &protocol) in protocols.iter().enumerate() {
        // Declared after `pair`, so dropped (killed) before the namespaces go.
        let mut servers = start_servers(protocol, &pair, dir, &material, outcome);
        // The progress count leaves out the servers that did not start.
        let missing = ServerKind::ALL.len() - servers.len();
        total -= missing * measurement_count(&outcome.plan.only(protocol)) / ServerKind::ALL.len();
        if i == 0 {
            idle_before = idle_baseline();
        }
        measure_steps(
            protocol,
            &pair,
            &mut servers,
            &key,
            outcome,
            (&mut done, total),
            progress,
        );
        if i + 1 == protocols.len() {
            idle_after = idle_baseline();
        }
        drop(servers);
    }
    outcome.idle_busy_before_after = (idle_before, idle_after);
    outcome.idle_busy_per_s = match (idle_before, idle_after) {
        (Some(a), Some(b)) => Some(f64::midpoint(a, b)),
        (a, b) => a.or(b),
    };
    drop(pair);
}

/// Measurements the plan asks for with every server running.
fn measurement_count(plan: &Plan) -> usize {
    plan.auths
        .iter()
        .map(|&a| plan.rates_for(a).len() * plan.rounds * ServerKind::ALL.len())
        .sum()
}

/// Every step of `protocol` in the plan: each rate, round and
/// authentication, the servers in turn (the order alternating between
/// rounds).
#[allow(
    clippy::too_many_arguments,
    reason = "one call site, all of it context"
)]
fn measure_steps(
    protocol: Protocol,
    pair: &NetnsPair,
    servers: &mut [Server],
    key: &KeyEntry,
    outcome: &mut Outcome,
    (done, total): (&mut usize, usize),
    progress: &mut Progress<'_>,
) {
    let plan = outcome.plan.clone();
    let auths: Vec<Auth> = plan
        .auths
        .iter()
        .copied()
        .filter(|a| a.protocol() == protocol)
        .collect();
    let rates = auths
        .first()
        .map_or(&[][..], |&a| plan.rates_for(a))
        .to_vec();
    for rate in rates {
        for round in 0..plan.rounds {
            for &auth in &auths {
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
                            server.kind.name_for(protocol),
                            auth.name(),
                            round + 1
                        ),
                        *done,
                        total,
                    );
                    *done += 1;
                    let seed = 1 + round as u64 * 1_000_003 + rate as u64;
                    let m = measure(pair, server, &plan, (auth, rate, round, seed), key);
                    outcome.measurements.push(m);
                    std::thread::sleep(plan.pause);
                }
            }
        }
    }
}

/// Starts the three servers of `protocol` (the AF_XDP one only to see that
/// it starts), noting in `outcome` which could not be and why.
fn start_servers(
    protocol: Protocol,
    pair: &NetnsPair,
    dir: &TempDir,
    material: &Material,
    outcome: &mut Outcome,
) -> Vec<Server> {
    let mut servers = Vec::new();
    let started = section_xdp_servers::start(protocol, pair, dir, material);
    for (kind, started) in ServerKind::ALL.into_iter().zip(started) {
        let not_available = match started {
            Ok(server) => {
                servers.push(server);
                None
            }
            Err(e) => Some(e),
        };
        outcome.servers.push(ServerStatus {
            protocol,
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

/// What one measurement's generator brought back.
enum Loaded {
    Ntp(LoadReport),
    Nts(StepReport),
    Roughtime(PacedReport),
}

/// One measurement of `server`: `(auth, rate, round, seed)`.
fn measure(
    pair: &NetnsPair,
    server: &mut Server,
    plan: &Plan,
    (auth, rate, round, seed): (Auth, f64, usize, u64),
    key: &KeyEntry,
) -> Measurement {
    let mut m = Measurement {
        server: server.kind,
        auth,
        rate,
        round,
        report: None,
        nts: None,
        roughtime: None,
        cpu: None,
        error: None,
        generator_pinned: false,
        server_pinned: false,
    };
    // The AF_XDP server is started for this measurement, stopped after it.
    if server.config.is_some() {
        match section_xdp_servers::start_xdp_for_measurement(pair, server) {
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
    let (target, credentials) = (server.target, server.credentials.clone());
    let result = netns::run_in(&pair.generator, || {
        // The receivers the generator starts inherit this CPU (and namespace).
        let pinned = pin(0, GENERATOR_CPU);
        let loaded = load(plan, auth, rate, seed, target, &credentials, key, pid);
        (loaded, pinned)
    });
    match result {
        Ok((Ok((loaded, cpu)), pinned)) => {
            m.cpu = cpu;
            m.generator_pinned = pinned;
            match loaded {
                Loaded::Ntp(r) => m.report = Some(r),
                Loaded::Nts(r) => m.nts = Some(r),
                Loaded::Roughtime(r) => m.roughtime = Some(r),
            }
        }
        Ok((Err(e), _)) | Err(e) => m.error = Some(e),
    }
    if let Some(process) = server.process.as_mut()
        && let Err(e) = process.check_alive()
    {
        m.error = Some(e);
    }
    if server.config.is_some() {
        server.process = None;
    }
    m
}

/// Runs the generator of `auth` (in the generator's namespace), the CPU
/// counters read just before its load and just after: an NTS generator's
/// key exchanges, made first, are outside.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site, all of it context"
)]
fn load(
    plan: &Plan,
    auth: Auth,
    rate: f64,
    seed: u64,
    target: std::net::SocketAddr,
    credentials: &Credentials,
    key: &KeyEntry,
    pid: u32,
) -> Result<(Loaded, Option<StepCpu>), String> {
    match (auth, credentials) {
        (Auth::Cmac | Auth::Plain | Auth::Interleaved, _) => {
            let opts = LoadOptions {
                sockets: plan.sockets,
                drain: plan.drain,
                arrivals: Arrivals::Even,
                seed,
                interleaved: auth == Auth::Interleaved,
                ..LoadOptions::new(target, rate, plan.step)
            };
            let key = (auth != Auth::Plain).then_some(key);
            let before = Snapshot::take(pid);
            let report = load_ntp::run(&opts, key);
            let cpu = Snapshot::take(pid).since(&before);
            Ok((Loaded::Ntp(report?), cpu))
        }
        (Auth::Nts, Credentials::Nts { ca, ke }) => {
            let opts = NtsLoadOptions {
                ke_host: ke.ip().to_string(),
                ke_port: ke.port(),
                ca: Some(ca.clone()),
                ntp_target: None,
                mode: load_nts::Mode::Nts { ntp_per_ke: 0 },
                rate,
                duration: plan.step,
                timeout: plan.drain,
                connections_max: 64,
                sockets: plan.sockets,
                threads: 1,
                tls_resumption: false,
                key_exchange: KeyExchangeOffer::X25519Mlkem768,
            };
            let mut generator = load_nts::Generator::new(opts)?;
            generator.prepare()?;
            let before = Snapshot::take(pid);
            let report = generator.step(rate, plan.step, false);
            let cpu = Snapshot::take(pid).since(&before);
            Ok((Loaded::Nts(report?), cpu))
        }
        (Auth::Roughtime, Credentials::Roughtime { public_key }) => {
            let opts = PacedOptions {
                target,
                public_key: *public_key,
                versions: vec![Version::Rfc1],
                rate,
                duration: plan.step,
                drain: plan.drain,
                verify_every: ROUGHTIME_VERIFY_EVERY,
            };
            let before = Snapshot::take(pid);
            let report = load_roughtime_paced::run_paced(&opts);
            let cpu = Snapshot::take(pid).since(&before);
            Ok((Loaded::Roughtime(report?), cpu))
        }
        _ => Err(format!("no credentials for {}", auth.name())),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_parse_from_their_tags() {
        assert_eq!(
            Protocol::parse_list("nts, roughtime"),
            Ok(vec![Protocol::Nts, Protocol::Roughtime])
        );
        assert!(Protocol::parse_list("ntp,ntp").is_err());
        assert!(Protocol::parse_list("").is_err());
        assert!(Protocol::parse_list("ptp").is_err());
    }

    #[test]
    fn every_plan_gives_each_protocol_rates_and_stays_bounded() {
        for plan in [Plan::full(), Plan::quick(), Plan::smoke()] {
            for &auth in &plan.auths {
                assert!(!plan.rates_for(auth).is_empty(), "{auth:?}");
            }
            assert_eq!(plan.protocols(), Protocol::ALL.to_vec());
            // Every measurement's sending is bounded: at most a few minutes
            // of sending in all.
            let sending = plan.step * measurement_count(&plan) as u32;
            assert!(sending <= Duration::from_secs(300), "{sending:?}");
        }
    }
}
