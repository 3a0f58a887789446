//! NTPv4 extension fields (RFC 7822 section 3).

use crate::{Reader, WireError, Writer};

/// One NTPv4 extension field (RFC 7822 section 3, figure 1): a 16-bit type,
/// a 16-bit length that covers the whole field, and the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExtensionField<'a> {
    /// Field type (IANA "NTP Extension Field Types" registry).
    pub field_type: u16,
    /// Everything after the 4-byte field header, padding included.
    pub value: &'a [u8],
}

impl<'a> ExtensionField<'a> {
    /// Bytes of the type and length fields.
    pub const HEADER_LEN: usize = 4;
    /// Shortest extension field (RFC 7822 section 3).
    pub const MIN_LEN: usize = 16;
    /// Shortest last extension field when no MAC follows (RFC 7822 section 7.5).
    pub const MIN_LAST_LEN_WITHOUT_MAC: usize = 28;

    /// Length on the wire, header included.
    #[must_use]
    pub fn len(&self) -> usize {
        Self::HEADER_LEN + self.value.len()
    }

    /// Never true: a field has at least its header.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Reads one field at `r`, checking its length rules (at least 16 bytes, a
    /// multiple of 4, within the input).
    ///
    /// # Errors
    /// [`WireError::Truncated`], [`WireError::ExtensionFieldTooShort`],
    /// [`WireError::ExtensionFieldMisaligned`] or
    /// [`WireError::ExtensionFieldOverrun`].
    pub fn decode(r: &mut Reader<'a>) -> Result<Self, WireError> {
        let offset = r.position();
        let mut peek = r.clone();
        let field_type = peek.u16()?;
        let length = usize::from(peek.u16()?);
        if length < Self::MIN_LEN {
            return Err(WireError::ExtensionFieldTooShort { offset, length });
        }
        if !length.is_multiple_of(4) {
            return Err(WireError::ExtensionFieldMisaligned { offset, length });
        }
        if length > r.remaining() {
            return Err(WireError::ExtensionFieldOverrun {
                offset,
                length,
                available: r.remaining(),
            });
        }
        let field = r.take(length)?;
        Ok(Self {
            field_type,
            value: field.get(Self::HEADER_LEN..).unwrap_or_default(),
        })
    }

    /// Writes the field.
    ///
    /// # Errors
    /// [`WireError::InvalidExtensionField`] when the field breaks the length
    /// rules, [`WireError::BufferTooSmall`] when it does not fit.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<(), WireError> {
        let length = self.len();
        let Ok(wire_length) = u16::try_from(length) else {
            return Err(WireError::InvalidExtensionField { length });
        };
        if length < Self::MIN_LEN || !length.is_multiple_of(4) {
            return Err(WireError::InvalidExtensionField { length });
        }
        w.put_u16(self.field_type)?;
        w.put_u16(wire_length)?;
        w.put(self.value)
    }
}

/// The extension fields of a packet, checked by [`crate::Packet::decode`]:
/// a run of well-formed fields, borrowed from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ExtensionFields<'a> {
    raw: &'a [u8],
}

impl<'a> ExtensionFields<'a> {
    /// No extension fields.
    pub const EMPTY: Self = Self { raw: &[] };

    /// Wraps bytes already checked to be a run of well-formed fields.
    pub(crate) fn from_checked(raw: &'a [u8]) -> Self {
        Self { raw }
    }

    /// The fields as they are on the wire.
    #[must_use]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// Whether the packet has no extension fields.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The fields, in packet order.
    #[must_use]
    pub fn iter(&self) -> ExtensionFieldIter<'a> {
        ExtensionFieldIter {
            r: Reader::new(self.raw),
        }
    }

    /// The last field, if any.
    #[must_use]
    pub fn last(&self) -> Option<ExtensionField<'a>> {
        self.iter().last()
    }
}

impl<'a> IntoIterator for ExtensionFields<'a> {
    type Item = ExtensionField<'a>;
    type IntoIter = ExtensionFieldIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over the fields of [`ExtensionFields`].
#[derive(Debug, Clone)]
pub struct ExtensionFieldIter<'a> {
    r: Reader<'a>,
}

impl<'a> Iterator for ExtensionFieldIter<'a> {
    type Item = ExtensionField<'a>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.r.is_empty() {
            return None;
        }
        // The bytes were checked when the packet was decoded; an error cannot
        // happen here, and would end the iteration rather than panic.
        ExtensionField::decode(&mut self.r).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_type_length_and_value_with_padding() {
        let bytes = [
            0x01, 0x04, 0x00, 0x14, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0xff,
        ];
        let mut r = Reader::new(&bytes);
        let ef = ExtensionField::decode(&mut r).expect("field");
        assert_eq!(ef.field_type, 0x0104);
        assert_eq!(ef.len(), 20);
        assert_eq!(ef.value.len(), 16);
        assert_eq!(r.rest(), &[0xff]);
        let mut out = [0u8; 20];
        ef.encode(&mut Writer::new(&mut out)).expect("encode");
        assert_eq!(out, bytes[..20]);
    }

    #[test]
    fn length_rules_rfc7822_section3() {
        let field = |len: u16| {
            let mut b = [0u8; 64];
            b[2..4].copy_from_slice(&len.to_be_bytes());
            b
        };
        let too_short = field(12);
        assert_eq!(
            ExtensionField::decode(&mut Reader::new(&too_short)),
            Err(WireError::ExtensionFieldTooShort {
                offset: 0,
                length: 12
            })
        );
        let misaligned = field(18);
        assert_eq!(
            ExtensionField::decode(&mut Reader::new(&misaligned)),
            Err(WireError::ExtensionFieldMisaligned {
                offset: 0,
                length: 18
            })
        );
        let huge = field(0xfffc);
        assert_eq!(
            ExtensionField::decode(&mut Reader::new(&huge)),
            Err(WireError::ExtensionFieldOverrun {
                offset: 0,
                length: 0xfffc,
                available: 64
            })
        );
        assert!(ExtensionField::decode(&mut Reader::new(&huge[..3])).is_err());
    }

    #[test]
    fn encoder_refuses_fields_that_break_the_rules() {
        let mut out = [0u8; 128];
        for value_len in [0usize, 8, 13] {
            let value = [0u8; 16];
            let ef = ExtensionField {
                field_type: 1,
                value: &value[..value_len],
            };
            assert!(matches!(
                ef.encode(&mut Writer::new(&mut out)),
                Err(WireError::InvalidExtensionField { .. })
            ));
        }
    }

    #[test]
    fn iterates_checked_fields() {
        let mut raw = [0u8; 48];
        raw[2..4].copy_from_slice(&16u16.to_be_bytes());
        raw[16..18].copy_from_slice(&7u16.to_be_bytes());
        raw[18..20].copy_from_slice(&32u16.to_be_bytes());
        let efs = ExtensionFields::from_checked(&raw);
        let types: std::vec::Vec<u16> = efs.iter().map(|ef| ef.field_type).collect();
        assert_eq!(types, [0, 7]);
        assert_eq!(efs.last().map(|ef| ef.len()), Some(32));
        assert!(ExtensionFields::EMPTY.iter().next().is_none());
    }
}
