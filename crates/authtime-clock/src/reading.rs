//! What a clock-state source reports, and the snapshot the daemon publishes.

use core::fmt;

use authtime_wire::{ReferenceId, UnixTime};

/// Where a reading comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKind {
    /// The host's chronyd, through its command socket (`tracking`).
    Chrony,
    /// An NTP daemon that disciplines this host's clock, asked with mode-3 requests.
    Ntp,
    /// The kernel's clock status (`adjtimex` read-only).
    Kernel,
    /// A declaration in the configuration (a lab, or a stratum-1 host).
    Static,
}

impl SourceKind {
    /// The name used in the configuration, logs and metrics.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Chrony => "chrony",
            Self::Ntp => "ntp",
            Self::Kernel => "kernel",
            Self::Static => "static",
        }
    }

    /// The kind named `name` in the configuration.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Chrony, Self::Ntp, Self::Kernel, Self::Static]
            .into_iter()
            .find(|k| k.name() == name)
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A leap second announced by the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeapWarning {
    /// None.
    #[default]
    None,
    /// 23:59:60 is inserted.
    Insert,
    /// 23:59:59 is deleted.
    Delete,
}

/// When a source's leap warning takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeapScope {
    /// At the end of a month, as RFC 5905 words it (chronyd, NTP daemons):
    /// announced only on 30 June and 31 December, as chrony does, since a
    /// leap second has only ever been scheduled there.
    #[default]
    EndOfMonth,
    /// At the end of the current UTC day: the kernel applies `STA_INS` and
    /// `STA_DEL` at the next midnight, and a leap-seconds list names the day.
    EndOfToday,
}

/// What a synchronized source says about the clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyncedReading {
    /// The stratum of the host's clock, 1 to 15.
    pub stratum: u8,
    /// The reference id the host's clock follows.
    pub reference_id: ReferenceId,
    /// When the clock was last updated from its reference, if the source
    /// says; `None` lets the announcement use the time of the reading.
    pub reference_time: Option<UnixTime>,
    /// Root delay in seconds.
    pub root_delay: f64,
    /// Root dispersion in seconds at the time of the reading.
    pub root_dispersion: f64,
    /// A coming leap second.
    pub leap: LeapWarning,
    /// When `leap` takes effect.
    pub leap_scope: LeapScope,
    /// The source says the leap second is being inserted right now (the
    /// kernel's `TIME_OOP`).
    pub leap_in_progress: bool,
}

/// Why the clock is announced as unsynchronized.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum UnsyncCause {
    /// chronyd's tracking report says "not synchronised" (leap status 3).
    ChronyNotSynchronised,
    /// The kernel's `adjtimex` returned `TIME_ERROR` or has `STA_UNSYNC` set.
    KernelUnsynchronized {
        /// `adjtimex` returned `TIME_ERROR`.
        time_error: bool,
        /// `STA_UNSYNC` is set.
        sta_unsync: bool,
    },
    /// The NTP daemon answered with leap indicator 3 or an invalid stratum.
    UpstreamUnsynchronized {
        /// The leap indicator it sent.
        leap: u8,
        /// The stratum it sent.
        stratum: u8,
    },
    /// The source has not been read yet.
    NotYetRead,
    /// The source could not be read for longer than the configured limit.
    SourceUnreadable {
        /// Seconds since the last successful reading (or since the start).
        seconds: f64,
    },
    /// Root distance (root delay / 2 + root dispersion) reached 16 s (RFC
    /// 5905's MAXDISP), where every client refuses the server.
    RootDistance {
        /// The root distance in seconds.
        seconds: f64,
    },
    /// A leap second is being inserted (chrony and NTPsec announce leap 3
    /// during that second).
    LeapInProgress,
}

impl fmt::Display for UnsyncCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::ChronyNotSynchronised => {
                f.write_str("chronyd reports its clock as not synchronised")
            }
            Self::KernelUnsynchronized {
                time_error,
                sta_unsync,
            } => {
                f.write_str("the kernel reports the clock as unsynchronized (")?;
                match (time_error, sta_unsync) {
                    (true, true) => f.write_str("TIME_ERROR, STA_UNSYNC set)"),
                    (true, false) => f.write_str("TIME_ERROR)"),
                    _ => f.write_str("STA_UNSYNC set)"),
                }
            }
            Self::UpstreamUnsynchronized { leap, stratum } => write!(
                f,
                "the NTP daemon answers as unsynchronized (leap {leap}, stratum {stratum})"
            ),
            Self::NotYetRead => f.write_str("the clock-state source has not been read yet"),
            Self::SourceUnreadable { seconds } => write!(
                f,
                "the clock-state source has not been readable for {seconds:.0} s"
            ),
            Self::RootDistance { seconds } => {
                write!(f, "root distance {seconds:.3} s reached the 16 s limit")
            }
            Self::LeapInProgress => f.write_str("a leap second is being inserted"),
        }
    }
}

/// One reading of a source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SourceReading {
    /// The clock is synchronized, with these properties.
    Synchronized(SyncedReading),
    /// The clock is not synchronized.
    Unsynchronized(UnsyncCause),
}

/// What the daemon publishes to its workers: the last good reading and when
/// it was taken, and since when the source has been failing, if it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    /// The source.
    pub source: SourceKind,
    /// The last reading, `None` before the first.
    pub reading: Option<SourceReading>,
    /// The system time of that reading.
    pub read_at: UnixTime,
    /// The first failed read since the last good one; `None` while reads succeed.
    pub failing_since: Option<UnixTime>,
}

impl Snapshot {
    /// A snapshot before any reading, made at `now`.
    #[must_use]
    pub fn unread(source: SourceKind, now: UnixTime) -> Self {
        Self {
            source,
            reading: None,
            read_at: now,
            failing_since: Some(now),
        }
    }

    /// This snapshot after a successful reading at `now`.
    #[must_use]
    pub fn with_reading(self, reading: SourceReading, now: UnixTime) -> Self {
        Self {
            reading: Some(reading),
            read_at: now,
            failing_since: None,
            ..self
        }
    }

    /// This snapshot after a failed read at `now`: the last reading stays
    /// (its dispersion keeps growing) until the failure lasts too long.
    #[must_use]
    pub fn with_failure(self, now: UnixTime) -> Self {
        Self {
            failing_since: Some(self.failing_since.unwrap_or(now)),
            ..self
        }
    }
}
