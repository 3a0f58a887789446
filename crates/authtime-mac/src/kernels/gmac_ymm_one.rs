//! One-packet AES-128-GMAC with VPCLMULQDQ: two consecutive blocks of the
//! packet per ymm register, so that a 256-bit carry-less multiplication does
//! the work of two (Zen 4 issues one per 2 cycles, xmm or ymm alike).
//!
//! The GHASH stream (data blocks, then the length block) is prefixed with a
//! zero block when its length is odd, which leaves GHASH unchanged, so that
//! it splits into pairs that end with the length block. Lane 0 of a pair
//! holds the earlier block and takes the higher power of H. Groups of up to
//! 4 pairs (8 blocks) are summed unreduced, folded to one lane and reduced
//! once, as in [`super::gmac_x86::tag_one`], of which this is the wide form.

#![cfg(target_arch = "x86_64")]

use core::arch::x86_64::{
    __m128i, __m256i, _mm_setzero_si128, _mm_shuffle_epi8, _mm_xor_si128,
    _mm256_broadcastsi128_si256, _mm256_castsi256_si128, _mm256_clmulepi64_epi128,
    _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_set_m128i, _mm256_setzero_si256,
    _mm256_shuffle_epi8, _mm256_shuffle_epi32, _mm256_xor_si256, _mm256_zextsi128_si256,
};

use super::gmac_x86::{
    BLOCK, GmacKeys, bswap_mask, counter_block, encrypt, length_block, load_block, montgomery,
    partial_block, store16,
};

/// Pairs of blocks per group: 8 blocks, one reduction.
const PAIRS: usize = 4;

/// Unreduced Karatsuba sums over pairs of blocks, per lane.
#[derive(Clone, Copy)]
struct PairProduct {
    lo: __m256i,
    mid: __m256i,
    hi: __m256i,
}

impl PairProduct {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn zero() -> Self {
        let z = _mm256_setzero_si256();
        Self {
            lo: z,
            mid: z,
            hi: z,
        }
    }

    /// Adds `x · h` lane by lane; `kk` holds `h.lo ^ h.hi` of each lane.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn add(&mut self, x: __m256i, h: __m256i, kk: __m256i) {
        let xx = _mm256_xor_si256(x, _mm256_shuffle_epi32::<0x4e>(x));
        self.lo = _mm256_xor_si256(self.lo, _mm256_clmulepi64_epi128::<0x00>(x, h));
        self.hi = _mm256_xor_si256(self.hi, _mm256_clmulepi64_epi128::<0x11>(x, h));
        self.mid = _mm256_xor_si256(self.mid, _mm256_clmulepi64_epi128::<0x00>(xx, kk));
    }

    /// Both lanes summed and reduced: one POLYVAL element.
    #[inline]
    #[target_feature(enable = "avx2,pclmulqdq")]
    fn reduce(self) -> __m128i {
        let fold =
            |v: __m256i| _mm_xor_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let (lo, mid, hi) = (fold(self.lo), fold(self.mid), fold(self.hi));
        let mid = _mm_xor_si128(mid, _mm_xor_si128(lo, hi));
        let x01 = _mm_xor_si128(lo, core::arch::x86_64::_mm_slli_si128::<8>(mid));
        let x23 = _mm_xor_si128(hi, core::arch::x86_64::_mm_srli_si128::<8>(mid));
        montgomery(x23, x01)
    }
}

/// Where the pairs of one packet come from.
struct Stream<'a> {
    msg: &'a [u8],
    /// 1 when a zero block leads the stream, else 0.
    pad: usize,
    /// Number of pairs.
    pairs: usize,
}

impl Stream<'_> {
    /// Pair `j` when both blocks are whole message blocks (not the first pair
    /// of a padded stream, not the last pair), in message byte order.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn inner_pair(&self, j: usize) -> __m256i {
        let off = BLOCK * (2 * j - self.pad);
        let bytes = &self.msg[off..off + 2 * BLOCK];
        // SAFETY: 32 readable bytes; `loadu` takes any alignment.
        unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
    }

    /// Pair `j`, byte-reversed into POLYVAL order; any pair.
    #[inline]
    #[target_feature(enable = "avx2,ssse3")]
    fn pair(&self, j: usize, bswap: __m256i) -> __m256i {
        let bswap1 = bswap_mask();
        if j + 1 == self.pairs {
            // The last data block (whole or partial, or the zero block) and
            // the length block, already in POLYVAL order.
            let len = self.msg.len();
            let before = 2 * j + 1 - self.pad;
            let lo = if before == 0 {
                _mm_setzero_si128()
            } else if !len.is_multiple_of(BLOCK) {
                _mm_shuffle_epi8(partial_block(self.msg), bswap1)
            } else {
                _mm_shuffle_epi8(load_block(self.msg, BLOCK * (before - 1)), bswap1)
            };
            _mm256_set_m128i(length_block(len), lo)
        } else if j == 0 && self.pad == 1 {
            let b0 = _mm_shuffle_epi8(load_block(self.msg, 0), bswap1);
            _mm256_set_m128i(b0, _mm_setzero_si128())
        } else {
            _mm256_shuffle_epi8(self.inner_pair(j), bswap)
        }
    }
}

/// One-packet GMAC with two blocks per ymm register.
///
/// # Safety
/// The CPU has AES-NI, PCLMULQDQ, SSSE3, SSE4.1, AVX2 and VPCLMULQDQ.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1,avx2,vpclmulqdq")]
pub(super) unsafe fn tag_one_ymm(k: &GmacKeys, nonce: &[u8; 12], msg: &[u8]) -> [u8; 16] {
    let ekj0 = encrypt(&k.rk, counter_block(nonce));
    let m = msg.len().div_ceil(BLOCK) + 1;
    let s = Stream {
        msg,
        pad: m & 1,
        pairs: m.div_ceil(2),
    };
    let bswap = _mm256_broadcastsi128_si256(bswap_mask());
    let p = s.pairs;

    // The first group: `g` pairs through the general `pair`; with more than
    // one group, then groups of whole pairs, then a last group of 4 pairs
    // that ends with the length block.
    let g = if p <= PAIRS { p } else { (p - 1) % PAIRS + 1 };
    let mut acc = PairProduct::zero();
    for j in (0..g).rev() {
        acc.add(s.pair(j, bswap), k.hp[g - 1 - j], k.kkp[g - 1 - j]);
    }
    let mut carry = acc.reduce();
    let mut at = g;
    while at < p {
        let mut acc = PairProduct::zero();
        for j in (1..PAIRS).rev() {
            let x = if at + j + 1 == p {
                s.pair(at + j, bswap)
            } else {
                _mm256_shuffle_epi8(s.inner_pair(at + j), bswap)
            };
            acc.add(x, k.hp[PAIRS - 1 - j], k.kkp[PAIRS - 1 - j]);
        }
        // The first pair last: only it waits for the previous reduction.
        let x = _mm256_shuffle_epi8(s.inner_pair(at), bswap);
        let x = _mm256_xor_si256(x, _mm256_zextsi128_si256(carry));
        acc.add(x, k.hp[PAIRS - 1], k.kkp[PAIRS - 1]);
        carry = acc.reduce();
        at += PAIRS;
    }
    let tag = _mm_xor_si128(_mm_shuffle_epi8(carry, bswap_mask()), ekj0);
    let mut out = [0u8; 16];
    store16(&mut out, tag);
    out
}
