//! Who the clients are, in bounded memory: distinct source addresses per
//! protocol (HyperLogLog estimates, [`super::distinct`]), the distinct
//! sources that were rate limited or refused, how many requests each
//! source sent (a table of up to [`TABLE_SIZE`] sources per window; sources
//! beyond it are still in the estimates, and counted as untracked), and
//! from that table the distribution of per-client request rates and the
//! top talkers.
//!
//! Time is cut into windows of [`WINDOW_SECS`] aligned on the wall clock
//! (whole hours): figures are given for the window in progress and the one
//! before it. The caller passes the time (sans-IO); a clock stepped back
//! starts a new window. Addresses are hashed with a key drawn at start, so
//! nobody outside can choose addresses that collide in the table.
//!
//! Nothing here is a Prometheus label of an address: addresses only leave
//! through [`ClientPopulation::top_json`], the endpoint's `/clients`.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::Mutex;

use super::distinct::Distinct;

/// Length of a window, seconds.
pub const WINDOW_SECS: u64 = 3600;
/// Sources whose requests are counted one by one, per window.
pub const TABLE_SIZE: usize = 16_384;
/// Slots probed before a source counts as untracked.
const MAX_PROBE: usize = 16;
/// Top talkers listed by `/clients`, per window.
pub const TOP: usize = 20;

/// The protocol a request came in by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// NTP without NTS (plain or with a symmetric key).
    Ntp = 0,
    /// NTS-protected NTP.
    Nts = 1,
    /// Roughtime (UDP or TCP).
    Roughtime = 2,
    /// An NTS-KE connection.
    NtsKe = 3,
}

impl Protocol {
    const ALL: [Self; 4] = [Self::Ntp, Self::Nts, Self::Roughtime, Self::NtsKe];

    /// The metric label.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Ntp => "ntp",
            Self::Nts => "nts",
            Self::Roughtime => "roughtime",
            Self::NtsKe => "nts-ke",
        }
    }
}

/// What became of a request, as far as its client is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Taken in (answered, or dropped for what it contained).
    Served,
    /// Refused or answered with a Kiss-o'-Death by a rate limit.
    Limited,
    /// Refused by an access list or a connection limit.
    Refused,
}

/// One source in a window's table.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    address: u128,
    requests: u32,
    limited: u32,
    /// Bit `p` set: seen with protocol `p`.
    protocols: u8,
    used: bool,
}

/// One window's figures.
#[derive(Debug)]
struct Window {
    /// Aligned start, Unix seconds.
    start: u64,
    /// When counting began in it: its start, or later for the window the
    /// server started (or was stepped back) in.
    from: u64,
    by_protocol: [Distinct; 4],
    any: Distinct,
    limited: Distinct,
    refused: Distinct,
    table: Vec<Slot>,
    tracked: usize,
    /// Requests from sources the table had no room for.
    untracked_requests: u64,
}

impl Window {
    fn new(start: u64) -> Self {
        Self {
            start,
            from: start,
            by_protocol: Default::default(),
            any: Distinct::default(),
            limited: Distinct::default(),
            refused: Distinct::default(),
            table: vec![Slot::default(); TABLE_SIZE],
            tracked: 0,
            untracked_requests: 0,
        }
    }

    fn reset(&mut self, start: u64) {
        self.start = start;
        self.from = start;
        for d in &mut self.by_protocol {
            d.clear();
        }
        self.any.clear();
        self.limited.clear();
        self.refused.clear();
        self.table.fill(Slot::default());
        self.tracked = 0;
        self.untracked_requests = 0;
    }

    fn record(&mut self, hash: u64, address: u128, protocol: Protocol, outcome: Outcome) {
        self.by_protocol[protocol as usize].insert(hash);
        self.any.insert(hash);
        match outcome {
            Outcome::Served => {}
            Outcome::Limited => self.limited.insert(hash),
            Outcome::Refused => self.refused.insert(hash),
        }
        let mask = TABLE_SIZE - 1;
        let start = (hash as usize) & mask;
        for probe in 0..MAX_PROBE {
            let slot = &mut self.table[(start + probe) & mask];
            if !slot.used {
                *slot = Slot {
                    address,
                    used: true,
                    ..Slot::default()
                };
                self.tracked += 1;
            }
            if slot.address == address {
                slot.requests = slot.requests.saturating_add(1);
                if outcome != Outcome::Served {
                    slot.limited = slot.limited.saturating_add(1);
                }
                slot.protocols |= 1 << protocol as u8;
                return;
            }
        }
        self.untracked_requests += 1;
    }

    /// The `n` sources with most requests, most first.
    fn top(&self, n: usize) -> Vec<Slot> {
        let mut used: Vec<Slot> = self.table.iter().filter(|s| s.used).copied().collect();
        used.sort_unstable_by(|a, b| b.requests.cmp(&a.requests).then(a.address.cmp(&b.address)));
        used.truncate(n);
        used
    }
}

/// The two windows and the hash key.
#[derive(Debug)]
struct Windows {
    current: Window,
    previous: Option<Window>,
}

/// Rate buckets of the per-client request-rate distribution, requests per
/// second over a window: from one request per 1024 s (NTP's longest
/// usual poll) to 64 per second.
pub const RATE_BUCKETS: [f64; 9] = [
    1.0 / 1024.0,
    1.0 / 256.0,
    1.0 / 64.0,
    1.0 / 16.0,
    0.25,
    1.0,
    4.0,
    16.0,
    64.0,
];

/// The client population of one server, shared by its workers: each
/// locks it once per receive batch.
#[derive(Debug)]
pub struct ClientPopulation {
    key: [u64; 2],
    windows: Mutex<Windows>,
}

impl ClientPopulation {
    /// An empty population whose address hashes are keyed by `key`.
    #[must_use]
    pub fn new(key: [u8; 16], now_unix: u64) -> Self {
        let half = |b: &[u8]| {
            let mut x = [0u8; 8];
            x.copy_from_slice(b);
            u64::from_le_bytes(x)
        };
        let mut current = Window::new(align(now_unix));
        current.from = now_unix;
        Self {
            key: [half(&key[..8]), half(&key[8..])],
            windows: Mutex::new(Windows {
                current,
                previous: None,
            }),
        }
    }

    fn hash(&self, address: u128) -> u64 {
        let lo = (address as u64) ^ self.key[0];
        let hi = ((address >> 64) as u64) ^ self.key[1];
        mix(mix(lo) ^ hi.rotate_left(29))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Windows> {
        self.windows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one request per item, at `now_unix`.
    pub fn record_batch(&self, now_unix: u64, items: &[(IpAddr, Protocol, Outcome)]) {
        if items.is_empty() {
            return;
        }
        let mut w = self.lock();
        roll(&mut w, now_unix);
        for &(ip, protocol, outcome) in items {
            let address = key_of(ip);
            let hash = self.hash(address);
            w.current.record(hash, address, protocol, outcome);
        }
    }

    /// Counts one request.
    pub fn record(&self, now_unix: u64, ip: IpAddr, protocol: Protocol, outcome: Outcome) {
        self.record_batch(now_unix, &[(ip, protocol, outcome)]);
    }

    /// The current and previous windows' figures.
    #[must_use]
    pub fn snapshot(&self, now_unix: u64) -> [Option<WindowFigures>; 2] {
        let mut w = self.lock();
        roll(&mut w, now_unix);
        [
            Some(WindowFigures::of(&w.current, now_unix)),
            w.previous
                .as_ref()
                .map(|p| WindowFigures::of(p, p.start + WINDOW_SECS)),
        ]
    }

    /// Appends the Prometheus families.
    pub fn render(&self, out: &mut String, now_unix: u64) {
        let figures = self.snapshot(now_unix);
        let windows = [("current", &figures[0]), ("previous", &figures[1])];
        family(
            out,
            "authtime_clients",
            &format!(
                "Distinct client addresses seen in the window (\"current\": the {WINDOW_SECS} s \
                 window in progress, \"previous\": the one before it), by protocol (\"any\": all \
                 of them). A HyperLogLog estimate, about 1.1-1.8 % standard error."
            ),
        );
        for (name, f) in windows {
            let Some(f) = f else { continue };
            for p in Protocol::ALL {
                sample(
                    out,
                    "authtime_clients",
                    &format!("{{protocol=\"{}\",window=\"{name}\"}}", p.label()),
                    f.by_protocol[p as usize],
                );
            }
            sample(
                out,
                "authtime_clients",
                &format!("{{protocol=\"any\",window=\"{name}\"}}"),
                f.any,
            );
        }
        for (metric, help, get) in [
            (
                "authtime_clients_limited",
                "Distinct client addresses a rate limit refused or sent a Kiss-o'-Death at least \
                 once in the window (estimate, as authtime_clients).",
                (|f: &WindowFigures| f.limited) as fn(&WindowFigures) -> f64,
            ),
            (
                "authtime_clients_refused",
                "Distinct client addresses an access list or connection limit refused at least \
                 once in the window (estimate, as authtime_clients).",
                |f: &WindowFigures| f.refused,
            ),
            (
                "authtime_clients_untracked_requests",
                "Requests in the window from sources beyond the per-window table of counted \
                 sources (they are in the estimates, not in the rate distribution or the top \
                 talkers).",
                |f: &WindowFigures| f.untracked_requests as f64,
            ),
        ] {
            family(out, metric, help);
            for (name, f) in windows {
                if let Some(f) = f {
                    sample(out, metric, &format!("{{window=\"{name}\"}}"), get(f));
                }
            }
        }
        let metric = "authtime_clients_by_request_rate";
        family(
            out,
            metric,
            "Counted sources whose request rate over the window (requests divided by the seconds \
             counted in it) was at most `le` per second: a snapshot distribution, \
             cumulative like a histogram's buckets.",
        );
        for (name, f) in windows {
            let Some(f) = f else { continue };
            let mut cumulative = 0u64;
            for (bound, n) in RATE_BUCKETS.iter().zip(&f.rate_buckets) {
                cumulative += n;
                sample(
                    out,
                    metric,
                    &format!("{{window=\"{name}\",le=\"{bound}\"}}"),
                    cumulative as f64,
                );
            }
            cumulative += f.rate_buckets[RATE_BUCKETS.len()];
            sample(
                out,
                metric,
                &format!("{{window=\"{name}\",le=\"+Inf\"}}"),
                cumulative as f64,
            );
        }
    }

    /// The top talkers of both windows as JSON, for `/clients`.
    #[must_use]
    pub fn top_json(&self, now_unix: u64) -> String {
        let figures = self.snapshot(now_unix);
        let mut out = format!("{{\"window_seconds\":{WINDOW_SECS}");
        for (name, f) in [("current", &figures[0]), ("previous", &figures[1])] {
            let Some(f) = f else {
                let _ = write!(out, ",\"{name}\":null");
                continue;
            };
            let _ = write!(
                out,
                ",\"{name}\":{{\"start\":{},\"seconds\":{},\"clients\":{:.0},\"tracked\":{},\
                 \"untracked_requests\":{},\"top\":[",
                f.start, f.seconds, f.any, f.tracked, f.untracked_requests
            );
            for (i, s) in f.top.iter().enumerate() {
                let protocols: Vec<String> = Protocol::ALL
                    .iter()
                    .filter(|p| s.protocols & (1 << **p as u8) != 0)
                    .map(|p| format!("\"{}\"", p.label()))
                    .collect();
                let _ = write!(
                    out,
                    "{}{{\"address\":\"{}\",\"requests\":{},\"limited_or_refused\":{},\
                     \"protocols\":[{}]}}",
                    if i == 0 { "" } else { "," },
                    address_of(s.address),
                    s.requests,
                    s.limited,
                    protocols.join(",")
                );
            }
            out.push_str("]}");
        }
        out.push('}');
        out
    }
}

/// One window, read out.
#[derive(Debug, Clone)]
pub struct WindowFigures {
    /// Aligned start, Unix seconds.
    pub start: u64,
    /// Seconds counted (so far, for the current window; from the server's
    /// start in the window it started in).
    pub seconds: u64,
    /// Distinct sources by protocol ([`Protocol`] order).
    pub by_protocol: [f64; 4],
    /// Distinct sources, all protocols.
    pub any: f64,
    /// Distinct sources limited at least once.
    pub limited: f64,
    /// Distinct sources refused at least once.
    pub refused: f64,
    /// Sources counted one by one.
    pub tracked: usize,
    /// Requests from sources beyond the table.
    pub untracked_requests: u64,
    /// Counted sources per rate bucket ([`RATE_BUCKETS`], then the rest).
    pub rate_buckets: [u64; RATE_BUCKETS.len() + 1],
    top: Vec<Slot>,
}

impl WindowFigures {
    fn of(w: &Window, end: u64) -> Self {
        let seconds = end.saturating_sub(w.from).max(1);
        let mut rate_buckets = [0u64; RATE_BUCKETS.len() + 1];
        for s in w.table.iter().filter(|s| s.used) {
            let rate = f64::from(s.requests) / seconds as f64;
            let i = RATE_BUCKETS
                .iter()
                .position(|&b| rate <= b)
                .unwrap_or(RATE_BUCKETS.len());
            rate_buckets[i] += 1;
        }
        Self {
            start: w.start,
            seconds,
            by_protocol: [0, 1, 2, 3].map(|i| w.by_protocol[i].estimate()),
            any: w.any.estimate(),
            limited: w.limited.estimate(),
            refused: w.refused.estimate(),
            tracked: w.tracked,
            untracked_requests: w.untracked_requests,
            rate_buckets,
            top: w.top(TOP),
        }
    }
}

fn align(unix: u64) -> u64 {
    unix - unix % WINDOW_SECS
}

/// Moves to the window of `now_unix`: the current one becomes the previous
/// one when it just ended; both start afresh after a gap or a step back.
fn roll(w: &mut Windows, now_unix: u64) {
    let start = align(now_unix);
    if start == w.current.start {
        return;
    }
    if start == w.current.start + WINDOW_SECS {
        let mut old = match w.previous.take() {
            Some(mut p) => {
                p.reset(start);
                p
            }
            None => Window::new(start),
        };
        std::mem::swap(&mut old, &mut w.current);
        w.previous = Some(old);
    } else {
        w.current.reset(start);
        w.current.from = now_unix;
        w.previous = None;
    }
}

fn key_of(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn address_of(key: u128) -> IpAddr {
    let v6 = std::net::Ipv6Addr::from(key);
    v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
}

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn family(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
}

fn sample(out: &mut String, name: &str, labels: &str, value: f64) {
    let _ = writeln!(out, "{name}{labels} {}", value.round());
}

#[cfg(test)]
#[path = "clients_tests.rs"]
mod tests;
