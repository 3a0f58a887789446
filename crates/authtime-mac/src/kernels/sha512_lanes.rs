//! SHA-512 (FIPS 180-4 section 6.4) of several independent messages at once,
//! one message per 64-bit SIMD lane: eight lanes in `zmm` registers with
//! AVX-512F, four in `ymm` registers with AVX2. The multi-buffer idea is the
//! one intel-ipsec-mb and isa-l_crypto use; the code is written here from the
//! FIPS 180-4 definition.
//!
//! A message is `prefix || body` (so a Merkle leaf's `0x00` needs no copy of
//! the request), padded as FIPS 180-4 section 5.1.2 says. Lanes may differ in
//! length: a lane whose blocks are done is fed zero words and its state is
//! kept by a masked (AVX-512) or blended (AVX2) final addition. Message words
//! are gathered into a lane-major table with scalar big-endian loads, then
//! loaded one vector per word.

use crate::Isa;

/// Round constants K0..K79 (FIPS 180-4 section 4.2.3).
#[rustfmt::skip]
const K512: [u64; 80] = [
    0x428a2f98d728ae22, 0x7137449123ef65cd, 0xb5c0fbcfec4d3b2f, 0xe9b5dba58189dbbc,
    0x3956c25bf348b538, 0x59f111f1b605d019, 0x923f82a4af194f9b, 0xab1c5ed5da6d8118,
    0xd807aa98a3030242, 0x12835b0145706fbe, 0x243185be4ee4b28c, 0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f, 0x80deb1fe3b1696b1, 0x9bdc06a725c71235, 0xc19bf174cf692694,
    0xe49b69c19ef14ad2, 0xefbe4786384f25e3, 0x0fc19dc68b8cd5b5, 0x240ca1cc77ac9c65,
    0x2de92c6f592b0275, 0x4a7484aa6ea6e483, 0x5cb0a9dcbd41fbd4, 0x76f988da831153b5,
    0x983e5152ee66dfab, 0xa831c66d2db43210, 0xb00327c898fb213f, 0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2, 0xd5a79147930aa725, 0x06ca6351e003826f, 0x142929670a0e6e70,
    0x27b70a8546d22ffc, 0x2e1b21385c26c926, 0x4d2c6dfc5ac42aed, 0x53380d139d95b3df,
    0x650a73548baf63de, 0x766a0abb3c77b2a8, 0x81c2c92e47edaee6, 0x92722c851482353b,
    0xa2bfe8a14cf10364, 0xa81a664bbc423001, 0xc24b8b70d0f89791, 0xc76c51a30654be30,
    0xd192e819d6ef5218, 0xd69906245565a910, 0xf40e35855771202a, 0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8, 0x1e376c085141ab53, 0x2748774cdf8eeb99, 0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63, 0x4ed8aa4ae3418acb, 0x5b9cca4f7763e373, 0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc, 0x78a5636f43172f60, 0x84c87814a1f0ab72, 0x8cc702081a6439ec,
    0x90befffa23631e28, 0xa4506cebde82bde9, 0xbef9a3f7b2c67915, 0xc67178f2e372532b,
    0xca273eceea26619c, 0xd186b8c721c0c207, 0xeada7dd6cde0eb1e, 0xf57d4f7fee6ed178,
    0x06f067aa72176fba, 0x0a637dc5a2c898a6, 0x113f9804bef90dae, 0x1b710b35131c471b,
    0x28db77f523047d84, 0x32caab7b40c72493, 0x3c9ebe0a15c9bebc, 0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6, 0x597f299cfc657e2a, 0x5fcb6fab3ad6faec, 0x6c44198c4a475817,
];

/// Initial hash value H(0) of SHA-512 (FIPS 180-4 section 5.3.5).
const IV512: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// The most lanes a kernel runs (AVX-512: eight 64-bit words per `zmm`).
pub(crate) const MAX_LANES: usize = 8;

/// Whether the eight-lane kernel may run.
pub(crate) fn avx512_usable(isa: Isa) -> bool {
    cfg!(target_arch = "x86_64") && isa.avx512
}

/// Whether the four-lane kernel may run.
pub(crate) fn avx2_usable(isa: Isa) -> bool {
    cfg!(target_arch = "x86_64") && isa.avx2
}

/// One message as a lane sees it: `prefix || body`, padded.
struct Lane<'a> {
    prefix: &'a [u8],
    body: &'a [u8],
    /// Padded length in 128-byte blocks.
    blocks: usize,
}

impl<'a> Lane<'a> {
    fn new(prefix: &'a [u8], body: &'a [u8]) -> Self {
        // At least one 0x80 byte and the 16-byte length follow the message.
        let len = prefix.len() + body.len();
        Lane {
            prefix,
            body,
            blocks: (len + 17).div_ceil(128),
        }
    }

    /// Padded block `b` (< `self.blocks`): borrowed from the body when it lies
    /// wholly inside it, assembled in `scratch` otherwise.
    fn block<'s>(&'s self, b: usize, scratch: &'s mut [u8; 128]) -> &'s [u8; 128] {
        let at = 128 * b;
        if let Some(inside) = at
            .checked_sub(self.prefix.len())
            .and_then(|start| self.body.get(start..start + 128))
            .and_then(|s| s.first_chunk::<128>())
        {
            return inside;
        }
        scratch.fill(0);
        let plen = self.prefix.len();
        let len = plen + self.body.len();
        if at < plen {
            let n = (plen - at).min(128);
            scratch[..n].copy_from_slice(&self.prefix[at..at + n]);
        }
        let (start, end) = (at.max(plen), (at + 128).min(len));
        if start < end {
            scratch[start - at..end - at].copy_from_slice(&self.body[start - plen..end - plen]);
        }
        if (at..at + 128).contains(&len) {
            scratch[len - at] = 0x80;
        }
        if b + 1 == self.blocks {
            // The 128-bit big-endian length in bits; lengths fit in 64 bits
            // of bytes, so the bits' top word holds len >> 61.
            let bits = (len as u128) << 3;
            scratch[112..].copy_from_slice(&bits.to_be_bytes());
        }
        scratch
    }
}

/// Message words of one block for `L` lanes, word-major: `words[t][lane]`.
#[repr(C, align(64))]
struct Words<const L: usize>([[u64; L]; 16]);

impl<const L: usize> Words<L> {
    /// Block `b` of every lane (zero words for lanes already done); returns
    /// which lanes are active as a bit mask.
    fn gather(lanes: &[Lane<'_>], b: usize) -> (Self, u8) {
        let mut words = Words([[0u64; L]; 16]);
        let mut active = 0u8;
        let mut scratch = [0u8; 128];
        for (l, lane) in lanes.iter().enumerate().take(L) {
            if b >= lane.blocks {
                continue;
            }
            active |= 1 << l;
            let block = lane.block(b, &mut scratch);
            for (t, chunk) in block.as_chunks::<8>().0.iter().enumerate() {
                words.0[t][l] = u64::from_be_bytes(*chunk);
            }
        }
        (words, active)
    }
}

/// The digest bytes of lane `l` from word-major state rows.
fn digest_of<const L: usize>(rows: &[[u64; L]; 8], l: usize) -> [u8; 64] {
    let mut out = [0u8; 64];
    for (chunk, row) in out.as_chunks_mut::<8>().0.iter_mut().zip(rows) {
        *chunk = row[l].to_be_bytes();
    }
    out
}

/// Rounds 0..79 as a loop with the schedule's ring indexed at run time:
/// the AVX2 kernel's form, where sixteen `ymm` registers cannot hold the
/// ring and the state at once and the written-out form spills more.
macro_rules! sha512_rounds_looped {
    ($state:expr, $w:expr) => {{
        let mut w = $w;
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = $state;
        for i in 0..5 {
            for j in 0..16 {
                if i > 0 {
                    w[j] = add(
                        add(w[j], small_sigma0(w[(j + 1) & 15])),
                        add(w[(j + 9) & 15], small_sigma1(w[(j + 14) & 15])),
                    );
                }
                let t1 = add(
                    add(h, big_sigma1(e)),
                    add(ch(e, f, g), add(splat(K512[16 * i + j]), w[j])),
                );
                let t2 = add(big_sigma0(a), maj(a, b, c));
                h = g;
                g = f;
                f = e;
                e = add(d, t1);
                d = c;
                c = b;
                b = a;
                a = add(t1, t2);
            }
        }
        [a, b, c, d, e, f, g, h]
    }};
}

/// Round `16 i + j` (FIPS 180-4 section 6.4.2 step 3) on the working
/// variables named `a`..`h` for this round, after extending the message
/// schedule (kept as a ring of 16 words in `w`) when `i > 0`: the new `e`
/// is left in `d` and the new `a` in `h`, so the next round is the same
/// macro with the names turned by one, and eight rounds need no moves.
/// Expanded inside each kernel, whose `add`, `splat`, `big_sigma0`,
/// `big_sigma1`, `small_sigma0`, `small_sigma1`, `ch` and `maj` it calls.
macro_rules! sha512_round {
    ($w:ident, $i:ident, $j:literal, $a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident) => {
        if $i > 0 {
            // W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16].
            $w[$j] = add(
                add($w[$j], small_sigma0($w[($j + 1) & 15])),
                add($w[($j + 9) & 15], small_sigma1($w[($j + 14) & 15])),
            );
        }
        let t1 = add(
            add($h, big_sigma1($e)),
            add(ch($e, $f, $g), add(splat(K512[16 * $i + $j]), $w[$j])),
        );
        $d = add($d, t1);
        $h = add(t1, add(big_sigma0($a), maj($a, $b, $c)));
    };
}

/// Rounds 0..79 of one block over vectors of lanes (FIPS 180-4 section
/// 6.4.2 steps 1 to 3), written out sixteen at a time so that the
/// schedule's ring indices are constants and the ring stays in registers.
macro_rules! sha512_rounds {
    ($state:expr, $w:expr) => {{
        let mut w = $w;
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = $state;
        for i in 0..5 {
            sha512_round!(w, i, 0, a, b, c, d, e, f, g, h);
            sha512_round!(w, i, 1, h, a, b, c, d, e, f, g);
            sha512_round!(w, i, 2, g, h, a, b, c, d, e, f);
            sha512_round!(w, i, 3, f, g, h, a, b, c, d, e);
            sha512_round!(w, i, 4, e, f, g, h, a, b, c, d);
            sha512_round!(w, i, 5, d, e, f, g, h, a, b, c);
            sha512_round!(w, i, 6, c, d, e, f, g, h, a, b);
            sha512_round!(w, i, 7, b, c, d, e, f, g, h, a);
            sha512_round!(w, i, 8, a, b, c, d, e, f, g, h);
            sha512_round!(w, i, 9, h, a, b, c, d, e, f, g);
            sha512_round!(w, i, 10, g, h, a, b, c, d, e, f);
            sha512_round!(w, i, 11, f, g, h, a, b, c, d, e);
            sha512_round!(w, i, 12, e, f, g, h, a, b, c, d);
            sha512_round!(w, i, 13, d, e, f, g, h, a, b, c);
            sha512_round!(w, i, 14, c, d, e, f, g, h, a, b);
            sha512_round!(w, i, 15, b, c, d, e, f, g, h, a);
        }
        [a, b, c, d, e, f, g, h]
    }};
}

/// SHA-512 of `prefix || bodies[i]` into `out[i]`, up to eight messages, in
/// the eight lanes of AVX-512 registers. Returns `false` (and hashes
/// nothing) when `isa` or the CPU lacks AVX-512F.
///
/// # Panics
/// If there are more than eight bodies or fewer outputs than bodies.
pub(crate) fn sha512_x8(isa: Isa, prefix: &[u8], bodies: &[&[u8]], out: &mut [[u8; 64]]) -> bool {
    assert!(bodies.len() <= 8 && out.len() >= bodies.len());
    #[cfg(target_arch = "x86_64")]
    if avx512_usable(isa) && std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F is present (checked just above).
        unsafe { zmm::hash(prefix, bodies, out) };
        return true;
    }
    let _ = (isa, prefix, bodies, out);
    false
}

/// As [`sha512_x8`], up to four messages in the four lanes of AVX2 registers.
///
/// # Panics
/// If there are more than four bodies or fewer outputs than bodies.
pub(crate) fn sha512_x4(isa: Isa, prefix: &[u8], bodies: &[&[u8]], out: &mut [[u8; 64]]) -> bool {
    assert!(bodies.len() <= 4 && out.len() >= bodies.len());
    #[cfg(target_arch = "x86_64")]
    if avx2_usable(isa) && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked just above).
        unsafe { ymm::hash(prefix, bodies, out) };
        return true;
    }
    let _ = (isa, prefix, bodies, out);
    false
}

#[cfg(target_arch = "x86_64")]
mod zmm {
    use core::arch::x86_64::{
        __m512i, _mm512_add_epi64, _mm512_loadu_si512, _mm512_mask_add_epi64, _mm512_ror_epi64,
        _mm512_set1_epi64, _mm512_srli_epi64, _mm512_storeu_si512, _mm512_ternarylogic_epi64,
    };

    use super::{IV512, K512, Lane, MAX_LANES, Words, digest_of};

    type V = __m512i;

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn add(a: V, b: V) -> V {
        _mm512_add_epi64(a, b)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn splat(x: u64) -> V {
        _mm512_set1_epi64(x as i64)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn xor3(a: V, b: V, c: V) -> V {
        _mm512_ternarylogic_epi64::<0x96>(a, b, c)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn big_sigma0(x: V) -> V {
        xor3(
            _mm512_ror_epi64::<28>(x),
            _mm512_ror_epi64::<34>(x),
            _mm512_ror_epi64::<39>(x),
        )
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn big_sigma1(x: V) -> V {
        xor3(
            _mm512_ror_epi64::<14>(x),
            _mm512_ror_epi64::<18>(x),
            _mm512_ror_epi64::<41>(x),
        )
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn small_sigma0(x: V) -> V {
        xor3(
            _mm512_ror_epi64::<1>(x),
            _mm512_ror_epi64::<8>(x),
            _mm512_srli_epi64::<7>(x),
        )
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn small_sigma1(x: V) -> V {
        xor3(
            _mm512_ror_epi64::<19>(x),
            _mm512_ror_epi64::<61>(x),
            _mm512_srli_epi64::<6>(x),
        )
    }

    /// Ch(e, f, g) = (e ∧ f) ⊕ (¬e ∧ g): "e ? f : g", truth table 0xCA.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn ch(e: V, f: V, g: V) -> V {
        _mm512_ternarylogic_epi64::<0xCA>(e, f, g)
    }

    /// Maj(a, b, c): the majority of three bits, truth table 0xE8.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn maj(a: V, b: V, c: V) -> V {
        _mm512_ternarylogic_epi64::<0xE8>(a, b, c)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn compress(state: &mut [V; 8], words: &Words<MAX_LANES>, active: u8) {
        let mut w = [splat(0); 16];
        for (v, row) in w.iter_mut().zip(&words.0) {
            // SAFETY: `row` is 64 readable bytes; `loadu` takes any alignment.
            *v = unsafe { _mm512_loadu_si512(row.as_ptr().cast()) };
        }
        let next: [V; 8] = sha512_rounds!(*state, w);
        for (s, n) in state.iter_mut().zip(next) {
            *s = _mm512_mask_add_epi64(*s, active, *s, n);
        }
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn hash(prefix: &[u8], bodies: &[&[u8]], out: &mut [[u8; 64]]) {
        let lanes: Vec<Lane<'_>> = bodies.iter().map(|b| Lane::new(prefix, b)).collect();
        let blocks = lanes.iter().map(|l| l.blocks).max().unwrap_or(0);
        let mut state = [splat(0); 8];
        for (s, iv) in state.iter_mut().zip(IV512) {
            *s = splat(iv);
        }
        for b in 0..blocks {
            let (words, active) = Words::<MAX_LANES>::gather(&lanes, b);
            compress(&mut state, &words, active);
        }
        let mut rows = [[0u64; MAX_LANES]; 8];
        for (row, v) in rows.iter_mut().zip(state) {
            // SAFETY: `row` is 64 writable bytes; `storeu` takes any alignment.
            unsafe { _mm512_storeu_si512(row.as_mut_ptr().cast(), v) };
        }
        for (l, digest) in out.iter_mut().take(lanes.len()).enumerate() {
            *digest = digest_of(&rows, l);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod ymm {
    use core::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256, _mm256_blendv_epi8,
        _mm256_loadu_si256, _mm256_or_si256, _mm256_set_epi64x, _mm256_set1_epi64x,
        _mm256_slli_epi64, _mm256_srli_epi64, _mm256_storeu_si256, _mm256_xor_si256,
    };

    use super::{IV512, K512, Lane, Words, digest_of};

    const L: usize = 4;
    type V = __m256i;

    #[inline]
    #[target_feature(enable = "avx2")]
    fn add(a: V, b: V) -> V {
        _mm256_add_epi64(a, b)
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn splat(x: u64) -> V {
        _mm256_set1_epi64x(x as i64)
    }

    /// Rotation right by `R`; `LEFT` must be `64 - R`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn ror<const R: i32, const LEFT: i32>(x: V) -> V {
        _mm256_or_si256(_mm256_srli_epi64::<R>(x), _mm256_slli_epi64::<LEFT>(x))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn xor3(a: V, b: V, c: V) -> V {
        _mm256_xor_si256(_mm256_xor_si256(a, b), c)
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn big_sigma0(x: V) -> V {
        xor3(ror::<28, 36>(x), ror::<34, 30>(x), ror::<39, 25>(x))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn big_sigma1(x: V) -> V {
        xor3(ror::<14, 50>(x), ror::<18, 46>(x), ror::<41, 23>(x))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn small_sigma0(x: V) -> V {
        xor3(ror::<1, 63>(x), ror::<8, 56>(x), _mm256_srli_epi64::<7>(x))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn small_sigma1(x: V) -> V {
        xor3(ror::<19, 45>(x), ror::<61, 3>(x), _mm256_srli_epi64::<6>(x))
    }

    /// Ch(e, f, g) = (e ∧ f) ⊕ (¬e ∧ g).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn ch(e: V, f: V, g: V) -> V {
        _mm256_xor_si256(_mm256_and_si256(e, f), _mm256_andnot_si256(e, g))
    }

    /// Maj(a, b, c) = (a ∧ b) ∨ (c ∧ (a ∨ b)).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn maj(a: V, b: V, c: V) -> V {
        _mm256_or_si256(
            _mm256_and_si256(a, b),
            _mm256_and_si256(c, _mm256_or_si256(a, b)),
        )
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn compress(state: &mut [V; 8], words: &Words<L>, active: u8) {
        let mut w = [splat(0); 16];
        for (v, row) in w.iter_mut().zip(&words.0) {
            // SAFETY: `row` is 32 readable bytes; `loadu` takes any alignment.
            *v = unsafe { _mm256_loadu_si256(row.as_ptr().cast()) };
        }
        let next: [V; 8] = sha512_rounds_looped!(*state, w);
        let bit = |l: u8| if active & (1 << l) != 0 { -1i64 } else { 0 };
        let keep = _mm256_set_epi64x(bit(3), bit(2), bit(1), bit(0));
        for (s, n) in state.iter_mut().zip(next) {
            *s = _mm256_blendv_epi8(*s, add(*s, n), keep);
        }
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn hash(prefix: &[u8], bodies: &[&[u8]], out: &mut [[u8; 64]]) {
        let lanes: Vec<Lane<'_>> = bodies.iter().map(|b| Lane::new(prefix, b)).collect();
        let blocks = lanes.iter().map(|l| l.blocks).max().unwrap_or(0);
        let mut state = [splat(0); 8];
        for (s, iv) in state.iter_mut().zip(IV512) {
            *s = splat(iv);
        }
        for b in 0..blocks {
            let (words, active) = Words::<L>::gather(&lanes, b);
            compress(&mut state, &words, active);
        }
        let mut rows = [[0u64; L]; 8];
        for (row, v) in rows.iter_mut().zip(state) {
            // SAFETY: `row` is 32 writable bytes; `storeu` takes any alignment.
            unsafe { _mm256_storeu_si256(row.as_mut_ptr().cast(), v) };
        }
        for (l, digest) in out.iter_mut().take(lanes.len()).enumerate() {
            *digest = digest_of(&rows, l);
        }
    }
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha512};

    use super::*;

    fn reference(prefix: &[u8], body: &[u8]) -> [u8; 64] {
        Sha512::new()
            .chain_update(prefix)
            .chain_update(body)
            .finalize()
            .into()
    }

    /// A deterministic byte stream (xorshift), so failures reproduce.
    fn bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    type Kernel = fn(Isa, &[u8], &[&[u8]], &mut [[u8; 64]]) -> bool;

    fn check(kernel: Kernel, lanes: usize, lens: &[usize]) {
        for prefix in [&b""[..], &[0x00], &[0x01, 0x02, 0x03]] {
            for group in lens.chunks(lanes) {
                let bodies: Vec<Vec<u8>> = group
                    .iter()
                    .enumerate()
                    .map(|(i, &len)| bytes((len * 31 + i) as u64, len))
                    .collect();
                let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
                let mut out = vec![[0u8; 64]; refs.len()];
                assert!(kernel(Isa::detect(), prefix, &refs, &mut out));
                for (body, digest) in refs.iter().zip(&out) {
                    assert_eq!(
                        *digest,
                        reference(prefix, body),
                        "lanes {lanes} prefix {prefix:?} len {}",
                        body.len()
                    );
                }
            }
        }
    }

    fn boundary_lengths() -> Vec<usize> {
        let mut lens: Vec<usize> = (0..300).collect();
        lens.extend([1023, 1024, 1035, 1036, 1037, 1100, 2048]);
        lens
    }

    #[test]
    fn eight_lanes_match_sha2_at_every_short_length() {
        if !avx512_usable(Isa::detect()) {
            return;
        }
        let lens = boundary_lengths();
        check(sha512_x8, 8, &lens);
        // Unequal lengths in one call, and short calls.
        let mixed = [0, 1036, 111, 112, 127, 128, 239, 240, 5, 1036, 17];
        check(sha512_x8, 8, &mixed);
        check(sha512_x8, 3, &mixed);
        check(sha512_x8, 1, &mixed);
    }

    #[test]
    fn four_lanes_match_sha2_at_every_short_length() {
        if !avx2_usable(Isa::detect()) {
            return;
        }
        let lens = boundary_lengths();
        check(sha512_x4, 4, &lens);
        let mixed = [0, 1036, 111, 112, 127, 128, 239, 240, 5, 1036, 17];
        check(sha512_x4, 4, &mixed);
        check(sha512_x4, 3, &mixed);
        check(sha512_x4, 1, &mixed);
    }
}
