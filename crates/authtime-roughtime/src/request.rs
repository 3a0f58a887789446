//! Requests (draft-ietf-ntp-roughtime-19 §5.1): building one for a client,
//! and parsing one as a server does.

use sha2::{Digest, Sha512};

use crate::error::Error;
use crate::message::{self, Message};
use crate::tags::Tag;
use crate::version::{self, Version};

/// The smallest request packet a server answers (§5.1), header included.
/// roughenough's clients send packets of exactly 1024 bytes (a 1012-byte
/// message), so the whole packet is measured, not the message.
pub const MIN_REQUEST_PACKET: usize = 1024;

/// The size of the message a client built here pads to: 1024 bytes, as in
/// draft 19 §5.1 ("the request message SHOULD be at least 1024 bytes") and
/// its Appendix B requests (1036-byte packets).
pub const PADDED_MESSAGE_LEN: usize = 1024;

/// A request that parsed and offered a version we speak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// The version the response will use: the highest offered that we speak.
    pub version: Version,
    /// NONC.
    pub nonce: [u8; 32],
    /// SRV, when the client named the long-term key it expects.
    pub srv: Option<[u8; 32]>,
    /// The whole packet: the Merkle leaf is its hash (§5.3).
    pub packet: &'a [u8],
}

/// Parses a request packet as a server does, size limit aside (see
/// [`crate::server_batch`]): VER must offer a version we speak, NONC is 32
/// bytes, TYPE (when present, drafts before 14 lack it) is 0, SRV (when
/// present) is 32 bytes.
pub fn parse_request(packet: &[u8]) -> Result<Request<'_>, Error> {
    let msg = Message::parse(message::unframe(packet)?)?;
    let version = version::negotiate(msg.require(Tag::VER)?)?;
    let nonce = msg.require_array::<32>(Tag::NONC)?;
    if msg.get(Tag::TYPE).is_some() {
        let kind = msg.require_u32(Tag::TYPE)?;
        if kind != 0 {
            return Err(Error::WrongType(kind));
        }
    }
    let srv = match msg.get(Tag::SRV) {
        Some(_) => Some(msg.require_array::<32>(Tag::SRV)?),
        None => None,
    };
    Ok(Request {
        version,
        nonce,
        srv,
        packet,
    })
}

/// Builds a request packet offering `versions` (any order; sorted here) for
/// `nonce`, naming the server's long-term key with SRV when `srv` is given
/// (see [`srv_value`]), padded with ZZZZ to a 1024-byte message.
pub fn build_request(
    versions: &[Version],
    nonce: &[u8; 32],
    srv: Option<&[u8; 32]>,
) -> Result<Vec<u8>, Error> {
    let mut wire: Vec<u32> = versions.iter().map(|v| v.wire()).collect();
    wire.sort_unstable();
    wire.dedup();
    if wire.is_empty() {
        return Err(Error::BadVersionList);
    }
    let ver: Vec<u8> = wire.iter().flat_map(|v| v.to_le_bytes()).collect();
    let kind = 0u32.to_le_bytes();
    let mut entries: Vec<(Tag, &[u8])> =
        vec![(Tag::VER, &ver), (Tag::NONC, nonce), (Tag::TYPE, &kind)];
    if let Some(srv) = srv {
        entries.push((Tag::SRV, srv));
    }
    // The header grows by 8 bytes with the ZZZZ tag itself.
    let unpadded = message::encode(&entries)?.len() + 8;
    let padding = vec![0u8; PADDED_MESSAGE_LEN.saturating_sub(unpadded)];
    entries.push((Tag::ZZZZ, &padding));
    Ok(message::frame(&message::encode(&entries)?))
}

/// The SRV value naming a long-term public key: H(0xff || key) (§5.1.4).
pub fn srv_value(long_term_public_key: &[u8; 32]) -> [u8; 32] {
    first_32(
        Sha512::new()
            .chain_update([0xff])
            .chain_update(long_term_public_key),
    )
}

/// The nonce of a chained request: H(previous response packet || rand) (§8.2).
pub fn chained_nonce(previous_response: &[u8], rand: &[u8; 32]) -> [u8; 32] {
    first_32(
        Sha512::new()
            .chain_update(previous_response)
            .chain_update(rand),
    )
}

fn first_32(hasher: Sha512) -> [u8; 32] {
    let digest = hasher.finalize();
    let mut out = [0u8; 32];
    out.copy_from_slice(&digest[..32]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_requests_parse_back() {
        let nonce = [9u8; 32];
        let srv = srv_value(&[1u8; 32]);
        for srv in [None, Some(&srv)] {
            let packet = build_request(&[Version::Draft12, Version::Rfc1], &nonce, srv).unwrap();
            assert_eq!(packet.len(), 12 + PADDED_MESSAGE_LEN);
            let req = parse_request(&packet).unwrap();
            assert_eq!(req.version, Version::Rfc1);
            assert_eq!(req.nonce, nonce);
            assert_eq!(req.srv.as_ref(), srv);
        }
        let draft = build_request(&[Version::Draft12], &nonce, None).unwrap();
        assert_eq!(parse_request(&draft).unwrap().version, Version::Draft12);
    }

    #[test]
    fn roughenough_request_071039e5_parses() {
        // roughenough 7534d16 (2.0.0), crates/roughenough-protocol/testdata/rfc-request.071039e5
        // (its README: "Single request, no SRV tag, RFC draft14").
        let packet = include_bytes!("../testdata/roughenough-rfc-request.071039e5");
        let req = parse_request(packet).unwrap();
        assert_eq!(req.version, Version::Draft12);
        assert_eq!(
            hex::encode(req.nonce),
            "071039e5723323191eaa7449e64e0b839b7a11028cbd943c31b28bfb93fadb32"
        );
        assert_eq!(req.srv, None);
    }

    #[test]
    fn roughenough_request_with_srv_417aa962_parses() {
        // roughenough 7534d16 (2.0.0), testdata/rfc-request.SRV.417aa962: a
        // captured 0x8000000c request carrying SRV (its response is not published).
        let packet = include_bytes!("../testdata/roughenough-rfc-request.SRV.417aa962");
        let req = parse_request(packet).unwrap();
        assert_eq!(req.version, Version::Draft12);
        assert_eq!(hex::encode(&req.nonce[..4]), "417aa962");
        assert!(req.srv.is_some());
    }

    #[test]
    fn wrong_type_is_refused() {
        let nonce = [0u8; 32];
        let one = 1u32.to_le_bytes();
        let ver = 1u32.to_le_bytes();
        let msg =
            message::encode(&[(Tag::VER, &ver), (Tag::NONC, &nonce), (Tag::TYPE, &one)]).unwrap();
        assert_eq!(
            parse_request(&message::frame(&msg)),
            Err(Error::WrongType(1))
        );
    }

    #[test]
    fn every_truncation_of_a_valid_request_is_an_error() {
        let packet = build_request(&[Version::Rfc1], &[3u8; 32], None).unwrap();
        for len in 0..packet.len() {
            assert!(parse_request(&packet[..len]).is_err(), "{len}");
            if len >= 12 {
                let mut fixed = packet[..len].to_vec();
                fixed[8..12].copy_from_slice(&((len - 12) as u32).to_le_bytes());
                // Cutting only ZZZZ padding leaves a valid (shorter) request;
                // anything else must fail, and nothing may panic.
                if let Ok(req) = parse_request(&fixed) {
                    assert_eq!(req.nonce, [3u8; 32]);
                }
            }
        }
    }
}
