//! The one error type of the codec: one variant per way a packet can be malformed.

use core::fmt;

/// Why bytes could not be decoded as an NTP packet, or a packet could not be encoded.
///
/// Every decoding error has the same reaction on a server or client: drop the
/// datagram and count it under [`WireError::name`]. Offsets count from the first
/// byte of the packet.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The input ended before a field did.
    Truncated {
        /// Offset of the field.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// Fewer than the 48 bytes of an NTP header (RFC 5905 section 7.3).
    HeaderTooShort {
        /// Length of the datagram.
        len: usize,
    },
    /// The packet length is not a multiple of 4; extension fields and MACs are
    /// 32-bit aligned (RFC 7822 section 3), so such a packet cannot be well formed.
    NotMultipleOfFour {
        /// Length of the datagram.
        len: usize,
    },
    /// An extension field shorter than 16 bytes (RFC 7822 section 3).
    ExtensionFieldTooShort {
        /// Offset of the field.
        offset: usize,
        /// Its length field.
        length: usize,
    },
    /// An extension field whose length is not a multiple of 4 (RFC 7822 section 3).
    ExtensionFieldMisaligned {
        /// Offset of the field.
        offset: usize,
        /// Its length field.
        length: usize,
    },
    /// An extension field longer than what is left of the packet.
    ExtensionFieldOverrun {
        /// Offset of the field.
        offset: usize,
        /// Its length field.
        length: usize,
        /// Bytes left from `offset` to the end of the packet.
        available: usize,
    },
    /// The last extension field is shorter than 28 bytes and no MAC follows
    /// (RFC 7822 section 7.5), so it could be mistaken for a MAC.
    LastExtensionFieldTooShort {
        /// Offset of the field.
        offset: usize,
        /// Its length field.
        length: usize,
    },
    /// Bytes after the header and extension fields that are neither an
    /// extension field, a MAC nor a crypto-NAK (8 or 12 bytes, say).
    UnparsableTrailer {
        /// Offset of the trailer.
        offset: usize,
        /// Its length.
        len: usize,
    },
    /// A 4-byte trailer (the size of a crypto-NAK) whose key id is not 0.
    CryptoNakKeyId {
        /// The key id found.
        key_id: u32,
    },
    /// A MAC of a size no digest has: NTPv3 and older packets carry a key id
    /// and 16 to 64 bytes of digest after the header.
    MacLength {
        /// Length of the MAC, key id included.
        len: usize,
    },
    /// A digest given to the encoder that cannot appear in a packet of this
    /// version (NTPv4: 16 or 20 bytes; NTPv3: 16 to 64 bytes, a multiple of 4).
    DigestLength {
        /// Length of the digest.
        len: usize,
        /// Version of the packet.
        version: u8,
    },
    /// An extension field given to the encoder that cannot appear on the wire:
    /// too short, not aligned, longer than 65535 bytes, or in an NTPv3 packet.
    InvalidExtensionField {
        /// Length of the field, header included.
        length: usize,
    },
    /// A version number that does not fit the 3-bit field.
    VersionOutOfRange {
        /// The version given.
        version: u8,
    },
    /// The output buffer is too small for the packet.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes the buffer has.
        available: usize,
    },
}

impl WireError {
    /// Short stable name of the cause, for metrics labels and drop counters
    /// (`header_too_short`, `ef_overrun`, ...).
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Truncated { .. } => "truncated",
            Self::HeaderTooShort { .. } => "header_too_short",
            Self::NotMultipleOfFour { .. } => "length_not_multiple_of_4",
            Self::ExtensionFieldTooShort { .. } => "ef_too_short",
            Self::ExtensionFieldMisaligned { .. } => "ef_misaligned",
            Self::ExtensionFieldOverrun { .. } => "ef_overrun",
            Self::LastExtensionFieldTooShort { .. } => "last_ef_too_short",
            Self::UnparsableTrailer { .. } => "unparsable_trailer",
            Self::CryptoNakKeyId { .. } => "crypto_nak_key_id",
            Self::MacLength { .. } => "mac_length",
            Self::DigestLength { .. } => "digest_length",
            Self::InvalidExtensionField { .. } => "invalid_ef",
            Self::VersionOutOfRange { .. } => "version_out_of_range",
            Self::BufferTooSmall { .. } => "buffer_too_small",
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated {
                offset,
                needed,
                available,
            } => write!(
                f,
                "input ends inside a field at offset {offset}: needs {needed} bytes, {available} left"
            ),
            Self::HeaderTooShort { len } => {
                write!(f, "{len} bytes is shorter than the 48-byte NTP header")
            }
            Self::NotMultipleOfFour { len } => {
                write!(f, "packet length {len} is not a multiple of 4")
            }
            Self::ExtensionFieldTooShort { offset, length } => write!(
                f,
                "extension field at offset {offset} has length {length}, less than 16"
            ),
            Self::ExtensionFieldMisaligned { offset, length } => write!(
                f,
                "extension field at offset {offset} has length {length}, not a multiple of 4"
            ),
            Self::ExtensionFieldOverrun {
                offset,
                length,
                available,
            } => write!(
                f,
                "extension field at offset {offset} has length {length} but only {available} bytes are left"
            ),
            Self::LastExtensionFieldTooShort { offset, length } => write!(
                f,
                "last extension field at offset {offset} has length {length}, less than the 28 \
                 required when no MAC follows"
            ),
            Self::UnparsableTrailer { offset, len } => write!(
                f,
                "{len} bytes at offset {offset} are neither an extension field, a MAC nor a crypto-NAK"
            ),
            Self::CryptoNakKeyId { key_id } => {
                write!(f, "4-byte trailer has key id {key_id}; a crypto-NAK has 0")
            }
            Self::MacLength { len } => {
                write!(f, "MAC of {len} bytes: no digest has that length")
            }
            Self::DigestLength { len, version } => write!(
                f,
                "a {len}-byte digest cannot be sent in an NTPv{version} packet"
            ),
            Self::InvalidExtensionField { length } => write!(
                f,
                "extension field of {length} bytes cannot be encoded (at least 16, a multiple \
                 of 4, at most 65535, NTPv4 only)"
            ),
            Self::VersionOutOfRange { version } => {
                write!(f, "version {version} does not fit in 3 bits")
            }
            Self::BufferTooSmall { needed, available } => write!(
                f,
                "output buffer of {available} bytes is too small, {needed} needed"
            ),
        }
    }
}

impl core::error::Error for WireError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn names_are_distinct_and_display_mentions_numbers() {
        let all = [
            WireError::Truncated {
                offset: 1,
                needed: 2,
                available: 1,
            },
            WireError::HeaderTooShort { len: 47 },
            WireError::NotMultipleOfFour { len: 49 },
            WireError::ExtensionFieldTooShort {
                offset: 48,
                length: 12,
            },
            WireError::ExtensionFieldMisaligned {
                offset: 48,
                length: 17,
            },
            WireError::ExtensionFieldOverrun {
                offset: 48,
                length: 64,
                available: 32,
            },
            WireError::LastExtensionFieldTooShort {
                offset: 48,
                length: 16,
            },
            WireError::UnparsableTrailer { offset: 48, len: 8 },
            WireError::CryptoNakKeyId { key_id: 7 },
            WireError::MacLength { len: 12 },
            WireError::DigestLength {
                len: 32,
                version: 4,
            },
            WireError::InvalidExtensionField { length: 8 },
            WireError::VersionOutOfRange { version: 9 },
            WireError::BufferTooSmall {
                needed: 68,
                available: 48,
            },
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a.name(), b.name());
            }
            assert!(a.to_string().chars().any(|c| c.is_ascii_digit()), "{a}");
        }
    }
}
