//! The server core: one receive batch of request packets in, one response
//! per request out, with one Merkle tree and one Ed25519 signature per
//! version present in the batch (draft-ietf-ntp-roughtime-19 §5.2, §5.3).
//!
//! Sans-IO: the time (midpoint and radius) and the keys are inputs. The
//! caller decides where RADI comes from, and must not call this at all
//! while its clock is unsynchronized.

use crate::delegation::OnlineKey;
use crate::error::Error;
use crate::merkle::{MerkleTree, leaf_hashes};
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
///
/// A caller that has parsed the requests already (to filter them) calls
/// [`respond_parsed`] instead and saves the second parse.
pub fn respond_batch(
    requests: &[&[u8]],
    time: BatchTime,
    key: &OnlineKey,
    srv: &[u8; 32],
) -> Result<Vec<Result<Vec<u8>, Error>>, Error> {
    check_batch(requests.len(), time, key)?;
    let mut out: Vec<Result<Vec<u8>, Error>> = Vec::with_capacity(requests.len());
    let mut accepted = Vec::with_capacity(requests.len());
    for packet in requests {
        match accept_request(packet, srv) {
            Ok(request) => {
                accepted.push(request);
                out.push(Ok(Vec::new()));
            }
            Err(e) => out.push(Err(e)),
        }
    }
    if accepted.is_empty() {
        return Ok(out);
    }
    let answered = respond_parsed(&accepted, time, key)?;
    for (slot, response) in out.iter_mut().filter(|r| r.is_ok()).zip(answered) {
        *slot = response;
    }
    Ok(out)
}

/// Answers requests the caller has parsed with [`parse_request`] and
/// accepted (packet size at least [`MIN_REQUEST_PACKET`], SRV naming this
/// server's key or absent): one response per request, in order, or
/// [`Error::ResponseTooLarge`] where the response would outgrow its request.
/// The outer error refuses the whole batch, as in [`respond_batch`].
pub fn respond_parsed(
    requests: &[Request<'_>],
    time: BatchTime,
    key: &OnlineKey,
) -> Result<Vec<Result<Vec<u8>, Error>>, Error> {
    check_batch(requests.len(), time, key)?;
    let mut out: Vec<Result<Vec<u8>, Error>> = vec![Ok(Vec::new()); requests.len()];
    for version in [Version::Draft12, Version::Rfc1] {
        let members: Vec<(usize, &Request<'_>)> = requests
            .iter()
            .enumerate()
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

fn check_batch(len: usize, time: BatchTime, key: &OnlineKey) -> Result<(), Error> {
    if time.radius == 0 {
        return Err(Error::ZeroRadius);
    }
    if len == 0 || u32::try_from(len).is_err() {
        return Err(Error::BadBatchSize(len));
    }
    if !key.covers(time.midpoint) {
        let (mint, maxt) = key.window();
        return Err(Error::OutsideDelegation {
            midpoint: time.midpoint,
            mint,
            maxt,
        });
    }
    Ok(())
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

/// Where a group's per-request values sit in its response packets: every
/// response of a group has the same layout (same SREP, CERT and SIG, PATH
/// of the same length), so one template is encoded and each response is a
/// copy of it with NONC, PATH and INDX written in.
struct Template {
    packet: Vec<u8>,
    nonce: usize,
    path: usize,
    index: usize,
}

impl Template {
    fn new(entries: &[(Tag, &[u8])]) -> Result<Self, Error> {
        let packet = message::frame(&message::encode(entries)?);
        let msg = message::Message::parse(message::unframe(&packet)?)?;
        // Offsets from the packet's start, of values borrowed from it.
        let at = |tag: Tag| {
            msg.require(tag)
                .map(|v| v.as_ptr() as usize - packet.as_ptr() as usize)
        };
        let (nonce, path, index) = (at(Tag::NONC)?, at(Tag::PATH)?, at(Tag::INDX)?);
        Ok(Template {
            packet,
            nonce,
            path,
            index,
        })
    }
}

/// One tree, one SREP, one signature for the requests of one version.
fn answer_group(
    version: Version,
    members: &[(usize, &Request<'_>)],
    time: BatchTime,
    key: &OnlineKey,
) -> Result<Vec<Result<Vec<u8>, Error>>, Error> {
    let packets: Vec<&[u8]> = members.iter().map(|(_, r)| r.packet).collect();
    let tree = MerkleTree::new(leaf_hashes(&packets)).ok_or(Error::BadBatchSize(0))?;
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
    let path_len = tree.path_len();
    let template = Template::new(&[
        (Tag::SIG, &sig),
        (Tag::NONC, &[0u8; 32]),
        (Tag::TYPE, &1u32.to_le_bytes()),
        (Tag::PATH, &vec![0u8; path_len]),
        (Tag::SREP, &srep),
        (Tag::CERT, key.cert(version)),
        (Tag::INDX, &[0u8; 4]),
    ])?;
    let size = template.packet.len();
    let mut responses = Vec::with_capacity(members.len());
    for (leaf, (_, request)) in members.iter().enumerate() {
        if size > request.packet.len() {
            responses.push(Err(Error::ResponseTooLarge {
                request: request.packet.len(),
                response: size,
            }));
            continue;
        }
        let mut packet = template.packet.clone();
        let t = &template;
        packet[t.nonce..t.nonce + 32].copy_from_slice(&request.nonce);
        tree.write_path(leaf, &mut packet[t.path..t.path + path_len]);
        // `check_batch` caps the batch at u32::MAX requests.
        packet[t.index..t.index + 4].copy_from_slice(&(leaf as u32).to_le_bytes());
        responses.push(Ok(packet));
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

    /// The server core as it was before leaves were hashed in lanes and
    /// responses copied from a template: every request parsed on its own,
    /// each leaf hashed alone, each response encoded from scratch.
    fn one_at_a_time(
        requests: &[&[u8]],
        time: BatchTime,
        key: &OnlineKey,
        srv: &[u8; 32],
    ) -> Vec<Result<Vec<u8>, Error>> {
        let parsed: Vec<Result<Request<'_>, Error>> =
            requests.iter().map(|p| accept_request(p, srv)).collect();
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
            let leaves = members
                .iter()
                .map(|(_, r)| crate::merkle::leaf_hash(r.packet))
                .collect();
            let tree = MerkleTree::new(leaves).unwrap();
            let vers: Vec<u8> = SUPPORTED_WIRE
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            let srep = message::encode(&[
                (Tag::VER, &version.wire().to_le_bytes()),
                (Tag::RADI, &time.radius.to_le_bytes()),
                (Tag::MIDP, &time.midpoint.to_le_bytes()),
                (Tag::VERS, &vers),
                (Tag::ROOT, &tree.root()),
            ])
            .unwrap();
            let sig = key.sign_srep(version, &srep);
            for (leaf, (i, request)) in members.iter().enumerate() {
                let msg = message::encode(&[
                    (Tag::SIG, &sig),
                    (Tag::NONC, &request.nonce),
                    (Tag::TYPE, &1u32.to_le_bytes()),
                    (Tag::PATH, &tree.path(leaf)),
                    (Tag::SREP, &srep),
                    (Tag::CERT, key.cert(version)),
                    (Tag::INDX, &(leaf as u32).to_le_bytes()),
                ])
                .unwrap();
                let packet = message::frame(&msg);
                out[*i] = if packet.len() > request.packet.len() {
                    Err(Error::ResponseTooLarge {
                        request: request.packet.len(),
                        response: packet.len(),
                    })
                } else {
                    Ok(packet)
                };
            }
        }
        out
    }

    /// xorshift64: deterministic, so a failure reproduces.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A request of random versions, nonce, SRV (absent, ours or another)
    /// and padding (so that leaves differ in length), sometimes damaged.
    fn random_request(rng: &mut Rng, srv: &[u8; 32]) -> Vec<u8> {
        let versions: &[Version] = match rng.below(3) {
            0 => &[Version::Draft12],
            1 => &[Version::Rfc1],
            _ => &[Version::Draft12, Version::Rfc1],
        };
        let mut numbers: Vec<u32> = versions.iter().map(|v| v.wire()).collect();
        numbers.sort_unstable();
        let wire: Vec<u8> = numbers.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut nonce = [0u8; 32];
        nonce.iter_mut().for_each(|b| *b = rng.next() as u8);
        let other = [0x5a; 32];
        let named = match rng.below(3) {
            0 => None,
            1 => Some(srv),
            _ => Some(&other),
        };
        // Mostly long enough to be answered (1024 bytes and up), sometimes short.
        let words = if rng.below(8) == 0 {
            rng.below(300)
        } else {
            230 + rng.below(100)
        };
        let padding = vec![0u8; 4 * words as usize];
        let kind = 0u32.to_le_bytes();
        let mut entries: Vec<(Tag, &[u8])> =
            vec![(Tag::VER, &wire), (Tag::NONC, &nonce), (Tag::TYPE, &kind)];
        if let Some(named) = named {
            entries.push((Tag::SRV, named));
        }
        entries.push((Tag::ZZZZ, &padding));
        let mut packet = message::frame(&message::encode(&entries).unwrap());
        if rng.below(8) == 0 {
            let at = rng.below(packet.len() as u64) as usize;
            packet[at] ^= 1 << rng.below(8);
        }
        packet
    }

    #[test]
    fn batched_results_equal_one_at_a_time_on_random_input() {
        let s = server();
        let time = BatchTime {
            midpoint: NOW,
            radius: 2,
        };
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let mut answered = 0;
        for round in 0..200 {
            let n = 1 + (round % 64);
            let reqs: Vec<Vec<u8>> = (0..n).map(|_| random_request(&mut rng, &s.srv)).collect();
            let refs: Vec<&[u8]> = reqs.iter().map(Vec::as_slice).collect();
            let batched = respond_batch(&refs, time, &s.key, &s.srv).unwrap();
            assert_eq!(
                batched,
                one_at_a_time(&refs, time, &s.key, &s.srv),
                "round {round}"
            );
            for (req, resp) in refs.iter().zip(&batched) {
                if let Ok(resp) = resp {
                    verify_response(req, resp, &s.long_term).unwrap();
                    answered += 1;
                }
            }
            // The parsed entry point gives the same answers as the raw one.
            let accepted: Vec<Request<'_>> = refs
                .iter()
                .filter_map(|p| accept_request(p, &s.srv).ok())
                .collect();
            if !accepted.is_empty() {
                let parsed = respond_parsed(&accepted, time, &s.key).unwrap();
                let from_raw: Vec<_> = batched
                    .iter()
                    .zip(&refs)
                    .filter(|(_, p)| accept_request(p, &s.srv).is_ok())
                    .map(|(r, _)| r.clone())
                    .collect();
                assert_eq!(parsed, from_raw, "round {round}");
            }
        }
        assert!(answered > 1000, "{answered}");
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
