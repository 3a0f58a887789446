//! The Roughtime server's counters and their Prometheus rendering. Atomics
//! only: the UDP workers, the TCP connections and the key keeper update them
//! without a lock, and a peer cannot create label values (the drop reasons
//! are a fixed list).

use std::sync::atomic::{AtomicU64, Ordering};

use authtime_roughtime::{Error, Version};

use crate::metrics::write_family;

/// Why a request got no answer; each is a label of
/// `authtime_roughtime_dropped_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Under 1024 bytes (draft-ietf-ntp-roughtime-19 §5.1).
    TooShort,
    /// Longer than a receive buffer, or a TCP frame over the size limit.
    TooLarge,
    /// Not a Roughtime request, or one this server cannot parse.
    Malformed,
    /// No version in common.
    UnsupportedVersion,
    /// SRV names another long-term key.
    WrongSrv,
    /// Over the client's rate.
    RateLimited,
    /// Outside `[access]`.
    Denied,
    /// The clock is unsynchronized.
    Unsynchronized,
    /// The radius the clock state calls for exceeds `max-radius`.
    RadiusTooLarge,
    /// Now is outside the online key's MINT..MAXT.
    OutsideDelegation,
    /// The response would have been larger than the request.
    ResponseTooLarge,
    /// The kernel refused the reply.
    SendFailed,
}

impl Refusal {
    const ALL: [Refusal; 12] = [
        Refusal::TooShort,
        Refusal::TooLarge,
        Refusal::Malformed,
        Refusal::UnsupportedVersion,
        Refusal::WrongSrv,
        Refusal::RateLimited,
        Refusal::Denied,
        Refusal::Unsynchronized,
        Refusal::RadiusTooLarge,
        Refusal::OutsideDelegation,
        Refusal::ResponseTooLarge,
        Refusal::SendFailed,
    ];

    /// The label value.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Refusal::TooShort => "too_short",
            Refusal::TooLarge => "too_large",
            Refusal::Malformed => "malformed",
            Refusal::UnsupportedVersion => "unsupported_version",
            Refusal::WrongSrv => "wrong_srv",
            Refusal::RateLimited => "rate_limited",
            Refusal::Denied => "denied",
            Refusal::Unsynchronized => "unsynchronized",
            Refusal::RadiusTooLarge => "radius_too_large",
            Refusal::OutsideDelegation => "outside_delegation",
            Refusal::ResponseTooLarge => "response_too_large",
            Refusal::SendFailed => "send_failed",
        }
    }

    /// The drop for a refusal of the sans-IO core.
    #[must_use]
    pub fn from_error(e: &Error) -> Self {
        match e {
            Error::RequestTooShort(_) => Refusal::TooShort,
            Error::UnknownServerKey => Refusal::WrongSrv,
            Error::NoCommonVersion | Error::BadVersionList => Refusal::UnsupportedVersion,
            Error::ResponseTooLarge { .. } => Refusal::ResponseTooLarge,
            Error::OutsideDelegation { .. } => Refusal::OutsideDelegation,
            _ => Refusal::Malformed,
        }
    }
}

/// Upper bounds of the batch-size histogram's buckets (the last is +Inf).
const BATCH_BOUNDS: [u64; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Every Roughtime counter.
#[derive(Debug, Default)]
pub struct RoughtimeMetrics {
    /// Requests received (UDP datagrams and TCP frames).
    pub received: AtomicU64,
    /// Responses sent, version 1.
    pub sent_rfc: AtomicU64,
    /// Responses sent, 0x8000000c.
    pub sent_draft: AtomicU64,
    drops: [AtomicU64; Refusal::ALL.len()],
    /// Batch sizes: counts per bucket (not cumulative), the last unbounded.
    batch_buckets: [AtomicU64; BATCH_BOUNDS.len() + 1],
    batch_sum: AtomicU64,
    batch_count: AtomicU64,
    /// Ed25519 signatures over SREP (one per version per batch).
    pub signatures: AtomicU64,
    /// Online keys this server made or adopted after the first.
    pub rotations: AtomicU64,
    /// Key store operations that failed.
    pub store_errors: AtomicU64,
    /// The radius last announced, seconds.
    pub radius: AtomicU64,
    /// MAXT of the online key in force (seconds since the epoch).
    pub maxt: AtomicU64,
    /// TCP connections accepted.
    pub tcp_connections: AtomicU64,
    /// TCP connections closed at once because too many were open.
    pub tcp_refused: AtomicU64,
}

impl RoughtimeMetrics {
    /// Counts `n` requests dropped for `reason`.
    pub fn refuse(&self, reason: Refusal, n: u64) {
        if let Some(i) = Refusal::ALL.iter().position(|d| *d == reason) {
            self.drops[i].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Requests dropped for `reason` so far.
    #[must_use]
    pub fn dropped(&self, reason: Refusal) -> u64 {
        Refusal::ALL
            .iter()
            .position(|d| *d == reason)
            .map_or(0, |i| self.drops[i].load(Ordering::Relaxed))
    }

    /// Counts a response of `version`.
    pub fn sent(&self, version: Version) {
        match version {
            Version::Rfc1 => &self.sent_rfc,
            Version::Draft12 => &self.sent_draft,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    /// Records a batch of `size` requests handed to the core.
    pub fn batch(&self, size: usize) {
        let size = size as u64;
        let i = BATCH_BOUNDS
            .iter()
            .position(|b| size <= *b)
            .unwrap_or(BATCH_BOUNDS.len());
        self.batch_buckets[i].fetch_add(1, Ordering::Relaxed);
        self.batch_sum.fetch_add(size, Ordering::Relaxed);
        self.batch_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Appends every family; `now` (seconds since the epoch) gives the time
    /// left on the online key.
    pub fn render(&self, out: &mut String, now: u64) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let plain = |v: u64| vec![(String::new(), v)];
        write_family(
            out,
            "authtime_roughtime_received_total",
            "counter",
            "Roughtime requests received (UDP datagrams and TCP frames).",
            &plain(get(&self.received)),
        );
        write_family(
            out,
            "authtime_roughtime_responses_total",
            "counter",
            "Roughtime responses sent, by wire version.",
            &[
                (r#"{version="1"}"#.to_owned(), get(&self.sent_rfc)),
                (
                    r#"{version="0x8000000c"}"#.to_owned(),
                    get(&self.sent_draft),
                ),
            ],
        );
        let drops: Vec<(String, u64)> = Refusal::ALL
            .iter()
            .zip(&self.drops)
            .map(|(d, n)| (format!("{{reason=\"{}\"}}", d.name()), get(n)))
            .collect();
        write_family(
            out,
            "authtime_roughtime_dropped_total",
            "counter",
            "Roughtime requests answered with nothing, by reason.",
            &drops,
        );
        let _ = std::fmt::Write::write_fmt(
            out,
            format_args!(
                "# HELP authtime_roughtime_batch_size Requests answered under one signed Merkle \
                 tree (one receive batch).\n# TYPE authtime_roughtime_batch_size histogram\n"
            ),
        );
        let mut cumulative = 0;
        for (i, n) in self.batch_buckets.iter().enumerate() {
            cumulative += get(n);
            let le = BATCH_BOUNDS
                .get(i)
                .map_or_else(|| "+Inf".to_owned(), u64::to_string);
            out.push_str(&format!(
                "authtime_roughtime_batch_size_bucket{{le=\"{le}\"}} {cumulative}\n"
            ));
        }
        out.push_str(&format!(
            "authtime_roughtime_batch_size_sum {}\nauthtime_roughtime_batch_size_count {}\n",
            get(&self.batch_sum),
            get(&self.batch_count)
        ));
        for (name, kind, help, value) in [
            (
                "authtime_roughtime_signatures_total",
                "counter",
                "Ed25519 signatures made over SREP (one per version in a batch).",
                get(&self.signatures),
            ),
            (
                "authtime_roughtime_key_rotations_total",
                "counter",
                "Online keys put in force after the first (made here, adopted from the key \
                 store, or a new delegation file).",
                get(&self.rotations),
            ),
            (
                "authtime_roughtime_keystore_errors_total",
                "counter",
                "Key store operations for the online key that failed (the key held is used).",
                get(&self.store_errors),
            ),
            (
                "authtime_roughtime_online_key_expiry_seconds",
                "gauge",
                "Seconds until the online key's MAXT (0 once past it).",
                get(&self.maxt).saturating_sub(now),
            ),
            (
                "authtime_roughtime_radius_seconds",
                "gauge",
                "The radius (RADI) last answered with, from the clock state.",
                get(&self.radius),
            ),
            (
                "authtime_roughtime_tcp_connections_total",
                "counter",
                "TCP connections accepted.",
                get(&self.tcp_connections),
            ),
            (
                "authtime_roughtime_tcp_refused_total",
                "counter",
                "TCP connections closed at once because max-connections were open.",
                get(&self.tcp_refused),
            ),
        ] {
            write_family(out, name, kind, help, &plain(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_family_with_a_cumulative_histogram() {
        let m = RoughtimeMetrics::default();
        m.received.fetch_add(7, Ordering::Relaxed);
        m.sent(Version::Rfc1);
        m.sent(Version::Draft12);
        m.refuse(Refusal::TooShort, 2);
        m.batch(1);
        m.batch(3);
        m.batch(40);
        m.maxt.store(1_000, Ordering::Relaxed);
        let mut out = String::new();
        m.render(&mut out, 400);
        for line in [
            "authtime_roughtime_received_total 7",
            "authtime_roughtime_responses_total{version=\"1\"} 1",
            "authtime_roughtime_responses_total{version=\"0x8000000c\"} 1",
            "authtime_roughtime_dropped_total{reason=\"too_short\"} 2",
            "authtime_roughtime_dropped_total{reason=\"unsynchronized\"} 0",
            "authtime_roughtime_batch_size_bucket{le=\"1\"} 1",
            "authtime_roughtime_batch_size_bucket{le=\"4\"} 2",
            "authtime_roughtime_batch_size_bucket{le=\"32\"} 2",
            "authtime_roughtime_batch_size_bucket{le=\"64\"} 3",
            "authtime_roughtime_batch_size_bucket{le=\"+Inf\"} 3",
            "authtime_roughtime_batch_size_sum 44",
            "authtime_roughtime_batch_size_count 3",
            "authtime_roughtime_online_key_expiry_seconds 600",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing in\n{out}");
        }
        assert_eq!(m.dropped(Refusal::TooShort), 2);
    }

    #[test]
    fn core_errors_map_to_reasons() {
        assert_eq!(
            Refusal::from_error(&Error::RequestTooShort(5)),
            Refusal::TooShort
        );
        assert_eq!(
            Refusal::from_error(&Error::UnknownServerKey),
            Refusal::WrongSrv
        );
        assert_eq!(Refusal::from_error(&Error::BadMagic), Refusal::Malformed);
    }
}
