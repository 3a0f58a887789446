//! The batch kernel of AES-128-GMAC: two packets per ymm register, with VAES
//! for their two E_K(J0) and VPCLMULQDQ for their two GHASH streams.
//!
//! Lane 0 of every register carries one packet, lane 1 the next. Two packets
//! of different block counts are aligned at their ends: the shorter one is
//! prefixed with zero blocks, which leave GHASH unchanged (a zero block XORed
//! into a zero state multiplies to zero), so the powers of H and the groups
//! of the one-packet kernel apply unchanged. Packets run in input order; a
//! batch of one size wastes nothing, and a mixed batch wastes the padding of
//! each pair.
//!
//! Not here: key setup, the field arithmetic's reasoning and the one-packet
//! kernel, in [`super::gmac_x86`].

#![cfg(target_arch = "x86_64")]

use core::arch::x86_64::{
    __m128i, __m256i, _mm256_aesenc_epi128, _mm256_aesenclast_epi128, _mm256_broadcastsi128_si256,
    _mm256_castsi256_si128, _mm256_clmulepi64_epi128, _mm256_extracti128_si256,
    _mm256_loadu2_m128i, _mm256_set_epi64x, _mm256_set_m128i, _mm256_setzero_si256,
    _mm256_shuffle_epi8, _mm256_shuffle_epi32, _mm256_slli_si256, _mm256_srli_si256,
    _mm256_xor_si256,
};

use super::gmac_x86::{
    BLOCK, GROUP, GmacKeys, bswap_mask, counter_block, load_block, partial_block, poly, store16,
};
use super::gmac_ymm_one::tag_one_ymm;

/// The block a shorter packet is prefixed with.
static ZERO_BLOCK: [u8; BLOCK] = [0; BLOCK];

/// Where a packet's blocks come from: `pad` zero blocks, then the `full`
/// whole blocks of the message, then its partial block (copied out,
/// zero-filled) if it has one.
#[derive(Clone, Copy)]
struct Lane {
    /// Address of padded block 0 if it were a message block: block `i` of
    /// the message region is at `base + 16 i`. Never read outside that region.
    base: *const u8,
    /// First and end block of the message region.
    start: usize,
    end: usize,
    /// The zero-filled partial block (or the zero block when there is none).
    partial: *const u8,
}

impl Lane {
    /// Address of block `i` of the padded stream.
    #[inline]
    fn block(&self, i: usize) -> *const __m128i {
        use core::hint::select_unpredictable as select;
        let outside = select(i < self.start, ZERO_BLOCK.as_ptr(), self.partial);
        let inside = i >= self.start && i < self.end;
        select(inside, self.base.wrapping_add(BLOCK * i), outside).cast()
    }
}

/// Unreduced sums of Karatsuba products of two lanes.
#[derive(Clone, Copy)]
struct Product2 {
    lo: __m256i,
    mid: __m256i,
    hi: __m256i,
}

impl Product2 {
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

    /// Adds `x · h` in each lane; `kk` holds `h.lo ^ h.hi`.
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn add(&mut self, x: __m256i, h: __m256i, kk: __m256i) {
        let xx = _mm256_xor_si256(x, _mm256_shuffle_epi32::<0x4e>(x));
        self.lo = _mm256_xor_si256(self.lo, _mm256_clmulepi64_epi128::<0x00>(x, h));
        self.hi = _mm256_xor_si256(self.hi, _mm256_clmulepi64_epi128::<0x11>(x, h));
        self.mid = _mm256_xor_si256(self.mid, _mm256_clmulepi64_epi128::<0x00>(xx, kk));
    }

    /// Adds `x · h` for an `x` whose low halves are zero (the length blocks).
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn add_high(&mut self, x: __m256i, h: __m256i, kk: __m256i) {
        self.hi = _mm256_xor_si256(self.hi, _mm256_clmulepi64_epi128::<0x11>(x, h));
        self.mid = _mm256_xor_si256(self.mid, _mm256_clmulepi64_epi128::<0x01>(x, kk));
    }

    /// Each lane's sum times `x^-128`, reduced (as `gmac_x86::montgomery`).
    #[inline]
    #[target_feature(enable = "avx2,vpclmulqdq")]
    fn reduce(self) -> __m256i {
        let mid = _mm256_xor_si256(self.mid, _mm256_xor_si256(self.lo, self.hi));
        let x01 = _mm256_xor_si256(self.lo, _mm256_slli_si256::<8>(mid));
        let x23 = _mm256_xor_si256(self.hi, _mm256_srli_si256::<8>(mid));
        let c = _mm256_broadcastsi128_si256(poly());
        let a = _mm256_clmulepi64_epi128::<0x10>(x01, c);
        let b = _mm256_xor_si256(_mm256_shuffle_epi32::<0x4e>(x01), a);
        let d = _mm256_clmulepi64_epi128::<0x10>(b, c);
        _mm256_xor_si256(x23, _mm256_xor_si256(_mm256_shuffle_epi32::<0x4e>(b), d))
    }
}

/// Adds data blocks `at..at + count` of each pair, block `at + i` times
/// `H'^(top - i)`, the first one XORed with `carry`. Block `at` goes last:
/// only its product waits for the previous group's reduction.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn add_run<const W: usize>(
    k: &GmacKeys,
    p: &mut [Product2; W],
    block: &impl Fn(usize, usize) -> __m256i,
    (at, count, top): (usize, usize, usize),
    carry: &[__m256i; W],
) {
    for i in (0..count).rev() {
        let (h, kk) = (k.h2[top - 1 - i], k.kk2[top - 1 - i]);
        for q in 0..W {
            let mut x = block(at + i, q);
            if i == 0 {
                x = _mm256_xor_si256(x, carry[q]);
            }
            p[q].add(x, h, kk);
        }
    }
}

/// The GHASH of `W` register pairs of `N` data blocks each (`N < GROUP`:
/// one group, one reduction) plus their length blocks.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn ghash_short<const W: usize, const N: usize>(
    k: &GmacKeys,
    length: &[__m256i; W],
    block: &impl Fn(usize, usize) -> __m256i,
) -> [__m256i; W] {
    let mut p = [Product2::zero(); W];
    for q in 0..W {
        p[q].add_high(length[q], k.h2[0], k.kk2[0]);
    }
    add_run(
        k,
        &mut p,
        block,
        (0, N, N + 1),
        &[_mm256_setzero_si256(); W],
    );
    p.map(|p| p.reduce())
}

/// The GHASH of `W` register pairs of `n` data blocks each plus their
/// length blocks `length`. `block(i, q)` is data block `i` of pair `q`,
/// byte-reversed into POLYVAL order.
///
/// Groups as in `gmac_x86::tag_one`: up to 7 data blocks and the length
/// block make one group; longer streams have a first group of `n % 8 + 1`
/// blocks (with the length block, `n + 1` is then a multiple of 8 apart from
/// it), groups of 8, and a last group of 7 data blocks and the length block.
/// All but the first have constant powers and unroll.
#[inline]
#[target_feature(enable = "avx2,vpclmulqdq")]
fn ghash_groups<const W: usize>(
    k: &GmacKeys,
    n: usize,
    length: &[__m256i; W],
    block: impl Fn(usize, usize) -> __m256i,
) -> [__m256i; W] {
    match n {
        0 => return ghash_short::<W, 0>(k, length, &block),
        1 => return ghash_short::<W, 1>(k, length, &block),
        2 => return ghash_short::<W, 2>(k, length, &block),
        3 => return ghash_short::<W, 3>(k, length, &block),
        4 => return ghash_short::<W, 4>(k, length, &block),
        5 => return ghash_short::<W, 5>(k, length, &block),
        6 => return ghash_short::<W, 6>(k, length, &block),
        7 => return ghash_short::<W, 7>(k, length, &block),
        _ => {}
    }
    let first = n % GROUP + 1;
    let mut p = [Product2::zero(); W];
    add_run(
        k,
        &mut p,
        &block,
        (0, first, first),
        &[_mm256_setzero_si256(); W],
    );
    let mut carry = p.map(|p| p.reduce());
    let mut at = first;
    while n - at > GROUP - 1 {
        let mut p = [Product2::zero(); W];
        add_run(k, &mut p, &block, (at, GROUP, GROUP), &carry);
        carry = p.map(|p| p.reduce());
        at += GROUP;
    }
    let mut p = [Product2::zero(); W];
    for q in 0..W {
        p[q].add_high(length[q], k.h2[0], k.kk2[0]);
    }
    add_run(k, &mut p, &block, (at, GROUP - 1, GROUP), &carry);
    p.map(|p| p.reduce())
}

/// E_K(J0) of `W` register pairs of packets, from their nonces.
#[inline]
#[target_feature(enable = "avx2,vaes")]
fn encrypt_counters<const W: usize>(k: &GmacKeys, nonce: &[[&[u8; 12]; 2]; W]) -> [__m256i; W] {
    let mut s = [_mm256_setzero_si256(); W];
    for q in 0..W {
        let j0 = _mm256_set_m128i(counter_block(nonce[q][1]), counter_block(nonce[q][0]));
        s[q] = _mm256_xor_si256(j0, k.rk2[0]);
    }
    for key in &k.rk2[1..10] {
        for s in &mut s {
            *s = _mm256_aesenc_epi128(*s, *key);
        }
    }
    s.map(|s| _mm256_aesenclast_epi128(s, k.rk2[10]))
}

/// Writes the tags `ghash ^ ekj0` of pairs `q` to `out[first + 2q]` and
/// `out[first + 2q + 1]`.
#[inline]
#[target_feature(enable = "avx2")]
fn finish<const W: usize>(
    ghash: &[__m256i; W],
    ekj0: &[__m256i; W],
    first: usize,
    out: &mut [[u8; 16]],
) {
    let bswap = _mm256_broadcastsi128_si256(bswap_mask());
    for q in 0..W {
        let t = _mm256_xor_si256(_mm256_shuffle_epi8(ghash[q], bswap), ekj0[q]);
        store16(&mut out[first + 2 * q], _mm256_castsi256_si128(t));
        store16(
            &mut out[first + 2 * q + 1],
            _mm256_extracti128_si256::<1>(t),
        );
    }
}

/// The tags of `2 * W` packets of one length side by side: packets `2q` and
/// `2q + 1` in the lanes of register `q`.
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1,avx2,vaes,vpclmulqdq")]
fn tag_uniform<const W: usize>(
    k: &GmacKeys,
    first: usize,
    nonce: &[[&[u8; 12]; 2]; W],
    msg: &[[&[u8]; 2]; W],
    out: &mut [[u8; 16]],
) {
    let ekj0 = encrypt_counters(k, nonce);
    let len = msg[0][0].len();
    let full = len / BLOCK;
    let bits = (len as u64).wrapping_mul(8) as i64;
    let length = [_mm256_set_epi64x(bits, 0, bits, 0); W];
    let bswap = _mm256_broadcastsi128_si256(bswap_mask());
    let ghash = ghash_groups(k, len.div_ceil(BLOCK), &length, |i, q| {
        let [a, b] = msg[q];
        let x = if i < full {
            _mm256_set_m128i(load_block(b, BLOCK * i), load_block(a, BLOCK * i))
        } else {
            _mm256_set_m128i(partial_block(b), partial_block(a))
        };
        _mm256_shuffle_epi8(x, bswap)
    });
    finish(&ghash, &ekj0, first, out);
}

/// The tags of `2 * W` packets of any lengths side by side, all padded to
/// the longest block count.
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1,avx2,vaes,vpclmulqdq")]
fn tag_mixed<const W: usize>(
    k: &GmacKeys,
    first: usize,
    nonce: &[[&[u8; 12]; 2]; W],
    msg: &[[&[u8]; 2]; W],
    out: &mut [[u8; 16]],
) {
    let ekj0 = encrypt_counters(k, nonce);
    // Data blocks (the length block aside) of the longest packet.
    let n = msg
        .iter()
        .flatten()
        .fold(0, |n, m| n.max(m.len().div_ceil(BLOCK)));
    let mut partials = [[[0u8; BLOCK]; 2]; W];
    let mut lanes = [[Lane {
        base: ZERO_BLOCK.as_ptr(),
        start: 0,
        end: 0,
        partial: ZERO_BLOCK.as_ptr(),
    }; 2]; W];
    let mut length = [_mm256_setzero_si256(); W];
    for q in 0..W {
        for l in 0..2 {
            let m = msg[q][l];
            let start = n - m.len().div_ceil(BLOCK);
            let lane = &mut lanes[q][l];
            lane.base = m.as_ptr().wrapping_sub(BLOCK * start);
            lane.start = start;
            lane.end = start + m.len() / BLOCK;
            if !m.len().is_multiple_of(BLOCK) {
                store16(&mut partials[q][l], partial_block(m));
                lane.partial = partials[q][l].as_ptr();
            }
        }
        let bits = msg[q].map(|m| (m.len() as u64).wrapping_mul(8) as i64);
        length[q] = _mm256_set_epi64x(bits[1], 0, bits[0], 0);
    }
    let bswap = _mm256_broadcastsi128_si256(bswap_mask());
    let ghash = ghash_groups(k, n, &length, |i, q| {
        let [a, b] = lanes[q];
        // SAFETY: `Lane::block` points at 16 readable bytes: a block of the
        // message's whole blocks, its copied partial block, or the zero block.
        let x = unsafe { _mm256_loadu2_m128i(b.block(i), a.block(i)) };
        _mm256_shuffle_epi8(x, bswap)
    });
    finish(&ghash, &ekj0, first, out);
}

/// The tags of `2 * W` packets from `first` on.
#[inline]
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1,avx2,vaes,vpclmulqdq")]
fn tag_wide<'m, const W: usize>(
    k: &GmacKeys,
    first: usize,
    input: &impl Fn(usize) -> (&'m [u8; 12], &'m [u8]),
    out: &mut [[u8; 16]],
) {
    let mut nonce: [[&[u8; 12]; 2]; W] = [[&[0; 12]; 2]; W];
    let mut msg: [[&[u8]; 2]; W] = [[&[]; 2]; W];
    let mut uniform = true;
    for q in 0..W {
        for l in 0..2 {
            (nonce[q][l], msg[q][l]) = input(first + 2 * q + l);
            uniform &= msg[q][l].len() == msg[0][0].len();
        }
    }
    if uniform {
        tag_uniform(k, first, &nonce, &msg, out);
    } else {
        tag_mixed(k, first, &nonce, &msg, out);
    }
}

/// Packets per call of the widest kernel: 4 registers of 2.
const WIDE: usize = 2;

/// The tags `out[i]` of packets `input(i)`, `2 * WIDE` at a time, then by pairs (the odd
/// last one on the one-packet kernel).
///
/// # Safety
/// The CPU has AES-NI, PCLMULQDQ, SSSE3, SSE4.1, AVX2, VAES and VPCLMULQDQ.
#[target_feature(enable = "aes,pclmulqdq,ssse3,sse4.1,avx2,vaes,vpclmulqdq")]
pub(super) unsafe fn run_ymm<'m>(
    k: &GmacKeys,
    input: &impl Fn(usize) -> (&'m [u8; 12], &'m [u8]),
    out: &mut [[u8; 16]],
) {
    let count = out.len();
    let mut i = 0;
    while i + 2 * WIDE <= count {
        tag_wide::<WIDE>(k, i, input, out);
        i += 2 * WIDE;
    }
    while i + 2 <= count {
        tag_wide::<1>(k, i, input, out);
        i += 2;
    }
    if i < count {
        let (nonce, msg) = input(i);
        // SAFETY: the caller guarantees the CPU features.
        out[i] = unsafe { tag_one_ymm(k, nonce, msg) };
    }
}

#[cfg(test)]
mod tests {
    use super::super::gmac_x86::tests::{SplitMix, kernel, lengths, reference};

    /// Pairs of every length against every nearby length (so that lanes with
    /// different block counts and partial blocks meet), through the batch.
    #[test]
    fn pairs_of_mixed_lengths_match_aes_gcm() {
        let mut rng = SplitMix(0x6c61_6e65);
        let key = rng.bytes(16);
        let Some(k) = kernel(&key, true) else {
            eprintln!("skipped: no VAES/VPCLMULQDQ on this CPU");
            return;
        };
        let lens: Vec<usize> = lengths().collect();
        for (j, &a) in lens.iter().enumerate() {
            for b in [
                0,
                1,
                15,
                16,
                17,
                48,
                129,
                300,
                4096,
                lens[(j * 7 + 3) % lens.len()],
            ] {
                let owned = [(rng.nonce(), rng.bytes(a)), (rng.nonce(), rng.bytes(b))];
                let mut got = [[0u8; 16]; 2];
                k.tag_batch(|i| (&owned[i].0, &owned[i].1), &mut got);
                for (i, (nonce, msg)) in owned.iter().enumerate() {
                    assert_eq!(got[i], reference(&key, nonce, msg), "{a} {b} lane {i}");
                }
            }
        }
    }

    #[test]
    fn odd_batches_use_the_one_packet_kernel_for_the_last() {
        let mut rng = SplitMix(5);
        let key = rng.bytes(16);
        let Some(k) = kernel(&key, true) else {
            return;
        };
        let owned: Vec<([u8; 12], Vec<u8>)> =
            (0..15).map(|i| (rng.nonce(), rng.bytes(i * 13))).collect();
        let mut got = vec![[0u8; 16]; owned.len()];
        k.tag_batch(|i| (&owned[i].0, &owned[i].1), &mut got);
        for (i, (nonce, msg)) in owned.iter().enumerate() {
            assert_eq!(got[i], reference(&key, nonce, msg), "{i}");
        }
    }
}
