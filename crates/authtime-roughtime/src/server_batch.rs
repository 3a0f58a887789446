//! The server core: one receive batch of request packets in, one response
//! per request out, with one Merkle tree and one Ed25519 signature per
//! version present in the batch (draft-ietf-ntp-roughtime-19 §5.2, §5.3).
//!
//! Sans-IO: the time (midpoint and radius) and the keys are inputs. The
//! caller decides where RADI comes from, and must not call this at all
//! while its clock is unsynchronized.

use crate::delegation::OnlineKey;
use crate::error::Error;
use crate::merkle::{MerkleTree, leaf_hash};
use crate::message;
use crate::request::{MIN_REQUEST_PACKET, Request, parse_request};
use crate::tags::Tag;
use crate::version::{SUPPORTED_WIRE, Version};

/// The time a batch is answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchTime {
    /// MIDP: seconds since the Unix epoch at the moment of processing.
    pub midpoint: u64,
    /// RADI: seconds; the true time must lie within midpoint ± radius. Never zero.
    pub radius: u32,
}

/// Answers a batch. The outer error refuses the whole batch (zero radius,
/// a midpoint outside the online key's delegation, an empty or oversized
/// batch); the inner results say, per request and in input order, whether it
/// is answered (the response packet) or dropped (why).
///
/// `srv` is [`crate::request::srv_value`] of this server's long-term key:
/// requests whose SRV names another key are dropped (§5.2 step 1).
pub fn respond_batch(
    requests: &[&[u8]],
    time: BatchTime,
    key: &OnlineKey,
    srv: &[u8; 32],
) -> Result<Vec<Result<Vec<u8>, Error>>, Error> {
    if time.radius == 0 {
        return Err(Error::ZeroRadius);
    }
    if requests.is_empty() || u32::try_from(requests.len()).is_err() {
        return Err(Error::BadBatchSize(requests.len()));
    }
    if !key.covers(time.midpoint) {
        let (mint, maxt) = key.window();
        return Err(Error::OutsideDelegation {
            midpoint: time.midpoint,
            mint,
            maxt,
        });
    }
    let parsed: Vec<Result<Request<'_>, Error>> = requests
        .iter()
        .map(|packet| accept_request(packet, srv))
        .collect();
    let mut out: Vec<Result<Vec<u8>, Error>> = parsed
        .iter()
        .map(|p| p.as_ref().map(|_| Vec::new()).map_err(Clone::clone))
        .collect();
    for version in [Version::Draft12, Version::Rfc1] {
        let members: Vec<(usize, &Request<'_>)> = parsed
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().ok().map(|r| (i, r)))
            .filter(|(_, r)| r.version == version)
            .collect();
        if members.is_empty() {
            continue;
        }
        let group = answer_group(version, &members, time, key)?;
        for ((i, _), response) in members.iter().zip(group) {
            out[*i] = response;
        }
    }
    Ok(out)
}

fn accept_request<'a>(packet: &'a [u8], srv: &[u8; 32]) -> Result<Request<'a>, Error> {
    if packet.len() < MIN_REQUEST_PACKET {
        return Err(Error::RequestTooShort(packet.len()));
    }
    let request = parse_request(packet)?;
    if request.srv.as_ref().is_some_and(|s| s != srv) {
        return Err(Error::UnknownServerKey);
    }
    Ok(request)
}

/// One tree, one SREP, one signature for the requests of one version.
fn answer_group(
    version: Version,
    members: &[(usize, &Request<'_>)],
    time: BatchTime,
    key: &OnlineKey,
) -> Result<Vec<Result<Vec<u8>, Error>>, Error> {
    let leaves = members.iter().map(|(_, r)| leaf_hash(r.packet)).collect();
    let tree = MerkleTree::new(leaves).ok_or(Error::BadBatchSize(0))?;
    let root = tree.root();
    let vers: Vec<u8> = SUPPORTED_WIRE
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let srep = message::encode(&[
        (Tag::VER, &version.wire().to_le_bytes()),
        (Tag::RADI, &time.radius.to_le_bytes()),
        (Tag::MIDP, &time.midpoint.to_le_bytes()),
        (Tag::VERS, &vers),
        (Tag::ROOT, &root),
    ])?;
    let sig = key.sign_srep(version, &srep);
    let cert = key.cert(version);
    let one = 1u32.to_le_bytes();
    let mut responses = Vec::with_capacity(members.len());
    for (leaf, (_, request)) in members.iter().enumerate() {
        let path = tree.path(leaf);
        // `respond_batch` caps the batch at u32::MAX requests.
        let index = (leaf as u32).to_le_bytes();
        let msg = message::encode(&[
            (Tag::SIG, &sig),
            (Tag::NONC, &request.nonce),
            (Tag::TYPE, &one),
            (Tag::PATH, &path),
            (Tag::SREP, &srep),
            (Tag::CERT, cert),
            (Tag::INDX, &index),
        ])?;
        let packet = message::frame(&msg);
        responses.push(if packet.len() > request.packet.len() {
            Err(Error::ResponseTooLarge {
                request: request.packet.len(),
                response: packet.len(),
            })
        } else {
            Ok(packet)
        });
    }
    Ok(responses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::request::{build_request, srv_value};
    use crate::verify::verify_response;
    use ed25519_dalek::SigningKey;

    const NOW: u64 = 1_764_000_000;

    struct Server {
        long_term: [u8; 32],
        key: OnlineKey,
        srv: [u8; 32],
    }

    fn server() -> Server {
        let long_term = SigningKey::from_bytes(&[0x11; 32]);
        let public = long_term.verifying_key().to_bytes();
        let online = SigningKey::from_bytes(&[0x22; 32]);
        let key = OnlineKey::delegate(&long_term, online, NOW - 3600, NOW + 3600).unwrap();
        Server {
            long_term: public,
            key,
            srv: srv_value(&public),
        }
    }

    fn requests(n: usize, versions: &[Version], srv: Option<&[u8; 32]>) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut nonce = [0u8; 32];
                nonce[..8].copy_from_slice(&(i as u64).to_le_bytes());
                build_request(versions, &nonce, srv).unwrap()
            })
            .collect()
    }

    fn sig_of(packet: &[u8]) -> Vec<u8> {
        let msg = Message::parse(crate::message::unframe(packet).unwrap()).unwrap();
        msg.require(Tag::SIG).unwrap().to_vec()
    }

    #[test]
    fn batches_verify_with_the_client_core_for_both_versions() {
        let s = server();
        let time = BatchTime {
            midpoint: NOW,
            radius: 3,
        };
        for version in [Version::Draft12, Version::Rfc1] {
            for n in [1usize, 2, 3, 64] {
                let reqs = requests(n, &[version], Some(&s.srv));
                let refs: Vec<&[u8]> = reqs.iter().map(Vec::as_slice).collect();
                let out = respond_batch(&refs, time, &s.key, &s.srv).unwrap();
                assert_eq!(out.len(), n);
                for (req, resp) in reqs.iter().zip(&out) {
                    let resp = resp.as_ref().unwrap();
                    assert!(resp.len() <= req.len());
                    let v = verify_response(req, resp, &s.long_term).unwrap();
                    assert_eq!((v.version, v.midpoint, v.radius), (version, NOW, 3));
                }
                // One signature for the whole batch.
                let first = sig_of(out[0].as_ref().unwrap());
                assert!(out.iter().all(|r| sig_of(r.as_ref().unwrap()) == first));
            }
        }
    }

    #[test]
    fn a_mixed_batch_gets_one_tree_per_version() {
        let s = server();
        let time = BatchTime {
            midpoint: NOW,
            radius: 5,
        };
        let mut reqs = requests(3, &[Version::Draft12], None);
        reqs.extend(requests(2, &[Version::Draft12, Version::Rfc1], None));
        reqs.swap(1, 3);
        let refs: Vec<&[u8]> = reqs.iter().map(Vec::as_slice).collect();
        let out = respond_batch(&refs, time, &s.key, &s.srv).unwrap();
        let versions: Vec<Version> = reqs
            .iter()
            .zip(&out)
            .map(|(q, r)| {
                verify_response(q, r.as_ref().unwrap(), &s.long_term)
                    .unwrap()
                    .version
            })
            .collect();
        use Version::{Draft12 as D, Rfc1 as R};
        assert_eq!(versions, [D, R, D, D, R]);
        assert_eq!(
            sig_of(out[0].as_ref().unwrap()),
            sig_of(out[2].as_ref().unwrap())
        );
        assert_ne!(
            sig_of(out[0].as_ref().unwrap()),
            sig_of(out[1].as_ref().unwrap())
        );
    }

    #[test]
    fn bad_requests_are_dropped_and_the_rest_answered() {
        let s = server();
        let time = BatchTime {
            midpoint: NOW,
            radius: 1,
        };
        let good = requests(1, &[Version::Rfc1], None).remove(0);
        let other_srv = requests(1, &[Version::Rfc1], Some(&[7u8; 32])).remove(0);
        let short = good[..1023].to_vec();
        let garbage = vec![0u8; 1100];
        let refs: Vec<&[u8]> = vec![&good, &other_srv, &short, &garbage];
        let out = respond_batch(&refs, time, &s.key, &s.srv).unwrap();
        verify_response(&good, out[0].as_ref().unwrap(), &s.long_term).unwrap();
        assert_eq!(out[1], Err(Error::UnknownServerKey));
        assert_eq!(out[2], Err(Error::RequestTooShort(1023)));
        assert_eq!(out[3], Err(Error::BadMagic));
    }

    #[test]
    fn roughenough_1024_byte_request_is_answered() {
        // roughenough's request (a 1024-byte packet) from the verify tests.
        let s = server();
        let req: &[u8] = include_bytes!("../testdata/roughenough-rfc-request.071039e5");
        let time = BatchTime {
            midpoint: NOW,
            radius: 1,
        };
        let out = respond_batch(&[req], time, &s.key, &s.srv).unwrap();
        let v = verify_response(req, out[0].as_ref().unwrap(), &s.long_term).unwrap();
        assert_eq!(v.version, Version::Draft12);
    }

    #[test]
    fn batch_level_refusals() {
        let s = server();
        let reqs = requests(1, &[Version::Rfc1], None);
        let refs: Vec<&[u8]> = reqs.iter().map(Vec::as_slice).collect();
        let zero = BatchTime {
            midpoint: NOW,
            radius: 0,
        };
        assert_eq!(
            respond_batch(&refs, zero, &s.key, &s.srv),
            Err(Error::ZeroRadius)
        );
        let late = BatchTime {
            midpoint: NOW + 3601,
            radius: 1,
        };
        assert!(matches!(
            respond_batch(&refs, late, &s.key, &s.srv),
            Err(Error::OutsideDelegation { .. })
        ));
        let ok = BatchTime {
            midpoint: NOW,
            radius: 1,
        };
        assert_eq!(
            respond_batch(&[], ok, &s.key, &s.srv),
            Err(Error::BadBatchSize(0))
        );
    }

    #[test]
    fn responses_do_not_verify_against_another_request_or_key() {
        let s = server();
        let reqs = requests(2, &[Version::Rfc1], None);
        let refs: Vec<&[u8]> = reqs.iter().map(Vec::as_slice).collect();
        let time = BatchTime {
            midpoint: NOW,
            radius: 1,
        };
        let out = respond_batch(&refs, time, &s.key, &s.srv).unwrap();
        let r0 = out[0].as_ref().unwrap();
        assert_eq!(
            verify_response(&reqs[1], r0, &s.long_term),
            Err(Error::NonceMismatch)
        );
        assert_eq!(
            verify_response(&reqs[0], r0, &[0x42; 32]).unwrap_err(),
            Error::BadDelegationSignature
        );
    }
}
