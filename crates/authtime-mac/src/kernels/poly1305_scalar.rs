//! Poly1305 (RFC 8439 section 2.5) in portable 64-bit Rust: the one-packet
//! path for short messages, the whole path where AVX2 is off, and the scalar
//! pieces (clamping, powers of `r`, the final reduction) that the AVX2 kernel
//! of [`super::poly1305_avx2`] shares.
//!
//! Written by hand because the `poly1305` crate's backends are slow for
//! packets: its AVX2 backend costs thousands of cycles on a 48-byte message,
//! its portable one about 2.6 cycles per byte (26-bit limbs emulated on
//! 64-bit registers). The crate stays as the test oracle.
//!
//! Limbs of 64/64/2 bits (as OpenSSL's scalar code): `h = h0 + h1·2^64 +
//! h2·2^128` times the clamped `r = r0 + r1·2^64`. Clamping makes `r1` a
//! multiple of 4, so `h1·r1·2^128 ≡ h1·(r1 + r1/4)` mod `2^130 - 5`: four
//! 64×64 products and two small ones per block, about 30 instructions and a
//! serial chain of about 16 cycles.
//!
//! Not here, because it measured slower: four blocks per reduction in
//! 44/44/42-bit limbs ("donna-64" with `r²..r⁴`, 36 multiplications and
//! about 300 instructions per four blocks: 1.5 c/B against 1.0 c/B one block
//! at a time at 1500 bytes). Long messages take the AVX2 kernel instead.
//!
//! Constant time: no branch or index depends on the key or the message
//! contents; the final reduction selects with masks.

use zeroize::{Zeroize, ZeroizeOnDrop};

/// Poly1305 block length in bytes.
pub(crate) const BLOCK: usize = 16;

/// A one-time key (`r ‖ s`, RFC 8439 section 2.5) as four little-endian
/// 64-bit words: what the ChaCha20 kernels produce, and four stores to
/// zeroize instead of 32.
pub(crate) type OneTimeKey = [u64; 4];

/// The one-time key of 32 bytes.
#[cfg(test)]
#[must_use]
pub(crate) fn otk_from_bytes(bytes: &[u8; 32]) -> OneTimeKey {
    core::array::from_fn(|i| le64(bytes, 8 * i))
}

/// The 32 bytes of a one-time key.
#[cfg(test)]
#[must_use]
pub(crate) fn otk_to_bytes(otk: &OneTimeKey) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(8).zip(otk) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    out
}

/// The Poly1305 accumulator in 64/64/2 limbs, partially reduced: `h2 <= 4`
/// between blocks, so `h < 2^131`.
#[derive(Clone, Copy, Default, Zeroize)]
pub(crate) struct Acc {
    pub(crate) h0: u64,
    pub(crate) h1: u64,
    pub(crate) h2: u64,
}

/// A one-time key split into the clamped `r` (with `s1 = r1 + r1/4`) and the
/// pad `s` that is added at the end. Zeroized on drop.
#[derive(Zeroize, ZeroizeOnDrop)]
pub(crate) struct Key {
    pub(crate) r0: u64,
    pub(crate) r1: u64,
    s1: u64,
    pad0: u64,
    pad1: u64,
}

#[inline(always)]
fn le64(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

#[inline(always)]
const fn mul(a: u64, b: u64) -> u128 {
    (a as u128) * (b as u128)
}

impl Key {
    /// RFC 8439 section 2.5: `r` is the first half of the key, clamped; `s`
    /// the second half.
    #[inline]
    pub(crate) fn new(otk: &OneTimeKey) -> Self {
        let r0 = otk[0] & 0x0fff_fffc_0fff_ffff;
        let r1 = otk[1] & 0x0fff_fffc_0fff_fffc;
        Self {
            r0,
            r1,
            s1: r1 + (r1 >> 2),
            pad0: otk[2],
            pad1: otk[3],
        }
    }

    /// `h ← (h + m)·r` for one block `m0 + m1·2^64 + hibit·2^128`, partially
    /// reduced. With `h2 <= 4` on entry (any `h < 2^131`), every product
    /// fits: `h1·s1 < 2^125`, `h2·s1 < 2^64`.
    #[inline(always)]
    pub(crate) fn block(&self, h: &mut Acc, m0: u64, m1: u64, hibit: u64) {
        let t = u128::from(h.h0) + u128::from(m0);
        let h0 = t as u64;
        let t = u128::from(h.h1) + u128::from(m1) + (t >> 64);
        let h1 = t as u64;
        let h2 = h.h2 + hibit + (t >> 64) as u64;

        let d0 = mul(h0, self.r0) + mul(h1, self.s1);
        let d1 = mul(h0, self.r1) + mul(h1, self.r0) + u128::from(h2 * self.s1) + (d0 >> 64);
        let d2 = h2 * self.r0 + (d1 >> 64) as u64;
        // Bits from 130 up times 5 go back to the bottom: c = (d2 >> 2)·5.
        let c = (d2 & !3) + (d2 >> 2);
        let t = u128::from(d0 as u64) + u128::from(c);
        h.h0 = t as u64;
        let t = u128::from(d1 as u64) + (t >> 64);
        h.h1 = t as u64;
        h.h2 = (d2 & 3) + (t >> 64) as u64;
    }

    /// Absorbs the whole blocks of `blocks` (a multiple of 16 bytes), one at a time.
    #[inline]
    pub(crate) fn blocks(&self, h: &mut Acc, blocks: &[u8]) {
        for b in blocks.chunks_exact(BLOCK) {
            self.block(h, le64(b, 0), le64(b, 8), 1);
        }
    }

    /// Absorbs the last, partial block (1 to 15 bytes): padded with a 1 byte
    /// and zeros, without the 2^128 bit.
    #[inline]
    pub(crate) fn partial_block(&self, h: &mut Acc, tail: &[u8]) {
        debug_assert!(!tail.is_empty() && tail.len() < BLOCK);
        let mut b = [0u8; BLOCK];
        b[..tail.len()].copy_from_slice(tail);
        b[tail.len()] = 1;
        self.block(h, le64(&b, 0), le64(&b, 8), 0);
    }

    /// The tag: `h` reduced modulo `2^130 - 5` (constant time), plus `s`,
    /// modulo `2^128`.
    #[inline]
    pub(crate) fn finish(&self, h: &Acc) -> [u8; 16] {
        // h < 2^131 and h2 <= 4 after `block`; one more folding step brings
        // it below 2^130 + 5·4, so h - p < p and one conditional subtraction
        // is the full reduction.
        let c = (h.h2 >> 2) * 5;
        let t = u128::from(h.h0) + u128::from(c);
        let h0 = t as u64;
        let t = u128::from(h.h1) + (t >> 64);
        let h1 = t as u64;
        let h2 = (h.h2 & 3) + (t >> 64) as u64;
        // g = h + 5; h >= p exactly when g >= 2^130.
        let t = u128::from(h0) + 5;
        let g0 = t as u64;
        let t = u128::from(h1) + (t >> 64);
        let g1 = t as u64;
        let g2 = h2 + (t >> 64) as u64;
        let take_g = 0u64.wrapping_sub(g2 >> 2);
        let h0 = (h0 & !take_g) | (g0 & take_g);
        let h1 = (h1 & !take_g) | (g1 & take_g);
        let t = u128::from(h0) + u128::from(self.pad0);
        let lo = t as u64;
        let hi = h1.wrapping_add(self.pad1).wrapping_add((t >> 64) as u64);
        let mut tag = [0u8; 16];
        tag[..8].copy_from_slice(&lo.to_le_bytes());
        tag[8..].copy_from_slice(&hi.to_le_bytes());
        tag
    }
}

/// Poly1305 of `msg` under the one-time key `otk`.
#[must_use]
pub(crate) fn tag(otk: &OneTimeKey, msg: &[u8]) -> [u8; 16] {
    let key = Key::new(otk);
    let mut h = Acc::default();
    let full = msg.len() / BLOCK * BLOCK;
    key.blocks(&mut h, &msg[..full]);
    if full < msg.len() {
        key.partial_block(&mut h, &msg[full..]);
    }
    let out = key.finish(&h);
    h.zeroize();
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use poly1305::{Poly1305, universal_hash::KeyInit};

    use super::*;
    use crate::kernels::md5_scalar::tests::SplitMix;

    /// The RustCrypto tag, the reference.
    pub(crate) fn reference(otk: &[u8; 32], msg: &[u8]) -> [u8; 16] {
        Poly1305::new(&(*otk).into()).compute_unpadded(msg).into()
    }

    /// Lengths the tests cover.
    pub(crate) fn lengths() -> impl Iterator<Item = usize> {
        (0..=300).chain([1000, 1500, 2000, 4096])
    }

    // RFC 8439 section 2.5.2: "Cryptographic Forum Research Group".
    #[test]
    fn poly1305_rfc8439_2_5_2() {
        let otk: [u8; 32] =
            hex::decode("85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b")
                .expect("hex")
                .try_into()
                .expect("32");
        let tag = tag(&otk_from_bytes(&otk), b"Cryptographic Forum Research Group");
        assert_eq!(hex::encode(tag), "a8061dc1305136c6c22b8baf0c0127a9");
    }

    #[test]
    fn matches_reference_on_random_keys() {
        let mut rng = SplitMix(0x1305);
        for len in lengths() {
            for _ in 0..3 {
                let otk: [u8; 32] = rng.bytes(32).try_into().expect("32");
                let msg = rng.bytes(len);
                assert_eq!(
                    tag(&otk_from_bytes(&otk), &msg),
                    reference(&otk, &msg),
                    "{len}"
                );
            }
        }
    }

    /// Keys and messages that push `h` against `2^130 - 5`: the largest `r`
    /// clamping allows, all-ones blocks, and pads that make the final
    /// addition wrap.
    pub(crate) fn edge_keys() -> Vec<[u8; 32]> {
        let mut keys = Vec::new();
        for r in [[0xff; 16], [0; 16], {
            let mut one = [0; 16];
            one[0] = 1;
            one
        }] {
            for s in [[0xff; 16], [0; 16]] {
                let mut k = [0u8; 32];
                k[..16].copy_from_slice(&r);
                k[16..].copy_from_slice(&s);
                keys.push(k);
            }
        }
        // r = 2 (so that h·r of an all-ones message lands just above p).
        let mut k = [0u8; 32];
        k[0] = 2;
        keys.push(k);
        keys
    }

    #[test]
    fn matches_reference_near_the_modulus() {
        for otk in edge_keys() {
            for len in (0..=80).chain([255, 256, 1024, 1500]) {
                for fill in [0xff, 0xfe, 0x00] {
                    let msg = vec![fill; len];
                    assert_eq!(
                        tag(&otk_from_bytes(&otk), &msg),
                        reference(&otk, &msg),
                        "{len} {fill:x}"
                    );
                }
            }
        }
    }

    // RFC 8439 appendix A.3, test vectors #5 to #11: h meets p.
    #[test]
    fn poly1305_rfc8439_a3_edge_vectors() {
        let cases = [
            // #5: R = 2, S = 0, M = all ones.
            (
                "0200000000000000000000000000000000000000000000000000000000000000",
                "ffffffffffffffffffffffffffffffff",
                "03000000000000000000000000000000",
            ),
            // #6: R = 2, S = all ones, M = 2.
            (
                "02000000000000000000000000000000ffffffffffffffffffffffffffffffff",
                "02000000000000000000000000000000",
                "03000000000000000000000000000000",
            ),
            // #7: R = 1, M = ones ‖ f0 ff.. ‖ 11 00..: a carry into an all-ones limb.
            (
                "0100000000000000000000000000000000000000000000000000000000000000",
                "ffffffffffffffffffffffffffffffff\
                 f0ffffffffffffffffffffffffffffff\
                 11000000000000000000000000000000",
                "05000000000000000000000000000000",
            ),
            // #8: R = 1, M = ones ‖ fb fe.. ‖ 01 01..: h is exactly p.
            (
                "0100000000000000000000000000000000000000000000000000000000000000",
                "ffffffffffffffffffffffffffffffff\
                 fbfefefefefefefefefefefefefefefe\
                 01010101010101010101010101010101",
                "00000000000000000000000000000000",
            ),
            // #9: R = 2, M = fd ff..: h = 2^130 - 6, just below p.
            (
                "0200000000000000000000000000000000000000000000000000000000000000",
                "fdffffffffffffffffffffffffffffff",
                "faffffffffffffffffffffffffffffff",
            ),
            // #10: a 131-bit intermediate in the 5·H + L reduction.
            (
                "0100000000000000040000000000000000000000000000000000000000000000",
                "e33594d7505e43b900000000000000003394d7505e4379cd0100000000000000\
                 0000000000000000000000000000000001000000000000000000000000000000",
                "14000000000000005500000000000000",
            ),
            // #11: as #10 without the last block.
            (
                "0100000000000000040000000000000000000000000000000000000000000000",
                "e33594d7505e43b900000000000000003394d7505e4379cd0100000000000000\
                 00000000000000000000000000000000",
                "13000000000000000000000000000000",
            ),
        ];
        for (key, msg, want) in cases {
            let otk: [u8; 32] = hex::decode(key).expect("hex").try_into().expect("32");
            let msg = hex::decode(msg.replace(' ', "")).expect("hex");
            assert_eq!(hex::encode(reference(&otk, &msg)), want, "oracle {want}");
            assert_eq!(hex::encode(tag(&otk_from_bytes(&otk), &msg)), want);
        }
    }
}
