//! Roughtime tags (draft-ietf-ntp-roughtime-19 §4.1.3, §12.3).

use core::fmt;

/// A four-byte tag; ordered by its value as a little-endian uint32 (§4.1.3).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag(pub [u8; 4]);

impl Tag {
    /// Signature (§5.2.1).
    pub const SIG: Tag = Tag(*b"SIG\0");
    /// Version list in requests, chosen version in SREP (§5.1.1, §5.2.5).
    pub const VER: Tag = Tag(*b"VER\0");
    /// Hash of the long-term key the client expects (§5.1.4).
    pub const SRV: Tag = Tag(*b"SRV\0");
    /// Nonce (§5.1.2, §5.2.2).
    pub const NONC: Tag = Tag(*b"NONC");
    /// Delegation: PUBK, MINT, MAXT (§5.2.6).
    pub const DELE: Tag = Tag(*b"DELE");
    /// Message type: 0 request, 1 response (§5.1.3, §5.2.3).
    pub const TYPE: Tag = Tag(*b"TYPE");
    /// Merkle path (§5.2.4).
    pub const PATH: Tag = Tag(*b"PATH");
    /// Radius in seconds (§5.2.5).
    pub const RADI: Tag = Tag(*b"RADI");
    /// Online public key (§5.2.6).
    pub const PUBK: Tag = Tag(*b"PUBK");
    /// Midpoint, seconds since the Unix epoch (§5.2.5).
    pub const MIDP: Tag = Tag(*b"MIDP");
    /// Signed response: VER, RADI, MIDP, VERS, ROOT (§5.2.5).
    pub const SREP: Tag = Tag(*b"SREP");
    /// Versions the server supports (§5.2.5).
    pub const VERS: Tag = Tag(*b"VERS");
    /// Start of the delegation's validity (§5.2.6).
    pub const MINT: Tag = Tag(*b"MINT");
    /// Merkle tree root (§5.2.5).
    pub const ROOT: Tag = Tag(*b"ROOT");
    /// Certificate: SIG and DELE (§5.2.6).
    pub const CERT: Tag = Tag(*b"CERT");
    /// End of the delegation's validity (§5.2.6).
    pub const MAXT: Tag = Tag(*b"MAXT");
    /// Leaf index in the Merkle tree (§5.2.7).
    pub const INDX: Tag = Tag(*b"INDX");
    /// Padding (§5.1.5).
    pub const ZZZZ: Tag = Tag(*b"ZZZZ");

    /// The value tags are sorted by (§4.1.3: the first octet is the least significant).
    pub fn sort_key(self) -> u32 {
        u32::from_le_bytes(self.0)
    }
}

impl PartialOrd for Tag {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Tag {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.sort_key().cmp(&other.sort_key())
    }
}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.iter().all(|&b| b.is_ascii_uppercase() || b == 0) {
            let name: String = self
                .0
                .iter()
                .filter(|&&b| b != 0)
                .map(|&b| char::from(b))
                .collect();
            write!(f, "Tag({name})")
        } else {
            write!(f, "Tag({:02x?})", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_keys_match_draft_19_section_4_1_3() {
        // §4.1.3: "NONC" is 0x434e4f4e, "VER" is 0x00524556.
        assert_eq!(Tag::NONC.sort_key(), 0x434e_4f4e);
        assert_eq!(Tag::VER.sort_key(), 0x0052_4556);
    }

    #[test]
    fn response_tags_sort_as_in_figure_3() {
        let mut tags = [
            Tag::INDX,
            Tag::CERT,
            Tag::SREP,
            Tag::PATH,
            Tag::TYPE,
            Tag::NONC,
            Tag::SIG,
        ];
        tags.sort();
        let expected = [
            Tag::SIG,
            Tag::NONC,
            Tag::TYPE,
            Tag::PATH,
            Tag::SREP,
            Tag::CERT,
            Tag::INDX,
        ];
        assert_eq!(tags, expected);
    }
}
