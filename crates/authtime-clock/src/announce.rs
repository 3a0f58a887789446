//! The rules that turn a source's snapshot into what the server announces.
//!
//! - **Unsynchronized** is announced exactly as chronyd does (checked
//!   against a capture of chronyd 4.3 with no sources): leap indicator 3,
//!   stratum 0 on the wire (RFC 5905 section 11.1 maps MAXSTRAT to 0), reference
//!   id 0, root delay and root dispersion 1.0 s, reference time 0.
//! - **Root dispersion grows** by PHI = 15 µs per second since the reading
//!   (RFC 5905 sections 7.2 and 9.1), so a stale snapshot degrades visibly, and
//!   a root distance (delay / 2 + dispersion) of 16 s (MAXDISP) or more is
//!   announced as unsynchronized, since every client refuses it anyway.
//! - **The reference time** is the source's, or the time of the reading when
//!   the source has none; never later than now, never 0 while synchronized.
//! - **Leap warnings** of a source that means "at the end of the month"
//!   (chronyd, NTP daemons) are announced only on 30 June and 31 December, as
//!   chrony does; warnings for "tonight" (the kernel, a leap-seconds list) on
//!   the day itself. During the last second of a day that ends with an
//!   inserted second, the clock is announced unsynchronized (chrony and
//!   NTPsec send leap 3 while the leap is in progress): the kernel replays
//!   that second, and a reply cannot tell 23:59:59 from 23:59:60.
//!
//! No smearing: RFC 8633 section 3.7.1 forbids mixing smeared and unsmeared
//! servers, and an announced leap is the honest signal.

use authtime_wire::{LeapIndicator, NtpShort, NtpTimestamp, ReferenceId, UnixTime};

use crate::reading::{LeapScope, LeapWarning, Snapshot, SourceReading, SyncedReading, UnsyncCause};

/// RFC 5905's frequency tolerance, seconds of dispersion per second.
pub const PHI: f64 = 15e-6;

/// RFC 5905's MAXDISP: a root distance from which clients refuse a server.
pub const MAX_ROOT_DISTANCE: f64 = 16.0;

/// Seconds per UTC day.
const DAY: i64 = 86_400;

/// How the announcement treats a failing source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnnouncePolicy {
    /// Seconds a source may fail to be read before the clock is announced
    /// unsynchronized; until then the last reading is served with its
    /// dispersion growing.
    pub max_unreadable: f64,
}

impl Default for AnnouncePolicy {
    /// 30 s: long enough for a chronyd restart, short against a day.
    fn default() -> Self {
        Self {
            max_unreadable: 30.0,
        }
    }
}

/// The header fields a server announces, and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Announcement {
    /// Leap indicator.
    pub leap: LeapIndicator,
    /// Stratum on the wire (0 when unsynchronized).
    pub stratum: u8,
    /// Reference id.
    pub reference_id: ReferenceId,
    /// Reference timestamp.
    pub reference_ts: NtpTimestamp,
    /// Root delay.
    pub root_delay: NtpShort,
    /// Root dispersion.
    pub root_dispersion: NtpShort,
    /// Why the clock is announced unsynchronized; `None` while synchronized.
    pub unsynchronized: Option<UnsyncCause>,
}

impl Announcement {
    /// chronyd's unsynchronized header fields, for `cause`.
    #[must_use]
    pub fn unsynchronized(cause: UnsyncCause) -> Self {
        Self {
            leap: LeapIndicator::Unsynchronized,
            stratum: 0,
            reference_id: ReferenceId([0; 4]),
            reference_ts: NtpTimestamp::ZERO,
            root_delay: NtpShort::from_bits(1 << 16),
            root_dispersion: NtpShort::from_bits(1 << 16),
            unsynchronized: Some(cause),
        }
    }

    /// Whether the clock is announced as synchronized.
    #[must_use]
    pub fn is_synchronized(&self) -> bool {
        self.unsynchronized.is_none()
    }
}

fn seconds_between(earlier: UnixTime, later: UnixTime) -> f64 {
    (later.as_nanos() - earlier.as_nanos()) as f64 / 1e9
}

/// What the server announces at `now` from `snapshot`.
#[must_use]
pub fn announce(snapshot: &Snapshot, now: UnixTime, policy: &AnnouncePolicy) -> Announcement {
    if let Some(since) = snapshot.failing_since {
        let failing = seconds_between(since, now);
        if failing > policy.max_unreadable {
            let last_good = if snapshot.reading.is_some() {
                snapshot.read_at
            } else {
                since
            };
            return Announcement::unsynchronized(UnsyncCause::SourceUnreadable {
                seconds: seconds_between(last_good, now).max(0.0),
            });
        }
    }
    match snapshot.reading {
        None => Announcement::unsynchronized(UnsyncCause::NotYetRead),
        Some(SourceReading::Unsynchronized(cause)) => Announcement::unsynchronized(cause),
        Some(SourceReading::Synchronized(reading)) => synchronized(&reading, snapshot.read_at, now),
    }
}

fn synchronized(r: &SyncedReading, read_at: UnixTime, now: UnixTime) -> Announcement {
    if !(1..=15).contains(&r.stratum) {
        return Announcement::unsynchronized(UnsyncCause::UpstreamUnsynchronized {
            leap: 0,
            stratum: r.stratum,
        });
    }
    let age = seconds_between(read_at, now).max(0.0);
    let root_delay = r.root_delay.max(0.0);
    let root_dispersion = r.root_dispersion.max(0.0) + PHI * age;
    let distance = root_delay / 2.0 + root_dispersion;
    if distance >= MAX_ROOT_DISTANCE || distance.is_nan() {
        return Announcement::unsynchronized(UnsyncCause::RootDistance { seconds: distance });
    }
    let leap = match leap_now(r, now) {
        Ok(leap) => leap,
        Err(cause) => return Announcement::unsynchronized(cause),
    };
    let reference = r.reference_time.unwrap_or(read_at).min(now);
    Announcement {
        leap,
        stratum: r.stratum,
        reference_id: r.reference_id,
        reference_ts: NtpTimestamp::from_unix_time(reference),
        root_delay: NtpShort::from_seconds_f64(root_delay),
        root_dispersion: NtpShort::from_seconds_f64(root_dispersion),
        unsynchronized: None,
    }
}

/// The leap indicator at `now`, or the cause to announce unsynchronized.
fn leap_now(r: &SyncedReading, now: UnixTime) -> Result<LeapIndicator, UnsyncCause> {
    if r.leap_in_progress {
        return Err(UnsyncCause::LeapInProgress);
    }
    let applies_today = match r.leap_scope {
        LeapScope::EndOfToday => true,
        LeapScope::EndOfMonth => is_leap_second_day(now),
    };
    Ok(match (r.leap, applies_today) {
        (LeapWarning::Insert, true) => {
            let second_of_day = now.secs.rem_euclid(DAY);
            if second_of_day == DAY - 1 {
                return Err(UnsyncCause::LeapInProgress);
            }
            LeapIndicator::InsertSecond
        }
        (LeapWarning::Delete, true) => LeapIndicator::DeleteSecond,
        _ => LeapIndicator::NoWarning,
    })
}

/// Whether `now` falls on 30 June or 31 December (UTC), the days a leap
/// second has always been scheduled for.
#[must_use]
pub fn is_leap_second_day(now: UnixTime) -> bool {
    let (_, month, day) = civil_date(now.secs.div_euclid(DAY));
    (month == 6 && day == 30) || (month == 12 && day == 31)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
#[must_use]
pub fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::SourceKind;

    /// 2016-12-31 12:00:00 UTC.
    const DEC_31_2016_NOON: i64 = 1_483_185_600;

    fn at(secs: i64) -> UnixTime {
        UnixTime::new(secs, 0)
    }

    fn stratum2() -> SyncedReading {
        SyncedReading {
            stratum: 2,
            reference_id: ReferenceId([192, 0, 2, 1]),
            reference_time: Some(at(DEC_31_2016_NOON - 64)),
            root_delay: 0.010,
            root_dispersion: 0.001,
            leap: LeapWarning::None,
            leap_scope: LeapScope::EndOfMonth,
            leap_in_progress: false,
        }
    }

    fn snapshot(reading: SyncedReading, read_at: i64) -> Snapshot {
        Snapshot::unread(SourceKind::Chrony, at(read_at))
            .with_reading(SourceReading::Synchronized(reading), at(read_at))
    }

    #[test]
    fn unsynchronized_is_chronys_header() {
        let a = announce(
            &Snapshot::unread(SourceKind::Chrony, at(DEC_31_2016_NOON)),
            at(DEC_31_2016_NOON),
            &AnnouncePolicy::default(),
        );
        assert_eq!(a.leap, LeapIndicator::Unsynchronized);
        assert_eq!(a.stratum, 0);
        assert_eq!(a.reference_id, ReferenceId([0; 4]));
        assert_eq!(a.reference_ts, NtpTimestamp::ZERO);
        assert_eq!(a.root_delay.to_bits(), 0x0001_0000);
        assert_eq!(a.root_dispersion.to_bits(), 0x0001_0000);
        assert_eq!(a.unsynchronized, Some(UnsyncCause::NotYetRead));
    }

    #[test]
    fn a_synchronized_reading_is_copied() {
        let now = DEC_31_2016_NOON - 86_400 * 10;
        let mut r = stratum2();
        r.reference_time = Some(at(now - 64));
        let a = announce(&snapshot(r, now), at(now), &AnnouncePolicy::default());
        assert!(a.is_synchronized());
        assert_eq!((a.leap, a.stratum), (LeapIndicator::NoWarning, 2));
        assert_eq!(a.reference_id, ReferenceId([192, 0, 2, 1]));
        assert_eq!(a.reference_ts, NtpTimestamp::from_unix(now - 64, 0));
        assert!((a.root_delay.as_seconds_f64() - 0.010).abs() < 2e-5);
        assert!((a.root_dispersion.as_seconds_f64() - 0.001).abs() < 2e-5);
    }

    #[test]
    fn a_snapshot_1000_s_old_has_15_ms_more_dispersion() {
        let read = DEC_31_2016_NOON - 86_400;
        let s = snapshot(stratum2(), read);
        let fresh = announce(&s, at(read), &AnnouncePolicy::default());
        let old = announce(&s, at(read + 1000), &AnnouncePolicy::default());
        let grown = old.root_dispersion.as_seconds_f64() - fresh.root_dispersion.as_seconds_f64();
        assert!((grown - 0.015).abs() <= 2.0 / 65_536.0, "{grown}");
        assert_eq!(old.root_delay, fresh.root_delay);
    }

    #[test]
    fn a_root_distance_of_16_s_is_unsynchronized() {
        let mut r = stratum2();
        r.root_delay = 2.0;
        r.root_dispersion = 14.99;
        let s = snapshot(r, DEC_31_2016_NOON);
        let policy = AnnouncePolicy::default();
        assert!(announce(&s, at(DEC_31_2016_NOON), &policy).is_synchronized());
        // 0.01 s of dispersion more takes 667 s at 15 µs/s.
        let late = announce(&s, at(DEC_31_2016_NOON + 700), &policy);
        assert!(matches!(
            late.unsynchronized,
            Some(UnsyncCause::RootDistance { .. })
        ));
        assert_eq!(late.stratum, 0);
    }

    #[test]
    fn the_reference_time_is_never_after_now_nor_zero() {
        let mut r = stratum2();
        r.reference_time = Some(at(DEC_31_2016_NOON + 5));
        let a = announce(
            &snapshot(r, DEC_31_2016_NOON),
            at(DEC_31_2016_NOON),
            &AnnouncePolicy::default(),
        );
        assert_eq!(a.reference_ts, NtpTimestamp::from_unix(DEC_31_2016_NOON, 0));
        r.reference_time = None;
        let a = announce(
            &snapshot(r, DEC_31_2016_NOON - 3),
            at(DEC_31_2016_NOON),
            &AnnouncePolicy::default(),
        );
        assert_eq!(
            a.reference_ts,
            NtpTimestamp::from_unix(DEC_31_2016_NOON - 3, 0)
        );
    }

    #[test]
    fn a_source_failing_too_long_is_unsynchronized() {
        let policy = AnnouncePolicy {
            max_unreadable: 30.0,
        };
        let read = DEC_31_2016_NOON - 86_400;
        let s = snapshot(stratum2(), read).with_failure(at(read + 1));
        let within = announce(&s, at(read + 20), &policy);
        assert!(
            within.is_synchronized(),
            "the last reading serves while the failure is short"
        );
        let beyond = announce(&s, at(read + 40), &policy);
        assert_eq!(
            beyond.unsynchronized,
            Some(UnsyncCause::SourceUnreadable { seconds: 40.0 })
        );
        let never = Snapshot::unread(SourceKind::Kernel, at(read));
        assert_eq!(
            announce(&never, at(read + 40), &policy).unsynchronized,
            Some(UnsyncCause::SourceUnreadable { seconds: 40.0 })
        );
    }

    #[test]
    fn an_unsynchronized_reading_gives_its_cause() {
        let s = Snapshot::unread(SourceKind::Chrony, at(0)).with_reading(
            SourceReading::Unsynchronized(UnsyncCause::ChronyNotSynchronised),
            at(0),
        );
        let a = announce(&s, at(1), &AnnouncePolicy::default());
        assert_eq!(a.unsynchronized, Some(UnsyncCause::ChronyNotSynchronised));
        assert_eq!(a.leap, LeapIndicator::Unsynchronized);
    }

    #[test]
    fn a_month_end_leap_is_announced_only_on_its_day() {
        let mut r = stratum2();
        r.leap = LeapWarning::Insert;
        let policy = AnnouncePolicy::default();
        let dec_15 = DEC_31_2016_NOON - 16 * 86_400;
        assert_eq!(
            announce(&snapshot(r, dec_15), at(dec_15), &policy).leap,
            LeapIndicator::NoWarning
        );
        let a = announce(
            &snapshot(r, DEC_31_2016_NOON),
            at(DEC_31_2016_NOON),
            &policy,
        );
        assert_eq!(a.leap, LeapIndicator::InsertSecond);
        // 2015-06-30 23:00 UTC.
        let june_30 = 1_435_705_200;
        assert_eq!(
            announce(&snapshot(r, june_30), at(june_30), &policy).leap,
            LeapIndicator::InsertSecond
        );
        r.leap = LeapWarning::Delete;
        assert_eq!(
            announce(&snapshot(r, june_30), at(june_30), &policy).leap,
            LeapIndicator::DeleteSecond
        );
    }

    #[test]
    fn a_leap_for_tonight_is_announced_any_day() {
        let mut r = stratum2();
        r.leap = LeapWarning::Insert;
        r.leap_scope = LeapScope::EndOfToday;
        let dec_15 = DEC_31_2016_NOON - 16 * 86_400;
        let a = announce(&snapshot(r, dec_15), at(dec_15), &AnnouncePolicy::default());
        assert_eq!(a.leap, LeapIndicator::InsertSecond);
    }

    #[test]
    fn the_inserted_second_is_announced_unsynchronized() {
        let mut r = stratum2();
        r.leap = LeapWarning::Insert;
        let last_second = DEC_31_2016_NOON + 12 * 3600 - 1; // 23:59:59
        let policy = AnnouncePolicy::default();
        let a = announce(&snapshot(r, last_second - 1), at(last_second), &policy);
        assert_eq!(a.unsynchronized, Some(UnsyncCause::LeapInProgress));
        let before = announce(&snapshot(r, last_second - 1), at(last_second - 1), &policy);
        assert_eq!(before.leap, LeapIndicator::InsertSecond);
        r.leap_in_progress = true;
        let a = announce(&snapshot(r, last_second), at(last_second + 1), &policy);
        assert_eq!(a.unsynchronized, Some(UnsyncCause::LeapInProgress));
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(DEC_31_2016_NOON / DAY), (2016, 12, 31));
        assert_eq!(civil_date(-1), (1969, 12, 31));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert!(is_leap_second_day(at(1_435_705_200)));
        assert!(!is_leap_second_day(at(1_435_705_200 + 3600)));
    }
}
