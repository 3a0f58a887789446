//! What follows the header: extension fields, then a MAC, a crypto-NAK or nothing.
//!
//! RFC 7822 section 7.5 makes the split deterministic for NTPv4: a MAC is 20 or
//! 24 bytes (key id and a 16- or 20-byte digest), a crypto-NAK 4 bytes, and
//! every extension field at least 16 bytes, the last one at least 28 when no
//! MAC follows. So wherever exactly 4, 20 or 24 bytes are left, they are the
//! trailer; anything longer starts with an extension field.
//!
//! NTPv3 and older have no extension fields: whatever follows the header is a
//! MAC (RFC 1305 appendix C), and its digest may be longer than 20 bytes.
//! chrony sends NTPv3 requests exactly when its key's digest would need
//! truncating in NTPv4 (SHA-256 and longer), so supporting this keeps such keys
//! interoperable.

use crate::{ExtensionField, ExtensionFields, HEADER_LEN, Reader, WireError};

/// Length of a crypto-NAK: a key id of 0 and no digest (RFC 5905 section 7.3; RFC 7822 section 7.5).
pub const CRYPTO_NAK_LEN: usize = 4;
/// Shortest digest: MD5 and AES-CMAC (RFC 5905 section 7.3, RFC 8573 section 4).
pub const MIN_DIGEST_LEN: usize = 16;
/// Longest digest in an NTPv4 packet; longer digests are truncated to this, as
/// chrony and NTPsec do (RFC 7822 section 7.5 allows 16 and 20).
pub const MAX_V4_DIGEST_LEN: usize = 20;
/// Longest digest in an NTPv3 packet (SHA-512), as chrony accepts.
pub const MAX_LEGACY_DIGEST_LEN: usize = 64;

/// The number of digest bytes a MAC of `tag_len` bytes has in a packet of
/// `version`: at most 20 in NTPv4 and later, at most 64 in NTPv3 and earlier
/// (the first bytes of the tag are kept).
#[must_use]
pub const fn digest_len_on_wire(version: u8, tag_len: usize) -> usize {
    let max = if version >= 4 {
        MAX_V4_DIGEST_LEN
    } else {
        MAX_LEGACY_DIGEST_LEN
    };
    if tag_len < max { tag_len } else { max }
}

/// Whether a digest of `len` bytes may follow a key id in a packet of `version`.
pub(crate) const fn digest_len_allowed(version: u8, len: usize) -> bool {
    if version >= 4 {
        len == 16 || len == 20
    } else {
        len >= MIN_DIGEST_LEN && len <= MAX_LEGACY_DIGEST_LEN && len.is_multiple_of(4)
    }
}

/// The message authentication code at the end of a packet (RFC 5905 section 7.3,
/// figure 8: key identifier and message digest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MacTrailer<'a> {
    /// Key identifier, naming the key in both parties' key files.
    pub key_id: u32,
    /// The digest: 16 bytes (MD5, AES-CMAC) or 20 (SHA-1, longer digests
    /// truncated) in NTPv4; up to 64 in NTPv3.
    pub digest: &'a [u8],
}

impl MacTrailer<'_> {
    /// Length on the wire: key id and digest.
    #[must_use]
    pub fn len(&self) -> usize {
        4 + self.digest.len()
    }

    /// Never true: the trailer has at least its key id.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// The end of a packet after the header and extension fields (RFC 5905 section 7.3,
/// RFC 7822 section 7.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trailer<'a> {
    /// Nothing: an unauthenticated packet.
    None,
    /// A key id of 0 and no digest: the server could not authenticate the request.
    CryptoNak,
    /// A key id and a digest.
    Mac(MacTrailer<'a>),
}

impl Trailer<'_> {
    /// Length on the wire.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Self::None => 0,
            Self::CryptoNak => CRYPTO_NAK_LEN,
            Self::Mac(mac) => mac.len(),
        }
    }

    /// Whether there is no trailer.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        matches!(self, Self::None)
    }
}

/// Splits the bytes after the header into extension fields and a trailer.
/// `rest` starts at offset [`HEADER_LEN`] of a packet whose length was checked
/// to be a multiple of 4.
pub(crate) fn split_after_header(
    version: u8,
    rest: &[u8],
) -> Result<(ExtensionFields<'_>, Trailer<'_>), WireError> {
    if version >= 4 {
        split_rfc7822(rest)
    } else {
        Ok((ExtensionFields::EMPTY, legacy_trailer(rest)?))
    }
}

fn split_rfc7822(rest: &[u8]) -> Result<(ExtensionFields<'_>, Trailer<'_>), WireError> {
    let mut r = Reader::new(rest);
    let mut last_field: Option<(usize, usize)> = None;
    loop {
        match r.remaining() {
            0 => {
                if let Some((offset, length)) = last_field
                    && length < ExtensionField::MIN_LAST_LEN_WITHOUT_MAC
                {
                    return Err(WireError::LastExtensionFieldTooShort { offset, length });
                }
                return Ok((ExtensionFields::from_checked(rest), Trailer::None));
            }
            CRYPTO_NAK_LEN | 20 | 24 => {
                let fields_len = r.position();
                let trailer = mac_or_crypto_nak(&mut r)?;
                let fields =
                    ExtensionFields::from_checked(rest.get(..fields_len).unwrap_or_default());
                return Ok((fields, trailer));
            }
            left if left < ExtensionField::MIN_LEN => {
                return Err(WireError::UnparsableTrailer {
                    offset: HEADER_LEN + r.position(),
                    len: left,
                });
            }
            _ => {
                let offset = r.position();
                let field = ExtensionField::decode(&mut r).map_err(at_packet_offset)?;
                last_field = Some((HEADER_LEN + offset, field.len()));
            }
        }
    }
}

/// Reads a trailer of 4, 20 or 24 bytes that makes up the rest of `r`.
fn mac_or_crypto_nak<'a>(r: &mut Reader<'a>) -> Result<Trailer<'a>, WireError> {
    let key_id = r.u32()?;
    let digest = r.rest();
    if digest.is_empty() {
        return if key_id == 0 {
            Ok(Trailer::CryptoNak)
        } else {
            Err(WireError::CryptoNakKeyId { key_id })
        };
    }
    Ok(Trailer::Mac(MacTrailer { key_id, digest }))
}

fn legacy_trailer(rest: &[u8]) -> Result<Trailer<'_>, WireError> {
    let len = rest.len();
    if len == 0 {
        return Ok(Trailer::None);
    }
    if len != CRYPTO_NAK_LEN && !digest_len_allowed(3, len.saturating_sub(4)) {
        return Err(WireError::MacLength { len });
    }
    mac_or_crypto_nak(&mut Reader::new(rest))
}

/// Errors of the extension-field reader count offsets from the first field;
/// callers want them from the start of the packet.
fn at_packet_offset(e: WireError) -> WireError {
    match e {
        WireError::Truncated {
            offset,
            needed,
            available,
        } => WireError::Truncated {
            offset: offset + HEADER_LEN,
            needed,
            available,
        },
        WireError::ExtensionFieldTooShort { offset, length } => WireError::ExtensionFieldTooShort {
            offset: offset + HEADER_LEN,
            length,
        },
        WireError::ExtensionFieldMisaligned { offset, length } => {
            WireError::ExtensionFieldMisaligned {
                offset: offset + HEADER_LEN,
                length,
            }
        }
        WireError::ExtensionFieldOverrun {
            offset,
            length,
            available,
        } => WireError::ExtensionFieldOverrun {
            offset: offset + HEADER_LEN,
            length,
            available,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ef(field_type: u16, len: usize) -> std::vec::Vec<u8> {
        let mut v = std::vec![0u8; len];
        v[..2].copy_from_slice(&field_type.to_be_bytes());
        v[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        v
    }

    #[test]
    fn digest_lengths_on_the_wire() {
        assert_eq!(digest_len_on_wire(4, 16), 16);
        assert_eq!(digest_len_on_wire(4, 20), 20);
        assert_eq!(digest_len_on_wire(4, 32), 20);
        assert_eq!(digest_len_on_wire(3, 32), 32);
        assert_eq!(digest_len_on_wire(3, 64), 64);
        assert!(digest_len_allowed(4, 16) && digest_len_allowed(4, 20));
        assert!(!digest_len_allowed(4, 24) && !digest_len_allowed(4, 12));
        assert!(digest_len_allowed(3, 32) && !digest_len_allowed(3, 68));
    }

    #[test]
    fn section_7_5_trailer_sizes() {
        assert_eq!(
            split_rfc7822(&[0, 0, 0, 0]),
            Ok((ExtensionFields::EMPTY, Trailer::CryptoNak))
        );
        assert_eq!(
            split_rfc7822(&[0, 0, 0, 9]),
            Err(WireError::CryptoNakKeyId { key_id: 9 })
        );
        let mut mac = [0u8; 20];
        mac[3] = 1;
        let (efs, trailer) = split_rfc7822(&mac).expect("mac");
        assert!(efs.is_empty());
        assert_eq!(
            trailer,
            Trailer::Mac(MacTrailer {
                key_id: 1,
                digest: &[0; 16]
            })
        );
        assert!(matches!(
            split_rfc7822(&[0u8; 24]),
            Ok((_, Trailer::Mac(MacTrailer { key_id: 0, digest }))) if digest.len() == 20
        ));
        for bad in [8usize, 12] {
            assert_eq!(
                split_rfc7822(&std::vec![0u8; bad]),
                Err(WireError::UnparsableTrailer {
                    offset: 48,
                    len: bad
                })
            );
        }
    }

    #[test]
    fn extension_fields_then_mac() {
        let mut bytes = ef(0x0104, 36);
        bytes.extend_from_slice(&ef(0x0204, 16));
        bytes.extend_from_slice(&[0, 0, 0, 3]);
        bytes.extend_from_slice(&[0xaa; 16]);
        let (efs, trailer) = split_rfc7822(&bytes).expect("split");
        let types: std::vec::Vec<u16> = efs.iter().map(|f| f.field_type).collect();
        assert_eq!(types, [0x0104, 0x0204]);
        assert_eq!(efs.as_bytes().len(), 52);
        assert!(matches!(
            trailer,
            Trailer::Mac(MacTrailer { key_id: 3, .. })
        ));
    }

    #[test]
    fn last_field_without_mac_must_be_28_bytes() {
        let ok = ef(0x0104, 28);
        assert!(matches!(split_rfc7822(&ok), Ok((_, Trailer::None))));
        let mut short_last = ef(0x0104, 32);
        short_last.extend_from_slice(&ef(0x0204, 16));
        assert_eq!(
            split_rfc7822(&short_last),
            Err(WireError::LastExtensionFieldTooShort {
                offset: 80,
                length: 16
            })
        );
        // 16 bytes alone: a field too short to be last.
        assert_eq!(
            split_rfc7822(&ef(0x0104, 16)),
            Err(WireError::LastExtensionFieldTooShort {
                offset: 48,
                length: 16
            })
        );
    }

    #[test]
    fn field_errors_carry_packet_offsets() {
        let mut bytes = ef(0x0104, 32);
        bytes.extend_from_slice(&ef(0x0204, 64)[..32]);
        assert_eq!(
            split_rfc7822(&bytes),
            Err(WireError::ExtensionFieldOverrun {
                offset: 80,
                length: 64,
                available: 32
            })
        );
    }

    #[test]
    fn legacy_versions_take_everything_as_the_mac() {
        let mut v3 = std::vec![0u8, 0, 0, 4];
        v3.extend_from_slice(&[0x55; 32]);
        assert!(matches!(
            split_after_header(3, &v3),
            Ok((efs, Trailer::Mac(MacTrailer { key_id: 4, digest }))) if efs.is_empty() && digest.len() == 32
        ));
        assert_eq!(
            split_after_header(3, &[0u8; 12]),
            Err(WireError::MacLength { len: 12 })
        );
        assert_eq!(
            split_after_header(3, &[0u8; 72]),
            Err(WireError::MacLength { len: 72 })
        );
        assert_eq!(
            split_after_header(2, &[0u8; 4]),
            Ok((ExtensionFields::EMPTY, Trailer::CryptoNak))
        );
        assert_eq!(
            split_after_header(3, &[]),
            Ok((ExtensionFields::EMPTY, Trailer::None))
        );
    }
}
