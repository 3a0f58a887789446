//! Entry points for the fuzz targets in `fuzz/`: each takes arbitrary bytes and
//! panics only when an invariant breaks.

use crate::bootstrap::{
    BootstrapSigner, BootstrapVerifier, Reassembler, SignError, SyncClient, SyncResponse,
    split_blob,
};
use crate::params::Params;
use crate::receiver::{ReceiverConfig, Status};
use crate::sender::Sender;
use crate::time::Time;
use crate::wire::{DataPacket, Fragment, SyncRequest, peek_kind};

/// Parses `data` as every kind of TESLA datagram, with tag lengths taken from
/// the first byte; what parses must account for every byte.
pub fn packet_parsing(data: &[u8]) {
    let _ = peek_kind(data);
    let tag_len = usize::from(data.first().copied().unwrap_or(0) % 40);
    if let Ok(p) = DataPacket::parse(data, tag_len) {
        let extra = if p.next_commitment.is_some() { 32 } else { 0 };
        assert_eq!(p.tag.len(), tag_len);
        assert_eq!(1 + p.payload.len() + 4 + extra + 32 + tag_len, data.len());
        assert_eq!(p.authenticated_bytes().len() + tag_len, data.len());
    }
    if let Ok(r) = SyncRequest::parse(data) {
        assert_eq!(r.nonce.len() + 1, data.len());
    }
    if let Ok(fr) = Fragment::parse(data) {
        assert!(fr.index < fr.count && !fr.chunk.is_empty());
    }
}

struct RejectAll;

impl BootstrapVerifier for RejectAll {
    fn scheme_id(&self) -> u16 {
        0
    }
    fn verify(&self, _: &[u8], _: &[u8]) -> bool {
        false
    }
}

/// Decodes `data` as a sync response body (re-encoding must give the same
/// bytes), as a signed blob, and feeds its chunks to a reassembler as fragments.
pub fn bootstrap_parsing(data: &[u8]) {
    if let Ok(r) = SyncResponse::decode_body(data) {
        assert_eq!(r.encode_body(), data, "encode(decode(x)) != x");
    }
    let _ = split_blob(data);
    let mut tag = [0u8; 8];
    if let Some(t) = data.get(1..9) {
        tag.copy_from_slice(t);
    }
    let mut re = Reassembler::new(tag, 16, 16 * 64);
    let mut sizes = data.iter().copied();
    let mut rest = data;
    while !rest.is_empty() {
        let n = usize::from(sizes.next().unwrap_or(1)).clamp(1, rest.len());
        let (head, tail) = rest.split_at(n);
        if let Ok(Some(blob)) = re.push(head) {
            assert!(blob.len() <= 16 * 64);
        }
        rest = tail;
    }
    let _ = RejectAll.verify(data, data);
}

/// Accepts everything: the fuzz targets exercise TESLA, not signatures.
struct Unsigned;

impl BootstrapSigner for Unsigned {
    fn scheme_id(&self) -> u16 {
        0
    }
    fn sign(&mut self, _: &[u8]) -> Result<Vec<u8>, SignError> {
        Ok(Vec::new())
    }
}

impl BootstrapVerifier for Unsigned {
    fn scheme_id(&self) -> u16 {
        0
    }
    fn verify(&self, _: &[u8], _: &[u8]) -> bool {
        true
    }
}

/// A receiver bootstrapped from a real sender, driven by `data` as a list of
/// operations: genuine packets, genuine packets with a byte changed, raw
/// datagrams, replays and clock steps. It must never panic, never release a
/// payload the sender did not send, and keep its buffer within bounds.
pub fn receiver_handle(data: &[u8]) {
    let params = Params {
        t0: Time(1_000_000),
        interval_ns: 1_000,
        disclosure_delay: 2,
        chain_len: 64,
        mac: authtime_mac::Algorithm::HmacSha256,
        tag_len: 10,
        rollover_lead: 4,
    };
    let mut now = Time(1_000_000);
    let Ok(mut tx) = Sender::new(params, [7; 32], now) else {
        return;
    };
    let config = ReceiverConfig {
        buffer_max_packets: 8,
        buffer_max_bytes: 2048,
        ..ReceiverConfig::default()
    };
    let Ok((mut client, request)) = SyncClient::new(&[3; 16], now, config) else {
        return;
    };
    let Ok(fragments) = tx.sync_response(&request, now, &mut Unsigned) else {
        return;
    };
    let mut rx = None;
    for fr in &fragments {
        if let Ok(Some(r)) = client.handle(fr, now, &Unsigned) {
            rx = Some(r);
        }
    }
    let Some(mut rx) = rx else {
        return;
    };
    let mut sent: Vec<Vec<u8>> = Vec::new();
    let mut ops = data.chunks(3);
    while let Some(&[op, a, b]) = ops.next() {
        let datagram = match op % 6 {
            0 | 1 => tx.packet(&[a, b], now).ok(),
            2 => tx.packet(&[a, b], now).ok().map(|mut p| {
                let at = usize::from(a) % p.len();
                p[at] ^= b | 1;
                p
            }),
            3 => sent.get(usize::from(a)).cloned(),
            4 => {
                now = now.plus_nanos(u64::from(a) * 40 + u64::from(b));
                tx.key_disclosure(now).ok()
            }
            _ => Some(ops.next().map_or_else(Vec::new, <[u8]>::to_vec)),
        };
        let Some(datagram) = datagram else { continue };
        if op % 6 < 2 {
            sent.push(datagram.clone());
        }
        let before = rx.stats().buffered_packets;
        if let Status::Authenticated { released, .. } = rx.handle(&datagram, now) {
            assert!(
                released.len() as u64 <= before,
                "released more than buffered"
            );
            for d in released {
                assert_eq!(d.payload.len(), 2, "only genuine payloads are released");
            }
        }
        let s = rx.stats();
        assert!(s.buffered_packets <= 8 && s.buffered_bytes <= 2048);
        assert_eq!(s.clock_violations, 0, "the sender keeps to the bound");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harnesses_accept_genuine_and_garbage_inputs() {
        let params = crate::testkit::params();
        let t = params.schedule().interval_start(3).expect("t");
        let mut tx = Sender::new(params, [1; 32], t).expect("sender");
        let packet = tx.packet(b"payload", t).expect("packet");
        for n in 0..=packet.len() {
            packet_parsing(&packet[..n]);
        }
        packet_parsing(&[0x13; 40]);
        packet_parsing(&[0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 7]);
        let request = SyncRequest::encode(&[2; 16]);
        let frags = tx
            .sync_response(&request, t, &mut Unsigned)
            .expect("response");
        bootstrap_parsing(&frags[0]);
        bootstrap_parsing(&frags[0][13..]);
        bootstrap_parsing(&[]);
        let mut ops = Vec::new();
        for n in 0..200u8 {
            ops.extend_from_slice(&[n % 6, n.wrapping_mul(7), n.wrapping_mul(13)]);
        }
        receiver_handle(&ops);
        receiver_handle(&[5, 0, 0, 0x11, 0, 0]);
        receiver_handle(&[]);
    }
}
