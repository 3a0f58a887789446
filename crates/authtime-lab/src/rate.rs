//! Measuring how many operations per CPU-second a closure performs.

use std::time::Duration;

use crate::{cpu_time::thread_cpu_time, stats::Measured};

/// How long and how often to measure.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// CPU time per run.
    pub per_run: Duration,
    /// Number of runs; the median is reported.
    pub runs: usize,
}

impl Budget {
    /// The budget of `--quick`: 5 runs of 20 ms.
    pub const QUICK: Budget = Budget {
        per_run: Duration::from_millis(20),
        runs: 5,
    };
    /// The full budget: 7 runs of 200 ms.
    pub const FULL: Budget = Budget {
        per_run: Duration::from_millis(200),
        runs: 7,
    };
}

/// Calls `op` (which performs `items_per_call` items, e.g. packets) repeatedly
/// for `budget.per_run` of thread CPU time, `budget.runs` times, and returns
/// items per CPU-second. The first run is preceded by a warm-up call.
pub fn measure(budget: Budget, items_per_call: usize, mut op: impl FnMut()) -> Measured {
    op();
    let mut samples = Vec::with_capacity(budget.runs);
    for _ in 0..budget.runs.max(1) {
        let mut calls = 0u64;
        let mut batch = 1u64;
        let start = thread_cpu_time();
        loop {
            for _ in 0..batch {
                op();
            }
            calls += batch;
            let elapsed = thread_cpu_time() - start;
            if elapsed >= budget.per_run {
                samples.push(calls as f64 * items_per_call as f64 / elapsed.as_secs_f64());
                break;
            }
            // Grow the batch so that the clock is read rarely for fast operations.
            if batch < 1 << 20 {
                batch *= 2;
            }
        }
    }
    Measured::from_samples(samples).unwrap_or(Measured {
        median: 0.0,
        min: 0.0,
        max: 0.0,
        runs: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_known_ratio() {
        let budget = Budget {
            per_run: Duration::from_millis(10),
            runs: 3,
        };
        let work = |n: u64| {
            let mut x = 0u64;
            for i in 0..n {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            x
        };
        let fast = measure(budget, 1, || {
            std::hint::black_box(work(1000));
        });
        let slow = measure(budget, 1, || {
            std::hint::black_box(work(8000));
        });
        let ratio = fast.median / slow.median;
        // 8x the work; a shared machine adds noise, so only the order is checked loosely.
        assert!((3.0..20.0).contains(&ratio), "ratio {ratio}");
    }
}
