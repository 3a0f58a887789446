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
//! Two representations, each where it is fastest:
//! - **64/64/2 limbs** (as OpenSSL's scalar code): `h = h0 + h1·2^64 + h2·2^128`
//!   times the clamped `r = r0 + r1·2^64`. Clamping makes `r1` a multiple of 4,
//!   so `h1·r1·2^128 ≡ h1·(r1 + r1/4)` mod `2^130 - 5`: four 64×64 products
//!   and two small ones per block. This is the shortest serial chain per block
//!   (about 14 cycles) and the cheapest setup, so short messages use it.
//! - **44/44/42 limbs** ("poly1305-donna-64"), four blocks per reduction:
//!   `h ← (h + m0)·r⁴ + m1·r³ + m2·r² + m3·r`. The powers of `r` are not
//!   clamped, which the 64-bit form needs, and 44-bit limbs leave room to
//!   sum twelve products per limb in a `u128`. Only the `r⁴` product waits for
//!   `h`; the other 27 multiplications overlap it, so long messages run at
//!   the multiplier's throughput (9 per block) instead of a block's latency.
//!
//! Constant time: no branch or index depends on the key or the message
//! contents; the final reduction selects with masks.

use zeroize::{Zeroize, ZeroizeOnDrop};

/// Poly1305 block length in bytes.
pub(crate) const BLOCK: usize = 16;

/// Messages of at least this many full blocks take the four-block path
/// (below it, computing `r²..r⁴` costs more than it saves).
pub(crate) const FOUR_WAY_MIN_BLOCKS: usize = 12;

const MASK44: u64 = (1 << 44) - 1;
const MASK42: u64 = (1 << 42) - 1;

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
    pub(crate) fn new(otk: &[u8; 32]) -> Self {
        let r0 = le64(otk, 0) & 0x0fff_fffc_0fff_ffff;
        let r1 = le64(otk, 8) & 0x0fff_fffc_0fff_fffc;
        Self {
            r0,
            r1,
            s1: r1 + (r1 >> 2),
            pad0: le64(otk, 16),
            pad1: le64(otk, 24),
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
        b.zeroize();
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

    /// `r` in 44/44/42 limbs.
    fn r44(&self) -> Limbs44 {
        Limbs44::from_acc(&Acc {
            h0: self.r0,
            h1: self.r1,
            h2: 0,
        })
    }
}

/// An element in 44/44/42-bit limbs (partially reduced: each limb at most
/// a few bits over its width).
#[derive(Clone, Copy, Zeroize)]
pub(crate) struct Limbs44([u64; 3]);

impl Limbs44 {
    #[inline(always)]
    fn from_acc(h: &Acc) -> Self {
        Self([
            h.h0 & MASK44,
            ((h.h0 >> 44) | (h.h1 << 20)) & MASK44,
            (h.h1 >> 24) | (h.h2 << 40),
        ])
    }

    #[inline(always)]
    fn to_acc(self) -> Acc {
        // Carry first so that each limb fits its width (h2 may take the
        // top bits: the accumulator allows h < 2^131).
        let [mut a, mut b, mut c] = self.0;
        b += a >> 44;
        a &= MASK44;
        c += b >> 44;
        b &= MASK44;
        let d = c >> 42;
        c &= MASK42;
        a += d * 5;
        b += a >> 44;
        a &= MASK44;
        Acc {
            h0: a | (b << 44),
            h1: (b >> 20) | (c << 24),
            h2: c >> 40,
        }
    }

    /// A block in 44-bit limbs, with the 2^128 bit.
    #[inline(always)]
    fn block(b: &[u8]) -> Self {
        let (w0, w1) = (le64(b, 0), le64(b, 8));
        Self([
            w0 & MASK44,
            ((w0 >> 44) | (w1 << 20)) & MASK44,
            (w1 >> 24) | (1 << 40),
        ])
    }
}

/// A multiplier in 44-bit limbs with `20·r1` and `20·r2` (2^132 ≡ 4·5).
#[derive(Clone, Copy, Zeroize)]
struct Mul44 {
    r: [u64; 3],
    s1: u64,
    s2: u64,
}

impl Mul44 {
    fn new(r: Limbs44) -> Self {
        Self {
            r: r.0,
            s1: r.0[1] * 20,
            s2: r.0[2] * 20,
        }
    }

    /// The unreduced product `h·r` as three `u128` limb sums (each < 2^94
    /// for limbs under 2^45: room to add four of them).
    #[inline(always)]
    fn product(&self, h: &Limbs44) -> [u128; 3] {
        let [h0, h1, h2] = h.0;
        let [r0, r1, r2] = self.r;
        [
            mul(h0, r0) + mul(h1, self.s2) + mul(h2, self.s1),
            mul(h0, r1) + mul(h1, r0) + mul(h2, self.s2),
            mul(h0, r2) + mul(h1, r1) + mul(h2, r0),
        ]
    }
}

/// Carries three `u128` limb sums (each < 2^100) into partially reduced
/// 44-bit limbs.
#[inline(always)]
fn carry44(d: [u128; 3]) -> Limbs44 {
    let [d0, mut d1, mut d2] = d;
    let h0 = (d0 as u64) & MASK44;
    d1 += d0 >> 44;
    let h1 = (d1 as u64) & MASK44;
    d2 += d1 >> 44;
    let h2 = (d2 as u64) & MASK42;
    // d2 >> 42 < 2^58; times 5 (as c + 4c) stays below 2^61.
    let c = (d2 >> 42) as u64;
    let h0 = h0 + c + (c << 2);
    Limbs44([h0 & MASK44, h1 + (h0 >> 44), h2])
}

#[inline(always)]
fn add3(a: [u128; 3], b: [u128; 3]) -> [u128; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

impl Key {
    /// `r²`, `r³`, `r⁴` as multipliers in 44-bit limbs, with `r` itself.
    fn powers44(&self) -> [Mul44; 4] {
        let r = Mul44::new(self.r44());
        let r2 = carry44(r.product(&self.r44()));
        let r2m = Mul44::new(r2);
        let r3 = carry44(r.product(&r2));
        let r4 = carry44(r2m.product(&r2));
        [r, r2m, Mul44::new(r3), Mul44::new(r4)]
    }

    /// Absorbs `blocks` (a multiple of 64 bytes) four blocks per reduction.
    pub(crate) fn blocks_four_way(&self, h: &mut Acc, blocks: &[u8]) {
        debug_assert!(blocks.len().is_multiple_of(4 * BLOCK));
        let [r1, r2, r3, r4] = self.powers44();
        let mut acc = Limbs44::from_acc(h);
        for g in blocks.chunks_exact(4 * BLOCK) {
            let m0 = Limbs44::block(&g[..BLOCK]);
            let first = Limbs44([acc.0[0] + m0.0[0], acc.0[1] + m0.0[1], acc.0[2] + m0.0[2]]);
            let d = add3(
                add3(r4.product(&first), r3.product(&Limbs44::block(&g[BLOCK..]))),
                add3(
                    r2.product(&Limbs44::block(&g[2 * BLOCK..])),
                    r1.product(&Limbs44::block(&g[3 * BLOCK..])),
                ),
            );
            acc = carry44(d);
        }
        *h = acc.to_acc();
    }
}

/// Poly1305 of `msg` under the one-time key `otk`.
#[must_use]
pub(crate) fn tag(otk: &[u8; 32], msg: &[u8]) -> [u8; 16] {
    let key = Key::new(otk);
    let mut h = Acc::default();
    let full = msg.len() / BLOCK * BLOCK;
    let mut start = 0;
    if full / BLOCK >= FOUR_WAY_MIN_BLOCKS {
        // Four-block groups first, the rest (at most three blocks) one by one.
        start = full / (4 * BLOCK) * (4 * BLOCK);
        key.blocks_four_way(&mut h, &msg[..start]);
    }
    key.blocks(&mut h, &msg[start..full]);
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
        let tag = tag(&otk, b"Cryptographic Forum Research Group");
        assert_eq!(hex::encode(tag), "a8061dc1305136c6c22b8baf0c0127a9");
    }

    #[test]
    fn matches_reference_on_random_keys() {
        let mut rng = SplitMix(0x1305);
        for len in lengths() {
            for _ in 0..3 {
                let otk: [u8; 32] = rng.bytes(32).try_into().expect("32");
                let msg = rng.bytes(len);
                assert_eq!(tag(&otk, &msg), reference(&otk, &msg), "{len}");
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
                    assert_eq!(tag(&otk, &msg), reference(&otk, &msg), "{len} {fill:x}");
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
            // #7: R = 1, M = ones ‖ f0ff.. ‖ 11 00.., h + s wraps.
            (
                "0100000000000000000000000000000000000000000000000000000000000000",
                "fffffffffffffffffffffffffffffffff0ffffffffffffffffffffffffffff\
                 11000000000000000000000000000000",
                "05000000000000000000000000000000",
            ),
            // #8: R = 1, M = ones ‖ fbfe.. ‖ 01 01.. : h + s wraps to 0.
            (
                "0100000000000000000000000000000000000000000000000000000000000000",
                "fffffffffffffffffffffffffffffffffbfefefefefefefefefefefefefefe\
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
            assert_eq!(hex::encode(tag(&otk, &msg)), want);
        }
    }
}
