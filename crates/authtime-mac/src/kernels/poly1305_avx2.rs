//! Poly1305 (RFC 8439 section 2.5) with AVX2 for long messages: four blocks
//! side by side in 26-bit limbs, one 64-bit lane per block, multiplied with
//! `VPMULUDQ` (the method of OpenSSL's `poly1305-x86_64.pl` and of Goll and
//! Gueron, "Vectorization of Poly1305", 2015).
//!
//! Written by hand because the `poly1305` crate's AVX2 backend computes its
//! powers of `r` lazily and buffers blocks, which costs thousands of cycles
//! per packet; here the setup is three scalar multiplications.
//!
//! Lane `j` of the accumulator collects blocks `4i + j`, multiplied by `r⁴`
//! at each step; the last group of four is multiplied by `r⁴, r³, r², r`
//! lane by lane, and the lanes are summed. The first `n mod 4` blocks (so
//! that the last group is the message's last four) run on the scalar code of
//! [`super::poly1305_scalar`], and their result enters lane 0 with the first
//! group. The scalar code also makes the powers and the final reduction.
//!
//! Constant time: no branch or index depends on the key or the message
//! contents (the message length is public).

#![cfg(target_arch = "x86_64")]

use core::arch::x86_64::{
    __m256i, _mm_add_epi64, _mm_cvtsi128_si64, _mm_unpackhi_epi64, _mm256_add_epi64,
    _mm256_and_si256, _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_loadu_si256,
    _mm256_mul_epu32, _mm256_or_si256, _mm256_permute4x64_epi64, _mm256_set_epi64x,
    _mm256_set1_epi64x, _mm256_slli_epi64, _mm256_srli_epi64, _mm256_unpackhi_epi64,
    _mm256_unpacklo_epi64,
};

use zeroize::Zeroize;

use super::poly1305_scalar::{Acc, BLOCK, Key, OneTimeKey};
use crate::Isa;

/// Messages of at least this many bytes take the AVX2 path; below it the
/// scalar code, which needs no powers of `r`, is as fast.
pub(crate) const MIN_LEN: usize = 256;

/// Bytes per group of four blocks.
const GROUP: usize = 4 * BLOCK;

const MASK26: u64 = (1 << 26) - 1;

/// The AVX2 Poly1305 kernel. A value exists only when the CPU has AVX2
/// (checked in [`Poly1305Avx2::new`]), which makes [`Poly1305Avx2::tag`] sound.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Poly1305Avx2(());

impl Poly1305Avx2 {
    /// `None` when `isa` or the CPU lacks AVX2.
    #[must_use]
    pub(crate) fn new(isa: Isa) -> Option<Self> {
        // `Isa` is a plain public struct: check the CPU too.
        (isa.avx2 && std::arch::is_x86_feature_detected!("avx2")).then_some(Self(()))
    }

    /// Poly1305 of `msg` under `otk`; any length (short messages are
    /// handed to the scalar code).
    #[must_use]
    pub(crate) fn tag(self, otk: &OneTimeKey, msg: &[u8]) -> [u8; 16] {
        if msg.len() < GROUP {
            return super::poly1305_scalar::tag(otk, msg);
        }
        // SAFETY: `new` checked AVX2; the message holds at least one group.
        unsafe { tag_avx2(otk, msg) }
    }
}

/// An element in five 26-bit limbs (partially reduced: each limb a bit or
/// two over 26 bits at most).
type Limbs26 = [u64; 5];

fn limbs26(h: &Acc) -> Limbs26 {
    [
        h.h0 & MASK26,
        (h.h0 >> 26) & MASK26,
        ((h.h0 >> 52) | (h.h1 << 12)) & MASK26,
        (h.h1 >> 14) & MASK26,
        (h.h1 >> 40) | (h.h2 << 24),
    ]
}

/// Carries limbs of up to 2^62 into an accumulator with `h2 <= 4`.
fn acc_from_limbs26(mut l: Limbs26) -> Acc {
    for i in 0..4 {
        l[i + 1] += l[i] >> 26;
        l[i] &= MASK26;
    }
    let top = l[4] >> 26;
    l[4] &= MASK26;
    l[0] += top * 5;
    l[1] += l[0] >> 26;
    l[0] &= MASK26;
    let t = u128::from(l[0]) + (u128::from(l[1]) << 26) + (u128::from(l[2] & 0xfff) << 52);
    let h0 = t as u64;
    let t =
        (t >> 64) + u128::from(l[2] >> 12) + (u128::from(l[3]) << 14) + (u128::from(l[4]) << 40);
    Acc {
        h0,
        h1: t as u64,
        h2: (t >> 64) as u64,
    }
}

/// A multiplier: its five limbs and `5·` limbs (2^130 ≡ 5), one value per lane.
#[derive(Clone, Copy)]
struct Mul26 {
    r: [__m256i; 5],
    s: [__m256i; 5],
}

impl Mul26 {
    /// Lane `j` multiplies by `powers[j]` (64/64/2 limbs, `h2 <= 4`).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new(powers: [&Acc; 4]) -> Self {
        let lanes = |f: fn(&Acc) -> u64| {
            let v = |j: usize| f(powers[j]) as i64;
            _mm256_set_epi64x(v(3), v(2), v(1), v(0))
        };
        let (w0, w1, w2) = (lanes(|a| a.h0), lanes(|a| a.h1), lanes(|a| a.h2));
        let mask = _mm256_set1_epi64x(MASK26 as i64);
        let r = [
            _mm256_and_si256(w0, mask),
            _mm256_and_si256(_mm256_srli_epi64::<26>(w0), mask),
            _mm256_and_si256(
                _mm256_or_si256(_mm256_srli_epi64::<52>(w0), _mm256_slli_epi64::<12>(w1)),
                mask,
            ),
            _mm256_and_si256(_mm256_srli_epi64::<14>(w1), mask),
            _mm256_or_si256(_mm256_srli_epi64::<40>(w1), _mm256_slli_epi64::<24>(w2)),
        ];
        Self::from_limbs(r)
    }

    /// The multiplier with limbs `r` (each below 2^27).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn from_limbs(r: [__m256i; 5]) -> Self {
        let r = [
            opaque(r[0]),
            opaque(r[1]),
            opaque(r[2]),
            opaque(r[3]),
            opaque(r[4]),
        ];
        let times5 = |v: __m256i| opaque(_mm256_add_epi64(v, _mm256_slli_epi64::<2>(v)));
        Self {
            r,
            s: [
                times5(r[0]),
                times5(r[1]),
                times5(r[2]),
                times5(r[3]),
                times5(r[4]),
            ],
        }
    }

    /// Lane 0's multiplier in every lane.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn broadcast_lane0(&self) -> Self {
        let b = |v: __m256i| opaque(_mm256_permute4x64_epi64::<0>(v));
        Self {
            r: [
                b(self.r[0]),
                b(self.r[1]),
                b(self.r[2]),
                b(self.r[3]),
                b(self.r[4]),
            ],
            s: [
                b(self.s[0]),
                b(self.s[1]),
                b(self.s[2]),
                b(self.s[3]),
                b(self.s[4]),
            ],
        }
    }

    /// `h·r`, not carried: each limb a sum of five products. Limbs of `h`
    /// below 2^28 and of `r` below 2^27 keep each product under 2^57.4 and
    /// a sum of two such results under 2^61.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn products(&self, h: &[__m256i; 5]) -> [__m256i; 5] {
        let (r, s) = (&self.r, &self.s);
        let h = [
            opaque(h[0]),
            opaque(h[1]),
            opaque(h[2]),
            opaque(h[3]),
            opaque(h[4]),
        ];
        let m = _mm256_mul_epu32;
        let add = _mm256_add_epi64;
        let d0 = add(
            add(m(h[0], r[0]), m(h[1], s[4])),
            add(add(m(h[2], s[3]), m(h[3], s[2])), m(h[4], s[1])),
        );
        let d1 = add(
            add(m(h[0], r[1]), m(h[1], r[0])),
            add(add(m(h[2], s[4]), m(h[3], s[3])), m(h[4], s[2])),
        );
        let d2 = add(
            add(m(h[0], r[2]), m(h[1], r[1])),
            add(add(m(h[2], r[0]), m(h[3], s[4])), m(h[4], s[3])),
        );
        let d3 = add(
            add(m(h[0], r[3]), m(h[1], r[2])),
            add(add(m(h[2], r[1]), m(h[3], r[0])), m(h[4], s[4])),
        );
        let d4 = add(
            add(m(h[0], r[4]), m(h[1], r[3])),
            add(add(m(h[2], r[2]), m(h[3], r[1])), m(h[4], r[0])),
        );
        [d0, d1, d2, d3, d4]
    }

    /// `h·r`, carried back to about 26 bits a limb.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn mul(&self, h: &[__m256i; 5]) -> [__m256i; 5] {
        carry(self.products(h))
    }
}

/// `v`, hidden from the optimizer at no cost (an empty `asm!` that claims to
/// change the register).
///
/// `_mm256_mul_epu32` reaches LLVM as a 64-bit multiply of operands masked
/// to 32 bits, and becomes `VPMULUDQ` only where instruction selection sees
/// the masks. Where LLVM can prove an operand small (our limbs are), it
/// deletes the mask; if the operand comes from another basic block (the loop's
/// accumulator, the precomputed powers), instruction selection no longer
/// knows it is small and emits three multiplies for one (measured: the loop
/// ran at less than half speed). Opaque operands keep their masks.
#[inline]
#[target_feature(enable = "avx2")]
fn opaque(mut v: __m256i) -> __m256i {
    // SAFETY: the template is a comment: no instruction runs, no memory,
    // stack or flags are touched; `v` stays the same valid vector.
    unsafe {
        core::arch::asm!("/* {0} */", inout(ymm_reg) v, options(pure, nomem, nostack, preserves_flags));
    }
    v
}

/// The lazy carry of OpenSSL's AVX2 code: two chains (from limb 0 and from
/// limb 3) interleaved, leaving each limb at most a bit over 26 bits.
#[inline]
#[target_feature(enable = "avx2")]
fn carry(d: [__m256i; 5]) -> [__m256i; 5] {
    let mask = _mm256_set1_epi64x(MASK26 as i64);
    let [mut d0, mut d1, mut d2, mut d3, mut d4] = d;
    let c3 = _mm256_srli_epi64::<26>(d3);
    d3 = _mm256_and_si256(d3, mask);
    let c0 = _mm256_srli_epi64::<26>(d0);
    d0 = _mm256_and_si256(d0, mask);
    d4 = _mm256_add_epi64(d4, c3);
    d1 = _mm256_add_epi64(d1, c0);
    let c4 = _mm256_srli_epi64::<26>(d4);
    d4 = _mm256_and_si256(d4, mask);
    let c1 = _mm256_srli_epi64::<26>(d1);
    d1 = _mm256_and_si256(d1, mask);
    // 5·c4 as c4 + 4·c4.
    d0 = _mm256_add_epi64(d0, _mm256_add_epi64(c4, _mm256_slli_epi64::<2>(c4)));
    d2 = _mm256_add_epi64(d2, c1);
    let c0 = _mm256_srli_epi64::<26>(d0);
    d0 = _mm256_and_si256(d0, mask);
    let c2 = _mm256_srli_epi64::<26>(d2);
    d2 = _mm256_and_si256(d2, mask);
    d1 = _mm256_add_epi64(d1, c0);
    d3 = _mm256_add_epi64(d3, c2);
    let c3 = _mm256_srli_epi64::<26>(d3);
    d3 = _mm256_and_si256(d3, mask);
    d4 = _mm256_add_epi64(d4, c3);
    [d0, d1, d2, d3, d4]
}

/// Four blocks as 26-bit limbs, in lane order 0, 2, 1, 3 (what the two
/// unpacks give; [`tag_avx2`] orders the last group's powers to match).
/// `hibit` is the 2^128 bit of each block at limb 4 (1 << 24), lane by lane.
#[inline]
#[target_feature(enable = "avx2")]
fn load_group(group: &[u8; GROUP], hibit: __m256i) -> [__m256i; 5] {
    // SAFETY: 64 readable bytes; `loadu` takes any alignment.
    let (a, b) = unsafe {
        (
            _mm256_loadu_si256(group.as_ptr().cast()),
            _mm256_loadu_si256(group.as_ptr().add(32).cast()),
        )
    };
    let lo = _mm256_unpacklo_epi64(a, b);
    let hi = _mm256_unpackhi_epi64(a, b);
    let mask = _mm256_set1_epi64x(MASK26 as i64);
    [
        _mm256_and_si256(lo, mask),
        _mm256_and_si256(_mm256_srli_epi64::<26>(lo), mask),
        _mm256_and_si256(
            _mm256_or_si256(_mm256_srli_epi64::<52>(lo), _mm256_slli_epi64::<12>(hi)),
            mask,
        ),
        _mm256_and_si256(_mm256_srli_epi64::<14>(hi), mask),
        _mm256_or_si256(_mm256_srli_epi64::<40>(hi), hibit),
    ]
}

#[inline]
#[target_feature(enable = "avx2")]
fn add5(a: [__m256i; 5], b: [__m256i; 5]) -> [__m256i; 5] {
    core::array::from_fn(|k| _mm256_add_epi64(a[k], b[k]))
}

/// The sum of the four lanes of `v`.
#[inline]
#[target_feature(enable = "avx2")]
fn lane_sum(v: __m256i) -> u64 {
    let s = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    _mm_cvtsi128_si64(_mm_add_epi64(s, _mm_unpackhi_epi64(s, s))) as u64
}

/// # Safety
/// The CPU has AVX2, and `msg.len() >= 64`.
#[target_feature(enable = "avx2")]
unsafe fn tag_avx2(otk: &OneTimeKey, msg: &[u8]) -> [u8; 16] {
    debug_assert!(msg.len() >= GROUP);
    let key = Key::new(otk);
    let blocks = msg.len().div_ceil(BLOCK);
    let prefix = blocks % 4;
    let groups = blocks / 4;

    // Powers r..r⁴ (clamped r times the previous power, on the scalar code).
    let mut p = [Acc {
        h0: key.r0,
        h1: key.r1,
        h2: 0,
    }; 4];
    for i in 1..4 {
        p[i] = p[i - 1];
        key.block(&mut p[i], 0, 0, 0);
    }
    // Lane order 0, 2, 1, 3: blocks 0 to 3 of the last group take r⁴..r.
    let last = Mul26::new([&p[3], &p[1], &p[2], &p[0]]);
    let r4 = last.broadcast_lane0();

    // The first `prefix` blocks, one by one, into lane 0.
    let mut h = Acc::default();
    key.blocks(&mut h, &msg[..prefix * BLOCK]);
    let mut h0 = limbs26(&h);
    let mut acc: [__m256i; 5] = core::array::from_fn(|k| _mm256_set_epi64x(0, 0, 0, h0[k] as i64));

    let hibit = _mm256_set1_epi64x(1 << 24);
    let body = &msg[prefix * BLOCK..];
    let (full, _) = body.as_chunks::<GROUP>();
    let mut rest = &full[..groups - 1];
    if rest.len() % 2 == 1 {
        acc = r4.mul(&add5(acc, load_group(&rest[0], hibit)));
        rest = &rest[1..];
    }
    if !rest.is_empty() {
        // Two groups per carry: acc ← (acc + m)·r⁸ + m'·r⁴. Only the first
        // product waits for `acc`, which halves the serial chain.
        let r8 = Mul26::from_limbs(r4.mul(&r4.r));
        let (pairs, _) = rest.as_chunks::<2>();
        for [g0, g1] in pairs {
            let d0 = r8.products(&add5(acc, load_group(g0, hibit)));
            let d1 = r4.products(&load_group(g1, hibit));
            acc = carry(add5(d0, d1));
        }
    }
    // The last group, padded when its last block is partial (no 2^128 bit
    // there: lane 3 holds block 3).
    let tail = &body[(groups - 1) * GROUP..];
    let m = if let Ok(group) = <&[u8; GROUP]>::try_from(tail) {
        load_group(group, hibit)
    } else {
        let mut padded = [0u8; GROUP];
        padded[..tail.len()].copy_from_slice(tail);
        padded[tail.len()] = 1;
        load_group(&padded, _mm256_set_epi64x(0, 1 << 24, 1 << 24, 1 << 24))
    };
    // The last products are summed across lanes before any carry: each is
    // below 2^59, their sums below 2^61, which the scalar carry takes.
    let d = last.products(&add5(acc, m));
    let mut sums: Limbs26 = core::array::from_fn(|k| lane_sum(d[k]));
    h = acc_from_limbs26(sums);
    let tag = key.finish(&h);
    h.zeroize();
    h0.zeroize();
    sums.zeroize();
    p.zeroize();
    tag
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::md5_scalar::tests::SplitMix;
    use crate::kernels::poly1305_scalar::otk_from_bytes;
    use crate::kernels::poly1305_scalar::tests::{edge_keys, lengths, reference};

    fn kernel() -> Option<Poly1305Avx2> {
        let k = Poly1305Avx2::new(Isa::detect());
        if k.is_none() {
            eprintln!("skipped: this CPU has no AVX2");
        }
        k
    }

    #[test]
    fn matches_reference_on_random_keys() {
        let Some(k) = kernel() else { return };
        let mut rng = SplitMix(0x4a);
        for len in lengths() {
            for _ in 0..3 {
                let otk: [u8; 32] = rng.bytes(32).try_into().expect("32");
                let msg = rng.bytes(len);
                assert_eq!(
                    k.tag(&otk_from_bytes(&otk), &msg),
                    reference(&otk, &msg),
                    "{len}"
                );
            }
        }
    }

    #[test]
    fn matches_reference_near_the_modulus() {
        let Some(k) = kernel() else { return };
        for otk in edge_keys() {
            for len in (60..=140).chain([255, 256, 1024, 1500, 4096]) {
                for fill in [0xff, 0xfe, 0x00] {
                    let msg = vec![fill; len];
                    assert_eq!(
                        k.tag(&otk_from_bytes(&otk), &msg),
                        reference(&otk, &msg),
                        "{len} {fill:x}"
                    );
                }
            }
        }
    }

    #[test]
    fn limb_conversions_round_trip() {
        let mut rng = SplitMix(0x26);
        for _ in 0..1000 {
            let h = Acc {
                h0: rng.next_u64(),
                h1: rng.next_u64(),
                h2: rng.next_u64() & 3,
            };
            let back = acc_from_limbs26(limbs26(&h));
            assert_eq!((back.h0, back.h1, back.h2), (h.h0, h.h1, h.h2));
        }
    }
}
