//! Every algorithm's tag changes when any single bit of a short message (or of
//! the nonce) flips, or when the message grows or shrinks by a byte. Cheap and
//! tool-free; the reference comparisons are in `openssl_crosscheck.rs`.

use std::collections::HashSet;

use authtime_mac::{Algorithm, Tag};

/// 48 bytes: an NTP header, the message the MACs are chosen for.
const MESSAGE_LEN: usize = 48;

/// A fixed, varied byte pattern (a linear congruential sequence).
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(167).wrapping_add(seed))
        .collect()
}

fn flipped(bytes: &[u8], bit: usize) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[bit / 8] ^= 1 << (bit % 8);
    out
}

#[test]
fn every_single_bit_flip_changes_the_tag() {
    for algorithm in Algorithm::ALL {
        let info = algorithm.info();
        let mac = algorithm
            .new_mac(&pattern(info.key.typical(), 1))
            .expect("typical key accepted");
        let nonce = pattern(info.nonce_len, 2);
        let message = pattern(MESSAGE_LEN, 3);
        let tag =
            |nonce: &[u8], message: &[u8]| -> Tag { mac.compute(nonce, message).expect("tag") };
        let base = tag(&nonce, &message);
        // All tags distinct, not just different from the base one: a flip of
        // bit i and of bit j giving one tag would also be a weakness here.
        let mut seen = HashSet::from([base.as_bytes().to_vec()]);
        for bit in 0..MESSAGE_LEN * 8 {
            let t = tag(&nonce, &flipped(&message, bit));
            assert!(
                seen.insert(t.as_bytes().to_vec()),
                "{algorithm}: message bit {bit}"
            );
        }
        for bit in 0..info.nonce_len * 8 {
            let t = tag(&flipped(&nonce, bit), &message);
            assert!(
                seen.insert(t.as_bytes().to_vec()),
                "{algorithm}: nonce bit {bit}"
            );
        }
        let mut longer = message.clone();
        longer.push(0);
        for changed in [&message[..MESSAGE_LEN - 1], &longer[..]] {
            let t = tag(&nonce, changed);
            assert!(
                seen.insert(t.as_bytes().to_vec()),
                "{algorithm}: {} bytes",
                changed.len()
            );
        }
    }
}
