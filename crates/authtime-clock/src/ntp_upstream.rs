//! An NTP daemon's reply header as a reading (the model of rsntp and cfnts:
//! ask the daemon that disciplines this host's clock once a second and copy
//! what it announces).
//!
//! The daemon serves the same clock as authtime, so its stratum, reference
//! id, reference time, root delay and root dispersion are copied as they are.
//! Leap indicator 3, stratum 0 (which includes every Kiss-o'-Death) and
//! stratum 16 or more mean unsynchronized (RFC 5905 section 7.3).

use core::fmt;

use authtime_wire::{Header, LeapIndicator, Mode, NtpTimestamp, Reader, UnixTime};

use crate::reading::{LeapScope, LeapWarning, SourceReading, SyncedReading, UnsyncCause};

/// A reply that cannot be used.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamReplyError {
    /// Not a whole NTP header.
    Malformed,
    /// Not a server reply (mode 4).
    NotAServerReply(u8),
    /// Its origin timestamp is not our request's transmit timestamp (a stale
    /// or spoofed reply).
    WrongOrigin,
}

impl fmt::Display for UpstreamReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed => f.write_str("the reply is not an NTP packet"),
            Self::NotAServerReply(mode) => write!(f, "the reply has mode {mode}, not 4 (server)"),
            Self::WrongOrigin => {
                f.write_str("the reply does not answer our request (origin timestamp)")
            }
        }
    }
}

impl std::error::Error for UpstreamReplyError {}

/// The reading in `reply`, an answer to a request whose transmit timestamp
/// was `sent`; `now` places the reference time in its NTP era.
///
/// # Errors
/// A reply that is malformed, of another mode, or not ours.
pub fn parse_reply(
    reply: &[u8],
    sent: NtpTimestamp,
    now: UnixTime,
) -> Result<SourceReading, UpstreamReplyError> {
    let header =
        Header::decode(&mut Reader::new(reply)).map_err(|_| UpstreamReplyError::Malformed)?;
    if header.mode != Mode::Server {
        return Err(UpstreamReplyError::NotAServerReply(header.mode.to_bits()));
    }
    if header.origin_ts != sent {
        return Err(UpstreamReplyError::WrongOrigin);
    }
    Ok(reading(&header, now))
}

/// The reading a server reply header gives.
#[must_use]
pub fn reading(header: &Header, now: UnixTime) -> SourceReading {
    let leap = match header.leap {
        LeapIndicator::Unsynchronized => None,
        LeapIndicator::NoWarning => Some(LeapWarning::None),
        LeapIndicator::InsertSecond => Some(LeapWarning::Insert),
        LeapIndicator::DeleteSecond => Some(LeapWarning::Delete),
    };
    match leap {
        Some(leap) if (1..=15).contains(&header.stratum) => {
            SourceReading::Synchronized(SyncedReading {
                stratum: header.stratum,
                reference_id: header.reference_id,
                reference_time: (!header.reference_ts.is_zero())
                    .then(|| header.reference_ts.to_unix_near(now.secs)),
                root_delay: header.root_delay.as_seconds_f64(),
                root_dispersion: header.root_dispersion.as_seconds_f64(),
                leap,
                leap_scope: LeapScope::EndOfMonth,
                leap_in_progress: false,
            })
        }
        _ => SourceReading::Unsynchronized(UnsyncCause::UpstreamUnsynchronized {
            leap: header.leap.to_bits(),
            stratum: header.stratum,
        }),
    }
}

#[doc(hidden)]
/// Fuzz entry: any bytes parse or fail cleanly.
pub fn fuzz_reply(data: &[u8]) {
    let now = UnixTime::new(1_700_000_000, 0);
    if let Ok(header) = Header::decode(&mut Reader::new(data)) {
        let _ = parse_reply(data, header.origin_ts, now);
        let _ = reading(&header, now);
    }
    let _ = parse_reply(data, NtpTimestamp::ZERO, now);
}

#[cfg(test)]
mod tests {
    use authtime_wire::{NtpShort, ReferenceId, Writer};

    use super::*;

    const NOW: i64 = 1_700_000_000;

    fn reply(leap: LeapIndicator, stratum: u8, origin: NtpTimestamp) -> Vec<u8> {
        let mut h = Header::new(Mode::Server);
        h.leap = leap;
        h.stratum = stratum;
        h.reference_id = ReferenceId([127, 127, 1, 1]);
        h.reference_ts = NtpTimestamp::from_unix(NOW - 30, 0);
        h.root_delay = NtpShort::from_seconds_f64(0.002);
        h.root_dispersion = NtpShort::from_seconds_f64(0.020);
        h.origin_ts = origin;
        let mut buf = vec![0; 48];
        h.encode(&mut Writer::new(&mut buf)).expect("48 bytes");
        buf
    }

    #[test]
    fn a_synchronized_daemon_is_copied() {
        let sent = NtpTimestamp::from_unix(NOW, 5);
        let r = parse_reply(
            &reply(LeapIndicator::NoWarning, 5, sent),
            sent,
            UnixTime::new(NOW, 0),
        );
        let Ok(SourceReading::Synchronized(r)) = r else {
            panic!("{r:?}");
        };
        assert_eq!(
            (r.stratum, r.reference_id),
            (5, ReferenceId([127, 127, 1, 1]))
        );
        assert_eq!(r.reference_time, Some(UnixTime::new(NOW - 30, 0)));
        assert!((r.root_dispersion - 0.020).abs() < 2e-5);
        assert_eq!(r.leap_scope, LeapScope::EndOfMonth);
    }

    #[test]
    fn leap_3_stratum_0_and_16_are_unsynchronized() {
        let sent = NtpTimestamp::from_unix(NOW, 5);
        let now = UnixTime::new(NOW, 0);
        for (leap, stratum) in [
            (LeapIndicator::Unsynchronized, 0),
            (LeapIndicator::Unsynchronized, 3),
            (LeapIndicator::NoWarning, 0),
            (LeapIndicator::NoWarning, 16),
        ] {
            let r = parse_reply(&reply(leap, stratum, sent), sent, now);
            assert!(
                matches!(r, Ok(SourceReading::Unsynchronized(_))),
                "{leap:?} {stratum}: {r:?}"
            );
        }
    }

    #[test]
    fn foreign_or_broken_replies_are_errors() {
        let sent = NtpTimestamp::from_unix(NOW, 5);
        let now = UnixTime::new(NOW, 0);
        let other = reply(LeapIndicator::NoWarning, 2, NtpTimestamp::from_unix(NOW, 6));
        assert_eq!(
            parse_reply(&other, sent, now),
            Err(UpstreamReplyError::WrongOrigin)
        );
        assert_eq!(
            parse_reply(&other[..20], sent, now),
            Err(UpstreamReplyError::Malformed)
        );
        let mut client = reply(LeapIndicator::NoWarning, 2, sent);
        client[0] = (client[0] & !7) | 3;
        assert_eq!(
            parse_reply(&client, sent, now),
            Err(UpstreamReplyError::NotAServerReply(3))
        );
        fuzz_reply(&client);
        fuzz_reply(&[]);
    }
}
