//! Entry points for the fuzz targets in `fuzz/`: each takes arbitrary bytes and
//! panics only when an invariant of the protocol code breaks. Keys are fixed,
//! and a flag lets the fuzzer have its MACs fixed up so that it gets past
//! authentication.

use authtime_keys::{KeyMaterial, KeySet, KeyType};
use authtime_wire::{HEADER_LEN, Mode, NtpTimestamp, Packet, Trailer, digest_len_on_wire};

use crate::{
    AuthFailurePolicy, BatchItem, ClientConfig, InterleavedClient, NoStats, REQUEST_RANDOM_LEN,
    RateVerdict, SampleMode, Server, ServerAction, ServerConfig, ServerCounters, build_request,
};

/// The fixed keys of the harnesses: ids 1 to 5, one per key type.
fn fuzz_keys() -> KeySet {
    let keys: Vec<KeyMaterial> = KeyType::ALL
        .iter()
        .zip(1u32..)
        .map(|(&t, id)| KeyMaterial::new(id, t, &vec![id as u8; t.generated_key_len()]))
        .collect();
    KeySet::new(&keys).expect("fixed keys are valid")
}

/// Replaces the digest of a request's MAC with the right one, when it names a
/// known key and has the right length.
fn fix_mac(request: &mut [u8], keys: &KeySet) {
    let Ok(packet) = Packet::decode(request) else {
        return;
    };
    let Trailer::Mac(mac) = packet.trailer() else {
        return;
    };
    let Some(key) = keys.get(mac.key_id) else {
        return;
    };
    let start = packet.authenticated_bytes().len();
    let digest_len = mac.digest.len();
    if digest_len != digest_len_on_wire(packet.header().version, key.mac().tag_len()) {
        return;
    }
    let Ok(tag) = key.mac().compute(&[], packet.authenticated_bytes()) else {
        return;
    };
    if let Some(digest) = request.get_mut(start + 4..start + 4 + digest_len) {
        digest.copy_from_slice(&tag.as_bytes()[..digest_len]);
    }
}

fn server_for(flags: u8) -> Server {
    Server::new(ServerConfig {
        auth_failure: if flags & 2 != 0 {
            AuthFailurePolicy::CryptoNak
        } else {
            AuthFailurePolicy::Drop
        },
        require_authentication: flags & 4 != 0,
        ..ServerConfig::default()
    })
}

/// Checks what the server may send in reply to `request`.
fn check_reply(request: &[u8], reply: &[u8], keys: &KeySet) {
    let req = Packet::decode(request).expect("only well-formed requests are answered");
    let rep = Packet::decode(reply).expect("replies decode");
    assert!(reply.len() <= request.len(), "reply larger than request");
    assert_eq!(req.header().mode, Mode::Client);
    assert_eq!(rep.header().mode, Mode::Server);
    assert_eq!(rep.header().version, req.header().version);
    assert_eq!(rep.header().origin_ts, req.header().transmit_ts);
    assert!(rep.extension_fields().is_empty());
    match rep.trailer() {
        Trailer::None => assert!(matches!(req.trailer(), Trailer::None)),
        Trailer::CryptoNak => assert!(matches!(req.trailer(), Trailer::Mac(_))),
        Trailer::Mac(mac) => {
            let Trailer::Mac(req_mac) = req.trailer() else {
                panic!("MAC'd reply to an unauthenticated request");
            };
            assert_eq!(mac.key_id, req_mac.key_id);
            let key = keys.get(mac.key_id).expect("reply key is known");
            let tag = key.mac().compute(&[], &reply[..HEADER_LEN]).expect("tag");
            assert_eq!(mac.digest, &tag.as_bytes()[..mac.digest.len()]);
        }
    }
}

/// Handles `data[1..]` as a request; `data[0]` picks the policy (bit 1:
/// crypto-NAK, bit 2: require authentication), the rate verdict (bits 3–4)
/// and whether to fix up the MAC (bit 0). Checks the reply's invariants and
/// that a batch of one gives the same result.
pub fn server_handle(data: &[u8]) {
    let Some((&flags, request)) = data.split_first() else {
        return;
    };
    let keys = fuzz_keys();
    let mut request = request.to_vec();
    if flags & 1 != 0 {
        fix_mac(&mut request, &keys);
    }
    let server = server_for(flags);
    let verdict = match (flags >> 3) & 3 {
        1 => RateVerdict::Kiss,
        2 => RateVerdict::Drop,
        _ => RateVerdict::Allow,
    };
    let (recv, tx) = (
        NtpTimestamp::from_bits(0x1111),
        NtpTimestamp::from_bits(0x2222),
    );
    let mut out = [0u8; 2048];
    let mut stats = ServerCounters::default();
    let action = server.handle_limited(&request, verdict, recv, tx, &keys, &mut out, &mut stats);
    assert_eq!(stats.received, 1);
    if let ServerAction::Send(len) = action {
        check_reply(&request, &out[..len], &keys);
    }
    check_interleaved(&server, &request, verdict, &keys, action, &out);
    if verdict == RateVerdict::Allow {
        let mut batch_out = [0u8; 2048];
        let mut items = [BatchItem::new(&request, recv, &mut batch_out)];
        let mut batch_stats = ServerCounters::default();
        server.handle_batch(&mut items, tx, &keys, &mut batch_stats);
        assert_eq!(items[0].action, action);
        assert_eq!(batch_stats, stats);
        if let ServerAction::Send(len) = action {
            assert_eq!(items[0].out[..len], out[..len]);
        }
    }
}

/// The same request finished with a saved transmit time (interleaved mode,
/// RFC 9769): a request that asks for it gets the saved time and its own
/// receive timestamp as origin, under a MAC that still verifies; any other
/// gets exactly the basic reply (`basic`, `basic_out`). Returns whether the
/// reply was interleaved.
fn check_interleaved(
    server: &Server,
    request: &[u8],
    verdict: RateVerdict,
    keys: &KeySet,
    basic: ServerAction,
    basic_out: &[u8],
) -> bool {
    let (recv, tx) = (
        NtpTimestamp::from_bits(0x1111),
        NtpTimestamp::from_bits(0x2222),
    );
    let saved = NtpTimestamp::from_bits(0x0ab0);
    let prepared = server.prepare_limited(request, verdict, recv, keys);
    let mut out = [0u8; 2048];
    let action = prepared.finish(tx, Some(saved), &mut out, &mut NoStats);
    assert_eq!(
        action, basic,
        "the mode changes the reply, not whether there is one"
    );
    let ServerAction::Send(len) = action else {
        return false;
    };
    let reply = Packet::decode(&out[..len]).expect("replies decode");
    let Some(origin) = prepared.interleaved_origin() else {
        assert_eq!(out[..len], basic_out[..len]);
        return false;
    };
    let req = Packet::decode(request).expect("answered requests decode");
    assert_eq!(origin, req.header().origin_ts);
    assert_eq!(reply.header().origin_ts, req.header().receive_ts);
    assert_eq!(reply.header().transmit_ts, saved);
    assert_eq!(reply.header().receive_ts.to_bits(), 0x1111);
    if let Trailer::Mac(mac) = reply.trailer() {
        let key = keys.get(mac.key_id).expect("reply key is known");
        let tag = key.mac().compute(&[], &out[..HEADER_LEN]).expect("tag");
        assert_eq!(mac.digest, &tag.as_bytes()[..mac.digest.len()]);
    }
    true
}

/// Splits `data[1..]` into requests (each prefixed by a length byte) and
/// checks that [`Server::handle_batch`] gives the same replies, actions and
/// counts as [`Server::handle`] one by one.
pub fn server_handle_batch(data: &[u8]) {
    let Some((&flags, mut rest)) = data.split_first() else {
        return;
    };
    let keys = fuzz_keys();
    let mut requests: Vec<Vec<u8>> = Vec::new();
    while let Some((&len, tail)) = rest.split_first() {
        let len = usize::from(len).min(tail.len());
        let mut request = tail[..len].to_vec();
        if flags & 1 != 0 {
            fix_mac(&mut request, &keys);
        }
        requests.push(request);
        rest = &tail[len..];
    }
    let server = server_for(flags);
    let tx = NtpTimestamp::from_bits(0xabcd);
    let recv = |i: usize| NtpTimestamp::from_bits(i as u64 * 977);
    let mut single_stats = ServerCounters::default();
    let mut singles = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        let mut out = [0u8; 512];
        let action = server.handle(request, recv(i), tx, &keys, &mut out, &mut single_stats);
        singles.push((action, out));
    }
    let mut outs = vec![[0u8; 512]; requests.len()];
    let mut items: Vec<BatchItem<'_, '_>> = requests
        .iter()
        .zip(outs.iter_mut())
        .enumerate()
        .map(|(i, (r, o))| BatchItem::new(r, recv(i), o))
        .collect();
    let mut batch_stats = ServerCounters::default();
    server.handle_batch(&mut items, tx, &keys, &mut batch_stats);
    assert_eq!(batch_stats, single_stats);
    for (item, (action, out)) in items.iter().zip(&singles) {
        assert_eq!(item.action, *action);
        if let ServerAction::Send(len) = action {
            assert_eq!(item.out[..*len], out[..*len]);
        }
    }
}

/// Processes `data` as the response to a request with key `data[0] % 6`
/// (0: none); a sample, when one comes out, must be finite.
pub fn client_process_response(data: &[u8]) {
    let Some((&key_choice, response)) = data.split_first() else {
        return;
    };
    let keys = fuzz_keys();
    let key = keys.get(u32::from(key_choice % 6));
    let t1 = NtpTimestamp::from_bits(u64::from_be_bytes(
        response
            .get(40..48)
            .and_then(|b| b.try_into().ok())
            .unwrap_or([0; 8]),
    ));
    let mut req = [0u8; 128];
    let Ok((_, pending)) = build_request(&ClientConfig::default(), t1, key, &mut req) else {
        panic!("requests fit in 128 bytes");
    };
    let mut response = response.to_vec();
    if key_choice & 0x80 != 0 {
        fix_mac(&mut response, &keys);
    }
    let t4 = t1.wrapping_add(authtime_wire::NtpDuration::from_bits(
        i64::from(key_choice) << 24,
    ));
    if let Ok(sample) = pending.process_response(&response, t4) {
        assert!(sample.offset.is_finite() && sample.delay.is_finite());
        assert!(sample.dispersion.is_finite() && sample.dispersion >= 0.0);
    }
    let _ = NoStats;
}

/// Bytes taken from the front of a fuzz input, zero once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        for b in &mut out {
            *b = self.byte();
        }
        out
    }

    fn timestamp(&mut self) -> NtpTimestamp {
        NtpTimestamp::from_bits(u64::from_be_bytes(self.array()))
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head.to_vec()
    }
}

/// Drives an [`InterleavedClient`] (key `data[0] % 6`, 0: none) through at
/// most 64 steps read from the rest of `data`, each chosen by the low two
/// bits of its first byte: build a request (0), process a reply (1: its
/// origin set to the request's transmit field with bit 6, to its receive
/// field with bit 7, its MAC fixed with bit 5, so that the fuzzer reaches
/// both kinds of sample), or set a send time (2, 3). Checks that a sample is finite, that an
/// interleaved one measures an earlier request than it answers and a basic
/// one the request it answers, and that a reply ends its request. Returns
/// how many basic and interleaved samples came out.
pub fn client_interleaved(data: &[u8]) -> [usize; 2] {
    let mut input = Input(data);
    let keys = fuzz_keys();
    let key = keys.get(u32::from(input.byte() % 6));
    let mut client = InterleavedClient::new(ClientConfig::default(), key);
    let mut request = [0u8; 128];
    let mut fields: Option<(NtpTimestamp, NtpTimestamp)> = None;
    let mut samples = [0; 2];
    for _ in 0..64 {
        if input.0.is_empty() {
            break;
        }
        let op = input.byte();
        match op & 3 {
            0 => {
                let now = input.timestamp();
                let random: [u8; REQUEST_RANDOM_LEN] = input.array();
                let sent = client
                    .build_request(now, random, &mut request)
                    .expect("requests fit in 128 bytes");
                let packet = Packet::decode(&request[..sent.len]).expect("requests decode");
                let h = packet.header();
                assert_eq!(h.transmit_ts, sent.transmit_ts);
                assert!(!h.transmit_ts.is_zero() && h.transmit_ts != h.receive_ts);
                assert_eq!(sent.asks_interleaved, !h.receive_ts.is_zero());
                fields = Some((h.transmit_ts, h.receive_ts));
            }
            1 => {
                let len = usize::from(input.byte());
                let mut reply = input.bytes(len);
                let t4 = input.timestamp();
                if let (Some((transmit, receive)), Some(origin)) = (fields, reply.get_mut(24..32)) {
                    match op >> 6 {
                        1 => origin.copy_from_slice(&transmit.to_bits().to_be_bytes()),
                        2 => origin.copy_from_slice(&receive.to_bits().to_be_bytes()),
                        _ => {}
                    }
                }
                if op & 0x20 != 0 {
                    fix_mac(&mut reply, &keys);
                }
                let before = client.in_flight();
                if let Ok(s) = client.process_response(&reply, t4) {
                    let (answered, _) = before.expect("a sample answers a request in flight");
                    assert_eq!(s.answered, answered);
                    assert!(client.in_flight().is_none(), "one reply per request");
                    match s.mode {
                        SampleMode::Basic => {
                            assert_eq!(s.measured, s.answered);
                            samples[0] += 1;
                        }
                        SampleMode::Interleaved => {
                            assert!(s.measured < s.answered);
                            samples[1] += 1;
                        }
                    }
                    assert!(s.sample.offset.is_finite() && s.sample.delay.is_finite());
                    assert!(s.sample.dispersion.is_finite() && s.sample.dispersion >= 0.0);
                }
            }
            _ => {
                let seq = u64::from(input.byte());
                let t1 = input.timestamp();
                let _ = client.set_send_time(seq, t1);
            }
        }
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(x: &mut u64) -> u8 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x as u8
    }

    #[test]
    fn harnesses_run_on_valid_and_random_input() {
        let keys = fuzz_keys();
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for round in 0..3_000u32 {
            let key = keys.get(round % 6);
            let mut req = [0u8; 128];
            let config = ClientConfig {
                version: [4, 3, 4, 2][(round % 4) as usize],
                ..ClientConfig::default()
            };
            let t = NtpTimestamp::from_bits(u64::from(round) << 20);
            let (n, _) = build_request(&config, t, key, &mut req).expect("req");
            let mut data = vec![(round % 32) as u8];
            data.extend_from_slice(&req[..n]);
            if round % 3 == 0 {
                let i = usize::from(xorshift(&mut x)) % data.len();
                data[i] ^= xorshift(&mut x) | 1;
            }
            server_handle(&data);
            client_process_response(&data);
            let mut batch = vec![(round % 8) as u8];
            for _ in 0..(round % 9) {
                batch.push(n as u8);
                batch.extend_from_slice(&req[..n]);
                let junk = usize::from(xorshift(&mut x) % 80);
                batch.push(junk as u8);
                batch.extend((0..junk).map(|_| xorshift(&mut x)));
            }
            server_handle_batch(&batch);
        }
    }

    /// Interleaved-looking requests (origin with its lowest bit set, receive
    /// unlike transmit), plain and under every key type, reach the harness's
    /// interleaved checks; the same requests as version 3 do not.
    #[test]
    fn the_server_harness_reaches_interleaved_replies() {
        let keys = fuzz_keys();
        let server = server_for(0);
        for key in std::iter::once(None).chain((1..=6).map(|id| keys.get(id))) {
            for (version, interleaved) in [(4u8, true), (3, false)] {
                let mut req = [0u8; 128];
                let config = ClientConfig {
                    version,
                    ..ClientConfig::default()
                };
                let t = NtpTimestamp::from_bits(0x1234_5678_0000_0000);
                let (n, _) = build_request(&config, t, key, &mut req).expect("req");
                req[24..32].copy_from_slice(&0xe000_0000_0000_1235_u64.to_be_bytes());
                req[32..40].copy_from_slice(&5u64.to_be_bytes());
                let mut request = req[..n].to_vec();
                fix_mac(&mut request, &keys);
                let mut out = [0u8; 2048];
                let (recv, tx) = (
                    NtpTimestamp::from_bits(0x1111),
                    NtpTimestamp::from_bits(0x2222),
                );
                let action = server.handle(&request, recv, tx, &keys, &mut out, &mut NoStats);
                assert!(
                    matches!(action, ServerAction::Send(_)),
                    "{key:?} {action:?}"
                );
                assert_eq!(
                    check_interleaved(&server, &request, RateVerdict::Allow, &keys, action, &out),
                    interleaved,
                    "version {version}, {key:?}"
                );
                let mut data = vec![1u8];
                data.extend_from_slice(&request);
                server_handle(&data);
            }
        }
    }

    /// A server that answers interleaved requests as chrony does: the
    /// harness's op codes for a request, then for its reply with the origin
    /// set to the receive field and the MAC fixed, reach interleaved samples.
    #[test]
    fn the_interleaved_harness_reaches_both_kinds_of_sample() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for key_choice in 0..6u8 {
            let keys = fuzz_keys();
            let mut data = vec![key_choice];
            let mut t = NtpTimestamp::from_unix(1_700_000_000, 0).to_bits();
            for round in 0..20u64 {
                // Request: now = t, random bytes.
                data.push(0);
                data.extend_from_slice(&t.to_be_bytes());
                data.extend((0..REQUEST_RANDOM_LEN).map(|_| xorshift(&mut x)));
                // A reply from a synchronized server; its origin is set by
                // the harness: transmit field (0x40) for the first, receive
                // field (0x80) for the others, MAC fixed. An interleaved
                // reply carries the transmit time of the reply before.
                let mut h = authtime_wire::Header::new(Mode::Server);
                h.stratum = 2;
                h.receive_ts = NtpTimestamp::from_bits(t + (1 << 20));
                let previous = if round == 0 { t } else { t - (1 << 32) };
                h.transmit_ts = NtpTimestamp::from_bits(previous + (1 << 21));
                let mut reply = [0u8; 128];
                let writer =
                    authtime_wire::PacketWriter::new(&mut reply, &h).expect("reply header");
                let len = match keys.get(u32::from(key_choice)) {
                    Some(key) => {
                        let n = digest_len_on_wire(4, key.mac().tag_len());
                        writer.finish_with_mac(key.id(), &vec![0; n])
                    }
                    None => writer.finish(),
                }
                .expect("reply");
                let mode = if round == 0 { 0x40 } else { 0x80 };
                data.push(1 | 0x20 | mode);
                data.push(len as u8);
                data.extend_from_slice(&reply[..len]);
                data.extend_from_slice(&(t + (1 << 22)).to_be_bytes());
                t += 1 << 32;
            }
            assert_eq!(client_interleaved(&data), [1, 19], "key {key_choice}");
            // And the same bytes cut anywhere, and random ones.
            for cut in (0..data.len()).step_by(97) {
                client_interleaved(&data[..cut]);
            }
            let noise: Vec<u8> = (0..600).map(|_| xorshift(&mut x)).collect();
            client_interleaved(&noise);
        }
    }
}
