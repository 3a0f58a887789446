//! ChaCha20 one-time keys for Poly1305 (RFC 8439 section 2.6) with AVX2: one
//! block with its four rows in xmm registers, and eight blocks for eight
//! nonces at once with one state word per ymm register (a batch's keys).
//!
//! Written by hand because the `chacha20` crate is a stream cipher: for one
//! 32-byte key it sets up and computes four blocks (see
//! [`super::chacha_scalar`]), and it has no way to run blocks of different
//! nonces side by side.
//!
//! The one-block kernel rotates rows `a`, `c` and `d` between the column and
//! the diagonal rounds, not `b`, `c` and `d` as usual: `a` and `d` are final
//! several steps before the round ends, so their shuffles run in the shadow
//! of the chain through `b`, and each round costs its 14 dependent steps only.
//!
//! Not here: the portable one-block path ([`super::chacha_scalar`]) and the
//! choice between them (`crate::poly1305_chacha`).

#![cfg(target_arch = "x86_64")]

use core::arch::x86_64::{
    __m128i, __m256i, _mm_add_epi32, _mm_or_si128, _mm_set_epi32, _mm_setr_epi8, _mm_shuffle_epi8,
    _mm_shuffle_epi32, _mm_slli_epi32, _mm_srli_epi32, _mm_storeu_si128, _mm_xor_si128,
    _mm256_add_epi32, _mm256_or_si256, _mm256_permute2x128_si256, _mm256_set_epi32,
    _mm256_set1_epi32, _mm256_setr_epi8, _mm256_setzero_si256, _mm256_shuffle_epi8,
    _mm256_slli_epi32, _mm256_srli_epi32, _mm256_storeu_si256, _mm256_unpackhi_epi32,
    _mm256_unpackhi_epi64, _mm256_unpacklo_epi32, _mm256_unpacklo_epi64, _mm256_xor_si256,
};

use super::chacha_scalar::{SIGMA, nonce_words};
use super::poly1305_scalar::OneTimeKey;
use crate::Isa;

/// Blocks (one-time keys) per call of the batch kernel.
pub(crate) const LANES: usize = 8;

/// The ChaCha20 kernels of this CPU. A value exists only when the CPU has
/// AVX2 (checked in [`ChaChaX86::new`]), which makes its safe methods sound.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChaChaX86(());

impl ChaChaX86 {
    /// `None` when `isa` or the CPU lacks AVX2.
    #[must_use]
    pub(crate) fn new(isa: Isa) -> Option<Self> {
        // `Isa` is a plain public struct: check the CPU too.
        (isa.avx2 && std::arch::is_x86_feature_detected!("avx2")).then_some(Self(()))
    }

    /// The one-time key of (`key`, `nonce`), one block in xmm registers.
    #[inline]
    #[must_use]
    pub(crate) fn one_time_key(self, key: &[u32; 8], nonce: &[u8; 12]) -> OneTimeKey {
        // SAFETY: `new` checked AVX2 (which includes SSSE3).
        unsafe { one_block(key, nonce) }
    }

    /// The one-time keys of eight nonces under one key: `out[i]` for `nonces[i]`.
    #[inline]
    pub(crate) fn one_time_keys(
        self,
        key: &[u32; 8],
        nonces: &[&[u8; 12]; LANES],
        out: &mut [OneTimeKey; LANES],
    ) {
        // SAFETY: `new` checked AVX2.
        unsafe { eight_blocks(key, nonces, out) }
    }
}

#[inline]
#[target_feature(enable = "avx2")]
fn rot16(v: __m128i) -> __m128i {
    _mm_shuffle_epi8(
        v,
        _mm_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13),
    )
}

#[inline]
#[target_feature(enable = "avx2")]
fn rot8(v: __m128i) -> __m128i {
    _mm_shuffle_epi8(
        v,
        _mm_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14),
    )
}

#[inline]
#[target_feature(enable = "avx2")]
fn rotl<const L: i32, const R: i32>(v: __m128i) -> __m128i {
    _mm_or_si128(_mm_slli_epi32::<L>(v), _mm_srli_epi32::<R>(v))
}

/// One column (or, after the rotation of rows, diagonal) round on the four
/// rows: four quarter rounds side by side.
#[inline]
#[target_feature(enable = "avx2")]
fn half_round(a: &mut __m128i, b: &mut __m128i, c: &mut __m128i, d: &mut __m128i) {
    *a = _mm_add_epi32(*a, *b);
    *d = rot16(_mm_xor_si128(*d, *a));
    *c = _mm_add_epi32(*c, *d);
    *b = rotl::<12, 20>(_mm_xor_si128(*b, *c));
    *a = _mm_add_epi32(*a, *b);
    *d = rot8(_mm_xor_si128(*d, *a));
    *c = _mm_add_epi32(*c, *d);
    *b = rotl::<7, 25>(_mm_xor_si128(*b, *c));
}

/// One block for counter 0, its first 32 bytes.
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
unsafe fn one_block(key: &[u32; 8], nonce: &[u8; 12]) -> OneTimeKey {
    let n = nonce_words(nonce);
    // `as i32` reinterprets the words' bits, as `_mm_set_epi32` wants.
    let word = |w: u32| w as i32;
    let a0 = _mm_set_epi32(
        word(SIGMA[3]),
        word(SIGMA[2]),
        word(SIGMA[1]),
        word(SIGMA[0]),
    );
    let b0 = _mm_set_epi32(word(key[3]), word(key[2]), word(key[1]), word(key[0]));
    let (mut a, mut b) = (a0, b0);
    let mut c = _mm_set_epi32(word(key[7]), word(key[6]), word(key[5]), word(key[4]));
    let mut d = _mm_set_epi32(word(n[2]), word(n[1]), word(n[0]), 0);
    for _ in 0..10 {
        half_round(&mut a, &mut b, &mut c, &mut d);
        // Diagonals: lane j of `b` meets a[j-1], c[j+1], d[j+2].
        a = _mm_shuffle_epi32::<0x93>(a);
        c = _mm_shuffle_epi32::<0x39>(c);
        d = _mm_shuffle_epi32::<0x4e>(d);
        half_round(&mut a, &mut b, &mut c, &mut d);
        a = _mm_shuffle_epi32::<0x39>(a);
        c = _mm_shuffle_epi32::<0x93>(c);
        d = _mm_shuffle_epi32::<0x4e>(d);
    }
    let mut out = [0u64; 4];
    // SAFETY: 32 writable bytes; `storeu` takes any alignment; on x86 the
    // little-endian words of the block are its bytes in order.
    unsafe {
        _mm_storeu_si128(out.as_mut_ptr().cast(), _mm_add_epi32(a, a0));
        _mm_storeu_si128(out.as_mut_ptr().add(2).cast(), _mm_add_epi32(b, b0));
    }
    out
}

#[inline]
#[target_feature(enable = "avx2")]
fn rot16x8(v: __m256i) -> __m256i {
    _mm256_shuffle_epi8(
        v,
        _mm256_setr_epi8(
            2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11,
            8, 9, 14, 15, 12, 13,
        ),
    )
}

#[inline]
#[target_feature(enable = "avx2")]
fn rot8x8(v: __m256i) -> __m256i {
    _mm256_shuffle_epi8(
        v,
        _mm256_setr_epi8(
            3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9,
            10, 15, 12, 13, 14,
        ),
    )
}

#[inline]
#[target_feature(enable = "avx2")]
fn rotlx8<const L: i32, const R: i32>(v: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_slli_epi32::<L>(v), _mm256_srli_epi32::<R>(v))
}

/// A quarter round on state words `a, b, c, d` of eight blocks.
#[inline]
#[target_feature(enable = "avx2")]
fn quarter_round_x8(x: &mut [__m256i; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = _mm256_add_epi32(x[a], x[b]);
    x[d] = rot16x8(_mm256_xor_si256(x[d], x[a]));
    x[c] = _mm256_add_epi32(x[c], x[d]);
    x[b] = rotlx8::<12, 20>(_mm256_xor_si256(x[b], x[c]));
    x[a] = _mm256_add_epi32(x[a], x[b]);
    x[d] = rot8x8(_mm256_xor_si256(x[d], x[a]));
    x[c] = _mm256_add_epi32(x[c], x[d]);
    x[b] = rotlx8::<7, 25>(_mm256_xor_si256(x[b], x[c]));
}

/// Eight blocks for counter 0 and eight nonces, the first 32 bytes of each.
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
unsafe fn eight_blocks(key: &[u32; 8], nonces: &[&[u8; 12]; LANES], out: &mut [OneTimeKey; LANES]) {
    let n: [[u32; 3]; LANES] = core::array::from_fn(|i| nonce_words(nonces[i]));
    let splat = |w: u32| _mm256_set1_epi32(w as i32);
    let lane = |j: usize| {
        let w = |i: usize| n[i][j] as i32;
        _mm256_set_epi32(w(7), w(6), w(5), w(4), w(3), w(2), w(1), w(0))
    };
    let init: [__m256i; 8] = core::array::from_fn(|i| {
        if i < 4 {
            splat(SIGMA[i])
        } else {
            splat(key[i - 4])
        }
    });
    let mut x = [
        init[0],
        init[1],
        init[2],
        init[3],
        init[4],
        init[5],
        init[6],
        init[7],
        splat(key[4]),
        splat(key[5]),
        splat(key[6]),
        splat(key[7]),
        _mm256_setzero_si256(),
        lane(0),
        lane(1),
        lane(2),
    ];
    for _ in 0..10 {
        quarter_round_x8(&mut x, 0, 4, 8, 12);
        quarter_round_x8(&mut x, 1, 5, 9, 13);
        quarter_round_x8(&mut x, 2, 6, 10, 14);
        quarter_round_x8(&mut x, 3, 7, 11, 15);
        quarter_round_x8(&mut x, 0, 5, 10, 15);
        quarter_round_x8(&mut x, 1, 6, 11, 12);
        quarter_round_x8(&mut x, 2, 7, 8, 13);
        quarter_round_x8(&mut x, 3, 4, 9, 14);
    }
    let w: [__m256i; 8] = core::array::from_fn(|i| _mm256_add_epi32(x[i], init[i]));
    // Transpose 8×8 words: t holds pairs, u quads; the low 128 bits of
    // u[k] are words 0..4 of block k, the high ones of block k + 4.
    let t = [
        _mm256_unpacklo_epi32(w[0], w[1]),
        _mm256_unpackhi_epi32(w[0], w[1]),
        _mm256_unpacklo_epi32(w[2], w[3]),
        _mm256_unpackhi_epi32(w[2], w[3]),
        _mm256_unpacklo_epi32(w[4], w[5]),
        _mm256_unpackhi_epi32(w[4], w[5]),
        _mm256_unpacklo_epi32(w[6], w[7]),
        _mm256_unpackhi_epi32(w[6], w[7]),
    ];
    let u = [
        _mm256_unpacklo_epi64(t[0], t[2]),
        _mm256_unpackhi_epi64(t[0], t[2]),
        _mm256_unpacklo_epi64(t[1], t[3]),
        _mm256_unpackhi_epi64(t[1], t[3]),
        _mm256_unpacklo_epi64(t[4], t[6]),
        _mm256_unpackhi_epi64(t[4], t[6]),
        _mm256_unpacklo_epi64(t[5], t[7]),
        _mm256_unpackhi_epi64(t[5], t[7]),
    ];
    for k in 0..4 {
        let (lo, hi) = (u[k], u[k + 4]);
        // SAFETY: 32 writable bytes each; `storeu` takes any alignment
        // (the words are little-endian, as in `one_block`).
        unsafe {
            _mm256_storeu_si256(
                out[k].as_mut_ptr().cast(),
                _mm256_permute2x128_si256::<0x20>(lo, hi),
            );
            _mm256_storeu_si256(
                out[k + 4].as_mut_ptr().cast(),
                _mm256_permute2x128_si256::<0x31>(lo, hi),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use core::arch::x86_64::_mm_loadu_si128;

    use super::*;
    use crate::kernels::chacha_scalar::{key_words, tests::reference};
    use crate::kernels::md5_scalar::tests::SplitMix;
    use crate::kernels::poly1305_scalar::otk_to_bytes;

    fn kernel() -> Option<ChaChaX86> {
        let k = ChaChaX86::new(Isa::detect());
        if k.is_none() {
            eprintln!("skipped: this CPU has no AVX2");
        }
        k
    }

    #[test]
    fn one_block_matches_reference() {
        let Some(k) = kernel() else { return };
        let mut rng = SplitMix(21);
        for _ in 0..500 {
            let key: [u8; 32] = rng.bytes(32).try_into().expect("32");
            let nonce: [u8; 12] = rng.bytes(12).try_into().expect("12");
            assert_eq!(
                otk_to_bytes(&k.one_time_key(&key_words(&key), &nonce)),
                reference(&key, &nonce)
            );
        }
    }

    #[test]
    fn eight_blocks_match_reference() {
        let Some(k) = kernel() else { return };
        let mut rng = SplitMix(22);
        for _ in 0..100 {
            let key: [u8; 32] = rng.bytes(32).try_into().expect("32");
            let nonces: Vec<[u8; 12]> = (0..LANES)
                .map(|_| rng.bytes(12).try_into().expect("12"))
                .collect();
            let refs: [&[u8; 12]; LANES] = core::array::from_fn(|i| &nonces[i]);
            let mut out = [[0u64; 4]; LANES];
            k.one_time_keys(&key_words(&key), &refs, &mut out);
            for (nonce, got) in nonces.iter().zip(&out) {
                assert_eq!(otk_to_bytes(got), reference(&key, nonce));
            }
        }
    }

    fn load16(b: &[u8; 16]) -> __m128i {
        // SAFETY: 16 readable bytes; `loadu` takes any alignment.
        unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
    }

    #[test]
    fn rotations_rotate() {
        let v: [u8; 16] = core::array::from_fn(|i| (i * 17 + 3) as u8);
        let words = |x: __m128i| {
            let mut b = [0u8; 16];
            // SAFETY: 16 writable bytes.
            unsafe { _mm_storeu_si128(b.as_mut_ptr().cast(), x) };
            b
        };
        let want = |r: u32| {
            let mut b = [0u8; 16];
            for (i, c) in v.chunks_exact(4).enumerate() {
                let w = u32::from_le_bytes(c.try_into().expect("4")).rotate_left(r);
                b[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
            }
            b
        };
        if kernel().is_none() {
            return;
        }
        // SAFETY: `kernel` found AVX2.
        let got = unsafe {
            [
                rot16(load16(&v)),
                rot8(load16(&v)),
                rotl::<12, 20>(load16(&v)),
            ]
        };
        assert_eq!(words(got[0]), want(16));
        assert_eq!(words(got[1]), want(8));
        assert_eq!(words(got[2]), want(12));
    }
}
