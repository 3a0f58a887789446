//! AES-128-GMAC (RFC 4543) with AES-NI and PCLMULQDQ: key setup, GF(2^128)
//! arithmetic, the one-packet kernel, and the entry to the batch kernel of
//! [`super::gmac_lanes`] (two packets per ymm register, VAES and VPCLMULQDQ).
//!
//! Written by hand because the `aes-gcm` crate spends about 340 cycles on a
//! 48-byte packet: it encrypts the counter block J0 before hashing instead of
//! beside it, reduces every 4 blocks, and goes through the generic AEAD
//! framing. Here E_K(J0) (40 cycles of AES latency) runs in parallel with the
//! GHASH, and GHASH multiplies each block of a group of up to 8 by its own
//! power of H, sums the unreduced products and reduces once per group.
//!
//! GHASH is computed as POLYVAL (RFC 8452 appendix A): with
//! `H' = mulX_POLYVAL(ByteReverse(H))`, `GHASH(H, X) =
//! ByteReverse(POLYVAL(H', ByteReverse(X_1), ...))`. POLYVAL keeps the bit
//! order of `PCLMULQDQ`, so a block costs one byte shuffle and no bit shifts;
//! the product `a·b·x^-128` is reduced with two carry-less multiplications by
//! `x^63 + x^62 + x^57` (Gueron's Montgomery folding). Products use
//! Karatsuba: three multiplications per block, with `h.lo ^ h.hi` of each
//! power precomputed.
//!
//! Not here: the portable path (the `aes-gcm` crate, in `crate::gmac`) and the
//! choice between the two, which `crate::gmac::Aes128Gmac` makes once per key.

#![cfg(target_arch = "x86_64")]

use core::arch::x86_64::{
    __m128i, __m256i, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_aeskeygenassist_si128,
    _mm_clmulepi64_si128, _mm_loadu_si128, _mm_set_epi8, _mm_set_epi64x, _mm_setzero_si128,
    _mm_shuffle_epi8, _mm_shuffle_epi32, _mm_slli_si128, _mm_srli_si128, _mm_storeu_si128,
    _mm_xor_si128, _mm256_broadcastsi128_si256, _mm256_set_m128i,
};
use core::fmt;

use zeroize::{Zeroize, ZeroizeOnDrop};

use super::{gmac_lanes, gmac_ymm_one};
use crate::Isa;

/// AES and GHASH block length in bytes.
pub(super) const BLOCK: usize = 16;

/// Blocks per GHASH group: one reduction per this many blocks, and the
/// number of powers of H kept.
pub(super) const GROUP: usize = 8;

/// Round keys, powers of H and their Karatsuba halves, for xmm and (broadcast)
/// for ymm. Zeroized on drop; `Debug` shows nothing.
#[derive(Zeroize, ZeroizeOnDrop)]
pub(crate) struct GmacKeys {
    /// AES-128 round keys.
    pub(super) rk: [__m128i; 11],
    /// `h[k - 1] = H'^k` in POLYVAL form (Montgomery: `H'^k · x^(-128(k-1))`).
    pub(super) h: [__m128i; GROUP],
    /// `kk[k - 1]`: the XOR of the two halves of `h[k - 1]`, in both halves.
    pub(super) kk: [__m128i; GROUP],
    /// `rk` with each key in both 128-bit lanes (zero without AVX2).
    pub(super) rk2: [__m256i; 11],
    /// `h` in both lanes (zero without AVX2).
    pub(super) h2: [__m256i; GROUP],
    /// `kk` in both lanes (zero without AVX2).
    pub(super) kk2: [__m256i; GROUP],
    /// Powers for two consecutive blocks of one packet: `hp[t]` holds
    /// `H'^(2t + 2)` in lane 0 and `H'^(2t + 1)` in lane 1 (zero without AVX2).
    pub(super) hp: [__m256i; GROUP / 2],
    /// `kk` of the same powers, lane by lane (zero without AVX2).
    pub(super) kkp: [__m256i; GROUP / 2],
}

impl fmt::Debug for GmacKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GmacKeys").finish_non_exhaustive()
    }
}

/// AES-128-GMAC on x86-64 with AES-NI and PCLMULQDQ, and with VAES and
/// VPCLMULQDQ on ymm registers for batches when present.
///
/// A value exists only when the CPU has the features its kernels use (checked
/// in [`GmacX86::new`]), which is what makes its safe methods sound.
#[derive(Debug)]
pub(crate) struct GmacX86 {
    keys: GmacKeys,
    /// Batches run two packets per ymm register (VAES, VPCLMULQDQ and AVX2
    /// checked present).
    lanes: bool,
}

impl GmacX86 {
    /// Sets up a 16-byte key. `None` when `isa` or the CPU lacks AES-NI or
    /// PCLMULQDQ, or for another key length. The ymm batch kernel runs when
    /// `isa.vaes` allows it (the `Isa` switch for 256-bit AES and carry-less
    /// multiplication alike) and the CPU has VAES, VPCLMULQDQ and AVX2.
    #[must_use]
    pub(crate) fn new(key: &[u8], isa: Isa) -> Option<Self> {
        use std::arch::is_x86_feature_detected as has;
        // `Isa` is a plain public struct: check the CPU too, so that a caller
        // cannot make us run an instruction the CPU lacks.
        let base = isa.aesni
            && isa.pclmul
            && has!("aes")
            && has!("pclmulqdq")
            && has!("sse4.1")
            && has!("ssse3");
        if !base || key.len() != BLOCK {
            return None;
        }
        let lanes = isa.vaes && isa.avx2 && has!("vaes") && has!("vpclmulqdq") && has!("avx2");
        let mut key_bytes = [0u8; BLOCK];
        key_bytes.copy_from_slice(key);
        // SAFETY: AES-NI, PCLMULQDQ, SSSE3 and SSE4.1 were detected just above.
        let mut keys = unsafe { expand(&key_bytes) };
        key_bytes.zeroize();
        if lanes {
            // SAFETY: AVX2 was detected just above.
            unsafe { broadcast_keys(&mut keys) };
        }
        Some(Self { keys, lanes })
    }

    /// Whether batches run on the ymm kernel.
    #[must_use]
    pub(crate) fn uses_lanes(&self) -> bool {
        self.lanes
    }

    /// The tag of one message under `nonce`.
    #[must_use]
    pub(crate) fn tag(&self, nonce: &[u8; 12], msg: &[u8]) -> [u8; 16] {
        if self.lanes {
            // SAFETY: `new` checked AES-NI, PCLMULQDQ, SSSE3, SSE4.1, and
            // AVX2 and VPCLMULQDQ since `self.lanes`.
            unsafe { gmac_ymm_one::tag_one_ymm(&self.keys, nonce, msg) }
        } else {
            // SAFETY: `new` checked AES-NI, PCLMULQDQ, SSSE3 and SSE4.1.
            unsafe { tag_one(&self.keys, nonce, msg) }
        }
    }

    /// The tags of `out.len()` messages: `out[i]` for nonce and message
    /// `input(i)`. Any mix of lengths.
    pub(crate) fn tag_batch<'m>(
        &self,
        input: impl Fn(usize) -> (&'m [u8; 12], &'m [u8]),
        out: &mut [[u8; 16]],
    ) {
        if self.lanes {
            // SAFETY: `new` checked AES-NI, PCLMULQDQ, SSSE3, SSE4.1, and VAES,
            // VPCLMULQDQ and AVX2 since `self.lanes`.
            unsafe { gmac_lanes::run_ymm(&self.keys, &input, out) }
        } else {
            // Independent packets one after another: the out-of-order core
            // overlaps 3 or 4 of them, which is most of what interleaving
            // xmm streams by hand would give.
            for (i, tag) in out.iter_mut().enumerate() {
                let (nonce, msg) = input(i);
                *tag = self.tag(nonce, msg);
            }
        }
    }
}

/// The byte-reversal shuffle between a GHASH block and a POLYVAL element.
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn bswap_mask() -> __m128i {
    _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
}

/// `x^63 + x^62 + x^57` in the high half: the reduction constant of POLYVAL.
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn poly() -> __m128i {
    _mm_set_epi64x(0xc200_0000_0000_0000_u64 as i64, 0)
}

/// Loads the 16 bytes of `msg` at `off`.
///
/// # Panics
/// When `off + 16 > msg.len()` (the callers' block counts rule it out).
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn load_block(msg: &[u8], off: usize) -> __m128i {
    let block = &msg[off..off + BLOCK];
    // SAFETY: 16 readable bytes; `loadu` takes any alignment.
    unsafe { _mm_loadu_si128(block.as_ptr().cast()) }
}

/// Stores a block into a 16-byte array.
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn store16(out: &mut [u8; 16], v: __m128i) {
    // SAFETY: 16 writable bytes; `storeu` takes any alignment.
    unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) }
}

/// `PSHUFB` masks that move the last `r` bytes of a 16-byte load to the front
/// and zero the rest: `SHIFT_DOWN[r][j] = 16 - r + j` for `j < r`.
pub(super) static SHIFT_DOWN: [[u8; 16]; 16] = {
    let mut t = [[0x80u8; 16]; 16];
    let mut r = 0;
    while r < 16 {
        let mut j = 0;
        while j < r {
            t[r][j] = (16 - r + j) as u8;
            j += 1;
        }
        r += 1;
    }
    t
};

/// The last, partial block of a message (`len % 16 != 0`), zero-filled, in
/// message byte order: from the 16 bytes that end the message when there are
/// as many, else from overlapping word loads (no copy, no per-byte loop).
#[inline]
#[target_feature(enable = "ssse3")]
pub(super) fn partial_block(msg: &[u8]) -> __m128i {
    let len = msg.len();
    let rem = len % BLOCK;
    if len >= BLOCK {
        let end = load_block(msg, len - BLOCK);
        // SAFETY: 16 readable bytes of the static table.
        let mask = unsafe { _mm_loadu_si128(SHIFT_DOWN[rem].as_ptr().cast()) };
        _mm_shuffle_epi8(end, mask)
    } else {
        let word = |at: usize, width: usize| {
            let mut b = [0u8; 8];
            b[..width].copy_from_slice(&msg[at..at + width]);
            u128::from(u64::from_le_bytes(b)) << (8 * at)
        };
        let v = match len {
            8.. => word(0, 8) | word(len - 8, 8),
            4..8 => word(0, 4) | word(len - 4, 4),
            1..4 => word(0, 1) | word(len / 2, 1) | word(len - 1, 1),
            0 => 0,
        };
        _mm_set_epi64x((v >> 64) as i64, v as i64)
    }
}

/// The counter block J0 = nonce ‖ 0x00000001 (NIST SP 800-38D section 7.1,
/// 96-bit IV).
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn counter_block(nonce: &[u8; 12]) -> __m128i {
    let (lo, hi) = nonce.split_at(8);
    let lo = u64::from_le_bytes(lo.try_into().unwrap_or_default());
    let hi = u32::from_le_bytes(hi.try_into().unwrap_or_default());
    _mm_set_epi64x((u64::from(hi) | 1 << 56) as i64, lo as i64)
}

/// The GCM length block of a message of `len` bytes as AAD and no
/// ciphertext, as a POLYVAL element: `len·8` in the high half.
#[inline]
#[target_feature(enable = "sse2")]
pub(super) fn length_block(len: usize) -> __m128i {
    _mm_set_epi64x((len as u64).wrapping_mul(8) as i64, 0)
}

/// `E_K(block)` with AES-128.
#[inline]
#[target_feature(enable = "aes,sse2")]
pub(super) fn encrypt(rk: &[__m128i; 11], block: __m128i) -> __m128i {
    let mut s = _mm_xor_si128(block, rk[0]);
    for key in &rk[1..10] {
        s = _mm_aesenc_si128(s, *key);
    }
    _mm_aesenclast_si128(s, rk[10])
}

/// Unreduced sum of Karatsuba products: low, middle and high 128-bit parts.
#[derive(Clone, Copy)]
pub(super) struct Product {
    lo: __m128i,
    mid: __m128i,
    hi: __m128i,
}

impl Product {
    #[inline]
    #[target_feature(enable = "sse2")]
    pub(super) fn zero() -> Self {
        let z = _mm_setzero_si128();
        Self {
            lo: z,
            mid: z,
            hi: z,
        }
    }

    /// Adds `x · h` (unreduced); `kk` holds `h.lo ^ h.hi`.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(super) fn add(&mut self, x: __m128i, h: __m128i, kk: __m128i) {
        let xx = _mm_xor_si128(x, _mm_shuffle_epi32::<0x4e>(x));
        self.lo = _mm_xor_si128(self.lo, _mm_clmulepi64_si128::<0x00>(x, h));
        self.hi = _mm_xor_si128(self.hi, _mm_clmulepi64_si128::<0x11>(x, h));
        self.mid = _mm_xor_si128(self.mid, _mm_clmulepi64_si128::<0x00>(xx, kk));
    }

    /// Adds `x · h` for an `x` whose low half is zero (the length block):
    /// two multiplications.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(super) fn add_high(&mut self, x: __m128i, h: __m128i, kk: __m128i) {
        self.hi = _mm_xor_si128(self.hi, _mm_clmulepi64_si128::<0x11>(x, h));
        self.mid = _mm_xor_si128(self.mid, _mm_clmulepi64_si128::<0x01>(x, kk));
    }

    /// The sum times `x^-128`, reduced: one POLYVAL element.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(super) fn reduce(self) -> __m128i {
        let mid = _mm_xor_si128(self.mid, _mm_xor_si128(self.lo, self.hi));
        let x01 = _mm_xor_si128(self.lo, _mm_slli_si128::<8>(mid));
        let x23 = _mm_xor_si128(self.hi, _mm_srli_si128::<8>(mid));
        montgomery(x23, x01)
    }
}

/// `[x23 : x01] · x^-128 mod P`: two 64-bit folds of the low half
/// (`[A1:A0] = X0·c; B = [X0^A1 : X1^A0]; [C1:C0] = B0·c;
/// result = [X3^B0^C1 : X2^B1^C0]`).
#[inline]
#[target_feature(enable = "pclmulqdq,sse2")]
pub(super) fn montgomery(x23: __m128i, x01: __m128i) -> __m128i {
    let a = _mm_clmulepi64_si128::<0x10>(x01, poly());
    let b = _mm_xor_si128(_mm_shuffle_epi32::<0x4e>(x01), a);
    let c = _mm_clmulepi64_si128::<0x10>(b, poly());
    _mm_xor_si128(x23, _mm_xor_si128(_mm_shuffle_epi32::<0x4e>(b), c))
}

/// `a · b · x^-128`, reduced.
#[inline]
#[target_feature(enable = "pclmulqdq,sse2")]
fn dot(a: __m128i, b: __m128i) -> __m128i {
    let kk = _mm_xor_si128(b, _mm_shuffle_epi32::<0x4e>(b));
    let mut p = Product::zero();
    p.add(a, b, kk);
    p.reduce()
}

/// Adds `count` whole message blocks from block `first` on, the first one
/// XORed with `carry` (the reduced hash so far), block `first + i` times
/// `H'^(top - i)`.
#[inline]
#[target_feature(enable = "pclmulqdq,ssse3")]
fn add_blocks(
    p: &mut Product,
    k: &GmacKeys,
    msg: &[u8],
    first: usize,
    count: usize,
    top: usize,
    carry: __m128i,
) {
    let bswap = bswap_mask();
    for i in 0..count {
        let mut x = _mm_shuffle_epi8(load_block(msg, BLOCK * (first + i)), bswap);
        if i == 0 {
            x = _mm_xor_si128(x, carry);
        }
        p.add(x, k.h[top - 1 - i], k.kk[top - 1 - i]);
    }
}

/// One-packet GMAC: E_K(J0) beside the GHASH of the message blocks and the
/// length block, reduced once per group of [`GROUP`] blocks.
///
/// Groups: a message of `m` blocks (length block included) splits into a
/// first group of `(m - 1) % 8 + 1` blocks and then groups of 8, so that the
/// partial block and the length block always fall in the last group, with the
/// fixed powers H'^2 and H'^1, and a group that follows another starts with a
/// whole message block.
///
/// # Safety
/// The CPU has AES-NI, PCLMULQDQ, SSSE3 and SSE4.1.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
pub(super) unsafe fn tag_one(k: &GmacKeys, nonce: &[u8; 12], msg: &[u8]) -> [u8; 16] {
    let ekj0 = encrypt(&k.rk, counter_block(nonce));
    let len = msg.len();
    let full = len / BLOCK;
    let partial = !len.is_multiple_of(BLOCK);
    let tail = 1 + usize::from(partial);
    let m = full + tail;

    let mut carry = _mm_setzero_si128();
    let mut at = 0;
    if m > GROUP {
        let first = (m - 1) % GROUP + 1;
        let mut p = Product::zero();
        add_blocks(&mut p, k, msg, 0, first, first, carry);
        carry = p.reduce();
        at = first;
        while m - at > GROUP {
            let mut p = Product::zero();
            add_blocks(&mut p, k, msg, at, GROUP, GROUP, carry);
            carry = p.reduce();
            at += GROUP;
        }
    }
    // The last group: whole blocks, then the partial block, then the length.
    // When it is also the first group, `carry` is zero; when it is not, it
    // has 8 blocks and so starts with a whole one.
    let g = m - at;
    let mut p = Product::zero();
    add_blocks(&mut p, k, msg, at, g - tail, g, carry);
    if partial {
        let x = _mm_shuffle_epi8(partial_block(msg), bswap_mask());
        p.add(x, k.h[1], k.kk[1]);
    }
    p.add_high(length_block(len), k.h[0], k.kk[0]);
    let s = _mm_shuffle_epi8(p.reduce(), bswap_mask());
    let mut tag = [0u8; 16];
    store16(&mut tag, _mm_xor_si128(s, ekj0));
    tag
}

/// One AES-128 key-expansion step (FIPS 197 section 5.2) from the previous
/// round key and `AESKEYGENASSIST` of it (as in `cmac_x86`).
#[inline]
#[target_feature(enable = "aes,sse2")]
fn expand_step(prev: __m128i, assist: __m128i) -> __m128i {
    let assist = _mm_shuffle_epi32::<0xff>(assist);
    let mut t = prev;
    t = _mm_xor_si128(t, _mm_slli_si128::<4>(t));
    t = _mm_xor_si128(t, _mm_slli_si128::<8>(t));
    _mm_xor_si128(t, assist)
}

/// `mulX_POLYVAL` (RFC 8452 appendix A) on an element as a little-endian integer.
fn mul_x(v: u128) -> u128 {
    let carry = 0u128.wrapping_sub(v >> 127);
    (v << 1) ^ (carry & (1 | 1 << 121 | 1 << 126 | 1 << 127))
}

/// AES-128 round keys, `H = E_K(0)` and the powers `H'^1..=H'^8` with their
/// Karatsuba halves; the ymm copies are left zero.
///
/// # Safety
/// The CPU has AES-NI, PCLMULQDQ, SSSE3 and SSE4.1.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1")]
unsafe fn expand(key: &[u8; 16]) -> GmacKeys {
    let mut rk = [_mm_setzero_si128(); 11];
    rk[0] = load_block(key, 0);
    macro_rules! step {
        ($i:literal, $rcon:literal) => {
            rk[$i] = expand_step(rk[$i - 1], _mm_aeskeygenassist_si128::<$rcon>(rk[$i - 1]));
        };
    }
    step!(1, 0x01);
    step!(2, 0x02);
    step!(3, 0x04);
    step!(4, 0x08);
    step!(5, 0x10);
    step!(6, 0x20);
    step!(7, 0x40);
    step!(8, 0x80);
    step!(9, 0x1b);
    step!(10, 0x36);

    // H = E_K(0^128); H' = mulX_POLYVAL(ByteReverse(H)). ByteReverse of the
    // big-endian block read as a little-endian integer is the big-endian read.
    let mut h_bytes = [0u8; 16];
    store16(&mut h_bytes, encrypt(&rk, _mm_setzero_si128()));
    let mut h_int = mul_x(u128::from_be_bytes(h_bytes));
    let mut h_le = h_int.to_le_bytes();
    let h1 = load_block(&h_le, 0);
    h_bytes.zeroize();
    h_int.zeroize();
    h_le.zeroize();

    let mut h = [h1; GROUP];
    for i in 1..GROUP {
        h[i] = dot(h[i - 1], h1);
    }
    let kk = h.map(|p| _mm_xor_si128(p, _mm_shuffle_epi32::<0x4e>(p)));
    // SAFETY: every bit pattern, zero too, is a valid `__m256i`; this needs no AVX.
    let zero: __m256i = unsafe { core::mem::zeroed() };
    GmacKeys {
        rk,
        h,
        kk,
        rk2: [zero; 11],
        h2: [zero; GROUP],
        kk2: [zero; GROUP],
        hp: [zero; GROUP / 2],
        kkp: [zero; GROUP / 2],
    }
}

/// Fills the ymm copies of the keys.
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
unsafe fn broadcast_keys(k: &mut GmacKeys) {
    k.rk2 = k.rk.map(|r| _mm256_broadcastsi128_si256(r));
    k.h2 = k.h.map(|r| _mm256_broadcastsi128_si256(r));
    k.kk2 = k.kk.map(|r| _mm256_broadcastsi128_si256(r));
    for t in 0..GROUP / 2 {
        k.hp[t] = _mm256_set_m128i(k.h[2 * t], k.h[2 * t + 1]);
        k.kkp[t] = _mm256_set_m128i(k.kk[2 * t], k.kk[2 * t + 1]);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use aes_gcm::{Aes128Gcm, KeyInit, Nonce, aead::AeadInOut};

    use super::*;

    /// splitmix64: a small deterministic generator for test inputs.
    pub(crate) struct SplitMix(pub(crate) u64);

    impl SplitMix {
        pub(crate) fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        pub(crate) fn bytes(&mut self, len: usize) -> Vec<u8> {
            (0..len).map(|_| self.next_u64() as u8).collect()
        }

        pub(crate) fn nonce(&mut self) -> [u8; 12] {
            let mut n = [0u8; 12];
            n.copy_from_slice(&self.bytes(12));
            n
        }
    }

    /// The `aes-gcm` tag, the reference every kernel is checked against.
    pub(crate) fn reference(key: &[u8], nonce: &[u8; 12], msg: &[u8]) -> [u8; 16] {
        let cipher = Aes128Gcm::new_from_slice(key).expect("key");
        let tag = cipher
            .encrypt_inout_detached(&Nonce::from(*nonce), msg, (&mut [][..]).into())
            .expect("tag");
        let mut out = [0u8; 16];
        out.copy_from_slice(&tag);
        out
    }

    /// Message lengths of the tests: every one to 300, and large ones.
    pub(crate) fn lengths() -> impl Iterator<Item = usize> {
        (0..=300).chain([1000, 1500, 2000, 4096])
    }

    /// The kernel with and without lanes, or `None` on a CPU without them.
    pub(crate) fn kernel(key: &[u8], lanes: bool) -> Option<GmacX86> {
        let isa = Isa {
            vaes: lanes,
            ..Isa::detect()
        };
        let k = GmacX86::new(key, isa)?;
        (k.uses_lanes() == lanes).then_some(k)
    }

    #[test]
    fn gcm_spec_test_case_1() {
        // McGrew-Viega, appendix B, test case 1: zero key, zero IV, nothing.
        let Some(k) = kernel(&[0; 16], false) else {
            return;
        };
        let mut want = [0u8; 16];
        hex::decode_to_slice("58e2fccefa7e3061367f1d57a4e7455a", &mut want).expect("hex");
        assert_eq!(k.tag(&[0; 12], &[]), want);
    }

    #[test]
    fn one_packet_matches_aes_gcm() {
        let mut rng = SplitMix(0x6d_6163);
        for _ in 0..3 {
            let key = rng.bytes(16);
            let Some(k) = kernel(&key, false) else {
                return;
            };
            for len in lengths() {
                let nonce = rng.nonce();
                let msg = rng.bytes(len);
                assert_eq!(k.tag(&nonce, &msg), reference(&key, &nonce, &msg), "{len}");
            }
        }
    }

    #[test]
    fn powers_are_successive_products() {
        let Some(k) = kernel(&[3; 16], false) else {
            return;
        };
        // SAFETY: `kernel` returned a value, so the CPU has PCLMULQDQ.
        let h2 = unsafe { dot(k.keys.h[0], k.keys.h[0]) };
        let h8 = unsafe { dot(k.keys.h[3], k.keys.h[3]) };
        let eq = |a: __m128i, b: __m128i| {
            let (mut x, mut y) = ([0u8; 16], [0u8; 16]);
            // SAFETY: SSE2 is part of x86-64.
            unsafe {
                store16(&mut x, a);
                store16(&mut y, b);
            }
            x == y
        };
        assert!(eq(h2, k.keys.h[1]));
        assert!(eq(h8, k.keys.h[7]));
    }

    #[test]
    fn rejects_other_key_lengths_and_the_portable_isa() {
        assert!(GmacX86::new(&[0; 32], Isa::detect()).is_none());
        assert!(GmacX86::new(&[0; 16], Isa::PORTABLE).is_none());
        assert!(
            GmacX86::new(
                &[0; 16],
                Isa {
                    pclmul: false,
                    ..Isa::detect()
                }
            )
            .is_none()
        );
    }
}
