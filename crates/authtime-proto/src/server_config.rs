//! What a server puts in its replies, and how it treats failed authentication.

use core::fmt;

use authtime_wire::{LeapIndicator, NtpShort, NtpTimestamp, ReferenceId};

/// What to do with a request whose MAC fails or names an unknown key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthFailurePolicy {
    /// Drop it and count it. chrony does this (checked against chronyd 4.3:
    /// no reply to a bad MAC, an unknown key id, or a crypto-NAK request).
    #[default]
    Drop,
    /// Answer with a crypto-NAK (RFC 5905 section 7.3: key id 0, no digest), as
    /// ntpd does, so that the client learns its key is not accepted.
    CryptoNak,
}

/// The server's view of its clock and its policy. The clock fields change as
/// the daemon's clock discipline runs; [`crate::Server::set_config`] replaces them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerConfig {
    /// Stratum served, 1 to 15, or 0 with leap indicator 3 (unsynchronized).
    pub stratum: u8,
    /// Reference id served (a source name at stratum 1, the upstream server's
    /// address above).
    pub reference_id: ReferenceId,
    /// When the clock was last set or corrected.
    pub reference_ts: NtpTimestamp,
    /// log2 of the clock's precision in seconds.
    pub precision: i8,
    /// Leap second warning.
    pub leap: LeapIndicator,
    /// Round-trip delay to the reference clock.
    pub root_delay: NtpShort,
    /// Dispersion to the reference clock.
    pub root_dispersion: NtpShort,
    /// Failed authentication: drop (default, as chrony) or crypto-NAK.
    pub auth_failure: AuthFailurePolicy,
    /// Whether requests without a MAC are dropped rather than answered.
    pub require_authentication: bool,
}

impl Default for ServerConfig {
    /// Stratum 2 with reference id `LOCL`, precision 2^-20 s (about 1 µs), no
    /// leap warning, zero root delay and dispersion, failed authentication
    /// dropped, plain requests answered.
    fn default() -> Self {
        Self {
            stratum: 2,
            reference_id: ReferenceId::from_ascii(*b"LOCL"),
            reference_ts: NtpTimestamp::ZERO,
            precision: -20,
            leap: LeapIndicator::NoWarning,
            root_delay: NtpShort::ZERO,
            root_dispersion: NtpShort::ZERO,
            auth_failure: AuthFailurePolicy::Drop,
            require_authentication: false,
        }
    }
}

/// A [`ServerConfig`] value that makes no sense on the wire.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerConfigError {
    /// Stratum outside 1..=15, other than 0 with leap 3 (0 alone is
    /// Kiss-o'-Death; 16 is sent as 0).
    Stratum(u8),
    /// Precision outside -32..=0 (a clock is not coarser than a second).
    Precision(i8),
}

impl fmt::Display for ServerConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stratum(s) => write!(f, "stratum {s} is outside 1..=15"),
            Self::Precision(p) => write!(f, "precision {p} is outside -32..=0"),
        }
    }
}

impl std::error::Error for ServerConfigError {}

impl ServerConfig {
    /// Checks that the values make sense on the wire.
    ///
    /// # Errors
    /// The first value that does not.
    pub fn check(&self) -> Result<(), ServerConfigError> {
        // Stratum 0 with leap 3 is how an unsynchronized clock is announced
        // (chrony's reply, RFC 5905 section 11.1 mapping MAXSTRAT to 0).
        let unsynchronized = self.stratum == 0 && self.leap == LeapIndicator::Unsynchronized;
        if !(1..=15).contains(&self.stratum) && !unsynchronized {
            return Err(ServerConfigError::Stratum(self.stratum));
        }
        if !(-32..=0).contains(&self.precision) {
            return Err(ServerConfigError::Precision(self.precision));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_drops_like_chrony() {
        let c = ServerConfig::default();
        assert_eq!(c.check(), Ok(()));
        assert_eq!(c.auth_failure, AuthFailurePolicy::Drop);
        let bad = ServerConfig { stratum: 16, ..c };
        assert_eq!(bad.check(), Err(ServerConfigError::Stratum(16)));
        let unsynchronized = ServerConfig {
            stratum: 0,
            leap: LeapIndicator::Unsynchronized,
            ..c
        };
        assert_eq!(unsynchronized.check(), Ok(()));
        let bad = ServerConfig { stratum: 0, ..c };
        assert_eq!(bad.check(), Err(ServerConfigError::Stratum(0)));
        let bad = ServerConfig { precision: 3, ..c };
        assert_eq!(bad.check(), Err(ServerConfigError::Precision(3)));
    }
}
