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
//! [`MAX_DELAY_NS`]. Until a window's median is within [`SETTLED_NS`] of zero
//! the worker samples every basic reply ([`Compensation::warming_up`]): a
//! server that has just started, or whose send path has just changed (a
//! different mix of work, a busier machine), serves centred timestamps again
//! after a few dozen replies rather than after a few thousand. The first
//! reply a worker sends after it woke leaves later than the ones after it
//! (cold caches): each [`Position`] has its own delay ([`SendPathDelay`]).

use authtime_wire::NtpTimestamp;

/// Samples per adjustment.
pub(crate) const WINDOW: usize = 128;
/// Largest delay added to a clock reading.
pub(crate) const MAX_DELAY_NS: i64 = 200_000;
/// A window whose median error is within this of zero leaves the delay
/// settled: sampling goes back to `ntp.accuracy-sample`.
pub(crate) const SETTLED_NS: i64 = 250;

/// One worker's learnt send-path delay.
#[derive(Debug, Clone)]
pub(crate) struct Compensation {
    enabled: bool,
    delay_ns: i64,
    window: [i64; WINDOW],
    filled: usize,
    settled: bool,
}

impl Compensation {
    pub(crate) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            delay_ns: 0,
            window: [0; WINDOW],
            filled: 0,
            settled: false,
        }
    }

    /// Whether the delay is still to be learnt (at start, or since a window
    /// found it off by more than [`SETTLED_NS`]): then every basic reply is
    /// worth a sample.
    pub(crate) fn warming_up(&self) -> bool {
        self.enabled && !self.settled
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
            self.settled = median.abs() <= SETTLED_NS;
        }
    }
}

/// Where a reply stands in the worker's batch: the first send after the
/// worker woke up runs on cold caches and takes longer than the ones right
/// after it (5 µs against 1.6 µs on loopback here), so each learns its own
/// delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Position {
    /// The first reply sent after a receive.
    First = 0,
    /// Any later reply of the same batch.
    Later = 1,
}

/// Stamped basic replies whose samples are still to come back, to tell
/// which [`Position`] a sample belongs to (the stamp comes back with the
/// reply, whose receive timestamp finds it here).
const PENDING: usize = 128;

/// A worker's send-path delays, one per [`Position`].
#[derive(Debug, Clone)]
pub(crate) struct SendPathDelay {
    positions: [Compensation; 2],
    pending: [(u64, Position); PENDING],
    next: usize,
}

impl SendPathDelay {
    pub(crate) fn new(enabled: bool) -> Self {
        Self {
            positions: [Compensation::new(enabled), Compensation::new(enabled)],
            pending: [(0, Position::First); PENDING],
            next: 0,
        }
    }

    /// Nanoseconds to add to a clock reading for a basic reply at `at`.
    pub(crate) fn delay_ns(&self, at: Position) -> i64 {
        self.positions[at as usize].delay_ns()
    }

    /// Whether every basic reply at `at` is worth a sample now.
    pub(crate) fn warming_up(&self, at: Position) -> bool {
        self.positions[at as usize].warming_up()
    }

    /// A basic reply carrying receive timestamp `t2`, sent at `at`, asked
    /// for its transmit timestamp.
    pub(crate) fn stamped(&mut self, t2: NtpTimestamp, at: Position) {
        self.pending[self.next] = (t2.to_bits(), at);
        self.next = (self.next + 1) % PENDING;
    }

    /// The measured error of the basic reply that carried `t2`; a sample
    /// whose reply is no longer remembered (more than [`PENDING`] stamps
    /// outstanding) is left out.
    pub(crate) fn record(&mut self, t2: NtpTimestamp, error_ns: i64) {
        let bits = t2.to_bits();
        // Newest first: a stamp comes back right after its batch.
        // The ring runs from `next` (oldest) round to `next - 1` (newest).
        let (newest, oldest) = self.pending.split_at_mut(self.next);
        if let Some(slot) = oldest
            .iter_mut()
            .chain(newest.iter_mut())
            .rev()
            .find(|(t, _)| *t == bits && bits != 0)
        {
            let at = slot.1;
            slot.0 = 0;
            self.positions[at as usize].record(error_ns);
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
    fn sampling_is_boosted_until_a_window_is_centred() {
        let mut c = Compensation::new(true);
        for _ in 0..WINDOW {
            assert!(c.warming_up());
            c.record(1_000);
        }
        // The first window moved the delay by 1 µs: not settled yet.
        assert_eq!(c.delay_ns(), 1_000);
        assert!(c.warming_up());
        for _ in 0..WINDOW {
            c.record(100);
        }
        assert!(!c.warming_up());
        // The send path gets slower by 2 µs: boosted again, then settled.
        for _ in 0..WINDOW {
            c.record(2_000);
        }
        assert!(c.warming_up());
        for _ in 0..WINDOW {
            c.record(-50);
        }
        assert!(!c.warming_up());
        assert_eq!(c.delay_ns(), 1_000 + 100 + 2_000 - 50);
        assert!(!Compensation::new(false).warming_up());
    }

    #[test]
    fn each_position_learns_its_own_delay() {
        let mut d = SendPathDelay::new(true);
        for i in 0..4 * WINDOW as u64 {
            let first = NtpTimestamp::from_bits(2 * i + 1);
            let later = NtpTimestamp::from_bits(2 * i + 3_000_001);
            d.stamped(first, Position::First);
            d.stamped(later, Position::Later);
            d.record(later, 1_600 - d.delay_ns(Position::Later));
            d.record(first, 5_000 - d.delay_ns(Position::First));
            // A stamp of a reply not remembered changes nothing.
            d.record(NtpTimestamp::from_bits(99), 1_000_000);
        }
        assert_eq!(d.delay_ns(Position::First), 5_000);
        assert_eq!(d.delay_ns(Position::Later), 1_600);
        assert!(!d.warming_up(Position::First) && !d.warming_up(Position::Later));
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
