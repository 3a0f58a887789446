//! The NTS pool records (draft-ietf-ntp-nts-keyexchange-pool-00, as ntpd-rs 1.9 and the
//! experimental pool's load balancer send them).
//!
//! A key-exchange load balancer (KELB) terminates the client's NTS-KE and asks a pool
//! member for cookies made for the keys it exported from the client's TLS session. These
//! records carry that conversation. They arrive from the general codec as
//! [`Record::Unknown`]; [`PoolRecord::from_record`] reads them and
//! [`PoolRecord::to_record`] writes them, with the critical bits the peers use:
//!
//! | type | record | critical | body |
//! |---|---|---|---|
//! | 8 | Keep Alive | no | empty |
//! | 9 | Supported Next Protocol List | yes | request: empty; response: u16 protocol ids |
//! | 10 | Supported Algorithm List | yes | request: empty; response: (u16 AEAD id, u16 key length) pairs |
//! | 12 | Fixed Key Request | yes | C2S key then S2C key, equal halves |
//! | 13 | NTP Server Deny | no | a server name (UTF-8) the client does not want |
//! | 14 | Authentication | no | the load balancer's token (UTF-8) |
//!
//! Record 11 (List Server Names of draft-venhoek-nts-pool-04) is not sent by ntpd-rs 1.9
//! or the pool and is not implemented: it stays an unknown critical record (Error 0).

use std::fmt;

use crate::record::Record;

/// Record type numbers of the pool records.
pub mod pool_type {
    /// Keep Alive: keep the TLS connection open for another request. Not critical.
    pub const KEEP_ALIVE: u16 = 8;
    /// Supported Next Protocol List. Critical.
    pub const SUPPORTED_NEXT_PROTOCOL_LIST: u16 = 9;
    /// Supported Algorithm List. Critical.
    pub const SUPPORTED_ALGORITHM_LIST: u16 = 10;
    /// Fixed Key Request. Critical.
    pub const FIXED_KEY_REQUEST: u16 = 12;
    /// NTP Server Deny. Not critical.
    pub const NTP_SERVER_DENY: u16 = 13;
    /// Authentication (the load balancer's token). Not critical.
    pub const AUTHENTICATION: u16 = 14;
}

/// Longest Authentication token or denied server name we read: both are short names in
/// practice; a bound keeps a hostile peer from parking large strings in the server.
pub const MAX_TEXT_LEN: usize = 1024;
/// Longest key in a Fixed Key Request: AES-SIV-CMAC-512 takes 64 bytes.
pub const MAX_FIXED_KEY_LEN: usize = 64;

/// One AEAD a server supports, with its key length in bytes (record 10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AlgorithmDescription {
    /// AEAD id (IANA "AEAD Algorithms").
    pub aead_id: u16,
    /// Key length in bytes of C2S and S2C for it.
    pub key_len: u16,
}

/// A pool record, typed.
#[derive(Clone, PartialEq, Eq)]
pub enum PoolRecord {
    /// Keep Alive (8).
    KeepAlive,
    /// Supported Next Protocol List (9): empty in a request.
    SupportedNextProtocols(Vec<u16>),
    /// Supported Algorithm List (10): empty in a request.
    SupportedAlgorithms(Vec<AlgorithmDescription>),
    /// Fixed Key Request (12): the keys the server must make cookies for.
    FixedKey {
        /// Client-to-server key.
        c2s: Vec<u8>,
        /// Server-to-client key.
        s2c: Vec<u8>,
    },
    /// NTP Server Deny (13).
    NtpServerDeny(String),
    /// Authentication (14): the load balancer's token.
    Authentication(String),
}

/// Keys and tokens are secrets: the debug form names the record and the lengths only.
impl fmt::Debug for PoolRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::KeepAlive => f.write_str("KeepAlive"),
            Self::SupportedNextProtocols(p) => {
                f.debug_tuple("SupportedNextProtocols").field(p).finish()
            }
            Self::SupportedAlgorithms(a) => f.debug_tuple("SupportedAlgorithms").field(a).finish(),
            Self::FixedKey { c2s, s2c } => write!(
                f,
                "FixedKey {{ c2s: <{} bytes>, s2c: <{} bytes> }}",
                c2s.len(),
                s2c.len()
            ),
            Self::NtpServerDeny(name) => f.debug_tuple("NtpServerDeny").field(name).finish(),
            Self::Authentication(token) => write!(f, "Authentication(<{} bytes>)", token.len()),
        }
    }
}

impl Drop for PoolRecord {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        match self {
            Self::FixedKey { c2s, s2c } => {
                c2s.zeroize();
                s2c.zeroize();
            }
            Self::Authentication(token) => token.zeroize(),
            _ => {}
        }
    }
}

/// Why a pool record's body is not valid.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolRecordError {
    /// The body does not fit the record type.
    Malformed {
        /// The record type.
        record_type: u16,
        /// What is wrong.
        what: &'static str,
    },
}

impl fmt::Display for PoolRecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed { record_type, what } => {
                write!(f, "malformed pool record {record_type}: {what}")
            }
        }
    }
}

impl std::error::Error for PoolRecordError {}

fn malformed(record_type: u16, what: &'static str) -> PoolRecordError {
    PoolRecordError::Malformed { record_type, what }
}

fn u16_list(record_type: u16, body: &[u8]) -> Result<Vec<u16>, PoolRecordError> {
    if !body.len().is_multiple_of(2) {
        return Err(malformed(record_type, "odd length for a list of u16"));
    }
    Ok(body
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect())
}

fn text(record_type: u16, body: &[u8]) -> Result<String, PoolRecordError> {
    if body.len() > MAX_TEXT_LEN {
        return Err(malformed(record_type, "text longer than 1024 bytes"));
    }
    String::from_utf8(body.to_vec()).map_err(|_| malformed(record_type, "text is not UTF-8"))
}

impl PoolRecord {
    /// Reads a pool record out of a decoded record: `None` when `record` is not one of
    /// the pool's types (the critical bit is not checked, as RFC 8915 section 4 says a
    /// receiver of a known type ignores it).
    pub fn from_record(record: &Record) -> Option<Result<Self, PoolRecordError>> {
        let Record::Unknown {
            record_type, body, ..
        } = record
        else {
            return None;
        };
        let t = *record_type & 0x7fff;
        Some(match t {
            pool_type::KEEP_ALIVE => Ok(Self::KeepAlive),
            pool_type::SUPPORTED_NEXT_PROTOCOL_LIST => {
                u16_list(t, body).map(Self::SupportedNextProtocols)
            }
            pool_type::SUPPORTED_ALGORITHM_LIST => {
                if !body.len().is_multiple_of(4) {
                    Err(malformed(t, "length not a multiple of 4"))
                } else {
                    Ok(Self::SupportedAlgorithms(
                        body.chunks_exact(4)
                            .map(|c| AlgorithmDescription {
                                aead_id: u16::from_be_bytes([c[0], c[1]]),
                                key_len: u16::from_be_bytes([c[2], c[3]]),
                            })
                            .collect(),
                    ))
                }
            }
            pool_type::FIXED_KEY_REQUEST => {
                if body.is_empty() || !body.len().is_multiple_of(2) {
                    Err(malformed(
                        t,
                        "keys must be two non-empty halves of equal length",
                    ))
                } else if body.len() / 2 > MAX_FIXED_KEY_LEN {
                    Err(malformed(t, "keys longer than 64 bytes"))
                } else {
                    let (c2s, s2c) = body.split_at(body.len() / 2);
                    Ok(Self::FixedKey {
                        c2s: c2s.to_vec(),
                        s2c: s2c.to_vec(),
                    })
                }
            }
            pool_type::NTP_SERVER_DENY => text(t, body).map(Self::NtpServerDeny),
            pool_type::AUTHENTICATION => text(t, body).map(Self::Authentication),
            _ => return None,
        })
    }

    /// The record type number.
    pub fn record_type(&self) -> u16 {
        match self {
            Self::KeepAlive => pool_type::KEEP_ALIVE,
            Self::SupportedNextProtocols(_) => pool_type::SUPPORTED_NEXT_PROTOCOL_LIST,
            Self::SupportedAlgorithms(_) => pool_type::SUPPORTED_ALGORITHM_LIST,
            Self::FixedKey { .. } => pool_type::FIXED_KEY_REQUEST,
            Self::NtpServerDeny(_) => pool_type::NTP_SERVER_DENY,
            Self::Authentication(_) => pool_type::AUTHENTICATION,
        }
    }

    /// The critical bit the record is sent with (as ntpd-rs 1.9 and the pool send it).
    pub fn is_critical(&self) -> bool {
        matches!(
            self,
            Self::SupportedNextProtocols(_) | Self::SupportedAlgorithms(_) | Self::FixedKey { .. }
        )
    }

    /// The record as the general codec encodes it.
    pub fn to_record(&self) -> Record {
        let body = match self {
            Self::KeepAlive => Vec::new(),
            Self::SupportedNextProtocols(ids) => ids.iter().flat_map(|i| i.to_be_bytes()).collect(),
            Self::SupportedAlgorithms(algs) => algs
                .iter()
                .flat_map(|a| {
                    let [i0, i1] = a.aead_id.to_be_bytes();
                    let [k0, k1] = a.key_len.to_be_bytes();
                    [i0, i1, k0, k1]
                })
                .collect(),
            Self::FixedKey { c2s, s2c } => [c2s.as_slice(), s2c.as_slice()].concat(),
            Self::NtpServerDeny(text) | Self::Authentication(text) => text.as_bytes().to_vec(),
        };
        Record::Unknown {
            critical: self.is_critical(),
            record_type: self.record_type(),
            body,
        }
    }
}

/// Whether `record_type` (15 bits) is one of the pool's types.
pub fn is_pool_type(record_type: u16) -> bool {
    matches!(
        record_type & 0x7fff,
        pool_type::KEEP_ALIVE
            | pool_type::SUPPORTED_NEXT_PROTOCOL_LIST
            | pool_type::SUPPORTED_ALGORITHM_LIST
            | pool_type::FIXED_KEY_REQUEST
            | pool_type::NTP_SERVER_DENY
            | pool_type::AUTHENTICATION
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::encode_records;

    fn wire(record: &PoolRecord) -> Vec<u8> {
        encode_records(&[record.to_record()]).expect("test value")
    }

    // Byte layouts, field by field, as draft-ietf-ntp-nts-keyexchange-pool-00 and
    // ntpd-rs 1.9 (ntp-proto src/nts/record.rs) lay them out: a 16-bit word with the
    // critical bit on top of the 15-bit type, a 16-bit body length, then the body.
    #[test]
    fn keep_alive_is_type_8_not_critical_and_empty() {
        assert_eq!(wire(&PoolRecord::KeepAlive), [0x00, 0x08, 0x00, 0x00]);
    }

    #[test]
    fn supported_lists_are_critical_with_empty_request_bodies() {
        assert_eq!(
            wire(&PoolRecord::SupportedNextProtocols(vec![])),
            [0x80, 0x09, 0x00, 0x00]
        );
        assert_eq!(
            wire(&PoolRecord::SupportedAlgorithms(vec![])),
            [0x80, 0x0a, 0x00, 0x00]
        );
        assert_eq!(
            wire(&PoolRecord::SupportedNextProtocols(vec![0, 0x8001])),
            [0x80, 0x09, 0x00, 0x04, 0x00, 0x00, 0x80, 0x01]
        );
    }

    #[test]
    fn supported_algorithms_are_id_and_key_length_pairs() {
        let r = PoolRecord::SupportedAlgorithms(vec![
            AlgorithmDescription {
                aead_id: 15,
                key_len: 32,
            },
            AlgorithmDescription {
                aead_id: 17,
                key_len: 64,
            },
        ]);
        assert_eq!(
            wire(&r),
            [
                0x80, 0x0a, 0x00, 0x08, 0x00, 0x0f, 0x00, 0x20, 0x00, 0x11, 0x00, 0x40
            ]
        );
    }

    #[test]
    fn fixed_key_request_is_c2s_then_s2c() {
        let r = PoolRecord::FixedKey {
            c2s: vec![1; 32],
            s2c: vec![2; 32],
        };
        let w = wire(&r);
        assert_eq!(w[..4], [0x80, 0x0c, 0x00, 0x40]);
        assert_eq!(w[4..36], [1; 32]);
        assert_eq!(w[36..], [2; 32]);
    }

    #[test]
    fn deny_and_authentication_are_text_not_critical() {
        assert_eq!(
            wire(&PoolRecord::NtpServerDeny("a.b".into())),
            [0x00, 0x0d, 0x00, 0x03, b'a', b'.', b'b']
        );
        assert_eq!(
            wire(&PoolRecord::Authentication("tok".into())),
            [0x00, 0x0e, 0x00, 0x03, b't', b'o', b'k']
        );
    }

    #[test]
    fn every_record_round_trips_through_the_general_codec() {
        let records = [
            PoolRecord::KeepAlive,
            PoolRecord::SupportedNextProtocols(vec![0]),
            PoolRecord::SupportedAlgorithms(vec![AlgorithmDescription {
                aead_id: 30,
                key_len: 16,
            }]),
            PoolRecord::FixedKey {
                c2s: vec![9; 64],
                s2c: vec![8; 64],
            },
            PoolRecord::NtpServerDeny("time.example".into()),
            PoolRecord::Authentication("secret".into()),
        ];
        for r in &records {
            let bytes = wire(r);
            let crate::record::Decoded::Complete(decoded, used) =
                Record::decode(&bytes, 4096).expect("test value")
            else {
                panic!("a whole record decodes")
            };
            assert_eq!(used, bytes.len());
            let back = PoolRecord::from_record(&decoded)
                .expect("test value")
                .expect("test value");
            assert_eq!(&back, r);
            assert!(is_pool_type(r.record_type()));
        }
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        let bad = |t: u16, body: &[u8]| {
            PoolRecord::from_record(&Record::Unknown {
                critical: true,
                record_type: t,
                body: body.to_vec(),
            })
            .expect("test value")
        };
        assert!(bad(9, &[0]).is_err());
        assert!(bad(10, &[0, 15, 0]).is_err());
        assert!(bad(12, &[]).is_err());
        assert!(bad(12, &[1, 2, 3]).is_err());
        assert!(bad(12, &[0; 130]).is_err());
        assert!(bad(13, &[0xff, 0xfe]).is_err());
        assert!(bad(14, &vec![b'a'; MAX_TEXT_LEN + 1]).is_err());
        // Keep Alive's body is ignored, as the draft asks of a receiver.
        assert_eq!(bad(8, &[1, 2]), Ok(PoolRecord::KeepAlive));
    }

    #[test]
    fn other_types_are_not_pool_records() {
        assert!(PoolRecord::from_record(&Record::Port(123)).is_none());
        assert!(
            PoolRecord::from_record(&Record::Unknown {
                critical: true,
                record_type: 11,
                body: vec![]
            })
            .is_none()
        );
        assert!(!is_pool_type(11));
    }

    #[test]
    fn debug_hides_keys_and_tokens() {
        let k = PoolRecord::FixedKey {
            c2s: vec![0xaa; 32],
            s2c: vec![0xbb; 32],
        };
        let t = PoolRecord::Authentication("hunter2".into());
        assert!(!format!("{k:?}").contains("170"));
        assert!(!format!("{t:?}").contains("hunter2"));
    }
}
