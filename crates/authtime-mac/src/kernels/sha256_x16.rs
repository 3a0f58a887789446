//! HMAC-SHA256/224 of 16 messages side by side in the 32-bit lanes of AVX-512
//! registers, for CPUs without the SHA extensions.
//!
//! One register holds a state word (or a message word) of all 16 messages, so
//! a round is the textbook one on vectors: `VPRORD` for the rotations and
//! `VPTERNLOGD` for the three-input XORs, `Ch` and `Maj`, about 17 operations
//! per round for 16 messages. Message blocks reach the lanes through a 16×16
//! transpose, padded in registers with masked byte loads. The outer block is
//! the inner digest (already one word per register, no transpose) and eight
//! constant words, whose share of the schedule the compiler folds.
//!
//! Written by hand for the same reason as [`super::sha_x86`]: no maintained
//! crate runs many short messages side by side.

use core::arch::x86_64::{
    __m512i, _mm256_storeu_si256, _mm512_add_epi32, _mm512_castsi512_si256, _mm512_loadu_si512,
    _mm512_maskz_loadu_epi8, _mm512_maskz_set1_epi8, _mm512_or_si512, _mm512_ror_epi32,
    _mm512_set1_epi32, _mm512_set4_epi32, _mm512_setzero_si512, _mm512_shuffle_epi8,
    _mm512_shuffle_i32x4, _mm512_srli_epi32, _mm512_ternarylogic_epi32, _mm512_unpackhi_epi32,
    _mm512_unpackhi_epi64, _mm512_unpacklo_epi32, _mm512_unpacklo_epi64,
};

/// Messages per call: the 32-bit lanes of a `zmm` register.
pub(super) const LANES: usize = 16;

/// Round constants (FIPS 180-4 section 4.2.2).
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// `VPTERNLOGD` truth tables over (x, y, z): x ⊕ y ⊕ z, x ? y : z, majority.
const XOR3: i32 = 0x96;
const CH: i32 = 0xca;
const MAJ: i32 = 0xe8;

type Words = [__m512i; 16];
type State = [__m512i; 8];

#[inline]
#[target_feature(enable = "avx512f")]
fn splat(x: u32) -> __m512i {
    _mm512_set1_epi32(x as i32)
}

/// Round `T` of the compression. The state is never moved: at round `T`, word
/// A is in slot `-T mod 8`, B in the next and so on, so the slot of H receives
/// the new A and the slot of D the new E. From round 16 on, the schedule word
/// is extended in place in the ring `w`.
#[inline]
#[target_feature(enable = "avx512f")]
fn round<const T: usize>(s: &mut State, w: &mut Words) {
    let slot = |i: usize| (8 - T % 8 + i) % 8;
    if T >= 16 {
        let w15 = w[(T + 1) % 16];
        let w2 = w[(T + 14) % 16];
        let s0 = _mm512_ternarylogic_epi32::<XOR3>(
            _mm512_ror_epi32::<7>(w15),
            _mm512_ror_epi32::<18>(w15),
            _mm512_srli_epi32::<3>(w15),
        );
        let s1 = _mm512_ternarylogic_epi32::<XOR3>(
            _mm512_ror_epi32::<17>(w2),
            _mm512_ror_epi32::<19>(w2),
            _mm512_srli_epi32::<10>(w2),
        );
        let sum = _mm512_add_epi32(w[T % 16], w[(T + 9) % 16]);
        w[T % 16] = _mm512_add_epi32(_mm512_add_epi32(sum, s0), s1);
    }
    let [a, b, c, d, e, f, g, h] = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| s[slot(i)]);
    let big_s1 = _mm512_ternarylogic_epi32::<XOR3>(
        _mm512_ror_epi32::<6>(e),
        _mm512_ror_epi32::<11>(e),
        _mm512_ror_epi32::<25>(e),
    );
    let big_s0 = _mm512_ternarylogic_epi32::<XOR3>(
        _mm512_ror_epi32::<2>(a),
        _mm512_ror_epi32::<13>(a),
        _mm512_ror_epi32::<22>(a),
    );
    let ch = _mm512_ternarylogic_epi32::<CH>(e, f, g);
    let maj = _mm512_ternarylogic_epi32::<MAJ>(a, b, c);
    let wk = _mm512_add_epi32(w[T % 16], splat(K[T]));
    let t1 = _mm512_add_epi32(_mm512_add_epi32(h, wk), _mm512_add_epi32(big_s1, ch));
    s[slot(3)] = _mm512_add_epi32(d, t1);
    s[slot(7)] = _mm512_add_epi32(t1, _mm512_add_epi32(big_s0, maj));
}

/// One compression of the 16 blocks `w` (one message word per register).
/// With `DIGEST` > 0 the block is an outer one: `DIGEST` words of inner digest,
/// then `0x80`, zeros and the bit length of the opad block and the digest,
/// set here so that the compiler folds these constant words into their rounds
/// and the schedule (a separate copy of the function).
#[inline]
#[target_feature(enable = "avx512f")]
fn compress<const DIGEST: usize>(state: &mut State, mut w: Words) {
    if DIGEST > 0 {
        w[DIGEST] = splat(0x8000_0000);
        for w in &mut w[DIGEST + 1..15] {
            *w = _mm512_setzero_si512();
        }
        w[15] = splat(((64 + 4 * DIGEST) * 8) as u32);
    }
    let mut s = *state;
    let w = &mut w;
    macro_rules! rounds {
        ($($t:literal)*) => { $( round::<$t>(&mut s, w); )* };
    }
    rounds!(
        0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
        32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
        62 63
    );
    for (state, s) in state.iter_mut().zip(s) {
        *state = _mm512_add_epi32(*state, s);
    }
}

/// Rows (one message block per register, word `t` in lane `t`) to columns (word
/// `t` of every block in register `t`, block `l` in lane `l`).
#[inline]
#[target_feature(enable = "avx512f")]
fn transpose(r: &Words) -> Words {
    let mut t = [_mm512_setzero_si512(); 16];
    for i in 0..8 {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    // In each 128-bit quarter q of u[4i + j]: word 4q + j of rows 4i..4i+3.
    let mut u = [_mm512_setzero_si512(); 16];
    for i in 0..4 {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    // Quarter q of word j gathered from the four row groups.
    let mut c = [_mm512_setzero_si512(); 16];
    for j in 0..4 {
        let v0 = _mm512_shuffle_i32x4::<0x44>(u[j], u[4 + j]);
        let v1 = _mm512_shuffle_i32x4::<0xee>(u[j], u[4 + j]);
        let v2 = _mm512_shuffle_i32x4::<0x44>(u[8 + j], u[12 + j]);
        let v3 = _mm512_shuffle_i32x4::<0xee>(u[8 + j], u[12 + j]);
        c[j] = _mm512_shuffle_i32x4::<0x88>(v0, v2);
        c[4 + j] = _mm512_shuffle_i32x4::<0xdd>(v0, v2);
        c[8 + j] = _mm512_shuffle_i32x4::<0x88>(v1, v3);
        c[12 + j] = _mm512_shuffle_i32x4::<0xdd>(v1, v3);
    }
    c
}

/// `PSHUFB` mask reversing the bytes of each 32-bit word.
#[inline]
#[target_feature(enable = "avx512f")]
fn byte_swap() -> __m512i {
    _mm512_set4_epi32(0x0c0d_0e0f, 0x0809_0a0b, 0x0405_0607, 0x0001_0203)
}

/// Block `b` of `msg` as 16 big-endian words, padded (FIPS 180-4 section
/// 5.1.1) where the message ends in or before it: the bytes in the message,
/// then `0x80` right after the last one, then zeros. The length is added by
/// the caller.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn block_row(msg: &[u8], b: usize) -> __m512i {
    let bytes = match msg.get(64 * b..) {
        Some(rest) if rest.len() >= 64 => {
            // SAFETY: `rest` has 64 readable bytes; `loadu` takes any alignment.
            unsafe { _mm512_loadu_si512(rest.as_ptr().cast()) }
        }
        Some(rest) => {
            let n = rest.len();
            let mask = (1u64 << n) - 1;
            // SAFETY: the mask selects only the `n` bytes of `rest`; masked-off
            // bytes are neither read nor able to fault.
            let head = unsafe { _mm512_maskz_loadu_epi8(mask, rest.as_ptr().cast()) };
            _mm512_or_si512(head, _mm512_maskz_set1_epi8(1u64 << n, 0x80u8 as i8))
        }
        // The second of two tail blocks holds no message byte.
        None => _mm512_setzero_si512(),
    };
    _mm512_shuffle_epi8(bytes, byte_swap())
}

/// HMAC of 16 messages of one [`class`](super::sha_x86::class) (same number
/// of blocks, length word in the same block): the inner hash continues from
/// the state `inner` (A..H) over each message, the outer one compresses the
/// inner digest from `outer`. Returns the digests (SHA-224 uses 28 bytes).
/// Messages of different classes, or of 2^29 - 64 bytes or more, give wrong
/// digests but read nothing outside their slices.
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn hmac_lanes(
    inner: &[u32; 8],
    outer: &[u32; 8],
    sha224: bool,
    msgs: &[&[u8]; LANES],
) -> [[u8; 32]; LANES] {
    let len = msgs[0].len();
    // 0x80 and the 64-bit bit length take 9 bytes after the message.
    let blocks = (len + 9).div_ceil(64);
    let mut state = inner.map(|x| splat(x));
    let mut lengths = [0u32; LANES];
    for (bits, msg) in lengths.iter_mut().zip(msgs) {
        // The caller sends messages below 2^29 - 64 bytes only, so the high
        // word of the bit length is zero.
        *bits = ((64 + msg.len()) * 8) as u32;
    }
    for b in 0..blocks {
        let mut rows = [_mm512_setzero_si512(); LANES];
        for (row, msg) in rows.iter_mut().zip(msgs) {
            *row = block_row(msg, b);
        }
        let mut w = transpose(&rows);
        if b + 1 == blocks {
            // SAFETY: `lengths` is 64 readable bytes; `loadu` takes any alignment.
            let bits = unsafe { _mm512_loadu_si512(lengths.as_ptr().cast()) };
            w[15] = _mm512_or_si512(w[15], bits);
        }
        compress::<0>(&mut state, w);
    }
    // The outer block: the inner digest, then the constant words.
    let mut w = [_mm512_setzero_si512(); 16];
    w[..8].copy_from_slice(&state);
    let mut state = outer.map(|x| splat(x));
    if sha224 {
        compress::<7>(&mut state, w);
    } else {
        compress::<8>(&mut state, w);
    }
    // Back to one message per register (words 0..7 in lanes 0..7), as bytes.
    let mut rows = [_mm512_setzero_si512(); 16];
    rows[..8].copy_from_slice(&state);
    let mut out = [[0u8; 32]; LANES];
    for (out, digest) in out.iter_mut().zip(transpose(&rows)) {
        let bytes = _mm512_castsi512_si256(_mm512_shuffle_epi8(digest, byte_swap()));
        // SAFETY: `out` is 32 writable bytes; `storeu` takes any alignment.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), bytes) };
    }
    out
}
