//! The state of the clock served, shared with the workers.
//!
//! One thread reads the source ([`run`], at least once a second) and
//! publishes a [`Snapshot`]; a worker copies the snapshot only when its
//! generation number changes (once per reading, not per packet) and computes
//! the announcement for each batch from its own copy and the current time, so
//! the root dispersion grows between readings and nothing on the packet path
//! waits for a lock held by the reader.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use authtime_clock::announce::is_leap_second_day;
use authtime_clock::{
    AnnouncePolicy, Announcement, LeapScope, LeapWarning, Snapshot, SourceReading, announce,
};
use authtime_proto::ServerConfig;
use authtime_wire::UnixTime;

use crate::clock::source::SourceReader;
use crate::config::clock::{ClockSettings, UnsyncPolicy};
use crate::metrics::lock;

/// Read failures are logged at most this often.
const ERROR_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// The clock state every worker reads.
#[derive(Debug)]
pub struct ClockState {
    generation: AtomicU64,
    snapshot: Mutex<Snapshot>,
    policy: AnnouncePolicy,
    unsynchronized: UnsyncPolicy,
    description: String,
    read_errors: AtomicU64,
    transitions: AtomicU64,
    /// Set when the clock was stepped: the snapshot's age, measured on the
    /// real-time clock, is meaningless across a step, so the source is read
    /// again at once.
    refresh: AtomicBool,
}

impl ClockState {
    /// A state for `reader`, read once now so that the first reply is right.
    #[must_use]
    pub fn start(
        reader: &SourceReader,
        policy: AnnouncePolicy,
        unsynchronized: UnsyncPolicy,
    ) -> Self {
        let now = crate::clock::now_unix();
        let unread = Snapshot::unread(reader.kind(), now);
        let snapshot = match reader.read(now) {
            Ok(reading) => unread.with_reading(reading, now),
            Err(e) => {
                tracing::warn!(source = %reader, error = %e, "cannot read the clock state");
                unread.with_failure(now)
            }
        };
        Self {
            generation: AtomicU64::new(1),
            snapshot: Mutex::new(snapshot),
            policy,
            unsynchronized,
            description: reader.to_string(),
            read_errors: AtomicU64::new(0),
            transitions: AtomicU64::new(0),
            refresh: AtomicBool::new(false),
        }
    }

    /// Asks the refresher to read the source now (after a clock step).
    pub fn request_refresh(&self) {
        self.refresh.store(true, Ordering::Relaxed);
    }

    /// The latest snapshot.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        *lock(&self.snapshot)
    }

    /// What the server announces at `now`.
    #[must_use]
    pub fn announce(&self, now: UnixTime) -> Announcement {
        announce(&self.snapshot(), now, &self.policy)
    }

    /// What requests get while unsynchronized.
    #[must_use]
    pub fn unsynchronized_policy(&self) -> UnsyncPolicy {
        self.unsynchronized
    }

    /// The source, as the operator configured it.
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    fn publish(&self, snapshot: Snapshot) {
        *lock(&self.snapshot) = snapshot;
        self.generation.fetch_add(1, Ordering::Release);
    }
}

/// A worker's copy of the snapshot.
#[derive(Debug)]
pub(crate) struct ClockView {
    generation: u64,
    snapshot: Snapshot,
}

impl ClockView {
    pub(crate) fn new(state: &ClockState) -> Self {
        Self {
            generation: state.generation.load(Ordering::Acquire),
            snapshot: state.snapshot(),
        }
    }

    /// The announcement at `now`, copying the snapshot only when it changed.
    pub(crate) fn announce(&mut self, state: &ClockState, now: UnixTime) -> Announcement {
        let generation = state.generation.load(Ordering::Acquire);
        if generation != self.generation {
            self.snapshot = state.snapshot();
            self.generation = generation;
        }
        announce(&self.snapshot, now, &state.policy)
    }
}

/// `config` with the clock fields of `announcement`.
#[must_use]
pub fn apply(config: ServerConfig, announcement: &Announcement) -> ServerConfig {
    ServerConfig {
        leap: announcement.leap,
        stratum: announcement.stratum,
        reference_id: announcement.reference_id,
        reference_ts: announcement.reference_ts,
        root_delay: announcement.root_delay,
        root_dispersion: announcement.root_dispersion,
        ..config
    }
}

/// Resolves the source of `settings`, logs its start-up warnings, reads it
/// once, and starts the thread that keeps reading it until `stop`.
///
/// # Errors
/// The source cannot be used (an unreadable leap-seconds list), or no thread.
pub fn start_refresher(
    settings: &ClockSettings,
    stop: Arc<AtomicBool>,
) -> Result<(Arc<ClockState>, std::thread::JoinHandle<()>), String> {
    let (reader, warnings) = SourceReader::resolve(&settings.source)?;
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    let state = Arc::new(ClockState::start(
        &reader,
        settings.policy,
        settings.unsynchronized,
    ));
    let interval = settings.poll_interval;
    let thread = {
        let state = Arc::clone(&state);
        std::thread::Builder::new()
            .name("clock-state".into())
            .spawn(move || run(&state, &reader, interval, &stop))
            .map_err(|e| format!("cannot start the clock-state thread: {e}"))?
    };
    Ok((state, thread))
}

/// Reads the source every `interval` until `stop`, publishing each snapshot
/// and logging every change between synchronized and unsynchronized.
pub(crate) fn run(
    state: &ClockState,
    reader: &SourceReader,
    interval: Duration,
    stop: &AtomicBool,
) {
    let mut synchronized = state.announce(crate::clock::now_unix()).is_synchronized();
    log_state(state, synchronized, true);
    let mut last_error_log: Option<Instant> = None;
    let mut warned_leap_day = false;
    while !stop.load(Ordering::Relaxed) {
        // Short naps, so that a stop is seen within 50 ms.
        let wake = Instant::now() + interval;
        while Instant::now() < wake
            && !stop.load(Ordering::Relaxed)
            && !state.refresh.swap(false, Ordering::Relaxed)
        {
            std::thread::sleep((wake - Instant::now()).min(Duration::from_millis(50)));
        }
        let now = crate::clock::now_unix();
        let snapshot = match reader.read(now) {
            Ok(reading) => {
                warn_leap_day(&reading, now, &mut warned_leap_day);
                state.snapshot().with_reading(reading, now)
            }
            Err(e) => {
                state.read_errors.fetch_add(1, Ordering::Relaxed);
                if last_error_log.is_none_or(|t| t.elapsed() >= ERROR_LOG_INTERVAL) {
                    tracing::warn!(source = %reader, error = %e, "cannot read the clock state");
                    last_error_log = Some(Instant::now());
                }
                state.snapshot().with_failure(now)
            }
        };
        state.publish(snapshot);
        let now_synchronized = state.announce(now).is_synchronized();
        if now_synchronized != synchronized {
            synchronized = now_synchronized;
            state.transitions.fetch_add(1, Ordering::Relaxed);
            log_state(state, synchronized, false);
        }
    }
}

fn log_state(state: &ClockState, synchronized: bool, at_start: bool) {
    let a = state.announce(crate::clock::now_unix());
    let when = if at_start { "at start" } else { "now" };
    match (synchronized, a.unsynchronized) {
        (false, Some(cause)) => tracing::warn!(
            source = %state.description,
            "the clock is {when} announced as UNSYNCHRONIZED (leap 3, stratum 0): {cause}"
        ),
        _ => tracing::info!(
            source = %state.description,
            stratum = a.stratum,
            reference_id = %a.reference_id,
            root_delay = a.root_delay.as_seconds_f64(),
            root_dispersion = a.root_dispersion.as_seconds_f64(),
            "the clock is {when} announced as synchronized"
        ),
    }
}

/// The kernel applies `STA_INS`/`STA_DEL` tonight: set on a day that is not
/// 30 June or 31 December, that is a mistake of whoever set it.
fn warn_leap_day(reading: &SourceReading, now: UnixTime, warned: &mut bool) {
    if let SourceReading::Synchronized(r) = reading
        && r.leap != LeapWarning::None
        && r.leap_scope == LeapScope::EndOfToday
        && !is_leap_second_day(now)
        && !*warned
    {
        *warned = true;
        tracing::warn!(
            leap = ?r.leap,
            "a leap second is announced for tonight, which is not 30 June or 31 December"
        );
    }
}

/// The clock families of the metrics page.
pub(crate) fn render_metrics(state: &Arc<ClockState>, out: &mut String) {
    let now = crate::clock::now_unix();
    let snapshot = state.snapshot();
    let a = announce(&snapshot, now, &state.policy);
    let age = (now.as_nanos() - snapshot.read_at.as_nanos()) as f64 / 1e9;
    let gauge = |out: &mut String, name: &str, help: &str, value: String| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
        );
    };
    gauge(
        out,
        "authtime_clock_synchronized",
        "1 while the clock is announced as synchronized.",
        u8::from(a.is_synchronized()).to_string(),
    );
    gauge(
        out,
        "authtime_clock_leap_indicator",
        "Leap indicator announced (3: unsynchronized).",
        a.leap.to_bits().to_string(),
    );
    gauge(
        out,
        "authtime_clock_stratum",
        "Stratum announced (0: unsynchronized).",
        a.stratum.to_string(),
    );
    let _ = writeln!(
        out,
        "# HELP authtime_clock_reference_id Reference id announced, as a number and as a label.\n\
         # TYPE authtime_clock_reference_id gauge\n\
         authtime_clock_reference_id{{reference_id=\"{}\"}} {}",
        a.reference_id,
        a.reference_id.to_u32()
    );
    gauge(
        out,
        "authtime_clock_root_delay_seconds",
        "Root delay announced.",
        format!("{}", a.root_delay.as_seconds_f64()),
    );
    gauge(
        out,
        "authtime_clock_root_dispersion_seconds",
        "Root dispersion announced (grows by 15 us/s between readings).",
        format!("{}", a.root_dispersion.as_seconds_f64()),
    );
    let _ = writeln!(
        out,
        "# HELP authtime_clock_source_info The clock-state source.\n# TYPE authtime_clock_source_info gauge\n\
         authtime_clock_source_info{{source=\"{}\"}} 1",
        snapshot.source
    );
    gauge(
        out,
        "authtime_clock_source_age_seconds",
        "Seconds since the source was last read successfully.",
        format!("{age:.3}"),
    );
    let _ = writeln!(
        out,
        "# HELP authtime_clock_source_errors_total Failed readings of the clock-state source.\n\
         # TYPE authtime_clock_source_errors_total counter\nauthtime_clock_source_errors_total {}\n\
         # HELP authtime_clock_transitions_total Changes between synchronized and unsynchronized.\n\
         # TYPE authtime_clock_transitions_total counter\nauthtime_clock_transitions_total {}",
        state.read_errors.load(Ordering::Relaxed),
        state.transitions.load(Ordering::Relaxed),
    );
}

#[cfg(test)]
mod tests {
    use authtime_clock::kernel_timex::Declared;
    use authtime_wire::{LeapIndicator, ReferenceId};

    use super::*;
    use crate::config::clock::StaticClock;

    fn static_reader(stratum: u8) -> SourceReader {
        SourceReader::Static {
            clock: StaticClock {
                declared: Declared {
                    stratum,
                    reference_id: ReferenceId(*b"GPS\0"),
                },
                root_delay: 0.0,
                root_dispersion: 0.001,
                leap_seconds_list: None,
            },
            leap_list: None,
        }
    }

    #[test]
    fn workers_see_a_new_snapshot_and_the_config_takes_its_fields() {
        let state = ClockState::start(
            &static_reader(1),
            AnnouncePolicy::default(),
            UnsyncPolicy::Answer,
        );
        let mut view = ClockView::new(&state);
        let now = crate::clock::now_unix();
        let a = view.announce(&state, now);
        assert_eq!((a.stratum, a.leap), (1, LeapIndicator::NoWarning));
        let config = apply(ServerConfig::default(), &a);
        assert_eq!(config.reference_id, ReferenceId(*b"GPS\0"));
        assert!(config.reference_ts.seconds() > 0);

        let unsync = state.snapshot().with_reading(
            SourceReading::Unsynchronized(authtime_clock::UnsyncCause::ChronyNotSynchronised),
            now,
        );
        state.publish(unsync);
        let a = view.announce(&state, now);
        assert_eq!((a.stratum, a.leap), (0, LeapIndicator::Unsynchronized));
        let config = apply(ServerConfig::default(), &a);
        assert_eq!(config.root_delay.to_bits(), 0x1_0000);
        assert_eq!(
            config.check(),
            Ok(()),
            "an unsynchronized announcement is a valid config"
        );
    }

    #[test]
    fn a_refresh_request_reads_the_source_at_once_not_at_the_next_poll() {
        let state = Arc::new(ClockState::start(
            &static_reader(1),
            AnnouncePolicy::default(),
            UnsyncPolicy::Answer,
        ));
        // A reading that is, after a step of the clock, ten years old.
        let now = crate::clock::now_unix();
        let stepped = UnixTime::new(now.secs + 315_532_800, now.nanos);
        assert!(!state.announce(stepped).is_synchronized());
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop) = (Arc::clone(&state), Arc::clone(&stop));
            // A poll interval far longer than the test waits.
            std::thread::spawn(move || {
                run(&state, &static_reader(1), Duration::from_secs(600), &stop)
            })
        };
        let before = state.generation.load(Ordering::Relaxed);
        state.request_refresh();
        let deadline = Instant::now() + Duration::from_secs(5);
        while state.generation.load(Ordering::Relaxed) == before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        // Read before the stop (a stopping refresher reads once more).
        let read_again = state.generation.load(Ordering::Relaxed) != before;
        stop.store(true, Ordering::Relaxed);
        thread.join().expect("refresher");
        assert!(read_again, "not read again within 5 s");
        assert!(state.announce(crate::clock::now_unix()).is_synchronized());
    }

    #[test]
    fn metrics_show_the_announcement() {
        let state = Arc::new(ClockState::start(
            &static_reader(1),
            AnnouncePolicy::default(),
            UnsyncPolicy::Answer,
        ));
        let mut out = String::new();
        render_metrics(&state, &mut out);
        for line in [
            "authtime_clock_synchronized 1",
            "authtime_clock_stratum 1",
            "authtime_clock_leap_indicator 0",
            "authtime_clock_source_info{source=\"static\"} 1",
            "authtime_clock_reference_id{reference_id=\"GPS\"} 1196446464",
        ] {
            assert!(out.contains(line), "{line} missing from\n{out}");
        }
    }
}
