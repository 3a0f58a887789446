//! The daemon's only time source: the system clock, read here and passed to
//! the sans-IO server as timestamps.

pub mod chrony_client;
#[expect(
    unsafe_code,
    reason = "adjtimex is FFI; each block has a SAFETY comment"
)]
pub mod source;
pub mod state;
pub mod step_watch;

use std::time::{SystemTime, UNIX_EPOCH};

use authtime_wire::NtpTimestamp;

/// The system clock now, as an NTP timestamp.
#[must_use]
pub fn now() -> NtpTimestamp {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => NtpTimestamp::from_unix(
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        ),
        // A clock before 1970 is broken; era arithmetic still works from 0.
        Err(_) => NtpTimestamp::from_unix(0, 0),
    }
}

/// A `timespec` of the real-time clock (a kernel receive timestamp) as an NTP timestamp.
#[must_use]
pub fn from_realtime(secs: i64, nanos: u32) -> NtpTimestamp {
    NtpTimestamp::from_unix(secs, nanos.min(999_999_999))
}

/// The system clock now, as Unix time.
#[must_use]
pub fn now_unix() -> authtime_wire::UnixTime {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => authtime_wire::UnixTime::new(
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        ),
        Err(_) => authtime_wire::UnixTime::new(0, 0),
    }
}
