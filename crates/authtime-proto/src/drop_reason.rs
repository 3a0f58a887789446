//! Why the server did not answer a datagram with time, and what it does instead.

use core::fmt;

use authtime_wire::{Mode, WireError};

use crate::AuthFailurePolicy;

/// Why a request gets no time reply: one variant per cause.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The datagram is not a well-formed NTP packet.
    Malformed(WireError),
    /// A version this server does not answer (it answers 1 to 4).
    UnsupportedVersion {
        /// The version field.
        version: u8,
    },
    /// Not a client request (mode 3): a server reply, broadcast, control message...
    NotARequest {
        /// The mode field.
        mode: Mode,
    },
    /// A request carrying a crypto-NAK instead of a MAC: it authenticates nothing.
    CryptoNakInRequest,
    /// A request without MAC while the server requires authentication.
    Unauthenticated,
    /// The MAC names a key the server does not have.
    UnknownKey {
        /// The key id in the request.
        key_id: u32,
    },
    /// The MAC does not verify under the key it names (or has the wrong length
    /// for that key).
    BadMac {
        /// The key id in the request.
        key_id: u32,
    },
    /// The key's MAC refused to compute the reply's tag (a MAC that needs a
    /// nonce; key files never produce one).
    KeyUnusable {
        /// The key id.
        key_id: u32,
    },
    /// The rate limiter refused the request and no Kiss-o'-Death was due.
    RateLimited,
    /// The caller's output buffer cannot hold the reply.
    OutputTooSmall,
    /// The reply would be larger than the request (never expected; a guard
    /// against amplification).
    ReplyLargerThanRequest,
    /// An NTS request (RFC 8915) that the NTS handler dropped; the reason is
    /// counted by that handler.
    Nts,
}

/// What a server does about a [`DropReason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaction {
    /// Nothing is sent; the datagram is counted under the reason's counter name.
    Drop,
    /// A server reply with a crypto-NAK (key id 0, no digest) is sent.
    CryptoNak,
}

impl DropReason {
    /// Short stable name for the drop counter (`malformed`, `bad_mac`, ...).
    #[must_use]
    pub const fn counter_name(&self) -> &'static str {
        match self {
            Self::Malformed(_) => "malformed",
            Self::UnsupportedVersion { .. } => "unsupported_version",
            Self::NotARequest { .. } => "not_a_request",
            Self::CryptoNakInRequest => "crypto_nak_in_request",
            Self::Unauthenticated => "unauthenticated",
            Self::UnknownKey { .. } => "unknown_key",
            Self::BadMac { .. } => "bad_mac",
            Self::KeyUnusable { .. } => "key_unusable",
            Self::RateLimited => "rate_limited",
            Self::OutputTooSmall => "output_too_small",
            Self::ReplyLargerThanRequest => "reply_larger_than_request",
            Self::Nts => "nts",
        }
    }

    /// The key id of an authentication failure (unknown key or bad MAC).
    #[must_use]
    pub const fn failed_key_id(&self) -> Option<u32> {
        match self {
            Self::UnknownKey { key_id } | Self::BadMac { key_id } => Some(*key_id),
            _ => None,
        }
    }

    /// The server's reaction under `policy`: authentication failures get a
    /// crypto-NAK when the policy says so; everything else is dropped.
    #[must_use]
    pub const fn reaction(&self, policy: AuthFailurePolicy) -> Reaction {
        match (self, policy) {
            (Self::UnknownKey { .. } | Self::BadMac { .. }, AuthFailurePolicy::CryptoNak) => {
                Reaction::CryptoNak
            }
            _ => Reaction::Drop,
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(e) => write!(f, "malformed packet: {e}"),
            Self::UnsupportedVersion { version } => write!(f, "NTP version {version} not served"),
            Self::NotARequest { mode } => write!(f, "mode {mode:?} is not a client request"),
            Self::CryptoNakInRequest => f.write_str("request carries a crypto-NAK"),
            Self::Unauthenticated => {
                f.write_str("request has no MAC and authentication is required")
            }
            Self::UnknownKey { key_id } => write!(f, "MAC names unknown key {key_id}"),
            Self::BadMac { key_id } => write!(f, "MAC does not verify under key {key_id}"),
            Self::KeyUnusable { key_id } => write!(f, "key {key_id} cannot compute a reply MAC"),
            Self::RateLimited => f.write_str("client exceeds its request rate"),
            Self::OutputTooSmall => f.write_str("output buffer too small for the reply"),
            Self::ReplyLargerThanRequest => f.write_str("reply would be larger than the request"),
            Self::Nts => f.write_str("NTS request dropped"),
        }
    }
}

impl std::error::Error for DropReason {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_auth_failures_can_get_a_crypto_nak() {
        let all = [
            DropReason::Malformed(WireError::HeaderTooShort { len: 0 }),
            DropReason::UnsupportedVersion { version: 5 },
            DropReason::NotARequest { mode: Mode::Server },
            DropReason::CryptoNakInRequest,
            DropReason::Unauthenticated,
            DropReason::UnknownKey { key_id: 1 },
            DropReason::BadMac { key_id: 2 },
            DropReason::KeyUnusable { key_id: 3 },
            DropReason::RateLimited,
            DropReason::OutputTooSmall,
            DropReason::ReplyLargerThanRequest,
            DropReason::Nts,
        ];
        for (i, r) in all.iter().enumerate() {
            assert_eq!(r.reaction(AuthFailurePolicy::Drop), Reaction::Drop);
            let nak = r.reaction(AuthFailurePolicy::CryptoNak) == Reaction::CryptoNak;
            assert_eq!(nak, r.failed_key_id().is_some(), "{r}");
            for other in &all[i + 1..] {
                assert_ne!(r.counter_name(), other.counter_name());
            }
        }
    }
}
