//! Kiss-o'-Death codes (RFC 5905 section 7.4, RFC 8915 section 5.7).

use core::fmt;

/// The four ASCII characters a Kiss-o'-Death packet (stratum 0) carries in
/// its reference id field (RFC 5905 section 7.4, figure 13). Unknown codes are
/// kept as they came and survive a round trip.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KissCode(pub [u8; 4]);

impl KissCode {
    /// The association belongs to an anycast server.
    pub const ACST: Self = Self(*b"ACST");
    /// Server authentication failed.
    pub const AUTH: Self = Self(*b"AUTH");
    /// Autokey sequence failed.
    pub const AUTO: Self = Self(*b"AUTO");
    /// The association belongs to a broadcast server.
    pub const BCST: Self = Self(*b"BCST");
    /// Cryptographic authentication or identification failed.
    pub const CRYP: Self = Self(*b"CRYP");
    /// Access denied by remote server: stop sending to it.
    pub const DENY: Self = Self(*b"DENY");
    /// Lost peer in symmetric mode.
    pub const DROP: Self = Self(*b"DROP");
    /// Access denied due to local policy: stop sending to it.
    pub const RSTR: Self = Self(*b"RSTR");
    /// The association has not yet synchronized for the first time.
    pub const INIT: Self = Self(*b"INIT");
    /// The association belongs to a dynamically discovered server.
    pub const MCST: Self = Self(*b"MCST");
    /// No key found: not yet established or a configuration error.
    pub const NKEY: Self = Self(*b"NKEY");
    /// NTS negative acknowledgment: the cookie or authenticator failed (RFC 8915 section 5.7).
    pub const NTSN: Self = Self(*b"NTSN");
    /// Rate exceeded: reduce the polling rate.
    pub const RATE: Self = Self(*b"RATE");
    /// Alteration of association from a remote host running ntpdc.
    pub const RMOT: Self = Self(*b"RMOT");
    /// A step change in system time has occurred.
    pub const STEP: Self = Self(*b"STEP");

    const KNOWN: [(Self, &'static str); 15] = [
        (Self::ACST, "ACST"),
        (Self::AUTH, "AUTH"),
        (Self::AUTO, "AUTO"),
        (Self::BCST, "BCST"),
        (Self::CRYP, "CRYP"),
        (Self::DENY, "DENY"),
        (Self::DROP, "DROP"),
        (Self::RSTR, "RSTR"),
        (Self::INIT, "INIT"),
        (Self::MCST, "MCST"),
        (Self::NKEY, "NKEY"),
        (Self::NTSN, "NTSN"),
        (Self::RATE, "RATE"),
        (Self::RMOT, "RMOT"),
        (Self::STEP, "STEP"),
    ];

    /// The registered name of the code, or `None` for a code RFC 5905 and
    /// RFC 8915 do not define.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        Self::KNOWN
            .iter()
            .find(|(code, _)| *code == self)
            .map(|(_, name)| *name)
    }

    /// Whether the client must stop sending to this server (DENY, RSTR;
    /// RFC 5905 section 7.4).
    #[must_use]
    pub fn means_stop(self) -> bool {
        self == Self::DENY || self == Self::RSTR
    }

    /// Whether the client must reduce its polling rate (RATE; RFC 5905 section 7.4).
    #[must_use]
    pub fn means_slow_down(self) -> bool {
        self == Self::RATE
    }
}

impl fmt::Debug for KissCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KissCode({self})")
    }
}

impl fmt::Display for KissCode {
    /// The ASCII characters when printable, hex otherwise (`0x00ff1234`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.iter().all(|b| b.is_ascii_graphic()) {
            for &b in &self.0 {
                write!(f, "{}", char::from(b))?;
            }
            Ok(())
        } else {
            write!(f, "0x{:08x}", u32::from_be_bytes(self.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    #[test]
    fn known_codes_have_names_and_unknown_ones_are_kept() {
        assert_eq!(KissCode::RATE.name(), Some("RATE"));
        assert_eq!(KissCode::NTSN.name(), Some("NTSN"));
        let odd = KissCode(*b"ABCD");
        assert_eq!(odd.name(), None);
        assert_eq!(format!("{odd:?}"), "KissCode(ABCD)");
        assert_eq!(format!("{}", KissCode([0, 1, 2, 3])), "0x00010203");
        for (code, name) in KissCode::KNOWN {
            assert_eq!(code.0, name.as_bytes());
        }
    }

    #[test]
    fn reactions() {
        assert!(KissCode::DENY.means_stop() && KissCode::RSTR.means_stop());
        assert!(!KissCode::RATE.means_stop() && KissCode::RATE.means_slow_down());
    }
}
