//! Times, the interval schedule, and the receiver's bound on the sender's clock.
//!
//! All arithmetic that mixes times, offsets and interval numbers is done in
//! `i128`, where no sum or product of the `u64`/`u32`/`i64` inputs can wrap.

use crate::codec::{Reader, WireError, put_i64, put_u64};

/// A point in time: nanoseconds since an epoch the caller chooses (the Unix
/// epoch for wall clocks). The sender's times are on the sender's clock, the
/// receiver's on the receiver's; [`ClockBound`] relates the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub u64);

impl Time {
    /// From nanoseconds.
    #[must_use]
    pub const fn from_nanos(ns: u64) -> Self {
        Self(ns)
    }

    /// From whole seconds (saturating).
    #[must_use]
    pub const fn from_secs(s: u64) -> Self {
        Self(s.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds since the epoch.
    #[must_use]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// This time plus `ns` nanoseconds, saturating.
    #[must_use]
    pub const fn plus_nanos(self, ns: u64) -> Self {
        Self(self.0.saturating_add(ns))
    }
}

/// `floor(a / b)` for `b > 0`, correct for negative `a`.
pub(crate) fn floor_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && a < 0 { q - 1 } else { q }
}

/// The interval schedule: interval `i` (a `u32`, RFC 5776) runs on the sender's
/// clock from `T_0 + i * T_int` (included) to `T_0 + (i+1) * T_int` (excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Start of interval 0, `T_0`.
    pub t0: Time,
    /// Interval length `T_int` in nanoseconds, never 0.
    pub interval_ns: u64,
}

impl Schedule {
    /// The interval that contains sender time `t`: `None` before `T_0` and after
    /// the last `u32` interval.
    #[must_use]
    pub fn interval_at(&self, t: Time) -> Option<u32> {
        let since = t.0.checked_sub(self.t0.0)?;
        u32::try_from(since / self.interval_ns.max(1)).ok()
    }

    /// Start of interval `i` on the sender's clock, `None` when it does not fit
    /// in a [`Time`].
    #[must_use]
    pub fn interval_start(&self, i: u32) -> Option<Time> {
        let start = i128::from(self.t0.0) + i128::from(i) * i128::from(self.interval_ns);
        u64::try_from(start).ok().map(Time)
    }

    /// `floor((t - T_0) / T_int)` for any sender time `t` (negative before `T_0`,
    /// beyond `u32` after the last interval).
    #[must_use]
    pub fn interval_number(&self, t: i128) -> i128 {
        floor_div(
            t - i128::from(self.t0.0),
            i128::from(self.interval_ns.max(1)),
        )
    }
}

/// The receiver's upper bound on the sender's clock:
/// `sender_time <= local_time + offset + drift_ppm * |local_time - reference| / 10^6`.
///
/// Only an *upper* bound matters to TESLA: the danger is a sender further
/// ahead than the receiver thinks, which would have disclosed keys the
/// receiver still treats as secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockBound {
    /// Local time at which the bound was measured.
    pub reference: Time,
    /// `sender_time - local_time` is at most this at `reference` (nanoseconds).
    pub offset_ns: i64,
    /// Allowed relative drift of the two clocks after `reference`, in parts per
    /// million (0 when both clocks are disciplined by the same source).
    pub drift_ppm: u32,
}

impl ClockBound {
    /// Direct time synchronisation (RFC 4082 section 3.3.1): the receiver
    /// sent its request at local time `request_sent`; the sender's signed
    /// response says its clock read `sender_time` when it answered.
    ///
    /// The sender answered after the request left, so at the answer the local
    /// clock read at least `request_sent`, and the offset
    /// `sender - local <= sender_time - request_sent`. The bound therefore uses
    /// the **whole** round trip. Taking `sender_time - arrival_time` and adding
    /// only half the round trip for the return path (NTP's midpoint estimate) is
    /// the factor-of-two error: an attacker who holds the response back for `D`
    /// makes such a receiver believe the sender is about `D/2` behind its real
    /// clock, and accept packets whose keys are already public.
    #[must_use]
    pub fn direct(request_sent: Time, sender_time: Time, drift_ppm: u32) -> Self {
        let offset = i128::from(sender_time.0) - i128::from(request_sent.0);
        Self {
            reference: request_sent,
            offset_ns: clamp_i64(offset),
            drift_ppm,
        }
    }

    /// Indirect time synchronisation: another authenticated source says that
    /// at local time `reference`, `sender_time - local_time` lies within
    /// `offset_ns ± error_ns` (for two clocks synchronised to one NTP server:
    /// offset 0 and the sum of both synchronisation errors).
    #[must_use]
    pub fn indirect(reference: Time, offset_ns: i64, error_ns: u64, drift_ppm: u32) -> Self {
        Self {
            reference,
            offset_ns: clamp_i64(i128::from(offset_ns) + i128::from(error_ns)),
            drift_ppm,
        }
    }

    /// The latest the sender's clock can read when the local clock reads `local`.
    #[must_use]
    pub fn sender_time_upper_bound(&self, local: Time) -> i128 {
        let elapsed = (i128::from(local.0) - i128::from(self.reference.0)).abs();
        let drift = (elapsed * i128::from(self.drift_ppm) + 999_999) / 1_000_000;
        i128::from(local.0) + i128::from(self.offset_ns) + drift
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u64(out, self.reference.0);
        put_i64(out, self.offset_ns);
        out.extend_from_slice(&self.drift_ppm.to_be_bytes());
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        Ok(Self {
            reference: Time(r.u64("bound reference")?),
            offset_ns: r.i64("bound offset")?,
            drift_ppm: r.u32("bound drift")?,
        })
    }
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// The TESLA safety condition (RFC 4082 section 3.5, NDSS'01 TESLA section 3).
///
/// A packet claiming interval `i` that arrives at local time `local` is safe
/// iff the latest interval the sender can be in,
/// `x = floor((upper_bound(local) - T_0) / T_int)`, is below `i + d`: the
/// key `K_i` is disclosed from interval `i + d` on, so while `x < i + d` nobody
/// but the sender can know it yet. Equality is unsafe: at the first instant of
/// interval `i + d` the key may already be on the wire.
#[must_use]
pub fn is_safe(schedule: &Schedule, bound: &ClockBound, delay: u32, i: u32, local: Time) -> bool {
    latest_sender_interval(schedule, bound, local) < i128::from(i) + i128::from(delay)
}

/// `x = floor((upper_bound(local) - T_0) / T_int)`, the latest interval the
/// sender may be in at local time `local` (negative before `T_0`).
#[must_use]
pub fn latest_sender_interval(schedule: &Schedule, bound: &ClockBound, local: Time) -> i128 {
    schedule.interval_number(bound.sender_time_upper_bound(local))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn schedule() -> Schedule {
        Schedule {
            t0: Time(1_000 * MS),
            interval_ns: 100 * MS,
        }
    }

    #[test]
    fn intervals_and_their_boundaries() {
        let s = schedule();
        assert_eq!(s.interval_at(Time(1_000 * MS - 1)), None);
        assert_eq!(s.interval_at(Time(1_000 * MS)), Some(0));
        assert_eq!(s.interval_at(Time(1_100 * MS - 1)), Some(0));
        assert_eq!(s.interval_at(Time(1_100 * MS)), Some(1));
        assert_eq!(s.interval_start(1), Some(Time(1_100 * MS)));
        assert_eq!(s.interval_number(i128::from(1_000 * MS) - 1), -1);
    }

    #[test]
    fn u32_interval_range_has_no_wrap() {
        let s = Schedule {
            t0: Time(5),
            interval_ns: 1,
        };
        let last = Time(5 + u64::from(u32::MAX));
        assert_eq!(s.interval_at(last), Some(u32::MAX));
        assert_eq!(s.interval_at(last.plus_nanos(1)), None, "no wrap to 0");
        assert_eq!(s.interval_start(u32::MAX), Some(last));
        // A long interval: the last interval starts beyond u64 nanoseconds.
        let long = Schedule {
            t0: Time(u64::MAX - 10),
            interval_ns: 86_400_000_000_000,
        };
        assert_eq!(long.interval_start(0), Some(Time(u64::MAX - 10)));
        assert_eq!(long.interval_start(1), None);
        assert_eq!(long.interval_at(Time(u64::MAX)), Some(0));
    }

    #[test]
    fn safety_boundary_to_the_nanosecond() {
        let s = schedule();
        let bound = ClockBound {
            reference: Time(0),
            offset_ns: 7,
            drift_ppm: 0,
        };
        let (i, d) = (10u32, 2u32);
        // K_10 is disclosed from the start of interval 12 (sender time
        // T_0 + 12 * T_int); the local time that maps to it is 7 ns earlier.
        let disclosure = 1_000 * MS + 12 * 100 * MS;
        assert!(is_safe(&s, &bound, d, i, Time(disclosure - 7 - 1)));
        assert!(!is_safe(&s, &bound, d, i, Time(disclosure - 7)));
        assert!(!is_safe(&s, &bound, d, i, Time(disclosure - 7 + 1)));
        assert_eq!(latest_sender_interval(&s, &bound, Time(disclosure - 8)), 11);
        // Before T_0 every interval is safe, and u32::MAX does not overflow.
        assert!(is_safe(&s, &bound, d, 0, Time(0)));
        assert!(!is_safe(&s, &bound, u32::MAX, u32::MAX, Time(u64::MAX)));
        let days = Schedule {
            t0: Time(0),
            interval_ns: 86_400_000_000_000,
        };
        assert!(is_safe(&days, &bound, u32::MAX, u32::MAX, Time(u64::MAX)));
        assert!(!is_safe(&days, &bound, 1, 0, Time(u64::MAX)));
    }

    #[test]
    fn direct_bound_uses_the_whole_round_trip() {
        // Receiver sends at local 0; the sender's clock really is +50 ms ahead.
        // The request takes 1 ms; the sender answers at its time 51 ms; an
        // attacker holds the response for 198 ms (round trip 199 ms).
        let true_offset = 50 * MS as i128;
        let (sent, answered_local, received) = (0u64, MS, 199 * MS);
        let sender_time = Time(answered_local + 50 * MS);
        let bound = ClockBound::direct(Time(sent), sender_time, 0);
        // Our bound holds at every later local time.
        for local in [received, received + 10 * MS, 10_000 * MS] {
            let real = i128::from(local) + true_offset;
            assert!(bound.sender_time_upper_bound(Time(local)) >= real);
        }
        // The midpoint estimate with half the round trip as its error (the
        // factor-of-two error) under-estimates the sender's clock.
        let rtt = i128::from(received - sent);
        let half_bound =
            i128::from(received) + (i128::from(sender_time.0) - i128::from(received)) + rtt / 2;
        assert!(half_bound < i128::from(received) + true_offset);
        // Which turns an unsafe packet into a "safe" one: with d = 1 and
        // T_int = 100 ms, interval 1's key is public from sender time 200 ms.
        let s = Schedule {
            t0: Time(0),
            interval_ns: 100 * MS,
        };
        assert!(!is_safe(&s, &bound, 1, 1, Time(received)));
        assert!(
            s.interval_number(half_bound) < 2,
            "the buggy bound would accept"
        );
    }

    #[test]
    fn drift_widens_the_bound_both_ways_in_time() {
        let b = ClockBound {
            reference: Time(1_000_000_000),
            offset_ns: 0,
            drift_ppm: 100,
        };
        assert_eq!(
            b.sender_time_upper_bound(Time(1_000_000_000)),
            1_000_000_000
        );
        assert_eq!(
            b.sender_time_upper_bound(Time(2_000_000_000)),
            2_000_000_000 + 100_000
        );
        assert_eq!(b.sender_time_upper_bound(Time(0)), 100_000);
        let ind = ClockBound::indirect(Time(0), -5, 20, 0);
        assert_eq!(ind.offset_ns, 15);
    }
}
