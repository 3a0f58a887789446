//! SHA-1 compression with `SHA1RNDS4` over `L` independent lanes, HMAC-SHA1 and
//! the plain hash built on it. `L = 1` is the one-packet path.
//!
//! Written over `[__m128i; L]` with the lane loop innermost, as
//! [`super::sha256_x86`]. States are in the instruction's layout: `ABCD` with A
//! in lane 3, and `E` in lane 3 of its own register with zeros below; a block is
//! loaded byte-reversed, so W0 is in lane 3 like A.

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_blend_epi16, _mm_extract_epi32, _mm_loadu_si128, _mm_set_epi32,
    _mm_set_epi64x, _mm_setzero_si128, _mm_sha1msg1_epu32, _mm_sha1msg2_epu32, _mm_sha1nexte_epu32,
    _mm_sha1rnds4_epu32, _mm_shuffle_epi8, _mm_storeu_si128, _mm_xor_si128,
};

use super::sha_pad_x86::{Order, chunk_words, tail_words};
use super::sha_x86::{end16, head_block};

/// Initial hash value A..E (FIPS 180-4 section 5.3.1).
const IV: [u32; 5] = [
    0x6745_2301,
    0xefcd_ab89,
    0x98ba_dcfe,
    0x1032_5476,
    0xc3d2_e1f0,
];

/// A..E as the two registers `ABCD`, `E`, lane 0 first.
fn register_layout([a, b, c, d, e]: [u32; 5]) -> [u32; 8] {
    [d, c, b, a, 0, 0, 0, e]
}

#[inline]
#[target_feature(enable = "sse2")]
fn load4(words: &[u32]) -> __m128i {
    let words: &[u32; 4] = words.first_chunk().expect("four words");
    // SAFETY: `words` is 16 readable bytes; `loadu` takes any alignment.
    unsafe { _mm_loadu_si128(words.as_ptr().cast()) }
}

/// Reverses the 16 bytes of a register: big-endian words, W0 in lane 3.
#[inline]
#[target_feature(enable = "sse2")]
fn reverse_mask() -> __m128i {
    _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0a0b_0c0d_0e0f)
}

#[inline]
#[target_feature(enable = "sse2,ssse3")]
fn load_block(block: &[u8; 64]) -> [__m128i; 4] {
    let mut w = [_mm_setzero_si128(); 4];
    for (w, chunk) in w.iter_mut().zip(block.as_chunks::<16>().0) {
        *w = chunk_words(chunk, Order::Sha1);
    }
    w
}

/// Rounds 4Q..4Q+3 (round function `F` = Q / 5) in every lane, after extending
/// the schedule when Q ≥ 4. `prev` is each lane's `ABCD` before the previous
/// quad, whose `A` rotated is this quad's `E` (`SHA1NEXTE`).
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn quad<const L: usize, const Q: usize, const F: i32>(
    abcd: &mut [__m128i; L],
    prev: &mut [__m128i; L],
    e: &[__m128i; L],
    w: &mut [[__m128i; 4]; L],
) {
    let mut ew = [_mm_setzero_si128(); L];
    for l in 0..L {
        if Q >= 4 {
            let [w0, w1, w2, w3] = [0, 1, 2, 3].map(|i| w[l][(Q + i) % 4]);
            let t = _mm_xor_si128(_mm_sha1msg1_epu32(w0, w1), w2);
            w[l][Q % 4] = _mm_sha1msg2_epu32(t, w3);
        }
        ew[l] = if Q == 0 {
            _mm_add_epi32(e[l], w[l][0])
        } else {
            _mm_sha1nexte_epu32(prev[l], w[l][Q % 4])
        };
    }
    for l in 0..L {
        prev[l] = abcd[l];
        abcd[l] = _mm_sha1rnds4_epu32::<F>(abcd[l], ew[l]);
    }
}

/// One compression in every lane, of the words `w`.
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn compress_words<const L: usize>(
    abcd: &mut [__m128i; L],
    e: &mut [__m128i; L],
    mut w: [[__m128i; 4]; L],
) {
    let abcd0 = *abcd;
    let mut prev = *abcd;
    let (p, w) = (&mut prev, &mut w);
    quad::<L, 0, 0>(abcd, p, e, w);
    quad::<L, 1, 0>(abcd, p, e, w);
    quad::<L, 2, 0>(abcd, p, e, w);
    quad::<L, 3, 0>(abcd, p, e, w);
    quad::<L, 4, 0>(abcd, p, e, w);
    quad::<L, 5, 1>(abcd, p, e, w);
    quad::<L, 6, 1>(abcd, p, e, w);
    quad::<L, 7, 1>(abcd, p, e, w);
    quad::<L, 8, 1>(abcd, p, e, w);
    quad::<L, 9, 1>(abcd, p, e, w);
    quad::<L, 10, 2>(abcd, p, e, w);
    quad::<L, 11, 2>(abcd, p, e, w);
    quad::<L, 12, 2>(abcd, p, e, w);
    quad::<L, 13, 2>(abcd, p, e, w);
    quad::<L, 14, 2>(abcd, p, e, w);
    quad::<L, 15, 3>(abcd, p, e, w);
    quad::<L, 16, 3>(abcd, p, e, w);
    quad::<L, 17, 3>(abcd, p, e, w);
    quad::<L, 18, 3>(abcd, p, e, w);
    quad::<L, 19, 3>(abcd, p, e, w);
    for l in 0..L {
        abcd[l] = _mm_add_epi32(abcd[l], abcd0[l]);
        e[l] = _mm_sha1nexte_epu32(prev[l], e[l]);
    }
}

/// Compresses `L` words blocks, one per lane.
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn compress_blocks<const L: usize>(
    abcd: &mut [__m128i; L],
    e: &mut [__m128i; L],
    blocks: [&[u8; 64]; L],
) {
    let mut w = [[_mm_setzero_si128(); 4]; L];
    for l in 0..L {
        w[l] = load_block(blocks[l]);
    }
    compress_words(abcd, e, w);
}

/// Compresses each lane's input `prefix ‖ msgs[l]` (`prefix` shorter than a
/// block), the rest of a hash input whose first `absorbed` bytes are in the
/// state: a first block assembled from the prefix and the message's start, the
/// message's full blocks in place, then the tail padded in registers. The inputs
/// are of one [`class`](super::sha_x86::class).
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn absorb<const L: usize>(
    abcd: &mut [__m128i; L],
    e: &mut [__m128i; L],
    prefix: &[u8],
    msgs: &[&[u8]; L],
    absorbed: u64,
) {
    // With a prefix, the first block (or the whole input, when shorter than a
    // block) is joined from prefix and message in a buffer.
    let mut joined = [[0u8; 64]; L];
    let mut rests = *msgs;
    if !prefix.is_empty() {
        for l in 0..L {
            joined[l] = head_block(prefix, msgs[l]);
        }
        if prefix.len() + msgs[0].len() < 64 {
            for l in 0..L {
                rests[l] = &joined[l][..prefix.len() + msgs[l].len()];
            }
        } else {
            compress_blocks(abcd, e, joined.each_ref());
            for l in 0..L {
                rests[l] = &msgs[l][64 - prefix.len()..];
            }
        }
    }
    for i in 0..rests[0].len() / 64 {
        compress_blocks(abcd, e, rests.map(|m| &m.as_chunks::<64>().0[i]));
    }
    let mut tails = [[[_mm_setzero_si128(); 4]; 2]; L];
    let mut blocks = 1;
    let mut short = [[0u8; 16]; L];
    for l in 0..L {
        let rem = rests[l].as_chunks::<64>().1;
        let end = end16(prefix, msgs[l], &mut short[l]);
        let total = absorbed + (prefix.len() + msgs[l].len()) as u64;
        (tails[l], blocks) = tail_words(rem, end, total, Order::Sha1);
    }
    let mut w = [[_mm_setzero_si128(); 4]; L];
    for l in 0..L {
        w[l] = tails[l][0];
    }
    compress_words(abcd, e, w);
    if blocks == 2 {
        for l in 0..L {
            w[l] = tails[l][1];
        }
        compress_words(abcd, e, w);
    }
}

/// The state as the 20 digest bytes.
#[inline]
#[target_feature(enable = "sse2,ssse3,sse4.1")]
fn digest_bytes(abcd: __m128i, e: __m128i) -> [u8; 20] {
    let mut out = [0u8; 20];
    let (front, back) = out.split_at_mut(16);
    // SAFETY: `front` is 16 writable bytes; `storeu` takes any alignment.
    unsafe {
        _mm_storeu_si128(
            front.as_mut_ptr().cast(),
            _mm_shuffle_epi8(abcd, reverse_mask()),
        )
    };
    back.copy_from_slice(&(_mm_extract_epi32::<3>(e) as u32).to_be_bytes());
    out
}

/// The padded-key states compress(IV, ipad) and compress(IV, opad), in register
/// layout.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(super) fn pads(ipad: &[u8; 64], opad: &[u8; 64]) -> ([u32; 8], [u32; 8]) {
    let iv = register_layout(IV);
    let (mut abcd, mut e) = ([load4(&iv[..4]); 2], [load4(&iv[4..]); 2]);
    compress_words(&mut abcd, &mut e, [load_block(ipad), load_block(opad)]);
    let mut out = [[0u32; 8]; 2];
    for (state, (abcd, e)) in out.iter_mut().zip(abcd.into_iter().zip(e)) {
        let (lo, hi) = state.split_at_mut(4);
        // SAFETY: each half is 16 writable bytes; `storeu` takes any alignment.
        unsafe {
            _mm_storeu_si128(lo.as_mut_ptr().cast(), abcd);
            _mm_storeu_si128(hi.as_mut_ptr().cast(), e);
        }
    }
    (out[0], out[1])
}

/// HMAC-SHA1 of `L` messages of one [`class`](super::sha_x86::class) side by side.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(super) fn hmac_lanes<const L: usize>(
    inner: &[u32; 8],
    outer: &[u32; 8],
    msgs: &[&[u8]; L],
) -> [[u8; 20]; L] {
    const END: i32 = 0x8000_0000_u32 as i32;
    let (mut abcd, mut e) = ([load4(&inner[..4]); L], [load4(&inner[4..]); L]);
    absorb(&mut abcd, &mut e, &[], msgs, 64);
    // The outer block: the inner digest (its words are the state words), 0x80,
    // zeros, and the bit length of ipad block + digest.
    let mut w = [[_mm_setzero_si128(); 4]; L];
    for l in 0..L {
        let e_end = _mm_blend_epi16::<0xc0>(_mm_set_epi32(0, END, 0, 0), e[l]);
        w[l] = [
            abcd[l],
            e_end,
            _mm_setzero_si128(),
            _mm_set_epi32(0, 0, 0, (64 + 20) * 8),
        ];
    }
    let (mut abcd, mut e) = ([load4(&outer[..4]); L], [load4(&outer[4..]); L]);
    compress_words(&mut abcd, &mut e, w);
    let mut out = [[0u8; 20]; L];
    for l in 0..L {
        out[l] = digest_bytes(abcd[l], e[l]);
    }
    out
}

/// SHA-1(`prefix` ‖ message) of `L` inputs of one class side by side.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(super) fn hash_lanes<const L: usize>(prefix: &[u8], msgs: &[&[u8]; L]) -> [[u8; 20]; L] {
    let iv = register_layout(IV);
    let (mut abcd, mut e) = ([load4(&iv[..4]); L], [load4(&iv[4..]); L]);
    absorb(&mut abcd, &mut e, prefix, msgs, 0);
    let mut out = [[0u8; 20]; L];
    for l in 0..L {
        out[l] = digest_bytes(abcd[l], e[l]);
    }
    out
}

/// Timing probe, run by hand (see `sha256_x86::probe`).
#[cfg(test)]
mod probe {
    use super::*;
    use crate::kernels::sha256_x86::probe::{best_ns, blocks, clock_ghz};

    /// `n` chained compressions in each of `L` lanes, over distinct blocks.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn chained<const L: usize>(n: usize, blocks: &[[u8; 64]]) -> u8 {
        let iv = register_layout(IV);
        let (mut abcd, mut e) = ([load4(&iv[..4]); L], [load4(&iv[4..]); L]);
        for i in 0..n {
            let mut w = [[_mm_setzero_si128(); 4]; L];
            for l in 0..L {
                w[l] = load_block(&blocks[(i * 8 + l) % blocks.len()]);
            }
            compress_words(&mut abcd, &mut e, w);
        }
        (0..L).fold(0, |x, l| x ^ digest_bytes(abcd[l], e[l])[0])
    }

    #[test]
    #[ignore = "timing probe"]
    fn probe_sha1_block_cost() {
        let Some(_) = crate::kernels::sha_x86::ShaNi::new(crate::Isa::detect()) else {
            return;
        };
        let ghz = clock_ghz();
        let blocks = blocks();
        macro_rules! lanes {
            ($($l:literal)*) => {$(
                // SAFETY: the CPU has SHA-NI (checked above).
                let ns = best_ns(10_000 * $l, || {
                    core::hint::black_box(unsafe { chained::<$l>(10_000, &blocks) });
                });
                eprintln!("sha1 L={}: {ns:.2} ns = {:.0} cycles per block per lane", $l, ns * ghz);
            )*};
        }
        eprintln!("clock {ghz:.3} GHz");
        lanes!(1 2 3 4 8);
    }
}
