//! Medians of key generation, signing and verification time per scheme, for reports.
//! Reads the clock, so it belongs to tools and benchmarks, not to protocol code.

use std::time::{Duration, Instant};

use crate::{Scheme, SigningKey};

/// Median timings of one scheme.
#[derive(Clone, Copy, Debug)]
pub struct SchemeTimings {
    /// The scheme measured.
    pub scheme: Scheme,
    /// Median key generation time (for LMS: building the whole Merkle tree).
    pub keygen: Duration,
    /// Median signing time.
    pub sign: Duration,
    /// Median verification time.
    pub verify: Duration,
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// Times `runs` key generations, signatures and verifications of `message` (at least one
/// of each) and returns the medians. Panics never; a failed signature is simply not timed.
pub fn measure_timings(scheme: Scheme, message: &[u8], runs: usize) -> SchemeTimings {
    let runs = runs.max(1);
    let mut keygen = Vec::with_capacity(runs);
    let mut key = None;
    for i in 0..runs {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
        let start = Instant::now();
        let k = SigningKey::generate_from_seed(scheme, seed);
        keygen.push(start.elapsed());
        key = Some(k);
    }
    let mut sign = Vec::with_capacity(runs);
    let mut verify = Vec::with_capacity(runs);
    if let Some(mut key) = key {
        let public = key.verifying_key();
        for _ in 0..runs {
            let start = Instant::now();
            let Ok(signature) = key.sign(message) else {
                break;
            };
            sign.push(start.elapsed());
            let start = Instant::now();
            let valid = public.is_valid(message, &signature);
            verify.push(start.elapsed());
            debug_assert!(valid);
        }
    }
    SchemeTimings {
        scheme,
        keygen: median(keygen),
        sign: median(sign),
        verify: median(verify),
    }
}
