//! Client-side verification of a response (draft-ietf-ntp-roughtime-19 §5.4).

use ed25519_dalek::{Signature, VerifyingKey};

use crate::error::Error;
use crate::merkle::root_from_path;
use crate::message::{self, Message};
use crate::tags::Tag;
use crate::version::{self, Contexts, Version};

/// What a valid response proves: the server signed `midpoint` ± `radius`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// The version the server answered with.
    pub version: Version,
    /// MIDP, seconds since the Unix epoch.
    pub midpoint: u64,
    /// RADI, seconds.
    pub radius: u32,
    /// The online key's delegation window (MINT, MAXT).
    pub delegation: (u64, u64),
}

/// Verifies `response` (a packet) against the `request` packet that was sent
/// and the server's long-term Ed25519 public key, with the context strings of
/// the version the response names.
pub fn verify_response(
    request: &[u8],
    response: &[u8],
    long_term_key: &[u8; 32],
) -> Result<Verified, Error> {
    verify_response_with(request, response, long_term_key, |v| v.contexts())
}

/// [`verify_response`] with the context strings chosen by the caller for the
/// version the response names (see [`crate::version`] on why they may differ
/// between peers).
pub fn verify_response_with(
    request: &[u8],
    response: &[u8],
    long_term_key: &[u8; 32],
    contexts: impl Fn(Version) -> Contexts,
) -> Result<Verified, Error> {
    let req = Message::parse(message::unframe(request)?)?;
    let offered = version::version_list(req.require(Tag::VER)?)?;
    let nonce = req.require_array::<32>(Tag::NONC)?;

    let resp = Message::parse(message::unframe(response)?)?;
    if resp.get(Tag::TYPE).is_some() {
        let kind = resp.require_u32(Tag::TYPE)?;
        if kind != 1 {
            return Err(Error::WrongType(kind));
        }
    }
    if resp.require_array::<32>(Tag::NONC)? != nonce {
        return Err(Error::NonceMismatch);
    }
    let srep_bytes = resp.require(Tag::SREP)?;
    let srep = Message::parse(srep_bytes)?;
    let wire_version = srep.require_u32(Tag::VER)?;
    if !offered.contains(&wire_version) {
        return Err(Error::VersionNotOffered(wire_version));
    }
    let version = Version::from_wire(wire_version).ok_or(Error::NoCommonVersion)?;
    let ctx = contexts(version);

    let cert = Message::parse(resp.require(Tag::CERT)?)?;
    let dele_bytes = cert.require(Tag::DELE)?;
    check_signature(
        long_term_key,
        ctx.delegation,
        dele_bytes,
        &cert.require_array::<64>(Tag::SIG)?,
    )
    .map_err(|_| Error::BadDelegationSignature)?;
    let dele = Message::parse(dele_bytes)?;
    let online_key = dele.require_array::<32>(Tag::PUBK)?;
    let mint = dele.require_u64(Tag::MINT)?;
    let maxt = dele.require_u64(Tag::MAXT)?;

    check_signature(
        &online_key,
        ctx.response,
        srep_bytes,
        &resp.require_array::<64>(Tag::SIG)?,
    )
    .map_err(|_| Error::BadResponseSignature)?;

    let root = srep.require_array::<32>(Tag::ROOT)?;
    let index = resp.require_u32(Tag::INDX)?;
    if root_from_path(request, index, resp.require(Tag::PATH)?) != Some(root) {
        return Err(Error::MerkleMismatch);
    }

    let midpoint = srep.require_u64(Tag::MIDP)?;
    let radius = srep.require_u32(Tag::RADI)?;
    if radius == 0 {
        return Err(Error::ZeroRadius);
    }
    if midpoint < mint || midpoint > maxt {
        return Err(Error::OutsideDelegation {
            midpoint,
            mint,
            maxt,
        });
    }
    Ok(Verified {
        version,
        midpoint,
        radius,
        delegation: (mint, maxt),
    })
}

/// Strict Ed25519 verification of `context || value`.
pub(crate) fn check_signature(
    key: &[u8; 32],
    context: &[u8],
    value: &[u8],
    signature: &[u8; 64],
) -> Result<(), Error> {
    let key = VerifyingKey::from_bytes(key).map_err(|_| Error::BadPublicKey)?;
    let mut signed = Vec::with_capacity(context.len() + value.len());
    signed.extend_from_slice(context);
    signed.extend_from_slice(value);
    key.verify_strict(&signed, &Signature::from_bytes(signature))
        .map_err(|_| Error::BadResponseSignature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{chained_nonce, parse_request};
    use crate::version::{DRAFT_CONTEXTS, RFC_CONTEXTS};
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    fn b64(s: &str) -> Vec<u8> {
        STANDARD.decode(s).unwrap()
    }

    fn key32(s: &str) -> [u8; 32] {
        b64(s).try_into().unwrap()
    }

    // roughenough (github.com/int08h/roughenough, commit 7534d16, version 2.0.0),
    // crates/roughenough-protocol/testdata/rfc-{request,response}.071039e5 and
    // the long-term key from its testdata/README.md: a captured 0x8000000c
    // exchange ("RFC draft14"), single request, recorded May 22 2025.
    const ROUGHENOUGH_REQUEST: &[u8] =
        include_bytes!("../testdata/roughenough-rfc-request.071039e5");
    const ROUGHENOUGH_RESPONSE: &[u8] =
        include_bytes!("../testdata/roughenough-rfc-response.071039e5");
    const ROUGHENOUGH_KEY: &str = "AW5uAoTSTDfG5NfY1bTh08GUnOqlRb+HVhbJ3ODJvsE=";

    #[test]
    fn roughenough_rfc_response_071039e5_verifies() {
        let key = key32(ROUGHENOUGH_KEY);
        let verified = verify_response(ROUGHENOUGH_REQUEST, ROUGHENOUGH_RESPONSE, &key).unwrap();
        assert_eq!(verified.version, Version::Draft12);
        // README: MIDP(8) = 02842f6800000000, RADI(4) = 05000000.
        assert_eq!(verified.midpoint, 0x682f_8402);
        assert_eq!(verified.radius, 5);
        assert_eq!(verified.delegation, (0, u64::MAX));
        // The RFC text's lower-case strings do not verify it.
        assert_eq!(
            verify_response_with(ROUGHENOUGH_REQUEST, ROUGHENOUGH_RESPONSE, &key, |_| {
                RFC_CONTEXTS
            }),
            Err(Error::BadDelegationSignature)
        );
    }

    #[test]
    fn roughenough_2_2_rfc10049_response_104172a3_verifies() {
        // roughenough-protocol 2.2.0 (crates.io), testdata/rfc10049-{request,response}.104172a3
        // and the key from its testdata/README.md: a version 1 exchange made
        // by roughenough's own server (MIDP 2026-10-05T00:00:00Z), signed,
        // says that README, with RFC 10049's "Roughtime v1 ..." strings.
        let request = include_bytes!("../testdata/roughenough-2.2.0-rfc10049-request.104172a3");
        let response = include_bytes!("../testdata/roughenough-2.2.0-rfc10049-response.104172a3");
        let key = key32("GX9rI+FshTLGq8g4+s1ep4m+DHaykgM0A5v6iz02jWE=");
        let verified = verify_response(request, response, &key).unwrap();
        assert_eq!(verified.version, Version::Rfc1);
        assert_eq!(verified.midpoint, 1_791_158_400);
        assert_eq!(
            verify_response_with(request, response, &key, |_| DRAFT_CONTEXTS),
            Err(Error::BadDelegationSignature)
        );
    }

    #[test]
    fn roughenough_response_path8_index2_decodes() {
        // roughenough 7534d16, testdata/rfc-response.path8.index2.4c16c619: a
        // response from a batch (PATH of 8 nodes, INDX 2). Its request is not
        // published, so only the structure and the CERT can be checked.
        let packet = include_bytes!("../testdata/roughenough-rfc-response.path8.index2.4c16c619");
        let msg = Message::parse(message::unframe(packet).unwrap()).unwrap();
        assert_eq!(msg.require(Tag::PATH).unwrap().len(), 8 * 32);
        assert_eq!(msg.require_u32(Tag::INDX).unwrap(), 2);
        assert_eq!(msg.require_u32(Tag::TYPE).unwrap(), 1);
        assert_eq!(
            hex::encode(&msg.require(Tag::NONC).unwrap()[..4]),
            "4c16c619"
        );
        let srep = Message::parse(msg.require(Tag::SREP).unwrap()).unwrap();
        assert_eq!(srep.require_u32(Tag::VER).unwrap(), 0x8000_000c);
        let cert = Message::parse(msg.require(Tag::CERT).unwrap()).unwrap();
        let dele = Message::parse(cert.require(Tag::DELE).unwrap()).unwrap();
        let online_key = dele.require_array::<32>(Tag::PUBK).unwrap();
        // The online key's signature over SREP verifies with the draft's string.
        check_signature(
            &online_key,
            DRAFT_CONTEXTS.response,
            msg.require(Tag::SREP).unwrap(),
            &msg.require_array::<64>(Tag::SIG).unwrap(),
        )
        .unwrap();
    }

    #[test]
    fn draft_19_appendix_b_is_signed_with_the_draft_context() {
        // draft-ietf-ntp-roughtime-19, Appendix B "Example Malfeasance Report"
        // (JSON copied from the draft's text, page breaks removed). Its
        // requests offer version 1 only and carry SRV.
        let report: &str = include_str!("../testdata/draft-ietf-ntp-roughtime-19-appendix-b.json");
        let entries = appendix_b_entries(report);
        assert_eq!(entries.len(), 3);
        let mut intervals = Vec::new();
        let mut previous_response: Option<Vec<u8>> = None;
        for (key, rand, request, response) in &entries {
            let key = key32(key);
            let parsed = parse_request(request).unwrap();
            assert_eq!(parsed.version, Version::Rfc1);
            assert_eq!(parsed.srv, Some(crate::request::srv_value(&key)));
            // §8.2 nonce chaining: each nonce is H(previous response || rand).
            if let (Some(prev), Some(rand)) = (&previous_response, rand) {
                let rand: [u8; 32] = b64(rand).try_into().unwrap();
                assert_eq!(parsed.nonce, chained_nonce(prev, &rand));
            }
            let verified =
                verify_response_with(request, response, &key, |_| DRAFT_CONTEXTS).unwrap();
            assert_eq!(verified.version, Version::Rfc1);
            // ... and not with the RFC text's "Roughtime".
            assert_eq!(
                verify_response(request, response, &key),
                Err(Error::BadDelegationSignature)
            );
            intervals.push((verified.midpoint, verified.radius));
            previous_response = Some(response.clone());
        }
        // The causal-order violation the report proves: the first response
        // (FnDy...) ends a day after the two later ones (which agree) begin,
        // though they were requested after it, with chained nonces. The
        // appendix's prose names the third key (lRhH...) as the one at odds;
        // by the signed data it is the first server that is a day (86400 s)
        // ahead of the other two.
        assert_eq!(
            intervals,
            [(1_773_685_571, 3), (1_773_599_171, 3), (1_773_599_171, 3)]
        );
        let (m1, r1) = intervals[0];
        for &(m, r) in &intervals[1..] {
            assert!(m + u64::from(r) < m1 - u64::from(r1));
        }
    }

    type Entry = (String, Option<String>, Vec<u8>, Vec<u8>);

    /// The four string fields of each response object; a hand-rolled reader
    /// for this one file, so the crate needs no JSON dependency.
    fn appendix_b_entries(report: &str) -> Vec<Entry> {
        let field = |obj: &str, name: &str| -> Option<String> {
            let start = obj.find(&format!("\"{name}\""))?;
            let rest = &obj[start + name.len() + 2..];
            let open = rest.find('"')? + 1;
            let close = rest[open..].find('"')? + open;
            Some(rest[open..close].to_string())
        };
        report
            .split('{')
            .skip(2)
            .map(|obj| {
                (
                    field(obj, "publicKey").unwrap(),
                    field(obj, "rand"),
                    b64(&field(obj, "request").unwrap()),
                    b64(&field(obj, "response").unwrap()),
                )
            })
            .collect()
    }

    #[test]
    fn every_truncation_of_a_valid_response_is_an_error() {
        let key = key32(ROUGHENOUGH_KEY);
        for len in 0..ROUGHENOUGH_RESPONSE.len() {
            assert!(
                verify_response(ROUGHENOUGH_REQUEST, &ROUGHENOUGH_RESPONSE[..len], &key).is_err()
            );
            // With the length field fixed up, the message itself is truncated.
            if len >= 12 {
                let mut fixed = ROUGHENOUGH_RESPONSE[..len].to_vec();
                fixed[8..12].copy_from_slice(&((len - 12) as u32).to_le_bytes());
                assert!(
                    verify_response(ROUGHENOUGH_REQUEST, &fixed, &key).is_err(),
                    "{len}"
                );
            }
        }
    }

    #[test]
    fn every_flipped_bit_of_a_valid_response_is_an_error_or_harmless() {
        let key = key32(ROUGHENOUGH_KEY);
        let good = verify_response(ROUGHENOUGH_REQUEST, ROUGHENOUGH_RESPONSE, &key).unwrap();
        for bit in 0..ROUGHENOUGH_RESPONSE.len() * 8 {
            let mut bad = ROUGHENOUGH_RESPONSE.to_vec();
            bad[bit / 8] ^= 1 << (bit % 8);
            // A flip may only leave the result unchanged where no check reads
            // it (e.g. MINT/MAXT bytes are signed, so none should): whatever
            // verifies must say exactly what the original said.
            if let Ok(v) = verify_response(ROUGHENOUGH_REQUEST, &bad, &key) {
                assert_eq!(v, good, "bit {bit}");
            }
        }
    }
}
