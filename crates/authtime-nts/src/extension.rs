//! The NTS extension fields (RFC 8915 section 5.3 to 5.6) and a typed view
//! of an NTS-protected NTP packet.
//!
//! [`NtsPacket::parse`] splits a packet into what the authenticator covers
//! (the header and the plaintext extension fields before it: the AEAD's
//! associated data), the authenticator itself, and whatever follows it, which
//! RFC 8915 section 5.6 says to discard: it is exposed only as a byte count.
//!
//! The packet is parsed here rather than with `authtime_wire::Packet::decode`
//! because an NTS packet has no MAC trailer and the RFC 7822 "last field at
//! least 28 bytes" rule is not what decides where the authenticated part
//! ends: the authenticator does. Each outer field is still read with
//! `authtime_wire::ExtensionField::decode` (16-byte minimum, 4-byte
//! alignment). Fields inside the ciphertext may be shorter (section 5.6):
//! [`inner_fields`] reads those.

use core::fmt;

use authtime_wire::{ExtensionField, HEADER_LEN, Header, Reader, WireError};

/// Unique Identifier extension field (RFC 8915 section 5.3).
pub const EF_UNIQUE_IDENTIFIER: u16 = 0x0104;
/// NTS Cookie extension field (RFC 8915 section 5.4).
pub const EF_COOKIE: u16 = 0x0204;
/// NTS Cookie Placeholder extension field (RFC 8915 section 5.5).
pub const EF_COOKIE_PLACEHOLDER: u16 = 0x0304;
/// NTS Authenticator and Encrypted Extension Fields (RFC 8915 section 5.6).
pub const EF_AUTHENTICATOR: u16 = 0x0404;

/// Shortest Unique Identifier body a client may send (RFC 8915 section 5.3:
/// at least 32 octets).
pub const MIN_UNIQUE_ID_LEN: usize = 32;

/// Why bytes are not a well-formed NTS packet. Reaction: drop and count.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EfError {
    /// The NTP header or an outer extension field is malformed.
    Wire(WireError),
    /// Authenticator lengths that overrun the field (RFC 8915 section 5.6).
    AuthenticatorOverrun {
        /// Declared nonce length.
        nonce_len: usize,
        /// Declared ciphertext length.
        ciphertext_len: usize,
        /// Bytes in the field's body.
        available: usize,
    },
    /// An encrypted extension field with a bad length (below 4, not a
    /// multiple of 4, or past the plaintext).
    InnerFieldMalformed {
        /// Offset inside the plaintext.
        offset: usize,
    },
}

impl EfError {
    /// Short stable name for counters.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Wire(e) => e.name(),
            Self::AuthenticatorOverrun { .. } => "nts_authenticator_overrun",
            Self::InnerFieldMalformed { .. } => "nts_inner_ef_malformed",
        }
    }
}

impl From<WireError> for EfError {
    fn from(e: WireError) -> Self {
        Self::Wire(e)
    }
}

impl fmt::Display for EfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl core::error::Error for EfError {}

/// Rounds `n` up to a multiple of 4.
#[must_use]
pub const fn padded4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// The body of an NTS Authenticator and Encrypted Extension Fields field
/// (RFC 8915 section 5.6, figure 3): `nonce_len (u16) | ciphertext_len (u16)
/// | nonce, padded to 4 | ciphertext, padded to 4 | additional padding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authenticator<'a> {
    /// The nonce, without its padding.
    pub nonce: &'a [u8],
    /// The ciphertext (tag included), without its padding.
    pub ciphertext: &'a [u8],
    /// Bytes of additional padding after the padded ciphertext.
    pub additional_padding: usize,
}

impl<'a> Authenticator<'a> {
    /// Reads the body of the field.
    ///
    /// # Errors
    /// [`EfError::AuthenticatorOverrun`], or [`EfError::Wire`] for a body
    /// shorter than its two length fields.
    pub fn decode(body: &'a [u8]) -> Result<Self, EfError> {
        let mut r = Reader::new(body);
        let nonce_len = usize::from(r.u16()?);
        let ciphertext_len = usize::from(r.u16()?);
        let overrun = EfError::AuthenticatorOverrun {
            nonce_len,
            ciphertext_len,
            available: body.len(),
        };
        let padded_nonce = r.take(padded4(nonce_len)).map_err(|_| overrun)?;
        let padded_ciphertext = r.take(padded4(ciphertext_len)).map_err(|_| overrun)?;
        Ok(Self {
            nonce: padded_nonce.get(..nonce_len).ok_or(overrun)?,
            ciphertext: padded_ciphertext.get(..ciphertext_len).ok_or(overrun)?,
            additional_padding: r.remaining(),
        })
    }

    /// Whether a client's request meets the padding rule of RFC 8915 section
    /// 5.6 for an AEAD whose `N_REQ` is `required_padded_nonce_len`: a padded
    /// nonce shorter than that must be made up by additional padding.
    #[must_use]
    pub fn meets_padding_rule(&self, required_padded_nonce_len: usize) -> bool {
        let padded_nonce = padded4(self.nonce.len());
        padded_nonce >= required_padded_nonce_len
            || self.additional_padding >= required_padded_nonce_len - padded_nonce
    }

    /// Length of a field body with these nonce and ciphertext lengths and no
    /// additional padding.
    #[must_use]
    pub const fn body_len(nonce_len: usize, ciphertext_len: usize) -> usize {
        4 + padded4(nonce_len) + padded4(ciphertext_len)
    }
}

/// A packet split at its NTS authenticator (RFC 8915 section 5.6). Nothing in
/// it is trusted until the authenticator is verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NtsPacket<'a> {
    header: Header,
    associated_data: &'a [u8],
    authenticator: Option<Authenticator<'a>>,
    discarded_len: usize,
}

impl<'a> NtsPacket<'a> {
    /// Splits `packet`. Never panics.
    ///
    /// # Errors
    /// [`EfError::Wire`] for a short header or a malformed field before the
    /// authenticator, [`EfError::AuthenticatorOverrun`] for a malformed
    /// authenticator. What follows the authenticator is not read.
    pub fn parse(packet: &'a [u8]) -> Result<Self, EfError> {
        if packet.len() < HEADER_LEN {
            return Err(WireError::HeaderTooShort { len: packet.len() }.into());
        }
        let mut r = Reader::new(packet);
        let header = Header::decode(&mut r)?;
        loop {
            let start = r.position();
            if r.is_empty() {
                return Ok(Self {
                    header,
                    associated_data: packet,
                    authenticator: None,
                    discarded_len: 0,
                });
            }
            let field = ExtensionField::decode(&mut r)?;
            if field.field_type == EF_AUTHENTICATOR {
                return Ok(Self {
                    header,
                    associated_data: packet.get(..start).unwrap_or_default(),
                    authenticator: Some(Authenticator::decode(field.value)?),
                    discarded_len: r.remaining(),
                });
            }
        }
    }

    /// The NTP header.
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The header and the extension fields before the authenticator: the
    /// AEAD's associated data, or the whole packet when it has no authenticator.
    #[must_use]
    pub fn associated_data(&self) -> &'a [u8] {
        self.associated_data
    }

    /// The plaintext extension fields before the authenticator (authenticated
    /// once the authenticator verifies, never encrypted).
    pub fn plaintext_fields(&self) -> impl Iterator<Item = ExtensionField<'a>> + use<'a> {
        let mut r = Reader::new(self.associated_data.get(HEADER_LEN..).unwrap_or_default());
        core::iter::from_fn(move || {
            if r.is_empty() {
                None
            } else {
                // Already checked by `parse`; an error ends the iteration.
                ExtensionField::decode(&mut r).ok()
            }
        })
    }

    /// The authenticator, if the packet has one.
    #[must_use]
    pub fn authenticator(&self) -> Option<&Authenticator<'a>> {
        self.authenticator.as_ref()
    }

    /// Bytes after the authenticator: unauthenticated, discarded unread.
    #[must_use]
    pub fn discarded_len(&self) -> usize {
        self.discarded_len
    }
}

/// The extension fields of a decrypted plaintext (RFC 8915 section 5.6:
/// their length need only be a multiple of 4, at least the 4-byte header).
/// Yields an error and stops at the first malformed field.
pub fn inner_fields(
    plaintext: &[u8],
) -> impl Iterator<Item = Result<ExtensionField<'_>, EfError>> + '_ {
    let mut offset = 0;
    let mut failed = false;
    core::iter::from_fn(move || {
        if failed || offset >= plaintext.len() {
            return None;
        }
        let rest = plaintext.get(offset..).unwrap_or_default();
        let field = match rest {
            [t0, t1, l0, l1, ..] => {
                let length = usize::from(u16::from_be_bytes([*l0, *l1]));
                let ok = length >= 4 && length.is_multiple_of(4) && length <= rest.len();
                rest.get(4..length)
                    .filter(|_| ok)
                    .map(|value| ExtensionField {
                        field_type: u16::from_be_bytes([*t0, *t1]),
                        value,
                    })
            }
            _ => None,
        };
        match field {
            Some(f) => {
                offset += f.len();
                Some(Ok(f))
            }
            None => {
                failed = true;
                Some(Err(EfError::InnerFieldMalformed { offset }))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ef(field_type: u16, body: &[u8]) -> Vec<u8> {
        let mut v = field_type.to_be_bytes().to_vec();
        v.extend_from_slice(&u16::try_from(body.len() + 4).expect("len").to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn authenticator_layout_rfc8915_section_5_6() {
        // nonce 5 bytes (padded to 8), ciphertext 17 (padded to 20), 4 extra.
        let mut body = vec![0, 5, 0, 17];
        body.extend_from_slice(&[1, 2, 3, 4, 5, 0, 0, 0]);
        body.extend_from_slice(&[9; 17]);
        body.extend_from_slice(&[0; 3]);
        body.extend_from_slice(&[0; 4]);
        let a = Authenticator::decode(&body).expect("decode");
        assert_eq!(a.nonce, &[1, 2, 3, 4, 5]);
        assert_eq!(a.ciphertext, &[9; 17]);
        assert_eq!(a.additional_padding, 4);
        // N_REQ 16, padded nonce 8: needs 8 bytes of extra padding.
        assert!(!a.meets_padding_rule(16));
        assert!(a.meets_padding_rule(12));
        assert!(matches!(
            Authenticator::decode(&body[..30]),
            Err(EfError::AuthenticatorOverrun { .. })
        ));
        assert!(Authenticator::decode(&body[..3]).is_err());
        assert_eq!(Authenticator::body_len(16, 16), 36);
    }

    #[test]
    fn packet_split_at_the_authenticator() {
        let mut packet = vec![0x23; 48];
        packet.extend(ef(EF_UNIQUE_IDENTIFIER, &[7; 32]));
        let ad_len = packet.len();
        let mut auth = vec![0, 16, 0, 16];
        auth.extend_from_slice(&[1; 32]);
        packet.extend(ef(EF_AUTHENTICATOR, &auth));
        packet.extend(ef(EF_COOKIE, &[3; 12]));
        let p = NtsPacket::parse(&packet).expect("parse");
        assert_eq!(p.associated_data().len(), ad_len);
        assert_eq!(p.discarded_len(), 16);
        let types: Vec<u16> = p.plaintext_fields().map(|f| f.field_type).collect();
        assert_eq!(types, [EF_UNIQUE_IDENTIFIER]);
        assert_eq!(p.authenticator().map(|a| a.nonce.len()), Some(16));

        let plain = NtsPacket::parse(&packet[..ad_len]).expect("no authenticator");
        assert!(plain.authenticator().is_none());
        assert!(NtsPacket::parse(&packet[..ad_len - 4]).is_err());
        assert!(NtsPacket::parse(&packet[..40]).is_err());
    }

    #[test]
    fn inner_fields_may_be_short_but_aligned() {
        let mut plain = ef(EF_COOKIE_PLACEHOLDER, &[]);
        plain.extend(ef(EF_COOKIE, &[1; 8]));
        let fields: Vec<_> = inner_fields(&plain).collect();
        assert_eq!(fields.len(), 2);
        assert!(fields.iter().all(Result::is_ok));
        plain.extend_from_slice(&[0, 1, 0, 6, 0, 0]);
        let last = inner_fields(&plain).last().expect("some");
        assert_eq!(last, Err(EfError::InnerFieldMalformed { offset: 16 }));
        assert_eq!(inner_fields(&[0, 1, 0]).count(), 1);
    }
}
