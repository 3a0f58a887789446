//! Partial MACs at rate 1 select every piece, so by the construction in
//! `src/partial.rs` (step 5) the tag must be the inner MAC's tag over
//! `BE64(len) ‖ N ‖ message`, with the inner MAC taking `N` as its nonce when it
//! has one. Checking that equality for every inner algorithm pins the framing
//! down independently of the selection stream.

use authtime_mac::{Algorithm, PIECE_LEN, PartialMac, PartialSpec, new_mac};

/// Message lengths around the 8-byte pieces, NTP packet sizes and a full MTU.
const LENGTHS: [usize; 11] = [0, 1, 7, 8, 9, 15, 16, 48, 68, 1023, 1500];

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(151).wrapping_add(seed))
        .collect()
}

/// `BE64(len) ‖ nonce ‖ message`, the covered string when every piece is selected.
fn covered(nonce: &[u8], message: &[u8]) -> Vec<u8> {
    let mut out = (message.len() as u64).to_be_bytes().to_vec();
    out.extend_from_slice(nonce);
    out.extend_from_slice(message);
    out
}

#[test]
fn rate_one_is_the_inner_mac_over_length_nonce_and_message() {
    for inner in Algorithm::ALL {
        let info = inner.info();
        let key = pattern(info.key.typical(), 9);
        let name = format!("partial:{}:1", inner.name());
        let partial = new_mac(&name, &key).expect("partial MAC builds");
        let reference = inner.new_mac(&key).expect("inner MAC builds");
        // The inner MAC's nonce if it takes one, else an 8-byte sequence number.
        let nonce_len = if info.nonce_len == 0 {
            8
        } else {
            info.nonce_len
        };
        assert_eq!(partial.nonce_len(), nonce_len, "{name}");
        assert_eq!(partial.tag_len(), info.tag_len, "{name}");
        let nonce = pattern(nonce_len, 4);
        let inner_nonce: &[u8] = if info.nonce_len == 0 { &[] } else { &nonce };
        for len in LENGTHS {
            let message = pattern(len, 5);
            let want = reference
                .compute(inner_nonce, &covered(&nonce, &message))
                .expect("inner tag");
            let got = partial.compute(&nonce, &message).expect("partial tag");
            assert_eq!(got, want, "{name}, {len} bytes");
        }
    }
}

#[test]
fn rate_one_selects_every_piece() {
    for inner in Algorithm::ALL {
        let spec = PartialSpec::new(inner, 1.0).expect("rate 1 is valid");
        assert_eq!(spec.threshold(), 1 << 32);
        let mac = PartialMac::new(spec, &pattern(inner.info().key.typical(), 9)).expect("key");
        let nonce = pattern(spec.nonce_len(), 4);
        for len in LENGTHS {
            let all: Vec<usize> = (0..len.div_ceil(PIECE_LEN)).collect();
            assert_eq!(
                mac.selected_pieces(&nonce, len),
                all,
                "{inner}, {len} bytes"
            );
        }
    }
}
