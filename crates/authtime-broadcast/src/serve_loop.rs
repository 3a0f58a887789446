//! The broadcast server's loop: one packet at the start of every TESLA
//! interval, stamped with the clock source's latest announcement, and sync
//! requests answered in between. Runs until a duration passes; reports
//! progress as [`ServeStatus`] values and prints nothing.

use std::fmt;
use std::net::SocketAddrV4;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use authtime_clock::Announcement;
use authtime_tesla::{ParamError, Params, Time};

use crate::net::{BroadcastError, BroadcastServer, unix_time};

/// How often the loop reports its counters.
const STATUS_EVERY: Duration = Duration::from_secs(10);
/// Longest wait for sync requests in one turn.
const MAX_SYNC_WAIT: Duration = Duration::from_millis(10);

/// The TESLA parameters of a broadcast server starting at `now`: intervals
/// of `interval_ns` aligned to the Unix epoch, HMAC-SHA-256 with 16-byte
/// tags, disclosure delay `d`, chains of `n` keys.
///
/// # Errors
/// Parameters TESLA refuses (see [`Params::validate`]).
pub fn server_params(now: Time, interval_ns: u64, d: u32, n: u32) -> Result<Params, ParamError> {
    let mac = authtime_tesla::mac_by_name("hmac-sha256")?;
    let params = Params {
        t0: Time(now.0 - now.0.checked_rem(interval_ns).unwrap_or(0)),
        interval_ns,
        disclosure_delay: d,
        chain_len: n,
        mac,
        tag_len: 16,
        rollover_lead: d.saturating_mul(4).max(16).min((n / 2).max(1)),
    };
    params.validate()?;
    Ok(params)
}

/// The counters, reported every ten seconds and at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeStatus {
    /// Packets multicast so far.
    pub sent: u64,
    /// Sync requests answered so far.
    pub syncs: u64,
}

/// Why the loop stopped early.
#[non_exhaustive]
#[derive(Debug)]
pub enum ServeLoopError {
    /// The sender's key chains are used up.
    ScheduleEnded,
    /// A packet could not be multicast to the group.
    Broadcast {
        /// The group.
        group: SocketAddrV4,
        /// What failed.
        error: BroadcastError,
    },
    /// The sync socket failed.
    SyncSocket(BroadcastError),
}

impl fmt::Display for ServeLoopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ScheduleEnded => f.write_str("the sender's schedule ended"),
            Self::Broadcast { group, error } => write!(f, "broadcast to {group}: {error}"),
            Self::SyncSocket(e) => write!(f, "sync socket: {e}"),
        }
    }
}

impl std::error::Error for ServeLoopError {}

/// Runs `server` until `duration` passes (forever without one). `clock`
/// gives the announcement for each interval's packet; `on_status` gets the
/// counters every ten seconds and stops the loop early by returning
/// [`ControlFlow::Break`].
///
/// # Errors
/// The schedule ended, or a socket failed.
pub fn run_server(
    server: &mut BroadcastServer,
    clock: &mut dyn FnMut() -> Announcement,
    duration: Option<Duration>,
    on_status: &mut dyn FnMut(ServeStatus) -> ControlFlow<()>,
) -> Result<ServeStatus, ServeLoopError> {
    let schedule = server.schedule();
    let started = Instant::now();
    let mut last_interval = None;
    let mut last_status = Instant::now();
    loop {
        if duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        let now = unix_time();
        let interval = schedule
            .interval_at(now)
            .ok_or(ServeLoopError::ScheduleEnded)?;
        if last_interval != Some(interval) {
            last_interval = Some(interval);
            server.set_clock(clock());
            server
                .broadcast()
                .map_err(|error| ServeLoopError::Broadcast {
                    group: server.group(),
                    error,
                })?;
        }
        // Wait for sync requests until the next interval starts (at most 10 ms).
        let next = schedule
            .interval_start(interval.saturating_add(1))
            .unwrap_or(now);
        let wait = Duration::from_nanos(next.0.saturating_sub(unix_time().0))
            .clamp(Duration::from_micros(100), MAX_SYNC_WAIT);
        server
            .answer_syncs(wait)
            .map_err(ServeLoopError::SyncSocket)?;
        if last_status.elapsed() >= STATUS_EVERY {
            last_status = Instant::now();
            if on_status(server.status()).is_break() {
                break;
            }
        }
    }
    Ok(server.status())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_intervals_start_on_multiples_of_their_length() {
        let interval_ns = 250_000_000;
        let now = Time(1_700_000_000_123_456_789);
        let params = server_params(now, interval_ns, 2, 1024).expect("params");
        assert_eq!(params.t0.0 % interval_ns, 0);
        assert!(params.t0 <= now && now.0 - params.t0.0 < interval_ns);
        assert_eq!((params.tag_len, params.rollover_lead), (16, 16));
        assert!(server_params(now, interval_ns, 0, 1024).is_err());
    }
}
