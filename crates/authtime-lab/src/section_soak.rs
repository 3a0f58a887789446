//! Section `soak` (issue 29): the real `authtime serve` with NTP (plain and
//! symmetric-key MACs), NTS-KE and NTS, and Roughtime on loopback, its NTS
//! master keys in a real Redis started here with a short rotation interval,
//! under steady load of every protocol, through a schedule of faults
//! (SIGHUP, certificate replacement, malformed packets of every kind, an
//! NTS-KE reconnect flood, more clients than the rate limiter's table holds,
//! Redis stopped and started again). It samples the daemon's RSS, open file
//! descriptors, threads and every `authtime_*` counter, and ends with a
//! verdict ([`verdict`]) that a leak, a panic, an error counter that no
//! injected fault explains or a lost valid cookie turns into FAIL.
//!
//! Every process started here is killed when its guard is dropped; every
//! loop is bounded in count and time; all traffic stays on 127.0.0.0/8.

#![allow(unsafe_code, reason = "kill(2) to send SIGHUP to the daemon")]

use crate::{
    Progress,
    load_ntp::{self, LoadOptions},
    load_nts::{Generator, KeyExchangeOffer, Mode, NtsLoadOptions},
    load_roughtime::{self, RoughtimeLoadOptions, Version},
    plot::{Plot, Series},
    report::{Section, Table},
    section_nts_server::{Scratch, authtime_exe, free_tcp_port},
};
use std::{
    collections::BTreeMap,
    fs,
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::{SocketAddr, TcpStream, UdpSocket},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

/// What a soak run does.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// Whole run.
    pub duration: Duration,
    /// Seconds between samples.
    pub sample_every: Duration,
    /// The part of the run before the flatness baseline is taken.
    pub warmup: Duration,
    /// Length of one cycle of the fault schedule (repeated until 85 % of the run).
    pub cycle: Duration,
    /// NTS master-key rotation interval, seconds (30 old keys are kept:
    /// cookies live 30 intervals, longer than the oldest cookie the NTS load
    /// generator's FIFO pool of up to 4096 hands out at these rates).
    pub rotation_s: u64,
    /// Requests per second of each steady load.
    pub rate: f64,
    /// Seconds after a fault ends during which its effects still count as its own.
    pub grace: Duration,
}

impl SoakOptions {
    /// `--quick`: about two and a half minutes; otherwise `duration` (one hour by default).
    #[must_use]
    pub fn new(quick: bool, duration: Option<Duration>) -> Self {
        if quick {
            let duration = duration.unwrap_or(Duration::from_secs(150));
            Self {
                duration,
                sample_every: Duration::from_secs(2),
                warmup: duration / 5,
                cycle: duration.mul_f64(0.6),
                rotation_s: 10,
                rate: 20.0,
                grace: Duration::from_secs(6),
            }
        } else {
            let duration = duration.unwrap_or(Duration::from_secs(3600));
            Self {
                duration,
                sample_every: Duration::from_secs(5),
                warmup: Duration::from_secs(120).min(duration / 5),
                cycle: Duration::from_secs(300).min(duration.mul_f64(0.6)),
                rotation_s: 30,
                rate: 50.0,
                grace: Duration::from_secs(10),
            }
        }
    }
}

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
    /// Redis stopped, then started again (empty: no persistence) on the same port.
    RedisRestart,
}

impl FaultKind {
    /// The schedule of one cycle, with each fault's offset as a fraction of the cycle.
    pub const CYCLE: [(f64, Self); 6] = [
        (0.0, Self::Sighup),
        (0.15, Self::CertReplace),
        (0.3, Self::Malformed),
        (0.45, Self::KeFlood),
        (0.6, Self::ManyClients),
        (0.75, Self::RedisRestart),
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

/// A child process killed and reaped when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

fn start_redis(port: u16, log: &Path) -> Result<Guard, String> {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdin(Stdio::null())
        .stdout(fs::File::create(log).map_err(|e| e.to_string())?)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start redis-server: {e}"))?;
    let guard = Guard(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(guard);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("redis-server did not listen on {port} within 10 s"))
}

fn authtime(args: &[&str]) -> Result<String, String> {
    let out = Command::new(authtime_exe()?)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run authtime: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "authtime {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The daemon and where it listens.
struct Daemon {
    guard: Guard,
    log: PathBuf,
    ntp: SocketAddr,
    ke: SocketAddr,
    roughtime: SocketAddr,
    metrics: SocketAddr,
}

fn start_daemon(config: &Path, log: &Path) -> Result<Daemon, String> {
    let mut child = Command::new(authtime_exe()?)
        .arg("serve")
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(fs::File::create(log).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot start authtime serve: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let guard = Guard(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(15);
    let (mut ntp, mut ke, mut roughtime, mut metrics) = (None, None, None, None);
    while metrics.is_none() || ntp.is_none() || ke.is_none() || roughtime.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            return Err(format!(
                "authtime serve did not start: {}",
                fs::read_to_string(log).unwrap_or_default()
            ));
        };
        if let Some(rest) = line.strip_prefix("listening on udp ") {
            ntp = ntp.or(rest.split_whitespace().next().and_then(|t| t.parse().ok()));
        }
        if let Some(rest) = line.strip_prefix("NTS-KE on tcp ") {
            ke = ke.or(rest.trim().parse().ok());
        }
        if let Some(rest) = line.strip_prefix("Roughtime on udp and tcp ") {
            roughtime = roughtime.or(rest.trim().parse().ok());
        }
        if let Some(rest) = line.strip_prefix("metrics on http://") {
            metrics = rest.trim_end_matches("/metrics").parse().ok();
        }
    }
    Ok(Daemon {
        guard,
        log: log.to_owned(),
        ntp: ntp.ok_or("no NTP address")?,
        ke: ke.ok_or("no NTS-KE address")?,
        roughtime: roughtime.ok_or("no Roughtime address")?,
        metrics: metrics.ok_or("no metrics address")?,
    })
}

fn scrape(addr: SocketAddr) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return out;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").is_err() {
        return out;
    }
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    for line in text.lines() {
        if !line.starts_with("authtime_") {
            continue;
        }
        if let Some((series, value)) = line.rsplit_once(' ')
            && let Ok(v) = value.trim().parse::<f64>()
        {
            out.insert(series.to_owned(), v);
        }
    }
    out
}

fn proc_sample(pid: u32) -> Option<(u64, u64, u64)> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    let threads = fs::read_dir(format!("/proc/{pid}/task")).ok()?.count() as u64;
    Some((rss, fds, threads))
}

/// A small xorshift generator for malformed packets (no cryptographic use).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn malformed(d: &Daemon, rng: &mut Rng) -> String {
    let Ok(udp) = UdpSocket::bind("127.0.0.1:0") else {
        return "no socket".into();
    };
    let mut sent = 0;
    for i in 0..200usize {
        let len = (rng.next() % 200) as usize;
        let mut p = rng.bytes(len.max(1));
        // Every few: an NTP header that looks right, with junk after it.
        if i % 4 == 0 && p.len() >= 48 {
            p[0] = 0x23;
        }
        // NTS: a client request with an NTS extension field of random contents.
        if i % 4 == 1 {
            let mut q = vec![0u8; 48];
            q[0] = 0x23;
            q.extend_from_slice(&[0x01, 0x04, 0x00, 0x24]);
            q.extend_from_slice(&rng.bytes(32));
            q.extend_from_slice(&[0x02, 0x04, 0x00, 0x68]);
            q.extend_from_slice(&rng.bytes(100));
            p = q;
        }
        // A MAC under a key id the server does not have, and one with a short MAC.
        if i % 4 == 2 {
            let mut q = vec![0u8; 48];
            q[0] = 0x23;
            q.extend_from_slice(&(9999u32 + i as u32).to_be_bytes());
            q.extend_from_slice(&rng.bytes(if i % 8 == 2 { 16 } else { 7 }));
            p = q;
        }
        if udp.send_to(&p, d.ntp).is_ok() {
            sent += 1;
        }
        let n = if i % 2 == 0 { 1024 } else { rng.below(1100) };
        let mut r = rng.bytes(n);
        if i % 3 == 0 && r.len() >= 12 {
            r[..8].copy_from_slice(b"ROUGHTIM");
        }
        if udp.send_to(&r, d.roughtime).is_ok() {
            sent += 1;
        }
        if i % 10 == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let mut tcp = 0;
    for _ in 0..40 {
        if let Ok(mut s) = TcpStream::connect_timeout(&d.ke, Duration::from_millis(500)) {
            let junk = {
                let n = 1 + rng.below(600);
                rng.bytes(n)
            };
            if s.write_all(&junk).is_ok() {
                tcp += 1;
            }
        }
        if let Ok(mut s) = TcpStream::connect_timeout(&d.roughtime, Duration::from_millis(500)) {
            let junk = {
                let n = 1 + rng.below(600);
                rng.bytes(n)
            };
            let _ = s.write_all(&junk);
        }
    }
    format!(
        "{sent} malformed datagrams (NTP, NTS, MAC, Roughtime), {tcp} junk NTS-KE streams and as many Roughtime TCP ones"
    )
}

fn ke_flood(d: &Daemon) -> String {
    let mut held = Vec::new();
    let mut opened = 0;
    for _ in 0..3 {
        for _ in 0..150 {
            if let Ok(s) = TcpStream::connect_timeout(&d.ke, Duration::from_millis(300)) {
                opened += 1;
                held.push(s);
            }
        }
        std::thread::sleep(Duration::from_millis(500));
        held.clear();
    }
    format!("{opened} NTS-KE connections opened and dropped without a handshake, 150 at a time")
}

fn many_clients(d: &Daemon) -> String {
    let mut request = [0u8; 48];
    request[0] = 0x23;
    let mut answered = 0;
    let mut sockets = Vec::new();
    for last in 2..=250u8 {
        if let Ok(s) = UdpSocket::bind((std::net::Ipv4Addr::new(127, 0, 0, last), 0)) {
            let _ = s.set_read_timeout(Some(Duration::from_millis(2)));
            sockets.push(s);
        }
    }
    for round in 0..3u64 {
        for s in &sockets {
            request[40..48].copy_from_slice(&(round + 1).to_be_bytes());
            let _ = s.send_to(&request, d.ntp);
        }
        let mut buf = [0u8; 128];
        for s in &sockets {
            if s.recv(&mut buf).is_ok() {
                answered += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // NTS-KE from many addresses too (the client-limit table).
    let mut ke = 0;
    for last in 2..=250u8 {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None);
        if let Ok(socket) = socket
            && socket
                .bind(&SocketAddr::from(([127, 0, 0, last], 0)).into())
                .is_ok()
            && socket
                .connect_timeout(&d.ke.into(), Duration::from_millis(300))
                .is_ok()
        {
            ke += 1;
        }
    }
    format!(
        "{} sources in 127.0.0.2-250, 3 NTP requests each ({answered} answered); {ke} NTS-KE connections from as many sources",
        sockets.len()
    )
}

fn sighup(pid: u32) -> bool {
    // SAFETY: kill(2) with a pid of a child this process started and has not reaped.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGHUP) == 0 }
}

fn replace_file(from: &Path, to: &Path) -> Result<(), String> {
    let tmp = to.with_extension("new");
    fs::copy(from, &tmp).map_err(|e| format!("copy {}: {e}", from.display()))?;
    fs::rename(&tmp, to).map_err(|e| format!("rename {}: {e}", to.display()))
}

/// Runs the soak and returns its section (the verdict in its findings and data).
///
/// # Errors
/// When the daemon, Redis or the files cannot be set up.
#[allow(clippy::too_many_lines, reason = "one straight schedule")]
pub fn run(opts: &SoakOptions, progress: &mut Progress<'_>) -> Result<Section, String> {
    let dir = Scratch::new()?;
    let d = dir.path("");
    let dstr = d.display().to_string();
    progress.step("soak: keys, certificates, Redis", 0, 3);
    for prefix in ["a", "b"] {
        authtime(&[
            "nts",
            "cert",
            "--name",
            "localhost",
            "--ip",
            "127.0.0.1",
            "--prefix",
            prefix,
            "--out-dir",
            &dstr,
        ])?;
    }
    let both_ca = dir.path("ca-both.pem");
    let ca_text = [
        fs::read_to_string(dir.path("a-ca.pem")).map_err(|e| e.to_string())?,
        fs::read_to_string(dir.path("b-ca.pem")).map_err(|e| e.to_string())?,
    ]
    .concat();
    fs::write(&both_ca, ca_text).map_err(|e| e.to_string())?;
    replace_file(&dir.path("a-chain.pem"), &dir.path("chain.pem"))?;
    replace_file(&dir.path("a-key.pem"), &dir.path("key.pem"))?;
    let keygen = authtime(&[
        "roughtime",
        "keygen",
        "--out",
        &dir.path("lt.key").display().to_string(),
    ])?;
    let public = keygen
        .lines()
        .find_map(|l| l.strip_prefix("public key (hex): "))
        .ok_or("no Roughtime public key")?;
    let public_key = load_roughtime::parse_public_key(public)?;
    let mac_key = [0x5au8; 16];
    let hex: String = mac_key.iter().map(|b| format!("{b:02x}")).collect();
    fs::write(dir.path("ntp.keys"), format!("1 AES128 HEX:{hex}\n")).map_err(|e| e.to_string())?;
    let key_path = dir.path("ntp.keys");
    authtime_keys::KeySet::load(&key_path, None).map_err(|e| format!("ntp.keys: {e}"))?;

    let redis_port = free_tcp_port()?;
    let mut redis = Some(start_redis(redis_port, &dir.path("redis.log"))?);
    let config = dir.path("serve.toml");
    fs::write(
        &config,
        format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\nkeys = \"{d}ntp.keys\"\n\
             [rate-limit]\nenabled = true\nrate = 10000\nburst = 10000\ntable-size = 64\n\
             {}\
             [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"{d}chain.pem\"\n\
             private-key = \"{d}key.pem\"\nworkers = 1\nmax-connections = 128\n\
             client-rate = 50\nclient-burst = 200\nclient-table-size = 64\n\
             [keystore]\nkind = \"redis\"\nurl = \"redis://127.0.0.1:{redis_port}?key=soak\"\n\
             rotation-interval = {}\nold-keys = 30\npoll-interval = 0.5\n\
             [roughtime]\nlisten = [\"127.0.0.1:0\"]\nlong-term-key = \"{d}lt.key\"\n\
             online-key-lifetime = 60\nrate-limit = 0\n\
             [metrics]\nlisten = \"127.0.0.1:0\"\n",
            crate::section_ntp::LAB_CLOCK,
            opts.rotation_s,
            d = d.display().to_string().trim_end_matches('/').to_owned() + "/",
        ),
    )
    .map_err(|e| e.to_string())?;
    progress.step("soak: starting authtime serve", 1, 3);
    let mut daemon = start_daemon(&config, &dir.path("serve.log"))?;
    let pid = daemon.guard.0.id();

    let started = Instant::now();
    let t = move || started.elapsed().as_secs_f64();
    let stop = Arc::new(AtomicBool::new(false));
    let chunks: Arc<Mutex<Vec<LoadChunk>>> = Arc::new(Mutex::new(Vec::new()));
    let chunk_len = Duration::from_secs(5);
    let end = opts.duration;
    let mut loaders = Vec::new();
    // Plain NTP and NTP with MACs.
    for (name, with_key) in [("ntp", false), ("ntp-mac", true)] {
        let (stop, chunks, target, rate, key_path) = (
            stop.clone(),
            chunks.clone(),
            daemon.ntp,
            opts.rate,
            key_path.clone(),
        );
        loaders.push(std::thread::spawn(move || {
            let keys = authtime_keys::KeySet::load(&key_path, None)
                .ok()
                .map(|k| k.0);
            let key = keys.as_ref().and_then(|k| k.get(1));
            while !stop.load(Ordering::Relaxed) && started.elapsed() + chunk_len <= end {
                let t0 = t();
                let mut o = LoadOptions::new(target, rate, chunk_len);
                o.drain = Duration::from_millis(500);
                let r = load_ntp::run(&o, if with_key { key } else { None });
                let c = match r {
                    Ok(r) => LoadChunk {
                        load: name,
                        start_s: t0,
                        end_s: t(),
                        sent: r.sent,
                        answered: r.received.saturating_sub(r.kisses + r.crypto_naks),
                        cookie_failures: 0,
                        error: None,
                        ke: None,
                    },
                    Err(e) => LoadChunk {
                        load: name,
                        start_s: t0,
                        end_s: t(),
                        sent: 0,
                        answered: 0,
                        cookie_failures: 0,
                        error: Some(e),
                        ke: None,
                    },
                };
                chunks.lock().expect("chunks").push(c);
            }
        }));
    }
    // NTS: cookies from NTS-KE, one key exchange every 20 exchanges.
    {
        let (stop, chunks, ke, rate, ca) = (
            stop.clone(),
            chunks.clone(),
            daemon.ke,
            opts.rate,
            both_ca.clone(),
        );
        loaders.push(std::thread::spawn(move || {
            let nts_opts = NtsLoadOptions {
                ke_host: "localhost".into(),
                ke_port: ke.port(),
                ca: Some(ca),
                ntp_target: None,
                mode: Mode::Nts { ntp_per_ke: 20 },
                rate,
                duration: chunk_len,
                timeout: Duration::from_secs(1),
                connections_max: 16,
                sockets: 1,
                threads: 1,
                tls_resumption: false,
                key_exchange: KeyExchangeOffer::X25519Mlkem768,
            };
            let mut generator = None;
            while !stop.load(Ordering::Relaxed) && started.elapsed() + chunk_len <= end {
                let t0 = t();
                if generator.is_none() {
                    match Generator::new(nts_opts.clone()) {
                        Ok(g) => generator = Some(g),
                        Err(e) => {
                            chunks.lock().expect("chunks").push(LoadChunk {
                                load: "nts",
                                start_s: t0,
                                end_s: t(),
                                sent: 0,
                                answered: 0,
                                cookie_failures: 0,
                                error: Some(e),
                                ke: None,
                            });
                            std::thread::sleep(Duration::from_secs(1));
                            continue;
                        }
                    }
                }
                let Some(g) = generator.as_mut() else { break };
                let c = match g.step(rate, chunk_len, false) {
                    Ok(r) => LoadChunk {
                        load: "nts",
                        start_s: t0,
                        end_s: t(),
                        sent: r.scheduled,
                        answered: r.ntp_ok,
                        cookie_failures: r.ntp_errors.nak + r.ntp_errors.bad_auth,
                        error: None,
                        ke: Some((r.ke_ok, r.ke_errors.breakdown())),
                    },
                    Err(e) => {
                        generator = None;
                        LoadChunk {
                            load: "nts",
                            start_s: t0,
                            end_s: t(),
                            sent: 0,
                            answered: 0,
                            cookie_failures: 0,
                            error: Some(e),
                            ke: None,
                        }
                    }
                };
                chunks.lock().expect("chunks").push(c);
            }
        }));
    }
    // Roughtime: a bounded number of requests per chunk, one outstanding.
    {
        let (stop, chunks, target, rate) =
            (stop.clone(), chunks.clone(), daemon.roughtime, opts.rate);
        loaders.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) && started.elapsed() + chunk_len <= end {
                let t0 = t();
                let o = RoughtimeLoadOptions {
                    target,
                    public_key,
                    versions: vec![Version::Draft12, Version::Rfc1],
                    window: 1,
                    duration: chunk_len,
                    max_requests: (rate * chunk_len.as_secs_f64()) as u64,
                    verify_every: 10,
                    pool: 64,
                };
                let c = match load_roughtime::run(&o) {
                    Ok(r) => LoadChunk {
                        load: "roughtime",
                        start_s: t0,
                        end_s: t(),
                        sent: r.sent,
                        answered: r.received,
                        cookie_failures: r.verify_failed,
                        error: None,
                        ke: None,
                    },
                    Err(e) => LoadChunk {
                        load: "roughtime",
                        start_s: t0,
                        end_s: t(),
                        sent: 0,
                        answered: 0,
                        cookie_failures: 0,
                        error: Some(e),
                        ke: None,
                    },
                };
                chunks.lock().expect("chunks").push(c);
                let left = (t0 + chunk_len.as_secs_f64() - t()).max(0.0);
                std::thread::sleep(Duration::from_secs_f64(left));
            }
        }));
    }

    // The schedule.
    let mut schedule = Vec::new();
    let quiet_from = end.as_secs_f64() * 0.85;
    for k in 0..1000u32 {
        let base = opts.warmup.as_secs_f64() + f64::from(k) * opts.cycle.as_secs_f64();
        if base >= quiet_from {
            break;
        }
        for (offset, kind) in FaultKind::CYCLE {
            let at = base + offset * opts.cycle.as_secs_f64();
            if at < quiet_from {
                schedule.push((at, kind));
            }
        }
    }
    progress.step(
        &format!(
            "soak: {} s of load, {} faults, samples every {} s",
            end.as_secs(),
            schedule.len(),
            opts.sample_every.as_secs()
        ),
        2,
        3,
    );
    let mut faults = Vec::new();
    let mut samples = Vec::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(pid));
    let mut next_sample = 0.0;
    let mut next_fault = 0;
    let mut alive = true;
    while started.elapsed() < end {
        if matches!(daemon.guard.0.try_wait(), Ok(Some(_))) {
            alive = false;
            break;
        }
        let now = t();
        if now >= next_sample {
            if let Some((rss_kib, fds, threads)) = proc_sample(pid) {
                samples.push(Sample {
                    t_s: now,
                    rss_kib,
                    fds,
                    threads,
                    counters: scrape(daemon.metrics),
                });
            }
            next_sample = now + opts.sample_every.as_secs_f64();
        }
        if let Some(&(at, kind)) = schedule.get(next_fault)
            && now >= at
        {
            next_fault += 1;
            let start_s = t();
            let detail = match kind {
                FaultKind::Sighup => format!("SIGHUP sent: {}", sighup(pid)),
                FaultKind::CertReplace => {
                    // Alternate between the two CAs' leaves.
                    let from = if faults
                        .iter()
                        .filter(|f: &&Fault| f.kind == FaultKind::CertReplace)
                        .count()
                        % 2
                        == 0
                    {
                        "b"
                    } else {
                        "a"
                    };
                    let r = replace_file(
                        &dir.path(&format!("{from}-chain.pem")),
                        &dir.path("chain.pem"),
                    )
                    .and_then(|()| {
                        replace_file(&dir.path(&format!("{from}-key.pem")), &dir.path("key.pem"))
                    });
                    format!(
                        "chain and key replaced by CA {from}'s ({}), SIGHUP sent: {}",
                        if r.is_ok() { "ok" } else { "failed" },
                        sighup(pid)
                    )
                }
                FaultKind::Malformed => malformed(&daemon, &mut rng),
                FaultKind::KeFlood => ke_flood(&daemon),
                FaultKind::ManyClients => many_clients(&daemon),
                FaultKind::RedisRestart => {
                    drop(redis.take());
                    std::thread::sleep(Duration::from_secs(5));
                    match start_redis(redis_port, &dir.path("redis2.log")) {
                        Ok(g) => {
                            redis = Some(g);
                            "Redis killed, 5 s down, started again empty on the same port".into()
                        }
                        Err(e) => format!("Redis killed; restart failed: {e}"),
                    }
                }
            };
            faults.push(Fault {
                kind,
                start_s,
                end_s: t(),
                detail,
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for l in loaders {
        let _ = l.join();
    }
    if alive && let Some((rss_kib, fds, threads)) = proc_sample(pid) {
        samples.push(Sample {
            t_s: t(),
            rss_kib,
            fds,
            threads,
            counters: scrape(daemon.metrics),
        });
    }
    alive = alive && matches!(daemon.guard.0.try_wait(), Ok(None));
    let log = fs::read_to_string(&daemon.log).unwrap_or_default();
    let panicked = log.contains("panicked");
    let loads = chunks.lock().expect("chunks").clone();
    let rules = Rules::DEFAULT;
    let v = verdict(
        &rules,
        opts.warmup.as_secs_f64(),
        opts.grace.as_secs_f64(),
        &samples,
        &faults,
        &loads,
        panicked,
        alive,
    );
    drop(daemon);
    drop(redis);
    let mut section = section(opts, &rules, &samples, &faults, &loads, &v);
    // The daemon's log goes with the report: the scratch directory does not stay.
    let lines: Vec<&str> = log.lines().collect();
    section.data["daemon_log_tail"] =
        serde_json::json!(lines[lines.len().saturating_sub(300)..].join("\n"));
    Ok(section)
}

fn section(
    opts: &SoakOptions,
    rules: &Rules,
    samples: &[Sample],
    faults: &[Fault],
    loads: &[LoadChunk],
    v: &Verdict,
) -> Section {
    let mut flat = Table::new(
        "Daemon resources: after warm-up and at the end",
        &[
            "measure",
            "first sample",
            "after warm-up",
            "end",
            "allowed end",
        ],
    );
    let first = samples.first();
    let fmt = |x: Option<u64>| x.map_or("-".to_owned(), |x| x.to_string());
    if let (Some(b), Some(e)) = (v.baseline, v.end) {
        let allowed_rss = b.0 + ((b.0 as f64 * rules.rss_share) as u64).max(rules.rss_kib);
        flat.row(vec![
            "RSS (KiB)".into(),
            fmt(first.map(|s| s.rss_kib)),
            b.0.to_string(),
            e.0.to_string(),
            allowed_rss.to_string(),
        ]);
        flat.row(vec![
            "open fds".into(),
            fmt(first.map(|s| s.fds)),
            b.1.to_string(),
            e.1.to_string(),
            (b.1 + rules.fds).to_string(),
        ]);
        flat.row(vec![
            "threads".into(),
            fmt(first.map(|s| s.threads)),
            b.2.to_string(),
            e.2.to_string(),
            (b.2 + rules.threads).to_string(),
        ]);
    }
    let mut ft = Table::new("Faults injected", &["at (s)", "took (s)", "fault", "what"]);
    for f in faults {
        ft.row(vec![
            format!("{:.1}", f.start_s),
            format!("{:.1}", f.end_s - f.start_s),
            f.kind.name().into(),
            f.detail.clone(),
        ]);
    }
    let mut ct = Table::new(
        "Error counters that moved, and the faults that explain them",
        &["series", "increase", "explained by", "unexplained"],
    );
    for a in &v.counters {
        ct.row(vec![
            format!("`{}`", a.series),
            format!("{}", a.total),
            a.explained_by.join(", "),
            if a.unexplained > 0.0 {
                format!("**{}**", a.unexplained)
            } else {
                "0".into()
            },
        ]);
    }
    let mut lt = Table::new(
        "Load: answers, all chunks and outside the fault windows",
        &[
            "load",
            "sent",
            "answered",
            "answer rate (/s)",
            "sent outside faults",
            "answered outside faults",
            "lost or refused valid cookies outside faults",
        ],
    );
    let secs = opts.duration.as_secs_f64().max(1.0);
    for (load, sent_o, ans_o, cookies) in &v.loads_outside {
        let (sent, ans) = loads
            .iter()
            .filter(|c| c.load == load)
            .fold((0, 0), |(s, a), c| (s + c.sent, a + c.answered));
        lt.row(vec![
            load.clone(),
            sent.to_string(),
            ans.to_string(),
            format!("{:.1}", ans as f64 / secs),
            sent_o.to_string(),
            ans_o.to_string(),
            cookies.to_string(),
        ]);
    }
    let series = |name: &str, f: &dyn Fn(&Sample) -> f64| Series {
        name: name.into(),
        points: samples.iter().map(|s| (s.t_s, f(s))).collect(),
    };
    let plots = vec![
        Plot {
            stem: "soak-rss".into(),
            title: "authtime serve: RSS over the soak".into(),
            x_label: "seconds".into(),
            y_label: "RSS (MiB)".into(),
            log_x: false,
            log_y: false,
            series: vec![series("RSS", &|s| s.rss_kib as f64 / 1024.0)],
        },
        Plot {
            stem: "soak-fds-threads".into(),
            title: "authtime serve: open fds and threads over the soak".into(),
            x_label: "seconds".into(),
            y_label: "count".into(),
            log_x: false,
            log_y: false,
            series: vec![
                series("open fds", &|s| s.fds as f64),
                series("threads", &|s| s.threads as f64),
            ],
        },
    ];
    let mut findings = vec![format!(
        "Verdict: {}{}",
        if v.pass { "PASS" } else { "FAIL" },
        if v.reasons.is_empty() {
            String::new()
        } else {
            format!(" ({})", v.reasons.join("; "))
        }
    )];
    if let (Some(b), Some(e)) = (v.baseline, v.end) {
        findings.push(format!(
            "After warm-up ({:.0} s): RSS {} KiB, {} fds, {} threads; at the end: RSS {} KiB, {} fds, {} threads.",
            opts.warmup.as_secs_f64(),
            b.0,
            b.1,
            b.2,
            e.0,
            e.1,
            e.2
        ));
    }
    findings.push(format!("Rules: {}", rules.describe()));
    Section {
        id: "soak".into(),
        title: "Soak and faults: authtime serve under steady load and a schedule of faults".into(),
        seed: "Issue 29".into(),
        method: format!(
            "{} s run, warm-up {} s, samples every {} s, fault cycle {} s (SIGHUP, certificate \
             replacement, malformed packets, NTS-KE reconnect flood, clients beyond the tables, \
             Redis stopped and restarted), the last 15 % quiet; NTS master keys in Redis rotated \
             every {} s; steady loads of {} requests/s each: plain NTP, NTP with an AES-CMAC key, \
             NTS (one NTS-KE session per 20 exchanges) and Roughtime; fault windows last from 1 s \
             before a fault to {} s after it.",
            opts.duration.as_secs(),
            opts.warmup.as_secs(),
            opts.sample_every.as_secs(),
            opts.cycle.as_secs(),
            opts.rotation_s,
            opts.rate,
            opts.grace.as_secs()
        ),
        tables: vec![flat, ft, ct, lt],
        plots,
        findings,
        data: serde_json::json!({
            "pass": v.pass,
            "reasons": v.reasons,
            "rules": rules,
            "baseline": v.baseline,
            "end": v.end,
            "faults": faults,
            "counters": v.counters,
            "loads": loads,
            "samples": samples,
        }),
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
