//! From the XDP program's clock (`CLOCK_TAI`, what `bpf_ktime_get_tai_ns`
//! reads) to the real-time clock (`CLOCK_REALTIME`) the rest of authtime
//! uses.
//!
//! The kernel keeps `CLOCK_TAI` as `CLOCK_REALTIME` plus its TAI offset, a
//! whole number of seconds set with adjtimex(2) (by chrony, ntpd or ptp4l
//! from the leap-second file; 0 when nobody set it, as on most systems). So
//! the offset is the difference of the two clocks read back to back,
//! rounded to the second, which also removes the time between the reads.
//! It changes only at a leap second, and by one second: a frame stamped
//! across such a change converts one second off.

use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `CLOCK_TAI - CLOCK_REALTIME`, as the kernel keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaiOffset {
    seconds: i64,
}

const NANOS: i128 = 1_000_000_000;

fn now_ns(clock: libc::clockid_t) -> io::Result<i128> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live timespec the call fills.
    if unsafe { libc::clock_gettime(clock, &raw mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(i128::from(ts.tv_sec) * NANOS + i128::from(ts.tv_nsec))
}

/// `CLOCK_TAI` now, in nanoseconds (the clock of the XDP program's and the
/// kernel's transmit-completion timestamps); `None` if it cannot be read.
pub(crate) fn tai_now_ns() -> Option<u64> {
    now_ns(libc::CLOCK_TAI)
        .ok()
        .and_then(|ns| u64::try_from(ns).ok())
}

impl TaiOffset {
    /// Reads the kernel's current offset.
    ///
    /// # Errors
    /// clock_gettime(2) failed (a kernel without `CLOCK_TAI`: before 3.10).
    pub fn read() -> io::Result<Self> {
        let real = now_ns(libc::CLOCK_REALTIME)?;
        let tai = now_ns(libc::CLOCK_TAI)?;
        Ok(Self::from_difference_ns(tai - real))
    }

    /// The offset from one `CLOCK_TAI - CLOCK_REALTIME` difference in
    /// nanoseconds, rounded to the nearest second.
    #[must_use]
    pub fn from_difference_ns(diff: i128) -> Self {
        let seconds = (diff + diff.signum() * NANOS / 2) / NANOS;
        Self {
            seconds: i64::try_from(seconds).unwrap_or(0),
        }
    }

    /// The offset in seconds (37 on a system told about every leap second
    /// up to 2017, 0 on one never told).
    #[must_use]
    pub fn seconds(self) -> i64 {
        self.seconds
    }

    /// `CLOCK_REALTIME` nanoseconds for a `CLOCK_TAI` reading.
    #[must_use]
    pub fn tai_to_realtime_ns(self, tai_ns: u64) -> i128 {
        i128::from(tai_ns) - i128::from(self.seconds) * NANOS
    }

    /// The real time of a `CLOCK_TAI` reading (the epoch for readings
    /// before it, which a running system does not produce).
    #[must_use]
    pub fn tai_to_system_time(self, tai_ns: u64) -> SystemTime {
        let ns = u64::try_from(self.tai_to_realtime_ns(tai_ns)).unwrap_or(0);
        UNIX_EPOCH + Duration::from_nanos(ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_difference_rounds_to_whole_seconds() {
        assert_eq!(
            TaiOffset::from_difference_ns(37 * 1_000_000_000 + 1_234).seconds(),
            37
        );
        assert_eq!(
            TaiOffset::from_difference_ns(36 * 1_000_000_000 + 999_999_000).seconds(),
            37
        );
        assert_eq!(TaiOffset::from_difference_ns(-800).seconds(), 0);
        assert_eq!(TaiOffset::from_difference_ns(0).seconds(), 0);
    }

    #[test]
    fn conversion_subtracts_the_offset() {
        let off = TaiOffset::from_difference_ns(37_000_000_000);
        assert_eq!(off.tai_to_realtime_ns(40_000_000_123), 3_000_000_123);
        assert_eq!(
            off.tai_to_system_time(40_000_000_123),
            UNIX_EPOCH + Duration::from_nanos(3_000_000_123)
        );
    }

    #[test]
    fn the_kernels_offset_converts_tai_now_to_realtime_now() {
        let off = TaiOffset::read().expect("CLOCK_TAI");
        let tai = u64::try_from(now_ns(libc::CLOCK_TAI).expect("tai")).expect("positive");
        let converted = off.tai_to_system_time(tai);
        let real = SystemTime::now();
        let gap = real
            .duration_since(converted)
            .unwrap_or_else(|e| e.duration());
        assert!(gap < Duration::from_millis(100), "{gap:?}");
    }
}
