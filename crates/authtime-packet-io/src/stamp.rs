//! Kernel timestamps as this crate hands them out.

/// Where a timestamp was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StampSource {
    /// By the kernel, in software, when the datagram passed the network
    /// driver (chrony calls these "kernel" timestamps).
    Kernel,
    /// By the network card, in its own clock.
    Hardware,
}

impl StampSource {
    /// The label used in metrics and reports: `kernel` or `hardware`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Kernel => "kernel",
            Self::Hardware => "hardware",
        }
    }
}

/// A timestamp of the real-time clock (`CLOCK_REALTIME`): seconds and
/// nanoseconds since 1970, and who took it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Seconds since 1970-01-01 00:00:00 UTC.
    pub secs: i64,
    /// Nanoseconds within the second (below 1e9).
    pub nanos: u32,
    /// Who took it.
    pub source: StampSource,
}

impl Stamp {
    /// Nanoseconds since 1970 (saturating; the real-time clock is far from
    /// the limits of an i128).
    #[must_use]
    pub fn unix_nanos(&self) -> i128 {
        i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos)
    }

    /// A stamp from a `timespec` the kernel filled; `None` for the all-zero
    /// timespec the kernel uses for "no timestamp here", or a malformed one.
    pub(crate) fn from_timespec(ts: &libc::timespec, source: StampSource) -> Option<Self> {
        let nanos = u32::try_from(ts.tv_nsec)
            .ok()
            .filter(|n| *n < 1_000_000_000)?;
        if ts.tv_sec == 0 && nanos == 0 {
            return None;
        }
        Some(Self {
            secs: ts.tv_sec,
            nanos,
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_malformed_timespecs_are_no_stamp() {
        let ts = |s, ns| libc::timespec {
            tv_sec: s,
            tv_nsec: ns,
        };
        assert_eq!(Stamp::from_timespec(&ts(0, 0), StampSource::Kernel), None);
        assert_eq!(
            Stamp::from_timespec(&ts(5, 1_000_000_000), StampSource::Kernel),
            None
        );
        assert_eq!(Stamp::from_timespec(&ts(5, -1), StampSource::Kernel), None);
        let s = Stamp::from_timespec(&ts(5, 7), StampSource::Hardware).expect("stamp");
        assert_eq!((s.secs, s.nanos, s.source), (5, 7, StampSource::Hardware));
        assert_eq!(s.unix_nanos(), 5_000_000_007);
    }
}
