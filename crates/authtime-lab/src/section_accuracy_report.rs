//! The `accuracy` section's report: a row per measurement, a summary per
//! step in the form of issue 26's table (mean and standard deviation, ranges
//! over rounds), plots of the offset against the rate, findings, and the
//! method written next to the numbers.

use std::collections::BTreeSet;

use crate::{
    load_ntp::Arrivals,
    load_ntp_accuracy::{OffsetStats, ReplyKind, ResponseStats},
    plot::{Plot, Series},
    report::{Section, Table},
    section_accuracy::{Measurement, Outcome},
    section_ntp::fmt_rate,
};

/// The figures of a measurement that the tables show: the interleaved
/// replies' when there were any, else the basic ones.
fn headline(m: &Measurement) -> Option<(ReplyKind, &OffsetStats, &ResponseStats)> {
    let a = m.report.as_ref()?.accuracy.as_ref()?;
    let (kind, offsets, response) = a.headline();
    (offsets.count > 0).then_some((kind, offsets, response))
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

fn range(values: &[f64]) -> String {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        "–".into()
    } else if us(lo) == us(hi) {
        us(lo)
    } else {
        format!("{}-{}", us(lo), us(hi))
    }
}

fn mode_name(interleaved: bool) -> &'static str {
    if interleaved { "interleaved" } else { "basic" }
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// The section.
#[must_use]
pub fn section(outcome: &Outcome, quick: bool) -> Section {
    let mut tables = Vec::new();
    let mut plots = Vec::new();
    if !outcome.measurements.is_empty() {
        tables.push(summary_table(outcome));
        tables.push(runs_table(outcome));
        plots = offset_plots(outcome);
    }
    if !outcome.overload.is_empty() {
        tables.push(overload_table(outcome));
    }
    Section {
        id: "accuracy".into(),
        title: "Served time accuracy: how early each reply's transmit timestamp is, authtime vs \
                chronyd (issue 26)"
            .into(),
        seed: "issue 26, part 5: the T3 offset (kernel receive time of the reply at the \
               generator − its transmit timestamp) with evenly spaced and Poisson arrivals, \
               basic and interleaved (RFC 9769) mode, authtime and chronyd side by side; \
               targets: authtime's basic mean and spread no worse than chronyd's up to \
               chronyd's knee, interleaved mean within 0.5 µs with ≥ 99% of replies interleaved"
            .into(),
        method: method(outcome, quick),
        tables,
        plots,
        findings: findings(outcome),
        data: serde_json::to_value(outcome).unwrap_or_default(),
    }
}

fn summary_table(outcome: &Outcome) -> Table {
    let servers = main_servers(outcome);
    let mut columns = vec!["rate (req/s)".to_owned()];
    let mut keys = Vec::new();
    for interleaved in [false, true] {
        for &arrivals in &outcome.plan.arrivals {
            for &server in &servers {
                columns.push(format!(
                    "{server}, {}, {}",
                    mode_name(interleaved),
                    arrivals.name()
                ));
                keys.push((server, interleaved, arrivals));
            }
        }
    }
    let cols: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut table = Table::new(
        "T3 offset per step: mean (standard deviation) in µs, ranges over rounds",
        &cols,
    );
    for &rate in &outcome.plan.rates {
        let mut row = vec![fmt_rate(rate)];
        for &(server, interleaved, arrivals) in &keys {
            row.push(summary_cell(outcome, rate, server, interleaved, arrivals));
        }
        table.row(row);
    }
    table.note = "Offset = kernel receive time of the reply at the generator − the T3 it carries \
                  (positive: T3 early); interleaved columns: the interleaved replies' offsets \
                  (the previous reply's receive time − this T3) and their share after each \
                  client's first two requests; \"basic only\": the server answered no \
                  interleaved request interleaved, and the basic replies' figures are shown. \
                  †: the generator fell behind its schedule in a round (arrivals burstier than \
                  asked). The per-measurement table below has median, p99, extremes, loss and \
                  response time."
        .into();
    table
}

fn summary_cell(
    outcome: &Outcome,
    rate: f64,
    server: &str,
    interleaved: bool,
    arrivals: Arrivals,
) -> String {
    let runs: Vec<&Measurement> = step_runs(outcome, server, rate, interleaved, arrivals).collect();
    let heads: Vec<_> = runs.iter().filter_map(|m| headline(m)).collect();
    if heads.is_empty() {
        return if runs.iter().any(|m| m.error.is_some()) {
            "error".into()
        } else {
            "–".into()
        };
    }
    let means: Vec<f64> = heads.iter().map(|h| h.1.mean_us).collect();
    let spreads: Vec<f64> = heads.iter().map(|h| h.1.stddev_us).collect();
    let mut cell = format!("{} ({})", range(&means), range(&spreads));
    if interleaved {
        if heads.iter().all(|h| h.0 == ReplyKind::Basic) {
            cell.push_str(", basic only");
        } else {
            let shares: Vec<f64> = runs
                .iter()
                .filter_map(|m| m.report.as_ref()?.accuracy.as_ref())
                .map(|a| 100.0 * a.interleaved_share_after_warmup)
                .collect();
            let lo = shares.iter().copied().fold(f64::INFINITY, f64::min);
            cell.push_str(&format!(", {lo:.1}% interleaved"));
        }
    }
    if runs
        .iter()
        .any(|m| m.report.as_ref().is_some_and(|r| r.fell_behind))
    {
        cell.push_str(" †");
    }
    cell
}

fn runs_table(outcome: &Outcome) -> Table {
    let mut table = Table::new(
        "Every measurement (one row per server, mode, arrivals, rate and round)",
        &[
            "rate (req/s)",
            "arrivals",
            "mode",
            "server",
            "round",
            "sent",
            "loss",
            "interleaved",
            "offsets of",
            "mean (µs)",
            "median (µs)",
            "p99 (µs)",
            "stddev (µs)",
            "IQR (µs)",
            "min (µs)",
            "max (µs)",
            "response time median / p99 (µs)",
            "notes",
        ],
    );
    for m in &outcome.measurements {
        let mut row = vec![
            fmt_rate(m.rate),
            m.arrivals.name().into(),
            mode_name(m.interleaved).into(),
            m.server.into(),
            (m.round + 1).to_string(),
        ];
        let Some(r) = &m.report else {
            row.extend(std::iter::repeat_n("–".to_owned(), 12));
            row.push(format!("error: {}", m.error.as_deref().unwrap_or("?")));
            table.row(row);
            continue;
        };
        row.push(r.sent.to_string());
        row.push(format!("{:.2}%", 100.0 * r.loss));
        let interleaved = match (&r.accuracy, m.interleaved) {
            (Some(a), true) => format!(
                "{:.1}% ({:.1}% after warm-up)",
                100.0 * a.interleaved_share,
                100.0 * a.interleaved_share_after_warmup
            ),
            _ => "–".into(),
        };
        row.push(interleaved);
        match headline(m) {
            Some((kind, o, resp)) => {
                row.push(format!(
                    "{} ({})",
                    match kind {
                        ReplyKind::Basic => "basic",
                        ReplyKind::Interleaved => "interleaved",
                    },
                    o.count
                ));
                for x in [
                    o.mean_us,
                    o.median_us,
                    o.p99_us,
                    o.stddev_us,
                    o.iqr_us,
                    o.min_us,
                    o.max_us,
                ] {
                    row.push(us(x));
                }
                row.push(format!("{} / {}", us(resp.median_us), us(resp.p99_us)));
            }
            None => row.extend(std::iter::repeat_n("–".to_owned(), 9)),
        }
        let mut notes = Vec::new();
        if r.fell_behind {
            notes.push(format!(
                "generator fell behind (worst {:.1} ms late)",
                r.max_lag_ms
            ));
        }
        if r.accuracy.is_none() {
            notes.push("no kernel receive timestamps".into());
        }
        if let Some(e) = &m.error {
            notes.push(format!("error: {e}"));
        }
        notes.push(format!("{:.1} req/wake-up", r.mean_send_burst));
        row.push(notes.join("; "));
        table.row(row);
    }
    table.note = "Offsets of: which replies the figures come from, and how many (interleaved \
                  runs: the interleaved replies when there were any). Response time: basic \
                  replies T3 − T2 of the same reply (T3 as the server wrote it); interleaved \
                  replies the previous exchange's actual transmit time − its T2. Loss = 1 − time \
                  replies ÷ requests sent. req/wake-up: requests the generator sent per wake-up \
                  (1 when evenly spaced requests left one by one)."
        .into();
    table
}

/// The servers of the main part (a variant measured only under overload is
/// left out of its tables and findings).
fn main_servers(outcome: &Outcome) -> Vec<&'static str> {
    outcome
        .servers
        .iter()
        .map(|s| s.0)
        .filter(|s| outcome.measurements.iter().any(|m| m.server == *s))
        .collect()
}

/// The overload part: what each server answered, how old its replies were,
/// while a busy loop shared its CPU.
fn overload_table(outcome: &Outcome) -> Table {
    let mut table = Table::new(
        "Overload: basic requests, evenly spaced, the servers' CPU shared with a busy loop",
        &[
            "rate (req/s)",
            "server",
            "answered (req/s)",
            "loss",
            "response time median / p99 (µs)",
            "T3 offset mean (stddev) (µs)",
            "notes",
        ],
    );
    for m in &outcome.overload {
        let mut row = vec![fmt_rate(m.rate), m.server.into()];
        let Some(r) = &m.report else {
            row.extend(std::iter::repeat_n("–".to_owned(), 4));
            row.push(format!("error: {}", m.error.as_deref().unwrap_or("?")));
            table.row(row);
            continue;
        };
        row.push(format!("{:.0}", r.received_rate));
        row.push(format!("{:.2}%", 100.0 * r.loss));
        match headline(m) {
            Some((_, o, resp)) => {
                row.push(format!("{} / {}", us(resp.median_us), us(resp.p99_us)));
                row.push(format!("{} ({})", us(o.mean_us), us(o.stddev_us)));
            }
            None => row.extend(std::iter::repeat_n("–".to_owned(), 2)),
        }
        row.push(if r.fell_behind {
            format!("generator fell behind (worst {:.1} ms late)", r.max_lag_ms)
        } else {
            String::new()
        });
        table.row(row);
    }
    table.note = "Each server keeps its CPU (CPU 0) but shares it with a spinning thread of the \
                  lab, as on a busy host: its knee drops to about half, within the generator's \
                  reach. Response time: T3 − T2 of the same reply, the request's wait in the \
                  socket plus the server's work; requests the server dropped (stale, or by the \
                  kernel for a full receive buffer) count as lost. Answered: time replies per \
                  second of sending."
        .into();
    table
}

/// What the overload part says, per server: the answered rate at its top
/// step against the best below it, and how old the replies were.
fn overload_findings(outcome: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    for (server, _) in &outcome.servers {
        let runs: Vec<&Measurement> = outcome
            .overload
            .iter()
            .filter(|m| m.server == *server && m.report.is_some())
            .collect();
        let Some((top, below)) = runs.split_last() else {
            continue;
        };
        let (Some(r), Some((_, _, resp))) = (&top.report, headline(top)) else {
            continue;
        };
        let best_below = below
            .iter()
            .filter_map(|m| m.report.as_ref().map(|r| r.received_rate))
            .fold(0.0_f64, f64::max);
        let p99s: Vec<f64> = runs
            .iter()
            .filter_map(|m| headline(m).map(|h| h.2.p99_us))
            .collect();
        let worst_p99 = us(p99s.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        let against_below = if best_below > 0.0 {
            format!(
                ", {:.2}× the best it answered at a lower step ({best_below:.0} req/s)",
                r.received_rate / best_below
            )
        } else {
            String::new()
        };
        out.push(format!(
            "Overload (CPU shared with a busy loop): {server} answered {:.0} req/s at {} req/s \
             offered ({:.1}% lost){against_below}; its replies' response time p99 was \
             {worst_p99} µs at most over the steps, {} µs at the top step.",
            r.received_rate,
            fmt_rate(top.rate),
            100.0 * r.loss,
            us(resp.p99_us)
        ));
    }
    out
}

/// Mean and p99 of the offset against the rate, one line per server, mode
/// and arrivals (medians over rounds).
fn offset_plots(outcome: &Outcome) -> Vec<Plot> {
    let keys: BTreeSet<(&str, bool, &str)> = outcome
        .measurements
        .iter()
        .map(|m| (m.server, m.interleaved, m.arrivals.name()))
        .collect();
    let series = |pick: fn(&OffsetStats) -> f64| -> Vec<Series> {
        keys.iter()
            .map(|&(server, interleaved, arrivals)| {
                let points = outcome
                    .plan
                    .rates
                    .iter()
                    .filter_map(|&rate| {
                        let values: Vec<f64> = outcome
                            .measurements
                            .iter()
                            .filter(|m| {
                                m.rate == rate
                                    && m.server == server
                                    && m.interleaved == interleaved
                                    && m.arrivals.name() == arrivals
                            })
                            .filter_map(|m| headline(m).map(|h| pick(h.1)))
                            .collect();
                        median(values).map(|v| (rate, v))
                    })
                    .collect();
                Series {
                    name: format!("{server}, {}, {arrivals}", mode_name(interleaved)),
                    points,
                }
            })
            .collect()
    };
    vec![
        Plot {
            stem: "accuracy-mean".into(),
            title: "Mean T3 offset vs request rate".into(),
            x_label: "requests/s".into(),
            y_label: "mean T3 offset (µs)".into(),
            log_x: true,
            log_y: false,
            series: series(|o| o.mean_us),
        },
        Plot {
            stem: "accuracy-p99".into(),
            title: "99th percentile of the T3 offset vs request rate".into(),
            x_label: "requests/s".into(),
            y_label: "p99 T3 offset (µs, log; non-positive omitted)".into(),
            log_x: true,
            log_y: true,
            series: series(|o| o.p99_us),
        },
    ]
}

/// Whether `server` answered any interleaved request interleaved with
/// `arrivals`.
fn answered_interleaved(outcome: &Outcome, server: &str, arrivals: Arrivals) -> bool {
    outcome
        .measurements
        .iter()
        .filter(|m| m.server == server && m.interleaved && m.arrivals == arrivals)
        .any(|m| headline(m).is_some_and(|h| h.0 == ReplyKind::Interleaved))
}

/// Loss above which a step is past a server's knee.
const KNEE_LOSS: f64 = 0.01;

/// The median over rounds of `f` of `server`'s headline figures at `rate`.
fn step_median(
    outcome: &Outcome,
    server: &str,
    rate: f64,
    interleaved: bool,
    arrivals: Arrivals,
    f: impl Fn(&Measurement) -> Option<f64>,
) -> Option<f64> {
    median(
        step_runs(outcome, server, rate, interleaved, arrivals)
            .filter_map(f)
            .collect(),
    )
}

/// The rounds of one step of `server` in the main part.
fn step_runs<'a>(
    outcome: &'a Outcome,
    server: &'a str,
    rate: f64,
    interleaved: bool,
    arrivals: Arrivals,
) -> impl Iterator<Item = &'a Measurement> {
    outcome.measurements.iter().filter(move |m| {
        m.rate == rate
            && m.server == server
            && m.interleaved == interleaved
            && m.arrivals == arrivals
    })
}

fn mean_of(m: &Measurement) -> Option<f64> {
    headline(m).map(|h| h.1.mean_us)
}

fn stddev_of(m: &Measurement) -> Option<f64> {
    headline(m).map(|h| h.1.stddev_us)
}

fn iqr_of(m: &Measurement) -> Option<f64> {
    headline(m).map(|h| h.1.iqr_us)
}

fn loss_of(m: &Measurement) -> Option<f64> {
    m.report.as_ref().map(|r| r.loss)
}

fn share_of(m: &Measurement) -> Option<f64> {
    let a = m.report.as_ref()?.accuracy.as_ref()?;
    Some(100.0 * a.interleaved_share_after_warmup)
}

/// The lowest rate at which `server` lost more than [`KNEE_LOSS`] of its
/// requests (median over rounds) in `interleaved` mode with `arrivals`.
fn knee(outcome: &Outcome, server: &str, interleaved: bool, arrivals: Arrivals) -> Option<f64> {
    outcome.plan.rates.iter().copied().find(|&rate| {
        step_median(outcome, server, rate, interleaved, arrivals, loss_of)
            .is_some_and(|loss| loss > KNEE_LOSS)
    })
}

fn knee_text(knee: Option<f64>, outcome: &Outcome) -> String {
    match (knee, outcome.plan.rates.last()) {
        (Some(rate), _) => format!("{} req/s", fmt_rate(rate)),
        (None, Some(&last)) => format!("none up to {} req/s", fmt_rate(last)),
        (None, None) => "–".into(),
    }
}

/// A range of per-step medians, `lo to hi` in µs.
fn step_range(values: &[f64]) -> String {
    let r = range(values);
    format!("{r} µs")
}

/// One step's medians over rounds, for [`compare`].
struct StepFigures {
    mean: f64,
    stddev: f64,
    iqr: f64,
    chronyd_mean: f64,
    chronyd_stddev: f64,
    chronyd_iqr: f64,
    /// Interleaved share after warm-up, %.
    share: Option<f64>,
}

/// The comparison of `server` with chronyd in one mode and arrival pattern,
/// against issue 26's targets, over the steps below chronyd's knee.
fn compare(
    outcome: &Outcome,
    server: &str,
    interleaved: bool,
    arrivals: Arrivals,
) -> Option<String> {
    let chronyd_knee = knee(outcome, "chronyd", interleaved, arrivals);
    let steps: Vec<f64> = outcome
        .plan
        .rates
        .iter()
        .copied()
        .filter(|&rate| chronyd_knee.is_none_or(|k| rate < k))
        .collect();
    let mut rows = Vec::new();
    for &rate in &steps {
        let get = |who: &str, f: fn(&Measurement) -> Option<f64>| {
            step_median(outcome, who, rate, interleaved, arrivals, f)
        };
        let (Some(ma), Some(sa), Some(ia), Some(mc), Some(sc), Some(ic)) = (
            get(server, mean_of),
            get(server, stddev_of),
            get(server, iqr_of),
            get("chronyd", mean_of),
            get("chronyd", stddev_of),
            get("chronyd", iqr_of),
        ) else {
            continue;
        };
        rows.push(StepFigures {
            mean: ma,
            stddev: sa,
            iqr: ia,
            chronyd_mean: mc,
            chronyd_stddev: sc,
            chronyd_iqr: ic,
            share: get(server, share_of),
        });
    }
    if rows.is_empty() {
        return None;
    }
    let n = rows.len();
    let pick = |f: fn(&StepFigures) -> f64| -> Vec<f64> { rows.iter().map(f).collect() };
    let head = format!(
        "{} mode, {} arrivals, the {n} step(s) below chronyd's knee ({}): {server}'s mean T3 \
         offset {} (chronyd {}), standard deviation {} (chronyd {}), interquartile range {} \
         (chronyd {})",
        mode_name(interleaved),
        arrivals.name(),
        knee_text(chronyd_knee, outcome),
        step_range(&pick(|r| r.mean)),
        step_range(&pick(|r| r.chronyd_mean)),
        step_range(&pick(|r| r.stddev)),
        step_range(&pick(|r| r.chronyd_stddev)),
        step_range(&pick(|r| r.iqr)),
        step_range(&pick(|r| r.chronyd_iqr)),
    );
    let verdict = if interleaved {
        let within = rows.iter().filter(|r| r.mean.abs() <= 0.5).count();
        let shares: Vec<f64> = rows.iter().filter_map(|r| r.share).collect();
        let enough = shares.iter().filter(|s| **s >= 99.0).count();
        format!(
            "; mean within 0.5 µs at {within} of {n} steps, at least 99% of requests answered \
             interleaved (after warm-up) at {enough} of {n} ({})",
            if shares.is_empty() {
                "–".into()
            } else {
                format!(
                    "{:.1}% to {:.1}%",
                    shares.iter().copied().fold(f64::INFINITY, f64::min),
                    shares.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                )
            }
        )
    } else {
        let mean_ok = rows
            .iter()
            .filter(|r| r.mean.abs() <= r.chronyd_mean.abs())
            .count();
        let spread_ok = rows.iter().filter(|r| r.stddev <= r.chronyd_stddev).count();
        let iqr_ok = rows.iter().filter(|r| r.iqr <= r.chronyd_iqr).count();
        format!(
            "; |mean| no larger than chronyd's at {mean_ok} of {n} steps, standard deviation no \
             larger at {spread_ok} of {n}, interquartile range no larger at {iqr_ok} of {n}"
        )
    };
    Some(format!("{head}{verdict} (medians over rounds)."))
}

fn findings(outcome: &Outcome) -> Vec<String> {
    let mut out = outcome.notes.clone();
    let authtimes: Vec<&str> = outcome
        .servers
        .iter()
        .map(|s| s.0)
        .filter(|s| s.starts_with("authtime"))
        .collect();
    for &arrivals in &outcome.plan.arrivals {
        for interleaved in [false, true] {
            for &server in &authtimes {
                if interleaved && !answered_interleaved(outcome, server, arrivals) {
                    if outcome
                        .measurements
                        .iter()
                        .any(|m| m.server == server && m.interleaved && m.arrivals == arrivals)
                    {
                        out.push(format!(
                            "interleaved mode, {} arrivals: {server} answered no request \
                             interleaved.",
                            arrivals.name()
                        ));
                    }
                    continue;
                }
                out.extend(compare(outcome, server, interleaved, arrivals));
            }
        }
    }
    for server in main_servers(outcome) {
        let knees: Vec<String> = outcome
            .plan
            .arrivals
            .iter()
            .map(|&a| {
                format!(
                    "{} {}",
                    a.name(),
                    knee_text(knee(outcome, server, false, a), outcome)
                )
            })
            .collect();
        out.push(format!(
            "Knee of {server} (the lowest step losing more than {:.0}% in basic mode): {}.",
            100.0 * KNEE_LOSS,
            knees.join(", ")
        ));
    }
    for (server, _) in &outcome.servers {
        let shares: Vec<f64> = outcome
            .measurements
            .iter()
            .filter(|m| m.server == *server && m.interleaved)
            .filter_map(|m| m.report.as_ref()?.accuracy.as_ref())
            .map(|a| 100.0 * a.interleaved_share_after_warmup)
            .collect();
        if !shares.is_empty() {
            let lo = shares.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = shares.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let shares = if format!("{lo:.1}") == format!("{hi:.1}") {
                format!("{lo:.1}%")
            } else {
                format!("{lo:.1}% to {hi:.1}%")
            };
            out.push(format!(
                "Interleaved requests: {server} answered {shares} of them interleaved (after \
                 each client's first two requests, over every step)."
            ));
        }
    }
    out.extend(overload_findings(outcome));
    let behind = outcome
        .measurements
        .iter()
        .filter(|m| m.report.as_ref().is_some_and(|r| r.fell_behind))
        .count();
    if behind > 0 {
        out.push(format!(
            "In {behind} of {} measurements the generator fell behind its schedule (more than \
             20 ms late): the server then saw burstier arrivals than asked, so those figures \
             describe a harsher load than their row says.",
            outcome.measurements.len()
        ));
    }
    let unstamped = outcome
        .measurements
        .iter()
        .filter(|m| m.report.as_ref().is_some_and(|r| r.accuracy.is_none()))
        .count();
    if unstamped > 0 {
        out.push(format!(
            "{unstamped} measurements had no kernel receive timestamps: no offsets for them."
        ));
    }
    let errors: Vec<String> = outcome
        .measurements
        .iter()
        .filter_map(|m| {
            m.error
                .as_ref()
                .map(|e| format!("{} at {}: {e}", m.server, fmt_rate(m.rate)))
        })
        .collect();
    if let Some(first) = errors.first() {
        out.push(format!(
            "{} measurements failed; the first: {first}.",
            errors.len()
        ));
    }
    if let Some(stats) = &outcome.chronyd_serverstats
        && let Some(line) = stats
            .lines()
            .find(|l| l.starts_with("Interleaved NTP packets"))
    {
        out.push(format!(
            "chronyd's serverstats after the section: {}.",
            line.trim()
        ));
    }
    out
}

fn method(outcome: &Outcome, quick: bool) -> String {
    let plan = &outcome.plan;
    let pinning: Vec<String> = outcome
        .servers
        .iter()
        .map(|(name, pinned)| {
            format!(
                "{name} {}",
                if *pinned {
                    "pinned to CPU 0"
                } else {
                    "not pinned (sched_setaffinity refused)"
                }
            )
        })
        .collect();
    let generator_pinned = outcome.measurements.iter().all(|m| m.generator_pinned);
    format!(
        "Two network namespaces made for this section ({}) joined by a veth pair, private \
         addresses 10.200.7.0/24: the servers in one (`ip netns exec`), the load generator in \
         the other (a lab thread that entered it with setns), so every request and reply \
         crosses the veth and nothing leaves the pair; the namespaces are deleted at the end. \
         authtime: `authtime serve` (the executable beside this one), one worker, rate limiting \
         off, a static stratum-1 clock, on 10.200.7.1:123, as configured by default (basic \
         replies' T3 = the clock read just before the reply's MAC and send, plus the send-path \
         delay the server measures on its own sampled replies); \"authtime (clock reading)\": \
         the same with transmit-timestamp = \"clock\" (the clock reading as it is), on \
         10.200.7.4:123, measured in basic mode only (its interleaved replies are the same). \
         chronyd: `chronyd -x -u root -d` \
         (never touches the clock) with `local stratum 1`, `allow`, `clientloglimit 100000000`, \
         no command port, on 10.200.7.3:123. Pinning: {}; generator (sender and receivers) {}. \
         The generator is open loop: requests leave on schedule, evenly spaced or with \
         exponential gaps (Poisson arrivals, seeded: both servers of a step get the same \
         schedule), from rate ÷ 10 logical clients (at most 16,384; each about 10 requests/s) \
         over {} UDP sockets. Basic requests carry a unique cookie as transmit timestamp; \
         interleaved requests (RFC 9769, as chrony's client) carry the server's T2 of the \
         client's previous reply as origin and two unique cookies as receive and transmit. \
         Both ends read one clock, so the kernel receive timestamp of a reply at the generator \
         minus its T3 is exactly how early that T3 was, plus the veth crossing (the stamp is \
         taken when the server's send hands the datagram to the peer device: about 0.1-0.3 \
         µs). For an interleaved reply the offset is the previous reply's receive timestamp \
         minus this T3 (which is that previous reply's transmit time). Rates {} req/s, {:.1} s \
         of sending per measurement, {} round(s), servers alternated within each step (the \
         order reversed each round), {} ms for late replies and {} ms of pause after each. The \
         machine is shared (other builds may run), so tails (p99, max, stddev) are inflated \
         and only means and the order of the servers are meaningful{}.{} This section took \
         {:.1} s.",
        outcome.namespaces.join(", "),
        if pinning.is_empty() {
            "no server started".into()
        } else {
            pinning.join(", ")
        },
        if generator_pinned {
            "pinned to CPU 1"
        } else {
            "not pinned (sched_setaffinity refused)"
        },
        plan.sockets,
        plan.rates
            .iter()
            .map(|&r| fmt_rate(r))
            .collect::<Vec<_>>()
            .join(", "),
        plan.step.as_secs_f64(),
        plan.rounds,
        plan.drain.as_millis(),
        plan.pause.as_millis(),
        if quick {
            " (`--quick`: short steps, one round)"
        } else {
            ""
        },
        if plan.overload_rates.is_empty() {
            String::new()
        } else {
            format!(
                " Overload part: basic requests, evenly spaced, at {} req/s, {:.1} s each, to \
                 each server in turn while a thread of the lab spins on CPU 0 beside it (a busy \
                 host: the server gets about half of its CPU, so its knee falls within the \
                 generator's reach); it shows what the server answers past its knee and how old \
                 its replies are. It measures authtime and chronyd as above, and \"authtime \
                 (max-request-age 5 ms)\" on 10.200.7.5:123: authtime with a tighter staleness \
                 bound than its default 0.1 s.",
                plan.overload_rates
                    .iter()
                    .map(|&r| fmt_rate(r))
                    .collect::<Vec<_>>()
                    .join(", "),
                plan.step.as_secs_f64()
            )
        },
        outcome.elapsed_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_microseconds_read_well() {
        assert_eq!(us(0.1634), "0.16");
        assert_eq!(us(12.34), "12.3");
        assert_eq!(us(187.4), "187");
        assert_eq!(range(&[1.6, 1.9, 1.7]), "1.60-1.90");
        assert_eq!(range(&[2.0]), "2.00");
        assert_eq!(range(&[]), "–");
    }

    /// A measurement whose headline offsets have `mean` and `stddev`.
    fn measured(
        server: &'static str,
        interleaved: bool,
        round: usize,
        mean: f64,
        stddev: f64,
        interleaved_replies: u64,
    ) -> Measurement {
        use crate::load_ntp::{Latency, LoadReport};
        use crate::load_ntp_accuracy::T3Accuracy;
        let offsets = OffsetStats {
            count: 1000,
            mean_us: mean,
            median_us: mean,
            p99_us: 3.0 * mean,
            stddev_us: stddev,
            iqr_us: stddev,
            min_us: mean / 2.0,
            max_us: 10.0 * mean,
        };
        let interleaved_stats = OffsetStats {
            count: interleaved_replies,
            ..offsets
        };
        Measurement {
            server,
            interleaved,
            arrivals: Arrivals::Even,
            rate: 10_000.0,
            round,
            report: Some(LoadReport {
                target: "10.200.7.1:123".into(),
                rate: 10_000.0,
                duration_s: 2.0,
                sent: 20_000,
                send_errors: 0,
                received: 20_000,
                kisses: 0,
                crypto_naks: 0,
                unmatched: 0,
                loss: 0.0,
                sent_rate: 10_000.0,
                received_rate: 10_000.0,
                latency: Latency::default(),
                late_sends: 0,
                max_lag_ms: 0.5,
                fell_behind: round == 1,
                arrivals: Arrivals::Even,
                interleaved,
                clients: 1000,
                mean_send_burst: 1.0,
                not_sent: 0,
                accuracy: Some(T3Accuracy {
                    stamped: 1000,
                    unstamped: 0,
                    basic: offsets,
                    interleaved: interleaved_stats,
                    interleaved_unmeasured: 0,
                    interleaved_share: if interleaved_replies > 0 { 0.8 } else { 0.0 },
                    interleaved_share_after_warmup: if interleaved_replies > 0 { 1.0 } else { 0.0 },
                    response_basic: ResponseStats::default(),
                    response_interleaved: ResponseStats::default(),
                }),
            }),
            error: None,
            generator_pinned: true,
        }
    }

    #[test]
    fn rounds_become_ranges_and_servers_are_compared() {
        let mut plan = crate::section_accuracy::Plan::full();
        plan.rates = vec![10_000.0];
        plan.arrivals = vec![Arrivals::Even];
        let outcome = Outcome {
            plan,
            overload: vec![],
            measurements: vec![
                measured("authtime", false, 0, 4.0, 8.0, 0),
                measured("chronyd", false, 0, 2.0, 1.0, 0),
                measured("chronyd", false, 1, 1.6, 1.0, 0),
                measured("authtime", false, 1, 3.0, 6.0, 0),
                measured("authtime", true, 0, 3.5, 7.0, 0),
                measured("chronyd", true, 0, 0.2, 0.1, 900),
            ],
            servers: vec![("authtime", true), ("chronyd", true)],
            namespaces: vec!["a".into(), "b".into()],
            namespaces_removed: true,
            chronyd_serverstats: Some("Interleaved NTP packets    : 900".into()),
            notes: vec![],
            elapsed_s: 1.0,
        };
        let s = section(&outcome, false);
        let summary = &s.tables[0];
        assert_eq!(summary.rows.len(), 1);
        assert_eq!(summary.columns[1], "authtime, basic, even");
        // Two rounds: a range of means and of deviations; round 2 fell behind.
        assert_eq!(summary.rows[0][1], "3.00-4.00 (6.00-8.00) †");
        assert_eq!(summary.rows[0][2], "1.60-2.00 (1.00) †");
        assert_eq!(summary.rows[0][3], "3.50 (7.00), basic only");
        assert_eq!(summary.rows[0][4], "0.20 (0.10), 100.0% interleaved");
        assert_eq!(s.tables[1].rows.len(), 6);
        let findings = s.findings.join("\n");
        // Medians over rounds: authtime 4.0 (of 3 and 4), chronyd 2.0 (of 1.6 and 2).
        assert!(
            findings.contains(
                "basic mode, even arrivals, the 1 step(s) below chronyd's knee (none up to 10k \
                 req/s): authtime's mean T3 offset 4.00 µs (chronyd 2.00 µs), standard deviation \
                 8.00 µs (chronyd 1.00 µs), interquartile range 8.00 µs (chronyd 1.00 µs); \
                 |mean| no larger than chronyd's at 0 of 1 steps, standard deviation no larger \
                 at 0 of 1, interquartile range no larger at 0 of 1 (medians over rounds)."
            ),
            "{findings}"
        );
        assert!(
            findings.contains(
                "Knee of chronyd (the lowest step losing more than 1% in basic mode): even none \
                 up to 10k req/s."
            ),
            "{findings}"
        );
        assert!(
            findings.contains("authtime answered no request interleaved"),
            "{findings}"
        );
        assert!(
            findings.contains("chronyd answered 100.0% of them interleaved"),
            "{findings}"
        );
        assert!(findings.contains("Interleaved NTP packets"), "{findings}");
        assert_eq!(s.plots.len(), 2);
        assert_eq!(s.plots[0].series.len(), 4);
    }

    #[test]
    fn a_skipped_section_says_why_and_has_no_tables() {
        let outcome = Outcome {
            plan: crate::section_accuracy::Plan::smoke(),
            measurements: vec![],
            overload: vec![],
            servers: vec![],
            namespaces: vec![],
            namespaces_removed: true,
            chronyd_serverstats: None,
            notes: vec!["Skipped: this section needs root.".into()],
            elapsed_s: 0.0,
        };
        let s = section(&outcome, true);
        assert!(s.tables.is_empty() && s.plots.is_empty());
        assert_eq!(s.findings, ["Skipped: this section needs root."]);
        assert_eq!(s.id, "accuracy");
    }
}
