//! Multi-lane MD5 with AVX2: up to 24 independent MD5 chains in the 32-bit
//! lanes of one, two or three `ymm` registers per state word.
//!
//! One MD5 step is a dependency chain of about 6 vector operations for about
//! 10 operations of work, so 8 lanes in one register leave the vector units
//! mostly idle; three registers per word (24 lanes) interleaved keep them ~80 %
//! busy, and four would not fit the 16 `ymm` registers. Message words reach
//! the lanes through an 8×8 transpose; for a batch of packets of one length
//! (the usual case) every block is planned once and the padding is merged in
//! registers. Lanes whose message has fewer blocks keep their state through a
//! blend.
//!
//! Users: the batch paths of MD5(key ‖ message) and HMAC-MD5 (`compute_many`),
//! RFC 1810's K-way MD5 (K chains of one message in K lanes) and a
//! multi-buffer plain MD5. Every path is tested against `md5_scalar`.

use super::md5_scalar::{self, HmacMd5Key, IV, LegacyMd5Key, Md5Prefix, digest_bytes, outer_block};
use crate::{Isa, MacError, MacInput, Tag, mac::check_nonce};

/// Fewest messages worth a lane kernel: one message is faster in scalar code
/// (its latency is ~4.5 cycles per step against ~6.5 in a vector register).
const MIN_LANES: usize = 2;

/// Steps the lane kernels can skip in a first block that starts with the key
/// (see [`Md5Prefix`]): one extra compression per register count.
const LANE_SKIP: usize = 4;

/// Whether the AVX2 kernels may run: `isa` allows them and the CPU has them
/// (checked again here because an [`Isa`] can be built by hand).
#[must_use]
pub(crate) fn avx2_usable(isa: Isa) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        isa.avx2 && std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        false
    }
}

/// MD5(key ‖ message), RFC 5905 section 7.3, with the kernels `isa` allows.
#[derive(Clone)]
pub(crate) struct LegacyMd5 {
    key: LegacyMd5Key,
    /// The key absorbed for the lane kernels (at most [`LANE_SKIP`] steps run ahead).
    lanes: Md5Prefix,
    isa: Isa,
}

impl LegacyMd5 {
    /// Absorbs `key` (any length; the registry allows 1 to 32 bytes).
    pub(crate) fn new(key: &[u8], isa: Isa) -> Self {
        let key = LegacyMd5Key::new(key);
        let p = &key.prefix;
        let lanes = Md5Prefix::with_skip(p.state, p.prior, p.head, p.head_len, LANE_SKIP);
        Self { key, lanes, isa }
    }

    /// One packet, scalar (the latency path).
    #[must_use]
    pub(crate) fn tag(&self, message: &[u8]) -> Tag {
        Tag::from_slice(&self.key.tag(message))
    }

    /// [`crate::Mac::compute_many`] for the algorithm called `name`.
    ///
    /// # Errors
    /// As [`crate::Mac::compute_many`].
    pub(crate) fn compute_many(
        &self,
        name: &str,
        inputs: &[MacInput<'_>],
        tags: &mut [Tag],
    ) -> Result<(), MacError> {
        check_batch(name, inputs, tags)?;
        prefixed_many(&self.lanes, None, self.isa, inputs, tags);
        Ok(())
    }
}

/// HMAC-MD5 (RFC 2104) with its pads precomputed, with the kernels `isa` allows.
#[derive(Clone)]
pub(crate) struct HmacMd5 {
    key: HmacMd5Key,
    isa: Isa,
}

impl HmacMd5 {
    /// Any key length (RFC 2104 section 2).
    pub(crate) fn new(key: &[u8], isa: Isa) -> Self {
        Self {
            key: HmacMd5Key::new(key),
            isa,
        }
    }

    /// One packet, scalar (the latency path): two compressions up to 55 bytes.
    #[must_use]
    pub(crate) fn tag(&self, message: &[u8]) -> Tag {
        Tag::from_slice(&self.key.tag(message))
    }

    /// [`crate::Mac::compute_many`] for the algorithm called `name`.
    ///
    /// # Errors
    /// As [`crate::Mac::compute_many`].
    pub(crate) fn compute_many(
        &self,
        name: &str,
        inputs: &[MacInput<'_>],
        tags: &mut [Tag],
    ) -> Result<(), MacError> {
        check_batch(name, inputs, tags)?;
        prefixed_many(
            &self.key.inner,
            Some(self.key.outer),
            self.isa,
            inputs,
            tags,
        );
        Ok(())
    }
}

/// The usage checks of [`crate::Mac::compute_many`] for an algorithm without nonce.
fn check_batch(name: &str, inputs: &[MacInput<'_>], tags: &[Tag]) -> Result<(), MacError> {
    if inputs.len() != tags.len() {
        return Err(MacError::BatchLength {
            inputs: inputs.len(),
            outputs: tags.len(),
        });
    }
    inputs
        .iter()
        .try_for_each(|i| check_nonce(name, 0, i.nonce))
}

/// `tags[i]` = MD5 of `prefix ‖ inputs[i].message ‖ padding`, followed by HMAC's
/// outer compression when `outer` is given. `prefix.skip` is 0 or [`LANE_SKIP`].
fn prefixed_many(
    prefix: &Md5Prefix,
    outer: Option<[u32; 4]>,
    isa: Isa,
    inputs: &[MacInput<'_>],
    tags: &mut [Tag],
) {
    debug_assert_eq!(inputs.len(), tags.len());
    #[cfg(target_arch = "x86_64")]
    if avx2_usable(isa) && inputs.len() >= MIN_LANES {
        x86::prefixed_many(prefix, outer, inputs, tags);
        return;
    }
    let _ = isa;
    for (input, tag) in inputs.iter().zip(tags.iter_mut()) {
        *tag = Tag::from_slice(&scalar_digest(prefix, outer, input.message));
    }
}

/// The scalar path of [`prefixed_many`] for one message.
fn scalar_digest(prefix: &Md5Prefix, outer: Option<[u32; 4]>, message: &[u8]) -> [u8; 16] {
    let state = prefix.finish(message);
    digest_bytes(&outer.map_or(state, |o| outer_block(o, state)))
}

/// The final states of RFC 1810's `k` chains over `data` (chain `j` compresses
/// padded blocks `j, j + k, …`), in lanes; `None` when `k` is not 4, 8 or 16
/// or AVX2 is not usable.
pub(crate) fn kway_chains(k: usize, data: &[u8], isa: Isa) -> Option<Vec<[u32; 4]>> {
    if !avx2_usable(isa) || !matches!(k, 4 | 8 | 16) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        Some(x86::kway_chains(k, data))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = data;
        None
    }
}

/// Plain MD5 of eight buffers (any lengths) in eight lanes; `None` when AVX2
/// is not usable.
pub(crate) fn md5_x8(buffers: &[&[u8]; 8], isa: Isa) -> Option<[[u8; 16]; 8]> {
    if !avx2_usable(isa) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mut out = [[0; 16]; x86::MAX_LANES];
        x86::run(&Md5Prefix::new(IV, 0, &[]), None, buffers, &mut out);
        Some(core::array::from_fn(|i| out[i]))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::{
        __m128i, __m256i, _mm_storeu_si128, _mm256_add_epi32, _mm256_and_si256,
        _mm256_andnot_si256, _mm256_blendv_epi8, _mm256_castsi256_si128, _mm256_extracti128_si256,
        _mm256_loadu_si256, _mm256_or_si256, _mm256_permute2x128_si256,
        _mm256_permutevar8x32_epi32, _mm256_set1_epi32, _mm256_setr_epi32, _mm256_setzero_si256,
        _mm256_slli_epi32, _mm256_srli_epi32, _mm256_sub_epi32, _mm256_unpackhi_epi32,
        _mm256_unpackhi_epi64, _mm256_unpacklo_epi32, _mm256_unpacklo_epi64, _mm256_xor_si256,
    };

    use super::md5_scalar::{
        IDX, IV, Md5Prefix, ROT, T, block_ref, copy_short, digest_bytes, outer_block, runs, words,
    };
    use super::{LANE_SKIP, MIN_LANES};
    use crate::{MacInput, Tag};

    /// Lanes per register.
    const L: usize = 8;
    /// Most lanes per kernel call: three registers per state word.
    pub(super) const MAX_LANES: usize = 3 * L;
    /// The block of a lane without message (its result is ignored).
    static ZERO_BLOCK: [u8; 64] = [0; 64];

    /// One state word or message word for `8 × N` lanes.
    type V<const N: usize> = [__m256i; N];

    macro_rules! vstep {
        (F, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr) => {
            for g in 0..N {
                let s = _mm256_add_epi32($a[g], xt::<{ T[$i] as i32 }>($x[IDX[$i]][g]));
                let f = _mm256_xor_si256(
                    $d[g],
                    _mm256_and_si256($b[g], _mm256_xor_si256($c[g], $d[g])),
                );
                $a[g] = rotate_add::<{ ROT[$i] as i32 }, { 32 - ROT[$i] as i32 }>(
                    _mm256_add_epi32(s, f),
                    $b[g],
                );
            }
        };
        (G, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr) => {
            // (b & d) | (c & !d) as a sum of disjoint terms: one addition after `b`.
            for g in 0..N {
                let s = _mm256_add_epi32($a[g], xt::<{ T[$i] as i32 }>($x[IDX[$i]][g]));
                let s = _mm256_add_epi32(s, _mm256_andnot_si256($d[g], $c[g]));
                let s = _mm256_add_epi32(s, _mm256_and_si256($b[g], $d[g]));
                $a[g] = rotate_add::<{ ROT[$i] as i32 }, { 32 - ROT[$i] as i32 }>(s, $b[g]);
            }
        };
        (H, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr) => {
            for g in 0..N {
                let s = _mm256_add_epi32($a[g], xt::<{ T[$i] as i32 }>($x[IDX[$i]][g]));
                let h = _mm256_xor_si256(_mm256_xor_si256($c[g], $d[g]), $b[g]);
                $a[g] = rotate_add::<{ ROT[$i] as i32 }, { 32 - ROT[$i] as i32 }>(
                    _mm256_add_epi32(s, h),
                    $b[g],
                );
            }
        };
        (I, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr) => {
            // c ^ (b | !d) = !(c ^ (!b & d)), and s + !y = (s - 1) - y: the NOT
            // folds into the constant, three operations instead of four.
            for g in 0..N {
                let s = _mm256_add_epi32(
                    $a[g],
                    xt::<{ T[$i].wrapping_sub(1) as i32 }>($x[IDX[$i]][g]),
                );
                let y = _mm256_xor_si256($c[g], _mm256_andnot_si256($b[g], $d[g]));
                $a[g] = rotate_add::<{ ROT[$i] as i32 }, { 32 - ROT[$i] as i32 }>(
                    _mm256_sub_epi32(s, y),
                    $b[g],
                );
            }
        };
    }

    macro_rules! vquad {
        ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr) => {
            vstep!($f, $a, $b, $c, $d, $x, $i);
            vstep!($f, $d, $a, $b, $c, $x, $i + 1);
            vstep!($f, $c, $d, $a, $b, $x, $i + 2);
            vstep!($f, $b, $c, $d, $a, $x, $i + 3);
        };
        ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr, $skip:expr) => {
            if runs($i, $skip) {
                vstep!($f, $a, $b, $c, $d, $x, $i);
            }
            if runs($i + 1, $skip) {
                vstep!($f, $d, $a, $b, $c, $x, $i + 1);
            }
            if runs($i + 2, $skip) {
                vstep!($f, $c, $d, $a, $b, $x, $i + 2);
            }
            if runs($i + 3, $skip) {
                vstep!($f, $b, $c, $d, $a, $x, $i + 3);
            }
        };
    }

    /// Message word plus the step constant.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn xt<const K: i32>(x: __m256i) -> __m256i {
        _mm256_add_epi32(x, _mm256_set1_epi32(K))
    }

    /// `rotl(s, LEFT) + b`, `RIGHT = 32 - LEFT` (AVX2 has no lane rotate).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn rotate_add<const LEFT: i32, const RIGHT: i32>(s: __m256i, b: __m256i) -> __m256i {
        let r = _mm256_or_si256(_mm256_slli_epi32::<LEFT>(s), _mm256_srli_epi32::<RIGHT>(s));
        _mm256_add_epi32(r, b)
    }

    /// The MD5 compression in every lane, entered after `SKIP` steps (see
    /// `md5_scalar::compress_from`).
    #[target_feature(enable = "avx2")]
    fn compress<const N: usize, const SKIP: usize>(
        iv: &[V<N>; 4],
        mid: &[V<N>; 4],
        x: &[V<N>; 16],
    ) -> [V<N>; 4] {
        let [mut a, mut b, mut c, mut d] = *mid;
        vquad!(F, a, b, c, d, x, 0, SKIP);
        vquad!(F, a, b, c, d, x, 4, SKIP);
        vquad!(F, a, b, c, d, x, 8, SKIP);
        vquad!(F, a, b, c, d, x, 12, SKIP);
        vquad!(G, a, b, c, d, x, 16);
        vquad!(G, a, b, c, d, x, 20);
        vquad!(G, a, b, c, d, x, 24);
        vquad!(G, a, b, c, d, x, 28);
        vquad!(H, a, b, c, d, x, 32);
        vquad!(H, a, b, c, d, x, 36);
        vquad!(H, a, b, c, d, x, 40);
        vquad!(H, a, b, c, d, x, 44);
        vquad!(I, a, b, c, d, x, 48);
        vquad!(I, a, b, c, d, x, 52);
        vquad!(I, a, b, c, d, x, 56);
        vquad!(I, a, b, c, d, x, 60);
        let mut out = [a, b, c, d];
        for (o, v) in out.iter_mut().zip(iv) {
            for g in 0..N {
                o[g] = _mm256_add_epi32(o[g], v[g]);
            }
        }
        out
    }

    /// 8×8 transpose of 32-bit words: row `l` holds 8 words of lane `l`;
    /// output `w` holds word `w` of lanes 0..8.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn transpose(r: [__m256i; 8]) -> [__m256i; 8] {
        let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
        let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
        let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
        let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
        let t4 = _mm256_unpacklo_epi32(r[4], r[5]);
        let t5 = _mm256_unpackhi_epi32(r[4], r[5]);
        let t6 = _mm256_unpacklo_epi32(r[6], r[7]);
        let t7 = _mm256_unpackhi_epi32(r[6], r[7]);
        // Per 128-bit half: word w of lanes 0..4 (u0..u3) and 4..8 (u4..u7),
        // words 0..4 in the low halves and 4..8 in the high halves.
        let u0 = _mm256_unpacklo_epi64(t0, t2);
        let u1 = _mm256_unpackhi_epi64(t0, t2);
        let u2 = _mm256_unpacklo_epi64(t1, t3);
        let u3 = _mm256_unpackhi_epi64(t1, t3);
        let u4 = _mm256_unpacklo_epi64(t4, t6);
        let u5 = _mm256_unpackhi_epi64(t4, t6);
        let u6 = _mm256_unpacklo_epi64(t5, t7);
        let u7 = _mm256_unpackhi_epi64(t5, t7);
        [
            _mm256_permute2x128_si256::<0x20>(u0, u4),
            _mm256_permute2x128_si256::<0x20>(u1, u5),
            _mm256_permute2x128_si256::<0x20>(u2, u6),
            _mm256_permute2x128_si256::<0x20>(u3, u7),
            _mm256_permute2x128_si256::<0x31>(u0, u4),
            _mm256_permute2x128_si256::<0x31>(u1, u5),
            _mm256_permute2x128_si256::<0x31>(u2, u6),
            _mm256_permute2x128_si256::<0x31>(u3, u7),
        ]
    }

    /// The 16 message words of every lane from its two rows (words 0..8, 8..16).
    /// Plain loops: closures here would not inherit `avx2` and stay calls.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn transpose_rows<const N: usize>(rows: &[[[__m256i; 2]; L]; N]) -> [V<N>; 16] {
        let mut x = [[_mm256_setzero_si256(); N]; 16];
        for g in 0..N {
            for half in 0..2 {
                let mut r = [_mm256_setzero_si256(); L];
                for l in 0..L {
                    r[l] = rows[g][l][half];
                }
                let t = transpose(r);
                for w in 0..L {
                    x[L * half + w][g] = t[w];
                }
            }
        }
        x
    }

    /// The 16 message words of `blocks[l]` for each of the `8 × N` lanes.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn load_words<const N: usize>(blocks: &[&[u8; 64]; MAX_LANES]) -> [V<N>; 16] {
        let mut rows = [[[_mm256_setzero_si256(); 2]; L]; N];
        for g in 0..N {
            for l in 0..L {
                rows[g][l] = [load32(blocks[L * g + l], 0), load32(blocks[L * g + l], 32)];
            }
        }
        transpose_rows::<N>(&rows)
    }

    /// 32 bytes of `bytes` from `at`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn load32(bytes: &[u8], at: usize) -> __m256i {
        let chunk: &[u8; 32] = match bytes[at..].first_chunk() {
            Some(c) => c,
            None => unreachable!("callers load within the message"),
        };
        // SAFETY: `chunk` is a reference to 32 readable bytes (unaligned load allowed).
        unsafe { _mm256_loadu_si256(chunk.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn splat<const N: usize>(s: [u32; 4]) -> [V<N>; 4] {
        s.map(|w| [_mm256_set1_epi32(w as i32); N])
    }

    /// `new` in the lanes `l` where `blocks[l] > j` (still hashing), `old` elsewhere.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn keep_finished<const N: usize>(
        old: &[V<N>; 4],
        new: &[V<N>; 4],
        blocks: &[usize; MAX_LANES],
        j: usize,
    ) -> [V<N>; 4] {
        let mut out = *new;
        for g in 0..N {
            let m = |l: usize| -i32::from(j < blocks[L * g + l]);
            let mask = _mm256_setr_epi32(m(0), m(1), m(2), m(3), m(4), m(5), m(6), m(7));
            for w in 0..4 {
                out[w][g] = _mm256_blendv_epi8(old[w][g], new[w][g], mask);
            }
        }
        out
    }

    /// Each lane's state as MD5 serializes it (four little-endian words): a
    /// 4×8 transpose in registers, two lanes per register.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn digests<const N: usize>(state: &[V<N>; 4], out: &mut [[u8; 16]; MAX_LANES]) {
        for g in 0..N {
            let [a, b, c, d] = [state[0][g], state[1][g], state[2][g], state[3][g]];
            let t0 = _mm256_unpacklo_epi32(a, b);
            let t1 = _mm256_unpackhi_epi32(a, b);
            let t2 = _mm256_unpacklo_epi32(c, d);
            let t3 = _mm256_unpackhi_epi32(c, d);
            // Lanes (0, 4), (1, 5), (2, 6), (3, 7) of the group.
            let pairs = [
                _mm256_unpacklo_epi64(t0, t2),
                _mm256_unpackhi_epi64(t0, t2),
                _mm256_unpacklo_epi64(t1, t3),
                _mm256_unpackhi_epi64(t1, t3),
            ];
            for (l, p) in pairs.into_iter().enumerate() {
                let halves: [__m128i; 2] =
                    [_mm256_castsi256_si128(p), _mm256_extracti128_si256::<1>(p)];
                for (h, v) in halves.into_iter().enumerate() {
                    // SAFETY: `out[..]` is 16 writable bytes; unaligned store allowed.
                    unsafe { _mm_storeu_si128(out[L * g + l + 4 * h].as_mut_ptr().cast(), v) };
                }
            }
        }
    }

    /// How block `j` of `head ‖ message ‖ MD5 padding` is made for a message of
    /// `len` bytes: borrowed from the message, or `template` (the head, `0x80`
    /// and the bit length, zeros elsewhere) with the message bytes `m0..m1` at
    /// `at`. Messages of one length share the plan.
    #[derive(Clone, Copy)]
    struct BlockPlan {
        borrowed: bool,
        template: [u8; 64],
        m0: usize,
        m1: usize,
        at: usize,
    }

    impl BlockPlan {
        #[inline(always)]
        fn new(prefix: &Md5Prefix, len: usize, j: usize, blocks: usize) -> Self {
            let hl = prefix.head_len;
            let start = 64 * j;
            let m0 = start.max(hl) - hl;
            if start >= hl && m0 + 64 <= len {
                let (template, m1, at) = ([0; 64], m0 + 64, 0);
                return Self {
                    borrowed: true,
                    template,
                    m0,
                    m1,
                    at,
                };
            }
            let mut template = if j == 0 { prefix.head } else { [0; 64] };
            let end = hl + len;
            if (start..start + 64).contains(&end) {
                template[end - start] = 0x80;
            }
            if j + 1 == blocks {
                let bits = (prefix.prior + end as u64).wrapping_mul(8);
                template[56..].copy_from_slice(&bits.to_le_bytes());
            }
            let m1 = (start + 64 - hl).min(len).max(m0);
            Self {
                borrowed: false,
                template,
                m0,
                m1,
                at: hl + m0 - start,
            }
        }

        /// The block for `message` (of the planned length), assembled in
        /// `scratch` when it mixes message and template bytes.
        #[inline(always)]
        fn block<'a>(&'a self, message: &'a [u8], scratch: &'a mut [u8; 64]) -> &'a [u8; 64] {
            if self.borrowed {
                block_ref(&message[self.m0..self.m1])
            } else if self.m0 == self.m1 {
                &self.template
            } else {
                *scratch = self.template;
                copy_short(&mut scratch[self.at..], &message[self.m0..self.m1]);
                scratch
            }
        }
    }

    /// How one 32-byte row (eight words) of a block is made for the messages of
    /// one length when the head and the length are whole words (keys of 16, 20
    /// or 32 bytes, NTP packets): in registers, without copying bytes.
    #[derive(Clone, Copy)]
    enum RowPlan {
        /// Eight message words from this byte offset.
        Message(usize),
        /// No message bytes: head, padding or length, the same in every lane.
        Template,
        /// `template` with message word `at / 4 + idx[i]` where `mask` is set.
        Mixed {
            at: usize,
            idx: __m256i,
            mask: __m256i,
            template: __m256i,
        },
    }

    impl RowPlan {
        /// Row `half` of block `j` (planned by `plan`) for messages of `len`
        /// bytes; `None` unless the head and `len` are whole words and `len >= 32`.
        #[target_feature(enable = "avx2")]
        #[inline]
        fn new(
            prefix: &Md5Prefix,
            plan: &BlockPlan,
            len: usize,
            j: usize,
            half: usize,
        ) -> Option<Self> {
            if !prefix.head_len.is_multiple_of(4) || !len.is_multiple_of(4) || len < 32 {
                return None;
            }
            let count = (len / 4) as isize;
            // Message word of the row's first word (negative inside the head).
            let base = (16 * j + L * half) as isize - (prefix.head_len / 4) as isize;
            Some(if base >= 0 && base + 8 <= count {
                Self::Message(4 * base as usize)
            } else if base + 8 <= 0 || base >= count {
                Self::Template
            } else {
                let start = base.clamp(0, count - 8);
                let shift = (base - start) as i32;
                let m = |i: i32| -i32::from((0..count).contains(&(base + i as isize)));
                Self::Mixed {
                    at: 4 * start as usize,
                    idx: _mm256_setr_epi32(
                        shift,
                        shift + 1,
                        shift + 2,
                        shift + 3,
                        shift + 4,
                        shift + 5,
                        shift + 6,
                        shift + 7,
                    ),
                    mask: _mm256_setr_epi32(m(0), m(1), m(2), m(3), m(4), m(5), m(6), m(7)),
                    template: load32(&plan.template, 32 * half),
                }
            })
        }

        #[target_feature(enable = "avx2")]
        #[inline]
        fn row(&self, message: &[u8], template: &[u8; 64], half: usize) -> __m256i {
            match *self {
                Self::Message(at) => load32(message, at),
                Self::Template => load32(template, 32 * half),
                Self::Mixed {
                    at,
                    idx,
                    mask,
                    template,
                } => _mm256_blendv_epi8(
                    template,
                    _mm256_permutevar8x32_epi32(load32(message, at), idx),
                    mask,
                ),
            }
        }
    }

    /// The message words of block `j` in every lane. `len` is `Some` when all
    /// `messages` have that length (then `blocks` is the common block count).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn block_words<const N: usize>(
        prefix: &Md5Prefix,
        messages: &[&[u8]],
        blocks: &[usize; MAX_LANES],
        len: Option<usize>,
        j: usize,
    ) -> [V<N>; 16] {
        if let Some(len) = len {
            let plan = BlockPlan::new(prefix, len, j, blocks[0]);
            let row0 = RowPlan::new(prefix, &plan, len, j, 0);
            let row1 = RowPlan::new(prefix, &plan, len, j, 1);
            if let (Some(RowPlan::Template), Some(RowPlan::Template)) = (row0, row1) {
                // Padding only, the same in every lane: broadcast, no transpose.
                let x = words(&plan.template);
                return core::array::from_fn(|w| [_mm256_set1_epi32(x[w] as i32); N]);
            }
            if let (Some(r0), Some(r1)) = (row0, row1) {
                let mut rows = [[[_mm256_setzero_si256(); 2]; L]; N];
                for (l, m) in messages.iter().enumerate() {
                    rows[l / L][l % L] =
                        [r0.row(m, &plan.template, 0), r1.row(m, &plan.template, 1)];
                }
                return transpose_rows::<N>(&rows);
            }
            let mut scratch = [[0u8; 64]; MAX_LANES];
            let mut refs: [&[u8; 64]; MAX_LANES] = [&ZERO_BLOCK; MAX_LANES];
            for ((r, s), m) in refs.iter_mut().zip(scratch.iter_mut()).zip(messages) {
                *r = plan.block(m, s);
            }
            return load_words::<N>(&refs);
        }
        let mut scratch = [[0u8; 64]; MAX_LANES];
        let mut plans = [None; MAX_LANES];
        let mut refs: [&[u8; 64]; MAX_LANES] = [&ZERO_BLOCK; MAX_LANES];
        for (((r, s), p), (m, &b)) in refs
            .iter_mut()
            .zip(scratch.iter_mut())
            .zip(plans.iter_mut())
            .zip(messages.iter().zip(blocks))
        {
            if j < b {
                *r = p.insert(BlockPlan::new(prefix, m.len(), j, b)).block(m, s);
            }
        }
        load_words::<N>(&refs)
    }

    /// Runs `prefix ‖ messages[l] ‖ padding` in lane `l` (at most `8 × N`
    /// messages), then HMAC's outer block when `outer` is given; writes each
    /// lane's digest to `out[l]`.
    #[target_feature(enable = "avx2")]
    fn lanes<const N: usize>(
        prefix: &Md5Prefix,
        outer: Option<[u32; 4]>,
        messages: &[&[u8]],
        out: &mut [[u8; 16]; MAX_LANES],
    ) {
        debug_assert!(messages.len() <= L * N && !messages.is_empty());
        let mut blocks = [0usize; MAX_LANES];
        for (b, m) in blocks.iter_mut().zip(messages) {
            *b = (prefix.head_len + m.len() + 9).div_ceil(64);
        }
        let len = messages[0].len();
        let len = messages.iter().all(|m| m.len() == len).then_some(len);
        let most = blocks.iter().copied().max().unwrap_or(0);
        let fewest = blocks[..messages.len()].iter().copied().min().unwrap_or(0);
        let iv = splat::<N>(prefix.state);
        let mut state = iv;
        for j in 0..most {
            let x = block_words::<N>(prefix, messages, &blocks, len, j);
            let new = if j == 0 && prefix.skip == LANE_SKIP {
                compress::<N, LANE_SKIP>(&iv, &splat::<N>(prefix.mid), &x)
            } else {
                compress::<N, 0>(&state, &state, &x)
            };
            state = if j < fewest {
                new
            } else {
                keep_finished(&state, &new, &blocks, j)
            };
        }
        if let Some(o) = outer {
            // The inner digest's words are the outer block's first words (MD5 is
            // little-endian both ways); the rest is constant padding for 80 bytes.
            let x: [V<N>; 16] = core::array::from_fn(|w| match w {
                0..4 => state[w],
                4 => [_mm256_set1_epi32(0x80); N],
                14 => [_mm256_set1_epi32((64 + 16) * 8); N],
                _ => [_mm256_setzero_si256(); N],
            });
            let o = splat::<N>(o);
            state = compress::<N, 0>(&o, &o, &x);
        }
        digests::<N>(&state, out);
    }

    /// [`lanes`] with as few registers as the message count needs. The caller
    /// checked `avx2_usable`; `prefix.skip` is 0 or [`LANE_SKIP`].
    pub(super) fn run(
        prefix: &Md5Prefix,
        outer: Option<[u32; 4]>,
        messages: &[&[u8]],
        out: &mut [[u8; 16]; MAX_LANES],
    ) {
        debug_assert!(prefix.skip == 0 || prefix.skip == LANE_SKIP);
        // SAFETY: the callers checked `avx2_usable` (AVX2 present and allowed).
        unsafe {
            match messages.len() {
                0 => {}
                1..=8 => lanes::<1>(prefix, outer, messages, out),
                9..=16 => lanes::<2>(prefix, outer, messages, out),
                _ => lanes::<3>(prefix, outer, messages, out),
            }
        }
    }

    /// Batch driver: up to 24 messages per kernel call; a batch of mixed
    /// lengths is sorted by length first so that each call wastes few blocks.
    pub(super) fn prefixed_many(
        prefix: &Md5Prefix,
        outer: Option<[u32; 4]>,
        inputs: &[MacInput<'_>],
        tags: &mut [Tag],
    ) {
        let mut out = [[0u8; 16]; MAX_LANES];
        let len = inputs[0].message.len();
        if inputs.iter().all(|i| i.message.len() == len) {
            for (chunk, tags) in inputs.chunks(MAX_LANES).zip(tags.chunks_mut(MAX_LANES)) {
                run_chunk(prefix, outer, chunk.iter().map(|i| i.message), &mut out);
                for (t, d) in tags.iter_mut().zip(&out) {
                    *t = Tag::from_slice(d);
                }
            }
            return;
        }
        let mut order: Vec<usize> = (0..inputs.len()).collect();
        order.sort_unstable_by_key(|&i| inputs[i].message.len());
        for chunk in order.chunks(MAX_LANES) {
            run_chunk(
                prefix,
                outer,
                chunk.iter().map(|&i| inputs[i].message),
                &mut out,
            );
            for (&i, d) in chunk.iter().zip(&out) {
                tags[i] = Tag::from_slice(d);
            }
        }
    }

    /// One kernel call for up to 24 messages, or the scalar path below
    /// `MIN_LANES` messages.
    fn run_chunk<'a>(
        prefix: &Md5Prefix,
        outer: Option<[u32; 4]>,
        messages: impl Iterator<Item = &'a [u8]>,
        out: &mut [[u8; 16]; MAX_LANES],
    ) {
        let mut list: [&[u8]; MAX_LANES] = [&[]; MAX_LANES];
        let mut n = 0;
        for (slot, m) in list.iter_mut().zip(messages) {
            *slot = m;
            n += 1;
        }
        if n < MIN_LANES {
            for (o, m) in out.iter_mut().zip(&list[..n]) {
                let state = prefix.finish(m);
                *o = digest_bytes(&outer.map_or(state, |k| outer_block(k, state)));
            }
            return;
        }
        run(prefix, outer, &list[..n], out);
    }

    /// RFC 1810's `k` chains (4, 8 or 16) over `data` in lanes.
    #[target_feature(enable = "avx2")]
    fn kway<const N: usize>(k: usize, data: &[u8]) -> Vec<[u32; 4]> {
        let total = (data.len() + 9).div_ceil(64);
        let whole = data.len() / 64;
        let mut tail = [0u8; 128];
        let rest = &data[64 * whole..];
        tail[..rest.len()].copy_from_slice(rest);
        tail[rest.len()] = 0x80;
        let bits = (data.len() as u64).wrapping_mul(8).to_le_bytes();
        let tail_len = 64 * (total - whole);
        tail[tail_len - 8..tail_len].copy_from_slice(&bits);
        let mut blocks = [0usize; MAX_LANES];
        let mut state = splat::<N>(IV);
        for first in (0..total).step_by(k) {
            let mut refs: [&[u8; 64]; MAX_LANES] = [&ZERO_BLOCK; MAX_LANES];
            for (l, r) in refs.iter_mut().enumerate().take(k) {
                let i = first + l;
                if i < whole {
                    *r = block_ref(&data[64 * i..64 * i + 64]);
                } else if i < total {
                    *r = block_ref(&tail[64 * (i - whole)..64 * (i - whole) + 64]);
                }
            }
            let new = compress::<N, 0>(&state, &state, &load_words::<N>(&refs));
            state = if first + k <= total {
                new
            } else {
                // The last round: chains past the last block keep their state.
                for (l, b) in blocks.iter_mut().enumerate() {
                    *b = usize::from(first + l < total);
                }
                keep_finished(&state, &new, &blocks, 0)
            };
        }
        let mut out = [[0u8; 16]; MAX_LANES];
        digests::<N>(&state, &mut out);
        out[..k].iter().map(words16).collect()
    }

    /// A serialized state back to words.
    fn words16(d: &[u8; 16]) -> [u32; 4] {
        core::array::from_fn(|w| {
            u32::from_le_bytes([d[4 * w], d[4 * w + 1], d[4 * w + 2], d[4 * w + 3]])
        })
    }

    /// RFC 1810's `k` chains (4, 8 or 16) over `data`. The caller checked
    /// `avx2_usable`.
    pub(super) fn kway_chains(k: usize, data: &[u8]) -> Vec<[u32; 4]> {
        // SAFETY: the caller checked `avx2_usable` (AVX2 present and allowed).
        unsafe {
            if k > L {
                kway::<2>(k, data)
            } else {
                kway::<1>(k, data)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::md5_scalar::tests::SplitMix;
    use super::*;
    use crate::Algorithm;

    fn have_avx2() -> bool {
        let ok = avx2_usable(Isa::current());
        if !ok {
            eprintln!("AVX2 not available: skipping the lane kernel test");
        }
        ok
    }

    fn check_prefixed(prefix: &Md5Prefix, outer: Option<[u32; 4]>, messages: &[Vec<u8>]) {
        let inputs: Vec<MacInput<'_>> = messages.iter().map(|m| MacInput::message(m)).collect();
        let mut tags = vec![Tag::EMPTY; inputs.len()];
        prefixed_many(prefix, outer, Isa::current(), &inputs, &mut tags);
        for (m, t) in messages.iter().zip(&tags) {
            assert_eq!(
                t.as_bytes(),
                scalar_digest(prefix, outer, m),
                "len {}",
                m.len()
            );
        }
    }

    #[test]
    fn lanes_match_scalar_for_legacy_and_hmac_prefixes() {
        if !have_avx2() {
            return;
        }
        let mut rng = SplitMix(10);
        for key_len in [1, 4, 16, 19, 20, 23, 32, 70] {
            let key = rng.bytes(key_len);
            let legacy = LegacyMd5::new(&key, Isa::current());
            let hmac = HmacMd5Key::new(&key);
            for count in (1..=40).chain([100]) {
                let uniform = rng.below(2) == 0;
                let messages: Vec<Vec<u8>> = (0..count)
                    .map(|_| {
                        let len = if uniform { 48 } else { rng.below(300) };
                        rng.bytes(len)
                    })
                    .collect();
                check_prefixed(&legacy.lanes, None, &messages);
                check_prefixed(&hmac.inner, Some(hmac.outer), &messages);
            }
        }
    }

    #[test]
    fn lanes_match_scalar_at_every_short_length() {
        if !have_avx2() {
            return;
        }
        let mut rng = SplitMix(11);
        for key_len in [16, 20] {
            let legacy = LegacyMd5::new(&rng.bytes(key_len), Isa::current());
            let hmac = HmacMd5Key::new(&rng.bytes(key_len));
            for len in 0..=200 {
                for count in [2, 9, 24] {
                    let messages: Vec<Vec<u8>> = (0..count).map(|_| rng.bytes(len)).collect();
                    check_prefixed(&legacy.lanes, None, &messages);
                    check_prefixed(&hmac.inner, Some(hmac.outer), &messages);
                }
            }
        }
    }

    #[test]
    fn md5_x8_matches_scalar() {
        if !have_avx2() {
            return;
        }
        let mut rng = SplitMix(12);
        for len in (0..=300).step_by(7).chain([1500, 10_000]) {
            let bufs: Vec<Vec<u8>> = (0..8)
                .map(|_| {
                    let extra = rng.below(3);
                    rng.bytes(len + extra)
                })
                .collect();
            let refs: [&[u8]; 8] = core::array::from_fn(|i| bufs[i].as_slice());
            let got = md5_x8(&refs, Isa::current()).expect("avx2");
            for (b, d) in bufs.iter().zip(got) {
                assert_eq!(d, md5_scalar::md5(b));
            }
        }
    }

    /// `compute_many` against `compute` through the public interface, for the
    /// kernels of this machine and forced portable.
    #[test]
    fn compute_many_matches_compute_for_md5_legacy_and_hmac_md5() {
        let mut rng = SplitMix(13);
        for alg in [Algorithm::Md5Legacy, Algorithm::HmacMd5] {
            for key_len in [1, 16, 20, 32] {
                let key = rng.bytes(key_len);
                for isa in [Isa::current(), Isa::PORTABLE] {
                    let mac = alg.new_mac_with_isa(&key, isa).expect("key");
                    for count in (1..=40).chain([100]) {
                        let messages: Vec<Vec<u8>> = (0..count)
                            .map(|i| {
                                let len = match (count + i) % 3 {
                                    0 => 48,
                                    1 => 68,
                                    _ => rng.below(1600),
                                };
                                rng.bytes(len)
                            })
                            .collect();
                        let inputs: Vec<MacInput<'_>> =
                            messages.iter().map(|m| MacInput::message(m)).collect();
                        let mut tags = vec![Tag::EMPTY; count];
                        mac.compute_many(&inputs, &mut tags).expect("batch");
                        for (m, t) in messages.iter().zip(&tags) {
                            assert_eq!(
                                *t,
                                mac.compute(&[], m).expect("one"),
                                "{alg:?} {}",
                                m.len()
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn portable_hmac_md5_matches_hmac_crate_and_rejects_misuse() {
        use hmac::{Hmac, KeyInit, Mac as _};
        let mut rng = SplitMix(14);
        let key = rng.bytes(16);
        let mac = Algorithm::HmacMd5
            .new_mac_with_isa(&key, Isa::PORTABLE)
            .expect("key");
        let reference = <Hmac<md5::Md5> as KeyInit>::new_from_slice(&key).expect("any length");
        let messages: Vec<Vec<u8>> = (0..50).map(|i| rng.bytes(i * 7)).collect();
        let inputs: Vec<MacInput<'_>> = messages.iter().map(|m| MacInput::message(m)).collect();
        let mut tags = vec![Tag::EMPTY; inputs.len()];
        mac.compute_many(&inputs, &mut tags).expect("batch");
        for (m, t) in messages.iter().zip(&tags) {
            let want = reference.clone().chain_update(m).finalize().into_bytes();
            assert_eq!(t.as_bytes(), &want[..]);
        }
        let mut short = vec![Tag::EMPTY; 3];
        assert!(matches!(
            mac.compute_many(&inputs, &mut short),
            Err(MacError::BatchLength { .. })
        ));
        let with_nonce = [MacInput {
            nonce: &[1],
            message: b"x",
        }];
        let mut one = [Tag::EMPTY];
        assert!(matches!(
            mac.compute_many(&with_nonce, &mut one),
            Err(MacError::NonceNotAccepted { .. })
        ));
    }
}
