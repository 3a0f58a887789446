//! NTP time formats (RFC 5905 section 6) and their conversion to Unix time.
//!
//! A 64-bit NTP timestamp holds seconds since 1900-01-01 modulo 2^32 (the
//! "era" is not on the wire) and a 32-bit binary fraction. Converting to Unix
//! time therefore needs a reference point: [`NtpTimestamp::to_unix_near`]
//! picks the era that puts the result within 68 years of it, as RFC 5905
//! section 6 prescribes. Differences of two timestamps ([`NtpDuration`]) need no
//! era at all: 64-bit two's-complement subtraction is right whenever the two
//! are less than 68 years apart, across an era boundary included.

use core::fmt;

use crate::{Reader, WireError, Writer};

/// Seconds from the NTP prime epoch (1900-01-01) to the Unix epoch (1970-01-01).
const UNIX_EPOCH_IN_NTP: i128 = 2_208_988_800;
const NANOS_PER_SEC: u64 = 1_000_000_000;
const ERA_SECONDS: i128 = 1 << 32;

/// A point in time as seconds and nanoseconds since 1970-01-01 UTC (negative
/// seconds are before 1970; `nanos` is always below 10^9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct UnixTime {
    /// Whole seconds since the Unix epoch.
    pub secs: i64,
    /// Nanoseconds within the second, `0..1_000_000_000`.
    pub nanos: u32,
}

impl UnixTime {
    /// `secs` seconds and `nanos` nanoseconds; nanoseconds of 10^9 or more carry
    /// into the seconds (saturating at the ends of the `i64` range).
    #[must_use]
    pub fn new(secs: i64, nanos: u32) -> Self {
        // The common case (a clock reading) needs no carry and no 128-bit
        // division.
        if u64::from(nanos) < NANOS_PER_SEC {
            return Self { secs, nanos };
        }
        Self::from_nanos(i128::from(secs) * i128::from(NANOS_PER_SEC) + i128::from(nanos))
    }

    /// Nanoseconds since the Unix epoch.
    #[must_use]
    pub fn as_nanos(self) -> i128 {
        i128::from(self.secs) * i128::from(NANOS_PER_SEC) + i128::from(self.nanos)
    }

    /// The time `nanos` nanoseconds after the Unix epoch, saturating at the ends
    /// of the representable range.
    #[must_use]
    pub fn from_nanos(nanos: i128) -> Self {
        let per_sec = i128::from(NANOS_PER_SEC);
        let secs = nanos.div_euclid(per_sec);
        match i64::try_from(secs) {
            Ok(secs) => Self {
                secs,
                // rem_euclid is in 0..10^9, which fits.
                nanos: nanos.rem_euclid(per_sec) as u32,
            },
            Err(_) if secs < 0 => Self {
                secs: i64::MIN,
                nanos: 0,
            },
            Err(_) => Self {
                secs: i64::MAX,
                nanos: 999_999_999,
            },
        }
    }
}

/// NTP 64-bit timestamp format (RFC 5905 section 6, figure 3): era seconds and a
/// 32-bit fraction of a second.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NtpTimestamp(u64);

impl NtpTimestamp {
    /// The zero timestamp, which RFC 5905 uses for "unknown" (section 6).
    pub const ZERO: Self = Self(0);

    /// From the 64 bits on the wire.
    #[must_use]
    pub const fn from_bits(bits: u64) -> Self {
        Self(bits)
    }

    /// The 64 bits on the wire.
    #[must_use]
    pub const fn to_bits(self) -> u64 {
        self.0
    }

    /// From era seconds and fraction.
    #[must_use]
    pub const fn from_parts(seconds: u32, fraction: u32) -> Self {
        Self(((seconds as u64) << 32) | fraction as u64)
    }

    /// Seconds since the start of the era.
    #[must_use]
    pub const fn seconds(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// Fraction of a second in units of 2^-32 s.
    #[must_use]
    pub const fn fraction(self) -> u32 {
        self.0 as u32
    }

    /// Whether this is the zero timestamp.
    #[must_use]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// The NTP timestamp of a Unix time, in whatever era it falls (the era
    /// number is dropped, as on the wire). Nanoseconds of 10^9 or more carry into
    /// the seconds. The fraction is rounded up so that
    /// [`NtpTimestamp::to_unix_near`] gives back the same nanosecond.
    #[must_use]
    pub fn from_unix(secs: i64, nanos: u32) -> Self {
        Self::from_unix_time(UnixTime::new(secs, nanos))
    }

    /// As [`NtpTimestamp::from_unix`], from a [`UnixTime`].
    #[must_use]
    pub fn from_unix_time(t: UnixTime) -> Self {
        // The era is 2^32 seconds: the seconds within it are the low 32 bits
        // of the two's-complement sum (the same as `rem_euclid(2^32)` in
        // i128, without a 128-bit division on every packet).
        #[allow(clippy::cast_possible_truncation, reason = "the era is dropped")]
        let ntp_secs = t.secs.wrapping_add(UNIX_EPOCH_IN_NTP as i64) as u32;
        let fraction = (u64::from(t.nanos) << 32).div_ceil(NANOS_PER_SEC);
        // fraction is below 2^32 for nanos below 10^9.
        Self::from_parts(ntp_secs, fraction as u32)
    }

    /// The Unix time of this timestamp in the era that puts it closest to
    /// `reference_unix_secs` (within 2^31 seconds, about 68 years; RFC 5905
    /// section 6). A client passes its own clock's reading; the nanoseconds are
    /// rounded down.
    #[must_use]
    pub fn to_unix_near(self, reference_unix_secs: i64) -> UnixTime {
        let reference = i128::from(reference_unix_secs) + UNIX_EPOCH_IN_NTP;
        // The low 32 bits of the reference, as an era-seconds value.
        let reference_era_secs = reference.rem_euclid(ERA_SECONDS) as u32;
        let delta = i128::from(self.seconds().wrapping_sub(reference_era_secs) as i32);
        let secs = reference + delta - UNIX_EPOCH_IN_NTP;
        let nanos = (u64::from(self.fraction()) * NANOS_PER_SEC) >> 32;
        UnixTime::from_nanos(secs * i128::from(NANOS_PER_SEC) + i128::from(nanos))
    }

    /// `self - earlier` as a signed duration: right whenever the two are less
    /// than 2^31 seconds apart, in whichever eras they fall (RFC 5905 section 6).
    #[must_use]
    pub const fn duration_since(self, earlier: Self) -> NtpDuration {
        NtpDuration(self.0.wrapping_sub(earlier.0) as i64)
    }

    /// The timestamp `d` after this one, wrapping at the end of the era.
    #[must_use]
    pub const fn wrapping_add(self, d: NtpDuration) -> Self {
        Self(self.0.wrapping_add(d.0 as u64))
    }

    /// Reads 8 bytes.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when fewer are left.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        r.u64().map(Self)
    }

    /// Writes 8 bytes.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`] when they do not fit.
    pub fn encode(self, w: &mut Writer<'_>) -> Result<(), WireError> {
        w.put_u64(self.0)
    }
}

impl fmt::Debug for NtpTimestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NtpTimestamp({}.{:08x})",
            self.seconds(),
            self.fraction()
        )
    }
}

/// A signed difference of two NTP timestamps in units of 2^-32 s (RFC 5905
/// section 6: the 64-bit difference is valid within 68 years).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NtpDuration(i64);

impl NtpDuration {
    /// No time at all.
    pub const ZERO: Self = Self(0);

    /// From a count of 2^-32 s units.
    #[must_use]
    pub const fn from_bits(bits: i64) -> Self {
        Self(bits)
    }

    /// The count of 2^-32 s units.
    #[must_use]
    pub const fn to_bits(self) -> i64 {
        self.0
    }

    /// In seconds.
    #[must_use]
    pub fn as_seconds_f64(self) -> f64 {
        self.0 as f64 / 4_294_967_296.0
    }

    /// In nanoseconds, rounded towards negative infinity.
    #[must_use]
    pub fn as_nanos(self) -> i128 {
        (i128::from(self.0) * i128::from(NANOS_PER_SEC)) >> 32
    }

    /// From seconds, saturating at about ±68 years; NaN is zero.
    #[must_use]
    pub fn from_seconds_f64(secs: f64) -> Self {
        // `as` saturates and maps NaN to 0.
        Self((secs * 4_294_967_296.0) as i64)
    }
}

/// NTP short format (RFC 5905 section 6, figure 3): unsigned 16.16 fixed-point
/// seconds, used for root delay and root dispersion.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NtpShort(u32);

impl NtpShort {
    /// Zero seconds.
    pub const ZERO: Self = Self(0);

    /// From the 32 bits on the wire.
    #[must_use]
    pub const fn from_bits(bits: u32) -> Self {
        Self(bits)
    }

    /// The 32 bits on the wire.
    #[must_use]
    pub const fn to_bits(self) -> u32 {
        self.0
    }

    /// In seconds.
    #[must_use]
    pub fn as_seconds_f64(self) -> f64 {
        f64::from(self.0) / 65_536.0
    }

    /// From seconds, rounded up to the next 2^-16 s (a delay or dispersion must
    /// not be understated) and saturating at 0 and 65536 s; NaN is zero.
    #[must_use]
    pub fn from_seconds_f64(secs: f64) -> Self {
        let units = secs * 65_536.0;
        // `as` truncates, saturates and maps NaN to 0; `ceil` is not in core.
        let truncated = units as u32;
        if f64::from(truncated) < units {
            Self(truncated.saturating_add(1))
        } else {
            Self(truncated)
        }
    }
}

impl fmt::Debug for NtpShort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NtpShort({}s)", self.as_seconds_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The era arithmetic without a 128-bit division gives what
    /// `rem_euclid(2^32)` in i128 gives, for any seconds.
    #[test]
    fn from_unix_drops_the_era_as_i128_rem_euclid_does() {
        let check = |s: i64| {
            let expected = (i128::from(s) + UNIX_EPOCH_IN_NTP).rem_euclid(ERA_SECONDS) as u32;
            assert_eq!(NtpTimestamp::from_unix(s, 0).seconds(), expected, "{s}");
        };
        for s in [
            0,
            -1,
            1,
            i64::MIN,
            i64::MAX,
            -2_208_988_800,
            2_085_978_496,
            4_294_967_295,
        ] {
            check(s);
        }
        let mut x = 0x1234_5678_9abc_def1u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(x as i64);
            check((x as i64) >> 20);
        }
    }

    /// 2036-02-07T06:28:16Z, when NTP era 0 ends (RFC 5905 section 6).
    const ERA1_START_UNIX: i64 = 2_085_978_496;

    #[test]
    fn unix_epoch_is_ntp_2208988800_rfc5905_figure4() {
        let t = NtpTimestamp::from_unix(0, 0);
        assert_eq!(t.seconds(), 2_208_988_800);
        assert_eq!(t.fraction(), 0);
        assert_eq!(t.to_unix_near(0), UnixTime { secs: 0, nanos: 0 });
    }

    #[test]
    fn half_second_is_fraction_2_pow_31() {
        let t = NtpTimestamp::from_unix(1, 500_000_000);
        assert_eq!(t.fraction(), 1 << 31);
    }

    #[test]
    fn era_rollover_chooses_the_era_nearest_the_reference() {
        let after = NtpTimestamp::from_unix(ERA1_START_UNIX + 5, 0);
        assert_eq!(after.seconds(), 5);
        // A reference just before the rollover still lands in era 1.
        assert_eq!(
            after.to_unix_near(ERA1_START_UNIX - 100).secs,
            ERA1_START_UNIX + 5
        );
        let before = NtpTimestamp::from_unix(ERA1_START_UNIX - 5, 0);
        assert_eq!(before.seconds(), u32::MAX - 4);
        assert_eq!(
            before.to_unix_near(ERA1_START_UNIX + 100).secs,
            ERA1_START_UNIX - 5
        );
        // And the year 1900 for a reference in 1950.
        assert_eq!(
            NtpTimestamp::from_parts(5, 0)
                .to_unix_near(-631_152_000)
                .secs,
            5 - 2_208_988_800
        );
    }

    #[test]
    fn unix_round_trip_is_exact_to_the_nanosecond() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let secs = (x >> 20) as i64 % 4_000_000_000 - 1_000_000_000;
            let nanos = (x % 1_000_000_000) as u32;
            let t = NtpTimestamp::from_unix(secs, nanos);
            assert_eq!(t.to_unix_near(secs + 1000), UnixTime { secs, nanos });
        }
        let edge = NtpTimestamp::from_unix(7, 999_999_999);
        assert_eq!(edge.to_unix_near(7).nanos, 999_999_999);
    }

    #[test]
    fn extreme_references_saturate_instead_of_overflowing() {
        let t = NtpTimestamp::from_parts(u32::MAX, u32::MAX);
        assert_eq!(t.to_unix_near(i64::MAX).secs, i64::MAX);
        assert!(t.to_unix_near(i64::MIN).secs < i64::MIN + (1 << 32));
        assert_eq!(UnixTime::new(i64::MAX, 2_000_000_000).secs, i64::MAX);
    }

    #[test]
    fn differences_are_right_across_the_era_boundary() {
        let t1 = NtpTimestamp::from_unix(ERA1_START_UNIX - 1, 250_000_000);
        let t2 = NtpTimestamp::from_unix(ERA1_START_UNIX + 1, 0);
        assert_eq!(t2.duration_since(t1).as_seconds_f64(), 1.75);
        assert_eq!(t1.duration_since(t2).as_seconds_f64(), -1.75);
        assert_eq!(t2.duration_since(t1).as_nanos(), 1_750_000_000);
        assert_eq!(t1.wrapping_add(t2.duration_since(t1)), t2);
    }

    #[test]
    fn short_format_rounds_up_and_saturates() {
        assert_eq!(NtpShort::from_seconds_f64(1.0).to_bits(), 0x0001_0000);
        assert_eq!(NtpShort::from_seconds_f64(1e-9).to_bits(), 1);
        assert_eq!(NtpShort::from_seconds_f64(-3.0).to_bits(), 0);
        assert_eq!(NtpShort::from_seconds_f64(1e9).to_bits(), u32::MAX);
        assert_eq!(NtpShort::from_seconds_f64(f64::NAN).to_bits(), 0);
        assert_eq!(NtpShort::from_bits(0x0000_8000).as_seconds_f64(), 0.5);
        assert_eq!(NtpDuration::from_seconds_f64(-0.5).to_bits(), -(1 << 31));
    }

    #[test]
    fn wire_form_is_big_endian() {
        let t = NtpTimestamp::from_parts(0x0102_0304, 0x0506_0708);
        let mut buf = [0u8; 8];
        let mut w = Writer::new(&mut buf);
        t.encode(&mut w).expect("fits");
        assert_eq!(buf, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(NtpTimestamp::decode(&mut Reader::new(&buf)), Ok(t));
        assert!(NtpTimestamp::decode(&mut Reader::new(&buf[..7])).is_err());
    }
}
