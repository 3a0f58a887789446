//! Sans-IO NTS-KE server: one request message in, one response message out
//! (RFC 8915 section 4).
//!
//! The core never touches a socket: the TLS driver hands it the request bytes (or the
//! records its [`MessageReader`](crate::message::MessageReader) collected) and a key
//! exporter, and writes the returned buffer in one flush. Cookies come from a
//! [`CookieIssuer`], so this crate does not depend on the cookie format or AEADs.

use std::fmt;
use std::sync::Arc;

use crate::aead;
use crate::key_export::{ExportError, KeyExporter, export_session_keys};
use crate::message::{MessageError, MessageLimits, decode_message};
use crate::ntp_server_name::{ServerNameError, validate_ntp_server_name};
use crate::pool_member::{
    PoolOutcome, PoolParseError, PoolRequest, PoolRequestError, PoolRequestKind, PoolTokens,
    is_authenticated, parse_pool_request, pool_query_kind, support_records,
};
use crate::pool_record::PoolRecord;
use crate::record::{
    NEXT_PROTOCOL_NTPV4, Record, encode_records, error_code, peer_record_type, record_type,
};

/// Cookies a server sends per response (RFC 8915 section 4.1.6: SHOULD be 8).
pub const DEFAULT_COOKIE_COUNT: usize = 8;
/// Upper bound on the configured cookie count, so a mistake cannot make responses huge.
pub const MAX_COOKIE_COUNT: usize = 16;

/// The cookie issuer failed; the client gets Internal Server Error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CookieIssueError(pub String);

impl fmt::Display for CookieIssueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cookie issue failed: {}", self.0)
    }
}

impl std::error::Error for CookieIssueError {}

/// Makes NTS cookies for a negotiated session (implemented by the NTS cookie code).
pub trait CookieIssuer: Send + Sync {
    /// Returns `count` cookies that carry `aead_id`, `c2s` and `s2c`.
    fn issue(
        &self,
        aead_id: u16,
        c2s: &[u8],
        s2c: &[u8],
        count: usize,
    ) -> Result<Vec<Vec<u8>>, CookieIssueError>;
}

/// What the server negotiates and advertises.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerCoreConfig {
    /// AEAD ids the server (its cookie issuer) supports. The client's order decides among
    /// them, except that 30 (AES-128-GCM-SIV) is passed over for a later common AEAD
    /// unless the client sent chrony's compliant-128gcm record (chrony exports AEAD 30
    /// keys with a non-compliant context otherwise; see `choose_aead`). Default: 15
    /// (AES-SIV-CMAC-256, mandatory) and 17 (AES-SIV-CMAC-512); `authtime serve` adds 30.
    pub aead_algorithms: Vec<u16>,
    /// Cookies per response (default 8).
    pub cookie_count: usize,
    /// NTPv4 server to announce (Server Negotiation record), `None` for the KE host.
    pub ntp_server: Option<String>,
    /// NTPv4 port to announce (Port Negotiation record), `None` for 123.
    pub ntp_port: Option<u16>,
}

impl Default for ServerCoreConfig {
    fn default() -> Self {
        Self {
            aead_algorithms: vec![aead::AES_SIV_CMAC_256, aead::AES_SIV_CMAC_512],
            cookie_count: DEFAULT_COOKIE_COUNT,
            ntp_server: None,
            ntp_port: None,
        }
    }
}

/// A server configuration that cannot work.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerConfigError {
    /// No AEAD algorithm configured.
    NoAeadAlgorithm,
    /// An AEAD id whose key length this crate does not know.
    UnknownAeadAlgorithm(u16),
    /// Cookie count outside 1..=16.
    CookieCount(usize),
    /// The NTP server name is not valid for the Server Negotiation record.
    NtpServer(ServerNameError),
}

impl fmt::Display for ServerConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAeadAlgorithm => f.write_str("no AEAD algorithm configured"),
            Self::UnknownAeadAlgorithm(id) => write!(f, "unknown AEAD algorithm id {id}"),
            Self::CookieCount(n) => {
                write!(f, "cookie count {n} outside 1..={MAX_COOKIE_COUNT}")
            }
            Self::NtpServer(e) => write!(f, "ntp server: {e}"),
        }
    }
}

impl std::error::Error for ServerConfigError {}

impl ServerCoreConfig {
    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), ServerConfigError> {
        if self.aead_algorithms.is_empty() {
            return Err(ServerConfigError::NoAeadAlgorithm);
        }
        if let Some(id) = self
            .aead_algorithms
            .iter()
            .find(|id| aead::key_len(**id).is_none())
        {
            return Err(ServerConfigError::UnknownAeadAlgorithm(*id));
        }
        if !(1..=MAX_COOKIE_COUNT).contains(&self.cookie_count) {
            return Err(ServerConfigError::CookieCount(self.cookie_count));
        }
        if let Some(name) = &self.ntp_server {
            validate_ntp_server_name(name).map_err(ServerConfigError::NtpServer)?;
        }
        Ok(())
    }
}

/// Why a request got an Error record; [`RequestError::error_code`] is the code sent.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// The bytes are not one valid message (bad record, too large, no End of Message,
    /// data after it). Bad Request.
    Message(MessageError),
    /// A critical record of a type we do not know. Unrecognized Critical Record.
    UnrecognizedCriticalRecord {
        /// Its type.
        record_type: u16,
    },
    /// No Next Protocol record, or more than one. Bad Request.
    NextProtocolCount(usize),
    /// A Next Protocol record without any protocol. Bad Request.
    EmptyNextProtocol,
    /// NTPv4 offered without exactly one AEAD record. Bad Request.
    AeadAlgorithmCount(usize),
    /// An AEAD record without any algorithm. Bad Request.
    EmptyAeadList,
    /// A record clients must not send (Error, Warning, New Cookie). Bad Request.
    ClientSentServerRecord {
        /// Its type.
        record_type: u16,
    },
    /// A Server or Port record more than once. Bad Request.
    DuplicateRecord {
        /// Its type.
        record_type: u16,
    },
    /// A record of another implementation that we act on, with a body it never has
    /// (chrony's compliant-128gcm record with a body). Bad Request.
    MalformedPeerRecord {
        /// Its type.
        record_type: u16,
    },
    /// The session timed out before a full request arrived (set by the driver). Bad Request.
    Timeout,
    /// Key export failed. Internal Server Error.
    KeyExport(ExportError),
    /// The cookie issuer failed or returned unusable cookies. Internal Server Error.
    Cookies(CookieIssueError),
    /// A key-exchange load balancer has no backend to send the client to. Internal
    /// Server Error.
    NoBackend,
    /// A key-exchange load balancer's backend failed after the client's keys were
    /// sent to it (the text says how). Internal Server Error.
    Backend(String),
    /// An authenticated pool request of a shape the pool draft does not allow, or a
    /// key exchange on a connection kept alive for pool requests. Bad Request.
    Pool(PoolRequestError),
}

impl RequestError {
    /// The Error record code this error is answered with (RFC 8915 section 4.1.3).
    pub fn error_code(&self) -> u16 {
        match self {
            Self::UnrecognizedCriticalRecord { .. } => error_code::UNRECOGNIZED_CRITICAL_RECORD,
            Self::KeyExport(_) | Self::Cookies(_) | Self::NoBackend | Self::Backend(_) => {
                error_code::INTERNAL_SERVER_ERROR
            }
            Self::Message(_)
            | Self::NextProtocolCount(_)
            | Self::EmptyNextProtocol
            | Self::AeadAlgorithmCount(_)
            | Self::EmptyAeadList
            | Self::ClientSentServerRecord { .. }
            | Self::DuplicateRecord { .. }
            | Self::MalformedPeerRecord { .. }
            | Self::Pool(_)
            | Self::Timeout => error_code::BAD_REQUEST,
        }
    }

    /// True when the server, not the client, is at fault.
    pub fn is_internal(&self) -> bool {
        self.error_code() == error_code::INTERNAL_SERVER_ERROR
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Message(e) => write!(f, "{e}"),
            Self::UnrecognizedCriticalRecord { record_type } => {
                write!(f, "unrecognized critical record type {record_type}")
            }
            Self::NextProtocolCount(n) => write!(f, "{n} Next Protocol records, expected 1"),
            Self::EmptyNextProtocol => f.write_str("empty Next Protocol record"),
            Self::AeadAlgorithmCount(n) => write!(f, "{n} AEAD records, expected 1"),
            Self::EmptyAeadList => f.write_str("empty AEAD algorithm list"),
            Self::ClientSentServerRecord { record_type } => {
                write!(f, "client sent server-only record type {record_type}")
            }
            Self::DuplicateRecord { record_type } => {
                write!(f, "duplicate record type {record_type}")
            }
            Self::MalformedPeerRecord { record_type } => {
                write!(f, "record type {record_type} with an unexpected body")
            }
            Self::Timeout => f.write_str("timed out waiting for the request"),
            Self::KeyExport(e) => write!(f, "{e}"),
            Self::Cookies(e) => write!(f, "{e}"),
            Self::NoBackend => f.write_str("no backend available"),
            Self::Backend(e) => write!(f, "backend: {e}"),
            Self::Pool(e) => write!(f, "pool request: {e}"),
        }
    }
}

impl std::error::Error for RequestError {}

/// What a successful exchange agreed on.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Negotiated {
    /// NTPv4 with an AEAD; cookies were sent.
    Ntpv4 {
        /// Chosen AEAD id.
        aead_id: u16,
        /// Cookies in the response.
        cookies: usize,
    },
    /// The client did not offer NTPv4: empty Next Protocol record (section 4.1.2).
    NoCommonProtocol,
    /// None of the client's AEADs is supported: empty AEAD record (section 4.1.5).
    NoCommonAead,
    /// A pool load balancer's support query was answered (no cookies).
    PoolSupport,
}

/// A request that carried pool queries (records 9, 10 or 12), for the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolExchange {
    /// Support query or Fixed Key Request.
    pub kind: PoolRequestKind,
    /// How it ended.
    pub outcome: PoolOutcome,
}

/// How the driver lets the core answer one request of a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RespondOptions {
    /// The connection may stay open: an authenticated pool request that asks for Keep
    /// Alive gets it. False for the last request a connection may carry.
    pub allow_keep_alive: bool,
    /// The connection was kept alive after a pool request: only pool requests are
    /// answered; an ordinary key exchange gets Bad Request.
    pub kept_alive: bool,
}

/// The response to send, in one buffer, and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerResponse {
    /// The whole response message, End of Message included.
    pub bytes: Vec<u8>,
    /// The negotiation result, or the error the response reports.
    pub result: Result<Negotiated, RequestError>,
    /// The response grants Keep Alive: the driver reads another request on the
    /// connection. Only ever true for an authenticated pool request.
    pub keep_alive: bool,
    /// Set when the request carried pool queries.
    pub pool: Option<PoolExchange>,
}

/// The sans-IO NTS-KE server.
#[derive(Clone)]
pub struct KeServerCore {
    config: ServerCoreConfig,
    issuer: Arc<dyn CookieIssuer>,
    pool_tokens: PoolTokens,
}

impl fmt::Debug for KeServerCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeServerCore")
            .field("config", &self.config)
            .field("pool_tokens", &self.pool_tokens)
            .finish_non_exhaustive()
    }
}

/// The parts of a request the server acts on.
pub(crate) struct Request {
    pub(crate) protocols: Vec<u16>,
    pub(crate) aeads: Option<Vec<u16>>,
    /// chrony's compliant-128gcm record was present (see [`choose_aead`]).
    pub(crate) compliant_128gcm: bool,
}

/// The first of the client's AEADs the server supports, in the client's order, and
/// whether to confirm chrony's compliant-128gcm record.
///
/// AEAD 30 is passed over when the client did not send that record and another common
/// AEAD follows: chrony 4.6 offers [30, 15] and exports AEAD 30 keys with id 15 in the
/// exporter context (its nts_ke.h), chrony 4.6.1 and later do the same unless the
/// server confirms the record. We always export with the RFC 8915 context, so such a
/// session would fail on its first NTP request; AES-SIV-CMAC-256 works with every
/// chrony. A client that offers only 30 gets 30 with the RFC context (RFC 8915 section
/// 5.1), as RFC 8915 asks.
pub(crate) fn choose_aead(request: &Request, supported: &[u16]) -> Option<(u16, bool)> {
    let aeads = request.aeads.as_deref().unwrap_or_default();
    let common = || aeads.iter().copied().filter(|id| supported.contains(id));
    let first = common().next()?;
    if first != aead::AES_128_GCM_SIV {
        return Some((first, false));
    }
    if request.compliant_128gcm {
        return Some((first, true));
    }
    Some((common().nth(1).unwrap_or(first), false))
}

impl KeServerCore {
    /// A server core after validating `config`.
    pub fn new(
        config: ServerCoreConfig,
        issuer: Arc<dyn CookieIssuer>,
    ) -> Result<Self, ServerConfigError> {
        config.validate()?;
        Ok(Self {
            config,
            issuer,
            pool_tokens: PoolTokens::default(),
        })
    }

    /// Makes the server a pool member for the load balancers holding one of `tokens`
    /// (see [`crate::pool_member`]); an empty set, the default, means not a member.
    /// The set is shared: [`PoolTokens::replace`] on a clone takes effect at once.
    #[must_use]
    pub fn with_pool_tokens(mut self, tokens: PoolTokens) -> Self {
        self.pool_tokens = tokens;
        self
    }

    /// The pool tokens in force (empty: not a pool member).
    pub fn pool_tokens(&self) -> &PoolTokens {
        &self.pool_tokens
    }

    /// The configuration in force.
    pub fn config(&self) -> &ServerCoreConfig {
        &self.config
    }

    /// Answers a complete request message held in `request`.
    pub fn respond(&self, request: &[u8], exporter: &dyn KeyExporter) -> ServerResponse {
        match decode_message(request, MessageLimits::REQUEST) {
            Ok(records) => self.respond_to_records(&records, exporter),
            Err(e) => Self::error_response(RequestError::Message(e)),
        }
    }

    /// Answers a request whose records were already read (End of Message included), as
    /// the only request of its connection may be answered (Keep Alive allowed).
    pub fn respond_to_records(
        &self,
        records: &[Record],
        exporter: &dyn KeyExporter,
    ) -> ServerResponse {
        self.respond_to_records_with(
            records,
            exporter,
            RespondOptions {
                allow_keep_alive: true,
                kept_alive: false,
            },
        )
    }

    /// Answers a request whose records were already read, with the connection's
    /// `options` (see [`RespondOptions`]).
    pub fn respond_to_records_with(
        &self,
        records: &[Record],
        exporter: &dyn KeyExporter,
        options: RespondOptions,
    ) -> ServerResponse {
        let query = pool_query_kind(records);
        let member = !self.pool_tokens.is_empty();
        if let Some(kind) = query.filter(|_| member && is_authenticated(records, &self.pool_tokens))
        {
            return self.respond_to_pool(records, kind, options.allow_keep_alive);
        }
        let mut response = if options.kept_alive {
            // Only pool requests are served on a kept-alive connection; the ordinary
            // checks still decide the error (Error 0 for unauthenticated pool records).
            let error = match parse_request(records) {
                Err(e) => e,
                Ok(_) => RequestError::Pool(PoolRequestError::KeyExchangeOnKeptAliveConnection),
            };
            Self::error_response(error)
        } else {
            self.respond_ordinary(records, exporter)
        };
        response.pool = query.map(|kind| PoolExchange {
            kind,
            outcome: PoolOutcome::NotAuthorized,
        });
        response
    }

    fn respond_ordinary(&self, records: &[Record], exporter: &dyn KeyExporter) -> ServerResponse {
        match self.negotiate(records, exporter) {
            Ok((records, negotiated)) => Self::encoded(&records, negotiated, false),
            Err(e) => Self::error_response(e),
        }
    }

    fn encoded(records: &[Record], negotiated: Negotiated, keep_alive: bool) -> ServerResponse {
        match encode_records(records) {
            Ok(bytes) => ServerResponse {
                bytes,
                result: Ok(negotiated),
                keep_alive,
                pool: None,
            },
            Err(e) => Self::error_response(RequestError::Cookies(CookieIssueError(e.to_string()))),
        }
    }

    /// Answers an authenticated request carrying pool queries of `kind`.
    fn respond_to_pool(
        &self,
        records: &[Record],
        kind: PoolRequestKind,
        allow_keep_alive: bool,
    ) -> ServerResponse {
        let (mut response, kind) = match parse_pool_request(records, &self.config.aead_algorithms) {
            Ok(request) => {
                let kind = request.kind();
                (self.answer_pool(request, allow_keep_alive), kind)
            }
            Err(e) => {
                let error = match e {
                    PoolParseError::Pool(e) => RequestError::Pool(e),
                    PoolParseError::UnknownCritical(record_type) => {
                        RequestError::UnrecognizedCriticalRecord { record_type }
                    }
                    PoolParseError::ServerRecord(record_type) => {
                        RequestError::ClientSentServerRecord { record_type }
                    }
                };
                (Self::error_response(error), kind)
            }
        };
        let outcome = match &response.result {
            Ok(_) => PoolOutcome::Ok,
            Err(e) if e.is_internal() => PoolOutcome::InternalError,
            Err(_) => PoolOutcome::BadRequest,
        };
        response.pool = Some(PoolExchange { kind, outcome });
        response
    }

    fn answer_pool(&self, request: PoolRequest, allow_keep_alive: bool) -> ServerResponse {
        let (mut out, negotiated, keep_alive) = match request {
            PoolRequest::Support {
                protocols,
                algorithms,
                keep_alive,
            } => (
                support_records(&self.config.aead_algorithms, algorithms, protocols),
                Negotiated::PoolSupport,
                keep_alive,
            ),
            PoolRequest::FixedKey {
                aead_id,
                c2s,
                s2c,
                keep_alive,
            } => match self.cookie_records(aead_id, &c2s, &s2c) {
                Ok((records, negotiated)) => (records, negotiated, keep_alive),
                Err(e) => return Self::error_response(e),
            },
        };
        let keep_alive = keep_alive && allow_keep_alive;
        if keep_alive {
            out.push(PoolRecord::KeepAlive.to_record());
        }
        out.push(Record::EndOfMessage);
        Self::encoded(&out, negotiated, keep_alive)
    }

    /// The response records of a key exchange for `aead_id` with these keys, End of
    /// Message excluded: Next Protocol, AEAD, Server and Port as configured, cookies.
    fn cookie_records(
        &self,
        aead_id: u16,
        c2s: &[u8],
        s2c: &[u8],
    ) -> Result<(Vec<Record>, Negotiated), RequestError> {
        let cookies = self
            .issuer
            .issue(aead_id, c2s, s2c, self.config.cookie_count)
            .map_err(RequestError::Cookies)?;
        check_issued_cookies(&cookies, self.config.cookie_count)?;
        let mut out = Vec::with_capacity(cookies.len() + 5);
        out.push(Record::NextProtocol(vec![NEXT_PROTOCOL_NTPV4]));
        out.push(Record::AeadAlgorithm(vec![aead_id]));
        self.push_server_and_port(&mut out);
        let count = cookies.len();
        out.extend(cookies.into_iter().map(Record::NewCookie));
        Ok((
            out,
            Negotiated::Ntpv4 {
                aead_id,
                cookies: count,
            },
        ))
    }

    fn push_server_and_port(&self, out: &mut Vec<Record>) {
        if let Some(server) = &self.config.ntp_server {
            out.push(Record::Server(server.clone()));
        }
        if let Some(port) = self.config.ntp_port {
            out.push(Record::Port(port));
        }
    }

    /// The response reporting `error`: one Error record and End of Message.
    pub fn error_response(error: RequestError) -> ServerResponse {
        ServerResponse {
            bytes: error_message(error.error_code()),
            result: Err(error),
            keep_alive: false,
            pool: None,
        }
    }

    fn negotiate(
        &self,
        records: &[Record],
        exporter: &dyn KeyExporter,
    ) -> Result<(Vec<Record>, Negotiated), RequestError> {
        let request = parse_request(records)?;
        if !request.protocols.contains(&NEXT_PROTOCOL_NTPV4) {
            return Ok((
                vec![Record::NextProtocol(vec![]), Record::EndOfMessage],
                Negotiated::NoCommonProtocol,
            ));
        }
        match &request.aeads {
            Some(a) if a.is_empty() => return Err(RequestError::EmptyAeadList),
            Some(_) => {}
            None => return Err(RequestError::AeadAlgorithmCount(0)),
        }
        let chosen = choose_aead(&request, &self.config.aead_algorithms);
        let Some((aead_id, key_len, confirm_compliant)) =
            chosen.and_then(|(id, confirm)| Some((id, aead::key_len(id)?, confirm)))
        else {
            return Ok((
                vec![
                    Record::NextProtocol(vec![NEXT_PROTOCOL_NTPV4]),
                    Record::AeadAlgorithm(vec![]),
                    Record::EndOfMessage,
                ],
                Negotiated::NoCommonAead,
            ));
        };
        let keys =
            export_session_keys(exporter, aead_id, key_len).map_err(RequestError::KeyExport)?;
        let cookies = self
            .issuer
            .issue(aead_id, &keys.c2s, &keys.s2c, self.config.cookie_count)
            .map_err(RequestError::Cookies)?;
        check_issued_cookies(&cookies, self.config.cookie_count)?;

        let mut out = Vec::with_capacity(cookies.len() + 5);
        out.push(Record::NextProtocol(vec![NEXT_PROTOCOL_NTPV4]));
        out.push(Record::AeadAlgorithm(vec![aead_id]));
        if confirm_compliant {
            // As chrony's server answers: right after the AEAD record, not critical.
            out.push(Record::Unknown {
                critical: false,
                record_type: peer_record_type::CHRONY_COMPLIANT_128GCM_EXPORT,
                body: Vec::new(),
            });
        }
        self.push_server_and_port(&mut out);
        let count = cookies.len();
        out.extend(cookies.into_iter().map(Record::NewCookie));
        out.push(Record::EndOfMessage);
        Ok((
            out,
            Negotiated::Ntpv4 {
                aead_id,
                cookies: count,
            },
        ))
    }
}

/// Largest cookie we pass on: clients (ours included) refuse longer ones.
const MAX_ISSUED_COOKIE_LEN: usize = crate::client_core::MAX_COOKIE_LEN;

fn check_issued_cookies(cookies: &[Vec<u8>], wanted: usize) -> Result<(), RequestError> {
    if cookies.is_empty() || cookies.len() > wanted {
        return Err(RequestError::Cookies(CookieIssueError(format!(
            "issuer returned {} cookies, wanted {wanted}",
            cookies.len()
        ))));
    }
    if cookies
        .iter()
        .any(|c| c.is_empty() || c.len() > MAX_ISSUED_COOKIE_LEN)
    {
        return Err(RequestError::Cookies(CookieIssueError(format!(
            "issuer returned a cookie outside 1..={MAX_ISSUED_COOKIE_LEN} bytes"
        ))));
    }
    Ok(())
}

/// Checks the record structure of a request (RFC 8915 sections 4.1.1-4.1.8).
pub(crate) fn parse_request(records: &[Record]) -> Result<Request, RequestError> {
    // Unknown critical records win over every other complaint: the client learns which
    // record we do not understand (chrony answers the same way).
    if let Some(Record::Unknown { record_type, .. }) = records
        .iter()
        .find(|r| matches!(r, Record::Unknown { critical: true, .. }))
    {
        return Err(RequestError::UnrecognizedCriticalRecord {
            record_type: *record_type,
        });
    }
    let mut protocols: Vec<&Vec<u16>> = Vec::new();
    let mut aeads: Vec<&Vec<u16>> = Vec::new();
    let (mut servers, mut ports) = (0usize, 0usize);
    let mut compliant_128gcm = false;
    for record in records {
        match record {
            Record::NextProtocol(p) => protocols.push(p),
            Record::AeadAlgorithm(a) => aeads.push(a),
            Record::Error(_) | Record::Warning(_) | Record::NewCookie(_) => {
                return Err(RequestError::ClientSentServerRecord {
                    record_type: record.record_type(),
                });
            }
            // A client may state a preferred server or port; we ignore the value
            // (section 4.1.7), but there may be at most one of each.
            Record::Server(_) => servers += 1,
            Record::Port(_) => ports += 1,
            // chrony's record has an empty body; chrony's server refuses any other
            // with Bad Request, and so do we.
            Record::Unknown {
                record_type: peer_record_type::CHRONY_COMPLIANT_128GCM_EXPORT,
                body,
                ..
            } => {
                if !body.is_empty() {
                    return Err(RequestError::MalformedPeerRecord {
                        record_type: peer_record_type::CHRONY_COMPLIANT_128GCM_EXPORT,
                    });
                }
                compliant_128gcm = true;
            }
            // Unknown non-critical records are ignored (RFC 8915 section 4): ntpd-rs's
            // keep-alive, NTP Server Deny and pool Authentication records among them.
            Record::EndOfMessage | Record::Unknown { .. } => {}
        }
    }
    if servers > 1 {
        return Err(RequestError::DuplicateRecord {
            record_type: record_type::SERVER,
        });
    }
    if ports > 1 {
        return Err(RequestError::DuplicateRecord {
            record_type: record_type::PORT,
        });
    }
    let [protocols] = protocols[..] else {
        return Err(RequestError::NextProtocolCount(protocols.len()));
    };
    if protocols.is_empty() {
        return Err(RequestError::EmptyNextProtocol);
    }
    let aeads = match aeads[..] {
        [] => None,
        [a] => Some(a.clone()),
        _ => return Err(RequestError::AeadAlgorithmCount(aeads.len())),
    };
    Ok(Request {
        protocols: protocols.clone(),
        aeads,
        compliant_128gcm,
    })
}

/// An error response: `Error(code)` then End of Message.
pub fn error_message(code: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    // Both records are tiny and always encodable.
    for r in [Record::Error(code), Record::EndOfMessage] {
        if r.encode(&mut out).is_err() {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_export::FakeExporter;
    use crate::record::Decoded;

    /// Test issuer: cookie i = aead id | i | c2s | s2c.
    pub(crate) struct EchoIssuer;

    impl CookieIssuer for EchoIssuer {
        fn issue(
            &self,
            aead_id: u16,
            c2s: &[u8],
            s2c: &[u8],
            count: usize,
        ) -> Result<Vec<Vec<u8>>, CookieIssueError> {
            Ok((0..count)
                .map(|i| {
                    let mut c = aead_id.to_be_bytes().to_vec();
                    c.push(i as u8);
                    c.extend_from_slice(c2s);
                    c.extend_from_slice(s2c);
                    c
                })
                .collect())
        }
    }

    struct FailingIssuer;

    impl CookieIssuer for FailingIssuer {
        fn issue(
            &self,
            _: u16,
            _: &[u8],
            _: &[u8],
            _: usize,
        ) -> Result<Vec<Vec<u8>>, CookieIssueError> {
            Err(CookieIssueError("no master key".into()))
        }
    }

    fn core() -> KeServerCore {
        KeServerCore::new(ServerCoreConfig::default(), Arc::new(EchoIssuer)).expect("valid")
    }

    fn respond(records: &[Record]) -> (Vec<Record>, Result<Negotiated, RequestError>) {
        let bytes = encode_records(records).expect("encodable");
        let resp = core().respond(&bytes, &FakeExporter);
        let out = decode_message(&resp.bytes, MessageLimits::RESPONSE).expect("valid response");
        (out, resp.result)
    }

    fn request(aeads: &[u16]) -> Vec<Record> {
        vec![
            Record::NextProtocol(vec![0]),
            Record::AeadAlgorithm(aeads.to_vec()),
            Record::EndOfMessage,
        ]
    }

    fn assert_error(records: &[Record], code: u16) {
        let (out, result) = respond(records);
        assert_eq!(out, vec![Record::Error(code), Record::EndOfMessage]);
        assert_eq!(result.expect_err("error").error_code(), code);
    }

    #[test]
    fn good_request_gets_protocol_aead_and_eight_cookies() {
        let (out, result) = respond(&request(&[30, 17, 15]));
        assert_eq!(
            result,
            Ok(Negotiated::Ntpv4 {
                aead_id: 17,
                cookies: 8
            })
        );
        assert_eq!(out[0], Record::NextProtocol(vec![0]));
        assert_eq!(out[1], Record::AeadAlgorithm(vec![17]));
        let cookies: Vec<_> = out
            .iter()
            .filter(|r| matches!(r, Record::NewCookie(_)))
            .collect();
        assert_eq!(cookies.len(), 8);
        assert_eq!(out.last(), Some(&Record::EndOfMessage));
        // Cookie carries the keys exported with the AEAD 17 context (64-byte keys).
        let keys = export_session_keys(&FakeExporter, 17, 64).expect("fake");
        let Record::NewCookie(c) = cookies[0] else {
            panic!()
        };
        assert_eq!(&c[3..67], &keys.c2s[..]);
        assert_eq!(&c[67..], &keys.s2c[..]);
    }

    #[test]
    fn server_and_port_records_come_from_config() {
        let config = ServerCoreConfig {
            ntp_server: Some("2001:db8::1".into()),
            ntp_port: Some(11123),
            ..ServerCoreConfig::default()
        };
        let core = KeServerCore::new(config, Arc::new(EchoIssuer)).expect("valid");
        let bytes = encode_records(&request(&[15])).expect("encodable");
        let out = decode_message(
            &core.respond(&bytes, &FakeExporter).bytes,
            MessageLimits::RESPONSE,
        )
        .expect("valid");
        assert!(out.contains(&Record::Server("2001:db8::1".into())));
        assert!(out.contains(&Record::Port(11123)));
    }

    #[test]
    fn unknown_aeads_only_get_an_empty_aead_record() {
        let (out, result) = respond(&request(&[999, 31]));
        assert_eq!(result, Ok(Negotiated::NoCommonAead));
        assert_eq!(
            out,
            vec![
                Record::NextProtocol(vec![0]),
                Record::AeadAlgorithm(vec![]),
                Record::EndOfMessage
            ]
        );
    }

    #[test]
    fn no_ntpv4_offered_gets_an_empty_next_protocol() {
        let (out, result) = respond(&[Record::NextProtocol(vec![0x8001]), Record::EndOfMessage]);
        assert_eq!(result, Ok(Negotiated::NoCommonProtocol));
        assert_eq!(
            out,
            vec![Record::NextProtocol(vec![]), Record::EndOfMessage]
        );
    }

    #[test]
    fn unknown_critical_record_is_error_0_even_before_other_faults() {
        let unknown = Record::Unknown {
            critical: true,
            record_type: 0x4321,
            body: vec![1],
        };
        assert_error(&[unknown.clone(), Record::EndOfMessage], 0);
        let mut r = request(&[15]);
        r.insert(0, unknown);
        assert_error(&r, 0);
    }

    #[test]
    fn unknown_non_critical_record_is_ignored() {
        let mut r = request(&[15]);
        r.insert(
            1,
            Record::Unknown {
                critical: false,
                record_type: 1024,
                body: vec![],
            },
        );
        assert!(respond(&r).1.is_ok());
    }

    #[test]
    fn structural_faults_are_bad_request() {
        let np = Record::NextProtocol(vec![0]);
        let aead = Record::AeadAlgorithm(vec![15]);
        let eom = Record::EndOfMessage;
        for records in [
            vec![aead.clone(), eom.clone()], // no next protocol
            vec![np.clone(), np.clone(), aead.clone(), eom.clone()], // duplicate
            vec![Record::NextProtocol(vec![]), aead.clone(), eom.clone()], // empty
            vec![np.clone(), eom.clone()],   // no AEAD
            vec![np.clone(), Record::AeadAlgorithm(vec![]), eom.clone()], // empty AEAD list
            vec![np.clone(), aead.clone(), aead.clone(), eom.clone()], // duplicate AEAD
            vec![
                np.clone(),
                aead.clone(),
                Record::NewCookie(vec![1]),
                eom.clone(),
            ],
            vec![np.clone(), aead.clone(), Record::Error(2), eom.clone()],
            vec![np.clone(), aead.clone(), Record::Warning(0), eom.clone()],
            vec![
                np.clone(),
                aead.clone(),
                Record::Port(1),
                Record::Port(2),
                eom.clone(),
            ],
        ] {
            assert_error(&records, error_code::BAD_REQUEST);
        }
    }

    #[test]
    fn broken_bytes_are_bad_request() {
        let good = encode_records(&request(&[15])).expect("encodable");
        let mut trailing = good.clone();
        trailing.extend_from_slice(&[0x80, 0, 0, 0]);
        let mut oversized = vec![0x00, 0x55, 0x20, 0x00];
        oversized.extend(vec![0; 0x2000]);
        oversized.extend_from_slice(&good);
        let huge_msg = encode_records(&vec![
            Record::Unknown {
                critical: false,
                record_type: 99,
                body: vec![0; 4000]
            };
            5
        ])
        .expect("encodable");
        for bytes in [
            &good[..good.len() - 4],
            &trailing[..],
            &oversized[..],
            &huge_msg[..],
            &[][..],
            &[0x80, 1, 0, 1, 0][..],
        ] {
            let resp = core().respond(bytes, &FakeExporter);
            assert_eq!(resp.bytes, error_message(1));
            assert!(matches!(resp.result, Err(RequestError::Message(_))));
        }
    }

    #[test]
    fn issuer_failure_is_internal_error() {
        let core =
            KeServerCore::new(ServerCoreConfig::default(), Arc::new(FailingIssuer)).expect("valid");
        let bytes = encode_records(&request(&[15])).expect("encodable");
        let resp = core.respond(&bytes, &FakeExporter);
        assert_eq!(resp.bytes, error_message(2));
        assert!(resp.result.expect_err("error").is_internal());
    }

    #[test]
    fn config_validation() {
        let bad = |f: fn(&mut ServerCoreConfig)| {
            let mut c = ServerCoreConfig::default();
            f(&mut c);
            c.validate().is_err()
        };
        assert!(bad(|c| c.aead_algorithms.clear()));
        assert!(bad(|c| c.aead_algorithms.push(1234)));
        assert!(bad(|c| c.cookie_count = 0));
        assert!(bad(|c| c.cookie_count = 17));
        assert!(bad(|c| c.ntp_server = Some("[::1]".into())));
        assert!(ServerCoreConfig::default().validate().is_ok());
    }

    #[test]
    fn error_message_is_two_records() {
        assert_eq!(error_message(1), vec![0x80, 2, 0, 2, 0, 1, 0x80, 0, 0, 0]);
        assert!(matches!(
            Record::decode(&error_message(0), 10),
            Ok(Decoded::Complete(Record::Error(0), 6))
        ));
    }
}
