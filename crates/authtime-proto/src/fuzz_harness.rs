//! Entry points for the fuzz targets in `fuzz/`: each takes arbitrary bytes and
//! panics only when an invariant of the protocol code breaks. Keys are fixed,
//! and a flag lets the fuzzer have its MACs fixed up so that it gets past
//! authentication.

use authtime_keys::{KeyMaterial, KeySet, KeyType};
use authtime_wire::{HEADER_LEN, Mode, NtpTimestamp, Packet, Trailer, digest_len_on_wire};

use crate::{
    AuthFailurePolicy, BatchItem, ClientConfig, NoStats, RateVerdict, Server, ServerAction,
    ServerConfig, ServerCounters, build_request,
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
}
