//! Medians and spreads of repeated measurements.

/// Median of `samples` (sorted in place); `None` when empty.
pub fn median(samples: &mut [f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    Some(if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    })
}

/// A rate measured several times.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Measured {
    /// Median over the runs, in items per CPU-second.
    pub median: f64,
    /// Smallest and largest run.
    pub min: f64,
    /// Largest run.
    pub max: f64,
    /// Number of runs.
    pub runs: usize,
}

impl Measured {
    /// Summarizes `samples`; `None` when empty.
    #[must_use]
    pub fn from_samples(mut samples: Vec<f64>) -> Option<Self> {
        let median = median(&mut samples)?;
        Some(Self {
            median,
            min: samples[0],
            max: samples[samples.len() - 1],
            runs: samples.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        let m = Measured::from_samples(vec![5.0, 1.0, 3.0]).expect("some");
        assert_eq!((m.median, m.min, m.max, m.runs), (3.0, 1.0, 5.0, 3));
    }
}
