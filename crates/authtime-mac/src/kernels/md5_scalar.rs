//! Scalar MD5 (RFC 1321) written for latency, and the keyed forms NTP uses:
//! MD5(key ‖ message) and HMAC-MD5 (RFC 2104) with precomputed pads.
//!
//! Written by hand because the `md-5` crate (the oracle in the tests) only offers
//! the buffering `Digest` API around a compression that leaves ~25 % of a
//! packet's cycles on the table (anchors §8: 835 c for MD5(key ‖ 48 B), 620 c
//! here). Here:
//!
//! * each step's critical path is as short as the algebra allows: `F` as
//!   `d ^ (b & (c ^ d))`, `G` as `(b & d) + (c & !d)` with the second term added
//!   off the path, `I` as `c ^ (b | !d)`; `a + X[k] + T[i]` never waits for `b`;
//! * padding is built in a stack block, no allocation, no buffering state;
//! * a key prefix is absorbed once at setup: whole key blocks are compressed,
//!   and the first steps of the first block that read only key words are run
//!   ahead ([`Md5Prefix`]), so MD5(16-byte key ‖ packet) skips 4 of its 128 steps.
//!
//! The only `unsafe` here is an empty `asm!` that fixes the order of additions
//! ([`opaque`]); the SIMD lanes are in `md5_lanes`.

use zeroize::{Zeroize, ZeroizeOnDrop};

/// MD5's initial state (RFC 1321 section 3.3).
pub(crate) const IV: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// `T[i] = floor(2^32 * |sin(i + 1)|)` (RFC 1321 section 3.4).
#[rustfmt::skip]
pub(crate) const T: [u32; 64] = [
    0xd76a_a478, 0xe8c7_b756, 0x2420_70db, 0xc1bd_ceee,
    0xf57c_0faf, 0x4787_c62a, 0xa830_4613, 0xfd46_9501,
    0x6980_98d8, 0x8b44_f7af, 0xffff_5bb1, 0x895c_d7be,
    0x6b90_1122, 0xfd98_7193, 0xa679_438e, 0x49b4_0821,
    0xf61e_2562, 0xc040_b340, 0x265e_5a51, 0xe9b6_c7aa,
    0xd62f_105d, 0x0244_1453, 0xd8a1_e681, 0xe7d3_fbc8,
    0x21e1_cde6, 0xc337_07d6, 0xf4d5_0d87, 0x455a_14ed,
    0xa9e3_e905, 0xfcef_a3f8, 0x676f_02d9, 0x8d2a_4c8a,
    0xfffa_3942, 0x8771_f681, 0x6d9d_6122, 0xfde5_380c,
    0xa4be_ea44, 0x4bde_cfa9, 0xf6bb_4b60, 0xbebf_bc70,
    0x289b_7ec6, 0xeaa1_27fa, 0xd4ef_3085, 0x0488_1d05,
    0xd9d4_d039, 0xe6db_99e5, 0x1fa2_7cf8, 0xc4ac_5665,
    0xf429_2244, 0x432a_ff97, 0xab94_23a7, 0xfc93_a039,
    0x655b_59c3, 0x8f0c_cc92, 0xffef_f47d, 0x8584_5dd1,
    0x6fa8_7e4f, 0xfe2c_e6e0, 0xa301_4314, 0x4e08_11a1,
    0xf753_7e82, 0xbd3a_f235, 0x2ad7_d2bb, 0xeb86_d391,
];

/// Message word read by step `i` (RFC 1321 section 3.4, rounds 1 to 4).
pub(crate) const IDX: [usize; 64] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, //
    1, 6, 11, 0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12, //
    5, 8, 11, 14, 1, 4, 7, 10, 13, 0, 3, 6, 9, 12, 15, 2, //
    0, 7, 14, 5, 12, 3, 10, 1, 8, 15, 6, 13, 4, 11, 2, 9,
];

/// Left rotation of step `i`.
pub(crate) const ROT: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, //
    5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, //
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, //
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];

/// One MD5 step with its round function spelled for a short dependency chain on
/// `b` (the newest word): `a + X + T` and the terms without `b` are summed
/// first, behind [`opaque`] so that the compiler keeps that order.
macro_rules! step {
    (F, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr) => {
        $a = opaque($a.wrapping_add($x[IDX[$i]].wrapping_add(T[$i])))
            .wrapping_add($d ^ ($b & ($c ^ $d)))
            .rotate_left(ROT[$i])
            .wrapping_add($b)
    };
    (G, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr) => {
        $a = opaque(
            $a.wrapping_add($x[IDX[$i]].wrapping_add(T[$i]))
                .wrapping_add($c & !$d),
        )
        .wrapping_add($b & $d)
        .rotate_left(ROT[$i])
        .wrapping_add($b)
    };
    (H, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr) => {
        $a = opaque($a.wrapping_add($x[IDX[$i]].wrapping_add(T[$i])))
            .wrapping_add(($c ^ $d) ^ $b)
            .rotate_left(ROT[$i])
            .wrapping_add($b)
    };
    (I, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr) => {
        $a = opaque($a.wrapping_add($x[IDX[$i]].wrapping_add(T[$i])))
            .wrapping_add($c ^ ($b | !$d))
            .rotate_left(ROT[$i])
            .wrapping_add($b)
    };
}

/// `x`, hidden from the optimizer at no cost (an empty `asm!` that claims to
/// change the register). Without it LLVM reassociates `a + X + T + f` into
/// `(f + a + X) + T`, putting up to three additions on the critical path of
/// every step instead of one (measured: ~25 % slower).
#[inline(always)]
fn opaque(x: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut x = x;
        // SAFETY: the template is a comment: no instruction runs, no memory,
        // stack or flags are touched; `x` stays a valid u32.
        unsafe {
            core::arch::asm!("/* {0:e} */", inout(reg) x, options(pure, nomem, nostack, preserves_flags));
        }
        x
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        x
    }
}

/// Four steps starting at step `$i`, the registers rotating as RFC 1321 writes them.
macro_rules! quad {
    ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr) => {
        step!($f, $a, $b, $c, $d, $x, $i);
        step!($f, $d, $a, $b, $c, $x, $i + 1);
        step!($f, $c, $d, $a, $b, $x, $i + 2);
        step!($f, $b, $c, $d, $a, $x, $i + 3);
    };
    // Round 1 entered after `$skip` steps that were run ahead (see `Md5Prefix`).
    ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $i:expr, $skip:expr) => {
        if runs($i, $skip) {
            step!($f, $a, $b, $c, $d, $x, $i);
        }
        if runs($i + 1, $skip) {
            step!($f, $d, $a, $b, $c, $x, $i + 1);
        }
        if runs($i + 2, $skip) {
            step!($f, $c, $d, $a, $b, $x, $i + 2);
        }
        if runs($i + 3, $skip) {
            step!($f, $b, $c, $d, $a, $x, $i + 3);
        }
    };
}

/// Whether step `i` runs in a compression entered after `skip` steps.
#[inline(always)]
pub(crate) const fn runs(i: usize, skip: usize) -> bool {
    i >= skip
}

/// The MD5 compression of the 16 words `x`, entered after its first `SKIP`
/// steps: `mid` is `(a, b, c, d)` after those steps and `iv` the chaining value
/// that the feed-forward adds. With `SKIP = 0`, `mid` is `iv`.
#[inline(always)]
pub(crate) fn compress_from<const SKIP: usize>(
    iv: [u32; 4],
    mid: [u32; 4],
    x: &[u32; 16],
) -> [u32; 4] {
    let [mut a, mut b, mut c, mut d] = mid;
    quad!(F, a, b, c, d, x, 0, SKIP);
    quad!(F, a, b, c, d, x, 4, SKIP);
    quad!(F, a, b, c, d, x, 8, SKIP);
    quad!(F, a, b, c, d, x, 12, SKIP);
    quad!(G, a, b, c, d, x, 16);
    quad!(G, a, b, c, d, x, 20);
    quad!(G, a, b, c, d, x, 24);
    quad!(G, a, b, c, d, x, 28);
    quad!(H, a, b, c, d, x, 32);
    quad!(H, a, b, c, d, x, 36);
    quad!(H, a, b, c, d, x, 40);
    quad!(H, a, b, c, d, x, 44);
    quad!(I, a, b, c, d, x, 48);
    quad!(I, a, b, c, d, x, 52);
    quad!(I, a, b, c, d, x, 56);
    quad!(I, a, b, c, d, x, 60);
    [
        iv[0].wrapping_add(a),
        iv[1].wrapping_add(b),
        iv[2].wrapping_add(c),
        iv[3].wrapping_add(d),
    ]
}

/// The first `n <= 16` steps of a compression from `state` (key setup only).
fn run_ahead(state: [u32; 4], x: &[u32; 16], n: usize) -> [u32; 4] {
    // Step i writes register (4 - i) mod 4 of (a, b, c, d) and reads the others
    // in rotated order; a loop is fine here, this runs once per key.
    let mut r = state;
    for i in 0..n.min(16) {
        let (ia, ib, ic, id) = (
            (4 - i % 4) % 4,
            (5 - i % 4) % 4,
            (6 - i % 4) % 4,
            (7 - i % 4) % 4,
        );
        let (a, b, c, d) = (r[ia], r[ib], r[ic], r[id]);
        r[ia] = a
            .wrapping_add(x[i].wrapping_add(T[i]))
            .wrapping_add(d ^ (b & (c ^ d)))
            .rotate_left(ROT[i])
            .wrapping_add(b);
    }
    r
}

/// The 16 little-endian words of a block.
#[inline(always)]
pub(crate) fn words(block: &[u8; 64]) -> [u32; 16] {
    core::array::from_fn(|i| {
        u32::from_le_bytes([
            block[4 * i],
            block[4 * i + 1],
            block[4 * i + 2],
            block[4 * i + 3],
        ])
    })
}

/// Compresses one 64-byte block into `state`.
#[inline]
pub(crate) fn compress(state: &mut [u32; 4], block: &[u8; 64]) {
    *state = compress_words(*state, &words(block));
}

/// The compression of 16 words. One out-of-line copy: the packet paths call it
/// from several places, and 2 KiB of code per inlined copy would crowd the
/// instruction cache.
#[inline(never)]
pub(crate) fn compress_words(state: [u32; 4], x: &[u32; 16]) -> [u32; 4] {
    compress_from::<0>(state, state, x)
}

/// Two independent compressions interleaved step by step: each step's chain
/// is ~4.5 cycles for ~9 operations, so one chain leaves half of a 4-ALU core
/// idle and two fill it (RFC 1810's K-way chains without SIMD).
#[inline(never)]
pub(crate) fn compress_pair(states: [[u32; 4]; 2], x: &[u32; 16], y: &[u32; 16]) -> [[u32; 4]; 2] {
    let [[mut a, mut b, mut c, mut d], [mut e, mut f, mut g, mut h]] = states;
    macro_rules! quad2 {
        ($r:ident, $i:expr) => {
            step!($r, a, b, c, d, x, $i);
            step!($r, e, f, g, h, y, $i);
            step!($r, d, a, b, c, x, $i + 1);
            step!($r, h, e, f, g, y, $i + 1);
            step!($r, c, d, a, b, x, $i + 2);
            step!($r, g, h, e, f, y, $i + 2);
            step!($r, b, c, d, a, x, $i + 3);
            step!($r, f, g, h, e, y, $i + 3);
        };
    }
    quad2!(F, 0);
    quad2!(F, 4);
    quad2!(F, 8);
    quad2!(F, 12);
    quad2!(G, 16);
    quad2!(G, 20);
    quad2!(G, 24);
    quad2!(G, 28);
    quad2!(H, 32);
    quad2!(H, 36);
    quad2!(H, 40);
    quad2!(H, 44);
    quad2!(I, 48);
    quad2!(I, 52);
    quad2!(I, 56);
    quad2!(I, 60);
    let add = |s: [u32; 4], v: [u32; 4]| core::array::from_fn(|i| s[i].wrapping_add(v[i]));
    [add(states[0], [a, b, c, d]), add(states[1], [e, f, g, h])]
}

/// [`compress_from`] out of line, one copy per step count.
#[inline(never)]
fn compress_skipping<const SKIP: usize>(iv: [u32; 4], mid: [u32; 4], x: &[u32; 16]) -> [u32; 4] {
    compress_from::<SKIP>(iv, mid, x)
}

/// Compresses every whole 64-byte block of `data` (a multiple of 64 bytes).
pub(crate) fn compress_blocks(state: &mut [u32; 4], data: &[u8]) {
    debug_assert!(data.len().is_multiple_of(64));
    let mut s = *state;
    for block in data.chunks_exact(64) {
        let x = words(block_ref(block));
        s = compress_from::<0>(s, s, &x);
    }
    *state = s;
}

/// A 64-byte chunk as an array reference (`chunks_exact(64)` guarantees the size).
#[inline(always)]
pub(crate) fn block_ref(chunk: &[u8]) -> &[u8; 64] {
    match chunk.first_chunk::<64>() {
        Some(b) => b,
        None => unreachable!("chunks are 64 bytes"),
    }
}

/// Copies `src` to the start of `dst` (`src.len() <= 64 <= dst.len()`) with a
/// few fixed-size moves instead of a `memcpy` call: packets are short.
#[inline(always)]
pub(crate) fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    debug_assert!(n <= 64 && n <= dst.len());
    if n >= 32 {
        dst[..32].copy_from_slice(&src[..32]);
        dst[n - 32..n].copy_from_slice(&src[n - 32..]);
    } else if n >= 16 {
        dst[..16].copy_from_slice(&src[..16]);
        dst[n - 16..n].copy_from_slice(&src[n - 16..]);
    } else if n >= 8 {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..n].copy_from_slice(&src[n - 8..]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..n].copy_from_slice(&src[n - 4..]);
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
    }
}

/// Serializes a state as MD5 serializes its digest (little-endian words).
#[must_use]
pub(crate) fn digest_bytes(state: &[u32; 4]) -> [u8; 16] {
    let mut out = [0; 16];
    for (o, w) in out.chunks_exact_mut(4).zip(state) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// Compresses `tail` (shorter than 64 bytes) with MD5's padding for a message of
/// `total` bytes, in one or two blocks built on the stack.
#[inline]
fn pad_tail(mut state: [u32; 4], tail: &[u8], total: u64) -> [u32; 4] {
    let mut buf = [0u8; 64];
    copy_short(&mut buf, tail);
    buf[tail.len()] = 0x80;
    let bits = total.wrapping_mul(8);
    if tail.len() < 56 {
        buf[56..].copy_from_slice(&bits.to_le_bytes());
        compress_words(state, &words(&buf))
    } else {
        state = compress_words(state, &words(&buf));
        let mut x = [0u32; 16];
        x[14] = bits as u32;
        x[15] = (bits >> 32) as u32;
        compress_words(state, &x)
    }
}

/// Plain MD5 (RFC 1321) of `data`: whole blocks straight from the slice, the
/// tail and padding on the stack.
#[must_use]
pub(crate) fn md5(data: &[u8]) -> [u8; 16] {
    let whole = data.len() & !63;
    let mut state = IV;
    compress_blocks(&mut state, &data[..whole]);
    digest_bytes(&pad_tail(state, &data[whole..], data.len() as u64))
}

/// Step counts that the first block may skip; one monomorphized compression each.
const SKIPS: [usize; 4] = [0, 4, 5, 8];

/// A secret prefix absorbed once: the state after its whole blocks, the rest of
/// it (`head`, under 64 bytes) and the state after the first `skip` steps of the
/// block that starts with `head` (those steps read only `head` words).
///
/// MD5(key ‖ m) is `Md5Prefix::new(IV, 0, key)` continued with `m`; HMAC's
/// inner hash is `Md5Prefix::new(IV, 0, key ^ ipad)` (one whole block, no head).
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub(crate) struct Md5Prefix {
    /// Chaining value after the prefix's whole blocks.
    pub(crate) state: [u32; 4],
    /// `(a, b, c, d)` after the first `skip` steps of the block that starts with `head`.
    pub(crate) mid: [u32; 4],
    /// The prefix bytes after its whole blocks, zero-padded.
    pub(crate) head: [u8; 64],
    /// Bytes of `head` in use (`< 64`).
    pub(crate) head_len: usize,
    /// Steps run ahead, one of [`SKIPS`], at most `head_len / 4`.
    pub(crate) skip: usize,
    /// Bytes hashed before `head` (a multiple of 64).
    pub(crate) prior: u64,
}

impl Md5Prefix {
    /// Absorbs `prefix` after `prior` bytes (a multiple of 64) that led to `state`.
    pub(crate) fn new(state: [u32; 4], prior: u64, prefix: &[u8]) -> Self {
        let whole = prefix.len() & !63;
        let mut state = state;
        compress_blocks(&mut state, &prefix[..whole]);
        let rest = &prefix[whole..];
        let mut head = [0u8; 64];
        head[..rest.len()].copy_from_slice(rest);
        Self::with_skip(state, prior + whole as u64, head, rest.len(), 16)
    }

    /// As built by [`Md5Prefix::new`], with at most `max_skip` steps run ahead
    /// (the lane kernels support fewer step counts than the scalar one).
    pub(crate) fn with_skip(
        state: [u32; 4],
        prior: u64,
        head: [u8; 64],
        head_len: usize,
        max_skip: usize,
    ) -> Self {
        let words_known = head_len / 4;
        let skip = SKIPS
            .iter()
            .copied()
            .filter(|&s| s <= words_known && s <= max_skip)
            .max()
            .unwrap_or(0);
        let mut x = words(&head);
        let mid = run_ahead(state, &x, skip);
        x.zeroize();
        Self {
            state,
            mid,
            head,
            head_len,
            skip,
            prior,
        }
    }

    /// The chaining value after `self ‖ message ‖ MD5 padding`.
    #[inline]
    pub(crate) fn finish(&self, message: &[u8]) -> [u32; 4] {
        match self.skip {
            4 => self.finish_skipping::<4>(message),
            5 => self.finish_skipping::<5>(message),
            8 => self.finish_skipping::<8>(message),
            _ => self.finish_skipping::<0>(message),
        }
    }

    #[inline(always)]
    fn finish_skipping<const SKIP: usize>(&self, message: &[u8]) -> [u32; 4] {
        let hl = self.head_len;
        let total = self.prior + (hl + message.len()) as u64;
        let mid = if SKIP == 0 { self.state } else { self.mid };
        // The first block: head, then as much of the message as fits.
        let mut buf = self.head;
        let take = message.len().min(64 - hl);
        copy_short(&mut buf[hl..], &message[..take]);
        if hl + take == 64 {
            let mut state = compress_skipping::<SKIP>(self.state, mid, &words(&buf));
            let rest = &message[take..];
            let whole = rest.len() & !63;
            compress_blocks(&mut state, &rest[..whole]);
            pad_tail(state, &rest[whole..], total)
        } else {
            // Head and message end inside the first block.
            let n = hl + take;
            buf[n] = 0x80;
            let bits = total.wrapping_mul(8);
            if n < 56 {
                buf[56..].copy_from_slice(&bits.to_le_bytes());
                compress_skipping::<SKIP>(self.state, mid, &words(&buf))
            } else {
                let state = compress_skipping::<SKIP>(self.state, mid, &words(&buf));
                let mut x = [0u32; 16];
                x[14] = bits as u32;
                x[15] = (bits >> 32) as u32;
                compress_words(state, &x)
            }
        }
    }
}

/// HMAC-MD5 (RFC 2104) key: the inner and outer states after the padded key.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub(crate) struct HmacMd5Key {
    /// After `K ^ ipad` (one block, no head).
    pub(crate) inner: Md5Prefix,
    /// After `K ^ opad`.
    pub(crate) outer: [u32; 4],
}

impl HmacMd5Key {
    /// RFC 2104 section 2: keys longer than the block are hashed first.
    pub(crate) fn new(key: &[u8]) -> Self {
        let mut k = [0u8; 64];
        if key.len() > 64 {
            k[..16].copy_from_slice(&md5(key));
        } else {
            k[..key.len()].copy_from_slice(key);
        }
        let mut pad = k.map(|b| b ^ 0x36);
        let mut inner = IV;
        compress(&mut inner, &pad);
        pad = k.map(|b| b ^ 0x5c);
        let mut outer = IV;
        compress(&mut outer, &pad);
        pad.zeroize();
        k.zeroize();
        Self {
            inner: Md5Prefix::with_skip(inner, 64, [0; 64], 0, 0),
            outer,
        }
    }

    /// The tag of `message`: two compressions for a packet under 56 bytes.
    #[inline]
    pub(crate) fn tag(&self, message: &[u8]) -> [u8; 16] {
        digest_bytes(&outer_block(self.outer, self.inner.finish(message)))
    }
}

/// HMAC's outer compression: the inner digest, then padding for 64 + 16 bytes.
#[inline(always)]
pub(crate) fn outer_block(outer: [u32; 4], inner: [u32; 4]) -> [u32; 4] {
    let mut x = [0u32; 16];
    x[..4].copy_from_slice(&inner);
    x[4] = 0x80;
    x[14] = (64 + 16) * 8;
    compress_words(outer, &x)
}

/// MD5(key ‖ message) key: the key absorbed as a [`Md5Prefix`].
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub(crate) struct LegacyMd5Key {
    pub(crate) prefix: Md5Prefix,
}

impl LegacyMd5Key {
    /// Any key length; the legacy digests use 1 to 32 bytes.
    pub(crate) fn new(key: &[u8]) -> Self {
        Self {
            prefix: Md5Prefix::new(IV, 0, key),
        }
    }

    /// MD5(key ‖ message).
    #[inline]
    pub(crate) fn tag(&self, message: &[u8]) -> [u8; 16] {
        digest_bytes(&self.prefix.finish(message))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use md5::{Digest, Md5};

    /// splitmix64 (Steele, Lea, Flood 2014): the tests' reproducible byte source.
    pub(crate) struct SplitMix(pub(crate) u64);

    impl SplitMix {
        pub(crate) fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next_u64() as u8).collect()
        }

        pub(crate) fn below(&mut self, n: usize) -> usize {
            (self.next_u64() % n as u64) as usize
        }
    }

    fn oracle(parts: &[&[u8]]) -> [u8; 16] {
        let mut h = Md5::new();
        for p in parts {
            h.update(p);
        }
        h.finalize().into()
    }

    // RFC 1321 appendix A.5 test suite.
    #[test]
    fn md5_rfc1321_a5_suite() {
        for (msg, want) in [
            (&b""[..], "d41d8cd98f00b204e9800998ecf8427e"),
            (b"a", "0cc175b9c0f1b6a831c399e269772661"),
            (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
            (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                b"abcdefghijklmnopqrstuvwxyz",
                "c3fcd3d76192e4007dfb496cca67e13b",
            ),
        ] {
            assert_eq!(hex::encode(md5(msg)), want);
        }
    }

    #[test]
    fn scalar_md5_matches_md5_crate_every_length() {
        let mut rng = SplitMix(1);
        let lengths: Vec<usize> = (0..=300).chain([1500, 10_000]).collect();
        for len in lengths {
            let data = rng.bytes(len);
            assert_eq!(md5(&data), oracle(&[&data]), "len {len}");
            let mut state = IV;
            let whole = len & !63;
            compress_blocks(&mut state, &data[..whole]);
            let mut single = IV;
            for block in data[..whole].chunks_exact(64) {
                compress(&mut single, block_ref(block));
            }
            assert_eq!(state, single);
        }
    }

    #[test]
    fn legacy_key_prefix_matches_md5_crate() {
        let mut rng = SplitMix(2);
        for key_len in (1..=33).chain([63, 64, 65, 100, 200]) {
            let key = rng.bytes(key_len);
            let k = LegacyMd5Key::new(&key);
            for len in (0..=140).chain([1500, 4000]) {
                let msg = rng.bytes(len);
                assert_eq!(
                    k.tag(&msg),
                    oracle(&[&key, &msg]),
                    "key {key_len} msg {len}"
                );
            }
        }
    }

    #[test]
    fn compress_pair_is_two_compressions() {
        let mut rng = SplitMix(5);
        for _ in 0..100 {
            let x: [u32; 16] = core::array::from_fn(|_| rng.next_u64() as u32);
            let y: [u32; 16] = core::array::from_fn(|_| rng.next_u64() as u32);
            let s: [[u32; 4]; 2] =
                core::array::from_fn(|_| core::array::from_fn(|_| rng.next_u64() as u32));
            let want = [compress_words(s[0], &x), compress_words(s[1], &y)];
            assert_eq!(compress_pair(s, &x, &y), want);
        }
    }

    #[test]
    fn run_ahead_steps_match_every_skip() {
        let mut rng = SplitMix(3);
        let block: [u8; 64] = core::array::from_fn(|_| rng.next_u64() as u8);
        let x = words(&block);
        let want = compress_from::<0>(IV, IV, &x);
        assert_eq!(compress_from::<4>(IV, run_ahead(IV, &x, 4), &x), want);
        assert_eq!(compress_from::<5>(IV, run_ahead(IV, &x, 5), &x), want);
        assert_eq!(compress_from::<8>(IV, run_ahead(IV, &x, 8), &x), want);
    }

    // RFC 2202 section 2, test cases 1, 2 and 6 (HMAC-MD5).
    #[test]
    fn hmac_md5_rfc2202_cases() {
        let cases: [(&[u8], &[u8], &str); 3] = [
            (&[0x0b; 16], b"Hi There", "9294727a3638bb1c13f48ef8158bfc9d"),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                "750c783e6ab0b503eaa86e310a5db738",
            ),
            (
                &[0xaa; 80],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "6b1ab7fe4bd7bf8f0b62e6ce61b9d0cd",
            ),
        ];
        for (key, msg, want) in cases {
            assert_eq!(hex::encode(HmacMd5Key::new(key).tag(msg)), want);
        }
    }

    #[test]
    fn hmac_md5_matches_hmac_crate() {
        use hmac::{Hmac, KeyInit, Mac as _};
        let mut rng = SplitMix(4);
        for key_len in [1, 16, 20, 32, 63, 64, 65, 200] {
            let key = rng.bytes(key_len);
            let k = HmacMd5Key::new(&key);
            let reference = <Hmac<Md5> as KeyInit>::new_from_slice(&key).expect("any length");
            for len in (0..=300).chain([1500]) {
                let msg = rng.bytes(len);
                let want = reference.clone().chain_update(&msg).finalize().into_bytes();
                assert_eq!(k.tag(&msg)[..], want[..], "key {key_len} msg {len}");
            }
        }
    }
}
