//! SHA-256/224 compression with `SHA256RNDS2` over `L` independent lanes, and
//! HMAC built on it. `L = 1` is the one-packet path.
//!
//! Every step is written over `[__m128i; L]` with the lane loop innermost, so the
//! `L` dependency chains of `SHA256RNDS2` (latency 4, one per cycle) are
//! interleaved in program order and the out-of-order core finds them without
//! searching far. States are in the instruction's layout: `ABEF` (A in lane 3)
//! and `CDGH`; a block is loaded as 32-bit words W0..W3 in lanes 0..3.

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_alignr_epi8, _mm_blend_epi16, _mm_loadu_si128, _mm_set_epi32,
    _mm_set_epi64x, _mm_setzero_si128, _mm_sha256msg1_epu32, _mm_sha256msg2_epu32,
    _mm_sha256rnds2_epu32, _mm_shuffle_epi8, _mm_shuffle_epi32, _mm_storeu_si128,
    _mm_unpackhi_epi64, _mm_unpacklo_epi64,
};

use super::sha_pad_x86::{Order, chunk_words, tail_words};
use super::sha_x86::end16;

/// Round constants (FIPS 180-4 section 4.2.2), four per pair of `SHA256RNDS2`.
static K: [[u32; 4]; 16] = [
    [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5],
    [0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5],
    [0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3],
    [0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174],
    [0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc],
    [0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da],
    [0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7],
    [0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967],
    [0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13],
    [0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85],
    [0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3],
    [0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070],
    [0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5],
    [0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3],
    [0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208],
    [0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2],
];

/// Initial hash values, A..H (FIPS 180-4 sections 5.3.3 and 5.3.2).
const IV256: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];
const IV224: [u32; 8] = [
    0xc1059ed8, 0x367cd507, 0x3070dd17, 0xf70e5939, 0xffc00b31, 0x68581511, 0x64f98fa7, 0xbefa4fa4,
];

/// A..H as the two registers `ABEF`, `CDGH`, lane 0 first.
fn register_layout([a, b, c, d, e, f, g, h]: [u32; 8]) -> [u32; 8] {
    [f, e, b, a, h, g, d, c]
}

#[inline]
#[target_feature(enable = "sse2")]
fn load4(words: &[u32]) -> __m128i {
    let words: &[u32; 4] = words.first_chunk().expect("four words");
    // SAFETY: `words` is 16 readable bytes; `loadu` takes any alignment.
    unsafe { _mm_loadu_si128(words.as_ptr().cast()) }
}

/// Message words W0..W15 of a block, big-endian bytes to lanes.
#[inline]
#[target_feature(enable = "sse2,ssse3")]
fn load_block(block: &[u8; 64]) -> [__m128i; 4] {
    let mut w = [_mm_setzero_si128(); 4];
    for (w, chunk) in w.iter_mut().zip(block.as_chunks::<16>().0) {
        *w = chunk_words(chunk, Order::Sha256);
    }
    w
}

/// Rounds 4Q..4Q+3 in every lane, after extending the schedule when Q ≥ 4.
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn quad<const L: usize, const Q: usize>(
    abef: &mut [__m128i; L],
    cdgh: &mut [__m128i; L],
    w: &mut [[__m128i; 4]; L],
) {
    let k = load4(&K[Q]);
    let mut wk = [_mm_setzero_si128(); L];
    for l in 0..L {
        if Q >= 4 {
            let [w0, w1, w2, w3] = [0, 1, 2, 3].map(|i| w[l][(Q + i) % 4]);
            let t = _mm_add_epi32(_mm_sha256msg1_epu32(w0, w1), _mm_alignr_epi8::<4>(w3, w2));
            w[l][Q % 4] = _mm_sha256msg2_epu32(t, w3);
        }
        wk[l] = _mm_add_epi32(w[l][Q % 4], k);
    }
    for l in 0..L {
        cdgh[l] = _mm_sha256rnds2_epu32(cdgh[l], abef[l], wk[l]);
    }
    for l in 0..L {
        abef[l] = _mm_sha256rnds2_epu32(abef[l], cdgh[l], _mm_shuffle_epi32::<0x0e>(wk[l]));
    }
}

/// One compression in every lane, of the words `w`.
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn compress_words<const L: usize>(
    abef: &mut [__m128i; L],
    cdgh: &mut [__m128i; L],
    mut w: [[__m128i; 4]; L],
) {
    let (abef0, cdgh0) = (*abef, *cdgh);
    let w = &mut w;
    quad::<L, 0>(abef, cdgh, w);
    quad::<L, 1>(abef, cdgh, w);
    quad::<L, 2>(abef, cdgh, w);
    quad::<L, 3>(abef, cdgh, w);
    quad::<L, 4>(abef, cdgh, w);
    quad::<L, 5>(abef, cdgh, w);
    quad::<L, 6>(abef, cdgh, w);
    quad::<L, 7>(abef, cdgh, w);
    quad::<L, 8>(abef, cdgh, w);
    quad::<L, 9>(abef, cdgh, w);
    quad::<L, 10>(abef, cdgh, w);
    quad::<L, 11>(abef, cdgh, w);
    quad::<L, 12>(abef, cdgh, w);
    quad::<L, 13>(abef, cdgh, w);
    quad::<L, 14>(abef, cdgh, w);
    quad::<L, 15>(abef, cdgh, w);
    for l in 0..L {
        abef[l] = _mm_add_epi32(abef[l], abef0[l]);
        cdgh[l] = _mm_add_epi32(cdgh[l], cdgh0[l]);
    }
}

/// Compresses every lane's message, the rest of a hash input whose first
/// `absorbed` bytes are in the state: the full blocks in place, then the tail
/// padded in registers. The messages are of one [`class`](super::sha_x86::class).
#[inline]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn absorb<const L: usize>(
    abef: &mut [__m128i; L],
    cdgh: &mut [__m128i; L],
    msgs: &[&[u8]; L],
    absorbed: u64,
) {
    for i in 0..msgs[0].len() / 64 {
        let mut w = [[_mm_setzero_si128(); 4]; L];
        for l in 0..L {
            w[l] = load_block(&msgs[l].as_chunks::<64>().0[i]);
        }
        compress_words(abef, cdgh, w);
    }
    let mut tails = [[[_mm_setzero_si128(); 4]; 2]; L];
    let mut blocks = 1;
    let mut short = [[0u8; 16]; L];
    for l in 0..L {
        let rem = msgs[l].as_chunks::<64>().1;
        let end = end16(&[], msgs[l], &mut short[l]);
        let total = absorbed + msgs[l].len() as u64;
        (tails[l], blocks) = tail_words(rem, end, total, Order::Sha256);
    }
    let mut w = [[_mm_setzero_si128(); 4]; L];
    for l in 0..L {
        w[l] = tails[l][0];
    }
    compress_words(abef, cdgh, w);
    if blocks == 2 {
        for l in 0..L {
            w[l] = tails[l][1];
        }
        compress_words(abef, cdgh, w);
    }
}

/// `A B C D` and `E F G H`, A in lane 0.
#[inline]
#[target_feature(enable = "sse2")]
fn words_in_order(abef: __m128i, cdgh: __m128i) -> (__m128i, __m128i) {
    (
        _mm_shuffle_epi32::<0x1b>(_mm_unpackhi_epi64(cdgh, abef)),
        _mm_shuffle_epi32::<0x1b>(_mm_unpacklo_epi64(cdgh, abef)),
    )
}

/// The block the outer hash compresses: the inner digest (its words are the
/// state words), `0x80`, zeros, and the bit length of ipad block + digest.
#[inline]
#[target_feature(enable = "sse2,sse4.1")]
fn outer_words(abef: __m128i, cdgh: __m128i, sha224: bool) -> [__m128i; 4] {
    const END: i32 = 0x8000_0000_u32 as i32;
    let (abcd, efgh) = words_in_order(abef, cdgh);
    if sha224 {
        let efg_end = _mm_blend_epi16::<0xc0>(efgh, _mm_set_epi32(END, 0, 0, 0));
        [
            abcd,
            efg_end,
            _mm_setzero_si128(),
            _mm_set_epi32((64 + 28) * 8, 0, 0, 0),
        ]
    } else {
        let end = _mm_set_epi32(0, 0, 0, END);
        [abcd, efgh, end, _mm_set_epi32((64 + 32) * 8, 0, 0, 0)]
    }
}

/// The state as digest bytes (SHA-224 keeps the first 28): `D C B A` reversed
/// byte by byte is A..D big-endian, and so for H..E.
#[inline]
#[target_feature(enable = "sse2,ssse3")]
fn digest_bytes(abef: __m128i, cdgh: __m128i) -> [u8; 32] {
    let reverse = _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0a0b_0c0d_0e0f);
    let mut out = [[0u8; 16]; 2];
    let halves = [
        _mm_unpackhi_epi64(cdgh, abef),
        _mm_unpacklo_epi64(cdgh, abef),
    ];
    for (out, half) in out.iter_mut().zip(halves) {
        // SAFETY: `out` is 16 writable bytes; `storeu` takes any alignment.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), _mm_shuffle_epi8(half, reverse)) };
    }
    let mut digest = [0u8; 32];
    digest.copy_from_slice(out.as_flattened());
    digest
}

/// The padded-key states compress(IV, ipad) and compress(IV, opad), in register
/// layout.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(super) fn pads(sha224: bool, ipad: &[u8; 64], opad: &[u8; 64]) -> ([u32; 8], [u32; 8]) {
    let iv = register_layout(if sha224 { IV224 } else { IV256 });
    let (mut abef, mut cdgh) = ([load4(&iv[..4]); 2], [load4(&iv[4..]); 2]);
    compress_words(&mut abef, &mut cdgh, [load_block(ipad), load_block(opad)]);
    let mut out = [[0u32; 8]; 2];
    for (state, (abef, cdgh)) in out.iter_mut().zip(abef.into_iter().zip(cdgh)) {
        let (lo, hi) = state.split_at_mut(4);
        // SAFETY: each half is 16 writable bytes; `storeu` takes any alignment.
        unsafe {
            _mm_storeu_si128(lo.as_mut_ptr().cast(), abef);
            _mm_storeu_si128(hi.as_mut_ptr().cast(), cdgh);
        }
    }
    (out[0], out[1])
}

/// HMAC of `L` messages of one [`class`](super::sha_x86::class) side by side:
/// the inner hash continues from `inner` over each message, the outer one
/// compresses the inner digest from `outer`.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(super) fn hmac_lanes<const L: usize>(
    inner: &[u32; 8],
    outer: &[u32; 8],
    sha224: bool,
    msgs: &[&[u8]; L],
) -> [[u8; 32]; L] {
    let (mut abef, mut cdgh) = ([load4(&inner[..4]); L], [load4(&inner[4..]); L]);
    absorb(&mut abef, &mut cdgh, msgs, 64);
    let mut w = [[_mm_setzero_si128(); 4]; L];
    for l in 0..L {
        w[l] = outer_words(abef[l], cdgh[l], sha224);
    }
    let (mut abef, mut cdgh) = ([load4(&outer[..4]); L], [load4(&outer[4..]); L]);
    compress_words(&mut abef, &mut cdgh, w);
    let mut out = [[0u8; 32]; L];
    for l in 0..L {
        out[l] = digest_bytes(abef[l], cdgh[l]);
    }
    out
}

/// Plain SHA-256/224 of `L` inputs of one class side by side, for the FIPS 180
/// vectors.
#[cfg(test)]
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(super) fn hash_lanes<const L: usize>(sha224: bool, msgs: &[&[u8]; L]) -> [[u8; 32]; L] {
    let iv = register_layout(if sha224 { IV224 } else { IV256 });
    let (mut abef, mut cdgh) = ([load4(&iv[..4]); L], [load4(&iv[4..]); L]);
    absorb(&mut abef, &mut cdgh, msgs, 0);
    let mut out = [[0u8; 32]; L];
    for l in 0..L {
        out[l] = digest_bytes(abef[l], cdgh[l]);
    }
    out
}

/// Timing probes, run by hand: `cargo test --release -p authtime-mac --lib --
/// --ignored probe --nocapture`. They gave the per-block costs quoted in
/// `sha_x86`'s module docs.
#[cfg(test)]
pub(super) mod probe {
    use std::time::Instant;

    use super::*;

    /// Best of 100 runs of `f`, in ns per `per` units of work.
    pub(in crate::kernels) fn best_ns(per: usize, mut f: impl FnMut()) -> f64 {
        let mut best = f64::MAX;
        for _ in 0..100 {
            let t = Instant::now();
            f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        best * 1e9 / per as f64
    }

    /// The core clock in GHz, from a chain of dependent one-cycle
    /// register-register `add`s (not `add reg, imm`, which Golden Cove and
    /// later Intel cores fold in the renamer; see authtime-lab's
    /// `clock_estimate`, which also cross-checks the figure).
    pub(in crate::kernels) fn clock_ghz() -> f64 {
        let one = core::hint::black_box(1u64);
        let ns = best_ns(800_000, || {
            let mut x = 0u64;
            // SAFETY: arithmetic on three registers, no memory.
            unsafe {
                core::arch::asm!(
                    "2:",
                    "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
                    "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
                    "dec {n}",
                    "jnz 2b",
                    x = inout(reg) x,
                    one = in(reg) one,
                    n = inout(reg) 100_000u64 => _,
                    options(nomem, nostack),
                );
            }
            core::hint::black_box(x);
        });
        1.0 / ns
    }

    /// `n` chained compressions in each of `L` lanes, over distinct blocks.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn chained<const L: usize>(n: usize, blocks: &[[u8; 64]]) -> u8 {
        let iv = register_layout(IV256);
        let (mut abef, mut cdgh) = ([load4(&iv[..4]); L], [load4(&iv[4..]); L]);
        for i in 0..n {
            let mut w = [[_mm_setzero_si128(); 4]; L];
            for l in 0..L {
                w[l] = load_block(&blocks[(i * 8 + l) % blocks.len()]);
            }
            compress_words(&mut abef, &mut cdgh, w);
        }
        (0..L).fold(0, |x, l| x ^ digest_bytes(abef[l], cdgh[l])[0])
    }

    pub(in crate::kernels) fn blocks() -> Vec<[u8; 64]> {
        (0..1024u32).map(|i| [i as u8; 64]).collect()
    }

    #[test]
    #[ignore = "timing probe"]
    fn probe_sha256_block_cost() {
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
                eprintln!("sha256 L={}: {ns:.2} ns = {:.0} cycles per block per lane", $l, ns * ghz);
            )*};
        }
        eprintln!("clock {ghz:.3} GHz");
        lanes!(1 2 3 4 8);
    }
}
