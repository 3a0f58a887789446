//! The pool member's reactions, through [`KeServerCore`], for every branch.

use std::sync::{Arc, Mutex};

use super::*;
use crate::key_export::{FakeExporter, export_session_keys};
use crate::message::{MessageLimits, decode_message};
use crate::pool_record::AlgorithmDescription;
use crate::record::{encode_records, error_code};
use crate::server_core::{
    CookieIssueError, CookieIssuer, KeServerCore, Negotiated, PoolExchange, RequestError,
    RespondOptions, ServerCoreConfig, ServerResponse,
};

const TOKEN: &str = "kelb-token-0123456789";

/// One issue call: AEAD id, C2S, S2C.
type IssueCall = (u16, Vec<u8>, Vec<u8>);

/// Issuer that records the keys it was asked for; cookie i = aead id | i | c2s | s2c.
#[derive(Default)]
struct RecordingIssuer {
    calls: Mutex<Vec<IssueCall>>,
}

impl CookieIssuer for RecordingIssuer {
    fn issue(
        &self,
        aead_id: u16,
        c2s: &[u8],
        s2c: &[u8],
        count: usize,
    ) -> Result<Vec<Vec<u8>>, CookieIssueError> {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push((aead_id, c2s.to_vec(), s2c.to_vec()));
        }
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

fn config() -> ServerCoreConfig {
    ServerCoreConfig {
        aead_algorithms: vec![15, 17, 30],
        ..ServerCoreConfig::default()
    }
}

fn member(issuer: Arc<RecordingIssuer>) -> KeServerCore {
    KeServerCore::new(config(), issuer)
        .expect("valid")
        .with_pool_tokens(PoolTokens::new(vec![
            PoolToken::new("another").expect("t"),
            PoolToken::new(TOKEN).expect("t"),
        ]))
}

fn not_member() -> KeServerCore {
    KeServerCore::new(config(), Arc::new(RecordingIssuer::default())).expect("valid")
}

fn auth(token: &str) -> Record {
    PoolRecord::Authentication(token.into()).to_record()
}

fn support(protocols: bool, algorithms: bool) -> Vec<Record> {
    let mut r = vec![auth(TOKEN)];
    if protocols {
        r.push(PoolRecord::SupportedNextProtocols(vec![]).to_record());
    }
    if algorithms {
        r.push(PoolRecord::SupportedAlgorithms(vec![]).to_record());
    }
    r.push(Record::EndOfMessage);
    r
}

fn fixed_key(aead: u16, key_len: usize) -> Vec<Record> {
    vec![
        auth(TOKEN),
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![aead]),
        PoolRecord::FixedKey {
            c2s: vec![0xc2; key_len],
            s2c: vec![0x5c; key_len],
        }
        .to_record(),
        Record::EndOfMessage,
    ]
}

fn with(mut records: Vec<Record>, extra: Record) -> Vec<Record> {
    let eom = records.pop();
    records.push(extra);
    records.extend(eom);
    records
}

fn respond(core: &KeServerCore, records: &[Record]) -> (Vec<Record>, ServerResponse) {
    let bytes = encode_records(records).expect("encodable");
    let resp = core.respond(&bytes, &FakeExporter);
    let out = decode_message(&resp.bytes, MessageLimits::RESPONSE).expect("valid response");
    (out, resp)
}

fn assert_bad_request(records: &[Record]) {
    let (out, resp) = respond(&member(Arc::default()), records);
    assert_eq!(
        out,
        vec![Record::Error(error_code::BAD_REQUEST), Record::EndOfMessage],
        "{records:?}"
    );
    assert!(!resp.keep_alive);
    assert_eq!(resp.pool.map(|p| p.outcome), Some(PoolOutcome::BadRequest));
}

#[test]
fn support_query_lists_aeads_with_key_lengths_and_ntpv4() {
    let core = member(Arc::default());
    let (out, resp) = respond(&core, &support(true, true));
    assert_eq!(resp.result, Ok(Negotiated::PoolSupport));
    assert_eq!(
        out,
        vec![
            PoolRecord::SupportedAlgorithms(vec![
                AlgorithmDescription {
                    aead_id: 15,
                    key_len: 32
                },
                AlgorithmDescription {
                    aead_id: 17,
                    key_len: 64
                },
                AlgorithmDescription {
                    aead_id: 30,
                    key_len: 16
                },
            ])
            .to_record(),
            PoolRecord::SupportedNextProtocols(vec![0]).to_record(),
            Record::EndOfMessage,
        ]
    );
    assert_eq!(
        resp.pool,
        Some(PoolExchange {
            kind: PoolRequestKind::Support,
            outcome: PoolOutcome::Ok
        })
    );
    assert!(!resp.keep_alive);
}

#[test]
fn support_query_answers_only_what_was_asked() {
    let core = member(Arc::default());
    let (out, _) = respond(&core, &support(true, false));
    assert_eq!(
        out,
        vec![
            PoolRecord::SupportedNextProtocols(vec![0]).to_record(),
            Record::EndOfMessage
        ]
    );
    let (out, _) = respond(&core, &support(false, true));
    assert_eq!(out.len(), 2);
    assert_eq!(
        out[0].record_type(),
        crate::pool_record::pool_type::SUPPORTED_ALGORITHM_LIST
    );
}

#[test]
fn keep_alive_is_granted_when_asked_and_allowed() {
    let core = member(Arc::default());
    let request = with(support(true, false), PoolRecord::KeepAlive.to_record());
    let (out, resp) = respond(&core, &request);
    assert!(resp.keep_alive);
    assert_eq!(
        out[out.len() - 2..],
        [PoolRecord::KeepAlive.to_record(), Record::EndOfMessage]
    );
    // The last request a connection may carry does not get it.
    let last = core.respond_to_records_with(
        &request,
        &FakeExporter,
        RespondOptions {
            allow_keep_alive: false,
            kept_alive: true,
        },
    );
    assert!(!last.keep_alive);
    let out = decode_message(&last.bytes, MessageLimits::RESPONSE).expect("valid");
    assert!(!out.contains(&PoolRecord::KeepAlive.to_record()));
    // Keep Alive in an ordinary request is ignored.
    let plain = vec![
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![15]),
        PoolRecord::KeepAlive.to_record(),
        auth(TOKEN),
        Record::EndOfMessage,
    ];
    let (out, resp) = respond(&core, &plain);
    assert!(!resp.keep_alive);
    assert!(!out.contains(&PoolRecord::KeepAlive.to_record()));
}

#[test]
fn fixed_key_gets_cookies_for_those_keys_for_each_aead() {
    for (aead, len) in [(15u16, 32usize), (17, 64), (30, 16)] {
        let issuer = Arc::new(RecordingIssuer::default());
        let core = member(issuer.clone());
        let (out, resp) = respond(&core, &fixed_key(aead, len));
        assert_eq!(
            resp.result,
            Ok(Negotiated::Ntpv4 {
                aead_id: aead,
                cookies: 8
            })
        );
        assert_eq!(out[0], Record::NextProtocol(vec![0]));
        assert_eq!(out[1], Record::AeadAlgorithm(vec![aead]));
        let cookies: Vec<_> = out
            .iter()
            .filter_map(|r| match r {
                Record::NewCookie(c) => Some(c),
                _ => None,
            })
            .collect();
        assert_eq!(cookies.len(), 8);
        assert_eq!(out.last(), Some(&Record::EndOfMessage));
        let calls = issuer.calls.lock().expect("lock");
        assert_eq!(*calls, vec![(aead, vec![0xc2; len], vec![0x5c; len])]);
        // Not the keys the TLS session would export.
        let exported = export_session_keys(&FakeExporter, aead, len).expect("fake");
        assert_ne!(&cookies[0][3..3 + len], &exported.c2s[..]);
        assert_eq!(
            resp.pool,
            Some(PoolExchange {
                kind: PoolRequestKind::FixedKey,
                outcome: PoolOutcome::Ok
            })
        );
    }
}

#[test]
fn fixed_key_response_carries_server_port_and_keep_alive() {
    let core = KeServerCore::new(
        ServerCoreConfig {
            ntp_server: Some("ntp.example".into()),
            ntp_port: Some(1123),
            ..config()
        },
        Arc::new(RecordingIssuer::default()),
    )
    .expect("valid")
    .with_pool_tokens(PoolTokens::new(vec![PoolToken::new(TOKEN).expect("t")]));
    let (out, resp) = respond(
        &core,
        &with(fixed_key(15, 32), PoolRecord::KeepAlive.to_record()),
    );
    assert!(resp.keep_alive);
    assert_eq!(out[2], Record::Server("ntp.example".into()));
    assert_eq!(out[3], Record::Port(1123));
    assert_eq!(
        out[out.len() - 2..],
        [PoolRecord::KeepAlive.to_record(), Record::EndOfMessage]
    );
}

#[test]
fn every_bad_pool_request_is_bad_request() {
    let np = Record::NextProtocol(vec![0]);
    let aead = Record::AeadAlgorithm(vec![15]);
    let key = |n: usize| {
        PoolRecord::FixedKey {
            c2s: vec![1; n],
            s2c: vec![2; n],
        }
        .to_record()
    };
    let a = || auth(TOKEN);
    let eom = Record::EndOfMessage;
    let spl = PoolRecord::SupportedNextProtocols(vec![]).to_record();
    let sal = PoolRecord::SupportedAlgorithms(vec![]).to_record();
    for records in [
        fixed_key(15, 16),                             // key too short for AEAD 15
        fixed_key(15, 64),                             // key too long for AEAD 15
        fixed_key(17, 32),                             // too short for 17
        fixed_key(16, 48),                             // AEAD 16: known, not configured
        fixed_key(999, 32),                            // unknown AEAD
        vec![a(), key(32), aead.clone(), eom.clone()], // no Next Protocol
        vec![a(), np.clone(), key(32), eom.clone()],   // no AEAD
        vec![
            a(),
            Record::NextProtocol(vec![0, 0x8001]),
            aead.clone(),
            key(32),
            eom.clone(),
        ],
        vec![
            a(),
            Record::NextProtocol(vec![]),
            aead.clone(),
            key(32),
            eom.clone(),
        ],
        vec![
            a(),
            Record::NextProtocol(vec![0x8001]),
            aead.clone(),
            key(32),
            eom.clone(),
        ],
        vec![
            a(),
            np.clone(),
            Record::AeadAlgorithm(vec![15, 17]),
            key(32),
            eom.clone(),
        ],
        vec![
            a(),
            np.clone(),
            Record::AeadAlgorithm(vec![]),
            key(32),
            eom.clone(),
        ],
        vec![
            a(),
            np.clone(),
            np.clone(),
            aead.clone(),
            key(32),
            eom.clone(),
        ],
        vec![
            a(),
            np.clone(),
            aead.clone(),
            aead.clone(),
            key(32),
            eom.clone(),
        ],
        vec![a(), np.clone(), aead.clone(), key(32), key(32), eom.clone()],
        vec![
            a(),
            np.clone(),
            aead.clone(),
            key(32),
            spl.clone(),
            eom.clone(),
        ], // mixed
        vec![a(), key(32), sal.clone(), eom.clone()], // mixed
        vec![a(), np.clone(), spl.clone(), eom.clone()], // mixed
        vec![a(), aead.clone(), sal.clone(), eom.clone()], // mixed
        vec![a(), spl.clone(), spl.clone(), eom.clone()], // duplicate
        vec![a(), sal.clone(), sal.clone(), eom.clone()], // duplicate
        vec![a(), spl.clone(), Record::NewCookie(vec![1]), eom.clone()],
        vec![a(), spl.clone(), Record::Error(0), eom.clone()],
        vec![a(), spl.clone(), Record::Warning(0), eom.clone()],
    ] {
        assert_bad_request(&records);
    }
}

#[test]
fn malformed_pool_bodies_are_bad_request() {
    let raw = |t: u16, body: &[u8]| Record::Unknown {
        critical: true,
        record_type: t,
        body: body.to_vec(),
    };
    let np = Record::NextProtocol(vec![0]);
    let aead = Record::AeadAlgorithm(vec![15]);
    let eom = Record::EndOfMessage;
    for records in [
        vec![auth(TOKEN), raw(9, &[0]), eom.clone()],
        vec![auth(TOKEN), raw(10, &[0, 15, 0]), eom.clone()],
        vec![
            auth(TOKEN),
            np.clone(),
            aead.clone(),
            raw(12, &[]),
            eom.clone(),
        ],
        vec![
            auth(TOKEN),
            np.clone(),
            aead.clone(),
            raw(12, &[1; 33]),
            eom.clone(),
        ],
        vec![
            auth(TOKEN),
            np.clone(),
            aead.clone(),
            raw(12, &[1; 130]),
            eom.clone(),
        ],
    ] {
        assert_bad_request(&records);
    }
    // A malformed deny is ignored, like every deny.
    let deny = Record::Unknown {
        critical: false,
        record_type: 13,
        body: vec![0xff, 0xfe],
    };
    let (_, resp) = respond(&member(Arc::default()), &with(support(true, true), deny));
    assert_eq!(resp.result, Ok(Negotiated::PoolSupport));
}

#[test]
fn an_unknown_critical_record_in_a_pool_request_is_error_0() {
    let unknown = Record::Unknown {
        critical: true,
        record_type: 11,
        body: vec![],
    };
    let (out, resp) = respond(&member(Arc::default()), &with(support(true, true), unknown));
    assert_eq!(out, vec![Record::Error(0), Record::EndOfMessage]);
    assert_eq!(resp.pool.map(|p| p.outcome), Some(PoolOutcome::BadRequest));
}

/// Requests a member must answer byte for byte as a server without the opt-in does.
fn answered_as_today() -> Vec<Vec<Record>> {
    let deny = PoolRecord::NtpServerDeny("a.example".into()).to_record();
    let ka = PoolRecord::KeepAlive.to_record();
    let plain = vec![
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![17, 15]),
        Record::EndOfMessage,
    ];
    let mut wrong = fixed_key(15, 32);
    wrong[0] = auth("kelb-token-0123456788");
    let mut no_token = fixed_key(15, 32);
    no_token.remove(0);
    let mut two_tokens = support(true, true);
    two_tokens.insert(0, auth(TOKEN));
    let mut prefix = support(true, false);
    prefix[0] = auth("kelb-token");
    vec![
        wrong,
        no_token,
        two_tokens,
        prefix,
        with(
            support(false, true),
            Record::Unknown {
                critical: false,
                record_type: 14,
                body: vec![0xff],
            },
        )
        .into_iter()
        .skip(1)
        .collect(),
        with(plain.clone(), deny.clone()),
        with(with(plain.clone(), ka.clone()), deny),
        with(plain.clone(), auth(TOKEN)),
        with(with(plain.clone(), auth(TOKEN)), ka),
        with(plain, auth("wrong")),
        vec![auth(TOKEN), Record::EndOfMessage],
    ]
}

#[test]
fn without_a_valid_token_responses_are_byte_identical_to_a_non_member() {
    for records in answered_as_today() {
        let bytes = encode_records(&records).expect("encodable");
        let today = not_member().respond(&bytes, &FakeExporter);
        let with_tokens = member(Arc::default()).respond(&bytes, &FakeExporter);
        assert_eq!(today.bytes, with_tokens.bytes, "{records:?}");
        assert_eq!(today.result, with_tokens.result);
        assert!(!with_tokens.keep_alive);
    }
}

#[test]
fn pool_records_without_the_opt_in_or_a_valid_token_get_error_0() {
    let mut wrong = support(true, true);
    wrong[0] = auth("nope");
    for (core, records) in [
        (not_member(), fixed_key(15, 32)),
        (not_member(), support(true, true)),
        (member(Arc::default()), wrong),
    ] {
        let (out, resp) = respond(&core, &records);
        assert_eq!(out, vec![Record::Error(0), Record::EndOfMessage]);
        assert!(matches!(
            resp.result,
            Err(RequestError::UnrecognizedCriticalRecord { .. })
        ));
        assert_eq!(
            resp.pool.map(|p| p.outcome),
            Some(PoolOutcome::NotAuthorized)
        );
    }
}

#[test]
fn a_token_in_a_plain_request_is_ignored_and_deny_too() {
    let issuer = Arc::new(RecordingIssuer::default());
    let core = member(issuer.clone());
    let request = vec![
        auth(TOKEN),
        PoolRecord::NtpServerDeny("self.example".into()).to_record(),
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![15]),
        Record::EndOfMessage,
    ];
    let (_, resp) = respond(&core, &request);
    assert_eq!(
        resp.result,
        Ok(Negotiated::Ntpv4 {
            aead_id: 15,
            cookies: 8
        })
    );
    assert_eq!(resp.pool, None);
    // Keys came from the TLS exporter, not from the request.
    let exported = export_session_keys(&FakeExporter, 15, 32).expect("fake");
    let calls = issuer.calls.lock().expect("lock");
    assert_eq!(calls[0].1, exported.c2s.to_vec());
}

#[test]
fn a_kept_alive_connection_refuses_an_ordinary_key_exchange() {
    let core = member(Arc::default());
    let plain = vec![
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![15]),
        Record::EndOfMessage,
    ];
    let kept = RespondOptions {
        allow_keep_alive: true,
        kept_alive: true,
    };
    let resp = core.respond_to_records_with(&plain, &FakeExporter, kept);
    assert_eq!(resp.bytes, crate::server_core::error_message(1));
    // Pool requests still work there.
    let resp = core.respond_to_records_with(&fixed_key(15, 32), &FakeExporter, kept);
    assert!(resp.result.is_ok());
}

#[test]
fn reloaded_tokens_take_effect_at_once() {
    let tokens = PoolTokens::new(vec![PoolToken::new("old").expect("t")]);
    let core = not_member().with_pool_tokens(tokens.clone());
    let mut request = support(true, false);
    request[0] = auth("new");
    assert_eq!(respond(&core, &request).0[0], Record::Error(0));
    tokens.replace(vec![PoolToken::new("new").expect("t")]);
    assert_eq!(
        respond(&core, &request).1.result,
        Ok(Negotiated::PoolSupport)
    );
}

#[test]
fn debug_and_errors_never_show_a_token() {
    let core = member(Arc::default());
    let mut records = fixed_key(15, 16);
    let resp = core.respond_to_records(&records, &FakeExporter);
    let shown = format!("{core:?} {resp:?} {records:?}");
    assert!(!shown.contains(TOKEN), "{shown}");
    if let Err(e) = &resp.result {
        assert!(!e.to_string().contains(TOKEN));
    }
    records.clear();
}
