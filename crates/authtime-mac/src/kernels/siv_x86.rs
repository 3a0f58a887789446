//! AES-SIV (RFC 5297) with AES-NI: S2V's CMAC chains side by side, then CTR
//! eight blocks at a time.
//!
//! Written by hand for NTS, where every exchange opens and seals a cookie under
//! the master key and opens and seals a packet under its session keys. Through
//! a generic block-cipher interface each of these costs a few dozen calls of
//! one to four blocks, each loading the round keys again; here the round keys
//! of both halves of the key are expanded once, kept in the key, and every
//! block of a call goes through one loop of `AESENC`s.
//!
//! S2V's CMACs are independent of each other until they are folded into its
//! running value D, and so is the CMAC chain of the plaintext's blocks before
//! its last 16 bytes (which D does not touch): up to four of these chains run
//! in lockstep, so their AES latencies overlap. The CMAC of the 128-bit zero
//! block (where D starts) and of the empty string (an empty header, as NTS
//! cookies have) are computed once per key.
//!
//! Not here: the portable path (`crate::siv_portable`) and the choice between
//! the two, which [`crate::AesSiv`] makes once per key.

#![cfg(target_arch = "x86_64")]

use core::arch::x86_64::{
    __m128i, _mm_add_epi64, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_and_si128, _mm_cmpeq_epi8,
    _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x, _mm_setzero_si128, _mm_shuffle_epi8,
    _mm_shuffle_epi32, _mm_slli_epi64, _mm_slli_si128, _mm_srai_epi32, _mm_srli_epi64,
    _mm_storeu_si128, _mm_xor_si128,
};

use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop};

use super::cmac_x86::{
    BLOCK, SHIFT_DOWN, cmac_blocks, load_at, load16, round_keys, short_block, store16,
};

/// CMAC chains S2V runs side by side: up to three headers and the
/// plaintext's leading blocks.
const LANES: usize = 4;
/// Keystream blocks made per pass of the CTR loop.
const CTR_WIDTH: usize = 8;

/// An expanded AES-SIV key: K1 (S2V's CMAC) and K2 (CTR), each AES-128 or
/// AES-256. Zeroized on drop.
///
/// A value exists only when the CPU has AES-NI and SSE4.1 (checked in
/// [`SivX86::new`]), which is what makes its safe methods sound.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub(crate) struct SivX86 {
    /// Round keys of K1.
    pub(super) mac: [__m128i; 15],
    /// Round keys of K2.
    ctr: [__m128i; 15],
    /// The CMAC subkeys K1' and K2' (RFC 4493 section 2.3), each XORed with
    /// `mac[0]` (the first round key, folded into every block).
    sub1: __m128i,
    sub2: __m128i,
    /// CMAC(K1, 0^128), where S2V's running value starts.
    pub(super) zero_mac: __m128i,
    /// CMAC(K1, ""), the value of an empty header.
    pub(super) empty_mac: __m128i,
    /// 10 for AES-128 halves, 14 for AES-256 halves.
    #[zeroize(skip)]
    pub(super) nr: usize,
}

impl core::fmt::Debug for SivX86 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SivX86")
            .field("rounds", &self.nr)
            .finish_non_exhaustive()
    }
}

/// One CMAC chain of S2V: `blocks` blocks of `msg` absorbed into `state`,
/// the last one padded and keyed when `finish` (then `state` ends as the
/// CMAC).
#[derive(Clone, Copy)]
struct Chain<'a> {
    msg: &'a [u8],
    blocks: usize,
    finish: bool,
    state: __m128i,
}

/// `PSHUFB` mask that reverses the 16 bytes of a block: a big-endian block
/// becomes a little-endian 128-bit integer (low 64 bits in lane 0) and back.
static BSWAP: [u8; BLOCK] = [15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0];

/// Clears the top bits of the last two 32-bit words of the IV (RFC 5297
/// section 2.5), so that the counter's low 64 bits never carry.
static CTR_MASK: [u8; BLOCK] = {
    let mut m = [0xff; BLOCK];
    m[8] = 0x7f;
    m[12] = 0x7f;
    m
};

/// A stack buffer wiped with whole-vector volatile stores.
#[repr(C, align(16))]
pub(super) struct Scratch<const N: usize>(pub(super) [u8; N]);

impl<const N: usize> Scratch<N> {
    pub(super) fn wipe(&mut self) {
        // SAFETY: `self` is a valid, aligned, writable `Scratch<N>`; a
        // volatile store of the whole value is not elided.
        unsafe { core::ptr::write_volatile(self, Scratch([0; N])) };
    }
}

/// Doubling in GF(2^128) of a block in S2V's big-endian order, branch-free.
#[inline]
#[target_feature(enable = "aes,sse4.1")]
pub(super) fn dbl_block(x: __m128i) -> __m128i {
    let bswap = load16(&BSWAP);
    let v = _mm_shuffle_epi8(x, bswap);
    let shifted = _mm_slli_epi64::<1>(v);
    // Lane 0's top bit moves into lane 1's bottom bit.
    let carried = _mm_slli_si128::<8>(_mm_srli_epi64::<63>(v));
    // Bit 127 out: reduce by x^128 = x^7 + x^2 + x + 1 (0x87).
    let top = _mm_srai_epi32::<31>(_mm_shuffle_epi32::<0xff>(v));
    let reduce = _mm_and_si128(top, _mm_set_epi64x(0, 0x87));
    _mm_shuffle_epi8(_mm_xor_si128(_mm_or_si128(shifted, carried), reduce), bswap)
}

/// The block of a message of fewer than 16 bytes, zero-filled.
#[inline]
#[target_feature(enable = "aes,sse4.1")]
pub(super) fn short_message_block(msg: &[u8]) -> __m128i {
    let v = short_block(msg);
    #[allow(clippy::cast_possible_truncation, reason = "the two halves")]
    _mm_set_epi64x((v >> 64) as i64, v as i64)
}

impl Chain<'_> {
    fn idle() -> Self {
        Chain {
            msg: &[],
            blocks: 0,
            finish: false,
            // SAFETY: SSE2 is part of x86-64.
            state: unsafe { _mm_setzero_si128() },
        }
    }
}

/// `PAD[r]`: the CMAC padding of a last block of `r < 16` bytes (0x80 at
/// byte `r`).
pub(super) static PAD: [[u8; BLOCK]; BLOCK] = {
    let mut t = [[0u8; BLOCK]; BLOCK];
    let mut r = 0;
    while r < BLOCK {
        t[r][r] = 0x80;
        r += 1;
    }
    t
};

impl SivX86 {
    /// An empty key, to be filled by [`SivX86::fill`] where it will stay:
    /// a server expands its session keys in the frame that uses them, since
    /// moving the key costs as much as expanding it.
    pub(crate) fn zeroed() -> Self {
        // SAFETY: SSE2 is part of x86-64.
        let zero = unsafe { _mm_setzero_si128() };
        Self {
            mac: [zero; 15],
            ctr: [zero; 15],
            sub1: zero,
            sub2: zero,
            zero_mac: zero,
            empty_mac: zero,
            nr: 10,
        }
    }

    /// Expands `key` (K1 then K2: 32 bytes for AEAD_AES_SIV_CMAC_256, 64 for
    /// AEAD_AES_SIV_CMAC_512). `None` for another length, or when the CPU lacks
    /// AES-NI or SSE4.1.
    #[must_use]
    pub(crate) fn new(key: &[u8]) -> Option<Self> {
        let mut k = Self::zeroed();
        k.fill(key).then_some(k)
    }

    /// Runs `f` with `key` expanded on the stack, and wipes it after. `None`
    /// as for [`SivX86::new`].
    pub(crate) fn with_key<R>(key: &[u8], f: impl FnOnce(&Self) -> R) -> Option<R> {
        let mut k = Self::zeroed();
        k.fill(key).then(|| f(&k))
    }

    /// Expands `key` into `self`; `false` (and `self` untouched) for a wrong
    /// length or a CPU without AES-NI and SSE4.1.
    pub(crate) fn fill(&mut self, key: &[u8]) -> bool {
        use std::arch::is_x86_feature_detected as has;
        if !(has!("aes") && has!("sse4.1") && matches!(key.len(), 32 | 64)) {
            return false;
        }
        let (k1, k2) = key.split_at(key.len() / 2);
        // SAFETY: AES-NI and SSE4.1 were detected just above.
        unsafe { self.expand(k1, k2) }
    }

    #[target_feature(enable = "aes,sse4.1")]
    fn expand(&mut self, k1: &[u8], k2: &[u8]) -> bool {
        let slot = core::slice::from_mut(self);
        fill_slots(slot, &[k1], &[k2])
    }

    /// Expands `keys[i]` into `slots[i]` (at most eight, all of one length,
    /// 32 or 64 bytes), their AES work side by side; `false` (slots
    /// untouched) otherwise or on a CPU without AES-NI and SSE4.1.
    pub(crate) fn fill_many(slots: &mut [Self], keys: &[&[u8]]) -> bool {
        use std::arch::is_x86_feature_detected as has;
        let Some(len) = keys.first().map(|k| k.len()) else {
            return true;
        };
        if !(has!("aes") && has!("sse4.1") && matches!(len, 32 | 64))
            || keys.len() > MANY
            || slots.len() < keys.len()
            || keys.iter().any(|k| k.len() != len)
        {
            return false;
        }
        let mut k1 = [&[][..]; MANY];
        let mut k2 = [&[][..]; MANY];
        for ((a, b), key) in k1.iter_mut().zip(k2.iter_mut()).zip(keys) {
            (*a, *b) = key.split_at(len / 2);
        }
        // SAFETY: AES-NI and SSE4.1 were detected just above.
        unsafe {
            fill_slots(
                &mut slots[..keys.len()],
                &k1[..keys.len()],
                &k2[..keys.len()],
            )
        }
    }

    /// The last block of a message of `n` blocks, padded, XORed with its
    /// subkey and with `mac[0]`. `n` must be `cmac_blocks(msg.len())`.
    #[inline]
    #[target_feature(enable = "aes,sse4.1")]
    pub(super) fn last_block(&self, msg: &[u8], n: usize) -> __m128i {
        let len = msg.len();
        if len >= BLOCK {
            // The 16 bytes that end the message hold the r = 1..=16 bytes of
            // the last block at the top; one shuffle moves them down.
            let r = len - BLOCK * (n - 1);
            // SAFETY: len >= 16.
            let end = unsafe { load_at(msg, len - BLOCK) };
            let moved = _mm_shuffle_epi8(end, load16(&SHIFT_DOWN[r]));
            if r == BLOCK {
                _mm_xor_si128(moved, self.sub1)
            } else {
                _mm_xor_si128(_mm_xor_si128(moved, load16(&PAD[r])), self.sub2)
            }
        } else {
            let block = short_message_block(msg);
            _mm_xor_si128(_mm_xor_si128(block, load16(&PAD[len])), self.sub2)
        }
    }

    /// Encrypts `buf` in place under the header vector `headers`; returns the
    /// synthetic IV (the tag).
    pub(crate) fn seal(&self, headers: &[&[u8]], buf: &mut [u8]) -> [u8; BLOCK] {
        // SAFETY: `new` checked AES-NI and SSE4.1.
        let v = unsafe { self.s2v(headers, buf) };
        let mut tag = [0u8; BLOCK];
        store16(&mut tag, v);
        // SAFETY: as above.
        unsafe { self.apply_ctr(&tag, buf) };
        tag
    }

    /// Decrypts `buf` in place and checks `tag`; on a mismatch `buf` is
    /// zeroed and `false` returned.
    pub(crate) fn open(&self, headers: &[&[u8]], buf: &mut [u8], tag: &[u8; BLOCK]) -> bool {
        // SAFETY: `new` checked AES-NI and SSE4.1.
        unsafe { self.apply_ctr(tag, buf) };
        // SAFETY: as above.
        let v = unsafe { self.s2v(headers, buf) };
        // Constant time: one vector compare of all 16 bytes, no early exit.
        // SAFETY: SSE2 is part of x86-64.
        let equal = unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(v, load16(tag))) };
        let ok = bool::from(equal.ct_eq(&0xffff));
        if !ok {
            buf.zeroize();
        }
        ok
    }

    /// Xors the keystream CTR(K2, `iv`) onto `buf` (RFC 5297 section 2.5).
    pub(crate) fn ctr(&self, iv: &[u8; BLOCK], buf: &mut [u8]) {
        // SAFETY: `new`/`fill` checked AES-NI and SSE4.1.
        unsafe { self.apply_ctr(iv, buf) };
    }

    /// Runs the chains of `lanes` in lockstep.
    #[target_feature(enable = "aes,sse4.1")]
    fn run(&self, lanes: &mut [Chain<'_>; LANES]) {
        if self.nr == 10 {
            run_lanes::<10>(self, lanes);
        } else {
            run_lanes::<14>(self, lanes);
        }
    }

    /// S2V(K1, headers..., plaintext) (RFC 5297 section 2.4).
    #[target_feature(enable = "aes,sse4.1")]
    fn s2v(&self, headers: &[&[u8]], plaintext: &[u8]) -> __m128i {
        let n = plaintext.len();
        let prefix_blocks = if n >= BLOCK { (n - BLOCK) / BLOCK } else { 0 };
        let mut plaintext_state = _mm_setzero_si128();
        let mut d = self.zero_mac;
        let mut groups = headers.chunks(LANES - 1);
        let mut first = true;
        loop {
            let group = groups.next().unwrap_or_default();
            if group.is_empty() && !first {
                break;
            }
            let mut lanes = [Chain::idle(); LANES];
            for (lane, h) in lanes.iter_mut().zip(group) {
                if !h.is_empty() {
                    *lane = Chain {
                        msg: h,
                        blocks: cmac_blocks(h.len()),
                        finish: true,
                        state: _mm_setzero_si128(),
                    };
                }
            }
            if first {
                lanes[group.len()] = Chain {
                    msg: plaintext,
                    blocks: prefix_blocks,
                    finish: false,
                    state: _mm_setzero_si128(),
                };
            }
            self.run(&mut lanes);
            for (lane, h) in lanes.iter().zip(group) {
                let mac = if h.is_empty() {
                    self.empty_mac
                } else {
                    lane.state
                };
                d = _mm_xor_si128(dbl_block(d), mac);
            }
            if first {
                plaintext_state = lanes[group.len()].state;
                first = false;
            }
        }
        if n >= BLOCK {
            // The rest (16 to 31 bytes) with D xored onto its last 16 bytes,
            // continuing the plaintext's chain.
            let rest = &plaintext[BLOCK * prefix_blocks..];
            let mut buf = Scratch([0u8; 2 * BLOCK]);
            buf.0[..rest.len()].copy_from_slice(rest);
            let tail_at = rest.len() - BLOCK;
            // SAFETY: tail_at + 16 = rest.len() <= 32.
            let tail = unsafe { load_at(&buf.0, tail_at) };
            // SAFETY: as above, 16 writable bytes at tail_at.
            unsafe {
                _mm_storeu_si128(
                    buf.0.as_mut_ptr().add(tail_at).cast(),
                    _mm_xor_si128(tail, d),
                );
            }
            let mut lanes = [Chain::idle(); LANES];
            lanes[0] = Chain {
                msg: &buf.0[..rest.len()],
                blocks: cmac_blocks(rest.len()),
                finish: true,
                state: plaintext_state,
            };
            self.run(&mut lanes);
            let v = lanes[0].state;
            buf.wipe();
            v
        } else {
            // T = dbl(D) xor pad(plaintext), one whole block: V = AES(T xor K1').
            let padded = _mm_xor_si128(short_message_block(plaintext), load16(&PAD[n]));
            let t = _mm_xor_si128(dbl_block(d), padded);
            encrypt_folded(&self.mac, self.nr, _mm_xor_si128(t, self.sub1))
        }
    }

    /// Xors the keystream CTR(K2, Q) onto `buf`, Q being `iv` with the top
    /// bits of its last two 32-bit words cleared (RFC 5297 section 2.5).
    #[target_feature(enable = "aes,sse4.1")]
    pub(super) fn apply_ctr(&self, iv: &[u8; BLOCK], buf: &mut [u8]) {
        if self.nr == 10 {
            ctr_lanes::<10>(&self.ctr, iv, buf);
        } else {
            ctr_lanes::<14>(&self.ctr, iv, buf);
        }
    }
}

/// Most keys [`SivX86::fill_many`] expands at once.
pub(crate) const MANY: usize = 8;

/// Expands K1 `k1[i]` and K2 `k2[i]` (all of one length) into `slots[i]`:
/// the round keys, then L = AES(K1, 0) of all keys side by side, the CMAC
/// subkeys, and CMAC(0^128) and CMAC("") of all keys side by side.
#[target_feature(enable = "aes,sse4.1")]
fn fill_slots(slots: &mut [SivX86], k1: &[&[u8]], k2: &[&[u8]]) -> bool {
    let n = slots.len().min(k1.len()).min(k2.len()).min(MANY);
    let mut nr = 0;
    for ((slot, a), b) in slots.iter_mut().zip(k1).zip(k2).take(n) {
        // SAFETY: the target features are enabled on this function.
        let (Some((mac, r)), Some((ctr, _))) = (unsafe { round_keys(a) }, unsafe { round_keys(b) })
        else {
            return false;
        };
        slot.mac = mac;
        slot.ctr = ctr;
        slot.nr = r;
        nr = r;
    }
    let zero = _mm_setzero_si128();
    // L of every key.
    let mut l = [zero; MANY];
    for (v, slot) in l.iter_mut().zip(slots.iter()).take(n) {
        *v = slot.mac[0];
    }
    let slots = &mut slots[..n];
    lockstep_rounds(slots, &mut l, nr);
    for (slot, v) in slots.iter_mut().zip(l) {
        let sub1 = dbl_block(v);
        slot.sub1 = _mm_xor_si128(sub1, slot.mac[0]);
        slot.sub2 = _mm_xor_si128(dbl_block(sub1), slot.mac[0]);
    }
    l.zeroize();
    // CMAC(0^128) = AES(K1' xor 0) and CMAC("") = AES(K2' xor pad(0)), the
    // first round key already folded into `sub1` and `sub2`.
    let mut zero_macs = [zero; MANY];
    let mut empty_macs = [zero; MANY];
    for ((z, e), slot) in zero_macs
        .iter_mut()
        .zip(empty_macs.iter_mut())
        .zip(slots.iter())
    {
        *z = slot.sub1;
        *e = _mm_xor_si128(slot.sub2, load16(&PAD[0]));
    }
    lockstep_rounds2(slots, &mut zero_macs, &mut empty_macs, nr);
    for ((slot, z), e) in slots.iter_mut().zip(zero_macs).zip(empty_macs) {
        slot.zero_mac = z;
        slot.empty_mac = e;
    }
    true
}

/// Rounds 1 to `nr` of block `i` under `slots[i]`'s K1, all blocks side
/// by side (each block already holds its first round key).
#[target_feature(enable = "aes,sse4.1")]
fn lockstep_rounds(slots: &[SivX86], blocks: &mut [__m128i; MANY], nr: usize) {
    for r in 1..nr {
        for (v, slot) in blocks.iter_mut().zip(slots) {
            *v = _mm_aesenc_si128(*v, slot.mac[r]);
        }
    }
    for (v, slot) in blocks.iter_mut().zip(slots) {
        *v = _mm_aesenclast_si128(*v, slot.mac[nr]);
    }
}

/// [`lockstep_rounds`] of two sets of blocks, side by side.
#[target_feature(enable = "aes,sse4.1")]
fn lockstep_rounds2(slots: &[SivX86], a: &mut [__m128i; MANY], b: &mut [__m128i; MANY], nr: usize) {
    for r in 1..nr {
        for ((x, y), slot) in a.iter_mut().zip(b.iter_mut()).zip(slots) {
            *x = _mm_aesenc_si128(*x, slot.mac[r]);
            *y = _mm_aesenc_si128(*y, slot.mac[r]);
        }
    }
    for ((x, y), slot) in a.iter_mut().zip(b.iter_mut()).zip(slots) {
        *x = _mm_aesenclast_si128(*x, slot.mac[nr]);
        *y = _mm_aesenclast_si128(*y, slot.mac[nr]);
    }
}

/// Rounds 1 to `NR` of `s`, which already holds the first round key.
#[inline]
#[target_feature(enable = "aes,sse4.1")]
fn rounds<const NR: usize>(rk: &[__m128i; 15], mut s: __m128i) -> __m128i {
    for key in &rk[1..NR] {
        s = _mm_aesenc_si128(s, *key);
    }
    _mm_aesenclast_si128(s, rk[NR])
}

/// AES of a block that already holds the first round key.
#[target_feature(enable = "aes,sse4.1")]
fn encrypt_folded(rk: &[__m128i; 15], nr: usize, s: __m128i) -> __m128i {
    if nr == 10 {
        rounds::<10>(rk, s)
    } else {
        rounds::<14>(rk, s)
    }
}

/// The CMAC chains of `lanes` side by side: step `j` feeds block `j` of every
/// lane that has one through one round loop. Idle lanes run on their old
/// state, which is kept. The states stay in registers for the whole run;
/// each step's message blocks do not depend on them, so they are loaded
/// while the previous step's rounds are still running.
#[target_feature(enable = "aes,sse4.1")]
fn run_lanes<const NR: usize>(k: &SivX86, lanes: &mut [Chain<'_>; LANES]) {
    let steps = lanes.iter().map(|l| l.blocks).max().unwrap_or(0);
    let mut state = [_mm_setzero_si128(); LANES];
    for (st, lane) in state.iter_mut().zip(lanes.iter()) {
        *st = lane.state;
    }
    let zero = _mm_setzero_si128();
    for j in 0..steps {
        let mut s = [zero; LANES];
        for ((slot, lane), st) in s.iter_mut().zip(lanes.iter()).zip(state) {
            let block = if j >= lane.blocks {
                zero
            } else if lane.finish && j + 1 == lane.blocks {
                k.last_block(lane.msg, lane.blocks)
            } else {
                // SAFETY: block j < blocks is a whole block inside the
                // message (a finishing lane's last block was handled above; a
                // non-finishing lane's blocks are all whole).
                _mm_xor_si128(unsafe { load_at(lane.msg, BLOCK * j) }, k.mac[0])
            };
            *slot = _mm_xor_si128(st, block);
        }
        for key in &k.mac[1..NR] {
            for v in &mut s {
                *v = _mm_aesenc_si128(*v, *key);
            }
        }
        for ((st, lane), v) in state.iter_mut().zip(lanes.iter()).zip(s) {
            if j < lane.blocks {
                *st = _mm_aesenclast_si128(v, k.mac[NR]);
            }
        }
    }
    for (lane, st) in lanes.iter_mut().zip(state) {
        lane.state = st;
    }
}

/// CTR over `buf`, [`CTR_WIDTH`] blocks per round loop. The counter is kept
/// as a little-endian integer in a vector; its low 64 bits start below 2^63
/// and never carry.
#[target_feature(enable = "aes,sse4.1")]
fn ctr_lanes<const NR: usize>(rk: &[__m128i; 15], iv: &[u8; BLOCK], buf: &mut [u8]) {
    let bswap = load16(&BSWAP);
    let q = _mm_and_si128(load16(iv), load16(&CTR_MASK));
    let base = _mm_shuffle_epi8(q, bswap);
    let mut index = 0i64;
    for chunk in buf.chunks_mut(BLOCK * CTR_WIDTH) {
        let mut s = [_mm_setzero_si128(); CTR_WIDTH];
        for v in &mut s {
            let counter = _mm_add_epi64(base, _mm_set_epi64x(0, index));
            *v = _mm_xor_si128(_mm_shuffle_epi8(counter, bswap), rk[0]);
            index += 1;
        }
        for key in &rk[1..NR] {
            for v in &mut s {
                *v = _mm_aesenc_si128(*v, *key);
            }
        }
        for v in &mut s {
            *v = _mm_aesenclast_si128(*v, rk[NR]);
        }
        for (piece, k) in chunk.chunks_mut(BLOCK).zip(s) {
            if piece.len() == BLOCK {
                // SAFETY: the piece holds 16 bytes.
                let m = unsafe { load_at(piece, 0) };
                // SAFETY: 16 writable bytes; `storeu` takes any alignment.
                unsafe { _mm_storeu_si128(piece.as_mut_ptr().cast(), _mm_xor_si128(m, k)) };
            } else {
                let mut block = Scratch([0u8; BLOCK]);
                block.0[..piece.len()].copy_from_slice(piece);
                let x = _mm_xor_si128(load16(&block.0), k);
                // SAFETY: 16 writable bytes; `storeu` takes any alignment.
                unsafe { _mm_storeu_si128(block.0.as_mut_ptr().cast(), x) };
                piece.copy_from_slice(&block.0[..piece.len()]);
                block.wipe();
            }
        }
        s.zeroize();
    }
}
