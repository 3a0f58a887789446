//! Sans-IO NTS-KE client: builds the request and checks the server's response
//! (RFC 8915 section 4).
//!
//! Limits on what a server may hand us, after the bugs other clients shipped:
//! - a cookie must be 1 to [`MAX_COOKIE_LEN`] bytes, else the whole response is refused
//!   (ntpd-rs 1.5.0 fixed a DoS through zero-size and huge cookies);
//! - at most [`MAX_COOKIES`] cookies are kept, extra ones are dropped and counted, not an
//!   error (NTPsec 1.2.5 fixed overflowing its cookie storage);
//! - unknown non-critical records are ignored (NTPsec rejected them before 1.2.5);
//! - unknown critical records, Error records and any Warning (none are defined, and
//!   unknown warnings are errors, section 4.1.4) fail the exchange.

use std::fmt;

use crate::aead;
use crate::key_export::{ExportError, KeyExporter, SessionKeys, export_session_keys};
use crate::message::{MessageError, MessageLimits, decode_message};
use crate::ntp_server_name::{ServerNameError, validate_ntp_server_name};
use crate::record::{
    NEXT_PROTOCOL_NTPV4, Record, RecordError, encode_records, peer_record_type, record_type,
};

/// Largest cookie accepted. Real cookies are 64-104 bytes (chrony, ntpd-rs, NTPsec).
pub const MAX_COOKIE_LEN: usize = 1024;
/// Cookies kept from one response (RFC 8915 section 4.1.6: servers SHOULD send 8).
pub const MAX_COOKIES: usize = 8;

/// Our default AEAD preference: the mandatory AES-SIV-CMAC-256 first, then
/// AES-SIV-CMAC-512, then AES-128-GCM-SIV.
pub const DEFAULT_AEAD_PREFERENCE: [u16; 3] = [
    aead::AES_SIV_CMAC_256,
    aead::AES_SIV_CMAC_512,
    aead::AES_128_GCM_SIV,
];

/// Why a response cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseError {
    /// The bytes are not one valid message.
    Message(MessageError),
    /// The server sent an Error record with this code.
    ServerError(u16),
    /// The server sent a Warning record (no warning codes are defined, so all are errors).
    Warning(u16),
    /// A critical record of a type we do not know.
    UnrecognizedCriticalRecord {
        /// Its type.
        record_type: u16,
    },
    /// Not exactly one Next Protocol record.
    NextProtocolCount(usize),
    /// The server supports none of our protocols (empty Next Protocol record).
    NoCommonProtocol,
    /// The server picked protocols we did not offer, or more than one.
    UnexpectedProtocol(Vec<u16>),
    /// Not exactly one AEAD record.
    AeadAlgorithmCount(usize),
    /// The server supports none of our AEADs (empty AEAD record).
    NoCommonAead,
    /// The server picked an AEAD we did not offer, or more than one.
    UnexpectedAead(Vec<u16>),
    /// No New Cookie record.
    NoCookies,
    /// A cookie of this length (0 or over [`MAX_COOKIE_LEN`]).
    BadCookieLength(usize),
    /// A Server or Port record more than once.
    DuplicateRecord {
        /// Its type.
        record_type: u16,
    },
    /// The Server Negotiation record is not a valid address or name.
    BadNtpServer(ServerNameError),
    /// Key export failed.
    KeyExport(ExportError),
}

impl fmt::Display for ResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Message(e) => write!(f, "{e}"),
            Self::ServerError(c) => write!(f, "server sent Error record, code {c}"),
            Self::Warning(c) => write!(f, "server sent Warning record, code {c}"),
            Self::UnrecognizedCriticalRecord { record_type } => {
                write!(f, "unrecognized critical record type {record_type}")
            }
            Self::NextProtocolCount(n) => write!(f, "{n} Next Protocol records, expected 1"),
            Self::NoCommonProtocol => f.write_str("server supports none of our protocols"),
            Self::UnexpectedProtocol(p) => write!(f, "server chose protocols {p:?}"),
            Self::AeadAlgorithmCount(n) => write!(f, "{n} AEAD records, expected 1"),
            Self::NoCommonAead => f.write_str("server supports none of our AEAD algorithms"),
            Self::UnexpectedAead(a) => write!(f, "server chose AEAD {a:?}"),
            Self::NoCookies => f.write_str("no cookies in the response"),
            Self::BadCookieLength(n) => {
                write!(f, "cookie of {n} bytes (allowed 1..={MAX_COOKIE_LEN})")
            }
            Self::DuplicateRecord { record_type } => {
                write!(f, "duplicate record type {record_type}")
            }
            Self::BadNtpServer(e) => write!(f, "{e}"),
            Self::KeyExport(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ResponseError {}

/// What a valid response negotiated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NegotiatedSession {
    /// The AEAD the server chose.
    pub aead_id: u16,
    /// Cookies, at most [`MAX_COOKIES`], in the order received.
    pub cookies: Vec<Vec<u8>>,
    /// Cookies beyond [`MAX_COOKIES`] that were dropped.
    pub cookies_dropped: usize,
    /// The NTPv4 server from the Server Negotiation record, if any.
    pub ntp_server: Option<String>,
    /// The NTPv4 port from the Port Negotiation record, if any.
    pub ntp_port: Option<u16>,
}

/// Builds a request offering NTPv4 and `aead_preference` (most preferred first).
///
/// When AES-128-GCM-SIV (30) comes before AES-SIV-CMAC-256 (15), the only case where a
/// server would choose it, the request also carries chrony's compliant-128gcm record
/// (type 1024, not critical, empty): we export AEAD 30 keys with the RFC 8915 context,
/// and chrony 4.6.1 and later, and `authtime serve`, choose 30 only from clients that
/// say so. With the default preference the request has no such record, so servers that
/// refuse unknown records are not put to the test.
///
/// Fails only if the list is empty or too long for one record.
pub fn build_request(aead_preference: &[u16]) -> Result<Vec<u8>, RecordError> {
    if aead_preference.is_empty() {
        return Err(RecordError::MalformedBody {
            record_type: record_type::AEAD_ALGORITHM,
        });
    }
    let mut records = vec![
        Record::NextProtocol(vec![NEXT_PROTOCOL_NTPV4]),
        Record::AeadAlgorithm(aead_preference.to_vec()),
    ];
    let position = |id| aead_preference.iter().position(|a| *a == id);
    if let Some(gcm) = position(aead::AES_128_GCM_SIV)
        && position(aead::AES_SIV_CMAC_256).is_none_or(|siv| gcm < siv)
    {
        records.push(Record::Unknown {
            critical: false,
            record_type: peer_record_type::CHRONY_COMPLIANT_128GCM_EXPORT,
            body: Vec::new(),
        });
    }
    records.push(Record::EndOfMessage);
    encode_records(&records)
}

/// Checks a complete response held in `bytes` against the AEADs we `offered`.
pub fn parse_response(bytes: &[u8], offered: &[u16]) -> Result<NegotiatedSession, ResponseError> {
    let records = decode_message(bytes, MessageLimits::RESPONSE).map_err(ResponseError::Message)?;
    parse_response_records(&records, offered)
}

/// Checks the records of a response against the AEADs we `offered`.
pub fn parse_response_records(
    records: &[Record],
    offered: &[u16],
) -> Result<NegotiatedSession, ResponseError> {
    // Error and Warning first: the server told us why, that is the most useful report.
    for record in records {
        match record {
            Record::Error(code) => return Err(ResponseError::ServerError(*code)),
            Record::Warning(code) => return Err(ResponseError::Warning(*code)),
            Record::Unknown {
                critical: true,
                record_type,
                ..
            } => {
                return Err(ResponseError::UnrecognizedCriticalRecord {
                    record_type: *record_type,
                });
            }
            _ => {}
        }
    }
    let mut protocols = Vec::new();
    let mut aeads = Vec::new();
    let mut cookies = Vec::new();
    let mut cookies_dropped = 0;
    let mut ntp_server = None;
    let mut ntp_port = None;
    for record in records {
        match record {
            Record::NextProtocol(p) => protocols.push(p),
            Record::AeadAlgorithm(a) => aeads.push(a),
            Record::NewCookie(c) => {
                if c.is_empty() || c.len() > MAX_COOKIE_LEN {
                    return Err(ResponseError::BadCookieLength(c.len()));
                }
                if cookies.len() < MAX_COOKIES {
                    cookies.push(c.clone());
                } else {
                    cookies_dropped += 1;
                }
            }
            Record::Server(name) => {
                if ntp_server.is_some() {
                    return Err(ResponseError::DuplicateRecord {
                        record_type: record_type::SERVER,
                    });
                }
                validate_ntp_server_name(name).map_err(ResponseError::BadNtpServer)?;
                ntp_server = Some(name.clone());
            }
            Record::Port(port) => {
                if ntp_port.is_some() {
                    return Err(ResponseError::DuplicateRecord {
                        record_type: record_type::PORT,
                    });
                }
                ntp_port = Some(*port);
            }
            _ => {}
        }
    }
    let [protocols] = protocols[..] else {
        return Err(ResponseError::NextProtocolCount(protocols.len()));
    };
    match protocols[..] {
        [] => return Err(ResponseError::NoCommonProtocol),
        [NEXT_PROTOCOL_NTPV4] => {}
        _ => return Err(ResponseError::UnexpectedProtocol(protocols.clone())),
    }
    let [aead_list] = aeads[..] else {
        return Err(ResponseError::AeadAlgorithmCount(aeads.len()));
    };
    let aead_id = match aead_list[..] {
        [] => return Err(ResponseError::NoCommonAead),
        [id] if offered.contains(&id) && aead::key_len(id).is_some() => id,
        _ => return Err(ResponseError::UnexpectedAead(aead_list.clone())),
    };
    if cookies.is_empty() {
        return Err(ResponseError::NoCookies);
    }
    Ok(NegotiatedSession {
        aead_id,
        cookies,
        cookies_dropped,
        ntp_server,
        ntp_port,
    })
}

/// Exports C2S and S2C for the negotiated AEAD.
pub fn derive_keys(
    exporter: &dyn KeyExporter,
    session: &NegotiatedSession,
) -> Result<SessionKeys, ResponseError> {
    let len = aead::key_len(session.aead_id)
        .ok_or_else(|| ResponseError::UnexpectedAead(vec![session.aead_id]))?;
    export_session_keys(exporter, session.aead_id, len).map_err(ResponseError::KeyExport)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Vec<Record> {
        let mut r = vec![
            Record::NextProtocol(vec![0]),
            Record::AeadAlgorithm(vec![15]),
        ];
        r.extend((0..8).map(|i| Record::NewCookie(vec![i; 100])));
        r.push(Record::EndOfMessage);
        r
    }

    fn parse(records: &[Record]) -> Result<NegotiatedSession, ResponseError> {
        parse_response(
            &encode_records(records).expect("encodable"),
            &DEFAULT_AEAD_PREFERENCE,
        )
    }

    #[test]
    fn request_layout() {
        assert_eq!(
            build_request(&[15, 30]).expect("valid"),
            vec![
                0x80, 1, 0, 2, 0, 0, 0x80, 4, 0, 4, 0, 15, 0, 30, 0x80, 0, 0, 0
            ]
        );
        assert!(build_request(&[]).is_err());
        // AEAD 30 first: chrony's compliant-128gcm record, as chrony 4.6.1 sends it.
        assert_eq!(
            build_request(&[30, 15]).expect("valid"),
            vec![
                0x80, 1, 0, 2, 0, 0, 0x80, 4, 0, 4, 0, 30, 0, 15, 4, 0, 0, 0, 0x80, 0, 0, 0
            ]
        );
    }

    #[test]
    fn good_response_is_accepted() {
        let mut r = good();
        r.insert(2, Record::Server("ntp.example.org".into()));
        r.insert(3, Record::Port(11123));
        r.insert(
            4,
            Record::Unknown {
                critical: false,
                record_type: 1024,
                body: vec![],
            },
        );
        let s = parse(&r).expect("valid");
        assert_eq!(s.aead_id, 15);
        assert_eq!(s.cookies.len(), 8);
        assert_eq!(s.cookies[7], vec![7; 100]);
        assert_eq!(s.ntp_server.as_deref(), Some("ntp.example.org"));
        assert_eq!(s.ntp_port, Some(11123));
    }

    #[test]
    fn error_warning_and_unknown_critical_fail() {
        let mut r = good();
        r.insert(0, Record::Error(2));
        assert_eq!(parse(&r), Err(ResponseError::ServerError(2)));
        assert_eq!(
            parse(&[Record::Error(1), Record::EndOfMessage]),
            Err(ResponseError::ServerError(1))
        );
        let mut r = good();
        r.insert(1, Record::Warning(5));
        assert_eq!(parse(&r), Err(ResponseError::Warning(5)));
        let mut r = good();
        r.insert(
            1,
            Record::Unknown {
                critical: true,
                record_type: 0x4444,
                body: vec![],
            },
        );
        assert_eq!(
            parse(&r),
            Err(ResponseError::UnrecognizedCriticalRecord {
                record_type: 0x4444
            })
        );
    }

    #[test]
    fn too_many_cookies_are_dropped_not_fatal() {
        let mut r = good();
        r.insert(2, Record::NewCookie(vec![9; 50]));
        r.insert(2, Record::NewCookie(vec![9; 50]));
        let s = parse(&r).expect("valid");
        assert_eq!(s.cookies.len(), MAX_COOKIES);
        assert_eq!(s.cookies_dropped, 2);
    }

    #[test]
    fn empty_or_huge_cookies_fail() {
        let mut r = good();
        r[2] = Record::NewCookie(vec![]);
        assert_eq!(parse(&r), Err(ResponseError::BadCookieLength(0)));
        r[2] = Record::NewCookie(vec![0; MAX_COOKIE_LEN + 1]);
        assert_eq!(
            parse(&r),
            Err(ResponseError::BadCookieLength(MAX_COOKIE_LEN + 1))
        );
        r[2] = Record::NewCookie(vec![0; MAX_COOKIE_LEN]);
        assert!(parse(&r).is_ok());
    }

    #[test]
    fn negotiation_faults_fail() {
        let with = |i: usize, rec: Record| {
            let mut r = good();
            r[i] = rec;
            parse(&r)
        };
        assert_eq!(
            with(0, Record::NextProtocol(vec![])),
            Err(ResponseError::NoCommonProtocol)
        );
        assert_eq!(
            with(0, Record::NextProtocol(vec![1])),
            Err(ResponseError::UnexpectedProtocol(vec![1]))
        );
        assert_eq!(
            with(0, Record::NextProtocol(vec![0, 0])),
            Err(ResponseError::UnexpectedProtocol(vec![0, 0]))
        );
        assert_eq!(
            with(1, Record::AeadAlgorithm(vec![])),
            Err(ResponseError::NoCommonAead)
        );
        assert_eq!(
            with(1, Record::AeadAlgorithm(vec![16])),
            Err(ResponseError::UnexpectedAead(vec![16]))
        );
        assert_eq!(
            with(1, Record::AeadAlgorithm(vec![15, 17])),
            Err(ResponseError::UnexpectedAead(vec![15, 17]))
        );
        assert_eq!(
            with(1, Record::Port(5)),
            Err(ResponseError::AeadAlgorithmCount(0))
        );
        assert_eq!(
            parse(&[
                Record::NextProtocol(vec![0]),
                Record::AeadAlgorithm(vec![15]),
                Record::EndOfMessage
            ]),
            Err(ResponseError::NoCookies)
        );
        let mut r = good();
        r.insert(0, Record::NextProtocol(vec![0]));
        assert_eq!(parse(&r), Err(ResponseError::NextProtocolCount(2)));
        let mut r = good();
        r.insert(2, Record::Server("[::1]".into()));
        assert_eq!(
            parse(&r),
            Err(ResponseError::BadNtpServer(ServerNameError::BracketsOrZone))
        );
        let mut r = good();
        r.insert(2, Record::Port(1));
        r.insert(2, Record::Port(2));
        assert_eq!(
            parse(&r),
            Err(ResponseError::DuplicateRecord { record_type: 7 })
        );
    }

    #[test]
    fn truncated_response_fails() {
        let bytes = encode_records(&good()).expect("encodable");
        assert_eq!(
            parse_response(&bytes[..bytes.len() - 1], &[15]),
            Err(ResponseError::Message(MessageError::MissingEndOfMessage))
        );
    }
}
