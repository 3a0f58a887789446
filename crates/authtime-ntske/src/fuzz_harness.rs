//! Entry points for the cargo-fuzz targets in `fuzz/fuzz_targets/ntske_*.rs`
//! (`ntske_records` covers the pool records of [`crate::pool_record`] too).
//!
//! Each takes arbitrary bytes and must never panic; the asserts below check properties
//! that must hold for any input, so a failure is a real bug.

use std::sync::Arc;

use crate::client_core::{DEFAULT_AEAD_PREFERENCE, MAX_COOKIES, parse_response};
use crate::key_export::FakeExporter;
use crate::message::{MessageLimits, MessageReader, decode_message};
use crate::record::{Decoded, Record, encode_records};
use crate::server_core::{CookieIssueError, CookieIssuer, KeServerCore, ServerCoreConfig};

/// Decodes records and messages; whatever decodes must encode and decode to the same
/// records, and a message fed in two pieces must decode like the whole.
pub fn records(data: &[u8]) {
    if let Ok(Decoded::Complete(record, used)) = Record::decode(data, usize::from(u16::MAX)) {
        assert!(used <= data.len());
        let wire = encode_records(std::slice::from_ref(&record)).expect("decoded records encode");
        assert_eq!(
            Record::decode(&wire, usize::from(u16::MAX)),
            Ok(Decoded::Complete(record.clone(), wire.len()))
        );
        // A pool record (draft-ietf-ntp-nts-keyexchange-pool) that reads must write back
        // to a record that reads the same.
        if let Some(Ok(pool)) = crate::pool_record::PoolRecord::from_record(&record) {
            let again = crate::pool_record::PoolRecord::from_record(&pool.to_record());
            assert_eq!(again, Some(Ok(pool)));
        }
    }
    let whole = decode_message(data, MessageLimits::RESPONSE);
    if let Ok(records) = &whole {
        let wire = encode_records(records).expect("decoded records encode");
        assert_eq!(
            decode_message(&wire, MessageLimits::RESPONSE).as_ref(),
            Ok(records)
        );
    }
    let cut = data.first().map_or(0, |b| usize::from(*b)).min(data.len());
    let mut reader = MessageReader::new(MessageLimits::RESPONSE);
    let split = reader
        .feed(&data[..cut])
        .and_then(|_| reader.feed(&data[cut..]))
        .and_then(|_| reader.finish());
    assert_eq!(split.is_ok(), whole.is_ok());
}

struct FixedIssuer;

impl CookieIssuer for FixedIssuer {
    fn issue(
        &self,
        aead_id: u16,
        c2s: &[u8],
        _s2c: &[u8],
        count: usize,
    ) -> Result<Vec<Vec<u8>>, CookieIssueError> {
        let mut cookie = aead_id.to_be_bytes().to_vec();
        cookie.extend_from_slice(c2s);
        Ok(vec![cookie; count])
    }
}

/// Runs the server core on arbitrary request bytes: the response must always be a valid
/// message that our client core either accepts or rejects cleanly.
pub fn server_request(data: &[u8]) {
    // `authtime serve`'s AEADs, so that the choice around AEAD 30 and chrony's
    // compliant-128gcm record is reached too.
    let config = ServerCoreConfig {
        aead_algorithms: vec![15, 17, 30],
        ..ServerCoreConfig::default()
    };
    let Ok(core) = KeServerCore::new(config, Arc::new(FixedIssuer)) else {
        return;
    };
    let response = core.respond(data, &FakeExporter);
    let records =
        decode_message(&response.bytes, MessageLimits::RESPONSE).expect("server output decodes");
    assert_eq!(records.last(), Some(&Record::EndOfMessage));
    let parsed = parse_response(&response.bytes, &[15, 16, 17, 30, 31]);
    if response.result.is_err() {
        assert!(parsed.is_err());
    }
}

/// The token of the pool member in [`pool_member_request`] (and its seeds).
pub const FUZZ_POOL_TOKEN: &str = "fuzz-pool-token";

/// Runs a pool member's server core (token [`FUZZ_POOL_TOKEN`]) on arbitrary request
/// bytes: the response is always a valid message; Keep Alive only ever answers an
/// authenticated pool request that succeeded; and whenever its bytes differ from a
/// non-member's, the request was an authenticated pool request (so without a valid
/// token the member answers exactly as before).
pub fn pool_member_request(data: &[u8]) {
    use crate::pool_member::{PoolOutcome, PoolToken, PoolTokens};
    let config = ServerCoreConfig {
        aead_algorithms: vec![15, 17, 30],
        ..ServerCoreConfig::default()
    };
    let (Ok(plain), Ok(token)) = (
        KeServerCore::new(config, Arc::new(FixedIssuer)),
        PoolToken::new(FUZZ_POOL_TOKEN),
    ) else {
        return;
    };
    let member = plain.clone().with_pool_tokens(PoolTokens::new(vec![token]));
    let response = member.respond(data, &FakeExporter);
    let records =
        decode_message(&response.bytes, MessageLimits::RESPONSE).expect("server output decodes");
    assert_eq!(records.last(), Some(&Record::EndOfMessage));
    let authenticated_ok = matches!(
        response.pool,
        Some(p) if p.outcome == PoolOutcome::Ok
    );
    if response.keep_alive {
        assert!(authenticated_ok && response.result.is_ok());
    }
    if response.result.is_err() {
        assert_eq!(records.len(), 2, "an error is one Error record");
    }
    let before = plain.respond(data, &FakeExporter);
    if before.bytes != response.bytes {
        assert!(
            matches!(response.pool, Some(p) if p.outcome != PoolOutcome::NotAuthorized),
            "a member answered an unauthenticated request differently"
        );
    }
}

/// Runs the client core on arbitrary response bytes.
pub fn client_response(data: &[u8]) {
    if let Ok(session) = parse_response(data, &DEFAULT_AEAD_PREFERENCE) {
        assert!(!session.cookies.is_empty() && session.cookies.len() <= MAX_COOKIES);
        assert!(DEFAULT_AEAD_PREFERENCE.contains(&session.aead_id));
        crate::client_core::derive_keys(&FakeExporter, &session).expect("fake exporter works");
    }
}

/// Runs the load balancer's backend-answer parsers on arbitrary bytes: a Support
/// answer keeps bounded lists, a Fixed Key answer bounded cookies of the AEAD asked for.
pub fn pool_backend_response(data: &[u8]) {
    use crate::pool_client::{MAX_SUPPORTED_ENTRIES, parse_fixed_key_bytes, parse_support_bytes};
    if let Ok(support) = parse_support_bytes(data) {
        assert!(support.protocols.len() <= MAX_SUPPORTED_ENTRIES);
        assert!(support.algorithms.len() <= MAX_SUPPORTED_ENTRIES);
        for id in support.usable_aeads() {
            assert!(crate::aead::key_len(id).is_some());
        }
    }
    for aead_id in [15, 17] {
        if let Ok(answer) = parse_fixed_key_bytes(data, aead_id) {
            assert_eq!(answer.session.aead_id, aead_id);
            assert!(
                !answer.session.cookies.is_empty() && answer.session.cookies.len() <= MAX_COOKIES
            );
            assert_ne!(answer.session.ntp_port, Some(0));
        }
    }
}

/// Runs the load balancer's request parsing and backend selection on arbitrary
/// request bytes: a backend is chosen only with an AEAD the client offered and the
/// backend supports, never a denied one.
pub fn balancer_request(data: &[u8]) {
    use crate::balancer_core::{BalancerCore, MAX_DENIED, Selection, parse_client_request};
    use crate::pool_client::Support;
    use crate::pool_record::AlgorithmDescription;
    let Ok(records) = decode_message(data, MessageLimits::REQUEST) else {
        return;
    };
    let Ok(request) = parse_client_request(&records) else {
        return;
    };
    assert!(request.denied().len() <= MAX_DENIED);
    let mut core = BalancerCore::new([("a.example".to_owned(), 2), ("b.example".to_owned(), 1)]);
    let support = |ids: &[u16]| Support {
        protocols: vec![0],
        algorithms: ids
            .iter()
            .map(|&aead_id| AlgorithmDescription {
                aead_id,
                key_len: crate::aead::key_len(aead_id).unwrap_or(0) as u16,
            })
            .collect(),
        keep_alive: false,
    };
    core.record_check(0, Some(&support(&[15, 17])));
    core.record_check(1, Some(&support(&[30, 15])));
    let mut tried = Vec::new();
    while let Selection::Backend { index, aead_id, .. } = core.select(&request, &tried) {
        let backend = &core.backends()[index];
        assert!(request.aeads().contains(&aead_id));
        assert!(backend.aeads.contains(&aead_id));
        assert!(
            !request
                .denied()
                .iter()
                .any(|d| d.eq_ignore_ascii_case(&backend.name))
        );
        assert!(!tried.contains(&index));
        tried.push(index);
    }
    assert!(tried.len() <= 2);
}

/// The server's notAfter reader ([`crate::cert_expiry`]): any bytes as a
/// certificate give a time or `None`, never a panic, and a chain built from
/// the input's two halves gives the earlier of their times, or `None` when
/// either has none.
pub fn cert_expiry(data: &[u8]) {
    use rustls_pki_types::CertificateDer;
    let _ = crate::cert_expiry::not_after(data);
    let (a, b) = data.split_at(data.len() / 2);
    let chain = [CertificateDer::from(a), CertificateDer::from(b)];
    let earliest = crate::cert_expiry::earliest_not_after(&chain);
    match [a, b].map(crate::cert_expiry::not_after) {
        [Some(x), Some(y)] => assert_eq!(earliest, Some(x.min(y))),
        _ => assert_eq!(earliest, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harnesses_survive_sample_inputs() {
        let good = crate::client_core::build_request(&[15]).expect("valid");
        let core =
            KeServerCore::new(ServerCoreConfig::default(), Arc::new(FixedIssuer)).expect("valid");
        let response = core.respond(&good, &FakeExporter).bytes;
        let mut inputs: Vec<Vec<u8>> = vec![
            vec![],
            vec![0x80],
            vec![0x80, 0, 0, 0],
            vec![0xff; 40],
            good.clone(),
            response.clone(),
            // chrony 4.6.1's request: AEAD [30, 15] and its compliant-128gcm record.
            vec![
                0x80, 1, 0, 2, 0, 0, 0x80, 4, 0, 4, 0, 30, 0, 15, 4, 0, 0, 0, 0x80, 0, 0, 0,
            ],
        ];
        for n in 0..good.len() {
            inputs.push(good[..n].to_vec());
        }
        for n in 0..response.len() {
            inputs.push(response[..n].to_vec());
        }
        for pool in [
            crate::pool_record::PoolRecord::SupportedAlgorithms(vec![]),
            crate::pool_record::PoolRecord::FixedKey {
                c2s: vec![1; 32],
                s2c: vec![2; 32],
            },
        ] {
            let request = encode_records(&[
                crate::pool_record::PoolRecord::Authentication(FUZZ_POOL_TOKEN.into()).to_record(),
                crate::pool_record::PoolRecord::KeepAlive.to_record(),
                Record::NextProtocol(vec![0]),
                Record::AeadAlgorithm(vec![15]),
                pool.to_record(),
                Record::EndOfMessage,
            ])
            .expect("encodable");
            for n in 0..=request.len() {
                inputs.push(request[..n].to_vec());
            }
        }
        for input in &inputs {
            records(input);
            server_request(input);
            pool_member_request(input);
            client_response(input);
            pool_backend_response(input);
            balancer_request(input);
            cert_expiry(input);
        }
    }
}
