//! NTS-KE record codec (RFC 8915 section 4, records of section 4.1).
//!
//! A record is `C (1 bit) | type (15 bits) | body length (u16) | body`; the body length
//! does not count the 4-byte header. Decoding never panics: it reports an incomplete
//! record, a decoded record with the bytes it used, or an error. Known types get their
//! canonical critical bit when encoded (the bit a receiver sees on a known type carries no
//! meaning, RFC 8915 section 4); unknown types keep the bit they arrived with so they
//! survive a round trip.

use std::fmt;

/// Length of the record header: critical bit and type (u16) plus body length (u16).
pub const RECORD_HEADER_LEN: usize = 4;

/// Protocol ID of NTPv4 in the NTS Next Protocol Negotiation record (RFC 8915 section 7.6).
pub const NEXT_PROTOCOL_NTPV4: u16 = 0;

/// Record type numbers of RFC 8915 section 7.5.
pub mod record_type {
    /// End of Message (RFC 8915 section 4.1.1).
    pub const END_OF_MESSAGE: u16 = 0;
    /// NTS Next Protocol Negotiation (RFC 8915 section 4.1.2).
    pub const NEXT_PROTOCOL: u16 = 1;
    /// Error (RFC 8915 section 4.1.3).
    pub const ERROR: u16 = 2;
    /// Warning (RFC 8915 section 4.1.4).
    pub const WARNING: u16 = 3;
    /// AEAD Algorithm Negotiation (RFC 8915 section 4.1.5).
    pub const AEAD_ALGORITHM: u16 = 4;
    /// New Cookie for NTPv4 (RFC 8915 section 4.1.6).
    pub const NEW_COOKIE: u16 = 5;
    /// NTPv4 Server Negotiation (RFC 8915 section 4.1.7).
    pub const SERVER: u16 = 6;
    /// NTPv4 Port Negotiation (RFC 8915 section 4.1.8).
    pub const PORT: u16 = 7;
}

/// Record types other implementations send that RFC 8915 does not define. They decode as
/// [`Record::Unknown`] and are handled by type number (docs/nts.md has the table).
pub mod peer_record_type {
    /// chrony (4.6.1 and later): "compliant AES-128-GCM-SIV key export", empty body, not
    /// critical. A client that offers AEAD 30 sends it; a server that echoes it exports
    /// AEAD 30 keys with the RFC 8915 section 5.1 context (id 30), without it chrony uses
    /// id 15 in the context (nts-compliant-128gcm.html, chrony-project.org/doc/spec).
    pub const CHRONY_COMPLIANT_128GCM_EXPORT: u16 = 1024;
    /// ntpd-rs (1.x): keep the TLS connection open for another request, empty body, not
    /// critical; sent with the pool records below.
    pub const NTPD_RS_KEEP_ALIVE: u16 = 8;
    /// ntpd-rs pool (draft-venhoek-nts-pool): Supported Next Protocol List, critical.
    pub const NTPD_RS_SUPPORTED_NEXT_PROTOCOL_LIST: u16 = 9;
    /// ntpd-rs pool: Supported Algorithm List, critical.
    pub const NTPD_RS_SUPPORTED_ALGORITHM_LIST: u16 = 10;
    /// ntpd-rs pool: Fixed Key Request (the pool hands the server the client's keys),
    /// critical.
    pub const NTPD_RS_FIXED_KEY_REQUEST: u16 = 12;
    /// ntpd-rs: NTP Server Deny (a server the client does not want), not critical.
    pub const NTPD_RS_NTP_SERVER_DENY: u16 = 13;
    /// ntpd-rs pool: Authentication (the pool's key at the server), not critical.
    pub const NTPD_RS_AUTHENTICATION: u16 = 14;
}

/// Error codes of the Error record (RFC 8915 section 4.1.3).
pub mod error_code {
    /// Unrecognized Critical Record.
    pub const UNRECOGNIZED_CRITICAL_RECORD: u16 = 0;
    /// Bad Request (also sent on a timeout).
    pub const BAD_REQUEST: u16 = 1;
    /// Internal Server Error.
    pub const INTERNAL_SERVER_ERROR: u16 = 2;
}

/// One NTS-KE record (RFC 8915 section 4.1).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Record {
    /// End of Message, type 0 (section 4.1.1): empty body, always critical.
    EndOfMessage,
    /// NTS Next Protocol Negotiation, type 1 (section 4.1.2): protocol IDs.
    NextProtocol(Vec<u16>),
    /// Error, type 2 (section 4.1.3): one error code.
    Error(u16),
    /// Warning, type 3 (section 4.1.4): one warning code.
    Warning(u16),
    /// AEAD Algorithm Negotiation, type 4 (section 4.1.5): AEAD IDs in preference order.
    AeadAlgorithm(Vec<u16>),
    /// New Cookie for NTPv4, type 5 (section 4.1.6): an opaque cookie.
    NewCookie(Vec<u8>),
    /// NTPv4 Server Negotiation, type 6 (section 4.1.7): IPv4, IPv6 (no brackets) or FQDN text.
    Server(String),
    /// NTPv4 Port Negotiation, type 7 (section 4.1.8): UDP port.
    Port(u16),
    /// Any other type, kept with its critical bit (ignored if not critical, section 4).
    Unknown {
        /// The critical bit as received.
        critical: bool,
        /// The 15-bit record type.
        record_type: u16,
        /// The body as received.
        body: Vec<u8>,
    },
}

/// Why bytes are not a valid record.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordError {
    /// The body length field exceeds the receiver's limit.
    BodyTooLarge {
        /// Record type from the header.
        record_type: u16,
        /// Body length from the header.
        len: usize,
        /// The limit in force.
        max: usize,
    },
    /// The body does not fit the record type (odd length of a u16 list, wrong fixed size,
    /// non-empty End of Message, non-ASCII server name).
    MalformedBody {
        /// Record type from the header.
        record_type: u16,
    },
    /// An encoded body would not fit the 16-bit length field.
    BodyTooLongToEncode,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BodyTooLarge {
                record_type,
                len,
                max,
            } => write!(
                f,
                "record type {record_type} body of {len} bytes exceeds the limit of {max}"
            ),
            Self::MalformedBody { record_type } => {
                write!(f, "malformed body for record type {record_type}")
            }
            Self::BodyTooLongToEncode => f.write_str("record body longer than 65535 bytes"),
        }
    }
}

impl std::error::Error for RecordError {}

/// Result of trying to decode one record from the front of a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// More bytes are needed; nothing was consumed.
    Incomplete,
    /// A record and the number of bytes it occupied.
    Complete(Record, usize),
}

impl Record {
    /// Record type number (15 bits).
    pub fn record_type(&self) -> u16 {
        match self {
            Self::EndOfMessage => record_type::END_OF_MESSAGE,
            Self::NextProtocol(_) => record_type::NEXT_PROTOCOL,
            Self::Error(_) => record_type::ERROR,
            Self::Warning(_) => record_type::WARNING,
            Self::AeadAlgorithm(_) => record_type::AEAD_ALGORITHM,
            Self::NewCookie(_) => record_type::NEW_COOKIE,
            Self::Server(_) => record_type::SERVER,
            Self::Port(_) => record_type::PORT,
            Self::Unknown { record_type, .. } => *record_type & 0x7fff,
        }
    }

    /// The critical bit this record is sent with.
    ///
    /// End of Message, Next Protocol, Error and Warning MUST be critical (section 4.1);
    /// we also mark AEAD negotiation critical (MAY), New Cookie not (SHOULD NOT), and
    /// Server and Port not critical, so that a client that does not know them ignores them
    /// rather than failing (the RFC leaves the choice to the server).
    pub fn is_critical(&self) -> bool {
        match self {
            Self::EndOfMessage
            | Self::NextProtocol(_)
            | Self::Error(_)
            | Self::Warning(_)
            | Self::AeadAlgorithm(_) => true,
            Self::NewCookie(_) | Self::Server(_) | Self::Port(_) => false,
            Self::Unknown { critical, .. } => *critical,
        }
    }

    /// Bytes this record occupies on the wire.
    pub fn encoded_len(&self) -> usize {
        RECORD_HEADER_LEN
            + match self {
                Self::EndOfMessage => 0,
                Self::NextProtocol(ids) | Self::AeadAlgorithm(ids) => 2 * ids.len(),
                Self::Error(_) | Self::Warning(_) | Self::Port(_) => 2,
                Self::NewCookie(body) | Self::Unknown { body, .. } => body.len(),
                Self::Server(name) => name.len(),
            }
    }

    /// Appends the encoded record to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), RecordError> {
        let body_len = self.encoded_len() - RECORD_HEADER_LEN;
        let body_len = u16::try_from(body_len).map_err(|_| RecordError::BodyTooLongToEncode)?;
        let mut first = self.record_type() & 0x7fff;
        if self.is_critical() {
            first |= 0x8000;
        }
        out.reserve(RECORD_HEADER_LEN + usize::from(body_len));
        out.extend_from_slice(&first.to_be_bytes());
        out.extend_from_slice(&body_len.to_be_bytes());
        match self {
            Self::EndOfMessage => {}
            Self::NextProtocol(ids) | Self::AeadAlgorithm(ids) => {
                for id in ids {
                    out.extend_from_slice(&id.to_be_bytes());
                }
            }
            Self::Error(v) | Self::Warning(v) | Self::Port(v) => {
                out.extend_from_slice(&v.to_be_bytes());
            }
            Self::NewCookie(body) | Self::Unknown { body, .. } => out.extend_from_slice(body),
            Self::Server(name) => out.extend_from_slice(name.as_bytes()),
        }
        Ok(())
    }

    /// Decodes one record from the front of `buf`, refusing bodies longer than `max_body`
    /// as soon as the header is seen (before the body arrives).
    pub fn decode(buf: &[u8], max_body: usize) -> Result<Decoded, RecordError> {
        let Some(header) = buf.get(..RECORD_HEADER_LEN) else {
            return Ok(Decoded::Incomplete);
        };
        let first = u16::from_be_bytes([header[0], header[1]]);
        let critical = first & 0x8000 != 0;
        let rtype = first & 0x7fff;
        let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
        if len > max_body {
            return Err(RecordError::BodyTooLarge {
                record_type: rtype,
                len,
                max: max_body,
            });
        }
        let Some(body) = buf.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + len) else {
            return Ok(Decoded::Incomplete);
        };
        let record = Self::from_body(critical, rtype, body)?;
        Ok(Decoded::Complete(record, RECORD_HEADER_LEN + len))
    }

    fn from_body(critical: bool, rtype: u16, body: &[u8]) -> Result<Self, RecordError> {
        let malformed = RecordError::MalformedBody { record_type: rtype };
        let record = match rtype {
            record_type::END_OF_MESSAGE if body.is_empty() => Self::EndOfMessage,
            record_type::NEXT_PROTOCOL => Self::NextProtocol(u16_list(body).ok_or(malformed)?),
            record_type::ERROR => Self::Error(single_u16(body).ok_or(malformed)?),
            record_type::WARNING => Self::Warning(single_u16(body).ok_or(malformed)?),
            record_type::AEAD_ALGORITHM => Self::AeadAlgorithm(u16_list(body).ok_or(malformed)?),
            record_type::NEW_COOKIE => Self::NewCookie(body.to_vec()),
            record_type::SERVER => {
                if body.is_empty() || !body.iter().all(|b| b.is_ascii_graphic()) {
                    return Err(malformed);
                }
                // All bytes are ASCII, so this conversion cannot fail.
                Self::Server(String::from_utf8_lossy(body).into_owned())
            }
            record_type::PORT => Self::Port(single_u16(body).ok_or(malformed)?),
            record_type::END_OF_MESSAGE => return Err(malformed),
            _ => Self::Unknown {
                critical,
                record_type: rtype,
                body: body.to_vec(),
            },
        };
        Ok(record)
    }
}

fn u16_list(body: &[u8]) -> Option<Vec<u16>> {
    if !body.len().is_multiple_of(2) {
        return None;
    }
    Some(
        body.chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect(),
    )
}

fn single_u16(body: &[u8]) -> Option<u16> {
    match body {
        [a, b] => Some(u16::from_be_bytes([*a, *b])),
        _ => None,
    }
}

/// Encodes records back to back into one buffer.
pub fn encode_records(records: &[Record]) -> Result<Vec<u8>, RecordError> {
    let mut out = Vec::with_capacity(records.iter().map(Record::encoded_len).sum());
    for record in records {
        record.encode(&mut out)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(r: &Record) -> Vec<u8> {
        let mut out = Vec::new();
        r.encode(&mut out).expect("encodable");
        out
    }

    fn dec(b: &[u8]) -> Record {
        match Record::decode(b, 65535).expect("valid") {
            Decoded::Complete(r, n) => {
                assert_eq!(n, b.len());
                r
            }
            Decoded::Incomplete => panic!("incomplete"),
        }
    }

    #[test]
    fn every_known_type_encodes_with_rfc_8915_layout() {
        let cases: Vec<(Record, Vec<u8>)> = vec![
            (Record::EndOfMessage, vec![0x80, 0, 0, 0]),
            (Record::NextProtocol(vec![0]), vec![0x80, 1, 0, 2, 0, 0]),
            (Record::Error(1), vec![0x80, 2, 0, 2, 0, 1]),
            (Record::Warning(7), vec![0x80, 3, 0, 2, 0, 7]),
            (
                Record::AeadAlgorithm(vec![15, 30]),
                vec![0x80, 4, 0, 4, 0, 15, 0, 30],
            ),
            (Record::NewCookie(vec![9, 8, 7]), vec![0, 5, 0, 3, 9, 8, 7]),
            (
                Record::Server("::1".into()),
                vec![0, 6, 0, 3, b':', b':', b'1'],
            ),
            (Record::Port(123), vec![0, 7, 0, 2, 0, 123]),
        ];
        for (record, wire) in cases {
            assert_eq!(enc(&record), wire, "{record:?}");
            assert_eq!(dec(&wire), record);
        }
    }

    #[test]
    fn unknown_records_keep_their_critical_bit() {
        for critical in [false, true] {
            let r = Record::Unknown {
                critical,
                record_type: 1024,
                body: vec![1, 2, 3],
            };
            let wire = enc(&r);
            assert_eq!(wire[0] & 0x80 != 0, critical);
            assert_eq!(dec(&wire), r);
        }
    }

    #[test]
    fn critical_bit_on_known_type_is_ignored_on_receipt() {
        assert_eq!(dec(&[0x00, 7, 0, 2, 0, 1]), Record::Port(1));
        assert_eq!(dec(&[0x80, 7, 0, 2, 0, 1]), Record::Port(1));
        assert_eq!(dec(&[0x00, 0, 0, 0]), Record::EndOfMessage);
    }

    #[test]
    fn malformed_bodies_are_errors() {
        for wire in [
            &[0x80, 0, 0, 1, 0][..],      // EOM with a body
            &[0x80, 1, 0, 1, 0],          // odd next-protocol list
            &[0x80, 2, 0, 3, 0, 0, 0],    // error code of 3 bytes
            &[0x80, 3, 0, 0],             // empty warning
            &[0x80, 4, 0, 3, 0, 15, 0],   // odd AEAD list
            &[0x00, 6, 0, 0],             // empty server
            &[0x00, 6, 0, 2, 0xc3, 0xa9], // non-ASCII server
            &[0x00, 6, 0, 2, b'a', b' '], // space in server name
            &[0x00, 7, 0, 1, 0],          // short port
        ] {
            assert!(
                matches!(
                    Record::decode(wire, 1024),
                    Err(RecordError::MalformedBody { .. })
                ),
                "{wire:?}"
            );
        }
    }

    #[test]
    fn short_input_is_incomplete_not_an_error() {
        let wire = enc(&Record::AeadAlgorithm(vec![15, 17]));
        for n in 0..wire.len() {
            assert_eq!(Record::decode(&wire[..n], 1024), Ok(Decoded::Incomplete));
        }
    }

    #[test]
    fn oversized_body_is_refused_from_the_header_alone() {
        assert_eq!(
            Record::decode(&[0x00, 5, 0x04, 0x01], 1024),
            Err(RecordError::BodyTooLarge {
                record_type: 5,
                len: 1025,
                max: 1024
            })
        );
    }

    #[test]
    fn body_longer_than_u16_cannot_be_encoded() {
        let r = Record::NewCookie(vec![0; 65536]);
        assert_eq!(
            r.encode(&mut Vec::new()),
            Err(RecordError::BodyTooLongToEncode)
        );
    }
}
