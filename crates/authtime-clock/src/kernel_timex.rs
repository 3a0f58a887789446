//! The kernel's clock status (`adjtimex`/`ntp_adjtime` with `modes = 0`,
//! which needs no privilege) as a reading.
//!
//! - `TIME_ERROR` (returned when `STA_UNSYNC` or `STA_CLOCKERR` is set) or
//!   `STA_UNSYNC` alone: unsynchronized. The kernel sets `STA_UNSYNC` itself
//!   once `maxerror` passes 16 s (about 8.9 hours after the last update at
//!   500 µs/s), so a daemon that died is noticed.
//! - `maxerror` (µs) is the root dispersion: at each update the daemon
//!   writes there half the root delay plus the root dispersion (chronyd
//!   does), and the kernel adds 500 µs every second, a conservative bound.
//! - `STA_INS` / `STA_DEL` are mirrored: the kernel applies them at the next
//!   UTC midnight. `TIME_OOP` means the inserted second is running now.
//! - The kernel knows no stratum or reference: both come from the
//!   configuration.
//!
//! **Pitfall**: chronyd clears `STA_UNSYNC` only when `rtcsync` is on (Linux
//! `sys_timex.c`, since chrony 2.2). A host whose chronyd runs without
//! `rtcsync` looks unsynchronized to this source although chronyd is
//! synchronized; use the `chrony` source there. [`rtcsync_pitfall`] gives the
//! warning the daemon prints at start.

use authtime_wire::ReferenceId;

use crate::reading::{LeapScope, LeapWarning, SourceReading, SyncedReading, UnsyncCause};

/// `adjtimex` return value: clock synchronized, no leap second.
pub const TIME_OK: i32 = 0;
/// `adjtimex` return value: a second is inserted at midnight.
pub const TIME_INS: i32 = 1;
/// `adjtimex` return value: a second is deleted at midnight.
pub const TIME_DEL: i32 = 2;
/// `adjtimex` return value: the inserted second is in progress.
pub const TIME_OOP: i32 = 3;
/// `adjtimex` return value: the leap second has occurred.
pub const TIME_WAIT: i32 = 4;
/// `adjtimex` return value: the clock is not synchronized.
pub const TIME_ERROR: i32 = 5;

/// `timex.status` bit: insert a leap second at midnight.
pub const STA_INS: i32 = 0x0010;
/// `timex.status` bit: delete a leap second at midnight.
pub const STA_DEL: i32 = 0x0020;
/// `timex.status` bit: the clock is not synchronized.
pub const STA_UNSYNC: i32 = 0x0040;

/// The fields of `struct timex` this source reads, and `adjtimex`'s result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelStatus {
    /// `adjtimex`'s return value (`TIME_OK` ... `TIME_ERROR`).
    pub state: i32,
    /// `timex.status`.
    pub status: i32,
    /// `timex.maxerror`, microseconds.
    pub maxerror_us: i64,
    /// `timex.esterror`, microseconds.
    pub esterror_us: i64,
}

/// What the configuration declares for the kernel source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declared {
    /// Stratum announced while the kernel says synchronized.
    pub stratum: u8,
    /// Reference id announced with it.
    pub reference_id: ReferenceId,
}

/// The reading for `status`.
#[must_use]
pub fn reading(status: &KernelStatus, declared: &Declared) -> SourceReading {
    let sta_unsync = status.status & STA_UNSYNC != 0;
    let time_error = status.state == TIME_ERROR;
    if sta_unsync || time_error {
        return SourceReading::Unsynchronized(UnsyncCause::KernelUnsynchronized {
            time_error,
            sta_unsync,
        });
    }
    let leap = if status.status & STA_INS != 0 {
        LeapWarning::Insert
    } else if status.status & STA_DEL != 0 {
        LeapWarning::Delete
    } else {
        LeapWarning::None
    };
    SourceReading::Synchronized(SyncedReading {
        stratum: declared.stratum,
        reference_id: declared.reference_id,
        reference_time: None,
        root_delay: 0.0,
        root_dispersion: status.maxerror_us.max(0) as f64 / 1e6,
        leap,
        leap_scope: LeapScope::EndOfToday,
        leap_in_progress: status.state == TIME_OOP,
    })
}

/// The start-up warning for a host whose chronyd leaves `STA_UNSYNC` set
/// (no `rtcsync`), when `chronyd_running`.
#[must_use]
pub fn rtcsync_pitfall(status: &KernelStatus, chronyd_running: bool) -> Option<&'static str> {
    (chronyd_running && status.status & STA_UNSYNC != 0).then_some(
        "the kernel says the clock is unsynchronized (STA_UNSYNC) while chronyd runs: chronyd clears \
         STA_UNSYNC only with `rtcsync` in chrony.conf. Use [clock] source = \"chrony\" (it reads chronyd's \
         own state), or add `rtcsync` to chrony.conf; until then this server announces unsynchronized",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECLARED: Declared = Declared {
        stratum: 2,
        reference_id: ReferenceId([127, 127, 1, 1]),
    };

    fn status(state: i32, status: i32, maxerror_us: i64) -> KernelStatus {
        KernelStatus {
            state,
            status,
            maxerror_us,
            esterror_us: 0,
        }
    }

    #[test]
    fn sta_unsync_gives_unsynchronized() {
        // As seen on a host with no time daemon: TIME_ERROR, STA_UNSYNC, maxerror 16 s.
        let r = reading(&status(TIME_ERROR, STA_UNSYNC, 16_000_000), &DECLARED);
        assert_eq!(
            r,
            SourceReading::Unsynchronized(UnsyncCause::KernelUnsynchronized {
                time_error: true,
                sta_unsync: true
            })
        );
        let r = reading(&status(TIME_OK, STA_UNSYNC, 0), &DECLARED);
        assert!(matches!(r, SourceReading::Unsynchronized(_)));
        let r = reading(&status(TIME_ERROR, 0, 0), &DECLARED);
        assert!(matches!(r, SourceReading::Unsynchronized(_)));
    }

    #[test]
    fn synchronized_takes_maxerror_as_dispersion() {
        let SourceReading::Synchronized(r) = reading(&status(TIME_OK, 0x2001, 12_500), &DECLARED)
        else {
            panic!("synchronized");
        };
        assert_eq!(
            (r.stratum, r.reference_id),
            (2, ReferenceId([127, 127, 1, 1]))
        );
        assert!((r.root_dispersion - 0.0125).abs() < 1e-12);
        assert_eq!(r.root_delay, 0.0);
        assert_eq!(r.leap, LeapWarning::None);
    }

    #[test]
    fn leap_bits_are_mirrored_for_tonight() {
        let SourceReading::Synchronized(r) = reading(&status(TIME_INS, STA_INS, 1000), &DECLARED)
        else {
            panic!("synchronized");
        };
        assert_eq!(
            (r.leap, r.leap_scope),
            (LeapWarning::Insert, LeapScope::EndOfToday)
        );
        let SourceReading::Synchronized(r) = reading(&status(TIME_DEL, STA_DEL, 1000), &DECLARED)
        else {
            panic!("synchronized");
        };
        assert_eq!(r.leap, LeapWarning::Delete);
        let SourceReading::Synchronized(r) = reading(&status(TIME_OOP, STA_INS, 1000), &DECLARED)
        else {
            panic!("synchronized");
        };
        assert!(r.leap_in_progress);
    }

    #[test]
    fn the_rtcsync_pitfall_is_named() {
        let unsync = status(TIME_ERROR, STA_UNSYNC, 16_000_000);
        assert!(rtcsync_pitfall(&unsync, true).is_some_and(|w| w.contains("rtcsync")));
        assert!(rtcsync_pitfall(&unsync, false).is_none());
        assert!(rtcsync_pitfall(&status(TIME_OK, 0, 0), true).is_none());
    }
}
