//! Validation of the NTPv4 Server Negotiation record body (RFC 8915 section 4.1.7).
//!
//! The body is ASCII: an IPv4 address in dotted decimal, an IPv6 address in RFC 4291 text
//! form without brackets or zone, or a fully qualified domain name in A-label form.
//! NTPsec shipped a client that kept IPv6 brackets; this check refuses them on both sides.

use std::fmt;
use std::net::IpAddr;

/// Longest domain name in text form (RFC 1035 section 2.3.4, without the final dot).
const MAX_NAME_LEN: usize = 253;
/// Longest label (RFC 1035 section 2.3.4).
const MAX_LABEL_LEN: usize = 63;

/// Why a string is not a valid NTPv4 server name.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerNameError {
    /// Empty string.
    Empty,
    /// Longer than 253 bytes.
    TooLong,
    /// An IPv6 literal in brackets or with a zone index.
    BracketsOrZone,
    /// A character or label that no IP address or A-label domain name has.
    Invalid,
}

impl fmt::Display for ServerNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "empty NTP server name",
            Self::TooLong => "NTP server name longer than 253 bytes",
            Self::BracketsOrZone => "IPv6 address with brackets or zone index",
            Self::Invalid => "NTP server name is neither an IP address nor a domain name",
        })
    }
}

impl std::error::Error for ServerNameError {}

/// Checks `name` against RFC 8915 section 4.1.7.
pub fn validate_ntp_server_name(name: &str) -> Result<(), ServerNameError> {
    if name.is_empty() {
        return Err(ServerNameError::Empty);
    }
    if name.contains(['[', ']', '%']) {
        return Err(ServerNameError::BracketsOrZone);
    }
    if name.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.len() > MAX_NAME_LEN {
        return Err(ServerNameError::TooLong);
    }
    let labels_ok = name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= MAX_LABEL_LEN
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    // A name made only of digits and dots that did not parse as IPv4 is a bad address.
    let all_numeric = name.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if labels_ok && !all_numeric {
        Ok(())
    } else {
        Err(ServerNameError::Invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_addresses_and_names() {
        for ok in [
            "192.0.2.1",
            "::1",
            "2001:db8::123",
            "ntp.example.org",
            "xn--bcher-kva.example",
            "localhost",
            "time.example.",
        ] {
            assert_eq!(validate_ntp_server_name(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_brackets_zones_and_junk() {
        assert_eq!(
            validate_ntp_server_name("[::1]"),
            Err(ServerNameError::BracketsOrZone)
        );
        assert_eq!(
            validate_ntp_server_name("fe80::1%eth0"),
            Err(ServerNameError::BracketsOrZone)
        );
        assert_eq!(validate_ntp_server_name(""), Err(ServerNameError::Empty));
        for bad in [
            "a..b",
            "-a.example",
            "a_b.example",
            "300.1.1.1",
            "a b",
            "host:123",
        ] {
            assert_eq!(
                validate_ntp_server_name(bad),
                Err(ServerNameError::Invalid),
                "{bad}"
            );
        }
        assert_eq!(
            validate_ntp_server_name(&"a.".repeat(200)),
            Err(ServerNameError::TooLong)
        );
    }
}
