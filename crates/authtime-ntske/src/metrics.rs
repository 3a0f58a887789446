//! NTS-KE server counters and the d_SKE latency histogram, lock- and allocation-free.
//!
//! d_SKE is the time from the last byte of a request (End of Message read) to the
//! response being ready to write. The histogram has fixed power-of-two buckets in
//! microseconds, so the daemon can export it as a Prometheus histogram directly.
//! Completed TLS handshakes are also counted by the key exchange group they
//! negotiated ([`KEY_EXCHANGE_GROUPS`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::pool_member::{PoolOutcome, PoolRequestKind};

/// Pool request kinds in the order of [`KeMetricsSnapshot::pool_requests`], with labels.
pub const POOL_REQUEST_KINDS: [PoolRequestKind; 2] =
    [PoolRequestKind::FixedKey, PoolRequestKind::Support];
/// Pool request outcomes in the order of [`KeMetricsSnapshot::pool_requests`].
pub const POOL_OUTCOMES: [PoolOutcome; 4] = [
    PoolOutcome::Ok,
    PoolOutcome::BadRequest,
    PoolOutcome::NotAuthorized,
    PoolOutcome::InternalError,
];

fn pool_index(kind: PoolRequestKind, outcome: PoolOutcome) -> usize {
    let k = POOL_REQUEST_KINDS
        .iter()
        .position(|x| *x == kind)
        .unwrap_or(0);
    let o = POOL_OUTCOMES
        .iter()
        .position(|x| *x == outcome)
        .unwrap_or(0);
    k * POOL_OUTCOMES.len() + o
}

/// Number of finite histogram buckets: upper bounds 1 µs, 2 µs, ... 2^23 µs (about 8.4 s).
pub const LATENCY_BUCKETS: usize = 24;

/// Upper bound in microseconds of finite bucket `i` (`le` label in Prometheus).
pub fn bucket_upper_bound_us(i: usize) -> u64 {
    1u64 << i.min(63)
}

/// Key exchange groups counted apart, in the order authtime's client offers them
/// (names as [`crate::tls_config::group_name`] gives them); any other group
/// is counted as `other`.
pub const KEY_EXCHANGE_GROUPS: [&str; 5] = [
    "X25519MLKEM768",
    "X25519",
    "secp256r1",
    "secp384r1",
    "other",
];

/// Live counters shared by the server tasks.
#[derive(Debug, Default)]
pub struct KeMetrics {
    handshakes_ok: AtomicU64,
    tls_errors: AtomicU64,
    timeouts: AtomicU64,
    bad_requests: AtomicU64,
    refused_at_cap: AtomicU64,
    rate_limited: AtomicU64,
    too_many_from_source: AtomicU64,
    internal_errors: AtomicU64,
    no_common_algorithm: AtomicU64,
    cookies_issued: AtomicU64,
    reload_failures: AtomicU64,
    certificate_not_after: AtomicU64,
    pool_requests: [AtomicU64; POOL_REQUEST_KINDS.len() * POOL_OUTCOMES.len()],
    pool_keep_alive_requests: AtomicU64,
    pool_token_reload_failures: AtomicU64,
    key_exchange_groups: [AtomicU64; KEY_EXCHANGE_GROUPS.len()],
    latency_buckets: [AtomicU64; LATENCY_BUCKETS + 1],
    latency_sum_us: AtomicU64,
    latency_count: AtomicU64,
}

/// Outcome of one connection, for [`KeMetrics::record_outcome`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionOutcome {
    /// Keys negotiated and cookies sent.
    Ok,
    /// Protocol or AEAD negotiation found nothing in common (a valid, empty answer).
    NoCommonAlgorithm,
    /// TLS handshake or I/O failed, or ALPN `ntske/1` was missing.
    TlsError,
    /// The handshake or the session timed out.
    Timeout,
    /// The request got Error 0 or 1.
    BadRequest,
    /// Refused because the connection cap was reached.
    RefusedAtCap,
    /// Refused before TLS: the client's handshake bucket was empty.
    RateLimited,
    /// Refused before TLS: the client held its most connections open at once.
    TooManyFromSource,
    /// The request got Error 2.
    InternalError,
}

/// A consistent-enough copy of the counters (each field read once, relaxed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeMetricsSnapshot {
    /// Sessions that negotiated keys and sent cookies.
    pub handshakes_ok: u64,
    /// TLS handshake or I/O failures, missing ALPN.
    pub tls_errors: u64,
    /// Handshake or session timeouts.
    pub timeouts: u64,
    /// Requests answered with Error 0 or 1.
    pub bad_requests: u64,
    /// Connections closed at once because the cap was reached.
    pub refused_at_cap: u64,
    /// Connections closed at once: the client was over its handshake rate.
    pub rate_limited: u64,
    /// Connections closed at once: the client held too many connections.
    pub too_many_from_source: u64,
    /// Requests answered with Error 2.
    pub internal_errors: u64,
    /// Valid requests with no common protocol or AEAD.
    pub no_common_algorithm: u64,
    /// Cookies sent.
    pub cookies_issued: u64,
    /// Certificate reloads that failed (the old certificate stayed).
    pub reload_failures: u64,
    /// The earliest notAfter of the certificate chain in use, in seconds since the
    /// Unix epoch (0: unknown, the chain's validity could not be read).
    pub certificate_not_after: u64,
    /// Requests with pool queries, by kind and outcome: index
    /// `kind * POOL_OUTCOMES.len() + outcome` in the orders of [`POOL_REQUEST_KINDS`]
    /// and [`POOL_OUTCOMES`] (see [`KeMetricsSnapshot::pool_requests_of`]).
    pub pool_requests: [u64; POOL_REQUEST_KINDS.len() * POOL_OUTCOMES.len()],
    /// Requests read on a connection kept alive for a pool load balancer (the first
    /// request of each connection not included).
    pub pool_keep_alive_requests: u64,
    /// Pool token reloads that failed (the previous tokens stay).
    pub pool_token_reload_failures: u64,
    /// Completed TLS handshakes by key exchange group, in the order of
    /// [`KEY_EXCHANGE_GROUPS`].
    pub key_exchange_groups: [u64; KEY_EXCHANGE_GROUPS.len()],
    /// d_SKE histogram: non-cumulative counts; index `i < LATENCY_BUCKETS` counts samples
    /// `<= bucket_upper_bound_us(i)` and above the previous bound, the last one the rest.
    pub latency_buckets: [u64; LATENCY_BUCKETS + 1],
    /// Sum of d_SKE samples in microseconds.
    pub latency_sum_us: u64,
    /// Number of d_SKE samples.
    pub latency_count: u64,
}

impl KeMetrics {
    /// Counts one connection outcome.
    pub fn record_outcome(&self, outcome: SessionOutcome) {
        let counter = match outcome {
            SessionOutcome::Ok => &self.handshakes_ok,
            SessionOutcome::NoCommonAlgorithm => &self.no_common_algorithm,
            SessionOutcome::TlsError => &self.tls_errors,
            SessionOutcome::Timeout => &self.timeouts,
            SessionOutcome::BadRequest => &self.bad_requests,
            SessionOutcome::RefusedAtCap => &self.refused_at_cap,
            SessionOutcome::RateLimited => &self.rate_limited,
            SessionOutcome::TooManyFromSource => &self.too_many_from_source,
            SessionOutcome::InternalError => &self.internal_errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts cookies sent.
    pub fn add_cookies(&self, n: usize) {
        self.cookies_issued
            .fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Counts a completed TLS handshake that negotiated `group` (a name of
    /// [`KEY_EXCHANGE_GROUPS`]; any other counts as `other`).
    pub fn record_key_exchange_group(&self, group: &str) {
        let last = KEY_EXCHANGE_GROUPS.len() - 1;
        let i = KEY_EXCHANGE_GROUPS[..last]
            .iter()
            .position(|g| *g == group)
            .unwrap_or(last);
        self.key_exchange_groups[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one request that carried pool queries.
    pub fn record_pool_request(&self, kind: PoolRequestKind, outcome: PoolOutcome) {
        self.pool_requests[pool_index(kind, outcome)].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one request read on a kept-alive connection.
    pub fn record_pool_keep_alive_request(&self) {
        self.pool_keep_alive_requests
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a failed pool token reload.
    pub fn record_pool_token_reload_failure(&self) {
        self.pool_token_reload_failures
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a failed certificate reload.
    pub fn record_reload_failure(&self) {
        self.reload_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Records when the chain now in use expires (its earliest notAfter, 0 when
    /// unknown).
    pub fn set_certificate_not_after(&self, not_after: u64) {
        self.certificate_not_after
            .store(not_after, Ordering::Relaxed);
    }

    /// Adds one d_SKE sample.
    pub fn record_latency(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        // Smallest i with us <= 2^i; samples above the last bound go to the overflow slot.
        let i = if us <= 1 {
            0
        } else {
            (64 - (us - 1).leading_zeros()) as usize
        };
        self.latency_buckets[i.min(LATENCY_BUCKETS)].fetch_add(1, Ordering::Relaxed);
        self.latency_sum_us.fetch_add(us, Ordering::Relaxed);
        self.latency_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Copies the counters.
    pub fn snapshot(&self) -> KeMetricsSnapshot {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut latency_buckets = [0; LATENCY_BUCKETS + 1];
        for (out, b) in latency_buckets.iter_mut().zip(&self.latency_buckets) {
            *out = load(b);
        }
        let mut key_exchange_groups = [0; KEY_EXCHANGE_GROUPS.len()];
        for (out, g) in key_exchange_groups
            .iter_mut()
            .zip(&self.key_exchange_groups)
        {
            *out = load(g);
        }
        let mut pool_requests = [0; POOL_REQUEST_KINDS.len() * POOL_OUTCOMES.len()];
        for (out, c) in pool_requests.iter_mut().zip(&self.pool_requests) {
            *out = load(c);
        }
        KeMetricsSnapshot {
            pool_requests,
            pool_keep_alive_requests: load(&self.pool_keep_alive_requests),
            pool_token_reload_failures: load(&self.pool_token_reload_failures),
            handshakes_ok: load(&self.handshakes_ok),
            tls_errors: load(&self.tls_errors),
            timeouts: load(&self.timeouts),
            bad_requests: load(&self.bad_requests),
            refused_at_cap: load(&self.refused_at_cap),
            rate_limited: load(&self.rate_limited),
            too_many_from_source: load(&self.too_many_from_source),
            internal_errors: load(&self.internal_errors),
            no_common_algorithm: load(&self.no_common_algorithm),
            cookies_issued: load(&self.cookies_issued),
            reload_failures: load(&self.reload_failures),
            certificate_not_after: load(&self.certificate_not_after),
            key_exchange_groups,
            latency_buckets,
            latency_sum_us: load(&self.latency_sum_us),
            latency_count: load(&self.latency_count),
        }
    }
}

impl KeMetricsSnapshot {
    /// Requests with pool queries of `kind` that ended with `outcome`.
    pub fn pool_requests_of(&self, kind: PoolRequestKind, outcome: PoolOutcome) -> u64 {
        self.pool_requests[pool_index(kind, outcome)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_goes_to_the_smallest_bucket_that_holds_it() {
        let m = KeMetrics::default();
        for us in [0, 1, 2, 3, 4, 5, 1000, 1024, 1025] {
            m.record_latency(Duration::from_micros(us));
        }
        m.record_latency(Duration::from_secs(100));
        let s = m.snapshot();
        assert_eq!(s.latency_buckets[0], 2); // 0, 1
        assert_eq!(s.latency_buckets[1], 1); // 2
        assert_eq!(s.latency_buckets[2], 2); // 3, 4
        assert_eq!(s.latency_buckets[3], 1); // 5
        assert_eq!(s.latency_buckets[10], 2); // 1000, 1024
        assert_eq!(s.latency_buckets[11], 1); // 1025
        assert_eq!(s.latency_buckets[LATENCY_BUCKETS], 1);
        assert_eq!(s.latency_count, 10);
        assert_eq!(bucket_upper_bound_us(10), 1024);
    }

    #[test]
    fn pool_requests_are_counted_by_kind_and_outcome() {
        let m = KeMetrics::default();
        m.record_pool_request(PoolRequestKind::FixedKey, PoolOutcome::Ok);
        m.record_pool_request(PoolRequestKind::FixedKey, PoolOutcome::Ok);
        m.record_pool_request(PoolRequestKind::Support, PoolOutcome::NotAuthorized);
        m.record_pool_keep_alive_request();
        let s = m.snapshot();
        assert_eq!(
            s.pool_requests_of(PoolRequestKind::FixedKey, PoolOutcome::Ok),
            2
        );
        assert_eq!(
            s.pool_requests_of(PoolRequestKind::Support, PoolOutcome::NotAuthorized),
            1
        );
        assert_eq!(s.pool_requests.iter().sum::<u64>(), 3);
        assert_eq!(s.pool_keep_alive_requests, 1);
    }

    #[test]
    fn outcomes_and_cookies_are_counted() {
        let m = KeMetrics::default();
        m.record_outcome(SessionOutcome::Ok);
        m.record_outcome(SessionOutcome::RefusedAtCap);
        m.record_outcome(SessionOutcome::RateLimited);
        m.record_outcome(SessionOutcome::TooManyFromSource);
        m.add_cookies(8);
        let s = m.snapshot();
        assert_eq!(
            (s.handshakes_ok, s.refused_at_cap, s.cookies_issued),
            (1, 1, 8)
        );
        assert_eq!((s.rate_limited, s.too_many_from_source), (1, 1));
    }

    #[test]
    fn key_exchange_groups_are_counted_by_name_and_the_rest_as_other() {
        let m = KeMetrics::default();
        m.record_key_exchange_group("X25519MLKEM768");
        m.record_key_exchange_group("X25519MLKEM768");
        m.record_key_exchange_group("X25519");
        m.record_key_exchange_group("FFDHE2048");
        m.record_key_exchange_group("other");
        assert_eq!(m.snapshot().key_exchange_groups, [2, 1, 0, 0, 2]);
        assert_eq!(KEY_EXCHANGE_GROUPS[4], "other");
    }
}
