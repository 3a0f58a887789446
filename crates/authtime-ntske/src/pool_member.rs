//! The NTS pool member side (draft-ietf-ntp-nts-keyexchange-pool-00, as ntpd-rs 1.9
//! serves it): sans-IO reading of the requests a key-exchange load balancer (KELB) sends.
//!
//! A server is a pool member only when it has Authentication tokens ([`PoolTokens`] not
//! empty). A request is a pool request when it carries exactly one Authentication record
//! (14) whose token matches one of them and at least one of the pool queries: Supported
//! Algorithm List (10), Supported Next Protocol List (9) or Fixed Key Request (12).
//! Anything else goes through the ordinary RFC 8915 path unchanged, so without the
//! opt-in, or with a missing or wrong token, the critical pool records get Unrecognized
//! Critical Record as before, and a token in a plain key exchange is ignored.
//!
//! A pool request is one of two kinds, as in ntpd-rs's `Request::parse`:
//! - a support query: 9 and/or 10 with nothing of a key exchange (no Next Protocol, AEAD
//!   or Fixed Key record);
//! - a fixed key request: 12 with exactly one Next Protocol (NTPv4) and exactly one AEAD
//!   the server supports, the keys of exactly that AEAD's key length. The server makes
//!   cookies for those keys instead of exporting keys from the TLS session.
//!
//! Every other shape is Bad Request. NTP Server Deny (13) is for a KELB and is ignored.
//!
//! Tokens are secrets: they are compared in constant time for a given length, zeroized
//! when replaced, and never shown by `Debug`, errors or metrics.

use std::fmt;
use std::sync::{Arc, RwLock};

use zeroize::Zeroizing;

use crate::aead;
use crate::pool_record::{PoolRecord, PoolRecordError, pool_type};
use crate::record::{NEXT_PROTOCOL_NTPV4, Record};

/// Requests served on one kept-alive connection at most (the first one included).
pub const MAX_REQUESTS_PER_CONNECTION: usize = 1000;

pub use crate::pool_token::PoolToken;

/// The tokens in force, shared between the server core and whoever reloads them.
/// Cheap to clone; every clone sees [`PoolTokens::replace`].
#[derive(Clone, Default)]
pub struct PoolTokens {
    inner: Arc<RwLock<Arc<Vec<PoolToken>>>>,
}

impl fmt::Debug for PoolTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PoolTokens(<{} tokens>)", self.current().len())
    }
}

impl PoolTokens {
    /// A token set holding `tokens`.
    pub fn new(tokens: Vec<PoolToken>) -> Self {
        let set = Self::default();
        set.replace(tokens);
        set
    }

    /// Puts `tokens` in force (an empty list ends pool membership).
    pub fn replace(&self, tokens: Vec<PoolToken>) {
        let tokens = Arc::new(tokens);
        match self.inner.write() {
            Ok(mut guard) => *guard = tokens,
            Err(poisoned) => *poisoned.into_inner() = tokens,
        }
    }

    fn current(&self) -> Arc<Vec<PoolToken>> {
        match self.inner.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// True when no token is configured: the server is not a pool member.
    pub fn is_empty(&self) -> bool {
        self.current().is_empty()
    }

    /// Whether `candidate` is one of the tokens. Every token is compared, so the time
    /// does not tell which one matched.
    pub fn accepts(&self, candidate: &[u8]) -> bool {
        self.current()
            .iter()
            .fold(false, |found, t| t.matches(candidate) | found)
    }
}

/// What a pool request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolRequestKind {
    /// Supported Algorithm List and/or Supported Next Protocol List.
    Support,
    /// Fixed Key Request.
    FixedKey,
}

impl PoolRequestKind {
    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Support => "support",
            Self::FixedKey => "fixed_key",
        }
    }
}

/// How a request with pool queries ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolOutcome {
    /// Answered.
    Ok,
    /// Authenticated but malformed: Bad Request (or Unrecognized Critical Record for a
    /// non-pool critical record in it).
    BadRequest,
    /// No valid token: answered as an ordinary request (Error 0 for the critical records).
    NotAuthorized,
    /// The cookie issuer failed: Internal Server Error.
    InternalError,
}

impl PoolOutcome {
    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::BadRequest => "bad_request",
            Self::NotAuthorized => "not_authorized",
            Self::InternalError => "internal_error",
        }
    }
}

/// Why an authenticated pool request is Bad Request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolRequestError {
    /// A pool record's body does not fit its type.
    Malformed(PoolRecordError),
    /// A record that may appear once appeared again.
    Duplicate {
        /// Its type.
        record_type: u16,
    },
    /// A support query together with a Fixed Key, Next Protocol or AEAD record.
    SupportMixedWithKeyExchange,
    /// A Fixed Key Request without a Next Protocol or AEAD record.
    Missing {
        /// The missing record's type.
        record_type: u16,
    },
    /// A Fixed Key Request whose Next Protocol record does not hold exactly one id.
    ProtocolCount(usize),
    /// A Fixed Key Request whose AEAD record does not hold exactly one id.
    AeadCount(usize),
    /// A Fixed Key Request for a protocol other than NTPv4.
    UnsupportedProtocol(u16),
    /// A Fixed Key Request for an AEAD the server does not support.
    UnsupportedAead(u16),
    /// Fixed keys not of the AEAD's key length.
    KeyLength {
        /// The AEAD.
        aead_id: u16,
        /// Its key length.
        expected: usize,
        /// The length sent.
        got: usize,
    },
    /// An ordinary key exchange on a connection kept alive for pool requests.
    KeyExchangeOnKeptAliveConnection,
}

impl fmt::Display for PoolRequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed(e) => write!(f, "{e}"),
            Self::Duplicate { record_type } => write!(f, "duplicate pool record {record_type}"),
            Self::SupportMixedWithKeyExchange => {
                f.write_str("support query mixed with key exchange records")
            }
            Self::Missing { record_type } => {
                write!(f, "fixed key request without record {record_type}")
            }
            Self::ProtocolCount(n) => write!(f, "fixed key request with {n} protocols"),
            Self::AeadCount(n) => write!(f, "fixed key request with {n} AEADs"),
            Self::UnsupportedProtocol(p) => write!(f, "fixed key request for protocol {p}"),
            Self::UnsupportedAead(id) => write!(f, "fixed key request for AEAD {id}"),
            Self::KeyLength {
                aead_id,
                expected,
                got,
            } => write!(
                f,
                "fixed keys of {got} bytes for AEAD {aead_id}, which takes {expected}"
            ),
            Self::KeyExchangeOnKeptAliveConnection => {
                f.write_str("key exchange on a connection kept alive for pool requests")
            }
        }
    }
}

impl std::error::Error for PoolRequestError {}

/// A parsed, authenticated pool request.
pub(crate) enum PoolRequest {
    /// Support query.
    Support {
        protocols: bool,
        algorithms: bool,
        keep_alive: bool,
    },
    /// Fixed Key Request, checked against the server's AEADs.
    FixedKey {
        aead_id: u16,
        c2s: Zeroizing<Vec<u8>>,
        s2c: Zeroizing<Vec<u8>>,
        keep_alive: bool,
    },
}

impl PoolRequest {
    pub(crate) fn kind(&self) -> PoolRequestKind {
        match self {
            Self::Support { .. } => PoolRequestKind::Support,
            Self::FixedKey { .. } => PoolRequestKind::FixedKey,
        }
    }
}

/// The pool query a request carries, by its record types (the critical bit and the
/// body are not looked at): `None` for a request without any.
pub(crate) fn pool_query_kind(records: &[Record]) -> Option<PoolRequestKind> {
    let mut kind = None;
    for record in records {
        let Record::Unknown { record_type, .. } = record else {
            continue;
        };
        match *record_type & 0x7fff {
            pool_type::FIXED_KEY_REQUEST => return Some(PoolRequestKind::FixedKey),
            pool_type::SUPPORTED_ALGORITHM_LIST | pool_type::SUPPORTED_NEXT_PROTOCOL_LIST => {
                kind = Some(PoolRequestKind::Support);
            }
            _ => {}
        }
    }
    kind
}

/// True when `records` hold exactly one Authentication record and its token is one of
/// `tokens`. A request with two tokens is not authenticated.
pub(crate) fn is_authenticated(records: &[Record], tokens: &PoolTokens) -> bool {
    let mut auth = records.iter().filter(|r| {
        matches!(r, Record::Unknown { record_type, .. }
            if *record_type & 0x7fff == pool_type::AUTHENTICATION)
    });
    let (Some(only), None) = (auth.next(), auth.next()) else {
        return false;
    };
    match PoolRecord::from_record(only) {
        Some(Ok(PoolRecord::Authentication(ref token))) => tokens.accepts(token.as_bytes()),
        _ => false,
    }
}

/// The C2S and S2C keys of a Fixed Key Request.
type FixedKeys = (Zeroizing<Vec<u8>>, Zeroizing<Vec<u8>>);

/// What a pool request's records are read into before the shape is checked.
#[derive(Default)]
struct Seen {
    protocols: Option<Vec<u16>>,
    aeads: Option<Vec<u16>>,
    fixed_key: Option<FixedKeys>,
    wants_protocols: bool,
    wants_algorithms: bool,
    keep_alive: bool,
}

/// A fault of an authenticated pool request, before the reaction is chosen.
pub(crate) enum PoolParseError {
    /// Bad Request for a pool reason.
    Pool(PoolRequestError),
    /// A critical record of a type we do not know: Unrecognized Critical Record.
    UnknownCritical(u16),
    /// Error, Warning or New Cookie from the client: Bad Request.
    ServerRecord(u16),
}

fn duplicate(record_type: u16) -> PoolParseError {
    PoolParseError::Pool(PoolRequestError::Duplicate { record_type })
}

/// Reads an authenticated request that carries pool queries (ntpd-rs 1.9's rules), and
/// checks a Fixed Key Request against `supported` AEADs.
pub(crate) fn parse_pool_request(
    records: &[Record],
    supported: &[u16],
) -> Result<PoolRequest, PoolParseError> {
    // As on the ordinary path, an unknown critical record wins over other complaints.
    if let Some(t) = records.iter().find_map(|r| match r {
        Record::Unknown {
            critical: true,
            record_type,
            ..
        } if !crate::pool_record::is_pool_type(*record_type) => Some(*record_type & 0x7fff),
        _ => None,
    }) {
        return Err(PoolParseError::UnknownCritical(t));
    }
    let mut seen = Seen::default();
    for record in records {
        match record {
            Record::NextProtocol(p) => {
                if seen.protocols.replace(p.clone()).is_some() {
                    return Err(duplicate(record.record_type()));
                }
            }
            Record::AeadAlgorithm(a) => {
                if seen.aeads.replace(a.clone()).is_some() {
                    return Err(duplicate(record.record_type()));
                }
            }
            Record::Error(_) | Record::Warning(_) | Record::NewCookie(_) => {
                return Err(PoolParseError::ServerRecord(record.record_type()));
            }
            Record::Unknown { .. } => read_pool_record(record, &mut seen)?,
            // Server and Port are ignored as on the ordinary path; so is chrony's record.
            Record::Server(_) | Record::Port(_) | Record::EndOfMessage => {}
        }
    }
    shape(seen, supported).map_err(PoolParseError::Pool)
}

fn read_pool_record(record: &Record, seen: &mut Seen) -> Result<(), PoolParseError> {
    let Some(parsed) = PoolRecord::from_record(record) else {
        // Not a pool type, not critical (checked above): ignored.
        return Ok(());
    };
    let t = record.record_type();
    match parsed {
        Ok(PoolRecord::SupportedNextProtocols(_)) => {
            if std::mem::replace(&mut seen.wants_protocols, true) {
                return Err(duplicate(t));
            }
        }
        Ok(PoolRecord::SupportedAlgorithms(_)) => {
            if std::mem::replace(&mut seen.wants_algorithms, true) {
                return Err(duplicate(t));
            }
        }
        Ok(PoolRecord::FixedKey { ref c2s, ref s2c }) => {
            let keys = (Zeroizing::new(c2s.clone()), Zeroizing::new(s2c.clone()));
            if seen.fixed_key.replace(keys).is_some() {
                return Err(duplicate(t));
            }
        }
        Ok(PoolRecord::KeepAlive) => seen.keep_alive = true,
        // The token was checked already; denied servers are a load balancer's business.
        Ok(PoolRecord::Authentication(_) | PoolRecord::NtpServerDeny(_)) => {}
        // A malformed deny is ignored like any deny; other pool records must be sound.
        Err(_) if t == pool_type::NTP_SERVER_DENY => {}
        Err(e) => return Err(PoolParseError::Pool(PoolRequestError::Malformed(e))),
    }
    Ok(())
}

fn shape(seen: Seen, supported: &[u16]) -> Result<PoolRequest, PoolRequestError> {
    if seen.wants_protocols || seen.wants_algorithms {
        if seen.fixed_key.is_some() || seen.protocols.is_some() || seen.aeads.is_some() {
            return Err(PoolRequestError::SupportMixedWithKeyExchange);
        }
        return Ok(PoolRequest::Support {
            protocols: seen.wants_protocols,
            algorithms: seen.wants_algorithms,
            keep_alive: seen.keep_alive,
        });
    }
    let Some((c2s, s2c)) = seen.fixed_key else {
        // Only reached for a request whose pool query was not a pool record after all.
        return Err(PoolRequestError::Missing {
            record_type: pool_type::FIXED_KEY_REQUEST,
        });
    };
    let protocols = seen.protocols.ok_or(PoolRequestError::Missing {
        record_type: crate::record::record_type::NEXT_PROTOCOL,
    })?;
    let aeads = seen.aeads.ok_or(PoolRequestError::Missing {
        record_type: crate::record::record_type::AEAD_ALGORITHM,
    })?;
    let [protocol] = protocols[..] else {
        return Err(PoolRequestError::ProtocolCount(protocols.len()));
    };
    let [aead_id] = aeads[..] else {
        return Err(PoolRequestError::AeadCount(aeads.len()));
    };
    if protocol != NEXT_PROTOCOL_NTPV4 {
        return Err(PoolRequestError::UnsupportedProtocol(protocol));
    }
    let key_len = supported
        .contains(&aead_id)
        .then(|| aead::key_len(aead_id))
        .flatten()
        .ok_or(PoolRequestError::UnsupportedAead(aead_id))?;
    if c2s.len() != key_len || s2c.len() != key_len {
        return Err(PoolRequestError::KeyLength {
            aead_id,
            expected: key_len,
            got: c2s.len(),
        });
    }
    Ok(PoolRequest::FixedKey {
        aead_id,
        c2s,
        s2c,
        keep_alive: seen.keep_alive,
    })
}

/// Overwrites the bodies of the pool records in `records` (tokens, fixed keys) with
/// zeros, once the request was answered.
pub fn zeroize_pool_records(records: &mut [Record]) {
    use zeroize::Zeroize as _;
    for record in records {
        if let Record::Unknown {
            record_type, body, ..
        } = record
            && crate::pool_record::is_pool_type(*record_type)
        {
            body.zeroize();
        }
    }
}

/// The records answering a support query (before any Keep Alive and End of Message):
/// the server's AEADs with their key lengths, then NTPv4, as asked.
pub(crate) fn support_records(supported: &[u16], algorithms: bool, protocols: bool) -> Vec<Record> {
    let mut out = Vec::with_capacity(2);
    if algorithms {
        let list = supported
            .iter()
            .filter_map(|id| {
                let key_len = u16::try_from(aead::key_len(*id)?).ok()?;
                Some(crate::pool_record::AlgorithmDescription {
                    aead_id: *id,
                    key_len,
                })
            })
            .collect();
        out.push(PoolRecord::SupportedAlgorithms(list).to_record());
    }
    if protocols {
        out.push(PoolRecord::SupportedNextProtocols(vec![NEXT_PROTOCOL_NTPV4]).to_record());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole_and_hide_in_debug() {
        let tokens = PoolTokens::new(vec![
            PoolToken::new("alpha-secret").expect("non-empty"),
            PoolToken::new("beta").expect("non-empty"),
        ]);
        assert!(tokens.accepts(b"alpha-secret"));
        assert!(tokens.accepts(b"beta"));
        assert!(!tokens.accepts(b"alpha-secreT"));
        assert!(!tokens.accepts(b"alpha"));
        assert!(!tokens.accepts(b""));
        assert!(PoolToken::new("").is_err());
        let shown = format!("{tokens:?} {:?}", PoolToken::new("beta").expect("t"));
        assert!(
            !shown.contains("alpha") && !shown.contains("beta"),
            "{shown}"
        );
    }

    #[test]
    fn pool_record_bodies_are_zeroized_and_others_kept() {
        let mut records = vec![
            PoolRecord::Authentication("tok".into()).to_record(),
            Record::NextProtocol(vec![0]),
            Record::Unknown {
                critical: false,
                record_type: 1024,
                body: vec![7],
            },
        ];
        zeroize_pool_records(&mut records);
        assert!(matches!(&records[0], Record::Unknown { body, .. } if body.is_empty()));
        assert_eq!(records[1], Record::NextProtocol(vec![0]));
        assert!(matches!(&records[2], Record::Unknown { body, .. } if body == &[7]));
    }

    #[test]
    fn replace_is_seen_by_every_clone() {
        let tokens = PoolTokens::default();
        assert!(tokens.is_empty());
        let clone = tokens.clone();
        tokens.replace(vec![PoolToken::new("x").expect("t")]);
        assert!(clone.accepts(b"x"));
        clone.replace(Vec::new());
        assert!(tokens.is_empty());
    }
}

#[cfg(test)]
#[path = "pool_member_tests.rs"]
mod member_tests;
