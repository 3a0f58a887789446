//! Sans-IO client side of a pool member (draft-ietf-ntp-nts-keyexchange-pool-00):
//! what a key-exchange load balancer sends to a backend and how it reads the answers.
//!
//! Two requests, both carrying the balancer's Authentication token:
//! - the Support query (Supported Next Protocol List and Supported Algorithm List,
//!   both empty): the answer lists the backend's protocols and AEADs with key lengths;
//! - the Fixed Key Request: Next Protocol `[0]`, AEAD `[id]` and the C2S/S2C keys the
//!   balancer exported from its client's TLS session; the answer is an ordinary
//!   RFC 8915 response (checked by [`parse_response_records`]) whose cookies the
//!   balancer passes on.
//!
//! Either may add Keep Alive. Every answer is bounded ([`MessageLimits::RESPONSE`]),
//! an Error record becomes [`BackendError::Response`] with
//! [`ResponseError::ServerError`], and nothing here panics on any input.

use std::fmt;

use zeroize::Zeroizing;

use crate::aead;
use crate::client_core::{NegotiatedSession, ResponseError, parse_response_records};
use crate::key_export::SessionKeys;
use crate::message::{MessageLimits, decode_message};
use crate::pool_record::{AlgorithmDescription, PoolRecord, PoolRecordError};
use crate::record::{NEXT_PROTOCOL_NTPV4, Record, RecordError, encode_records};

/// Most entries kept from a backend's Supported lists (ntpd-rs sends 2 AEADs and 1-2
/// protocols); more is refused as malformed.
pub const MAX_SUPPORTED_ENTRIES: usize = 32;

pub use crate::pool_token::{PoolToken, TokenError};

fn keep_alive_record() -> Record {
    PoolRecord::KeepAlive.to_record()
}

/// The Support query: Authentication, empty Supported Next Protocol and Supported
/// Algorithm lists, optionally Keep Alive, End of Message.
pub fn support_request(token: &PoolToken, keep_alive: bool) -> Result<Vec<u8>, RecordError> {
    let mut records = vec![
        token.record(),
        PoolRecord::SupportedNextProtocols(Vec::new()).to_record(),
        PoolRecord::SupportedAlgorithms(Vec::new()).to_record(),
    ];
    if keep_alive {
        records.push(keep_alive_record());
    }
    records.push(Record::EndOfMessage);
    let out = encode_records(&records);
    zeroize_bodies(&mut records);
    out
}

/// The Fixed Key Request for `aead_id` and `keys`: Authentication, Next Protocol
/// `[0]`, AEAD `[aead_id]`, Fixed Key, optionally Keep Alive, End of Message. The
/// buffer holds the keys and is zeroized on drop.
pub fn fixed_key_request(
    token: &PoolToken,
    aead_id: u16,
    keys: &SessionKeys,
    keep_alive: bool,
) -> Result<Zeroizing<Vec<u8>>, RecordError> {
    let fixed = PoolRecord::FixedKey {
        c2s: keys.c2s.to_vec(),
        s2c: keys.s2c.to_vec(),
    };
    let mut records = vec![
        token.record(),
        Record::NextProtocol(vec![NEXT_PROTOCOL_NTPV4]),
        Record::AeadAlgorithm(vec![aead_id]),
        fixed.to_record(),
    ];
    drop(fixed);
    if keep_alive {
        records.push(keep_alive_record());
    }
    records.push(Record::EndOfMessage);
    let out = encode_records(&records).map(Zeroizing::new);
    zeroize_bodies(&mut records);
    out
}

/// Clears the bodies of the pool records built here (token and keys).
fn zeroize_bodies(records: &mut [Record]) {
    use zeroize::Zeroize;
    for record in records {
        if let Record::Unknown { body, .. } = record {
            body.zeroize();
        }
    }
}

/// Why a backend's answer cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendError {
    /// The RFC 8915 part of the answer is wrong, or it is an Error record
    /// ([`ResponseError::ServerError`]).
    Response(ResponseError),
    /// A pool record with a malformed body.
    PoolRecord(PoolRecordError),
    /// A Support answer without the list asked for.
    MissingList {
        /// The record type missing.
        record_type: u16,
    },
    /// A Supported list more than once, or longer than [`MAX_SUPPORTED_ENTRIES`].
    BadList {
        /// The record type.
        record_type: u16,
    },
    /// A Port record of 0.
    ZeroPort,
}

impl BackendError {
    /// The Error code the backend sent, if that is what this is.
    pub fn server_error_code(&self) -> Option<u16> {
        match self {
            Self::Response(ResponseError::ServerError(code)) => Some(*code),
            _ => None,
        }
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Response(e) => write!(f, "{e}"),
            Self::PoolRecord(e) => write!(f, "{e}"),
            Self::MissingList { record_type } => {
                write!(f, "support answer without record type {record_type}")
            }
            Self::BadList { record_type } => {
                write!(f, "record type {record_type} repeated or too long")
            }
            Self::ZeroPort => f.write_str("Port record of 0"),
        }
    }
}

impl std::error::Error for BackendError {}

/// What a backend supports (its answer to the Support query).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Support {
    /// Next protocol ids.
    pub protocols: Vec<u16>,
    /// AEADs with their key lengths.
    pub algorithms: Vec<AlgorithmDescription>,
    /// The backend keeps the connection open for another request.
    pub keep_alive: bool,
}

impl Support {
    /// The AEAD ids whose key length is the one RFC 8915 (and this crate) uses: a
    /// backend announcing another length for a known id is not given keys for it.
    pub fn usable_aeads(&self) -> Vec<u16> {
        self.algorithms
            .iter()
            .filter(|a| aead::key_len(a.aead_id) == Some(usize::from(a.key_len)))
            .map(|a| a.aead_id)
            .collect()
    }
}

/// Error, Warning and unknown critical records, as an RFC 8915 client reads them.
fn first_refusal(records: &[Record]) -> Option<BackendError> {
    records
        .iter()
        .find_map(|record| match record {
            Record::Error(code) => Some(ResponseError::ServerError(*code)),
            Record::Warning(code) => Some(ResponseError::Warning(*code)),
            Record::Unknown {
                critical: true,
                record_type,
                ..
            } if !matches!(
                *record_type,
                crate::pool_record::pool_type::SUPPORTED_NEXT_PROTOCOL_LIST
                    | crate::pool_record::pool_type::SUPPORTED_ALGORITHM_LIST
            ) =>
            {
                Some(ResponseError::UnrecognizedCriticalRecord {
                    record_type: *record_type,
                })
            }
            _ => None,
        })
        .map(BackendError::Response)
}

/// Reads the answer to a Support query.
pub fn parse_support_response(records: &[Record]) -> Result<Support, BackendError> {
    if let Some(e) = first_refusal(records) {
        return Err(e);
    }
    let (mut protocols, mut algorithms, mut keep_alive) = (None, None, false);
    for record in records {
        match PoolRecord::from_record(record) {
            None => {}
            Some(Err(e)) => return Err(BackendError::PoolRecord(e)),
            Some(Ok(pool)) => match &pool {
                PoolRecord::SupportedNextProtocols(list) => {
                    let t = pool.record_type();
                    if protocols.is_some() || list.len() > MAX_SUPPORTED_ENTRIES {
                        return Err(BackendError::BadList { record_type: t });
                    }
                    protocols = Some(list.clone());
                }
                PoolRecord::SupportedAlgorithms(list) => {
                    let t = pool.record_type();
                    if algorithms.is_some() || list.len() > MAX_SUPPORTED_ENTRIES {
                        return Err(BackendError::BadList { record_type: t });
                    }
                    algorithms = Some(list.clone());
                }
                PoolRecord::KeepAlive => keep_alive = true,
                _ => {}
            },
        }
    }
    let protocols = protocols.ok_or(BackendError::MissingList {
        record_type: crate::pool_record::pool_type::SUPPORTED_NEXT_PROTOCOL_LIST,
    })?;
    let algorithms = algorithms.ok_or(BackendError::MissingList {
        record_type: crate::pool_record::pool_type::SUPPORTED_ALGORITHM_LIST,
    })?;
    Ok(Support {
        protocols,
        algorithms,
        keep_alive,
    })
}

/// The answer to a Fixed Key Request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedKeyAnswer {
    /// AEAD, cookies and the Server and Port records, if sent.
    pub session: NegotiatedSession,
    /// The backend keeps the connection open for another request.
    pub keep_alive: bool,
}

/// Reads the answer to a Fixed Key Request made for `aead_id`.
pub fn parse_fixed_key_response(
    records: &[Record],
    aead_id: u16,
) -> Result<FixedKeyAnswer, BackendError> {
    let session = parse_response_records(records, &[aead_id]).map_err(BackendError::Response)?;
    if session.ntp_port == Some(0) {
        return Err(BackendError::ZeroPort);
    }
    let keep_alive = records
        .iter()
        .any(|r| matches!(PoolRecord::from_record(r), Some(Ok(PoolRecord::KeepAlive))));
    Ok(FixedKeyAnswer {
        session,
        keep_alive,
    })
}

/// [`parse_support_response`] of a whole message.
pub fn parse_support_bytes(bytes: &[u8]) -> Result<Support, BackendError> {
    let records = decode_message(bytes, MessageLimits::RESPONSE)
        .map_err(|e| BackendError::Response(ResponseError::Message(e)))?;
    parse_support_response(&records)
}

/// [`parse_fixed_key_response`] of a whole message.
pub fn parse_fixed_key_bytes(bytes: &[u8], aead_id: u16) -> Result<FixedKeyAnswer, BackendError> {
    let records = decode_message(bytes, MessageLimits::RESPONSE)
        .map_err(|e| BackendError::Response(ResponseError::Message(e)))?;
    parse_fixed_key_response(&records, aead_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_export::{FakeExporter, export_session_keys};
    use crate::record::{error_code, record_type};

    fn token() -> PoolToken {
        PoolToken::new("s3cret\n").expect("valid")
    }

    #[test]
    fn support_request_is_what_ntpd_rs_parses_as_a_support_query() {
        let bytes = support_request(&token(), false).expect("valid");
        let records = decode_message(&bytes, MessageLimits::REQUEST).expect("valid");
        assert_eq!(
            records,
            vec![
                Record::Unknown {
                    critical: false,
                    record_type: 14,
                    body: b"s3cret".to_vec()
                },
                Record::Unknown {
                    critical: true,
                    record_type: 9,
                    body: vec![]
                },
                Record::Unknown {
                    critical: true,
                    record_type: 10,
                    body: vec![]
                },
                Record::EndOfMessage,
            ]
        );
        let with_keep_alive = support_request(&token(), true).expect("valid");
        assert_eq!(with_keep_alive.len(), bytes.len() + 4);
    }

    #[test]
    fn fixed_key_request_carries_one_protocol_one_aead_and_both_keys() {
        let keys = export_session_keys(&FakeExporter, 15, 32).expect("valid");
        let bytes = fixed_key_request(&token(), 15, &keys, false).expect("valid");
        let records = decode_message(&bytes, MessageLimits::REQUEST).expect("valid");
        assert_eq!(records[1], Record::NextProtocol(vec![0]));
        assert_eq!(records[2], Record::AeadAlgorithm(vec![15]));
        match &PoolRecord::from_record(&records[3]) {
            Some(Ok(PoolRecord::FixedKey { c2s, s2c })) => {
                assert_eq!(*c2s, keys.c2s.to_vec());
                assert_eq!(*s2c, keys.s2c.to_vec());
            }
            other => panic!("{other:?}"),
        }
        assert!(records[3].is_critical());
        assert_eq!(records.last(), Some(&Record::EndOfMessage));
    }

    fn support_answer(algs: &[(u16, u16)], protocols: &[u16]) -> Vec<Record> {
        vec![
            PoolRecord::SupportedAlgorithms(
                algs.iter()
                    .map(|&(aead_id, key_len)| AlgorithmDescription { aead_id, key_len })
                    .collect(),
            )
            .to_record(),
            PoolRecord::SupportedNextProtocols(protocols.to_vec()).to_record(),
            Record::EndOfMessage,
        ]
    }

    #[test]
    fn support_answers_are_read_and_wrong_key_lengths_are_not_usable() {
        let support =
            parse_support_response(&support_answer(&[(15, 32), (17, 64)], &[0])).expect("valid");
        assert_eq!(support.protocols, vec![0]);
        assert_eq!(support.usable_aeads(), vec![15, 17]);
        assert!(!support.keep_alive);
        let odd =
            parse_support_response(&support_answer(&[(15, 16), (99, 32)], &[0])).expect("valid");
        assert!(odd.usable_aeads().is_empty());
    }

    #[test]
    fn malformed_support_answers_are_errors() {
        assert_eq!(
            parse_support_response(&[Record::Error(1), Record::EndOfMessage])
                .expect_err("an error")
                .server_error_code(),
            Some(1)
        );
        assert!(matches!(
            parse_support_response(&support_answer(&[(15, 32)], &[0])[1..]),
            Err(BackendError::MissingList { .. })
        ));
        let mut twice = support_answer(&[(15, 32)], &[0]);
        twice.insert(0, twice[0].clone());
        assert!(matches!(
            parse_support_response(&twice),
            Err(BackendError::BadList { .. })
        ));
        let odd = vec![
            Record::Unknown {
                critical: true,
                record_type: 10,
                body: vec![0, 15, 0],
            },
            Record::EndOfMessage,
        ];
        assert!(matches!(
            parse_support_response(&odd),
            Err(BackendError::PoolRecord(_))
        ));
        let unknown = vec![
            Record::Unknown {
                critical: true,
                record_type: 4000,
                body: vec![],
            },
            Record::EndOfMessage,
        ];
        assert!(parse_support_response(&unknown).is_err());
    }

    fn fixed_answer(aead: u16, port: Option<u16>) -> Vec<Record> {
        let mut r = vec![
            Record::NextProtocol(vec![0]),
            Record::AeadAlgorithm(vec![aead]),
            Record::NewCookie(vec![1; 100]),
            Record::NewCookie(vec![2; 100]),
        ];
        if let Some(p) = port {
            r.push(Record::Port(p));
        }
        r.push(keep_alive_record());
        r.push(Record::EndOfMessage);
        r
    }

    #[test]
    fn fixed_key_answers_give_cookies_port_and_keep_alive() {
        let answer = parse_fixed_key_response(&fixed_answer(15, Some(1234)), 15).expect("valid");
        assert_eq!(answer.session.cookies.len(), 2);
        assert_eq!(answer.session.ntp_port, Some(1234));
        assert_eq!(answer.session.ntp_server, None);
        assert!(answer.keep_alive);
    }

    #[test]
    fn wrong_fixed_key_answers_are_errors() {
        assert!(matches!(
            parse_fixed_key_response(&fixed_answer(17, None), 15),
            Err(BackendError::Response(ResponseError::UnexpectedAead(_)))
        ));
        assert_eq!(
            parse_fixed_key_response(&fixed_answer(15, Some(0)), 15),
            Err(BackendError::ZeroPort)
        );
        let refused = [Record::Error(error_code::BAD_REQUEST), Record::EndOfMessage];
        assert_eq!(
            parse_fixed_key_response(&refused, 15)
                .expect_err("an error")
                .server_error_code(),
            Some(error_code::BAD_REQUEST)
        );
        let no_cookies: Vec<Record> = fixed_answer(15, None)
            .into_iter()
            .filter(|r| r.record_type() != record_type::NEW_COOKIE)
            .collect();
        assert!(parse_fixed_key_response(&no_cookies, 15).is_err());
        for n in 0..40 {
            let _ = parse_fixed_key_bytes(&vec![0x80; n], 15);
            let _ = parse_support_bytes(&vec![0x80; n]);
        }
    }
}
