//! Section `accuracy` (issue 26, part 5): how early the transmit timestamp
//! (T3) in each reply is, for authtime and chronyd side by side, in basic and
//! interleaved mode (RFC 9769), with evenly spaced and with Poisson
//! arrivals, at rising request rates.
//!
//! **Setup.** Two network namespaces of the section's own (named with the
//! pid) joined by a veth pair ([`crate::netns`]): both servers run in one
//! (`ip netns exec`), each on an address of its own, pinned to CPU 0; the
//! load generator ([`crate::load_ntp`]) runs in the other, pinned to CPU 1.
//! Every datagram crosses the veth, where the kernel stamps it; no traffic
//! leaves the pair. The namespaces are deleted when the section ends, on
//! every path (a guard), after the servers are killed (their guards).
//!
//! **Why the generator is a thread here, not a process.** A thread of the
//! lab that enters the generator's namespace with `setns` ([`netns::run_in`])
//! runs the same generator as `authtime-lab load ntp`, returns its report as
//! a value (no JSON round trip, no second executable to find: the library
//! and its tests do not have `authtime-lab` at hand), and leaves the rest of
//! the process where it was.
//!
//! **What is measured.** Generator and servers read one clock, so the
//! kernel's receive timestamp of a reply at the generator minus the T3 it
//! carries is exactly how early that T3 was, plus the veth crossing (the
//! receive stamp is taken when the server's send hands the datagram to the
//! peer device: about 0.1 to 0.3 µs). Interleaved replies carry the kernel's
//! transmit time of the previous reply to the same client, measured against
//! that previous reply's receive stamp ([`crate::load_ntp_accuracy`]).
//!
//! Servers are measured in turn within each step (the order alternates
//! between rounds), so that whatever else the machine does hits both.

use std::{
    fs,
    net::{Ipv4Addr, SocketAddr},
    process::Stdio,
    time::{Duration, Instant},
};

use serde::Serialize;

use crate::{
    Progress,
    load_ntp::{self, Arrivals, LoadOptions, LoadReport},
    netns::{self, NetnsPair},
    report::Section,
    scheduling::{cpus_allowed, pin, pin_process},
    section_ntp::{ServerProcess, TempDir, find_chronyd, wait_ready},
};

/// The CPU the servers are pinned to, and the generator's.
const SERVER_CPU: usize = 0;
const GENERATOR_CPU: usize = 1;
/// The `[clock]` of the authtime under test: a stratum-1 declaration, as
/// chronyd's `local stratum 1` announces.
const CLOCK: &str = "[clock]\nsource = \"static\"\nstratum = 1\nreference-id = \"LOCL\"\n";

/// What the section measures, and for how long.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Request rates, one step each.
    pub rates: Vec<f64>,
    /// Sending time per measurement.
    pub step: Duration,
    /// Measurements of each server per step, mode and arrivals.
    pub rounds: usize,
    /// Arrival patterns measured.
    pub arrivals: Vec<Arrivals>,
    /// Wait for late replies after each measurement.
    pub drain: Duration,
    /// Pause between measurements.
    pub pause: Duration,
    /// Source sockets of the generator.
    pub sockets: usize,
    /// Rates of the overload part: basic requests, evenly spaced, while a
    /// busy loop shares the servers' CPU (a busy host), so that the servers'
    /// knees fall within the generator's reach.
    pub overload_rates: Vec<f64>,
}

impl Plan {
    /// A full run: 10k to 160k requests/s doubling, 2 s per measurement,
    /// 2 rounds, even and Poisson arrivals (about 4 minutes).
    #[must_use]
    pub fn full() -> Self {
        Self {
            rates: vec![10_000.0, 20_000.0, 40_000.0, 80_000.0, 160_000.0],
            step: Duration::from_secs(2),
            rounds: 2,
            arrivals: vec![Arrivals::Even, Arrivals::Poisson],
            drain: Duration::from_millis(300),
            pause: Duration::from_millis(200),
            sockets: 4,
            overload_rates: vec![40_000.0, 80_000.0, 160_000.0],
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
            overload_rates: vec![80_000.0, 160_000.0],
            ..Self::full()
        }
    }

    /// The smoke test's: 400 requests per server and mode, evenly spaced,
    /// 40 clients of 10 requests each.
    #[must_use]
    pub fn smoke() -> Self {
        Self {
            rates: vec![400.0],
            step: Duration::from_secs(1),
            rounds: 1,
            arrivals: vec![Arrivals::Even],
            drain: Duration::from_millis(300),
            pause: Duration::from_millis(50),
            sockets: 4,
            overload_rates: Vec::new(),
        }
    }

    /// Measurements for `modes` (server, mode) pairs and `overloaded`
    /// servers.
    fn measurements(&self, modes: usize, overloaded: usize) -> usize {
        self.rates.len() * self.rounds * self.arrivals.len() * modes
            + self.overload_rates.len() * overloaded
    }
}

/// One measurement: one server, mode, arrival pattern, rate and round.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    /// `authtime` or `chronyd`.
    pub server: &'static str,
    /// Interleaved requests.
    pub interleaved: bool,
    /// Arrival pattern.
    pub arrivals: Arrivals,
    /// Requests per second asked for.
    pub rate: f64,
    /// Round, from 0.
    pub round: usize,
    /// The generator's report.
    pub report: Option<LoadReport>,
    /// Why there is none.
    pub error: Option<String>,
    /// The generator's thread was pinned to its CPU.
    pub generator_pinned: bool,
}

/// A server under test, running in the server namespace.
struct Server {
    name: &'static str,
    /// Measured in basic mode only (a variant whose interleaved replies
    /// are the same as another server's).
    basic_only: bool,
    /// Measured in the overload part only.
    overload_only: bool,
    process: ServerProcess,
    target: SocketAddr,
    pinned: bool,
}

/// What a run of the section found, for the report.
#[derive(Debug, Serialize)]
pub struct Outcome {
    /// The plan run.
    pub plan: Plan,
    /// Every measurement, in the order made.
    pub measurements: Vec<Measurement>,
    /// The overload part's measurements (a busy loop on the servers' CPU).
    pub overload: Vec<Measurement>,
    /// Servers measured and whether each was pinned to its CPU.
    pub servers: Vec<(&'static str, bool)>,
    /// Namespaces made (empty when none could be).
    pub namespaces: Vec<String>,
    /// They no longer exist after the section.
    pub namespaces_removed: bool,
    /// chronyd's `serverstats` after the measurements, if chronyc could ask.
    pub chronyd_serverstats: Option<String>,
    /// Why parts were skipped.
    pub notes: Vec<String>,
    /// Seconds the section took.
    pub elapsed_s: f64,
}

/// Runs the section (`--quick` or full).
///
/// # Errors
/// None in practice: what cannot be measured is said in the report.
pub fn run(quick: bool, progress: &mut Progress<'_>) -> Result<Section, String> {
    let plan = if quick { Plan::quick() } else { Plan::full() };
    let outcome = run_plan(plan, progress);
    Ok(crate::section_accuracy_report::section(&outcome, quick))
}

/// Runs `plan`: skips with a note when namespaces cannot be made here (not
/// root, no iproute2), measures what it can otherwise.
pub fn run_plan(plan: Plan, progress: &mut Progress<'_>) -> Outcome {
    let started = Instant::now();
    let mut outcome = Outcome {
        plan,
        measurements: Vec::new(),
        overload: Vec::new(),
        servers: Vec::new(),
        namespaces: Vec::new(),
        namespaces_removed: true,
        chronyd_serverstats: None,
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
    match TempDir::named("accuracy") {
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
    // chronyd refuses a command socket in a directory others can read.
    let _ = fs::set_permissions(
        dir.path(""),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    );
    let pair = match NetnsPair::create("acc", 4) {
        Ok(pair) => pair,
        Err(e) => {
            outcome.notes.push(format!(
                "Skipped: the network namespaces could not be made: {e}."
            ));
            return;
        }
    };
    outcome.namespaces = vec![pair.server.clone(), pair.generator.clone()];
    // Declared after `pair`, so dropped (killed) before the namespaces go.
    let mut servers = Vec::new();
    for (variant, addr) in [
        (AuthtimeVariant::Default, pair.server_addrs[0]),
        (AuthtimeVariant::ClockReading, pair.server_addrs[2]),
        (AuthtimeVariant::TightAge, pair.server_addrs[3]),
    ] {
        if variant == AuthtimeVariant::TightAge && outcome.plan.overload_rates.is_empty() {
            continue;
        }
        match start_authtime(&pair, dir, addr, variant) {
            Ok(s) => servers.push(s),
            Err(e) => outcome
                .notes
                .push(format!("{} could not be measured: {e}.", variant.name())),
        }
    }
    match find_chronyd() {
        None => outcome.notes.push(
            "chronyd was not found (PATH, /usr/sbin, /sbin): only authtime was measured \
             (Debian package `chrony`)."
                .into(),
        ),
        Some(chronyd) => match start_chronyd(&pair, dir, &chronyd, pair.server_addrs[1]) {
            Ok(s) => servers.push(s),
            Err(e) => outcome
                .notes
                .push(format!("chronyd could not be measured: {e}.")),
        },
    }
    outcome.servers = servers.iter().map(|s| (s.name, s.pinned)).collect();
    let plan = outcome.plan.clone();
    let modes = servers
        .iter()
        .map(|s| match (s.overload_only, s.basic_only) {
            (true, _) => 0,
            (false, true) => 1,
            (false, false) => 2,
        })
        .sum();
    let overloaded = servers.iter().filter(|s| !s.basic_only).count();
    let total = plan.measurements(modes, overloaded);
    let mut done = 0;
    for &rate in &plan.rates {
        for round in 0..plan.rounds {
            for &arrivals in &plan.arrivals {
                for interleaved in [false, true] {
                    // Alternate which server goes first from round to round.
                    let order: Vec<usize> = if round % 2 == 0 {
                        (0..servers.len()).collect()
                    } else {
                        (0..servers.len()).rev().collect()
                    };
                    for i in order {
                        let server = &mut servers[i];
                        if (interleaved && server.basic_only) || server.overload_only {
                            continue;
                        }
                        progress.step(
                            &format!(
                                "accuracy: {} at {rate:.0}/s, {} mode, {} arrivals, round {}",
                                server.name,
                                if interleaved { "interleaved" } else { "basic" },
                                arrivals.name(),
                                round + 1
                            ),
                            done,
                            total,
                        );
                        done += 1;
                        let opts = LoadOptions {
                            sockets: plan.sockets,
                            drain: plan.drain,
                            arrivals,
                            // Both servers of a step see the same schedule.
                            seed: 1 + round as u64 * 1_000_003 + rate as u64,
                            interleaved,
                            ..LoadOptions::new(server.target, rate, plan.step)
                        };
                        outcome
                            .measurements
                            .push(measure(&pair, server, &opts, round));
                        std::thread::sleep(plan.pause);
                    }
                }
            }
        }
    }
    if servers.iter().any(|s| s.name == "chronyd") {
        outcome.chronyd_serverstats = chronyd_serverstats(dir);
    }
    if !plan.overload_rates.is_empty() {
        let busy = BusyLoop::start(SERVER_CPU);
        for &rate in &plan.overload_rates {
            for server in servers.iter_mut().filter(|s| !s.basic_only) {
                progress.step(
                    &format!(
                        "accuracy: {} at {rate:.0}/s, its CPU shared with a busy loop",
                        server.name
                    ),
                    done,
                    total,
                );
                done += 1;
                let opts = LoadOptions {
                    sockets: plan.sockets,
                    drain: plan.drain,
                    arrivals: Arrivals::Even,
                    seed: 7 + rate as u64,
                    interleaved: false,
                    ..LoadOptions::new(server.target, rate, plan.step)
                };
                outcome.overload.push(measure(&pair, server, &opts, 0));
                std::thread::sleep(plan.pause);
            }
        }
        if !busy.stop() {
            outcome.notes.push(
                "The busy loop of the overload part could not be pinned to the servers' CPU."
                    .into(),
            );
        }
    }
    drop(servers);
    drop(pair);
}

/// A thread that spins on one CPU until stopped: a busy host for the
/// servers pinned there (the scheduler gives each about half of it).
struct BusyLoop {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<bool>,
}

impl BusyLoop {
    fn start(cpu: usize) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let pinned = pin(0, cpu);
            // Bounded: the section stops it after its last measurement, and
            // it gives up on its own after ten minutes.
            let deadline = Instant::now() + Duration::from_secs(600);
            while !flag.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
                for _ in 0..10_000 {
                    std::hint::spin_loop();
                }
            }
            pinned
        });
        Self { stop, thread }
    }

    /// Stops it; whether it was pinned.
    fn stop(self) -> bool {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or(false)
    }
}

fn measure(pair: &NetnsPair, server: &mut Server, opts: &LoadOptions, round: usize) -> Measurement {
    let mut m = Measurement {
        server: server.name,
        interleaved: opts.interleaved,
        arrivals: opts.arrivals,
        rate: opts.rate,
        round,
        report: None,
        error: None,
        generator_pinned: false,
    };
    if let Err(e) = server.process.check_alive() {
        m.error = Some(e);
        return m;
    }
    let result = netns::run_in(&pair.generator, || {
        // The receivers the generator starts inherit this CPU (and namespace).
        let pinned = pin(0, GENERATOR_CPU);
        (load_ntp::run(opts, None), pinned)
    });
    match result {
        Ok((Ok(report), pinned)) => {
            m.report = Some(report);
            m.generator_pinned = pinned;
        }
        Ok((Err(e), _)) | Err(e) => m.error = Some(e),
    }
    if let Err(e) = server.process.check_alive() {
        m.error = Some(e);
    }
    m
}

/// Waits until `process` answers at `target` from the generator's namespace,
/// then pins it.
fn ready(
    pair: &NetnsPair,
    name: &'static str,
    mut process: ServerProcess,
    target: SocketAddr,
) -> Result<Server, String> {
    netns::run_in(&pair.generator, || wait_ready(&mut process, target))??;
    let pinned = pin_process(process.pid(), SERVER_CPU);
    Ok(Server {
        name,
        basic_only: false,
        overload_only: false,
        process,
        target,
        pinned,
    })
}

/// Which authtime is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AuthtimeVariant {
    /// As configured by default: basic transmit timestamps with the
    /// send-path delay the server measures added.
    Default,
    /// `transmit-timestamp = "clock"`: the clock reading as it is (basic
    /// mode only; its interleaved replies are the default's).
    ClockReading,
    /// `max-request-age = 0.005`: what a tighter staleness bound does
    /// under overload (the overload part only).
    TightAge,
}

impl AuthtimeVariant {
    fn name(self) -> &'static str {
        match self {
            Self::Default => "authtime",
            Self::ClockReading => "authtime (clock reading)",
            Self::TightAge => "authtime (max-request-age 5 ms)",
        }
    }

    fn config_line(self) -> &'static str {
        match self {
            Self::Default => "",
            Self::ClockReading => "transmit-timestamp = \"clock\"\n",
            Self::TightAge => "max-request-age = 0.005\n",
        }
    }
}

/// `authtime serve` (the executable beside this one) on `addr`, port 123:
/// one worker, no rate limit, a stratum-1 static clock.
fn start_authtime(
    pair: &NetnsPair,
    dir: &TempDir,
    addr: Ipv4Addr,
    variant: AuthtimeVariant,
) -> Result<Server, String> {
    let exe = crate::section_nts_server::authtime_exe()?;
    let stem = format!("authtime-{addr}");
    let config = dir.path(&format!("{stem}.toml"));
    fs::write(
        &config,
        format!(
            "[ntp]\nlisten = [\"{addr}:123\"]\nworkers = 1\n{}[rate-limit]\nenabled = false\n{CLOCK}",
            variant.config_line()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let mut command = pair.server_command(&exe);
    command.arg("serve").arg("--config").arg(&config);
    let process = spawn_logged(command, dir.path(&format!("{stem}.log")), "authtime serve")?;
    let mut server = ready(pair, variant.name(), process, (addr, 123).into())?;
    server.basic_only = variant == AuthtimeVariant::ClockReading;
    server.overload_only = variant == AuthtimeVariant::TightAge;
    Ok(server)
}

/// chronyd on `addr`, port 123, never touching the clock (`-x`), `local
/// stratum 1`, answering everyone, with room for every client's interleaved
/// timestamps (`clientloglimit`), its command socket in `dir`.
fn start_chronyd(
    pair: &NetnsPair,
    dir: &TempDir,
    chronyd: &std::path::Path,
    addr: Ipv4Addr,
) -> Result<Server, String> {
    let conf = dir.path("chrony.conf");
    fs::write(
        &conf,
        format!(
            "bindaddress {addr}\nport 123\nallow\nlocal stratum 1\ncmdport 0\n\
             bindcmdaddress {}\npidfile {}\nclientloglimit 100000000\n",
            dir.path("chronyd.sock").display(),
            dir.path("chronyd.pid").display()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", conf.display()))?;
    let mut command = pair.server_command(chronyd);
    command.args(["-x", "-u", "root", "-d", "-f"]).arg(&conf);
    let process = spawn_logged(command, dir.path("chronyd.log"), "chronyd")?;
    ready(pair, "chronyd", process, (addr, 123).into())
}

/// Starts `command`, its standard error in `log`, nothing on its standard
/// input and output.
pub(crate) fn spawn_logged(
    mut command: std::process::Command,
    log: std::path::PathBuf,
    name: &'static str,
) -> Result<ServerProcess, String> {
    let stderr =
        fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    Ok(ServerProcess { child, name, log })
}

/// `chronyc serverstats` through chronyd's command socket, if chronyc is
/// installed and answers within a few seconds.
fn chronyd_serverstats(dir: &TempDir) -> Option<String> {
    let chronyc = find_chronyd()?.with_file_name("chronyc");
    let chronyc = if chronyc.is_file() {
        chronyc
    } else {
        "/usr/bin/chronyc".into()
    };
    let mut child = std::process::Command::new(chronyc)
        .arg("-h")
        .arg(dir.path("chronyd.sock"))
        .args(["-n", "serverstats"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut text).ok()?;
    Some(text.trim().to_owned())
}
