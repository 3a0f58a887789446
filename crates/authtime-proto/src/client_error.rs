//! Why a client did not get a sample from a datagram, and what it should do.

use core::fmt;

use authtime_wire::{KissCode, LeapIndicator, Mode, NtpDuration, NtpShort, WireError};

use crate::AuthStatus;

/// Why a response does not give a sample: one variant per cause.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientError {
    /// The output buffer cannot hold the request.
    OutputTooSmall,
    /// The datagram is not a well-formed NTP packet.
    Malformed(WireError),
    /// Not a server reply (mode 4).
    NotAServerReply {
        /// The mode field.
        mode: Mode,
    },
    /// The origin timestamp is not our request's transmit timestamp: a reply
    /// to another (or an old) request, or a forgery (RFC 5905 section 8, "bogus").
    OriginMismatch,
    /// The server answered our MAC with a crypto-NAK: it does not have our
    /// key, or our MAC did not verify there. The NAK itself is not
    /// authenticated.
    CryptoNak,
    /// We sent a MAC and the reply has none.
    MissingMac,
    /// We sent no MAC and the reply has one (or a crypto-NAK).
    UnexpectedMac,
    /// The reply's MAC is under another key than ours.
    WrongKeyId {
        /// Our key id.
        expected: u32,
        /// The reply's.
        got: u32,
    },
    /// The reply's MAC does not verify under our key.
    BadMac {
        /// The key id.
        key_id: u32,
    },
    /// A Kiss-o'-Death (stratum 0).
    KissOfDeath {
        /// The kiss code.
        code: KissCode,
        /// Whether its MAC verified under our key (an unauthenticated kiss
        /// may be forged by anyone who saw our request).
        authenticated: bool,
    },
    /// The server answered, but says its clock is not synchronized: leap
    /// indicator 3, stratum 16 and above, or stratum 0 with reference id 0
    /// (chrony's unsynchronized reply, which is not a Kiss-o'-Death: kiss
    /// codes are ASCII, RFC 5905 section 7.4). The reply is otherwise valid
    /// (an NTS client keeps its cookies).
    Unsynchronized {
        /// The leap indicator it sent.
        leap: LeapIndicator,
        /// The stratum it sent.
        stratum: u8,
        /// How the reply was authenticated.
        auth: AuthStatus,
    },
    /// The server answered, but its root distance (root delay / 2 + root
    /// dispersion + this exchange's share, [`crate::Sample::root_distance`])
    /// exceeds RFC 5905's MAXDIST of 1.5 s ([`crate::MAX_ROOT_DISTANCE`]):
    /// the server is unfit (section 11.2.1), its time is not to be used. The
    /// reply is otherwise valid (an NTS client keeps its cookies).
    RootDistanceTooLarge {
        /// The root distance computed for this reply.
        root_distance: NtpDuration,
        /// The root delay it sent.
        root_delay: NtpShort,
        /// The root dispersion it sent.
        root_dispersion: NtpShort,
        /// How the reply was authenticated.
        auth: AuthStatus,
    },
    /// A zero receive or transmit timestamp, a server that sent before it
    /// received, or a receive time before our send time.
    InvalidTimestamps,
}

/// What a client does about a [`ClientError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientReaction {
    /// Ignore the datagram and keep waiting for the real reply: anyone on
    /// the path can send such datagrams.
    IgnorePacket,
    /// The exchange is over without a sample (count it as lost).
    DiscardSample,
    /// The server refuses our authentication: report it, do not use the server.
    AuthenticationFailed,
    /// Poll this server less often (RATE).
    SlowDown,
    /// Stop using this server (DENY, RSTR).
    Stop,
    /// A bug in the caller.
    ApiMisuse,
}

impl ClientError {
    /// The reaction RFC 5905 (sections 7.4 and 8) and RFC 8915 suggest.
    #[must_use]
    pub fn reaction(&self) -> ClientReaction {
        match self {
            Self::OutputTooSmall => ClientReaction::ApiMisuse,
            Self::Malformed(_)
            | Self::NotAServerReply { .. }
            | Self::OriginMismatch
            | Self::MissingMac
            | Self::UnexpectedMac
            | Self::WrongKeyId { .. }
            | Self::BadMac { .. } => ClientReaction::IgnorePacket,
            Self::CryptoNak => ClientReaction::AuthenticationFailed,
            Self::KissOfDeath { code, .. } if code.means_stop() => ClientReaction::Stop,
            Self::KissOfDeath { code, .. } if code.means_slow_down() => ClientReaction::SlowDown,
            Self::KissOfDeath { .. }
            | Self::Unsynchronized { .. }
            | Self::RootDistanceTooLarge { .. }
            | Self::InvalidTimestamps => ClientReaction::DiscardSample,
        }
    }

    /// Short stable name for counters and `--json` output.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::OutputTooSmall => "output_too_small",
            Self::Malformed(_) => "malformed",
            Self::NotAServerReply { .. } => "not_a_server_reply",
            Self::OriginMismatch => "origin_mismatch",
            Self::CryptoNak => "crypto_nak",
            Self::MissingMac => "missing_mac",
            Self::UnexpectedMac => "unexpected_mac",
            Self::WrongKeyId { .. } => "wrong_key_id",
            Self::BadMac { .. } => "bad_mac",
            Self::KissOfDeath { .. } => "kiss_of_death",
            Self::Unsynchronized { .. } => "unsynchronized",
            Self::RootDistanceTooLarge { .. } => "root_distance_too_large",
            Self::InvalidTimestamps => "invalid_timestamps",
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutputTooSmall => f.write_str("output buffer too small for the request"),
            Self::Malformed(e) => write!(f, "malformed reply: {e}"),
            Self::NotAServerReply { mode } => write!(f, "mode {mode:?} is not a server reply"),
            Self::OriginMismatch => {
                f.write_str("reply does not answer our request (origin timestamp)")
            }
            Self::CryptoNak => {
                f.write_str("server answered with a crypto-NAK: it does not accept our key")
            }
            Self::MissingMac => f.write_str("reply is not authenticated"),
            Self::UnexpectedMac => f.write_str("reply carries a MAC we did not ask for"),
            Self::WrongKeyId { expected, got } => {
                write!(
                    f,
                    "reply is authenticated with key {got}, not our key {expected}"
                )
            }
            Self::BadMac { key_id } => write!(f, "reply MAC does not verify under key {key_id}"),
            Self::KissOfDeath {
                code,
                authenticated,
            } => write!(
                f,
                "server sent Kiss-o'-Death {code}{}",
                if *authenticated {
                    " (authenticated)"
                } else {
                    ""
                }
            ),
            Self::Unsynchronized { leap, stratum, .. } => write!(
                f,
                "server unsynchronized (leap {}, stratum {stratum}): it says its clock is not to be trusted",
                leap.to_bits()
            ),
            Self::RootDistanceTooLarge {
                root_distance,
                root_dispersion,
                ..
            } => write!(
                f,
                "server unfit: root distance {:.3} s (root dispersion {:.3} s) exceeds {} s \
                 (RFC 5905 MAXDIST)",
                root_distance.as_seconds_f64(),
                root_dispersion.as_seconds_f64(),
                crate::MAX_ROOT_DISTANCE
            ),
            Self::InvalidTimestamps => f.write_str("reply timestamps are inconsistent"),
        }
    }
}

impl std::error::Error for ClientError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kiss_codes_map_to_their_reactions() {
        let kiss = |code| ClientError::KissOfDeath {
            code,
            authenticated: false,
        };
        assert_eq!(kiss(KissCode::RATE).reaction(), ClientReaction::SlowDown);
        assert_eq!(kiss(KissCode::DENY).reaction(), ClientReaction::Stop);
        assert_eq!(kiss(KissCode::RSTR).reaction(), ClientReaction::Stop);
        assert_eq!(
            kiss(KissCode::INIT).reaction(),
            ClientReaction::DiscardSample
        );
        assert_eq!(
            ClientError::BadMac { key_id: 1 }.reaction(),
            ClientReaction::IgnorePacket
        );
        assert_eq!(
            ClientError::CryptoNak.reaction(),
            ClientReaction::AuthenticationFailed
        );
        assert!(kiss(KissCode::RATE).to_string().contains("RATE"));
    }
}
