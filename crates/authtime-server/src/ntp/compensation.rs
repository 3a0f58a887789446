//! The send-path delay added to basic transmit timestamps, learnt from the
//! server's own measurements.
//!
//! A basic reply's T3 is the clock read just before its MAC and `sendmsg`;
//! the kernel's send path still takes a microsecond or more after that (more
//! when the worker has just woken and its caches are cold). The server
//! samples the kernel's transmit timestamp of some basic replies
//! (`ntp.accuracy-sample`) and knows, for each, how early the T3 it served
//! was. With `ntp.transmit-timestamp = "measured"`, every [`WINDOW`] samples
//! the median of those errors is added to the delay a worker adds to its
//! clock readings: the served errors then centre on zero, and keep doing so
//! as the machine's load changes. It corrects the delay the kernel's own
//! timestamps show, not an assumed one, and never by more than
//! [`MAX_DELAY_NS`]. Until the first window is full the worker samples every
//! basic reply ([`Compensation::warming_up`]), so that a server that has just
//! started serves centred timestamps after its first few dozen replies
//! rather than after a few thousand.

/// Samples per adjustment.
pub(crate) const WINDOW: usize = 32;
/// Largest delay added to a clock reading.
pub(crate) const MAX_DELAY_NS: i64 = 200_000;

/// One worker's learnt send-path delay.
#[derive(Debug, Clone)]
pub(crate) struct Compensation {
    enabled: bool,
    delay_ns: i64,
    window: [i64; WINDOW],
    filled: usize,
    adjusted: bool,
}

impl Compensation {
    pub(crate) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            delay_ns: 0,
            window: [0; WINDOW],
            filled: 0,
            adjusted: false,
        }
    }

    /// Whether the delay is still to be learnt: then every basic reply is
    /// worth a sample.
    pub(crate) fn warming_up(&self) -> bool {
        self.enabled && !self.adjusted
    }

    /// Nanoseconds to add to a clock reading for a basic transmit timestamp.
    pub(crate) fn delay_ns(&self) -> i64 {
        self.delay_ns
    }

    /// One measured error of a served T3 (kernel time − T3, nanoseconds).
    pub(crate) fn record(&mut self, error_ns: i64) {
        if !self.enabled {
            return;
        }
        self.window[self.filled] = error_ns;
        self.filled += 1;
        if self.filled == WINDOW {
            self.window.sort_unstable();
            let median = self.window[WINDOW / 2];
            self.delay_ns = self.delay_ns.saturating_add(median).clamp(0, MAX_DELAY_NS);
            self.filled = 0;
            self.adjusted = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A send path that takes `path` ns plus noise: the served error is
    /// `path + noise − delay`.
    fn run(c: &mut Compensation, path: i64, samples: usize, seed: &mut u64) -> Vec<i64> {
        (0..samples)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                let noise = (*seed % 600) as i64 - 300;
                let error = path + noise - c.delay_ns();
                c.record(error);
                error
            })
            .collect()
    }

    fn median(mut v: Vec<i64>) -> i64 {
        v.sort_unstable();
        v[v.len() / 2]
    }

    #[test]
    fn the_served_error_centres_on_zero_and_follows_the_path() {
        let mut c = Compensation::new(true);
        let mut seed = 0x1234_5678_9abc_def1;
        // Before the first window the clock reading is served as it is.
        let first = run(&mut c, 1_600, WINDOW - 1, &mut seed);
        assert!(median(first) > 1_000);
        let _ = run(&mut c, 1_600, 4 * WINDOW, &mut seed);
        let settled = run(&mut c, 1_600, 8 * WINDOW, &mut seed);
        assert!(median(settled).abs() < 200, "{}", c.delay_ns());
        // The machine gets slower: the delay follows.
        let _ = run(&mut c, 5_000, 4 * WINDOW, &mut seed);
        let settled = run(&mut c, 5_000, 8 * WINDOW, &mut seed);
        assert!(median(settled).abs() < 200, "{}", c.delay_ns());
    }

    #[test]
    fn warming_up_ends_with_the_first_window() {
        let mut c = Compensation::new(true);
        for _ in 0..WINDOW - 1 {
            assert!(c.warming_up());
            c.record(1_000);
        }
        assert!(c.warming_up());
        c.record(1_000);
        assert!(!c.warming_up());
        assert_eq!(c.delay_ns(), 1_000);
        assert!(!Compensation::new(false).warming_up());
    }

    #[test]
    fn the_delay_is_bounded_and_off_means_off() {
        let mut c = Compensation::new(true);
        for _ in 0..100 * WINDOW {
            c.record(10_000_000);
        }
        assert_eq!(c.delay_ns(), MAX_DELAY_NS);
        for _ in 0..100 * WINDOW {
            c.record(-10_000_000);
        }
        assert_eq!(c.delay_ns(), 0);
        let mut off = Compensation::new(false);
        for _ in 0..10 * WINDOW {
            off.record(5_000);
        }
        assert_eq!(off.delay_ns(), 0);
    }
}
