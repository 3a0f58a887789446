//! The verdict of the `soak` section (`section_soak`): the faults it injects
//! and their windows, the samples it takes, and the rules that turn a run into
//! PASS or FAIL (flat resources after warm-up, every error counter explained by
//! a fault, no lost cookie, no panic).

use std::collections::BTreeMap;

/// The faults the harness injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// SIGHUP to the daemon (reload).
    Sighup,
    /// The NTS-KE certificate and key files replaced (by another CA's), then SIGHUP.
    CertReplace,
    /// Malformed NTP, NTS, MAC, Roughtime datagrams and NTS-KE byte streams.
    Malformed,
    /// Hundreds of NTS-KE TCP connections opened and dropped at once.
    KeFlood,
    /// Clients from 127.0.0.2 to 127.0.0.250: more than the rate limiter's table holds.
    ManyClients,
    /// Redis master and replica stopped, then started again (empty: no
    /// persistence) on their ports.
    RedisRestart,
    /// The Redis master killed; the sentinel promotes the replica; the old
    /// master comes back as the new one's replica.
    RedisFailover,
}

impl FaultKind {
    /// The schedule of one cycle, with each fault's offset as a fraction of the cycle.
    pub const CYCLE: [(f64, Self); 7] = [
        (0.0, Self::Sighup),
        (0.13, Self::CertReplace),
        (0.26, Self::Malformed),
        (0.39, Self::KeFlood),
        (0.52, Self::ManyClients),
        (0.65, Self::RedisFailover),
        (0.78, Self::RedisRestart),
    ];

    /// The report's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Sighup => "SIGHUP",
            Self::CertReplace => "certificate replacement",
            Self::Malformed => "malformed packets",
            Self::KeFlood => "NTS-KE reconnect flood",
            Self::ManyClients => "clients beyond the tables",
            Self::RedisRestart => "Redis stopped and restarted",
            Self::RedisFailover => "Redis failover",
        }
    }
}

/// One injected fault, seconds since the start of the run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Fault {
    /// What.
    pub kind: FaultKind,
    /// When it began.
    pub start_s: f64,
    /// When it ended.
    pub end_s: f64,
    /// What it did.
    pub detail: String,
}

/// One sample of the daemon.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Sample {
    /// Seconds since the start of the run.
    pub t_s: f64,
    /// Resident set, KiB.
    pub rss_kib: u64,
    /// Open file descriptors.
    pub fds: u64,
    /// Threads.
    pub threads: u64,
    /// Time the daemon's threads have spent waiting for a CPU on a run
    /// queue since they started (the sum of `/proc/PID/task/*/schedstat`'s
    /// second field), milliseconds: how much the host kept it waiting.
    pub run_wait_ms: f64,
    /// Every `authtime_*` sample (name with labels → value).
    #[serde(skip)]
    pub counters: BTreeMap<String, f64>,
}

/// One chunk of one load generator.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadChunk {
    /// `ntp`, `ntp-mac`, `nts` or `roughtime`.
    pub load: &'static str,
    /// Start and end, seconds since the start of the run.
    pub start_s: f64,
    /// End.
    pub end_s: f64,
    /// Requests sent.
    pub sent: u64,
    /// Valid answers.
    pub answered: u64,
    /// NTS: NAKs and replies that failed authentication (lost or refused
    /// valid cookies); other loads: 0.
    pub cookie_failures: u64,
    /// A generator that could not run this chunk at all.
    pub error: Option<String>,
    /// NTS: key exchanges completed, and their failures by cause.
    pub ke: Option<(u64, String)>,
}

impl LoadChunk {
    /// A chunk whose generator failed to run (nothing sent).
    #[must_use]
    pub fn failed(load: &'static str, start_s: f64, end_s: f64, error: String) -> Self {
        Self {
            load,
            start_s,
            end_s,
            sent: 0,
            answered: 0,
            cookie_failures: 0,
            error: Some(error),
            ke: None,
        }
    }
}

/// Whether a counter sample counts errors (its name or labels say so).
#[must_use]
pub fn is_error_series(series: &str) -> bool {
    const WORDS: [&str; 22] = [
        "error",
        "invalid",
        "malformed",
        "drop",
        "reject",
        "refus",
        "fail",
        "nak",
        "bad",
        "unknown",
        "denied",
        "kiss",
        "limited",
        "timeout",
        "torn",
        "down",
        "unauth",
        "too_many",
        "short",
        "panic",
        "at_cap",
        "evict",
    ];
    let lower = series.to_ascii_lowercase();
    // Histograms (of seconds, bytes: measures, not events) are not error counts.
    let name = lower.split('{').next().unwrap_or_default();
    if name.ends_with("_bucket")
        || name.ends_with("_sum")
        || name.ends_with("_count")
        || name.contains("_seconds")
        || name.contains("_bytes")
        // The client population's gauges count distinct clients of an hourly
        // window (docs/clients.md): the "previous" window's figures jump when
        // the hour turns. The events behind them are counted by the real
        // counters (rate_limited, refused_at_cap, ...).
        || name.starts_with("authtime_clients")
    {
        return false;
    }
    WORDS.iter().any(|w| lower.contains(w))
}

/// The rules of the verdict, with their thresholds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Rules {
    /// End RSS may exceed the warm-up RSS by this share...
    pub rss_share: f64,
    /// ...or by this many KiB, whichever is larger.
    pub rss_kib: u64,
    /// End fds may exceed the warm-up fds by this many.
    pub fds: u64,
    /// End threads may exceed the warm-up threads by this many.
    pub threads: u64,
    /// Share of requests each load must have answered outside fault windows.
    pub answered_share: f64,
}

impl Rules {
    /// The rules the report states.
    pub const DEFAULT: Self = Self {
        rss_share: 0.10,
        rss_kib: 8 * 1024,
        fds: 4,
        threads: 4,
        answered_share: 0.99,
    };

    /// The rules in words.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "PASS needs all of: the daemon alive at the end and no `panicked` in its log; \
             RSS at the end at most the warm-up RSS plus {:.0} % or {} MiB (whichever is larger); \
             fds at the end at most the warm-up fds + {}; threads at the end at most the warm-up \
             threads + {}; every increase of an error counter (a counter whose name or labels say \
             error, invalid, malformed, drop, reject, refused, fail, nak, bad, unknown, denied, \
             kiss, limited, timeout, torn, down, unauth, too_many, short, panic, at_cap or evict) \
             between two samples falls in the window of an injected fault (from 1 s before it to \
             the grace after it); no NTS NAK and no NTS reply that fails authentication (a lost or \
             refused valid cookie) in a load chunk outside the fault windows; and each load \
             answered at least {:.0} % of its requests outside the fault windows.",
            self.rss_share * 100.0,
            self.rss_kib / 1024,
            self.fds,
            self.threads,
            self.answered_share * 100.0
        )
    }
}

/// An error counter's increase and the faults that explain it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CounterAccount {
    /// The series.
    pub series: String,
    /// Increase over the whole run.
    pub total: f64,
    /// Faults whose windows held increases.
    pub explained_by: Vec<String>,
    /// Increase outside every fault window.
    pub unexplained: f64,
    /// When (the end of each sampling interval, seconds) it rose outside the windows.
    pub unexplained_at: Vec<f64>,
}

/// The verdict and its reasons.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verdict {
    /// PASS or FAIL.
    pub pass: bool,
    /// Why it failed (empty on PASS).
    pub reasons: Vec<String>,
    /// The warm-up sample (flatness baseline) and the last.
    pub baseline: Option<(u64, u64, u64)>,
    /// End values.
    pub end: Option<(u64, u64, u64)>,
    /// Every error counter that moved.
    pub counters: Vec<CounterAccount>,
    /// Per load: sent, answered, cookie failures outside fault windows.
    pub loads_outside: Vec<(String, u64, u64, u64)>,
}

fn in_window(faults: &[Fault], grace: f64, a: f64, b: f64) -> Vec<FaultKind> {
    let mut out = Vec::new();
    for f in faults {
        if a <= f.end_s + grace && b >= f.start_s - 1.0 && !out.contains(&f.kind) {
            out.push(f.kind);
        }
    }
    out
}

/// Judges a run: samples in time order, faults, load chunks, whether the
/// log held a panic and whether the daemon was alive at the end.
#[must_use]
#[allow(
    clippy::too_many_arguments,
    reason = "every input of the verdict, kept plain for its tests"
)]
pub fn verdict(
    rules: &Rules,
    warmup_s: f64,
    grace_s: f64,
    samples: &[Sample],
    faults: &[Fault],
    loads: &[LoadChunk],
    panicked: bool,
    alive: bool,
) -> Verdict {
    let mut reasons = Vec::new();
    if !alive {
        reasons.push("the daemon was not running at the end".to_owned());
    }
    if panicked {
        reasons.push("the daemon's log holds `panicked`".to_owned());
    }
    let baseline = samples.iter().find(|s| s.t_s >= warmup_s);
    let last = samples.last();
    match (baseline, last) {
        (Some(b), Some(e)) if e.t_s > b.t_s => {
            let allowed =
                b.rss_kib + ((b.rss_kib as f64 * rules.rss_share) as u64).max(rules.rss_kib);
            if e.rss_kib > allowed {
                reasons.push(format!(
                    "RSS grew from {} KiB after warm-up to {} KiB (allowed {allowed} KiB)",
                    b.rss_kib, e.rss_kib
                ));
            }
            if e.fds > b.fds + rules.fds {
                reasons.push(format!(
                    "open fds grew from {} after warm-up to {}",
                    b.fds, e.fds
                ));
            }
            if e.threads > b.threads + rules.threads {
                reasons.push(format!(
                    "threads grew from {} after warm-up to {}",
                    b.threads, e.threads
                ));
            }
        }
        _ => reasons.push("no sample after warm-up: flatness not measured".to_owned()),
    }
    // Error counters, interval by interval.
    let mut accounts: BTreeMap<String, CounterAccount> = BTreeMap::new();
    for pair in samples.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        for (series, &after) in &b.counters {
            if !is_error_series(series) {
                continue;
            }
            let before = a.counters.get(series).copied().unwrap_or(0.0);
            let rise = after - before;
            if rise <= 0.0 {
                continue;
            }
            let account = accounts
                .entry(series.clone())
                .or_insert_with(|| CounterAccount {
                    series: series.clone(),
                    total: 0.0,
                    explained_by: vec![],
                    unexplained: 0.0,
                    unexplained_at: vec![],
                });
            account.total += rise;
            let kinds = in_window(faults, grace_s, a.t_s, b.t_s);
            if kinds.is_empty() {
                account.unexplained += rise;
                account.unexplained_at.push(b.t_s);
            }
            for k in kinds {
                if !account.explained_by.iter().any(|n| n == k.name()) {
                    account.explained_by.push(k.name().to_owned());
                }
            }
        }
    }
    for a in accounts.values() {
        if a.unexplained > 0.0 {
            let at: Vec<String> = a.unexplained_at.iter().map(|t| format!("{t:.0}")).collect();
            reasons.push(format!(
                "{} rose by {} outside every fault window (intervals ending at {} s)",
                a.series,
                a.unexplained,
                at.join(", ")
            ));
        }
    }
    let mut per_load: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    let mut failed: BTreeMap<&str, (u64, f64, String)> = BTreeMap::new();
    for c in loads {
        let entry = per_load.entry(c.load).or_default();
        if !in_window(faults, grace_s, c.start_s, c.end_s).is_empty() {
            continue;
        }
        entry.0 += c.sent;
        entry.1 += c.answered;
        entry.2 += c.cookie_failures;
        if let Some(e) = &c.error {
            let slot = failed.entry(c.load).or_insert((0, c.start_s, e.clone()));
            slot.0 += 1;
        }
    }
    for (load, (n, at, e)) in failed {
        reasons.push(format!(
            "{load} could not run {n} times outside the fault windows (first at {at:.0} s: {e})"
        ));
    }
    for (load, &(sent, answered, cookies)) in &per_load {
        if cookies > 0 {
            reasons.push(format!(
                "{load}: {cookies} valid cookies lost or refused outside the fault windows"
            ));
        }
        if sent == 0 {
            reasons.push(format!("{load}: no request outside the fault windows"));
        } else if (answered as f64) < rules.answered_share * sent as f64 {
            reasons.push(format!(
                "{load}: {answered} of {sent} answered outside the fault windows"
            ));
        }
    }
    let triple = |s: &Sample| (s.rss_kib, s.fds, s.threads);
    Verdict {
        pass: reasons.is_empty(),
        reasons,
        baseline: baseline.map(triple),
        end: last.map(triple),
        counters: accounts.into_values().collect(),
        loads_outside: per_load
            .into_iter()
            .map(|(l, (s, a, c))| (l.to_owned(), s, a, c))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, rss: u64, fds: u64, threads: u64, err: f64) -> Sample {
        let mut counters = BTreeMap::new();
        counters.insert("authtime_ntp_requests_total".to_owned(), t * 10.0);
        counters.insert(
            "authtime_ntp_dropped_total{reason=\"malformed\"}".to_owned(),
            err,
        );
        Sample {
            t_s: t,
            rss_kib: rss,
            fds,
            threads,
            run_wait_ms: 0.0,
            counters,
        }
    }

    fn fault(at: f64) -> Fault {
        Fault {
            kind: FaultKind::Malformed,
            start_s: at,
            end_s: at + 1.0,
            detail: String::new(),
        }
    }

    fn chunk(t: f64, sent: u64, answered: u64, cookies: u64) -> LoadChunk {
        LoadChunk {
            load: "nts",
            start_s: t,
            end_s: t + 5.0,
            sent,
            answered,
            cookie_failures: cookies,
            error: None,
            ke: None,
        }
    }

    fn judge(samples: &[Sample], faults: &[Fault], loads: &[LoadChunk]) -> Verdict {
        verdict(
            &Rules::DEFAULT,
            20.0,
            5.0,
            samples,
            faults,
            loads,
            false,
            true,
        )
    }

    #[test]
    fn error_series_are_counters_of_errors_not_measures_or_client_gauges() {
        assert!(is_error_series(
            "authtime_ntp_dropped_total{reason=\"malformed\"}"
        ));
        assert!(is_error_series("authtime_nts_keystore_down"));
        assert!(!is_error_series("authtime_ntp_answered_total"));
        assert!(!is_error_series(
            "authtime_ntske_handshake_seconds_bucket{le=\"0.001\"}"
        ));
        // Found by the one-hour run: the hourly window's gauges turned over.
        assert!(!is_error_series(
            "authtime_clients_refused{window=\"previous\"}"
        ));
        assert!(!is_error_series(
            "authtime_clients_limited{window=\"current\"}"
        ));
    }

    #[test]
    fn a_flat_run_with_explained_errors_passes() {
        let s: Vec<Sample> = (0..20u32)
            .map(|i| {
                let t = f64::from(i) * 5.0;
                sample(
                    t,
                    50_000 + u64::from(i % 3),
                    20,
                    8,
                    if t >= 50.0 { 7.0 } else { 0.0 },
                )
            })
            .collect();
        let v = judge(&s, &[fault(47.0)], &[chunk(0.0, 100, 100, 0)]);
        assert!(v.pass, "{:?}", v.reasons);
        assert_eq!(v.counters.len(), 1);
        assert_eq!(v.counters[0].explained_by, vec!["malformed packets"]);
    }

    #[test]
    fn an_injected_leak_fails() {
        let s: Vec<Sample> = (0..20u32)
            .map(|i| {
                sample(
                    f64::from(i) * 5.0,
                    50_000 + u64::from(i) * 2_000,
                    20 + u64::from(i),
                    8,
                    0.0,
                )
            })
            .collect();
        let v = judge(&s, &[], &[chunk(0.0, 100, 100, 0)]);
        assert!(!v.pass);
        assert!(
            v.reasons.iter().any(|r| r.contains("RSS grew")),
            "{:?}",
            v.reasons
        );
        assert!(
            v.reasons.iter().any(|r| r.contains("fds grew")),
            "{:?}",
            v.reasons
        );
    }

    #[test]
    fn an_unexplained_error_counter_fails() {
        let s: Vec<Sample> = (0..20u32)
            .map(|i| {
                let t = f64::from(i) * 5.0;
                sample(t, 50_000, 20, 8, if t >= 80.0 { 3.0 } else { 0.0 })
            })
            .collect();
        let v = judge(&s, &[fault(30.0)], &[chunk(0.0, 100, 100, 0)]);
        assert!(!v.pass);
        assert!(
            v.reasons
                .iter()
                .any(|r| r.contains("outside every fault window")),
            "{:?}",
            v.reasons
        );
    }

    #[test]
    fn lost_cookies_outside_faults_a_panic_or_a_dead_daemon_fail() {
        let s: Vec<Sample> = (0..10u32)
            .map(|i| sample(f64::from(i) * 5.0, 50_000, 20, 8, 0.0))
            .collect();
        let v = judge(&s, &[], &[chunk(0.0, 100, 99, 1)]);
        assert!(!v.pass);
        assert!(
            v.reasons.iter().any(|r| r.contains("cookies")),
            "{:?}",
            v.reasons
        );
        // The same loss inside a fault window is the fault's.
        let v = judge(
            &s,
            &[fault(2.0)],
            &[chunk(0.0, 100, 50, 1), chunk(30.0, 10, 10, 0)],
        );
        assert!(v.pass, "{:?}", v.reasons);
        let v = verdict(
            &Rules::DEFAULT,
            20.0,
            5.0,
            &s,
            &[],
            &[chunk(0.0, 1, 1, 0)],
            true,
            false,
        );
        assert_eq!(v.reasons.len(), 2, "{:?}", v.reasons);
    }

    #[test]
    fn error_series_are_told_from_the_others() {
        assert!(is_error_series("authtime_nts_keystore_errors_total"));
        assert!(is_error_series(
            "authtime_ntp_requests_total{result=\"dropped\"}"
        ));
        assert!(!is_error_series(
            "authtime_ntp_requests_total{result=\"ok\"}"
        ));
        assert!(!is_error_series("authtime_nts_key_rotations_total"));
    }
}
