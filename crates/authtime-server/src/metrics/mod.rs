//! Counters of what the server did, and their Prometheus text rendering.
//!
//! Each worker owns one [`WorkerCounters`] behind a mutex that it locks once
//! per batch (so the lock is uncontended but for a scrape) and updates through
//! [`StatsSink`], the daemon's [`ServerStats`]. Labelled counters live in
//! fixed tables: nothing allocates per packet, and a peer cannot create label
//! values (MAC failures are labelled by key id only for configured keys;
//! unknown ids share one label).

pub mod clients;
pub mod distinct;
pub(crate) mod http;
pub mod served_time;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use authtime_keys::KeySet;
use authtime_proto::{DropReason, ServerStats};

/// Drop reasons of the daemon itself, besides the proto crate's.
pub mod daemon_drop {
    /// The client is not allowed by the access lists.
    pub const DENIED: &str = "denied";
    /// The datagram was larger than the receive buffer.
    pub const TOO_LARGE: &str = "too_large";
    /// The clock is unsynchronized and `[clock] unsynchronized = "drop"`.
    pub const UNSYNCHRONIZED: &str = "unsynchronized";
    /// The request waited longer than `ntp.max-request-age` before the
    /// server read it: its reply would have been stale.
    pub const STALE: &str = "stale";
}

/// Drop reasons always shown (with 0), so dashboards see every series.
const KNOWN_DROP_REASONS: [&str; 12] = [
    "malformed",
    "unsupported_version",
    "not_a_request",
    "crypto_nak_in_request",
    "unauthenticated",
    "unknown_key",
    "bad_mac",
    "rate_limited",
    daemon_drop::DENIED,
    daemon_drop::TOO_LARGE,
    daemon_drop::UNSYNCHRONIZED,
    daemon_drop::STALE,
];

/// Counts per label in a fixed table; labels beyond its size go to `overflow`.
#[derive(Debug, Clone, Copy)]
pub struct LabelCounts<K, const N: usize> {
    entries: [(K, u64); N],
    len: usize,
    overflow: u64,
}

impl<K: Copy + Default + PartialEq, const N: usize> Default for LabelCounts<K, N> {
    fn default() -> Self {
        Self {
            entries: [(K::default(), 0); N],
            len: 0,
            overflow: 0,
        }
    }
}

impl<K: Copy + Default + PartialEq, const N: usize> LabelCounts<K, N> {
    /// Adds `n` to `label`.
    pub fn add(&mut self, label: K, n: u64) {
        if let Some(entry) = self.entries[..self.len]
            .iter_mut()
            .find(|(k, _)| *k == label)
        {
            entry.1 += n;
        } else if let Some(entry) = self.entries.get_mut(self.len) {
            *entry = (label, n);
            self.len += 1;
        } else {
            self.overflow += n;
        }
    }

    /// The count of `label`.
    #[must_use]
    pub fn get(&self, label: K) -> u64 {
        self.iter().find(|(k, _)| *k == label).map_or(0, |(_, n)| n)
    }

    /// Labels and counts, in order of first appearance.
    pub fn iter(&self) -> impl Iterator<Item = (K, u64)> + '_ {
        self.entries[..self.len].iter().copied()
    }

    /// Counts that found no free slot.
    #[must_use]
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    fn merge(&mut self, other: &Self) {
        for (k, n) in other.iter() {
            self.add(k, n);
        }
        self.overflow += other.overflow;
    }
}

/// A latency histogram with power-of-two bounds from 64 ns to 16.8 ms (and
/// an overflow bucket), fixed in size, for per-request server times.
#[derive(Debug, Clone, Copy, Default)]
pub struct LatencyHistogram {
    /// Counts per bucket (not cumulative); bucket `i` holds times up to
    /// [`LatencyHistogram::upper_bound_ns`]`(i)`.
    pub buckets: [u64; Self::BUCKETS],
    /// Sum of all times, nanoseconds.
    pub sum_ns: u64,
    /// Number of times recorded.
    pub count: u64,
}

impl LatencyHistogram {
    /// Buckets, the last one unbounded.
    pub const BUCKETS: usize = 20;

    /// Upper bound of bucket `i` in nanoseconds (`u64::MAX` for the last).
    #[must_use]
    pub fn upper_bound_ns(i: usize) -> u64 {
        if i + 1 >= Self::BUCKETS {
            u64::MAX
        } else {
            64 << i
        }
    }

    /// Records `n` requests that took `each_ns` nanoseconds each.
    pub fn record(&mut self, each_ns: u64, n: u64) {
        let i = (0..Self::BUCKETS)
            .find(|&i| each_ns <= Self::upper_bound_ns(i))
            .unwrap_or(Self::BUCKETS - 1);
        self.buckets[i] += n;
        self.sum_ns = self.sum_ns.saturating_add(each_ns.saturating_mul(n));
        self.count += n;
    }

    fn merge(&mut self, o: &Self) {
        for (a, b) in self.buckets.iter_mut().zip(o.buckets) {
            *a += b;
        }
        self.sum_ns = self.sum_ns.saturating_add(o.sum_ns);
        self.count += o.count;
    }

    /// Appends this histogram as a Prometheus histogram in seconds.
    pub fn render(&self, out: &mut String, name: &str, help: &str) {
        let buckets = self.buckets.iter().enumerate().map(|(i, n)| {
            let bound = Self::upper_bound_ns(i);
            ((bound != u64::MAX).then(|| bound as f64 / 1e9), *n)
        });
        render_histogram(
            out,
            name,
            help,
            buckets,
            self.sum_ns as f64 / 1e9,
            self.count,
        );
    }
}

/// Appends a Prometheus histogram: `buckets` are (upper bound in seconds,
/// `None` for the last, unbounded one; count in that bucket alone).
pub(crate) fn render_histogram(
    out: &mut String,
    name: &str,
    help: &str,
    buckets: impl Iterator<Item = (Option<f64>, u64)>,
    sum_seconds: f64,
    count: u64,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    let mut cumulative = 0;
    for (bound, n) in buckets {
        cumulative += n;
        match bound {
            Some(b) => {
                let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {cumulative}");
            }
            None => {
                let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
            }
        }
    }
    let _ = writeln!(out, "{name}_sum {sum_seconds}\n{name}_count {count}");
}

/// What one worker counted.
#[derive(Debug, Clone, Copy, Default)]
pub struct WorkerCounters {
    /// Datagrams received.
    pub received: u64,
    /// Replies without a MAC.
    pub answered_plain: u64,
    /// Replies with a MAC.
    pub answered_authenticated: u64,
    /// Drops by reason.
    pub dropped: LabelCounts<&'static str, 24>,
    /// Malformed datagrams by codec error.
    pub malformed: LabelCounts<&'static str, 24>,
    /// MAC failures under configured keys, by key id.
    pub mac_failures: LabelCounts<u32, 64>,
    /// MAC failures naming a key the server does not have.
    pub mac_failures_unknown_key: u64,
    /// Crypto-NAKs sent.
    pub crypto_naks: u64,
    /// Requests the rate limiter refused.
    pub rate_limited: u64,
    /// Replies the kernel did not take.
    pub send_errors: u64,
    /// `recvmmsg` calls that returned datagrams.
    pub batches: u64,
    /// NTS requests answered with a protected reply.
    pub nts_answered: u64,
    /// Fresh cookies sent in NTS replies.
    pub nts_cookies_issued: u64,
    /// NTS requests whose cookie and authentication were worked on
    /// together with others of their receive batch.
    pub nts_batched: u64,
    /// NTS NAKs sent, by reason.
    pub nts_naks: LabelCounts<&'static str, 8>,
    /// NTS requests dropped, by reason.
    pub nts_dropped: LabelCounts<&'static str, 32>,
    /// d_SNTP: server time per plain or MAC request (a batch's time divided
    /// by its requests).
    pub ntp_time: LatencyHistogram,
    /// d_SNTS: server time per NTS request (cookie opened, request
    /// authenticated, reply sealed), measured one by one.
    pub nts_time: LatencyHistogram,
    /// The time served: modes, timestamp sources, measured error.
    pub served: served_time::ServedTimeCounters,
}

impl WorkerCounters {
    /// Counts a datagram the daemon dropped before the server saw it.
    pub fn drop_before_server(&mut self, reason: &'static str) {
        self.received += 1;
        self.dropped.add(reason, 1);
    }

    fn merge(&mut self, o: &Self) {
        self.received += o.received;
        self.answered_plain += o.answered_plain;
        self.answered_authenticated += o.answered_authenticated;
        self.dropped.merge(&o.dropped);
        self.malformed.merge(&o.malformed);
        self.mac_failures.merge(&o.mac_failures);
        self.mac_failures_unknown_key += o.mac_failures_unknown_key;
        self.crypto_naks += o.crypto_naks;
        self.rate_limited += o.rate_limited;
        self.send_errors += o.send_errors;
        self.batches += o.batches;
        self.nts_answered += o.nts_answered;
        self.nts_cookies_issued += o.nts_cookies_issued;
        self.nts_batched += o.nts_batched;
        self.nts_naks.merge(&o.nts_naks);
        self.nts_dropped.merge(&o.nts_dropped);
        self.ntp_time.merge(&o.ntp_time);
        self.nts_time.merge(&o.nts_time);
        self.served.merge(&o.served);
    }
}

/// The daemon's [`ServerStats`]: a worker's counters and the keys in use
/// (to tell configured key ids from the ones a peer made up).
#[derive(Debug)]
pub struct StatsSink<'a> {
    /// Where counts go.
    pub counters: &'a mut WorkerCounters,
    /// The keys of this batch.
    pub keys: &'a KeySet,
}

impl ServerStats for StatsSink<'_> {
    fn received(&mut self) {
        self.counters.received += 1;
    }
    fn answered(&mut self, authenticated: bool) {
        if authenticated {
            self.counters.answered_authenticated += 1;
        } else {
            self.counters.answered_plain += 1;
        }
    }
    fn dropped(&mut self, reason: &DropReason) {
        self.counters.dropped.add(reason.counter_name(), 1);
        if let DropReason::Malformed(e) = reason {
            self.counters.malformed.add(e.name(), 1);
        }
    }
    fn mac_failure(&mut self, key_id: u32) {
        if self.keys.get(key_id).is_some() {
            self.counters.mac_failures.add(key_id, 1);
        } else {
            self.counters.mac_failures_unknown_key += 1;
        }
    }
    fn crypto_nak(&mut self) {
        self.counters.crypto_naks += 1;
    }
    fn rate_limited(&mut self) {
        self.counters.rate_limited += 1;
    }
}

/// Every counter of the daemon: one [`WorkerCounters`] per worker, plus key
/// reloads.
#[derive(Debug, Default)]
pub struct Metrics {
    workers: Mutex<Vec<Arc<Mutex<WorkerCounters>>>>,
    /// Successful key reloads.
    pub reloads_ok: AtomicU64,
    /// Failed key reloads (old keys kept).
    pub reloads_failed: AtomicU64,
    /// Keys in use.
    pub keys_loaded: AtomicU64,
    /// More families rendered after the NTP ones (NTS master keys, NTS-KE).
    extra: Mutex<Vec<ExtraRender>>,
    /// Who the clients are (rendered, and the top talkers at `/clients`).
    clients: std::sync::OnceLock<Arc<clients::ClientPopulation>>,
}

/// A renderer of more metric families, appended to the exposition.
struct ExtraRender(Box<dyn Fn(&mut String) + Send + Sync>);

impl std::fmt::Debug for ExtraRender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExtraRender")
    }
}

/// Writes one metric family with its HELP and TYPE lines.
pub fn write_family(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    samples: &[(String, u64)],
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{labels} {value}");
    }
}

/// A label set `{name="value"}` (values must need no escaping).
#[must_use]
pub fn label_set(name: &str, value: &str) -> String {
    label(name, value)
}

impl Metrics {
    /// Adds a renderer of more families (called at every scrape).
    pub fn add_renderer(&self, render: impl Fn(&mut String) + Send + Sync + 'static) {
        lock(&self.extra).push(ExtraRender(Box::new(render)));
    }

    /// Sets the client population the endpoint renders and serves at
    /// `/clients` (once; later calls are ignored).
    pub fn set_clients(&self, population: Arc<clients::ClientPopulation>) {
        let _ = self.clients.set(population);
    }

    /// The client population, when set.
    #[must_use]
    pub fn clients(&self) -> Option<&Arc<clients::ClientPopulation>> {
        self.clients.get()
    }

    /// A new worker's counters.
    pub fn add_worker(&self) -> Arc<Mutex<WorkerCounters>> {
        let counters = Arc::new(Mutex::new(WorkerCounters::default()));
        lock(&self.workers).push(Arc::clone(&counters));
        counters
    }

    /// The sum over workers.
    #[must_use]
    pub fn total(&self) -> WorkerCounters {
        let mut total = WorkerCounters::default();
        for worker in lock(&self.workers).iter() {
            total.merge(&lock(worker));
        }
        total
    }

    /// The Prometheus text exposition (format 0.0.4).
    #[must_use]
    pub fn render(&self) -> String {
        let t = self.total();
        let mut out = String::with_capacity(4096);
        let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, u64)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, value) in samples {
                let _ = writeln!(out, "{name}{labels} {value}");
            }
        };
        let plain = |v: u64| vec![(String::new(), v)];
        family(
            "authtime_ntp_received_total",
            "counter",
            "NTP datagrams received.",
            &plain(t.received),
        );
        family(
            "authtime_ntp_answered_total",
            "counter",
            "Replies sent, by authentication (none or a symmetric-key MAC).",
            &[
                (label("auth", "none"), t.answered_plain),
                (label("auth", "mac"), t.answered_authenticated),
            ],
        );
        let mut drops: Vec<(String, u64)> = KNOWN_DROP_REASONS
            .iter()
            .map(|r| (label("reason", r), t.dropped.get(r)))
            .collect();
        drops.extend(
            t.dropped
                .iter()
                .filter(|(r, _)| !KNOWN_DROP_REASONS.contains(r))
                .map(|(r, n)| (label("reason", r), n)),
        );
        family(
            "authtime_ntp_dropped_total",
            "counter",
            "Datagrams answered with nothing, by reason.",
            &drops,
        );
        let malformed: Vec<_> = t
            .malformed
            .iter()
            .map(|(e, n)| (label("error", e), n))
            .collect();
        family(
            "authtime_ntp_malformed_total",
            "counter",
            "Malformed datagrams, by codec error.",
            &malformed,
        );
        let mut failures: Vec<_> = t
            .mac_failures
            .iter()
            .map(|(id, n)| (label("key_id", &id.to_string()), n))
            .collect();
        failures.push((
            label("key_id", "unknown"),
            t.mac_failures_unknown_key + t.mac_failures.overflow(),
        ));
        family(
            "authtime_ntp_mac_failures_total",
            "counter",
            "Requests whose MAC failed, by key id (unknown: a key the server does not have).",
            &failures,
        );
        family(
            "authtime_ntp_rate_limited_total",
            "counter",
            "Requests refused by the per-client rate limiter (RATE kiss or drop).",
            &plain(t.rate_limited),
        );
        family(
            "authtime_ntp_crypto_naks_total",
            "counter",
            "Crypto-NAKs sent.",
            &plain(t.crypto_naks),
        );
        family(
            "authtime_ntp_send_errors_total",
            "counter",
            "Replies the kernel did not accept.",
            &plain(t.send_errors),
        );
        family(
            "authtime_ntp_receive_batches_total",
            "counter",
            "recvmmsg calls that returned datagrams.",
            &plain(t.batches),
        );
        family(
            "authtime_nts_answered_total",
            "counter",
            "NTS requests answered with a protected reply.",
            &plain(t.nts_answered),
        );
        family(
            "authtime_nts_cookies_issued_total",
            "counter",
            "Fresh cookies sent in NTS replies.",
            &plain(t.nts_cookies_issued),
        );
        family(
            "authtime_nts_batched_total",
            "counter",
            "NTS requests (replies, NAKs and drops) whose cookie and authenticator were \
             worked on together with others of their receive batch.",
            &plain(t.nts_batched),
        );
        const KNOWN_NAKS: [&str; 3] = ["nak_unknown_key", "nak_bad_cookie", "nak_unauthenticated"];
        let naks: Vec<_> = KNOWN_NAKS
            .iter()
            .map(|r| (label("reason", r), t.nts_naks.get(r)))
            .chain(
                t.nts_naks
                    .iter()
                    .filter(|(r, _)| !KNOWN_NAKS.contains(r))
                    .map(|(r, n)| (label("reason", r), n)),
            )
            .collect();
        family(
            "authtime_nts_naks_total",
            "counter",
            "NTS NAKs (NTSN kiss) sent, by reason.",
            &naks,
        );
        let nts_drops: Vec<_> = t
            .nts_dropped
            .iter()
            .map(|(r, n)| (label("reason", r), n))
            .collect();
        family(
            "authtime_nts_dropped_total",
            "counter",
            "NTS requests answered with nothing, by reason.",
            &nts_drops,
        );
        t.ntp_time.render(
            &mut out,
            "authtime_ntp_response_seconds",
            "Server time per NTP request without NTS, request checked to reply written (d_SNTP of \
             the NTS paper; the batch time divided by its requests).",
        );
        t.nts_time.render(
            &mut out,
            "authtime_nts_response_seconds",
            "Server time per NTS request: cookie opened, request authenticated, reply sealed \
             (d_SNTS of the NTS paper).",
        );
        t.served.render(&mut out);
        let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, u64)]| {
            write_family(&mut out, name, kind, help, samples);
        };
        family(
            "authtime_keys_loaded",
            "gauge",
            "Symmetric keys in use.",
            &plain(self.keys_loaded.load(Ordering::Relaxed)),
        );
        family(
            "authtime_key_reloads_total",
            "counter",
            "Key file reloads (SIGHUP), by result.",
            &[
                (
                    label("result", "ok"),
                    self.reloads_ok.load(Ordering::Relaxed),
                ),
                (
                    label("result", "error"),
                    self.reloads_failed.load(Ordering::Relaxed),
                ),
            ],
        );
        for render in lock(&self.extra).iter() {
            (render.0)(&mut out);
        }
        if let Some(clients) = self.clients() {
            clients.render(&mut out, unix_now());
        }
        out
    }

    /// The body of `/clients`: the top talkers as JSON, or `None` when no
    /// population is kept.
    #[must_use]
    pub fn clients_json(&self) -> Option<String> {
        self.clients().map(|c| c.top_json(unix_now()))
    }
}

fn unix_now() -> u64 {
    u64::try_from(crate::clock::now_unix().secs).unwrap_or(0)
}

pub(crate) fn label(name: &str, value: &str) -> String {
    // Values are our own names and numbers: nothing to escape.
    format!("{{{name}=\"{value}\"}}")
}

/// Locks a mutex; a worker that panicked leaves counters that are still counts.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use authtime_keys::{KeyMaterial, KeyType};
    use authtime_wire::WireError;

    use super::*;

    #[test]
    fn label_tables_are_bounded() {
        let mut t = LabelCounts::<u32, 2>::default();
        t.add(7, 1);
        t.add(8, 2);
        t.add(7, 3);
        t.add(9, 5);
        assert_eq!((t.get(7), t.get(8), t.get(9), t.overflow()), (4, 2, 0, 5));
    }

    #[test]
    fn workers_are_summed_and_rendered() {
        let metrics = Metrics::default();
        let keys = KeySet::new(&[KeyMaterial::new(1, KeyType::Md5, &[1; 16])]).expect("keys");
        for _ in 0..2 {
            let worker = metrics.add_worker();
            let mut counters = lock(&worker);
            let mut sink = StatsSink {
                counters: &mut counters,
                keys: &keys,
            };
            sink.received();
            sink.dropped(&DropReason::Malformed(WireError::HeaderTooShort { len: 3 }));
            sink.received();
            sink.mac_failure(1);
            sink.dropped(&DropReason::BadMac { key_id: 1 });
            sink.received();
            sink.mac_failure(99);
            sink.dropped(&DropReason::UnknownKey { key_id: 99 });
            sink.received();
            sink.answered(true);
            sink.counters.drop_before_server(daemon_drop::DENIED);
        }
        let text = metrics.render();
        for line in [
            "authtime_ntp_received_total 10",
            "authtime_ntp_answered_total{auth=\"mac\"} 2",
            "authtime_ntp_dropped_total{reason=\"malformed\"} 2",
            "authtime_ntp_dropped_total{reason=\"bad_mac\"} 2",
            "authtime_ntp_dropped_total{reason=\"unknown_key\"} 2",
            "authtime_ntp_dropped_total{reason=\"denied\"} 2",
            "authtime_ntp_dropped_total{reason=\"rate_limited\"} 0",
            "authtime_ntp_malformed_total{error=\"header_too_short\"} 2",
            "authtime_ntp_mac_failures_total{key_id=\"1\"} 2",
            "authtime_ntp_mac_failures_total{key_id=\"unknown\"} 2",
            "# TYPE authtime_keys_loaded gauge",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }
}
