//! Section `nts` (issue 6): the NTS paper's two experiments (seed 002) on
//! authtime and chronyd side by side, on this machine in the same run.
//!
//! Unloaded (its section IV, Table II, Figures 4 and 5): a low, open-loop
//! rate of whole NTS-KE sessions (d_CKE), NTS-protected exchanges (d_CNTS)
//! and plain exchanges (d_CNTP); authtime's server-side d_SKE, d_SNTS and
//! d_SNTP come from its metrics (chronyd exposes none). Scalability (section
//! V, Figures 7 to 12): ramps of NTS-KE, of NTS-NTP with the paper's three
//! exchanges per key exchange, and of NTS-NTP alone; per step the client-side
//! percentiles, the error share by class, the server's CPU and the
//! generator's own CPU; the knee is the highest offered rate whose p95 stays
//! under twice its unloaded value with under 0.1% errors.
//!
//! Fairness: each server is pinned to CPU 0 (chronyd with one NTS-KE helper
//! process for its one core, 512 connections, no rate limiting; authtime with
//! one NTP worker, one NTS-KE worker, 512 connections, rate limiting off),
//! both with the same CA-signed P-256 leaf; the generator runs on CPU 1.
//! The reporting lives in [`crate::section_nts_report`]; after the rounds,
//! [`crate::section_nts_flood`] adds a reconnect flood against both servers
//! with their per-client limits on (issue 19), and
//! [`crate::section_nts_groups`] authtime's NTS-KE with the hybrid
//! post-quantum key exchange and with X25519 alone, side by side (issue 20).

use std::time::Duration;

use serde::Serialize;

use crate::{
    Progress,
    load_nts::{Generator, KeyExchangeOffer, Mode, NtsLoadOptions},
    load_nts_stats::StepReport,
    report::Section,
    section_nts_flood::{CHRONYD_NTSRATELIMIT, FloodPlan, FloodRun},
    section_nts_groups::{GroupPlan, GroupRun},
    section_nts_server::{
        Certificates, Histogram, NtsServer, Scratch, find_chronyd, make_certificates, pin_current,
        server_histograms, start_authtime, start_authtime_with, start_chronyd,
    },
};

/// The CPU of the servers, and the generator's.
pub const SERVER_CPU: usize = 0;
/// The generator's CPU.
pub const LOAD_CPU: usize = 1;
/// A step passes with fewer errors than this share.
pub const MAX_ERRORS: f64 = 0.001;
/// A step passes with its p95 under this many times the unloaded p95.
pub const MAX_P95_GROWTH: f64 = 2.0;
/// Before a step the server must be idle: under this share of a core...
const SETTLE_IDLE: f64 = 0.05;
/// ...over a window this long...
const SETTLE_WINDOW: Duration = Duration::from_millis(100);
/// ...or the step starts anyway after this long.
const SETTLE_MAX: Duration = Duration::from_secs(5);

/// Rates and durations of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Rate of the unloaded runs, requests per second.
    pub unloaded_rate: f64,
    /// Length of each unloaded run.
    pub unloaded: Duration,
    /// Length of each ramp step.
    pub step: Duration,
    /// Timeout of one request.
    pub timeout: Duration,
    /// NTS-KE ramp, sessions per second.
    pub ke_rates: Vec<f64>,
    /// NTS-NTP ramp with 3 exchanges per key exchange, exchanges per second.
    pub mixed_rates: Vec<f64>,
    /// NTS-NTP ramp without key exchanges, exchanges per second.
    pub nts_rates: Vec<f64>,
    /// Rounds: each server measured this many times, alternating; knees are
    /// the median over the rounds.
    pub rounds: usize,
    /// Pin the servers to [`SERVER_CPU`] and the generator to [`LOAD_CPU`].
    pub pin: bool,
    /// The reconnect flood, once per server after the rounds.
    pub flood: FloodPlan,
    /// The key exchange groups side by side, on authtime after the rounds.
    pub groups: GroupPlan,
}

impl Plan {
    /// The plan of `--quick` (1 s steps) or of a full run (5 s steps).
    #[must_use]
    pub fn new(quick: bool) -> Self {
        if quick {
            Self {
                unloaded_rate: 100.0,
                unloaded: Duration::from_secs(3),
                step: Duration::from_secs(1),
                timeout: Duration::from_secs(1),
                ke_rates: vec![250.0, 500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0, 4000.0],
                mixed_rates: vec![300.0, 1500.0, 3000.0, 6000.0, 9000.0, 12_000.0],
                nts_rates: vec![
                    2000.0, 5000.0, 10_000.0, 20_000.0, 40_000.0, 80_000.0, 120_000.0, 160_000.0,
                ],
                rounds: 1,
                pin: true,
                flood: FloodPlan::new(true),
                groups: GroupPlan::new(true),
            }
        } else {
            Self {
                unloaded_rate: 100.0,
                unloaded: Duration::from_secs(10),
                step: Duration::from_secs(3),
                timeout: Duration::from_secs(2),
                ke_rates: vec![
                    250.0, 500.0, 750.0, 1000.0, 1250.0, 1500.0, 1750.0, 2000.0, 2500.0, 3000.0,
                    3500.0, 4000.0,
                ],
                mixed_rates: vec![
                    300.0, 1500.0, 3000.0, 4500.0, 6000.0, 7500.0, 9000.0, 12_000.0,
                ],
                nts_rates: vec![
                    5000.0, 10_000.0, 20_000.0, 40_000.0, 60_000.0, 80_000.0, 100_000.0, 120_000.0,
                    160_000.0,
                ],
                rounds: 3,
                pin: true,
                flood: FloodPlan::new(false),
                groups: GroupPlan::new(false),
            }
        }
    }
}

impl Plan {
    /// A few seconds per server, for tests: every part of the section runs
    /// (unloaded steps, the three ramps, the knees, the report), at rates a
    /// debug build on a busy 2-core machine keeps up with. Its figures mean
    /// nothing. Nothing is pinned: on a shared machine a pinned generator
    /// waits for its CPU while the other one may be idle.
    #[must_use]
    pub fn smoke() -> Self {
        Self {
            unloaded_rate: 50.0,
            unloaded: Duration::from_millis(500),
            step: Duration::from_millis(500),
            timeout: Duration::from_secs(1),
            ke_rates: vec![20.0, 40.0],
            mixed_rates: vec![60.0],
            nts_rates: vec![200.0, 400.0],
            rounds: 1,
            pin: false,
            flood: FloodPlan::smoke(),
            groups: GroupPlan::smoke(),
        }
    }
}

/// A load step with the server's side of it.
#[derive(Debug, Clone, Serialize)]
pub struct MeasuredStep {
    /// The generator's report.
    pub load: StepReport,
    /// Server CPU seconds (its processes and their children) during the step.
    pub server_cpu_s: Option<f64>,
    /// The user-space part of `server_cpu_s` (the rest is the kernel's).
    pub server_user_s: Option<f64>,
    /// Server-side means of the step (d_SKE, d_SNTS, d_SNTP), µs, when exported.
    pub server_mean_us: [Option<f64>; 3],
    /// The server-side histograms of the step (differences), when exported.
    #[serde(skip)]
    pub server_histograms: [Option<Histogram>; 3],
    /// Whether the step met the knee's conditions.
    pub passed: bool,
    /// The unloaded p95 it was judged against, µs.
    pub baseline_p95_us: f64,
    /// Share of the machine's CPU time the hypervisor took during the step
    /// (steal time), when the kernel reports it.
    pub steal: Option<f64>,
}

impl MeasuredStep {
    /// Server CPU seconds per answered request.
    #[must_use]
    pub fn cpu_per_request(&self) -> Option<f64> {
        let answered = self.load.ke_ok + self.load.ntp_ok;
        self.server_cpu_s
            .filter(|_| answered > 0)
            .map(|c| c / answered as f64)
    }

    /// Server user-space CPU seconds per answered request.
    #[must_use]
    pub fn user_per_request(&self) -> Option<f64> {
        let answered = self.load.ke_ok + self.load.ntp_ok;
        self.server_user_s
            .filter(|_| answered > 0)
            .map(|c| c / answered as f64)
    }

    /// Share of the step's wall time the server was on CPU.
    #[must_use]
    pub fn server_busy(&self) -> Option<f64> {
        self.server_cpu_s
            .map(|c| c / (self.load.duration_s + 1e-9).max(self.load.dispatch_s))
    }

    /// The generator, not the server, limited the step.
    #[must_use]
    pub fn generator_limited(&self) -> bool {
        self.load.fell_behind || self.load.generator_cpu >= 0.95
    }
}

/// Where a ramp's knee is.
#[derive(Debug, Clone, Serialize)]
pub struct Knee {
    /// The highest passing rate before the first failing step.
    pub rate: Option<f64>,
    /// The server did not fail first (the generator did, or the ramp ended).
    pub lower_bound: bool,
    /// Why the ramp's passing stopped.
    pub stopped_by: String,
}

/// One ramp on one server.
#[derive(Debug, Clone, Serialize)]
pub struct Ramp {
    /// `nts-ke`, `nts-3` or `nts-ntp`.
    pub kind: &'static str,
    /// The unloaded p95 the steps are judged against, µs.
    pub unloaded_p95_us: f64,
    /// The steps, in rate order.
    pub steps: Vec<MeasuredStep>,
    /// The knee.
    pub knee: Knee,
}

/// Everything measured on one server in one round.
#[derive(Debug, Clone, Serialize)]
pub struct ServerRun {
    /// `authtime` or `chronyd`.
    pub server: &'static str,
    /// The round (0 first).
    pub round: usize,
    /// The server was pinned to CPU 0.
    pub pinned: bool,
    /// The generator was pinned to CPU 1.
    pub load_pinned: bool,
    /// Unloaded NTS-KE.
    pub ke: Option<MeasuredStep>,
    /// Unloaded NTS-NTP.
    pub nts: Option<MeasuredStep>,
    /// Unloaded plain NTP.
    pub ntp: Option<MeasuredStep>,
    /// The ramps.
    pub ramps: Vec<Ramp>,
    /// The first error that stopped the measurements.
    pub error: Option<String>,
}

fn options(server: &NtsServer, certs: &Certificates, plan: &Plan, mode: Mode) -> NtsLoadOptions {
    NtsLoadOptions {
        ke_host: "localhost".into(),
        ke_port: server.ke.port(),
        ca: Some(certs.ca.clone()),
        ntp_target: Some(server.ntp),
        mode,
        rate: plan.unloaded_rate,
        duration: plan.unloaded,
        timeout: plan.timeout,
        connections_max: 1000,
        sockets: 4,
        threads: 1,
        tls_resumption: false,
        key_exchange: KeyExchangeOffer::X25519Mlkem768,
    }
}

/// Waits (at most [`SETTLE_MAX`]) until the server is idle: after an
/// overloaded step it may still be working through connections its clients
/// gave up on, and that work must not be charged to the next step.
pub(crate) fn settle(server: &NtsServer) {
    let started = std::time::Instant::now();
    while started.elapsed() < SETTLE_MAX {
        let Some(a) = server.cpu_seconds() else {
            return;
        };
        std::thread::sleep(SETTLE_WINDOW);
        let Some(b) = server.cpu_seconds() else {
            return;
        };
        if (b - a) / SETTLE_WINDOW.as_secs_f64() < SETTLE_IDLE {
            return;
        }
    }
}

fn measured_step(
    generator: &mut Generator,
    server: &mut NtsServer,
    rate: f64,
    duration: Duration,
    keep: bool,
) -> Result<MeasuredStep, String> {
    server.check_alive()?;
    settle(server);
    let (cpu0, h0) = (server.cpu_split(), server_histograms(server));
    let (steal0, wall0) = (crate::cpu_time::steal_seconds(), std::time::Instant::now());
    let load = generator.step(rate, duration, keep)?;
    let (steal1, wall) = (crate::cpu_time::steal_seconds(), wall0.elapsed());
    let (cpu1, h1) = (server.cpu_split(), server_histograms(server));
    server.check_alive()?;
    let mut hist: [Option<Histogram>; 3] = Default::default();
    for (i, (a, b)) in h0.iter().zip(&h1).enumerate() {
        if let (Some(a), Some(b)) = (a, b) {
            hist[i] = Some(b.since(a));
        }
    }
    Ok(MeasuredStep {
        load,
        server_cpu_s: cpu0.zip(cpu1).map(|(a, b)| (b.0 + b.1) - (a.0 + a.1)),
        server_user_s: cpu0.zip(cpu1).map(|(a, b)| b.0 - a.0),
        server_mean_us: hist.clone().map(|h| h.and_then(|h| h.mean_us())),
        server_histograms: hist,
        passed: false,
        baseline_p95_us: 0.0,
        steal: steal0.zip(steal1).map(|(a, b)| {
            let cpus = std::thread::available_parallelism().map_or(1, usize::from);
            (b - a) / (wall.as_secs_f64() * cpus as f64).max(1e-9)
        }),
    })
}

/// Whether `step` meets the knee's conditions against `unloaded_p95_us`.
#[must_use]
pub fn passes(step: &MeasuredStep, unloaded_p95_us: f64) -> bool {
    let p = step.load.primary();
    p.count > 0
        && p.p95_us < MAX_P95_GROWTH * unloaded_p95_us
        && step.load.error_share() < MAX_ERRORS
        && !step.load.fell_behind
}

/// The knee of `steps` (ascending rates, `passed` set): the highest rate
/// that passed (issue 6's definition), and what stopped the ramp there, the
/// first failing step above it. A lone failing step below a pass (a noisy
/// moment on a shared machine) does not lower the knee; the ramp itself
/// stops after two failing steps in a row.
#[must_use]
pub fn knee(steps: &[MeasuredStep]) -> Knee {
    let best = steps.iter().rposition(|s| s.passed);
    let rate = best.and_then(|i| steps.get(i)).map(|s| s.load.rate);
    let above = best.map_or(0, |i| i + 1);
    let Some(step) = steps.get(above) else {
        return Knee {
            rate,
            lower_bound: rate.is_some(),
            stopped_by: "no failure up to the ramp's end".into(),
        };
    };
    let load = &step.load;
    let why = if step.generator_limited() {
        format!(
            "the generator at {:.0}/s (fell behind: {}, its CPU {:.0}%)",
            load.rate,
            load.fell_behind,
            100.0 * load.generator_cpu
        )
    } else if load.error_share() >= MAX_ERRORS {
        format!(
            "{:.2}% errors at {:.0}/s",
            100.0 * load.error_share(),
            load.rate
        )
    } else {
        format!(
            "p95 {:.0} µs > {MAX_P95_GROWTH}× {:.0} µs at {:.0}/s",
            load.primary().p95_us,
            step.baseline_p95_us,
            load.rate
        )
    };
    Knee {
        rate,
        lower_bound: step.generator_limited(),
        stopped_by: why,
    }
}

#[allow(clippy::too_many_arguments, reason = "plain data, three call sites")]
fn ramp(
    kind: &'static str,
    mode: Mode,
    rates: &[f64],
    unloaded_p95_us: f64,
    server: &mut NtsServer,
    certs: &Certificates,
    plan: &Plan,
    progress: &mut Progress<'_>,
    step_no: &mut usize,
    steps_total: usize,
) -> Result<Ramp, String> {
    progress.step(
        &format!("nts: {} {kind} ramp ({} steps)", server.name, rates.len()),
        *step_no,
        steps_total,
    );
    *step_no += 1;
    let mut generator = Generator::new(options(server, certs, plan, mode))?;
    let mut steps: Vec<MeasuredStep> = Vec::new();
    let mut failures = 0;
    for &rate in rates {
        let mut step = measured_step(&mut generator, server, rate, plan.step, false)?;
        step.passed = passes(&step, unloaded_p95_us);
        step.baseline_p95_us = unloaded_p95_us;
        let hopeless = step.load.error_share() > 0.05 || step.load.fell_behind;
        failures = if step.passed { 0 } else { failures + 1 };
        steps.push(step);
        // Past a clear failure the server (or generator) only drowns further.
        if hopeless || failures >= 2 {
            break;
        }
    }
    let knee = knee(&steps);
    Ok(Ramp {
        kind,
        unloaded_p95_us,
        steps,
        knee,
    })
}

fn measure(
    server: &mut NtsServer,
    certs: &Certificates,
    plan: &Plan,
    progress: &mut Progress<'_>,
    step_no: &mut usize,
    steps_total: usize,
) -> ServerRun {
    let mut run = ServerRun {
        server: server.name,
        round: 0,
        pinned: server.pinned,
        load_pinned: plan.pin && pin_current(LOAD_CPU),
        ke: None,
        nts: None,
        ntp: None,
        ramps: Vec::new(),
        error: None,
    };
    if let Err(e) = measure_into(
        &mut run,
        server,
        certs,
        plan,
        progress,
        step_no,
        steps_total,
    ) {
        run.error = Some(e);
    }
    run
}

fn measure_into(
    run: &mut ServerRun,
    server: &mut NtsServer,
    certs: &Certificates,
    plan: &Plan,
    progress: &mut Progress<'_>,
    step_no: &mut usize,
    steps_total: usize,
) -> Result<(), String> {
    progress.step(
        &format!("nts: {} unloaded", server.name),
        *step_no,
        steps_total,
    );
    *step_no += 1;
    let unloaded = |mode: Mode, server: &mut NtsServer| {
        let mut generator = Generator::new(options(server, certs, plan, mode))?;
        measured_step(
            &mut generator,
            server,
            plan.unloaded_rate,
            plan.unloaded,
            true,
        )
    };
    run.ke = Some(unloaded(Mode::Ke, server)?);
    run.nts = Some(unloaded(Mode::Nts { ntp_per_ke: 0 }, server)?);
    run.ntp = Some(unloaded(Mode::Ntp, server)?);
    let p95 = |s: &Option<MeasuredStep>| s.as_ref().map_or(0.0, |s| s.load.primary().p95_us);
    let (ke_p95, nts_p95) = (p95(&run.ke), p95(&run.nts));
    let experiments = [
        ("nts-ke", Mode::Ke, &plan.ke_rates, ke_p95),
        (
            "nts-3",
            Mode::Nts { ntp_per_ke: 3 },
            &plan.mixed_rates,
            nts_p95,
        ),
        (
            "nts-ntp",
            Mode::Nts { ntp_per_ke: 0 },
            &plan.nts_rates,
            nts_p95,
        ),
    ];
    for (kind, mode, rates, base) in experiments {
        let ramp = ramp(
            kind,
            mode,
            rates,
            base,
            server,
            certs,
            plan,
            progress,
            step_no,
            steps_total,
        )?;
        run.ramps.push(ramp);
    }
    Ok(())
}

/// Runs the section.
///
/// # Errors
/// A message when the temporary files or the certificates cannot be made.
pub fn run(quick: bool, progress: &mut Progress<'_>) -> Result<Section, String> {
    run_plan(Plan::new(quick), quick, progress)
}

/// Runs the section with `plan` (`quick` only changes the report's wording).
///
/// # Errors
/// As [`run`].
pub fn run_plan(plan: Plan, quick: bool, progress: &mut Progress<'_>) -> Result<Section, String> {
    let started = std::time::Instant::now();
    let dir = Scratch::new()?;
    let certs = make_certificates(&dir)?;
    let mut runs = Vec::new();
    let mut notes = Vec::new();
    let steps_total = 8 * plan.rounds;
    let chronyd = find_chronyd();
    if chronyd.is_none() {
        notes.push(
            "chronyd was not found (PATH, /usr/sbin, /sbin): only authtime was measured \
             (Debian package `chrony`)."
                .into(),
        );
    }
    let server_cpu = plan.pin.then_some(SERVER_CPU);
    for round in 0..plan.rounds {
        for (slot, name) in ["authtime", "chronyd"].into_iter().enumerate() {
            let started = match (name, &chronyd) {
                ("authtime", _) => start_authtime(&dir, &certs, server_cpu),
                (_, Some(chronyd)) => start_chronyd(chronyd, &dir, &certs, server_cpu, 1, None),
                (_, None) => continue,
            };
            let mut server = match started {
                Ok(server) => server,
                Err(e) => {
                    notes.push(format!("{name} could not be measured: {e}."));
                    continue;
                }
            };
            let mut step_no = 8 * round + 4 * slot;
            let mut run = measure(
                &mut server,
                &certs,
                &plan,
                progress,
                &mut step_no,
                steps_total,
            );
            run.round = round;
            runs.push(run);
        }
    }
    let groups = group_runs(&dir, &certs, &plan, &mut notes);
    let floods = flood_runs(&dir, &certs, chronyd.as_deref(), &plan, &mut notes);
    // The lab's later work is not the generator's: let this thread run anywhere again.
    crate::section_nts_server::unpin_current();
    let mut section =
        crate::section_nts_report::section(&runs, &plan, notes, started.elapsed(), quick);
    section
        .tables
        .push(crate::section_nts_flood::table(&floods, &plan.flood));
    section.data["flood"] = serde_json::json!(floods);
    section
        .tables
        .push(crate::section_nts_groups::table(&groups, &plan.groups));
    section.data["groups"] = serde_json::json!(groups);
    Ok(section)
}

/// The key exchange groups side by side on a fresh authtime, placed as in
/// the rounds; a note instead of rows when it cannot be measured.
fn group_runs(
    dir: &Scratch,
    certs: &Certificates,
    plan: &Plan,
    notes: &mut Vec<String>,
) -> Vec<GroupRun> {
    if plan.pin {
        let _ = pin_current(LOAD_CPU);
    }
    let measured =
        start_authtime(dir, certs, plan.pin.then_some(SERVER_CPU)).and_then(|mut server| {
            crate::section_nts_groups::measure(&mut server, certs, &plan.groups)
        });
    measured.unwrap_or_else(|e| {
        notes.push(format!("key exchange groups not measured: {e}."));
        Vec::new()
    })
}

/// The reconnect flood against authtime (default per-client limits) and
/// chronyd (`ntsratelimit`), each freshly started and placed as in the
/// rounds; a server that cannot be measured gets a note instead of a row.
fn flood_runs(
    dir: &Scratch,
    certs: &Certificates,
    chronyd: Option<&std::path::Path>,
    plan: &Plan,
    notes: &mut Vec<String>,
) -> Vec<FloodRun> {
    let server_cpu = plan.pin.then_some(SERVER_CPU);
    if plan.pin {
        // The flood's and the honest clients' runtimes inherit this.
        let _ = pin_current(LOAD_CPU);
    }
    let mut floods = Vec::new();
    for name in ["authtime", "chronyd"] {
        let (started, limit) = match (name, chronyd) {
            ("authtime", _) => (
                start_authtime_with(dir, certs, server_cpu, true),
                "default client-limit".to_owned(),
            ),
            (_, Some(chronyd)) => (
                start_chronyd(
                    chronyd,
                    dir,
                    certs,
                    server_cpu,
                    1,
                    Some(CHRONYD_NTSRATELIMIT),
                ),
                format!("ntsratelimit {CHRONYD_NTSRATELIMIT}"),
            ),
            (_, None) => continue,
        };
        let measured = started.and_then(|mut server| {
            crate::section_nts_flood::measure(&mut server, &limit, certs, &plan.flood)
        });
        match measured {
            Ok(run) => floods.push(run),
            Err(e) => notes.push(format!("{name}: reconnect flood not measured: {e}.")),
        }
    }
    floods
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load_nts_stats::Tally;

    fn step(rate: f64, p95_samples: Vec<u32>, errors: u64, behind: bool) -> MeasuredStep {
        let mut tally = Tally {
            ke_us: p95_samples,
            ..Tally::default()
        };
        tally.ke_errors.timeout = errors;
        let load = tally.report(
            Mode::Ke,
            rate,
            Duration::from_secs(1),
            Duration::from_secs(1),
            0,
            Duration::ZERO,
            behind,
            0.5,
            false,
        );
        let mut s = MeasuredStep {
            load,
            server_cpu_s: Some(0.5),
            server_user_s: Some(0.1),
            server_mean_us: [None; 3],
            server_histograms: Default::default(),
            passed: false,
            baseline_p95_us: 1000.0,
            steal: None,
        };
        s.passed = passes(&s, 1000.0);
        s
    }

    #[test]
    fn the_knee_is_the_highest_passing_rate() {
        let steps = vec![
            step(100.0, vec![900; 100], 0, false),
            step(200.0, vec![1500; 1000], 0, false),
            step(300.0, vec![2500; 1000], 0, false),
            step(400.0, vec![2500; 1000], 0, false),
        ];
        let k = knee(&steps);
        assert_eq!(k.rate, Some(200.0));
        assert!(!k.lower_bound);
        assert!(
            k.stopped_by.contains("p95") && k.stopped_by.contains("300/s"),
            "{}",
            k.stopped_by
        );

        // One noisy failing step below a pass does not lower the knee.
        let noisy = vec![
            step(100.0, vec![900; 100], 0, false),
            step(200.0, vec![2500; 1000], 0, false),
            step(300.0, vec![1500; 1000], 0, false),
            step(400.0, vec![2500; 1000], 0, false),
            step(500.0, vec![2500; 1000], 0, false),
        ];
        let k = knee(&noisy);
        assert_eq!(k.rate, Some(300.0));
        assert!(k.stopped_by.contains("400/s"), "{}", k.stopped_by);

        let errors = vec![step(100.0, vec![900; 1000], 2, false)];
        let k = knee(&errors);
        assert_eq!(k.rate, None);
        assert!(k.stopped_by.contains("errors"), "{}", k.stopped_by);

        let behind = vec![
            step(100.0, vec![900; 100], 0, false),
            step(200.0, vec![900; 100], 0, true),
        ];
        let k = knee(&behind);
        assert_eq!(k.rate, Some(100.0));
        assert!(k.lower_bound && k.stopped_by.contains("generator"));

        let all = vec![step(100.0, vec![900; 100], 0, false)];
        assert!(knee(&all).lower_bound);
    }
}
