//! The report of section `nts`: Table II beside the paper's figures, the
//! ramps (Figures 7 to 12), the knees and the capacity on paper.

use std::time::Duration;

use crate::{
    load_nts::cdf_points,
    plot::{Plot, Series},
    report::{Section, Table},
    section_nts::{MAX_ERRORS, MAX_P95_GROWTH, MeasuredStep, Plan, Ramp, ServerRun},
    section_nts_server::{Histogram, SERVER_HISTOGRAMS},
};

/// Requests per second a NIST stratum-1 server sees (seed 000).
const NIST_RATE: f64 = 28_000.0;
/// The fleet sized on paper: clients, and their poll interval.
const FLEET_CLIENTS: f64 = 1_000_000.0;
const FLEET_POLL_S: f64 = 64.0;
/// Key exchanges per client per day on paper (restarts, cookies lost).
const FLEET_KE_PER_DAY: f64 = 1.0;
/// Steps with more steal time than this are called disturbed.
const STEAL_WARNING: f64 = 0.05;
/// Servers run at this share of their cores at most.
const HEADROOM: f64 = 0.5;

fn us(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2} ms", v / 1000.0)
    } else {
        format!("{v:.1} µs")
    }
}

fn find<'a>(runs: &'a [ServerRun], name: &str) -> Option<&'a ServerRun> {
    runs.iter().find(|r| r.server == name)
}

fn client_cell(step: Option<&MeasuredStep>, ke: bool) -> String {
    let Some(step) = step else {
        return "–".into();
    };
    let p = if ke {
        &step.load.d_cke
    } else {
        &step.load.d_ntp
    };
    if p.count == 0 {
        return format!("no answer ({} errors)", step.load.error_share() * 100.0);
    }
    format!(
        "{} (p50 {}, p95 {}, n {})",
        us(p.mean_us),
        us(p.p50_us),
        us(p.p95_us),
        p.count
    )
}

fn server_cell(run: Option<&ServerRun>, index: usize) -> String {
    let Some(run) = run else {
        return "–".into();
    };
    if run.server == "chronyd" {
        return "not observable".into();
    }
    let step = match index {
        0 => run.ke.as_ref(),
        1 => run.nts.as_ref(),
        _ => run.ntp.as_ref(),
    };
    match step.and_then(|s| s.server_histograms[index].as_ref()) {
        Some(h) if h.count > 0 => format!(
            "{} (p50 ≤ {}, n {})",
            us(h.mean_us().unwrap_or(0.0)),
            h.quantile_bound_us(0.5).map_or("–".into(), us),
            h.count
        ),
        Some(_) => "exported, no samples".into(),
        None => format!("not exported ({})", SERVER_HISTOGRAMS[index].1),
    }
}

fn table_ii(runs: &[ServerRun]) -> Table {
    let mut t = Table::new(
        "Unloaded performance (the paper's Table II)",
        &["measure", "paper (cfnts, mean)", "authtime", "chronyd"],
    );
    let (a, c) = (find(runs, "authtime"), find(runs, "chronyd"));
    let client = |run: Option<&ServerRun>, which: usize| {
        run.map_or("–".into(), |r| match which {
            0 => client_cell(r.ke.as_ref(), true),
            1 => client_cell(r.ntp.as_ref(), false),
            _ => client_cell(r.nts.as_ref(), false),
        })
    };
    let rows = [
        ("d_CKE (whole NTS-KE, client)", "2.26 ms", 0),
        ("d_CNTP (plain NTP, client)", "0.79 ms (text)", 1),
        ("d_CNTS (NTS-NTP, client)", "0.87 ms (Table II's d_CNTP)", 2),
    ];
    for (name, paper, which) in rows {
        t.row(vec![
            name.into(),
            paper.into(),
            client(a, which),
            client(c, which),
        ]);
    }
    for (name, paper, index) in [
        ("d_SNTP (plain reply built, server)", "2.03 µs", 2),
        (
            "d_SKE (KE request to response ready, server)",
            "18.13 µs",
            0,
        ),
        (
            "d_SNTS (NTS request to reply sealed, server)",
            "80.80 µs",
            1,
        ),
    ] {
        t.row(vec![
            name.into(),
            paper.into(),
            server_cell(a, index),
            server_cell(c, index),
        ]);
    }
    t.note = "Client-side figures: mean (median, 95th percentile, samples) of an open-loop run at a low rate, over loopback with the generator on CPU 1 and the server on CPU 0; the paper's client and server were separate machines on a LAN, so its client-side times include a network. \
              The paper's Table II calls the authenticated exchange d_CNTP (0.87 ms); its text gives 0.79 ms for plain NTP. \
              Server-side figures come from authtime's Prometheus histograms (mean = sum ÷ count; the median is a power-of-two bucket bound); chronyd exports no such timing."
        .into();
    t
}

fn ramp_table(runs: &[ServerRun]) -> Table {
    let mut t = Table::new(
        "Scalability ramps (the paper's Figures 7 to 12)",
        &[
            "server",
            "round",
            "ramp",
            "offered (req/s)",
            "answered KE / NTP",
            "p50",
            "p95",
            "p99",
            "errors",
            "main error",
            "server CPU",
            "generator CPU",
            "steal",
            "server-side mean",
            "pass",
        ],
    );
    for run in runs {
        for ramp in &run.ramps {
            for s in &ramp.steps {
                let l = &s.load;
                let p = l.primary();
                let errs = [("KE", &l.ke_errors), ("NTP", &l.ntp_errors)];
                let main = errs
                    .iter()
                    .flat_map(|(who, e)| {
                        [
                            ("timeout", e.timeout),
                            ("refused", e.refused),
                            ("reset", e.reset),
                            ("tls", e.tls),
                            ("ke-refused", e.ke_refused),
                            ("nak", e.nak),
                            ("bad-auth", e.bad_auth),
                            ("kiss", e.kiss),
                            ("generator-cap", e.generator_cap),
                            ("other", e.other + e.send + e.no_cookie),
                        ]
                        .map(|(n, c)| (format!("{who} {n}"), c))
                    })
                    .max_by_key(|(_, c)| *c)
                    .filter(|(_, c)| *c > 0)
                    .map_or("–".into(), |(n, c)| format!("{n} ({c})"));
                let side = match ramp.kind {
                    "nts-ke" => s.server_mean_us[0],
                    _ => s.server_mean_us[1],
                };
                t.row(vec![
                    run.server.into(),
                    format!("{}", run.round + 1),
                    ramp.kind.into(),
                    format!("{:.0}", l.rate),
                    format!("{} / {}", l.ke_ok, l.ntp_ok),
                    us(p.p50_us),
                    us(p.p95_us),
                    us(p.p99_us),
                    format!("{:.2}%", 100.0 * l.error_share()),
                    main,
                    s.server_busy()
                        .map_or("–".into(), |b| format!("{:.0}%", 100.0 * b)),
                    format!(
                        "{:.0}%{}",
                        100.0 * l.generator_cpu,
                        if l.fell_behind { ", fell behind" } else { "" }
                    ),
                    s.steal.map_or("–".into(), |v| format!("{:.1}%", 100.0 * v)),
                    side.map_or("–".into(), us),
                    if s.passed { "yes" } else { "no" }.into(),
                ]);
            }
        }
    }
    t.note = format!(
        "Ramps: nts-ke = whole NTS-KE sessions (full TLS 1.3 handshakes, no resumption); nts-3 = NTS-NTP exchanges with one NTS-KE per three (the paper's ratio; offered = NTS-NTP exchanges/s, NTS-KE at a third of it); \
         nts-ntp = NTS-NTP exchanges alone (cookies of a few earlier key exchanges, fresh ones from each reply). Latencies are the client's: d_CKE for nts-ke, d_CNTS otherwise. \
         A step passes with p95 under {MAX_P95_GROWTH}× the unloaded p95, under {:.1}% errors (key exchanges and NTP exchanges together), and the generator on schedule. \
         Server CPU = its processes' (chronyd: with its NTS-KE helper) CPU time ÷ step time, one core = 100%; generator CPU likewise for the generator's process. \
         Steal: the share of the machine's CPU time the hypervisor gave to other guests during the step (/proc/stat); above a few percent the step's figures say more about the neighbours than about the servers. \
         Server-side mean: authtime's d_SKE (nts-ke) or d_SNTS (other ramps) over the step. A ramp stops after a step with over 5% errors, a generator that fell behind, or two failing steps in a row. \
         Each step starts once the server is idle (under 5% of a core over 100 ms, waiting at most 5 s), so the backlog of an overloaded step is not charged to the next one.",
        100.0 * MAX_ERRORS
    );
    t
}

fn knee_table(runs: &[ServerRun], findings: &mut Vec<String>) -> Table {
    let mut t = Table::new(
        "Knees: highest offered rate with p95 under twice its unloaded value and under 0.1% errors",
        &[
            "ramp",
            "authtime knee",
            "authtime stopped by",
            "chronyd knee",
            "chronyd stopped by",
            "authtime ÷ chronyd",
            "issue 6 target",
        ],
    );
    let fmt_knee = |r: &Ramp| match r.knee.rate {
        Some(k) if r.knee.lower_bound => format!("≥ {k:.0}"),
        Some(k) => format!("{k:.0}"),
        None => format!("< {:.0}", r.steps.first().map_or(0.0, |s| s.load.rate)),
    };
    for (kind, target) in [
        ("nts-ke", "≥ 3× chronyd and > 2000/s"),
        ("nts-3", "–"),
        ("nts-ntp", "≥ 2× chronyd"),
    ] {
        // Every round's ramp of this kind on `name`, and the round whose knee is the median.
        let median = |name: &str| {
            let mut ramps: Vec<&Ramp> = runs
                .iter()
                .filter(|r| r.server == name)
                .filter_map(|r| r.ramps.iter().find(|x| x.kind == kind))
                .collect();
            ramps.sort_by(|x, y| {
                x.knee
                    .rate
                    .unwrap_or(0.0)
                    .total_cmp(&y.knee.rate.unwrap_or(0.0))
            });
            let mid = ramps.get(ramps.len() / 2).copied();
            let all = ramps
                .iter()
                .map(|r| fmt_knee(r))
                .collect::<Vec<_>>()
                .join(", ");
            (mid, all)
        };
        let ((a, a_all), (c, c_all)) = (median("authtime"), median("chronyd"));
        let ratio = match (a.and_then(|r| r.knee.rate), c.and_then(|r| r.knee.rate)) {
            (Some(x), Some(y)) if y > 0.0 => Some(x / y),
            _ => None,
        };
        let cell = |r: Option<&Ramp>, all: &str| {
            r.map_or("–".into(), |r| {
                if all.contains(',') {
                    format!("{} (rounds: {all})", fmt_knee(r))
                } else {
                    fmt_knee(r)
                }
            })
        };
        t.row(vec![
            kind.into(),
            cell(a, &a_all),
            a.map_or("–".into(), |r| r.knee.stopped_by.clone()),
            cell(c, &c_all),
            c.map_or("–".into(), |r| r.knee.stopped_by.clone()),
            ratio.map_or("–".into(), |r| format!("{r:.2}×")),
            target.into(),
        ]);
        if let (Some(a), Some(c)) = (a, c) {
            findings.push(format!(
                "{kind}: authtime's knee {} req/s ({}), chronyd's {} req/s ({}){}.",
                cell(Some(a), &a_all),
                a.knee.stopped_by,
                cell(Some(c), &c_all),
                c.knee.stopped_by,
                ratio.map_or(String::new(), |r| format!(": {r:.2}×"))
            ));
        }
    }
    t.note = "With several rounds the knee shown is the median round's (every round's in brackets) and its reason is that round's. \
              ≥: the server did not fail first (the generator fell behind or used its whole core, or the ramp ended), so the knee is a lower bound. \
              <: even the first step failed. The generator shares the 2-core machine with the server (one core each), so NTS-KE knees also measure the client's own TLS cost."
        .into();
    t
}

/// authtime's d_SNTS under load: the median of the server-side means of
/// the NTS-NTP ramp's passing steps (all its steps when none passed), µs.
fn d_snts_under_load(run: &ServerRun) -> Option<f64> {
    let ramp = run.ramps.iter().find(|r| r.kind == "nts-ntp")?;
    let pick = |passing: bool| {
        let mut v: Vec<f64> = ramp
            .steps
            .iter()
            .filter(|s| !passing || s.passed)
            .filter_map(|s| s.server_mean_us[1])
            .collect();
        crate::stats::median(&mut v)
    };
    pick(true).or_else(|| pick(false))
}

/// Median server CPU seconds per answered request over a ramp's passing steps
/// (all steps when none passed).
fn cpu_per_request(ramp: &Ramp) -> Option<f64> {
    let pick = |passing: bool| {
        let mut v: Vec<f64> = ramp
            .steps
            .iter()
            .filter(|s| !passing || s.passed)
            .filter_map(MeasuredStep::cpu_per_request)
            .collect();
        crate::stats::median(&mut v)
    };
    pick(true).or_else(|| pick(false))
}

/// Median of `f` over a ramp's passing steps (all steps when none passed).
fn ramp_median(ramp: &Ramp, f: impl Fn(&MeasuredStep) -> Option<f64>) -> Option<f64> {
    let pick = |passing: bool| {
        let mut v: Vec<f64> = ramp
            .steps
            .iter()
            .filter(|s| !passing || s.passed)
            .filter_map(&f)
            .collect();
        crate::stats::median(&mut v)
    };
    pick(true).or_else(|| pick(false))
}

/// One tick of the kernel's per-process CPU accounting (`USER_HZ`).
const TICK_S: f64 = 0.01;

/// Issue 27's split of an NTS-NTP exchange's server CPU: the kernel's part
/// and user space's, and within user space authtime's own NTS work.
fn time_split_table(runs: &[ServerRun]) -> Table {
    let mut t = Table::new(
        "Where the time goes, per NTS-NTP exchange (server CPU)",
        &[
            "server",
            "CPU per exchange",
            "kernel",
            "user space",
            "of it, NTS work (d_SNTS)",
            "user space, the rest",
            "resolution",
        ],
    );
    for run in runs {
        let Some(ramp) = run.ramps.iter().find(|r| r.kind == "nts-ntp") else {
            continue;
        };
        let total = ramp_median(ramp, MeasuredStep::cpu_per_request);
        let user = ramp_median(ramp, MeasuredStep::user_per_request);
        let nts = ramp_median(ramp, |s| s.server_mean_us[1].map(|u| u / 1e6));
        // One clock tick of CPU accounting, shared by a step's exchanges.
        let tick = ramp_median(ramp, |s| {
            let answered = s.load.ke_ok + s.load.ntp_ok;
            (answered > 0).then(|| TICK_S / answered as f64)
        });
        let cell = |v: Option<f64>| v.map_or("–".into(), |c| us(c * 1e6));
        let rest = match (user, nts, tick) {
            (Some(u), Some(n), Some(t)) if u - n < -t => "below the resolution".into(),
            (Some(u), Some(n), _) => us((u - n).max(0.0) * 1e6),
            _ => "–".into(),
        };
        t.row(vec![
            run.server.into(),
            cell(total),
            cell(total.zip(user).map(|(t, u)| t - u)),
            cell(user),
            cell(nts),
            rest,
            tick.map_or("–".into(), |t| format!("± {}", us(t * 1e6))),
        ]);
    }
    t.note = "Server CPU time from /proc/PID/stat (utime and stime, in ticks of 10 ms, the server's processes and their children) over each step of the NTS-NTP ramp, \
              divided by the exchanges answered; medians over the ramp's passing steps. The resolution is one tick over a step's exchanges: short (`--quick`) steps give a coarse split. \
              d_SNTS is authtime's own NTS work per exchange from its metric (authtime_nts_response_seconds: cookie opened, request authenticated, cookie sealed, reply sealed, per request, including its share of a receive batch's joint work); \
              chronyd exports no such figure. The kernel column is the UDP receive and send path and the system calls; no PMU is needed for any of these figures."
        .into();
    t
}

fn capacity_table(runs: &[ServerRun]) -> Table {
    let mut t = Table::new(
        "Capacity on paper, from the measured server CPU per request",
        &[
            "server",
            "CPU per NTS-KE",
            "CPU per NTS-NTP",
            "cores for 28,000 NTS-NTP req/s",
            "1M clients / 64 s: NTS-NTP req/s",
            "NTS-KE/s",
            "cores (at 50% load)",
        ],
    );
    let ntp_rate = FLEET_CLIENTS / FLEET_POLL_S;
    let ke_rate = FLEET_CLIENTS * FLEET_KE_PER_DAY / 86_400.0;
    for run in runs {
        let get = |kind: &str| {
            run.ramps
                .iter()
                .find(|r| r.kind == kind)
                .and_then(cpu_per_request)
        };
        let (ke, nts) = (get("nts-ke"), get("nts-ntp"));
        let cores = nts.map(|n| (ntp_rate * n + ke_rate * ke.unwrap_or(0.0)) / HEADROOM);
        t.row(vec![
            run.server.into(),
            ke.map_or("–".into(), |c| us(c * 1e6)),
            nts.map_or("–".into(), |c| us(c * 1e6)),
            nts.map_or("–".into(), |c| format!("{:.2}", NIST_RATE * c / HEADROOM)),
            format!("{ntp_rate:.0}"),
            format!("{ke_rate:.1}"),
            cores.map_or("–".into(), |c| format!("{c:.2}")),
        ]);
    }
    t.note = format!(
        "CPU per request = server CPU time ÷ answered requests, median over the ramp's passing steps. Cores are sized to run at {:.0}% so that bursts and failover fit. \
         The fleet: {FLEET_CLIENTS:.0} NTS clients polling every {FLEET_POLL_S:.0} s (each reply carries a fresh cookie, so key exchanges happen only on restarts or lost cookies: {FLEET_KE_PER_DAY} per client per day on paper). \
         The shared key store (Redis or memcached) is read by each server once per poll interval (5 s by default) and written once per rotation (daily): a fleet of even 100 servers puts 20 reads/s on it, nothing next to the NTP load; \
         cookies are sealed and opened with the local copy of the keys, never with a store round trip (unlike the paper's d_SNTS).",
        100.0 * HEADROOM
    );
    t
}

fn plots(runs: &[ServerRun]) -> Vec<Plot> {
    let mut client = Vec::new();
    let mut server = Vec::new();
    for run in runs {
        for (name, step, ke) in [
            ("d_CKE", run.ke.as_ref(), true),
            ("d_CNTP", run.ntp.as_ref(), false),
            ("d_CNTS", run.nts.as_ref(), false),
        ] {
            if let Some(s) = step {
                let p = if ke { &s.load.d_cke } else { &s.load.d_ntp };
                client.push(Series {
                    name: format!("{} {name}", run.server),
                    points: cdf_points(p, 50),
                });
            }
        }
        for (i, (name, _)) in SERVER_HISTOGRAMS.iter().enumerate() {
            let step = [run.ke.as_ref(), run.nts.as_ref(), run.ntp.as_ref()][i];
            if let Some(h) = step.and_then(|s| s.server_histograms[i].as_ref())
                && h.count > 0
            {
                server.push(Series {
                    name: format!("{} {name}", run.server),
                    points: h
                        .buckets
                        .iter()
                        .filter(|b| b.0.is_finite())
                        .map(|&(le, n)| (le * 1e6, n as f64 / h.count as f64))
                        .collect(),
                });
            }
        }
    }
    let ramp_series = |kind: &str, f: &dyn Fn(&MeasuredStep) -> Vec<(&'static str, f64)>| {
        let mut out: Vec<Series> = Vec::new();
        for run in runs {
            for ramp in run.ramps.iter().filter(|r| r.kind == kind) {
                for s in &ramp.steps {
                    for (label, y) in f(s) {
                        let name = format!("{} {kind} {label}", run.server);
                        match out.iter_mut().find(|x| x.name == name) {
                            Some(series) => series.points.push((s.load.rate, y)),
                            None => out.push(Series {
                                name,
                                points: vec![(s.load.rate, y)],
                            }),
                        }
                    }
                }
            }
        }
        out
    };
    let turnaround = |s: &MeasuredStep| {
        let p = s.load.primary();
        vec![("p50", p.p50_us), ("p95", p.p95_us)]
    };
    let errors = |s: &MeasuredStep| vec![("errors", 100.0 * s.load.error_share())];
    let side = |s: &MeasuredStep| {
        let v = s.server_mean_us[0].or(s.server_mean_us[1]);
        v.map(|v| vec![("server mean", v)]).unwrap_or_default()
    };
    let mut ntp_turnaround = ramp_series("nts-3", &turnaround);
    ntp_turnaround.extend(ramp_series("nts-ntp", &turnaround));
    let mut side_series = ramp_series("nts-ke", &side);
    side_series.extend(ramp_series("nts-ntp", &side));
    let plot = |stem: &str, title: &str, x: &str, y: &str, log_x, log_y, series| Plot {
        stem: stem.into(),
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
        log_x,
        log_y,
        series,
    };
    vec![
        plot(
            "nts-cdf-client",
            "Client-side CDFs, unloaded (paper Fig. 4)",
            "µs",
            "cumulative share",
            true,
            false,
            client,
        ),
        plot(
            "nts-cdf-server",
            "authtime server-side CDFs, bucket bounds (paper Fig. 5)",
            "µs",
            "cumulative share",
            true,
            false,
            server,
        ),
        plot(
            "nts-ke-turnaround",
            "d_CKE under load (paper Fig. 7)",
            "offered NTS-KE sessions/s",
            "µs",
            false,
            true,
            ramp_series("nts-ke", &turnaround),
        ),
        plot(
            "nts-errors",
            "Error share under load (paper Fig. 8)",
            "offered req/s",
            "errors (%)",
            true,
            false,
            {
                let mut e = ramp_series("nts-ke", &errors);
                e.extend(ramp_series("nts-3", &errors));
                e.extend(ramp_series("nts-ntp", &errors));
                e
            },
        ),
        plot(
            "nts-ntp-turnaround",
            "d_CNTS under load (paper Fig. 9)",
            "offered NTS-NTP exchanges/s",
            "µs",
            true,
            true,
            ntp_turnaround,
        ),
        plot(
            "nts-server-side",
            "authtime server-side means under load (paper Figs. 10-12)",
            "offered req/s",
            "µs",
            true,
            true,
            side_series,
        ),
    ]
}

/// Builds the section from the measurements.
#[must_use]
pub fn section(
    runs: &[ServerRun],
    plan: &Plan,
    mut findings: Vec<String>,
    elapsed: Duration,
    quick: bool,
) -> Section {
    for run in runs {
        if let Some(e) = &run.error {
            findings.push(format!("{}: measurements stopped: {e}.", run.server));
        }
    }
    let knees = knee_table(runs, &mut findings);
    // Table II, the capacity on paper and the plots come from the first round.
    let first: Vec<ServerRun> = runs.iter().filter(|r| r.round == 0).cloned().collect();
    if let Some(a) = find(&first, "authtime") {
        let unloaded = a
            .nts
            .as_ref()
            .and_then(|s| s.server_histograms[1].as_ref())
            .and_then(Histogram::mean_us);
        let loaded = d_snts_under_load(a);
        let target = 80.8 / 20.0;
        let say = |v: f64| {
            format!(
                "{} ({:.0}× below the paper's 80.8 µs, target {} µs: {})",
                us(v),
                80.8 / v.max(1e-9),
                target,
                if v <= target { "met" } else { "missed" }
            )
        };
        match (unloaded, loaded) {
            (None, None) => findings.push(
                "authtime's server-side d_SNTS is not in its metrics \
                 (authtime_nts_response_seconds): those cells are missing, not zero."
                    .into(),
            ),
            (u, l) => findings.push(format!(
                "authtime's d_SNTS: {} unloaded (one request every {:.0} ms, caches cold between them); {} under load (median of the NTS-NTP ramp's passing steps' means). Issue 6's target is at least 20× below the paper.",
                u.map_or("–".into(), say),
                1000.0 / plan.unloaded_rate,
                l.map_or("–".into(), say),
            )),
        }
    }
    let steals: Vec<(f64, String)> = runs
        .iter()
        .flat_map(|r| {
            let unloaded = [&r.ke, &r.nts, &r.ntp]
                .into_iter()
                .flatten()
                .map(move |s| (s, format!("{} round {} unloaded", r.server, r.round + 1)));
            let ramps = r.ramps.iter().flat_map(move |ramp| {
                ramp.steps.iter().map(move |s| {
                    (
                        s,
                        format!(
                            "{} round {} {} at {:.0}/s",
                            r.server,
                            r.round + 1,
                            ramp.kind,
                            s.load.rate
                        ),
                    )
                })
            });
            unloaded.chain(ramps)
        })
        .filter_map(|(s, name)| s.steal.map(|v| (v, name)))
        .collect();
    if !steals.is_empty() {
        let disturbed: Vec<&str> = steals
            .iter()
            .filter(|(v, _)| *v > STEAL_WARNING)
            .map(|(_, n)| n.as_str())
            .collect();
        let worst = steals.iter().map(|(v, _)| *v).fold(0.0, f64::max);
        findings.push(if disturbed.is_empty() {
            format!(
                "The hypervisor took at most {:.1}% of the CPUs in any step (steal time): the machine was quiet.",
                100.0 * worst
            )
        } else {
            let named = disturbed.iter().take(8).copied().collect::<Vec<_>>().join(", ");
            let more = disturbed.len().saturating_sub(8);
            format!(
                "The hypervisor took over {:.0}% of the CPUs (steal time, worst {:.1}%) in {} of {} steps: {named}{}. \
                 Their figures say more about the neighbours than about the servers: prefer undisturbed rounds, or rerun on a quiet machine.",
                100.0 * STEAL_WARNING,
                100.0 * worst,
                disturbed.len(),
                steals.len(),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            )
        });
    }
    let limited: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            r.ramps.iter().flat_map(move |ramp| {
                ramp.steps
                    .iter()
                    .filter(|s| s.generator_limited())
                    .map(move |s| format!("{} {} at {:.0}/s", r.server, ramp.kind, s.load.rate))
            })
        })
        .collect();
    if limited.is_empty() {
        findings.push("The load generator kept its schedule and stayed under 95% of its core in every step: every failure above is the server's.".into());
    } else {
        findings.push(format!(
            "The load generator, not the server, was the limit in: {} (it fell behind its schedule or used its whole core).",
            limited.join(", ")
        ));
    }
    let pinning: Vec<String> = first
        .iter()
        .map(|r| {
            format!(
                "{} {} (generator {})",
                r.server,
                if r.pinned { "on CPU 0" } else { "not pinned" },
                if r.load_pinned {
                    "on CPU 1"
                } else {
                    "not pinned"
                }
            )
        })
        .collect();
    let tables = vec![
        table_ii(&first),
        ramp_table(runs),
        knees,
        capacity_table(&first),
        time_split_table(&first),
    ];
    Section {
        id: "nts".into(),
        title: "NTS performance and scalability: authtime vs chronyd (seed 002, issue 6)".into(),
        seed: "seed 002 (NTS performance and scalability of cfnts): Table II, Figures 4-5 and 7-12; issue 6's targets".into(),
        method: format!(
            "Both servers run on 127.0.0.1 with the same CA-signed P-256 leaf (made by `authtime nts cert`): `authtime serve` (1 NTP worker, 1 NTS-KE worker, 512 connections, rate limiting off, embedded key store) \
             and chronyd 4.x (`-4 -x -d`, `ntsprocesses 1`, `maxntsconnections 512`, no `ratelimit`/`ntsratelimit`). Pinning: {}. \
             The open-loop generator (authtime-lab's load_nts) is one thread on CPU 1 running a single-threaded tokio runtime: it keeps the schedule, runs each NTS-KE as a task (full TLS 1.3 handshakes, resumption off; the certificate chain check is remembered per chain and name, every handshake's signature is verified), \
             and sends NTP exchanges over 4 UDP sockets, checking every NTS reply and timing it by the kernel's receive stamp (SO_TIMESTAMPNS), so its own queueing is not counted. \
             It runs unloaded steps at {:.0} req/s for {:.0} s, then ramps of {:.0} s steps (timeout {:.0} s per request); {} round(s), each server measured once per round, alternating, from a fresh start. \
             authtime's NTS-KE threads run at nice 10 (its NTP workers at 0); chronyd's processes all at 0. \
             The paper used 20 s steps of 100 req/s on separate machines; here the client shares a 2-core machine with the server. This section took {:.1} s{}.",
            pinning.join(", "),
            plan.unloaded_rate,
            plan.unloaded.as_secs_f64(),
            plan.step.as_secs_f64(),
            plan.timeout.as_secs_f64(),
            plan.rounds,
            elapsed.as_secs_f64(),
            if quick { " (`--quick`: 1 s steps, indicative)" } else { "" }
        ),
        tables,
        plots: plots(&first),
        findings,
        data: serde_json::json!({ "plan": plan, "runs": runs }),
    }
}
