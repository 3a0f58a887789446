//! The `xdp` section's report: one table per rate and authentication with
//! chronyd (roughenough for Roughtime), authtime on sockets and authtime on
//! AF_XDP side by side (medians over rounds), the CPU ratios, what the MAC
//! adds, every measurement, and the method written next to the numbers.

use crate::{
    report::{Section, Table},
    section_ntp::fmt_rate,
    section_xdp::{Auth, Measurement, Outcome, Protocol, ServerKind},
};

/// Steps with more steal time than this (share of all CPUs) are called
/// disturbed.
const STEAL_WARNING: f64 = 0.05;
/// An idle machine busier than this (CPU seconds per second) was doing
/// other work, and its whole-machine figures are not the servers'.
const BUSY_IDLE: f64 = 0.1;
/// A measurement during which the machine's busy time exceeded what it
/// can be charged with by more than this (CPUs) had other work beside it.
const CROWDED: f64 = 0.2;
/// A server "keeps up" at a step below this loss.
const KEEPS_UP: f64 = 0.01;

/// The figures of one measurement, per answered request where it says so.
#[derive(Debug, Clone, Copy, Default)]
pub struct Figures {
    /// Requests offered per second (sent + refused by the kernel).
    pub offered: f64,
    /// Time replies per second.
    pub answered: f64,
    /// 1 − time replies ÷ requests sent.
    pub loss: f64,
    /// Server process, user + system, µs per answered request.
    pub server_us: Option<f64>,
    /// Its user part.
    pub server_user_us: Option<f64>,
    /// Its system part.
    pub server_system_us: Option<f64>,
    /// The whole machine's busy CPU, µs per answered request.
    pub machine_us: Option<f64>,
    /// The same less what the idle machine spends in as long.
    pub machine_less_idle_us: Option<f64>,
    /// Kernel threads (kworkers, ksoftirqd, ...).
    pub kernel_threads_us: Option<f64>,
    /// Server + generator + kernel threads.
    pub attributed_us: Option<f64>,
    /// The whole machine's busy time not attributed, in CPUs (busy CPU
    /// seconds per second): on a quiet machine a little softirq work in
    /// other contexts; more is other processes' work.
    pub unattributed_cpus: Option<f64>,
    /// The lab process (the generator).
    pub generator_us: Option<f64>,
    /// T3 offset, mean, µs.
    pub t3_mean_us: Option<f64>,
    /// T3 offset, median, µs.
    pub t3_median_us: Option<f64>,
    /// T3 offset, 99th percentile, µs.
    pub t3_p99_us: Option<f64>,
    /// Steal time, share of all CPUs over the measurement.
    pub steal: Option<f64>,
    /// The generator fell behind its schedule.
    pub fell_behind: bool,
}

impl Figures {
    /// `m`'s figures; `None` without a report.
    #[must_use]
    pub fn of(m: &Measurement, outcome: &Outcome) -> Option<Self> {
        let Load {
            answered,
            offered,
            answered_rate,
            loss,
            offsets,
            fell_behind,
        } = Load::of(m)?;
        let per = |s: f64| (answered > 0.0).then(|| 1e6 * s / answered);
        let cpu = m.cpu.as_ref();
        Some(Self {
            offered,
            answered: answered_rate,
            loss,
            server_us: cpu.and_then(|c| per(c.server_user_s + c.server_system_s)),
            server_user_us: cpu.and_then(|c| per(c.server_user_s)),
            server_system_us: cpu.and_then(|c| per(c.server_system_s)),
            machine_us: cpu.and_then(|c| per(c.machine_busy_s)),
            machine_less_idle_us: cpu.and_then(|c| {
                let idle = outcome.idle_busy_per_s? * c.wall_s;
                per(c.machine_busy_s - idle)
            }),
            kernel_threads_us: cpu.and_then(|c| per(c.kernel_threads_s)),
            attributed_us: cpu.and_then(|c| per(c.attributed_s())),
            unattributed_cpus: cpu
                .filter(|c| c.wall_s > 0.0)
                .map(|c| (c.machine_busy_s - c.attributed_s()) / c.wall_s),
            generator_us: cpu.and_then(|c| per(c.generator_s)),
            t3_mean_us: offsets.map(|o| o.mean_us),
            t3_median_us: offsets.map(|o| o.median_us),
            t3_p99_us: offsets.map(|o| o.p99_us),
            steal: cpu.and_then(|c| {
                let all = c.wall_s * c.machine.cpus as f64;
                (all > 0.0).then(|| (c.machine.steal_s / all).clamp(0.0, 1.0))
            }),
            fell_behind,
        })
    }
}

/// What the generator of a measurement counted, whichever it was.
struct Load {
    /// Replies counted (time replies, checked NTS replies, Roughtime
    /// responses).
    answered: f64,
    offered: f64,
    answered_rate: f64,
    loss: f64,
    offsets: Option<crate::load_ntp_accuracy::OffsetStats>,
    fell_behind: bool,
}

impl Load {
    fn of(m: &Measurement) -> Option<Self> {
        if let Some(r) = &m.report {
            return Some(Self {
                answered: r.received as f64,
                offered: (r.sent + r.send_errors) as f64 / r.duration_s.max(1e-9),
                answered_rate: r.received_rate,
                loss: r.loss,
                // Interleaved replies: the previous reply's receive time −
                // this T3 (that reply's transmit time).
                offsets: r
                    .accuracy
                    .as_ref()
                    .map(|a| {
                        if m.auth == Auth::Interleaved {
                            a.interleaved
                        } else {
                            a.basic
                        }
                    })
                    .filter(|o| o.count > 0),
                fell_behind: r.fell_behind,
            });
        }
        if let Some(r) = &m.nts {
            // Over the longer of the planned and the actual sending time,
            // as the NTP generator's rates are.
            let over = r.dispatch_s.max(r.duration_s).max(1e-9);
            let scheduled = r.scheduled.max(1) as f64;
            return Some(Self {
                answered: r.ntp_ok as f64,
                offered: r.scheduled as f64 / over,
                answered_rate: r.ntp_ok as f64 / over,
                loss: (1.0 - r.ntp_ok as f64 / scheduled).clamp(0.0, 1.0),
                offsets: r.t3_offset.filter(|o| o.count > 0),
                fell_behind: r.fell_behind,
            });
        }
        let r = m.roughtime.as_ref()?;
        let over = r.sent_for_s.max(r.duration_s).max(1e-9);
        Some(Self {
            answered: r.received as f64,
            offered: (r.sent + r.send_errors) as f64 / over,
            answered_rate: r.received_rate,
            loss: r.loss,
            offsets: None,
            fell_behind: r.fell_behind,
        })
    }
}

/// The median over rounds of one figure.
fn median_of(figs: &[Figures], pick: impl Fn(&Figures) -> Option<f64>) -> Option<f64> {
    let mut values: Vec<f64> = figs.iter().filter_map(pick).collect();
    crate::stats::median(&mut values)
}

/// The measurements of one cell.
fn runs(
    outcome: &Outcome,
    server: ServerKind,
    auth: Auth,
    rate: f64,
) -> impl Iterator<Item = &Measurement> {
    outcome
        .measurements
        .iter()
        .filter(move |m| m.server == server && m.auth == auth && m.rate == rate)
}

fn figures(outcome: &Outcome, server: ServerKind, auth: Auth, rate: f64) -> Vec<Figures> {
    runs(outcome, server, auth, rate)
        .filter_map(|m| Figures::of(m, outcome))
        .collect()
}

/// Microseconds with the digits that mean something here.
fn us(x: f64) -> String {
    if x.abs() < 10.0 {
        format!("{x:.2}")
    } else if x.abs() < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

fn opt_us(x: Option<f64>) -> String {
    x.map_or("–".into(), us)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a > 0.0 => Some(a / b),
        _ => None,
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("–".into(), |r| format!("{r:.2}×"))
}

/// The section.
#[must_use]
pub fn section(outcome: &Outcome, quick: bool) -> Section {
    let mut tables = Vec::new();
    if !outcome.measurements.is_empty() {
        for &auth in &outcome.plan.auths {
            for &rate in outcome.plan.rates_for(auth) {
                tables.push(step_table(outcome, auth, rate));
            }
        }
        let chronyd: Vec<Auth> = outcome
            .plan
            .auths
            .iter()
            .copied()
            .filter(|a| a.protocol() != Protocol::Roughtime)
            .collect();
        if !chronyd.is_empty() {
            tables.push(ratio_table(outcome, &chronyd, Protocol::Ntp));
        }
        if outcome.plan.auths.contains(&Auth::Roughtime) {
            tables.push(ratio_table(
                outcome,
                &[Auth::Roughtime],
                Protocol::Roughtime,
            ));
        }
        if outcome.plan.auths.contains(&Auth::Plain) && outcome.plan.auths.contains(&Auth::Cmac) {
            tables.push(mac_table(outcome));
        }
        tables.push(runs_table(outcome));
    }
    Section {
        id: "xdp".into(),
        title: "AF_XDP: CPU per answered request and served-time accuracy, chronyd vs authtime \
                on sockets vs authtime on AF_XDP (issue 31)"
            .into(),
        seed: "issue 31, part 3: chronyd, authtime on sockets and authtime on AF_XDP side by \
               side at rising rates, NTP with AES-128-CMAC (and plain NTP), NTS-NTP, and \
               Roughtime against roughenough: offered and answered rate, loss, the server's \
               and the whole machine's CPU per answered request, and how early T3 is"
            .into(),
        method: method(outcome, quick),
        tables,
        plots: Vec::new(),
        findings: findings(outcome),
        data: serde_json::to_value(outcome).unwrap_or_default(),
    }
}

/// The cell of `server` when it was not measured at all for `protocol`.
fn not_available(outcome: &Outcome, protocol: Protocol, server: ServerKind) -> Option<String> {
    outcome
        .servers
        .iter()
        .find(|s| s.protocol == protocol && s.server == server)
        .map_or(Some("not started".into()), |s| s.not_available.clone())
}

fn step_table(outcome: &Outcome, auth: Auth, rate: f64) -> Table {
    let rounds = outcome.plan.rounds;
    let title = format!(
        "{}, {} req/s offered: {}",
        auth.name(),
        fmt_rate(rate),
        if rounds > 1 {
            format!("medians of {rounds} rounds")
        } else {
            "one round".into()
        }
    );
    let protocol = auth.protocol();
    let mut columns = vec![""];
    columns.extend(ServerKind::ALL.iter().map(|s| s.name_for(protocol)));
    let mut table = Table::new(&title, &columns);
    type Row = (&'static str, fn(&[Figures]) -> String);
    let rows: [Row; 13] = [
        ("offered (req/s)", |f| {
            median_of(f, |x| Some(x.offered)).map_or("–".into(), |v| format!("{v:.0}"))
        }),
        ("answered (req/s)", |f| {
            median_of(f, |x| Some(x.answered)).map_or("–".into(), |v| format!("{v:.0}"))
        }),
        ("loss", |f| {
            median_of(f, |x| Some(x.loss)).map_or("–".into(), |v| format!("{:.2}%", 100.0 * v))
        }),
        (
            "server process CPU per answered (µs): user + system",
            |f| opt_us(median_of(f, |x| x.server_us)),
        ),
        ("… user / system (µs)", |f| {
            format!(
                "{} / {}",
                opt_us(median_of(f, |x| x.server_user_us)),
                opt_us(median_of(f, |x| x.server_system_us))
            )
        }),
        ("**whole machine busy CPU per answered (µs)**", |f| {
            opt_us(median_of(f, |x| x.machine_us))
        }),
        ("… less the idle machine's (µs)", |f| {
            opt_us(median_of(f, |x| x.machine_less_idle_us))
        }),
        (
            "… of it generator (lab process) / kernel threads (µs)",
            |f| {
                format!(
                    "{} / {}",
                    opt_us(median_of(f, |x| x.generator_us)),
                    opt_us(median_of(f, |x| x.kernel_threads_us))
                )
            },
        ),
        (
            "attributed CPU per answered (µs): server + generator + kernel threads",
            |f| opt_us(median_of(f, |x| x.attributed_us)),
        ),
        ("whole machine not attributed (CPUs busy)", |f| {
            median_of(f, |x| x.unattributed_cpus).map_or("–".into(), |v| format!("{v:.2}"))
        }),
        ("T3 offset mean / median / p99 (µs)", |f| {
            if f.iter().all(|x| x.t3_mean_us.is_none()) {
                return "–".into();
            }
            format!(
                "{} / {} / {}",
                opt_us(median_of(f, |x| x.t3_mean_us)),
                opt_us(median_of(f, |x| x.t3_median_us)),
                opt_us(median_of(f, |x| x.t3_p99_us))
            )
        }),
        ("steal (share of all CPUs)", |f| {
            let worst = f
                .iter()
                .filter_map(|x| x.steal)
                .fold(None, |a: Option<f64>, s| Some(a.map_or(s, |a| a.max(s))));
            worst.map_or("–".into(), |s| format!("{:.1}%", 100.0 * s))
        }),
        ("generator fell behind", |f| {
            if f.iter().any(|x| x.fell_behind) {
                "yes †".into()
            } else {
                "no".into()
            }
        }),
    ];
    for (i, (label, cell)) in rows.iter().enumerate() {
        let mut row = vec![(*label).to_owned()];
        for server in ServerKind::ALL {
            if let Some(why) = not_available(outcome, protocol, server) {
                row.push(if i == 0 {
                    format!("not available: {why}")
                } else {
                    "–".into()
                });
                continue;
            }
            let figs = figures(outcome, server, auth, rate);
            if figs.is_empty() {
                let error = runs(outcome, server, auth, rate).find_map(|m| m.error.clone());
                row.push(match (i, error) {
                    (0, Some(e)) => format!("error: {e}"),
                    _ => "–".into(),
                });
                continue;
            }
            row.push(cell(&figs));
        }
        table.row(row);
    }
    table.note = "Per answered = over the measurement (sending, then up to the drain time for \
                  late replies) ÷ time replies received. Server process: utime + stime of its \
                  /proc/PID/stat (the total is the scheduler's exact run time, the user/system \
                  split is sampled by the tick). Whole machine: all CPUs' time over the \
                  measurement less their idle, iowait and steal time from /proc/stat (exact \
                  with a tickless idle; the sampled user and system fields miss short bursts \
                  between sleeps); it includes the generator's own work, the same for every \
                  server at a step. Less the idle machine's: minus the busy time the unloaded \
                  machine (servers up) spent in as long. Attributed: the server and lab \
                  processes and the kernel threads (kworkers, ksoftirqd), a figure other work \
                  on the machine does not inflate, but which misses softirq work done in \
                  other tasks' context or on an idle CPU. T3 offset: the generator's kernel \
                  receive time of the reply − its T3 (positive: T3 early). Steal: the worst \
                  round."
        .to_owned()
        + match protocol {
            Protocol::Ntp => "",
            Protocol::Nts => {
                " NTS-NTP: answered = replies whose authenticator and unique identifier \
                 checked out; loss = 1 − those ÷ requests scheduled; the key exchanges that \
                 got the cookies were made before the measurement and are not in its CPU. \
                 The NTS generator fell behind (†) when over 5% of its requests left more \
                 than 5 ms late or its sending overran the step by 5%."
            }
            Protocol::Roughtime => {
                " Roughtime: answered = responses received (every 64th verified against the \
                 long-term key); no T3 offset: a Roughtime answer is a midpoint rounded to \
                 the second with a radius, not a timestamp whose microseconds of earliness \
                 could be measured."
            }
        };
    table
}

/// Medians over rounds of one figure for each server at a step.
fn step_medians(
    outcome: &Outcome,
    auth: Auth,
    rate: f64,
    pick: fn(&Figures) -> Option<f64>,
) -> [Option<f64>; 3] {
    ServerKind::ALL.map(|s| median_of(&figures(outcome, s, auth, rate), pick))
}

/// The ratios of `auths`, whose peer is `peer`'s (chronyd, or roughenough).
fn ratio_table(outcome: &Outcome, auths: &[Auth], peer: Protocol) -> Table {
    let p = ServerKind::Chronyd.name_for(peer);
    let title =
        format!("CPU per answered request: ratios {p} ÷ authtime (sockets) ÷ authtime (AF_XDP)");
    let columns = [
        "auth".to_owned(),
        "rate (req/s)".to_owned(),
        format!("whole machine: {p} ÷ sockets"),
        "whole machine: sockets ÷ AF_XDP".to_owned(),
        format!("whole machine: {p} ÷ AF_XDP"),
        format!("attributed: {p} ÷ sockets"),
        "attributed: sockets ÷ AF_XDP".to_owned(),
        format!("server process: {p} ÷ sockets"),
        "server process: sockets ÷ AF_XDP".to_owned(),
    ];
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut table = Table::new(&title, &columns);
    for &auth in auths {
        for &rate in outcome.plan.rates_for(auth) {
            let [c, s, x] = step_medians(outcome, auth, rate, |f| f.machine_us);
            let [ac, as_, ax] = step_medians(outcome, auth, rate, |f| f.attributed_us);
            let [pc, ps, px] = step_medians(outcome, auth, rate, |f| f.server_us);
            table.row(vec![
                auth.name().into(),
                fmt_rate(rate),
                fmt_ratio(ratio(c, s)),
                fmt_ratio(ratio(s, x)),
                fmt_ratio(ratio(c, x)),
                fmt_ratio(ratio(ac, as_)),
                fmt_ratio(ratio(as_, ax)),
                fmt_ratio(ratio(pc, ps)),
                fmt_ratio(ratio(ps, px)),
            ]);
        }
    }
    table.note = "Ratios of the medians in the tables above (above 1: the second server spends \
                  less per answered request). The whole machine's ratio is the fair one on a \
                  quiet machine: it includes the generator's share, the same for all, which \
                  pulls every ratio towards 1. The attributed ratio is the one to read when \
                  other work kept the machine busy (see the idle baseline in the method). The \
                  server-process ratio leaves out kernel work done outside the server's \
                  process (softirqs in the generator's context on veth, and for AF_XDP the \
                  copy-mode transmit). –: a server not measured or without CPU figures."
        .into();
    table
}

/// What the MAC adds per request, each server: CMAC − plain, and its share
/// of the CMAC request.
fn mac_table(outcome: &Outcome) -> Table {
    let mut table = Table::new(
        "What the MAC adds per answered request (CMAC − plain, and its share of a CMAC request)",
        &[
            "rate (req/s)",
            "server",
            "whole machine plain / CMAC (µs)",
            "MAC share, whole machine",
            "attributed plain / CMAC (µs)",
            "MAC share, attributed",
            "server process plain / CMAC (µs)",
            "MAC share, server process",
        ],
    );
    for &rate in &outcome.plan.rates {
        for server in ServerKind::ALL {
            let plain = figures(outcome, server, Auth::Plain, rate);
            let cmac = figures(outcome, server, Auth::Cmac, rate);
            if plain.is_empty() || cmac.is_empty() {
                continue;
            }
            let share = |p: Option<f64>, c: Option<f64>| match (p, c) {
                (Some(p), Some(c)) if c > 0.0 => format!("{:.1}%", 100.0 * (c - p) / c),
                _ => "–".into(),
            };
            let (mp, mc) = (
                median_of(&plain, |f| f.machine_us),
                median_of(&cmac, |f| f.machine_us),
            );
            let (ap, ac) = (
                median_of(&plain, |f| f.attributed_us),
                median_of(&cmac, |f| f.attributed_us),
            );
            let (sp, sc) = (
                median_of(&plain, |f| f.server_us),
                median_of(&cmac, |f| f.server_us),
            );
            table.row(vec![
                fmt_rate(rate),
                server.name().into(),
                format!("{} / {}", opt_us(mp), opt_us(mc)),
                share(mp, mc),
                format!("{} / {}", opt_us(ap), opt_us(ac)),
                share(ap, ac),
                format!("{} / {}", opt_us(sp), opt_us(sc)),
                share(sp, sc),
            ]);
        }
    }
    table.note = "Seed 004's question (what share of a request the MAC is) asked again with \
                  the kernel's UDP path gone (AF_XDP) and present (sockets): the difference \
                  between a CMAC and a plain request of the same step, over the CMAC one. The \
                  MAC's own cost is about a fixed 0.1-0.2 µs; differences within the ticks' \
                  resolution (10 ms over the measurement) are noise, and a negative share is \
                  noise."
        .into();
    table
}

fn runs_table(outcome: &Outcome) -> Table {
    let mut table = Table::new(
        "Every measurement",
        &[
            "rate (req/s)",
            "auth",
            "server",
            "round",
            "offered (req/s)",
            "answered (req/s)",
            "loss",
            "server user / system per answered (µs)",
            "machine per answered (µs)",
            "attributed per answered (µs)",
            "not attributed (CPUs)",
            "generator per answered (µs)",
            "T3 mean / median / p99 (µs)",
            "steal",
            "notes",
        ],
    );
    for m in &outcome.measurements {
        let mut row = vec![
            fmt_rate(m.rate),
            m.auth.name().into(),
            m.server.name_for(m.auth.protocol()).into(),
            (m.round + 1).to_string(),
        ];
        let Some(f) = Figures::of(m, outcome) else {
            row.extend(std::iter::repeat_n("–".to_owned(), 10));
            row.push(format!("error: {}", m.error.as_deref().unwrap_or("?")));
            table.row(row);
            continue;
        };
        row.push(format!("{:.0}", f.offered));
        row.push(format!("{:.0}", f.answered));
        row.push(format!("{:.2}%", 100.0 * f.loss));
        row.push(format!(
            "{} / {}",
            opt_us(f.server_user_us),
            opt_us(f.server_system_us)
        ));
        row.push(opt_us(f.machine_us));
        row.push(opt_us(f.attributed_us));
        row.push(
            f.unattributed_cpus
                .map_or("–".into(), |v| format!("{v:.2}")),
        );
        row.push(opt_us(f.generator_us));
        row.push(if f.t3_mean_us.is_none() {
            "–".into()
        } else {
            format!(
                "{} / {} / {}",
                opt_us(f.t3_mean_us),
                opt_us(f.t3_median_us),
                opt_us(f.t3_p99_us)
            )
        });
        row.push(f.steal.map_or("–".into(), |s| format!("{:.1}%", 100.0 * s)));
        let mut notes = Vec::new();
        if f.fell_behind {
            notes.push("generator fell behind †".to_owned());
        }
        if !m.server_pinned {
            notes.push("server not pinned".into());
        }
        if !m.generator_pinned {
            notes.push("generator not pinned".into());
        }
        if let Some(e) = &m.error {
            notes.push(format!("error: {e}"));
        }
        row.push(notes.join("; "));
        table.row(row);
    }
    table
}

fn method(outcome: &Outcome, quick: bool) -> String {
    let plan = &outcome.plan;
    let rates: Vec<String> = plan.rates.iter().map(|&r| fmt_rate(r)).collect();
    let auths: Vec<&str> = plan
        .auths
        .iter()
        .filter(|a| a.protocol() == Protocol::Ntp)
        .map(|a| a.name())
        .collect();
    let interface = outcome
        .interface
        .as_deref()
        .unwrap_or("(the server-side veth)");
    let offload = if outcome.checksum_offload_off {
        "off"
    } else {
        "could not be turned off"
    };
    let idle = match outcome.idle_busy_before_after {
        (Some(a), Some(b)) => format!(
            "{:.1}% of one CPU busy before, {:.1}% after",
            100.0 * a,
            100.0 * b
        ),
        _ => "not measured".into(),
    };
    let quick = if quick {
        " (`--quick`: one round of 1 s steps, figures indicative)"
    } else {
        ""
    };
    // Without NTP in the plan, the NTP generator's and servers' parts give
    // way to the other protocols' (below).
    let ntp = !auths.is_empty();
    let generator = if ntp {
        format!(
            "the open-loop generator (authtime-lab's load_ntp, {} source sockets, evenly \
             spaced requests, one logical client per 10 req/s)",
            plan.sockets
        )
    } else {
        "the protocol's generator (below)".into()
    };
    let servers = if ntp {
        "chronyd (`-x`, `local stratum 1`, `allow`, the key file) and `authtime serve` on \
         sockets (one worker, rate limit off, stratum-1 static clock, the same chrony-format \
         AES-128-CMAC key file) run throughout"
    } else {
        "the protocol's peer and `authtime serve` on sockets (one worker, rate limit off, \
         stratum-1 static clock) run for all of its measurements"
    };
    let steps = if ntp {
        format!(
            "Steps: {} req/s; {}; ",
            rates.join(", "),
            auths.join(" and ")
        )
    } else {
        "Steps: each protocol's (below); ".into()
    };
    let t3 = if ntp {
        " T3 offset: kernel receive time of the reply at the generator − the T3 it carries \
         (one clock; includes the veth crossing, about 0.1-0.3 µs) in basic mode; in the \
         interleaved rows (RFC 9769 requests, as chrony's client sends them, with the CMAC \
         key) the previous reply's kernel receive time − this reply's T3, which is that \
         reply's transmit time as the server learnt it. Every \
         authtime adds the send-path delay it measures from the kernel's transmit times \
         (the error queue on sockets, the completion ring on AF_XDP, where veth stamps the \
         frame as the peer's IP layer takes it: docs/xdp.md). Replies are counted, not \
         authenticated."
    } else {
        ""
    };
    format!(
        "Two network namespaces of the section's own joined by a veth pair (the accuracy \
         section's setup): the servers in one, each on its own address, port 123, pinned to \
         CPU 0; {generator} in the other, pinned to CPU 1. {servers}; `authtime serve` on AF_XDP is \
         the same configuration plus `[xdp] interface = \"{interface}\"`, `attach = \
         \"native\"` (copy mode: veth has no zero-copy), started for each of its \
         measurements and stopped after it, so the others run on a veth with no XDP \
         program. The generator's veth end computes UDP checksums in software (transmit \
         checksum offload {offload}), for every server alike: a veth leaves offloaded \
         checksums unfilled, which the AF_XDP path must drop, while a NIC's peer on a real \
         link sends them complete. {steps}{step:.1} s of sending \
         each, then up to {drain} ms for late replies; {rounds} round(s), the servers' \
         order alternating between rounds, all servers of a step sent the same schedule. \
         CPU: the server process's utime and stime (/proc/PID/stat), the whole machine's \
         busy time (all {cpus} CPUs' time over the measurement less the idle, iowait and \
         steal time of /proc/stat: exact under a tickless idle, where the sampled user and \
         system fields miss a server's short bursts between sleeps; steal reported per \
         step) and the lab process's (the generator), each over the measurement and \
         divided by the time replies received. Why the whole machine: on veth part of a \
         receiver's work runs in the sender's context (the request's softirq on the \
         generator's CPU, the reply's on the server's), and AF_XDP moves work between the \
         server's system calls and the kernel's softirqs, so a server-only figure can hide \
         cost moved to the generator. The whole machine's busy time also counts whatever \
         else runs, so the section watches the machine idle (servers up, no load) for \
         {baseline:.1} s before the measurements and after them (idle baseline: {idle}), \
         and also gives an attributed figure: the server and lab processes and the kernel \
         threads.{t3} The machine is shared (steal time is noted), and `/proc`'s 10 ms \
         ticks make short steps coarse{quick}.{others} This section took {elapsed:.0} s.",
        step = plan.step.as_secs_f64(),
        drain = plan.drain.as_millis(),
        rounds = plan.rounds,
        cpus = outcome.cpus,
        baseline = crate::section_xdp::IDLE_BASELINE.as_secs_f64(),
        elapsed = outcome.elapsed_s,
        others = other_protocols_method(outcome),
    )
}

/// The method of NTS-NTP and Roughtime, when the plan has them.
fn other_protocols_method(outcome: &Outcome) -> String {
    let plan = &outcome.plan;
    let rates = |auth| {
        plan.rates_for(auth)
            .iter()
            .map(|&r| fmt_rate(r))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::new();
    if plan.auths.contains(&Auth::Nts) {
        out.push_str(&format!(
            " NTS-NTP ({rates} req/s), after NTP, with servers of its own on the same \
             addresses: chronyd as an NTS server (section `nts`'s configuration: the \
             certificate and key, `ntsport 4460`; here `local stratum 1`, and its NTS-KE in \
             the main process, `ntsprocesses 0`), `authtime serve` with `[nts-ke]` on port \
             4460 (one worker, an embedded master-key store) on sockets, and the same plus \
             `[xdp]` (the NTS-KE TCP connections pass through the kernel beside the XDP \
             program). A CA and one leaf for the three addresses come from `authtime nts \
             cert`. The generator is authtime-lab's load_nts (one thread, {sockets} \
             sockets, AEAD_AES_SIV_CMAC_256 offered first): before each \
             measurement it makes 8 NTS-KE sessions over TCP (full TLS 1.3 handshakes), \
             outside the CPU counters; during it it sends NTS requests with their cookies \
             (reused while the pool holds fewer than 64, refilled by the replies' new \
             cookies), checks every reply's authenticator and unique identifier, and takes \
             T3 offsets as for NTP from the kernel's receive timestamps. Its requests leave \
             in bursts at the runtime's 1 ms timer ticks, where load_ntp spaces them \
             evenly: the figures compare the servers at a step, not NTS-NTP with NTP.",
            rates = rates(Auth::Nts),
            sockets = plan.sockets,
        ));
    }
    if plan.auths.contains(&Auth::Roughtime) {
        out.push_str(&format!(
            " Roughtime ({rates} req/s), last, with servers of its own on the same \
             addresses, UDP port 2002, one long-term key for all three: roughenough 2.2 \
             (`roughenough_server -j 1`, one worker) in chronyd's column, `authtime serve` \
             with `[roughtime]` (one worker, no per-client limit) on sockets, and the same \
             plus `[xdp]` (ports 123 and 2002 steered). The generator is authtime-lab's \
             load_roughtime_paced: 1024-byte requests offering the RFC version, evenly \
             spaced, open loop (sleeping between due requests, not spinning), every 64th \
             response verified; answered = responses received. No T3 offset: Roughtime \
             answers with a midpoint rounded to the second and a radius, not a timestamp \
             whose earliness means anything at this scale.",
            rates = rates(Auth::Roughtime),
        ));
    }
    out
}

fn findings(outcome: &Outcome) -> Vec<String> {
    let mut out = outcome.notes.clone();
    for s in &outcome.servers {
        if let Some(why) = &s.not_available {
            let protocol = if s.protocol == Protocol::Ntp {
                String::new()
            } else {
                format!(" ({})", s.protocol.name())
            };
            out.push(format!(
                "{}{protocol} was not measured: not available: {why}.",
                s.server.name_for(s.protocol)
            ));
        }
    }
    if outcome.measurements.is_empty() {
        return out;
    }
    let crowded = outcome
        .measurements
        .iter()
        .filter_map(|m| Figures::of(m, outcome)?.unattributed_cpus)
        .filter(|&u| u > CROWDED)
        .count();
    if crowded > 0 {
        out.push(format!(
            "Other work ran during {crowded} of {} measurements: the whole machine was busier \
             than the servers, the generator and kernel threads by over {:.0}% of a CPU (row \
             \"not attributed\"). Their whole-machine figures count that work; the \
             attributed figures do not.",
            outcome.measurements.len(),
            100.0 * CROWDED
        ));
    }
    if let Some(idle) = outcome.idle_busy_per_s.filter(|&b| b > BUSY_IDLE) {
        out.push(format!(
            "The machine was busy with other work: {:.0}% of one CPU with no load (the idle \
             baseline). Work of other processes absorbs idle time, so the whole machine's \
             busy time stays near full whatever the servers do: its figures here are not a \
             measure of the servers; read the attributed figures (server + generator + kernel \
             threads) and rerun on a quiet machine.",
            100.0 * idle
        ));
    }
    for &auth in &outcome.plan.auths {
        out.extend(ratio_finding(outcome, auth));
    }
    out.extend(mac_finding(outcome));
    out.extend(t3_finding(outcome, &[Auth::Cmac, Auth::Plain], ""));
    out.extend(t3_finding(
        outcome,
        &[Auth::Interleaved],
        ", interleaved replies (the previous reply's kernel receive time − the T3 this one \
         carries, which is that reply's transmit time)",
    ));
    out.extend(t3_finding(outcome, &[Auth::Nts], ", NTS-NTP"));
    out.push(
        "On veth the whole machine's figure, not the server's, is the comparison: the \
         kernel runs part of a receiver's work in the sender's context, so the server \
         process's CPU leaves out work the request cost the machine."
            .into(),
    );
    let steals: Vec<f64> = outcome
        .measurements
        .iter()
        .filter_map(|m| Figures::of(m, outcome)?.steal)
        .collect();
    if !steals.is_empty() {
        let worst = steals.iter().copied().fold(0.0, f64::max);
        let disturbed = steals.iter().filter(|&&s| s > STEAL_WARNING).count();
        out.push(if disturbed == 0 {
            format!(
                "The hypervisor took at most {:.1}% of the CPUs in any measurement (steal \
                 time): the machine was quiet.",
                100.0 * worst
            )
        } else {
            format!(
                "The hypervisor took over {:.0}% of the CPUs (steal time, worst {:.1}%) in \
                 {disturbed} of {} measurements: their figures say as much about the \
                 neighbours as about the servers.",
                100.0 * STEAL_WARNING,
                100.0 * worst,
                steals.len()
            )
        });
    }
    let behind = outcome
        .measurements
        .iter()
        .filter(|m| m.report.as_ref().is_some_and(|r| r.fell_behind))
        .count();
    if behind > 0 {
        out.push(format!(
            "The generator fell behind its schedule in {behind} measurement(s) (†): there the \
             generator, not only the server, limited the rate."
        ));
    }
    out
}

/// The ratios at the highest step where every measured server kept up.
fn ratio_finding(outcome: &Outcome, auth: Auth) -> Option<String> {
    let protocol = auth.protocol();
    let kept_up = |rate: f64| {
        ServerKind::ALL
            .iter()
            .filter(|&&s| outcome.measured(protocol, s))
            .all(|&s| {
                let figs = figures(outcome, s, auth, rate);
                !figs.is_empty() && figs.iter().all(|f| f.loss < KEEPS_UP)
            })
    };
    let Some(rate) = outcome
        .plan
        .rates_for(auth)
        .iter()
        .copied()
        .filter(|&r| kept_up(r))
        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))))
    else {
        return Some(format!(
            "{}: no step where every measured server lost under 1% (see the tables).",
            auth.name()
        ));
    };
    let [c, s, x] = step_medians(outcome, auth, rate, |f| f.machine_us);
    let [ac, as_, ax] = step_medians(outcome, auth, rate, |f| f.attributed_us);
    let mut parts = Vec::new();
    let peer = ServerKind::Chronyd.name_for(protocol);
    for (name, v, a) in [
        (peer, c, ac),
        ("authtime on sockets", s, as_),
        ("authtime on AF_XDP", x, ax),
    ] {
        if let Some(v) = v {
            parts.push(format!("{name} {} µs (attributed {})", us(v), opt_us(a)));
        }
    }
    let mut ratios = Vec::new();
    if let Some(r) = ratio(c, s) {
        ratios.push(format!("{peer} ÷ sockets {r:.2}×"));
    }
    if let Some(r) = ratio(s, x) {
        ratios.push(format!("sockets ÷ AF_XDP {r:.2}×"));
    }
    if let Some(r) = ratio(ac, as_) {
        ratios.push(format!("attributed {peer} ÷ sockets {r:.2}×"));
    }
    if let Some(r) = ratio(as_, ax) {
        ratios.push(format!("attributed sockets ÷ AF_XDP {r:.2}×"));
    }
    Some(format!(
        "{}: at {} req/s (the highest step where every measured server lost under 1%), the \
         whole machine spent per answered request: {}{}.",
        auth.name(),
        fmt_rate(rate),
        parts.join(", "),
        if ratios.is_empty() {
            String::new()
        } else {
            format!(" ({})", ratios.join(", "))
        }
    ))
}

/// What the MAC adds at the lowest step, per server, in the server's own
/// CPU (the whole machine's also holds the generator's MAC, and on a busy
/// machine other work).
fn mac_finding(outcome: &Outcome) -> Option<String> {
    if !(outcome.plan.auths.contains(&Auth::Plain) && outcome.plan.auths.contains(&Auth::Cmac)) {
        return None;
    }
    let rate = *outcome.plan.rates.first()?;
    let parts: Vec<String> = ServerKind::ALL
        .iter()
        .filter_map(|&s| {
            let p = median_of(&figures(outcome, s, Auth::Plain, rate), |f| f.server_us)?;
            let c = median_of(&figures(outcome, s, Auth::Cmac, rate), |f| f.server_us)?;
            (c > 0.0).then(|| {
                format!(
                    "{} {} − {} = {} µs ({:.0}% of a CMAC request)",
                    s.name(),
                    us(c),
                    us(p),
                    us(c - p),
                    100.0 * (c - p) / c
                )
            })
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "What the MAC adds per answered request at {} req/s in the server process's CPU \
             (CMAC − plain): {}. The MAC itself is a fraction of a µs; differences of that \
             size are within the ticks' resolution, and a negative one is noise.",
            fmt_rate(rate),
            parts.join("; ")
        )
    })
}

/// The T3 offset's median per server, over every measurement of `auths`
/// (`what` names them, after the finding's first words).
fn t3_finding(outcome: &Outcome, auths: &[Auth], what: &str) -> Option<String> {
    let parts: Vec<String> = ServerKind::ALL
        .iter()
        .filter_map(|&s| {
            let figs: Vec<Figures> = outcome
                .measurements
                .iter()
                .filter(|m| m.server == s && auths.contains(&m.auth))
                .filter_map(|m| Figures::of(m, outcome))
                .collect();
            let median = median_of(&figs, |f| f.t3_median_us)?;
            let p99 = median_of(&figs, |f| f.t3_p99_us)?;
            Some(format!(
                "{} {} µs (p99 {} µs)",
                s.name(),
                us(median),
                us(p99)
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "How early T3 is (reply's kernel receive time − T3){what}, the median over all \
             measurements of each one's median: {}.",
            parts.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        cpu_time::MachineCpu,
        load_ntp::{Arrivals, Latency, LoadReport},
        section_xdp::{Plan, ServerStatus, StepCpu},
    };

    fn report(received: u64) -> LoadReport {
        LoadReport {
            target: "10.200.7.1:123".into(),
            rate: 10_000.0,
            duration_s: 1.0,
            sent: 10_000,
            send_errors: 0,
            received,
            kisses: 0,
            crypto_naks: 0,
            unmatched: 0,
            loss: 1.0 - received as f64 / 10_000.0,
            sent_rate: 10_000.0,
            received_rate: received as f64,
            latency: Latency::default(),
            late_sends: 0,
            max_lag_ms: 0.0,
            fell_behind: false,
            arrivals: Arrivals::Even,
            interleaved: false,
            clients: 1000,
            mean_send_burst: 1.0,
            not_sent: 0,
            accuracy: None,
        }
    }

    /// A measurement of 10,000 answered requests in 1.25 s on 2 CPUs.
    fn measurement(server: ServerKind, server_s: f64, idle_s: f64) -> Measurement {
        Measurement {
            server,
            auth: Auth::Cmac,
            rate: 10_000.0,
            round: 0,
            report: Some(report(10_000)),
            nts: None,
            roughtime: None,
            cpu: Some(StepCpu {
                wall_s: 1.25,
                server_user_s: server_s / 2.0,
                server_system_s: server_s / 2.0,
                machine_busy_s: 2.5 - idle_s,
                machine: MachineCpu {
                    idle_s,
                    cpus: 2,
                    ..MachineCpu::default()
                },
                generator_s: 0.3,
                kernel_threads_s: 0.0,
            }),
            error: None,
            generator_pinned: true,
            server_pinned: true,
        }
    }

    fn outcome() -> Outcome {
        let why = "authtime serve exited (exit status: 2): unknown field `xdp`".to_owned();
        Outcome {
            plan: Plan {
                auths: vec![Auth::Cmac],
                ..Plan::smoke()
            },
            measurements: vec![
                measurement(ServerKind::Chronyd, 0.2, 1.9),
                measurement(ServerKind::Sockets, 0.1, 2.0),
            ],
            servers: vec![
                ServerStatus {
                    protocol: Protocol::Ntp,
                    server: ServerKind::Chronyd,
                    not_available: None,
                },
                ServerStatus {
                    protocol: Protocol::Ntp,
                    server: ServerKind::Sockets,
                    not_available: None,
                },
                ServerStatus {
                    protocol: Protocol::Ntp,
                    server: ServerKind::Xdp,
                    not_available: Some(why),
                },
            ],
            interface: Some("atl1s".into()),
            checksum_offload_off: true,
            idle_busy_per_s: Some(0.01),
            idle_busy_before_after: (Some(0.01), Some(0.01)),
            cpus: 2,
            namespaces: Vec::new(),
            namespaces_removed: true,
            notes: Vec::new(),
            elapsed_s: 3.0,
        }
    }

    #[test]
    fn cpu_figures_are_per_answered_request() {
        let o = outcome();
        let f = Figures::of(&o.measurements[1], &o).expect("figures");
        // 0.1 s of server CPU over 10,000 replies: 10 µs each.
        assert!((f.server_us.expect("server") - 10.0).abs() < 1e-9);
        assert!((f.server_user_us.expect("user") - 5.0).abs() < 1e-9);
        // 2.5 CPU-seconds less 2.0 idle: 50 µs each; less the idle
        // machine's 0.01 × 1.25 s: 48.75.
        assert!((f.machine_us.expect("machine") - 50.0).abs() < 1e-9);
        assert!((f.machine_less_idle_us.expect("less idle") - 48.75).abs() < 1e-9);
        // Server 0.1 + generator 0.3: 40 µs each, and 0.1 s of the busy
        // 0.5 not attributed over 1.25 s.
        assert!((f.attributed_us.expect("attributed") - 40.0).abs() < 1e-9);
        assert!((f.unattributed_cpus.expect("other") - 0.08).abs() < 1e-9);
        assert_eq!(f.steal, Some(0.0));
        assert_eq!(f.t3_mean_us, None);
    }

    #[test]
    fn an_unavailable_server_is_said_so_with_its_reason() {
        let o = outcome();
        let section = section(&o, true);
        assert_eq!(section.id, "xdp");
        // One step table, the ratios, every measurement (no plain: no MAC
        // table).
        assert_eq!(section.tables.len(), 3);
        let step = &section.tables[0];
        assert_eq!(
            step.columns,
            ["", "chronyd", "authtime (sockets)", "authtime (AF_XDP)"]
        );
        assert_eq!(
            step.rows[0][3],
            "not available: authtime serve exited (exit status: 2): unknown field `xdp`"
        );
        assert!(step.rows[1..].iter().all(|r| r[3] == "–"), "{step:?}");
        let machine = step
            .rows
            .iter()
            .find(|r| r[0].contains("whole machine busy"))
            .expect("machine row");
        assert_eq!(machine[1..3], ["60.0".to_owned(), "50.0".to_owned()]);
        // chronyd ÷ sockets of the whole machine's 60 and 50 µs.
        let ratios = &section.tables[1];
        assert_eq!(ratios.rows[0][2], "1.20×");
        assert_eq!(ratios.rows[0][3], "–");
        assert!(
            section
                .findings
                .iter()
                .any(|f| f.starts_with("authtime (AF_XDP) was not measured: not available:")),
            "{:?}",
            section.findings
        );
        assert!(section.method.contains("transmit checksum offload off"));
    }

    /// An NTS-NTP and a Roughtime measurement of authtime on AF_XDP: 1 s of
    /// 2000 requests, 1900 answered, 0.2 s of server CPU.
    fn other_protocols() -> Outcome {
        use crate::{load_nts_stats::Tally, load_roughtime_paced::PacedReport};
        let mut o = outcome();
        o.plan.auths = vec![Auth::Nts, Auth::Roughtime];
        let tally = Tally {
            ntp_us: vec![50; 1900],
            t3_offsets_ns: vec![1000, 1200, 1400],
            ..Tally::default()
        };
        let nts = tally.report(
            crate::load_nts::Mode::Nts { ntp_per_ke: 0 },
            2000.0,
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(1),
            0,
            std::time::Duration::ZERO,
            false,
            0.1,
            false,
        );
        let roughtime = PacedReport {
            rate: 2000.0,
            scheduled: 2000,
            sent: 2000,
            received: 1900,
            duration_s: 1.0,
            sent_for_s: 1.0,
            loss: 0.05,
            received_rate: 1900.0,
            ..PacedReport::default()
        };
        let mut m = measurement(ServerKind::Xdp, 0.19, 2.0);
        m.report = None;
        o.measurements = vec![
            Measurement {
                auth: Auth::Nts,
                rate: 2000.0,
                nts: Some(nts),
                ..m.clone()
            },
            Measurement {
                auth: Auth::Roughtime,
                rate: 2000.0,
                roughtime: Some(roughtime),
                ..m
            },
        ];
        o.servers = [Protocol::Nts, Protocol::Roughtime]
            .into_iter()
            .flat_map(|protocol| {
                ServerKind::ALL.map(|server| ServerStatus {
                    protocol,
                    server,
                    not_available: (server != ServerKind::Xdp).then(|| "not here".into()),
                })
            })
            .collect();
        o
    }

    #[test]
    fn nts_and_roughtime_figures_come_from_their_generators() {
        let o = other_protocols();
        let nts = Figures::of(&o.measurements[0], &o).expect("NTS figures");
        assert!((nts.answered - 1900.0).abs() < 1e-9);
        assert!((nts.loss - 0.05).abs() < 1e-9);
        // 0.19 s of server CPU over 1900 checked replies: 100 µs each.
        assert!((nts.server_us.expect("server") - 100.0).abs() < 1e-9);
        assert!((nts.t3_median_us.expect("T3") - 1.2).abs() < 1e-9);
        let rt = Figures::of(&o.measurements[1], &o).expect("Roughtime figures");
        assert!((rt.answered - 1900.0).abs() < 1e-9);
        assert!((rt.offered - 2000.0).abs() < 1e-9);
        assert_eq!(rt.t3_median_us, None);

        let section = section(&o, true);
        // NTS and Roughtime step tables, the ratios of each, every measurement.
        assert_eq!(section.tables.len(), 5, "{:?}", section.tables);
        let rt_table = &section.tables[1];
        assert!(rt_table.title.starts_with("Roughtime"));
        assert_eq!(rt_table.columns[1], "roughenough");
        assert_eq!(rt_table.rows[0][1], "not available: not here");
        let t3 = rt_table
            .rows
            .iter()
            .find(|r| r[0].starts_with("T3"))
            .expect("T3 row");
        assert_eq!(t3[3], "–");
        assert!(section.tables[3].columns[2].contains("roughenough ÷ sockets"));
        assert!(section.method.contains("NTS-KE"));
        assert!(
            !section.method.contains("CMAC key file"),
            "{}",
            section.method
        );
        assert!(
            section
                .findings
                .iter()
                .any(|f| f.starts_with("roughenough (Roughtime) was not measured")),
            "{:?}",
            section.findings
        );
    }
}
