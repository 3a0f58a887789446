//! What one step of the NTS load generator ([`crate::load_nts`]) counted:
//! latencies (exact percentiles over every kept sample) and failures in the
//! NTS paper's classes.

use std::time::Duration;

use serde::Serialize;

use crate::load_nts::Mode;

/// Failures of one kind of request, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ErrorCounts {
    /// No answer within the timeout.
    pub timeout: u64,
    /// TCP connection refused, or an ICMP port unreachable for a datagram.
    pub refused: u64,
    /// Connection reset or closed by the server before the end.
    pub reset: u64,
    /// TLS handshake failed (certificate, version, ALPN).
    pub tls: u64,
    /// The server answered NTS-KE with an error, or with records we refuse.
    pub ke_refused: u64,
    /// NTS NAK (the server could not use the cookie).
    pub nak: u64,
    /// A reply whose authenticator or unique identifier did not check out.
    pub bad_auth: u64,
    /// Kiss-o'-Death (stratum 0) replies.
    pub kiss: u64,
    /// The kernel refused to send.
    pub send: u64,
    /// No cookie to send with (no NTS-KE session had succeeded).
    pub no_cookie: u64,
    /// Not sent: the generator's cap on open NTS-KE connections was reached.
    pub generator_cap: u64,
    /// Anything else.
    pub other: u64,
}

impl ErrorCounts {
    /// All failures.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.timeout
            + self.refused
            + self.reset
            + self.tls
            + self.ke_refused
            + self.nak
            + self.bad_auth
            + self.kiss
            + self.send
            + self.no_cookie
            + self.generator_cap
            + self.other
    }

    /// The classes that occurred, largest first: `reset 199, timeout 2`
    /// (empty when there was no failure).
    #[must_use]
    pub fn breakdown(&self) -> String {
        let mut classes = [
            ("timeout", self.timeout),
            ("refused", self.refused),
            ("reset", self.reset),
            ("tls", self.tls),
            ("ke-refused", self.ke_refused),
            ("nak", self.nak),
            ("bad-auth", self.bad_auth),
            ("kiss", self.kiss),
            ("send", self.send),
            ("no-cookie", self.no_cookie),
            ("generator-cap", self.generator_cap),
            ("other", self.other),
        ];
        classes.sort_by_key(|c| std::cmp::Reverse(c.1));
        classes
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod breakdown_tests {
    use super::ErrorCounts;

    #[test]
    fn the_breakdown_lists_the_classes_that_occurred_largest_first() {
        let counts = ErrorCounts {
            reset: 199,
            timeout: 2,
            ..ErrorCounts::default()
        };
        assert_eq!(counts.breakdown(), "reset 199, timeout 2");
        assert_eq!(ErrorCounts::default().breakdown(), "");
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Mean (the paper's Table II gives means).
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 95th percentile.
    pub p95_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest.
    pub max_us: f64,
    /// The sorted samples, when kept (for CDF plots; not in the JSON).
    #[serde(skip)]
    pub samples_us: Vec<u32>,
}

impl Percentiles {
    /// Summarizes `samples` (sorted in place); keeps them when `keep`.
    #[must_use]
    pub fn of(mut samples: Vec<u32>, keep: bool) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_unstable();
        let at = |q: f64| f64::from(samples[((samples.len() - 1) as f64 * q).round() as usize]);
        let sum: u64 = samples.iter().map(|&s| u64::from(s)).sum();
        Self {
            count: samples.len() as u64,
            mean_us: sum as f64 / samples.len() as f64,
            p50_us: at(0.5),
            p95_us: at(0.95),
            p99_us: at(0.99),
            max_us: at(1.0),
            samples_us: if keep { samples } else { Vec::new() },
        }
    }
}

/// Raw counts of one step, filled by the generator's tasks.
#[derive(Debug, Default)]
pub struct Tally {
    /// d_CKE of the successful key exchanges, µs.
    pub ke_us: Vec<u32>,
    /// Their TCP connect and TLS handshake part, µs.
    pub ke_handshake_us: Vec<u32>,
    /// d_CNTS or d_CNTP of the successful NTP exchanges, µs.
    pub ntp_us: Vec<u32>,
    /// Key-exchange failures.
    pub ke_errors: ErrorCounts,
    /// NTP-exchange failures.
    pub ntp_errors: ErrorCounts,
    /// Datagrams that matched no request.
    pub unmatched: u64,
    /// ICMP port-unreachable errors seen by the receivers.
    pub icmp_refused: u64,
    /// NTS exchanges that reused a cookie (the pool was low).
    pub cookies_reused: u64,
    /// T3 offsets of the answered NTP exchanges that came with a kernel
    /// receive timestamp: receive time − T3, ns.
    pub t3_offsets_ns: Vec<i32>,
}

/// What one step measured.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// What each request did.
    pub mode: Mode,
    /// Offered rate, requests per second (NTS-NTP exchanges in NTS mode).
    pub rate: f64,
    /// Seconds of sending asked for.
    pub duration_s: f64,
    /// Requests scheduled.
    pub scheduled: u64,
    /// Seconds the scheduler took to dispatch them.
    pub dispatch_s: f64,
    /// Key exchanges completed.
    pub ke_ok: u64,
    /// Key-exchange failures by cause.
    pub ke_errors: ErrorCounts,
    /// Share of key exchanges that failed.
    pub ke_error_share: f64,
    /// d_CKE, whole key exchanges.
    pub d_cke: Percentiles,
    /// The TCP and TLS handshake part of d_CKE.
    pub ke_handshake: Percentiles,
    /// NTP exchanges answered and checked.
    pub ntp_ok: u64,
    /// NTP-exchange failures by cause.
    pub ntp_errors: ErrorCounts,
    /// Share of NTP exchanges that failed.
    pub ntp_error_share: f64,
    /// d_CNTS (NTS mode) or d_CNTP (plain mode).
    pub d_ntp: Percentiles,
    /// Datagrams that matched no request.
    pub unmatched: u64,
    /// ICMP port-unreachable errors seen.
    pub icmp_refused: u64,
    /// NTS exchanges that reused a cookie.
    pub cookies_reused: u64,
    /// Requests that started more than 1 ms after their scheduled time.
    pub late_starts: u64,
    /// The worst start delay, ms.
    pub max_lag_ms: f64,
    /// A request started more than 20 ms late: the generator limited this step.
    pub fell_behind: bool,
    /// CPU time of the generator's process ÷ wall time of the step (1.0 = one core busy).
    pub generator_cpu: f64,
    /// How early the replies' T3 was (the kernel's receive time of the
    /// reply − its T3; one clock on one machine), over the answered
    /// exchanges with a receive timestamp; `None` without any.
    pub t3_offset: Option<crate::load_ntp_accuracy::OffsetStats>,
}

impl StepReport {
    /// Share of all requests (key exchanges and NTP exchanges) that failed.
    #[must_use]
    pub fn error_share(&self) -> f64 {
        let errors = self.ke_errors.total() + self.ntp_errors.total();
        let all = errors + self.ke_ok + self.ntp_ok;
        if all == 0 {
            0.0
        } else {
            errors as f64 / all as f64
        }
    }

    /// The latency the step is judged by: d_CKE for key exchanges, else the NTP exchange's.
    #[must_use]
    pub fn primary(&self) -> &Percentiles {
        match self.mode {
            Mode::Ke => &self.d_cke,
            _ => &self.d_ntp,
        }
    }
}

fn share(errors: u64, ok: u64) -> f64 {
    if errors + ok == 0 {
        0.0
    } else {
        errors as f64 / (errors + ok) as f64
    }
}

impl Tally {
    /// The report of a finished step.
    #[allow(clippy::too_many_arguments, reason = "one call site, all plain data")]
    #[must_use]
    pub fn report(
        self,
        mode: Mode,
        rate: f64,
        duration: Duration,
        dispatch: Duration,
        late_starts: u64,
        max_lag: Duration,
        fell_behind: bool,
        generator_cpu: f64,
        keep: bool,
    ) -> StepReport {
        let ke_ok = self.ke_us.len() as u64;
        let ntp_ok = self.ntp_us.len() as u64;
        StepReport {
            mode,
            rate,
            duration_s: duration.as_secs_f64(),
            scheduled: (rate * duration.as_secs_f64()).ceil().max(1.0) as u64,
            dispatch_s: dispatch.as_secs_f64(),
            ke_ok,
            ke_errors: self.ke_errors,
            ke_error_share: share(self.ke_errors.total(), ke_ok),
            d_cke: Percentiles::of(self.ke_us, keep),
            ke_handshake: Percentiles::of(self.ke_handshake_us, false),
            ntp_ok,
            ntp_errors: self.ntp_errors,
            ntp_error_share: share(self.ntp_errors.total(), ntp_ok),
            d_ntp: Percentiles::of(self.ntp_us, keep),
            unmatched: self.unmatched,
            icmp_refused: self.icmp_refused,
            cookies_reused: self.cookies_reused,
            late_starts,
            max_lag_ms: max_lag.as_secs_f64() * 1e3,
            fell_behind,
            generator_cpu,
            t3_offset: (!self.t3_offsets_ns.is_empty())
                .then(|| crate::load_ntp_accuracy::OffsetStats::of(self.t3_offsets_ns)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_exact() {
        let p = Percentiles::of((1..=100).rev().collect(), true);
        assert_eq!(p.count, 100);
        assert!((p.mean_us - 50.5).abs() < 1e-9);
        assert_eq!(
            (p.p50_us, p.p95_us, p.p99_us, p.max_us),
            (51.0, 95.0, 99.0, 100.0)
        );
        assert_eq!(p.samples_us.first(), Some(&1));
        assert_eq!(Percentiles::of(vec![], true).count, 0);
    }
}
