//! One ChaCha20 block (RFC 8439 section 2.3) in portable Rust, cut down to
//! what Poly1305 key generation needs (section 2.6): counter 0, and only the
//! first 32 bytes of output.
//!
//! Written by hand because the `chacha20` crate is a stream cipher: its SIMD
//! backends compute four blocks at a time and keep a buffer, which for a
//! single 32-byte key costs more than the 20 rounds of one block. Sixteen
//! 32-bit words in general-purpose registers give the shortest chain the
//! rounds allow (add, xor, rotate: 12 single-cycle steps per round).

use zeroize::Zeroize;

use super::poly1305_scalar::OneTimeKey;

/// "expand 32-byte k" (RFC 8439 section 2.3).
pub(crate) const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// A 256-bit key as eight little-endian words.
#[must_use]
pub(crate) fn key_words(key: &[u8; 32]) -> [u32; 8] {
    core::array::from_fn(|i| u32::from_le_bytes(key[4 * i..4 * i + 4].try_into().expect("4")))
}

/// A 96-bit nonce as three little-endian words.
#[inline]
#[must_use]
pub(crate) fn nonce_words(nonce: &[u8; 12]) -> [u32; 3] {
    core::array::from_fn(|i| u32::from_le_bytes(nonce[4 * i..4 * i + 4].try_into().expect("4")))
}

#[inline(always)]
fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

/// `poly1305_key_gen` (RFC 8439 section 2.6): the first 32 bytes of the
/// ChaCha20 block for (`key`, `nonce`, counter 0).
#[inline]
#[must_use]
pub(crate) fn one_time_key(key: &[u32; 8], nonce: &[u8; 12]) -> OneTimeKey {
    let n = nonce_words(nonce);
    let mut x = [
        SIGMA[0], SIGMA[1], SIGMA[2], SIGMA[3], key[0], key[1], key[2], key[3], key[4], key[5],
        key[6], key[7], 0, n[0], n[1], n[2],
    ];
    for _ in 0..10 {
        quarter_round(&mut x, 0, 4, 8, 12);
        quarter_round(&mut x, 1, 5, 9, 13);
        quarter_round(&mut x, 2, 6, 10, 14);
        quarter_round(&mut x, 3, 7, 11, 15);
        quarter_round(&mut x, 0, 5, 10, 15);
        quarter_round(&mut x, 1, 6, 11, 12);
        quarter_round(&mut x, 2, 7, 8, 13);
        quarter_round(&mut x, 3, 4, 9, 14);
    }
    let word = |i: usize| {
        let init = if i < 4 { SIGMA[i] } else { key[i - 4] };
        u64::from(x[i].wrapping_add(init))
    };
    let out = core::array::from_fn(|i| word(2 * i) | (word(2 * i + 1) << 32));
    x.zeroize();
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use chacha20::{
        ChaCha20,
        cipher::{KeyIvInit, StreamCipher},
    };

    use super::*;
    use crate::kernels::md5_scalar::tests::SplitMix;
    use crate::kernels::poly1305_scalar::otk_to_bytes;

    /// The RustCrypto keystream's first 32 bytes, the reference.
    pub(crate) fn reference(key: &[u8; 32], nonce: &[u8; 12]) -> [u8; 32] {
        let mut out = [0u8; 32];
        ChaCha20::new(&(*key).into(), &(*nonce).into()).apply_keystream(&mut out);
        out
    }

    // RFC 8439 section 2.3.2: the block function test vector (counter 1 there,
    // so only its key setup applies); section 2.6.2 is checked in
    // `poly1305_chacha`. Here: random keys and nonces against RustCrypto.
    #[test]
    fn matches_reference_on_random_keys() {
        let mut rng = SplitMix(20);
        for _ in 0..500 {
            let key: [u8; 32] = rng.bytes(32).try_into().expect("32");
            let nonce: [u8; 12] = rng.bytes(12).try_into().expect("12");
            assert_eq!(
                otk_to_bytes(&one_time_key(&key_words(&key), &nonce)),
                reference(&key, &nonce)
            );
        }
    }
}
