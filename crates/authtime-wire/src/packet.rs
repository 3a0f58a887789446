//! A whole NTP packet: header, extension fields, trailer (RFC 5905 section 7.3,
//! RFC 7822 section 7.5).

use crate::trailer::{digest_len_allowed, split_after_header};
use crate::{
    CRYPTO_NAK_LEN, ExtensionField, ExtensionFields, HEADER_LEN, Header, MacTrailer, Reader,
    Trailer, WireError, Writer,
};

/// A decoded NTP packet (RFC 5905 section 7.3 with the RFC 7822 section 7.5
/// layout), borrowing its extension fields and MAC from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    header: Header,
    extension_fields: ExtensionFields<'a>,
    trailer: Trailer<'a>,
    /// Header and extension fields as received: what a MAC covers.
    authenticated: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Decodes a whole datagram. Never panics.
    ///
    /// # Errors
    /// One [`WireError`] per cause: [`WireError::HeaderTooShort`],
    /// [`WireError::NotMultipleOfFour`], the extension-field length errors,
    /// [`WireError::UnparsableTrailer`], [`WireError::CryptoNakKeyId`],
    /// [`WireError::MacLength`].
    pub fn decode(data: &'a [u8]) -> Result<Self, WireError> {
        if data.len() < HEADER_LEN {
            return Err(WireError::HeaderTooShort { len: data.len() });
        }
        if !data.len().is_multiple_of(4) {
            return Err(WireError::NotMultipleOfFour { len: data.len() });
        }
        let mut r = Reader::new(data);
        let header = Header::decode(&mut r)?;
        let (extension_fields, trailer) = split_after_header(header.version, r.rest())?;
        let authenticated_len = HEADER_LEN + extension_fields.as_bytes().len();
        Ok(Self {
            header,
            extension_fields,
            trailer,
            authenticated: data.get(..authenticated_len).unwrap_or_default(),
        })
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The extension fields (none before NTPv4). They are only as trustworthy
    /// as the MAC that follows them, once it is verified.
    #[must_use]
    pub fn extension_fields(&self) -> ExtensionFields<'a> {
        self.extension_fields
    }

    /// The MAC, crypto-NAK, or nothing.
    #[must_use]
    pub fn trailer(&self) -> Trailer<'a> {
        self.trailer
    }

    /// The bytes a MAC covers: header and extension fields, as received.
    #[must_use]
    pub fn authenticated_bytes(&self) -> &'a [u8] {
        self.authenticated
    }

    /// Length on the wire.
    #[must_use]
    pub fn len(&self) -> usize {
        self.authenticated.len() + self.trailer.len()
    }

    /// Never true: a packet has at least its header.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the packet into `out` and returns its length. A decoded packet
    /// encodes to exactly the bytes it was decoded from.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`] when `out` is too small.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, WireError> {
        let mut w = PacketWriter::new(out, &self.header)?;
        w.w.put(self.extension_fields.as_bytes())?;
        w.last_field_len = self.extension_fields.last().map(|f| f.len());
        match self.trailer {
            Trailer::None => w.finish(),
            Trailer::CryptoNak => w.finish_with_crypto_nak(),
            Trailer::Mac(MacTrailer { key_id, digest }) => w.finish_with_mac(key_id, digest),
        }
    }
}

/// Builds a packet in a caller-owned buffer: header, then extension fields,
/// then one of the `finish` calls. Every packet it finishes decodes again with
/// [`Packet::decode`].
#[derive(Debug)]
pub struct PacketWriter<'b> {
    w: Writer<'b>,
    version: u8,
    last_field_len: Option<usize>,
}

impl<'b> PacketWriter<'b> {
    /// Starts a packet with `header`.
    ///
    /// # Errors
    /// [`WireError::VersionOutOfRange`], [`WireError::BufferTooSmall`].
    pub fn new(out: &'b mut [u8], header: &Header) -> Result<Self, WireError> {
        let mut w = Writer::new(out);
        header.encode(&mut w)?;
        Ok(Self {
            w,
            version: header.version,
            last_field_len: None,
        })
    }

    /// Appends an extension field (NTPv4 and later only).
    ///
    /// # Errors
    /// [`WireError::InvalidExtensionField`] for a field that breaks the length
    /// rules or a packet older than NTPv4, [`WireError::BufferTooSmall`].
    pub fn push_extension_field(&mut self, field: ExtensionField<'_>) -> Result<(), WireError> {
        if self.version < 4 {
            return Err(WireError::InvalidExtensionField {
                length: field.len(),
            });
        }
        field.encode(&mut self.w)?;
        self.last_field_len = Some(field.len());
        Ok(())
    }

    /// The bytes written so far: what a MAC appended now must cover.
    #[must_use]
    pub fn authenticated_bytes(&self) -> &[u8] {
        self.w.written()
    }

    /// Ends the packet without a MAC and returns its length.
    ///
    /// # Errors
    /// [`WireError::InvalidExtensionField`] when the last extension field is
    /// shorter than 28 bytes (RFC 7822 section 7.5).
    pub fn finish(self) -> Result<usize, WireError> {
        match self.last_field_len {
            Some(length) if length < ExtensionField::MIN_LAST_LEN_WITHOUT_MAC => {
                Err(WireError::InvalidExtensionField { length })
            }
            _ => Ok(self.w.len()),
        }
    }

    /// Ends the packet with a MAC and returns its length. `digest` must already
    /// have its length on the wire ([`crate::digest_len_on_wire`]).
    ///
    /// # Errors
    /// [`WireError::DigestLength`] for a digest this version cannot carry,
    /// [`WireError::BufferTooSmall`].
    pub fn finish_with_mac(mut self, key_id: u32, digest: &[u8]) -> Result<usize, WireError> {
        if !digest_len_allowed(self.version, digest.len()) {
            return Err(WireError::DigestLength {
                len: digest.len(),
                version: self.version,
            });
        }
        self.append(&key_id.to_be_bytes(), digest)
    }

    /// Ends the packet with a crypto-NAK (key id 0, no digest) and returns its length.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`].
    pub fn finish_with_crypto_nak(mut self) -> Result<usize, WireError> {
        self.append(&[0; CRYPTO_NAK_LEN], &[])
    }

    /// Appends the trailer whole or not at all.
    fn append(&mut self, key_id: &[u8], digest: &[u8]) -> Result<usize, WireError> {
        let needed = self.w.len() + key_id.len() + digest.len();
        if needed > self.w.capacity() {
            return Err(WireError::BufferTooSmall {
                needed,
                available: self.w.capacity(),
            });
        }
        self.w.put(key_id)?;
        self.w.put(digest)?;
        Ok(self.w.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LeapIndicator, Mode, NtpTimestamp};

    /// chrony 4.3 client request with MD5 key 1, captured on loopback.
    const CHRONY_MD5_REQUEST: [u8; 68] = [
        0x23, 0x00, 0x06, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0xf9, 0x4c, 0xe9, 0x93, 0xc1, 0x78, 0xaf, 0x85, //
        0x00, 0x00, 0x00, 0x01, 0xaa, 0xa3, 0x53, 0x02, 0x3e, 0x76, 0xc4, 0x56, //
        0xca, 0x19, 0xe9, 0xe5, 0xfd, 0x6f, 0xb8, 0x79,
    ];

    /// chrony 4.3 client request with SHA256 key 4: chrony falls back to NTPv3
    /// so that the 32-byte digest need not be truncated.
    const CHRONY_SHA256_V3_REQUEST: [u8; 84] = [
        0x1b, 0x00, 0x06, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x21, 0x7b, 0x57, 0xa5, 0x99, 0x0d, 0xb1, 0xac, //
        0x00, 0x00, 0x00, 0x04, 0x8c, 0x49, 0x93, 0xb7, 0xa3, 0x92, 0x2e, 0xbd, //
        0x65, 0xb1, 0x0b, 0xdf, 0xc2, 0x8f, 0xbc, 0x3e, 0xfd, 0x58, 0xbb, 0x60, //
        0x2c, 0x09, 0x90, 0x57, 0x97, 0xec, 0x23, 0x7b, 0x2f, 0x3e, 0x1c, 0x26,
    ];

    /// chrony 4.3 server reply with SHA1 key 2.
    const CHRONY_SHA1_REPLY: [u8; 72] = [
        0x24, 0x08, 0x06, 0xe7, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x7f, 0x7f, 0x01, 0x01, 0xee, 0xad, 0x04, 0xff, 0x92, 0xe8, 0x43, 0x75, //
        0x5a, 0x42, 0x81, 0x6a, 0x9b, 0x6e, 0x86, 0x8d, 0xee, 0xad, 0x05, 0x0c, //
        0x32, 0xf0, 0x60, 0x63, 0xee, 0xad, 0x05, 0x0c, 0x33, 0xb4, 0x4e, 0x42, //
        0x00, 0x00, 0x00, 0x02, 0x57, 0xb5, 0x21, 0xd6, 0x7c, 0x67, 0xbd, 0xee, //
        0x9c, 0xce, 0xe8, 0xea, 0xa3, 0x3a, 0xa1, 0x16, 0xf7, 0x13, 0x05, 0x46,
    ];

    fn round_trips(bytes: &[u8]) {
        let p = Packet::decode(bytes).expect("decode");
        let mut out = [0u8; 1024];
        let n = p.encode(&mut out).expect("encode");
        assert_eq!(&out[..n], bytes);
        assert_eq!(p.len(), bytes.len());
    }

    #[test]
    fn chrony_md5_request() {
        let p = Packet::decode(&CHRONY_MD5_REQUEST).expect("decode");
        assert_eq!(p.header().mode, Mode::Client);
        assert_eq!(p.header().version, 4);
        assert_eq!(p.header().precision, 32);
        assert!(p.extension_fields().is_empty());
        let Trailer::Mac(mac) = p.trailer() else {
            panic!("no MAC")
        };
        assert_eq!(mac.key_id, 1);
        assert_eq!(mac.digest, &CHRONY_MD5_REQUEST[52..]);
        assert_eq!(p.authenticated_bytes(), &CHRONY_MD5_REQUEST[..48]);
        round_trips(&CHRONY_MD5_REQUEST);
    }

    #[test]
    fn chrony_sha256_request_is_ntpv3_with_a_32_byte_digest() {
        let p = Packet::decode(&CHRONY_SHA256_V3_REQUEST).expect("decode");
        assert_eq!(p.header().version, 3);
        assert!(matches!(
            p.trailer(),
            Trailer::Mac(MacTrailer { key_id: 4, digest }) if digest.len() == 32
        ));
        round_trips(&CHRONY_SHA256_V3_REQUEST);
    }

    #[test]
    fn chrony_sha1_reply() {
        let p = Packet::decode(&CHRONY_SHA1_REPLY).expect("decode");
        assert_eq!(p.header().mode, Mode::Server);
        assert_eq!(p.header().stratum, 8);
        assert!(matches!(
            p.trailer(),
            Trailer::Mac(MacTrailer { key_id: 2, digest }) if digest.len() == 20
        ));
        round_trips(&CHRONY_SHA1_REPLY);
    }

    #[test]
    fn every_truncation_of_a_real_packet_is_an_error_or_a_shorter_packet() {
        for len in 0..CHRONY_SHA1_REPLY.len() {
            let bytes = &CHRONY_SHA1_REPLY[..len];
            match Packet::decode(bytes) {
                Ok(p) => {
                    assert!(len == 48 || len == 68, "accepted {len} bytes: {p:?}");
                }
                Err(e) => assert!(!e.name().is_empty()),
            }
        }
        assert_eq!(
            Packet::decode(&CHRONY_SHA1_REPLY[..47]),
            Err(WireError::HeaderTooShort { len: 47 })
        );
        assert_eq!(
            Packet::decode(&CHRONY_SHA1_REPLY[..49]),
            Err(WireError::NotMultipleOfFour { len: 49 })
        );
        // 4 bytes of key id 2 after the header: not a crypto-NAK.
        assert_eq!(
            Packet::decode(&CHRONY_SHA1_REPLY[..52]),
            Err(WireError::CryptoNakKeyId { key_id: 2 })
        );
    }

    #[test]
    fn mac_of_wrong_size_is_read_as_an_extension_field_and_rejected() {
        // 28 bytes after the header are an extension field in NTPv4; the key id
        // 2 makes its type 0 and length 2.
        let mut bytes = [0u8; 76];
        bytes[..72].copy_from_slice(&CHRONY_SHA1_REPLY);
        assert_eq!(
            Packet::decode(&bytes),
            Err(WireError::ExtensionFieldTooShort {
                offset: 48,
                length: 2
            })
        );
    }

    #[test]
    fn huge_extension_field_length_is_an_overrun() {
        let mut bytes = [0u8; 48 + 32];
        bytes[..48].copy_from_slice(&CHRONY_SHA1_REPLY[..48]);
        bytes[50..52].copy_from_slice(&0xfffcu16.to_be_bytes());
        assert_eq!(
            Packet::decode(&bytes),
            Err(WireError::ExtensionFieldOverrun {
                offset: 48,
                length: 0xfffc,
                available: 32
            })
        );
    }

    #[test]
    fn writer_builds_packets_that_decode() {
        let mut header = Header::new(Mode::Client);
        header.leap = LeapIndicator::Unsynchronized;
        header.transmit_ts = NtpTimestamp::from_parts(1, 2);
        let mut out = [0u8; 200];
        let mut w = PacketWriter::new(&mut out, &header).expect("header");
        w.push_extension_field(ExtensionField {
            field_type: 0x0104,
            value: &[7; 32],
        })
        .expect("uid");
        assert_eq!(w.authenticated_bytes().len(), 84);
        let n = w.finish_with_mac(9, &[0xab; 20]).expect("mac");
        assert_eq!(n, 108);
        let p = Packet::decode(&out[..n]).expect("decode");
        assert_eq!(*p.header(), header);
        assert_eq!(p.extension_fields().iter().count(), 1);
        assert!(matches!(
            p.trailer(),
            Trailer::Mac(MacTrailer { key_id: 9, .. })
        ));

        let n = PacketWriter::new(&mut out, &header)
            .and_then(PacketWriter::finish_with_crypto_nak)
            .expect("nak");
        assert_eq!(n, 52);
        assert_eq!(
            Packet::decode(&out[..n]).map(|p| p.trailer()),
            Ok(Trailer::CryptoNak)
        );
    }

    #[test]
    fn writer_refuses_what_would_not_decode() {
        let header = Header::new(Mode::Server);
        let mut out = [0u8; 200];
        let w = PacketWriter::new(&mut out, &header).expect("header");
        assert_eq!(
            w.finish_with_mac(1, &[0; 32]),
            Err(WireError::DigestLength {
                len: 32,
                version: 4
            })
        );
        let mut w = PacketWriter::new(&mut out, &header).expect("header");
        w.push_extension_field(ExtensionField {
            field_type: 1,
            value: &[0; 12],
        })
        .expect("16-byte field");
        assert_eq!(
            w.finish(),
            Err(WireError::InvalidExtensionField { length: 16 })
        );
        let mut v3 = header;
        v3.version = 3;
        let mut w = PacketWriter::new(&mut out, &v3).expect("header");
        assert!(
            w.push_extension_field(ExtensionField {
                field_type: 1,
                value: &[0; 28],
            })
            .is_err()
        );
        assert_eq!(w.finish_with_mac(1, &[0; 32]), Ok(84));
        let mut small = [0u8; 60];
        let w = PacketWriter::new(&mut small, &header).expect("header");
        assert_eq!(
            w.finish_with_mac(1, &[0; 16]),
            Err(WireError::BufferTooSmall {
                needed: 68,
                available: 60
            })
        );
    }
}
