//! The Roughtime server core on whole batches (1 to 64 requests, as the
//! daemon's `recvmmsg` delivers them): any mix of valid and arbitrary
//! requests is answered or refused without a panic, every answer is no
//! larger than its request and verifies, and `respond_parsed` on the
//! accepted requests gives the same answers as `respond_batch` on the raw
//! ones. The Merkle leaves go through `authtime_mac::sha512_many`'s lanes.

#![no_main]

use authtime_roughtime::request::{MIN_REQUEST_PACKET, build_request, srv_value};
use authtime_roughtime::{
    BatchTime, OnlineKey, SigningKey, Version, parse_request, respond_batch, respond_parsed,
    verify_response,
};
use libfuzzer_sys::fuzz_target;

/// Splits `data` into 1 to 64 requests: a selector byte each, then either a
/// well-formed request (versions, nonce, SRV chosen by the bytes) or the
/// next 0 to 1535 bytes as they are.
fn requests(data: &[u8], srv: &[u8; 32]) -> Vec<Vec<u8>> {
    let Some((&count, mut rest)) = data.split_first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for _ in 0..=count % 64 {
        let Some((&selector, tail)) = rest.split_first() else {
            break;
        };
        rest = tail;
        if selector & 1 == 1 {
            let versions: &[Version] = match (selector >> 1) & 3 {
                0 => &[Version::Draft12],
                1 => &[Version::Rfc1],
                _ => &[Version::Draft12, Version::Rfc1],
            };
            let mut nonce = [selector; 32];
            let take = rest.len().min(32);
            nonce[..take].copy_from_slice(&rest[..take]);
            rest = &rest[take..];
            let other = [selector; 32];
            let named = match (selector >> 3) & 3 {
                0 => None,
                1 => Some(&other),
                _ => Some(srv),
            };
            if let Ok(request) = build_request(versions, &nonce, named) {
                out.push(request);
            }
        } else {
            let len = (usize::from(selector) * 6).min(rest.len());
            out.push(rest[..len].to_vec());
            rest = &rest[len..];
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let long_term = SigningKey::from_bytes(&[1; 32]);
    let public = long_term.verifying_key().to_bytes();
    let online = SigningKey::from_bytes(&[2; 32]);
    let key = OnlineKey::delegate(&long_term, online, 0, u64::MAX).expect("valid window");
    let srv = srv_value(&public);
    let time = BatchTime {
        midpoint: 1_764_000_000,
        radius: 1,
    };
    let owned = requests(data, &srv);
    let raw: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let Ok(answers) = respond_batch(&raw, time, &key, &srv) else {
        assert!(raw.is_empty(), "only an empty batch is refused whole");
        return;
    };
    assert_eq!(answers.len(), raw.len());
    let mut accepted = Vec::new();
    let mut accepted_answers = Vec::new();
    for (request, answer) in raw.iter().zip(&answers) {
        if let Ok(response) = answer {
            assert!(response.len() <= request.len());
            verify_response(request, response, &public).expect("own responses verify");
        }
        let parsed = parse_request(request)
            .ok()
            .filter(|_| request.len() >= MIN_REQUEST_PACKET)
            .filter(|r| r.srv.is_none_or(|s| s == srv));
        if let Some(parsed) = parsed {
            accepted.push(parsed);
            accepted_answers.push(answer.clone());
        }
    }
    if !accepted.is_empty() {
        let again = respond_parsed(&accepted, time, &key).expect("an accepted batch is answered");
        assert_eq!(again, accepted_answers);
    }
});
