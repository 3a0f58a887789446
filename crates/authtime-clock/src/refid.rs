//! Reference ids (RFC 5905 section 7.3): an ASCII source name at stratum 1,
//! the upstream server's address above.
//!
//! "If using the IPv4 address family, the identifier is the four-octet IPv4
//! address. If using the IPv6 address family, it is the first four octets of
//! the MD5 hash of the IPv6 address." A name such as `LOCL` above stratum 1
//! is read by clients as an IPv4 address (76.79.67.76) and breaks their loop
//! detection, so [`check_for_stratum`] refuses it.

use core::fmt;
use std::net::IpAddr;

use authtime_wire::ReferenceId;
use md5::{Digest, Md5};

/// The reference id of an upstream server at `addr`.
#[must_use]
pub fn from_upstream(addr: IpAddr) -> ReferenceId {
    match addr {
        IpAddr::V4(v4) => ReferenceId::from_ipv4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => ReferenceId::from_ipv4(v4),
            None => {
                let digest = Md5::digest(v6.octets());
                ReferenceId([digest[0], digest[1], digest[2], digest[3]])
            }
        },
    }
}

/// What a reference id in the configuration may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefIdText {
    /// Up to four printable ASCII characters (stratum 1 only).
    Name(ReferenceId),
    /// An IPv4 or IPv6 address of the upstream.
    Address(IpAddr),
}

/// Parses a configured reference id: an IP address, or 1 to 4 ASCII letters
/// and digits (padded with NUL).
///
/// # Errors
/// Anything else, with the reason.
pub fn parse(text: &str) -> Result<RefIdText, String> {
    if let Ok(addr) = text.parse::<IpAddr>() {
        return Ok(RefIdText::Address(addr));
    }
    if text.is_empty() || text.len() > 4 {
        return Err(format!(
            "{text:?} is neither an IP address nor a name of 1 to 4 ASCII characters"
        ));
    }
    if !text.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(format!(
            "{text:?}: a name takes ASCII letters and digits only"
        ));
    }
    let mut id = [0u8; 4];
    id[..text.len()].copy_from_slice(text.as_bytes());
    Ok(RefIdText::Name(ReferenceId(id)))
}

/// A reference id that does not fit the stratum it is announced at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefIdForStratumError {
    /// The stratum.
    pub stratum: u8,
    /// The name given.
    pub name: String,
}

impl fmt::Display for RefIdForStratumError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "reference id {:?} is a name, which RFC 5905 allows only at stratum 1; at stratum {} \
             give the upstream server's IP address (clients would read {:?} as an IPv4 address)",
            self.name, self.stratum, self.name
        )
    }
}

impl std::error::Error for RefIdForStratumError {}

/// The reference id for `text` at `stratum`: names only at stratum 1,
/// addresses (IPv4 as is, IPv6 hashed) at any stratum.
///
/// # Errors
/// A name above stratum 1.
pub fn check_for_stratum(
    text: &RefIdText,
    stratum: u8,
) -> Result<ReferenceId, RefIdForStratumError> {
    match text {
        RefIdText::Address(addr) => Ok(from_upstream(*addr)),
        RefIdText::Name(id) if stratum <= 1 => Ok(*id),
        RefIdText::Name(id) => Err(RefIdForStratumError {
            stratum,
            name: String::from_utf8_lossy(&id.0)
                .trim_end_matches('\0')
                .to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_is_the_address() {
        assert_eq!(
            from_upstream("192.0.2.7".parse().expect("ip")),
            ReferenceId([192, 0, 2, 7])
        );
        assert_eq!(
            from_upstream("::ffff:192.0.2.7".parse().expect("ip")),
            ReferenceId([192, 0, 2, 7])
        );
    }

    #[test]
    fn ipv6_is_the_md5_prefix() {
        // MD5 of the 16 octets of 2001:db8::1, computed independently with
        // Python's hashlib: 39ab9b3749629b8f2c7ccf39226f680c.
        let addr: std::net::Ipv6Addr = "2001:db8::1".parse().expect("ip");
        let digest = Md5::digest(addr.octets());
        assert_eq!(
            from_upstream(IpAddr::V6(addr)),
            ReferenceId([digest[0], digest[1], digest[2], digest[3]])
        );
        assert_eq!(from_upstream(IpAddr::V6(addr)).to_u32(), 0x39ab_9b37);
    }

    #[test]
    fn names_only_at_stratum_one() {
        let locl = parse("LOCL").expect("name");
        assert_eq!(check_for_stratum(&locl, 1), Ok(ReferenceId(*b"LOCL")));
        let err = check_for_stratum(&locl, 2).expect_err("LOCL at stratum 2");
        assert!(err.to_string().contains("stratum 2"), "{err}");
        let gps = parse("GPS").expect("name");
        assert_eq!(check_for_stratum(&gps, 1), Ok(ReferenceId(*b"GPS\0")));
        let addr = parse("192.0.2.1").expect("address");
        assert_eq!(check_for_stratum(&addr, 3), Ok(ReferenceId([192, 0, 2, 1])));
    }

    #[test]
    fn malformed_ids_are_refused() {
        for bad in ["", "TOOLONG", "A B", "é", "1.2.3"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
