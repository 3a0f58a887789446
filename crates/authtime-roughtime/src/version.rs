//! The wire versions this crate speaks, their negotiation and their
//! signature context strings.
//!
//! # Context strings, and why they differ between the versions
//!
//! Every SIG is an Ed25519 signature over a context string, its terminating
//! zero byte, and the signed tag's value (draft-ietf-ntp-roughtime-19 §5.2.1:
//! "All context strings include a terminating zero byte").
//!
//! - **0x8000000c** (drafts 12 to 19) signs with `"RoughTime v1 delegation
//!   signature\0"` and `"RoughTime v1 response signature\0"` (capital T), the
//!   text of draft 19 §5.2.1 and §5.2.6. The test
//!   `verify::tests::roughenough_rfc_response_071039e5_verifies` shows
//!   it: roughenough's captured 0x8000000c exchange verifies with these
//!   strings and with nothing else.
//! - **Version 1** (RFC 10049) signs with `"Roughtime v1 delegation
//!   signature\0"` and `"Roughtime v1 response signature\0"` (lower-case t),
//!   the text authtime issue 21 quotes from the RFC and the strings
//!   roughenough 2.2.0 uses for version 1 (`roughenough-protocol` 2.2.0,
//!   `src/protocol_ver.rs`: "RFC 10049 5.2.1 and 5.2.6"). The test
//!   `verify::tests::roughenough_2_2_rfc10049_response_104172a3_verifies`
//!   shows it: roughenough 2.2.0's published version 1 exchange verifies with
//!   these strings and not with the draft's. The RFC's own text was not
//!   available here to read.
//!
//! The draft's example disagrees for version 1: draft 19's Appendix B
//! malfeasance report, whose requests offer version 1 only, verifies only
//! with the `"RoughTime"` strings (test
//! `verify::tests::draft_19_appendix_b_is_signed_with_the_draft_context`);
//! the issue says the RFC's Appendix B example does the same. An
//! implementation that followed the examples rather than the text (as
//! roughenough did before 2.2: its 2.0.0 sources, commit 7534d16, use
//! `"RoughTime"` for every version) would not interoperate on version 1.
//! [`crate::verify::verify_response_with`] takes the strings explicitly for
//! a caller that must check such a signature (a malfeasance report built
//! from the example, say).

use crate::error::Error;

/// A Roughtime wire version (VER, §5.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    /// 0x8000000c: drafts 12 to 19 (roughenough 1.3.0-draft14, Cloudflare).
    Draft12,
    /// 1: RFC 10049.
    Rfc1,
}

/// The signature context strings of one version, zero byte included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contexts {
    /// Prefix of the long-term key's signature over DELE.
    pub delegation: &'static [u8],
    /// Prefix of the online key's signature over SREP.
    pub response: &'static [u8],
}

/// Draft 19 §5.2.1 and §5.2.6.
pub const DRAFT_CONTEXTS: Contexts = Contexts {
    delegation: b"RoughTime v1 delegation signature\0",
    response: b"RoughTime v1 response signature\0",
};

/// RFC 10049, as quoted in authtime issue 21 (see the module docs).
pub const RFC_CONTEXTS: Contexts = Contexts {
    delegation: b"Roughtime v1 delegation signature\0",
    response: b"Roughtime v1 response signature\0",
};

/// The versions a server of this crate advertises in VERS, ascending (§5.2.5).
pub const SUPPORTED_WIRE: [u32; 2] = [1, 0x8000_000c];

impl Version {
    /// The uint32 on the wire.
    pub fn wire(self) -> u32 {
        match self {
            Version::Draft12 => 0x8000_000c,
            Version::Rfc1 => 1,
        }
    }

    /// The version for a wire value, if this crate speaks it.
    pub fn from_wire(value: u32) -> Option<Self> {
        match value {
            0x8000_000c => Some(Version::Draft12),
            1 => Some(Version::Rfc1),
            _ => None,
        }
    }

    /// This version's signature context strings.
    pub fn contexts(self) -> Contexts {
        match self {
            Version::Draft12 => DRAFT_CONTEXTS,
            Version::Rfc1 => RFC_CONTEXTS,
        }
    }
}

/// Parses a request's VER list (§5.1.1: 1 to 32 uint32s, ascending, no
/// repeats) and picks the highest version we speak; the RFC's version 1
/// ranks above the draft although its number is smaller.
pub fn negotiate(ver: &[u8]) -> Result<Version, Error> {
    let offered = version_list(ver)?;
    offered
        .iter()
        .filter_map(|&v| Version::from_wire(v))
        .max()
        .ok_or(Error::NoCommonVersion)
}

/// The uint32 list of a VER value, checked as §5.1.1 asks.
pub fn version_list(ver: &[u8]) -> Result<Vec<u32>, Error> {
    if ver.is_empty() || !ver.len().is_multiple_of(4) || ver.len() > 4 * 32 {
        return Err(Error::BadVersionList);
    }
    let list: Vec<u32> = ver
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if list.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::BadVersionList);
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(list: &[u32]) -> Vec<u8> {
        list.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn rfc_version_wins_over_the_draft() {
        assert_eq!(negotiate(&wire(&[1, 0x8000_000c])), Ok(Version::Rfc1));
        assert_eq!(negotiate(&wire(&[0x8000_000c])), Ok(Version::Draft12));
        assert_eq!(negotiate(&wire(&[1])), Ok(Version::Rfc1));
        assert_eq!(
            negotiate(&wire(&[2, 0x8000_000b])),
            Err(Error::NoCommonVersion)
        );
    }

    #[test]
    fn bad_lists_are_refused() {
        assert_eq!(negotiate(&[]), Err(Error::BadVersionList));
        assert_eq!(
            negotiate(&wire(&[0x8000_000c, 1])),
            Err(Error::BadVersionList)
        );
        assert_eq!(negotiate(&wire(&[1, 1])), Err(Error::BadVersionList));
        let many: Vec<u32> = (1..=33).collect();
        assert_eq!(negotiate(&wire(&many)), Err(Error::BadVersionList));
        assert_eq!(negotiate(&[1, 0, 0]), Err(Error::BadVersionList));
    }

    #[test]
    fn contexts_end_in_a_zero_byte() {
        for c in [DRAFT_CONTEXTS, RFC_CONTEXTS] {
            assert_eq!(c.delegation.last(), Some(&0));
            assert_eq!(c.response.last(), Some(&0));
        }
    }
}
