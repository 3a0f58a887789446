//! When the NTP load generator's requests are due: evenly spaced, or as a
//! Poisson process (exponential gaps from a seeded generator, so that a run
//! can be repeated request for request).
//!
//! Poisson arrivals are the bursts a real server sees from many independent
//! clients: at an average gap of 1/rate, about a third of the gaps are under
//! half of it. A server that answers a burst in one batch shows there what
//! even spacing hides.

use serde::Serialize;

/// How requests are spaced in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Request `k` at `k / rate`.
    Even,
    /// Gaps drawn from an exponential distribution of mean `1 / rate`.
    Poisson,
}

impl Arrivals {
    /// The name the command line and the report use.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Even => "even",
            Self::Poisson => "poisson",
        }
    }
}

/// The due times of successive requests, in nanoseconds since the start.
#[derive(Debug, Clone)]
pub struct Schedule {
    arrivals: Arrivals,
    ns_per_request: f64,
    issued: u64,
    /// Poisson: the due time of the last request issued.
    at: f64,
    rng: SplitMix64,
}

impl Schedule {
    /// A schedule at `rate` requests per second (above 0); `seed` drives the
    /// Poisson gaps (the same seed gives the same gaps).
    #[must_use]
    pub fn new(arrivals: Arrivals, rate: f64, seed: u64) -> Self {
        Self {
            arrivals,
            ns_per_request: 1e9 / rate,
            issued: 0,
            at: 0.0,
            rng: SplitMix64(seed),
        }
    }

    /// The due time of the next request. The first is due at 0.
    pub fn next_ns(&mut self) -> u64 {
        let k = self.issued;
        self.issued += 1;
        match self.arrivals {
            Arrivals::Even => (k as f64 * self.ns_per_request) as u64,
            Arrivals::Poisson => {
                if k > 0 {
                    // Inverse transform: -ln(1 - u) with u in [0, 1) is
                    // exponential of mean 1 and never infinite.
                    self.at += -(1.0 - self.rng.next_unit()).ln() * self.ns_per_request;
                }
                self.at as u64
            }
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a small, fast generator of
/// uniform 64-bit values, good enough for arrival times and seedable with any
/// value. Not for anything secret.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 bits.
    fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_arrivals_are_evenly_spaced() {
        let mut s = Schedule::new(Arrivals::Even, 4000.0, 7);
        let due: Vec<u64> = (0..4).map(|_| s.next_ns()).collect();
        assert_eq!(due, [0, 250_000, 500_000, 750_000]);
    }

    #[test]
    fn poisson_arrivals_have_the_rate_and_the_spread_of_an_exponential() {
        let n = 200_000;
        let mut s = Schedule::new(Arrivals::Poisson, 10_000.0, 42);
        let due: Vec<u64> = (0..n).map(|_| s.next_ns()).collect();
        assert_eq!(due[0], 0);
        assert!(due.windows(2).all(|w| w[0] <= w[1]));
        let gaps: Vec<f64> = due.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!((mean - 100_000.0).abs() < 2_000.0, "{mean}");
        // An exponential's standard deviation equals its mean; P(gap < mean/2) = 1 - e^-0.5.
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((var.sqrt() / mean - 1.0).abs() < 0.03, "{}", var.sqrt());
        let short = gaps.iter().filter(|&&g| g < 50_000.0).count() as f64 / gaps.len() as f64;
        assert!((short - 0.3935).abs() < 0.01, "{short}");
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        let run = |seed| {
            let mut s = Schedule::new(Arrivals::Poisson, 1000.0, seed);
            (0..100).map(|_| s.next_ns()).collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }
}
