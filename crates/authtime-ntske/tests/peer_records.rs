//! NTS-KE messages other implementations send, byte for byte, through our sans-IO
//! server and client (RFC 8915 section 4: unknown non-critical records are ignored, an
//! unknown critical record gets Error 0). Each byte array names the source file and tag
//! it was read from; docs/nts.md has the table of what is supported and what refused.

mod common;

use std::sync::Arc;

use common::RecordingIssuer;

use authtime_ntske::client_core::{DEFAULT_AEAD_PREFERENCE, ResponseError, parse_response};
use authtime_ntske::key_export::{FakeExporter, export_session_keys};
use authtime_ntske::message::{MessageLimits, decode_message};
use authtime_ntske::record::{Record, error_code, peer_record_type};
use authtime_ntske::server_core::{KeServerCore, Negotiated, ServerCoreConfig};

/// `authtime serve`'s default AEADs: 15, 17 and 30 (`[nts-ke] aead`).
fn server() -> KeServerCore {
    let config = ServerCoreConfig {
        aead_algorithms: vec![15, 17, 30],
        ..ServerCoreConfig::default()
    };
    KeServerCore::new(config, Arc::new(RecordingIssuer::default())).expect("valid")
}

fn answer(request: &[u8]) -> (Vec<Record>, Option<u16>) {
    let response = server().respond(request, &FakeExporter);
    let records = decode_message(&response.bytes, MessageLimits::RESPONSE).expect("valid");
    let aead = match response.result {
        Ok(Negotiated::Ntpv4 { aead_id, .. }) => Some(aead_id),
        _ => None,
    };
    (records, aead)
}

fn compliant_record() -> Record {
    Record::Unknown {
        critical: false,
        record_type: peer_record_type::CHRONY_COMPLIANT_128GCM_EXPORT,
        body: vec![],
    }
}

// chrony 4.6, nts_ke_client.c prepare_request() (tag 4.6): Next Protocol [NTPv4] and
// AEAD [30, 15], both critical (NKSN_AddRecord(session, 1, ...)), then End of Message
// (critical, NKSN_EndMessage in nts_ke_session.c). No compliant-128gcm record.
const CHRONY_4_6_REQUEST: [u8; 18] = [
    0x80, 0x01, 0x00, 0x02, 0x00, 0x00, // Next Protocol: NTPv4
    0x80, 0x04, 0x00, 0x04, 0x00, 0x1e, 0x00, 0x0f, // AEAD: 30, 15
    0x80, 0x00, 0x00, 0x00, // End of Message
];

// chrony 4.6.1, nts_ke_client.c prepare_request() (tag 4.6.1, commit 0707865): the same,
// plus the non-critical, empty compliant-128gcm record (type 1024, nts_ke.h) because
// AEAD 30 is offered.
const CHRONY_4_6_1_REQUEST: [u8; 22] = [
    0x80, 0x01, 0x00, 0x02, 0x00, 0x00, // Next Protocol: NTPv4
    0x80, 0x04, 0x00, 0x04, 0x00, 0x1e, 0x00, 0x0f, // AEAD: 30, 15
    0x04, 0x00, 0x00, 0x00, // compliant-128gcm export, not critical
    0x80, 0x00, 0x00, 0x00, // End of Message
];

#[test]
fn chrony_4_6_offering_gcm_siv_without_the_compliant_record_gets_aes_siv_cmac_256() {
    // chrony 4.6 exports AEAD 30 keys with id 15 in the exporter context (nts_ke.h
    // NKE_EXPORTER_CONTEXT_C2S "\x0\x0\x0\xf\x0"); we export with 30 (RFC 8915 section
    // 5.1). Negotiating 30 would break every NTP exchange; 15 works.
    let (records, aead) = answer(&CHRONY_4_6_REQUEST);
    assert_eq!(aead, Some(15));
    assert_eq!(records[1], Record::AeadAlgorithm(vec![15]));
    assert!(!records.contains(&compliant_record()));
}

#[test]
fn chrony_4_6_1_with_the_compliant_record_gets_gcm_siv_and_the_confirmation() {
    let (records, aead) = answer(&CHRONY_4_6_1_REQUEST);
    assert_eq!(aead, Some(30));
    // As chrony's own server (nts_ke_server.c prepare_response, 4.6.1): right after the
    // AEAD record, not critical, empty; chrony then exports with id 30 as we do.
    assert_eq!(records[1], Record::AeadAlgorithm(vec![30]));
    assert_eq!(records[2], compliant_record());
    let mut encoded = Vec::new();
    records[2].encode(&mut encoded).expect("encodable");
    assert_eq!(encoded, [0x04, 0x00, 0x00, 0x00]);
    // The cookies carry 16-byte keys exported with the RFC context (id 30).
    let keys = export_session_keys(&FakeExporter, 30, 16).expect("fake");
    let Some(Record::NewCookie(cookie)) =
        records.iter().find(|r| matches!(r, Record::NewCookie(_)))
    else {
        panic!("no cookie: {records:?}")
    };
    assert_eq!(&cookie[3..19], &keys.c2s[..]);
    assert_eq!(&cookie[19..], &keys.s2c[..]);
}

#[test]
fn gcm_siv_alone_is_negotiated_with_the_rfc_context_and_a_bad_compliant_record_refused() {
    let only_30 = [
        0x80, 0x01, 0x00, 0x02, 0x00, 0x00, 0x80, 0x04, 0x00, 0x02, 0x00, 0x1e, 0x80, 0x00, 0x00,
        0x00,
    ];
    assert_eq!(answer(&only_30).1, Some(30));
    // chrony's server answers a compliant-128gcm record with a body with Bad Request.
    let mut with_body = CHRONY_4_6_1_REQUEST[..14].to_vec();
    with_body.extend_from_slice(&[0x04, 0x00, 0x00, 0x02, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00]);
    let (records, aead) = answer(&with_body);
    assert_eq!(aead, None);
    assert_eq!(
        records,
        [Record::Error(error_code::BAD_REQUEST), Record::EndOfMessage]
    );
}

// ntpd-rs 1.9.0, ntp-proto/src/nts/messages.rs Request::serialize (KeyExchange) with the
// algorithms of KeyExchangeClient::new in ntp-proto/src/nts/mod.rs ([17, 15]) and one
// denied server; record types and critical bits from NtsRecord::record_type in
// ntp-proto/src/nts/record.rs: NtpServerDeny is 13, not critical.
const NTPD_RS_1_9_REQUEST: [u8; 37] = [
    0x80, 0x01, 0x00, 0x02, 0x00, 0x00, // Next Protocol: NTPv4
    0x80, 0x04, 0x00, 0x04, 0x00, 0x11, 0x00, 0x0f, // AEAD: 17, 15
    0x00, 0x0d, 0x00, 0x0f, b'n', b't', b'p', b'.', b'e', b'x', b'a', b'm', b'p', b'l', b'e', b'.',
    b'o', b'r', b'g', // NTP Server Deny "ntp.example.org"
    0x80, 0x00, 0x00, 0x00, // End of Message
];

#[test]
fn ntpd_rs_client_request_with_a_denied_server_is_answered() {
    let (records, aead) = answer(&NTPD_RS_1_9_REQUEST);
    assert_eq!(aead, Some(17));
    assert_eq!(records[0], Record::NextProtocol(vec![0]));
    // The deny record is ignored: we send no Server record unless configured.
    assert!(!records.iter().any(|r| matches!(r, Record::Server(_))));
}

// ntpd-rs 1.9.0, ntp-proto/src/nts/messages.rs Request::serialize (FixedKey), what its
// NTS pool sends to a server: Authentication (14, not critical), Fixed Key Request (12,
// critical, c2s || s2c), Next Protocol, AEAD [15], Keep Alive (8, not critical), End of
// Message. Keys shortened to 2 x 4 bytes (their content does not matter here).
const NTPD_RS_1_9_POOL_FIXED_KEY: [u8; 40] = [
    0x00, 0x0e, 0x00, 0x04, b'k', b'e', b'y', b'1', // Authentication "key1"
    0x80, 0x0c, 0x00, 0x08, 1, 2, 3, 4, 5, 6, 7, 8, // Fixed Key Request
    0x80, 0x01, 0x00, 0x02, 0x00, 0x00, // Next Protocol: NTPv4
    0x80, 0x04, 0x00, 0x02, 0x00, 0x0f, // AEAD: 15
    0x00, 0x08, 0x00, 0x00, // Keep Alive
    0x80, 0x00, 0x00, 0x00, // End of Message
];

// ntpd-rs 1.9.0, messages.rs Request::serialize (Support): Authentication, Supported
// Next Protocol List (9, critical, empty), Supported Algorithm List (10, critical,
// empty), Keep Alive, End of Message.
const NTPD_RS_1_9_POOL_SUPPORT: [u8; 24] = [
    0x00, 0x0e, 0x00, 0x04, b'k', b'e', b'y', b'1', // Authentication "key1"
    0x80, 0x09, 0x00, 0x00, // Supported Next Protocol List
    0x80, 0x0a, 0x00, 0x00, // Supported Algorithm List
    0x00, 0x08, 0x00, 0x00, // Keep Alive
    0x80, 0x00, 0x00, 0x00, // End of Message
];

#[test]
fn ntpd_rs_pool_requests_get_unrecognized_critical_record() {
    for request in [
        &NTPD_RS_1_9_POOL_FIXED_KEY[..],
        &NTPD_RS_1_9_POOL_SUPPORT[..],
    ] {
        let (records, aead) = answer(request);
        assert_eq!(aead, None);
        assert_eq!(
            records,
            [
                Record::Error(error_code::UNRECOGNIZED_CRITICAL_RECORD),
                Record::EndOfMessage
            ]
        );
    }
}

#[test]
fn a_keep_alive_in_an_ordinary_request_is_ignored_and_not_echoed() {
    // Keep Alive is not critical: a server that does not keep connections open
    // ignores it, and ntpd-rs sees no Keep Alive in the response (its server echoes
    // it only when it keeps the connection, messages.rs KeyExchangeResponse).
    let mut request = NTPD_RS_1_9_REQUEST[..14].to_vec();
    request.extend_from_slice(&[0x00, 0x08, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00]);
    let (records, aead) = answer(&request);
    assert_eq!(aead, Some(17));
    assert!(
        !records
            .iter()
            .any(|r| r.record_type() == peer_record_type::NTPD_RS_KEEP_ALIVE)
    );
}

// ntpd-rs 1.9.0, messages.rs KeyExchangeResponse::serialize: Next Protocol, AEAD, the
// cookies (5, not critical), Server (6) and Port (7) with the critical bit set (record.rs
// NtsRecord::record_type: `6 | CRITICAL_BIT`, `7 | CRITICAL_BIT`), End of Message. One
// 8-byte cookie instead of eight real ones.
const NTPD_RS_1_9_RESPONSE: [u8; 47] = [
    0x80, 0x01, 0x00, 0x02, 0x00, 0x00, // Next Protocol: NTPv4
    0x80, 0x04, 0x00, 0x02, 0x00, 0x0f, // AEAD: 15
    0x00, 0x05, 0x00, 0x08, 1, 2, 3, 4, 5, 6, 7, 8, // New Cookie
    0x80, 0x06, 0x00, 0x09, b'1', b'2', b'7', b'.', b'0', b'.', b'0', b'.', b'2', // Server
    0x80, 0x07, 0x00, 0x02, 0x10, 0x7b, // Port 4219
    0x80, 0x00, 0x00, 0x00, // End of Message
];

#[test]
fn ntpd_rs_server_response_with_critical_server_and_port_is_accepted() {
    // RFC 8915 section 4: the critical bit of a known record type carries no meaning.
    let session = parse_response(&NTPD_RS_1_9_RESPONSE, &DEFAULT_AEAD_PREFERENCE).expect("ok");
    assert_eq!(session.aead_id, 15);
    assert_eq!(session.ntp_server.as_deref(), Some("127.0.0.2"));
    assert_eq!(session.ntp_port, Some(4219));
    assert_eq!(session.cookies, [vec![1, 2, 3, 4, 5, 6, 7, 8]]);
    // With a Keep Alive (only sent to clients that asked for it), still accepted.
    let mut with_keep_alive = NTPD_RS_1_9_RESPONSE[..NTPD_RS_1_9_RESPONSE.len() - 4].to_vec();
    with_keep_alive.extend_from_slice(&[0x00, 0x08, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00]);
    assert!(parse_response(&with_keep_alive, &DEFAULT_AEAD_PREFERENCE).is_ok());
    // ntpd-rs's ErrorResponse::serialize: Error (critical) and End of Message.
    let error = [0x80, 0x02, 0x00, 0x02, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00];
    assert_eq!(
        parse_response(&error, &DEFAULT_AEAD_PREFERENCE),
        Err(ResponseError::ServerError(0))
    );
}

// chrony 4.6.1, nts_ke_server.c prepare_response() for a client that sent the
// compliant-128gcm record and got AEAD 30: Next Protocol, AEAD [30], compliant-128gcm
// (not critical), Port (critical, when not 123), cookies (not critical), End of Message.
const CHRONY_4_6_1_RESPONSE: [u8; 38] = [
    0x80, 0x01, 0x00, 0x02, 0x00, 0x00, // Next Protocol: NTPv4
    0x80, 0x04, 0x00, 0x02, 0x00, 0x1e, // AEAD: 30
    0x04, 0x00, 0x00, 0x00, // compliant-128gcm export
    0x80, 0x07, 0x00, 0x02, 0x2b, 0x73, // Port 11123
    0x00, 0x05, 0x00, 0x08, 9, 9, 9, 9, 9, 9, 9, 9, // New Cookie
    0x80, 0x00, 0x00, 0x00, // End of Message
];

#[test]
fn chrony_server_response_with_the_compliant_record_is_accepted() {
    // We export AEAD 30 keys with the RFC context, which is what chrony uses once it
    // has sent this record.
    let session = parse_response(&CHRONY_4_6_1_RESPONSE, &DEFAULT_AEAD_PREFERENCE).expect("ok");
    assert_eq!(session.aead_id, 30);
    assert_eq!(session.ntp_port, Some(11123));
}
