//! Notices steps of the system clock while serving: every
//! [`WATCH_INTERVAL`] the change of the real-time clock is compared with the
//! change of the monotonic clock over the same span; a difference beyond
//! [`STEP_THRESHOLD`] is a step, logged once (with its size) and counted
//! (`authtime_clock_steps_total`), and the clock state is read again at once
//! (its snapshot's age is measured on the real-time clock, so a step forward
//! would age it into "unsynchronized"). Otherwise every protocol reads the
//! clock afresh for each answer and each key decision (see
//! docs/clock-steps.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::clock::state::ClockState;

/// How often the two clocks are compared.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(200);

/// A difference between the real-time and the monotonic change larger than
/// this is a step (a slew changes the rate by at most 500 ppm, i.e. 0.1 ms
/// per 200 ms).
pub const STEP_THRESHOLD: Duration = Duration::from_millis(500);

/// Steps seen so far, for the metrics endpoint.
#[derive(Debug, Default)]
pub struct StepCounter {
    steps: AtomicU64,
}

impl StepCounter {
    /// Steps seen.
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.steps.load(Ordering::Relaxed)
    }

    /// Appends the counter in Prometheus text format.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "# HELP authtime_clock_steps_total Steps of the system clock seen while serving (real-time clock moved more than 0.5 s away from the monotonic clock).\n# TYPE authtime_clock_steps_total counter\nauthtime_clock_steps_total {}",
            self.steps()
        );
    }
}

/// Nanoseconds of the real-time clock since the Unix epoch (negative before).
fn realtime_ns() -> i128 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i128::try_from(d.as_nanos()).unwrap_or(i128::MAX),
        Err(e) => -i128::try_from(e.duration().as_nanos()).unwrap_or(i128::MAX),
    }
}

/// The step between two readings of both clocks, in nanoseconds (positive:
/// the real-time clock jumped forward), when it is beyond the threshold.
#[must_use]
pub fn step_between(
    real_before: i128,
    mono_before: Instant,
    real_after: i128,
    mono_after: Instant,
) -> Option<i128> {
    let mono = i128::try_from(mono_after.saturating_duration_since(mono_before).as_nanos())
        .unwrap_or(i128::MAX);
    let step = real_after.saturating_sub(real_before).saturating_sub(mono);
    let threshold = i128::try_from(STEP_THRESHOLD.as_nanos()).unwrap_or(i128::MAX);
    (step.abs() > threshold).then_some(step)
}

/// Starts the watching thread.
///
/// # Errors
///
/// When the thread cannot be started.
pub fn start(
    clock: Arc<ClockState>,
    stop: Arc<AtomicBool>,
) -> Result<(Arc<StepCounter>, std::thread::JoinHandle<()>), String> {
    let counter = Arc::new(StepCounter::default());
    let thread = {
        let counter = Arc::clone(&counter);
        std::thread::Builder::new()
            .name("clock-steps".into())
            .spawn(move || run(&counter, &clock, &stop))
            .map_err(|e| format!("cannot start the clock-step thread: {e}"))?
    };
    Ok((counter, thread))
}

/// Both clocks read together: the real-time clock between two monotonic
/// reads, `None` when the thread was held up between them for more than
/// 50 ms (a preempted read would look like a step).
fn read_both() -> Option<(i128, Instant)> {
    let before = Instant::now();
    let real = realtime_ns();
    let after = Instant::now();
    (after.saturating_duration_since(before) <= Duration::from_millis(50)).then_some((real, before))
}

fn run(counter: &StepCounter, clock: &ClockState, stop: &AtomicBool) {
    let mut last = read_both();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(WATCH_INTERVAL);
        let Some((real_now, mono_now)) = read_both() else {
            continue;
        };
        if let Some((real, mono)) = last
            && let Some(step) = step_between(real, mono, real_now, mono_now)
        {
            // The clock state's snapshot aged by the step (a reading "ten
            // years old" announces unsynchronized): read the source again.
            clock.request_refresh();
            counter.steps.fetch_add(1, Ordering::Relaxed);
            #[expect(clippy::cast_precision_loss, reason = "a log field")]
            let seconds = step as f64 / 1e9;
            tracing::warn!(
                step_seconds = seconds,
                "the system clock was stepped by {seconds:+.3} s; answers, NTS cookie keys and Roughtime online keys follow the new time"
            );
        }
        last = Some((real_now, mono_now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_beyond_the_threshold_either_way_are_seen_and_slews_are_not() {
        let m0 = Instant::now();
        let m1 = m0 + Duration::from_millis(200);
        let r0 = 1_000_000_000_000_i128;
        let r1 = r0 + 200_000_000;
        assert_eq!(step_between(r0, m0, r1, m1), None);
        assert_eq!(step_between(r0, m0, r1 + 100_000, m1), None);
        assert_eq!(
            step_between(r0, m0, r1 - 3_600_000_000_000, m1),
            Some(-3_600_000_000_000)
        );
        assert_eq!(
            step_between(r0, m0, r1 + 86_400_000_000_000, m1),
            Some(86_400_000_000_000)
        );
        assert_eq!(
            step_between(i128::MIN, m0, i128::MAX, m1).map(i128::signum),
            Some(1)
        );
    }
}
