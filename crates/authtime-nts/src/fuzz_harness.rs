//! Entry points for the cargo-fuzz targets in `fuzz/fuzz_targets/nts_*.rs`.
//! Each takes arbitrary bytes and must never panic; the assertions here are
//! the properties the fuzzer checks.

use std::sync::OnceLock;

use authtime_wire::{Header, Mode, NtpTimestamp};

use crate::aead::AeadAlgorithm;
use crate::client::{PendingRequest, build_request, check_response};
use crate::cookie::{SessionKeys, open_cookie, seal_cookie};
use crate::extension::{Authenticator, NtsPacket, inner_fields};
use crate::key_ring::{KeyRing, RotationPolicy};
use crate::server::{NtsServer, ServerAction};

/// The fixed time of the fuzz world.
const NOW: u64 = 1_800_000_000;

/// A deterministic byte source (not random: reproducible runs).
fn seeded_rng(seed: u64) -> impl FnMut(&mut [u8]) {
    let mut state = seed;
    move |buf: &mut [u8]| {
        for b in buf {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *b = state.to_be_bytes()[0];
        }
    }
}

struct World {
    ring: KeyRing,
    keys: SessionKeys,
    cookie: Vec<u8>,
    request: Vec<u8>,
    /// A request of the shape a receive batch answers together (no
    /// placeholder).
    plain_request: Vec<u8>,
    pending: PendingRequest,
    reply: Vec<u8>,
}

fn world() -> Option<&'static World> {
    static WORLD: OnceLock<Option<World>> = OnceLock::new();
    WORLD
        .get_or_init(|| {
            let mut rng = seeded_rng(0x9e37_79b9_7f4a_7c15);
            let ring = KeyRing::new(RotationPolicy::default()).plan(NOW, &mut rng)?;
            let alg = AeadAlgorithm::AesSivCmac256;
            let keys = SessionKeys::new(alg, &[1; 32], &[2; 32]).ok()?;
            let mut cookie = vec![0u8; 256];
            let n = seal_cookie(ring.sealing_key(NOW)?, &keys, &mut rng, &mut cookie).ok()?;
            cookie.truncate(n);
            let mut header = Header::new(Mode::Client);
            header.transmit_ts = NtpTimestamp::from_parts(0xeeee_0000, 1);
            let mut request = vec![0u8; 1500];
            let pending = build_request(&header, &keys, &cookie, 2, &mut rng, &mut request).ok()?;
            request.truncate(pending.len());
            let mut plain_request = vec![0u8; 1500];
            let plain =
                build_request(&header, &keys, &cookie, 0, &mut rng, &mut plain_request).ok()?;
            plain_request.truncate(plain.len());
            let mut reply = vec![0u8; request.len()];
            let action = NtsServer::new()
                .respond(&request, &reply_header(), &ring, NOW, &mut rng, &mut reply)
                .ok()?;
            let ServerAction::Reply { len, .. } = action else {
                return None;
            };
            reply.truncate(len);
            Some(World {
                ring,
                keys,
                cookie,
                request,
                plain_request,
                pending,
                reply,
            })
        })
        .as_ref()
}

fn reply_header() -> Header {
    let mut h = Header::new(Mode::Server);
    h.stratum = 2;
    h.origin_ts = NtpTimestamp::from_parts(0xeeee_0000, 1);
    h
}

/// Inputs starting with this byte are edits of a valid packet: the rest is
/// read as (offset, xor) pairs, so the fuzzer reaches the crypto checks.
const MUTATE: u8 = 0xa5;

fn mutated(base: &[u8], data: &[u8]) -> Vec<u8> {
    let mut packet = base.to_vec();
    for pair in data.chunks_exact(2) {
        if let [offset, xor] = pair
            && !packet.is_empty()
        {
            let i = usize::from(*offset) * 7 % packet.len();
            if let Some(b) = packet.get_mut(i) {
                *b ^= *xor;
            }
        }
    }
    packet
}

fn input(base: &[u8], data: &[u8]) -> Vec<u8> {
    match data.split_first() {
        Some((&MUTATE, edits)) => mutated(base, edits),
        _ => data.to_vec(),
    }
}

/// NTS extension-field parsing: the packet view, the authenticator body and
/// the inner-field reader on arbitrary bytes.
pub fn extension_fields(data: &[u8]) {
    if let Ok(packet) = NtsPacket::parse(data) {
        assert!(packet.associated_data().len() <= data.len());
        for field in packet.plaintext_fields() {
            assert!(field.len() >= 16);
        }
        if let Some(auth) = packet.authenticator() {
            let _ = auth.meets_padding_rule(16);
        }
    }
    let _ = Authenticator::decode(data);
    for field in inner_fields(data) {
        let _ = field;
    }
}

/// Cookie opening on arbitrary bytes (and on edits of a valid cookie): only a
/// cookie this ring sealed opens.
pub fn cookie_open(data: &[u8]) {
    let Some(w) = world() else { return };
    let cookie = input(&w.cookie, data);
    if let Ok(keys) = open_cookie(&w.ring, NOW, &cookie) {
        assert_eq!(keys.algorithm(), w.keys.algorithm());
        assert_eq!(cookie, w.cookie, "a forged cookie opened");
    }
}

/// The server on arbitrary requests (and edits of a valid one): never a
/// reply longer than the request, never a reply to a tampered request.
pub fn server_handle(data: &[u8]) {
    let Some(w) = world() else { return };
    let request = input(&w.request, data);
    let mut out = vec![0u8; request.len().max(48)];
    let mut rng = seeded_rng(7);
    let server = NtsServer::new();
    match server.respond(&request, &reply_header(), &w.ring, NOW, &mut rng, &mut out) {
        Ok(ServerAction::Reply { len, cookies }) => {
            assert!(len <= request.len());
            assert!((1..=8).contains(&cookies));
            assert_eq!(
                authenticated_parts(&request),
                authenticated_parts(&w.request),
                "a tampered request was answered"
            );
        }
        Ok(ServerAction::Nak { len, .. }) => assert!(len <= request.len()),
        Err(e) => assert!(!e.name().is_empty()),
    }
}

/// The batched NTS server against the one-at-a-time one: the input's first
/// byte picks how many requests (1 to 8) the rest is cut into, each an
/// arbitrary packet or (with the [`MUTATE`] prefix) an edit of a valid one;
/// every request must get the same answer both ways (the same reply length
/// and cookie count, the same NAK, or the same drop).
pub fn server_batch(data: &[u8]) {
    let Some(w) = world() else { return };
    let Some((&count, rest)) = data.split_first() else {
        return;
    };
    let count = usize::from(count % 8) + 1;
    let piece = rest.len().div_ceil(count).max(1);
    let mut requests: Vec<Vec<u8>> = rest
        .chunks(piece)
        .map(|chunk| input(&w.plain_request, chunk))
        .collect();
    requests.resize(count, w.plain_request.clone());
    let server = NtsServer::new();
    let views: Vec<&[u8]> = requests.iter().map(Vec::as_slice).collect();
    let mut bufs: Vec<Vec<u8>> = requests
        .iter()
        .map(|r| vec![0u8; r.len().max(48)])
        .collect();
    let mut prepared: Vec<crate::PreparedNts> = requests
        .iter()
        .map(|_| crate::PreparedNts::default())
        .collect();
    {
        let mut outs: Vec<&mut [u8]> = bufs.iter_mut().map(Vec::as_mut_slice).collect();
        server.prepare_batch(
            &views,
            &w.ring,
            NOW,
            &mut seeded_rng(3),
            &mut outs,
            &mut prepared,
        );
    }
    for ((request, p), out) in requests.iter().zip(&prepared).zip(&mut bufs) {
        let batched = server.finish(request, p, &w.ring, NOW, &mut seeded_rng(5), out, |_| {
            reply_header()
        });
        let mut alone_out = vec![0u8; request.len().max(48)];
        let alone = server.respond(
            request,
            &reply_header(),
            &w.ring,
            NOW,
            &mut seeded_rng(7),
            &mut alone_out,
        );
        assert_eq!(batched, alone, "the batch answered a request differently");
        if let Ok(ServerAction::Reply { .. }) = batched {
            assert_eq!(
                authenticated_parts(request),
                authenticated_parts(&w.plain_request),
                "a tampered request was answered"
            );
        }
    }
}

/// What the authenticator of a request covers: associated data, nonce and
/// ciphertext.
fn authenticated_parts(request: &[u8]) -> Option<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let packet = NtsPacket::parse(request).ok()?;
    let auth = packet.authenticator()?;
    Some((
        packet.associated_data().to_vec(),
        auth.nonce.to_vec(),
        auth.ciphertext.to_vec(),
    ))
}

/// The client on arbitrary replies (and edits of a valid one): only the
/// untouched reply is accepted with cookies.
pub fn client_response(data: &[u8]) {
    let Some(w) = world() else { return };
    let reply = input(&w.reply, data);
    if let Ok(crate::client::ClientOutcome::Time { cookies, .. }) =
        check_response(&reply, &w.pending, &w.keys)
    {
        assert!(cookies.len() <= 8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_builds_and_valid_inputs_pass() {
        let w = world().expect("world");
        assert!(open_cookie(&w.ring, NOW, &w.cookie).is_ok());
        assert!(matches!(
            check_response(&w.reply, &w.pending, &w.keys),
            Ok(crate::client::ClientOutcome::Time { ref cookies, .. }) if cookies.len() == 3
        ));
    }

    #[test]
    fn harnesses_survive_assorted_inputs() {
        let mut inputs: Vec<Vec<u8>> = vec![vec![], vec![0; 47], vec![0x23; 48], vec![0xff; 300]];
        for seed in 1..40u64 {
            let mut rng = seeded_rng(seed);
            let mut edits = vec![0u8; 1 + (seed as usize % 9) * 2];
            rng(&mut edits);
            edits[0] = MUTATE;
            inputs.push(edits);
            let mut random = vec![0u8; (seed as usize * 37) % 400];
            rng(&mut random);
            inputs.push(random);
        }
        inputs.push(vec![MUTATE]);
        for data in &inputs {
            extension_fields(data);
            cookie_open(data);
            server_handle(data);
            client_response(data);
        }
        if let Some(w) = world() {
            extension_fields(&w.request);
            extension_fields(&w.reply);
        }
    }
}
