//! Multi-lane AES-CMAC: many messages of one block count, their CBC chains
//! interleaved so that the AES units never wait for a result.
//!
//! `AESENC` has a latency of 4 cycles and issues twice per cycle on Zen 4 (and
//! on recent Intel cores), so 8 independent chains keep it busy in theory. On
//! xmm registers a chunk is 8 messages. With VAES each ymm register carries two
//! messages, and a chunk is 12 registers, 24 messages: the 16 ymm registers of
//! AVX2 hold the 12 states, a round key and a temporary. 12 rather than 8
//! because the work between chunks (reading the next messages, preparing their
//! last blocks, handing out tags) then hides behind the rounds: measured here,
//! 14 against 17 cycles per 48-byte packet for the kernel alone (8 when that
//! work is left out). Both kernels are generic over the register count `L`, so
//! that a batch tail runs on as few registers as it needs, and over the round
//! count `NR` (10 or 14).
//!
//! Every message's blocks are loaded in place; the last block is prepared once
//! per message ([`last_block`]: padding, K1 or K2, round-key folding), with a
//! shortcut for the usual chunk whose messages all have one length.

#![cfg(target_arch = "x86_64")]
#![allow(
    clippy::needless_range_loop,
    reason = "lane loops index states, prepared blocks and messages in step"
)]

use core::arch::x86_64::{
    __m128i, __m256i, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_setzero_si128, _mm_shuffle_epi8,
    _mm_xor_si128, _mm256_aesenc_epi128, _mm256_aesenclast_epi128, _mm256_broadcastsi128_si256,
    _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_set_m128i, _mm256_setzero_si256,
    _mm256_shuffle_epi8, _mm256_xor_si256,
};

use super::cmac_x86::{
    BLOCK, CmacKeys, SHIFT_DOWN, cmac_blocks, last_block, load_at, load16, store16, tag_one,
};

/// Messages per call of the xmm kernel (8 chains in flight).
pub(crate) const XMM_LANES: usize = 8;

/// Calls `$f::<L, NR>$args` for `L = $regs` (1 to 8) and `NR = $nr` (10 or 14).
macro_rules! dispatch {
    ($f:ident, $regs:expr, $nr:expr, $args:tt) => {
        match ($regs, $nr) {
            (1, 10) => $f::<1, 10> $args,
            (2, 10) => $f::<2, 10> $args,
            (3, 10) => $f::<3, 10> $args,
            (4, 10) => $f::<4, 10> $args,
            (5, 10) => $f::<5, 10> $args,
            (6, 10) => $f::<6, 10> $args,
            (7, 10) => $f::<7, 10> $args,
            (8, 10) => $f::<8, 10> $args,
            (1, _) => $f::<1, 14> $args,
            (2, _) => $f::<2, 14> $args,
            (3, _) => $f::<3, 14> $args,
            (4, _) => $f::<4, 14> $args,
            (5, _) => $f::<5, 14> $args,
            (6, _) => $f::<6, 14> $args,
            (7, _) => $f::<7, 14> $args,
            (8, _) => $f::<8, 14> $args,
            _ => unreachable!("at most 8 registers"),
        }
    };
}

/// Registers per chunk of the VAES kernel in the bulk of a group (see the
/// module docs for why 12).
pub(crate) const YMM_REGS: usize = 12;

/// Messages per chunk of the VAES kernel in the bulk of a group.
pub(crate) const YMM_LANES: usize = 2 * YMM_REGS;

/// Tags of messages `0..count` of `n` blocks on ymm registers with VAES:
/// chunks of [`YMM_LANES`], then chunks of at most 16 with as few registers
/// as the rest needs. `Err(i)`: the chunk from message `i` on holds another
/// block count, and messages `i..` were left alone.
///
/// # Safety
/// The CPU has VAES, AVX2, AES-NI and SSE4.1.
pub(super) unsafe fn run_ymm<'m>(
    k: &CmacKeys,
    n: usize,
    count: usize,
    msg: &impl Fn(usize) -> &'m [u8],
    out: &mut impl FnMut(usize, [u8; 16]),
) -> Result<(), usize> {
    let mut done = count - count % YMM_LANES;
    // SAFETY (all): the caller checked the CPU features of the kernels.
    unsafe {
        if done > 0 {
            if k.nr == 10 {
                ymm_run::<YMM_REGS, 10>(k, n, 0, done, msg, out)?;
            } else {
                ymm_run::<YMM_REGS, 14>(k, n, 0, done, msg, out)?;
            }
        }
        while done < count {
            let end = count.min(done + 16);
            match end - done {
                // The one-packet path takes any length.
                1 => out(done, tag_one_dispatch(k, msg(done))),
                rest => dispatch!(ymm_run, rest.div_ceil(2), k.nr, (k, n, done, end, msg, out))?,
            }
            done = end;
        }
    }
    Ok(())
}

/// Tags of messages `0..count` of `n` blocks on xmm registers with AES-NI:
/// chunks of [`XMM_LANES`], then chunks of at most 8 lanes for the rest.
/// `Err(i)` as for [`run_ymm`].
///
/// # Safety
/// The CPU has AES-NI and SSE4.1.
pub(super) unsafe fn run_xmm<'m>(
    k: &CmacKeys,
    n: usize,
    count: usize,
    msg: &impl Fn(usize) -> &'m [u8],
    out: &mut impl FnMut(usize, [u8; 16]),
) -> Result<(), usize> {
    let mut done = count - count % XMM_LANES;
    // SAFETY (all): the caller checked the CPU features of the kernels.
    unsafe {
        if done > 0 {
            if k.nr == 10 {
                xmm_run::<XMM_LANES, 10>(k, n, 0, done, msg, out)?;
            } else {
                xmm_run::<XMM_LANES, 14>(k, n, 0, done, msg, out)?;
            }
        }
        while done < count {
            let end = count.min(done + 8);
            match end - done {
                1 => out(done, tag_one_dispatch(k, msg(done))),
                rest => dispatch!(xmm_run, rest, k.nr, (k, n, done, end, msg, out))?,
            }
            done = end;
        }
    }
    Ok(())
}

/// The one-packet kernel for a leftover message.
///
/// # Safety
/// The CPU has AES-NI and SSE4.1.
unsafe fn tag_one_dispatch(k: &CmacKeys, msg: &[u8]) -> [u8; 16] {
    // SAFETY: the caller checked the CPU features.
    unsafe {
        if k.nr == 10 {
            tag_one::<10>(k, msg)
        } else {
            tag_one::<14>(k, msg)
        }
    }
}

/// Messages `start..end` in chunks of `2 * L` (two per ymm register); in a
/// last, partial chunk the lanes past `end` repeat message `end - 1`, whose tag
/// then goes out more than once. Stops with `Err(base)` before a chunk that
/// holds another block count than `n`.
///
/// # Safety
/// The CPU has VAES, AVX2, AES-NI and SSE4.1.
#[target_feature(enable = "vaes,avx2,aes,sse4.1")]
unsafe fn ymm_run<'m, const L: usize, const NR: usize>(
    k: &CmacKeys,
    n: usize,
    start: usize,
    end: usize,
    msg: &impl Fn(usize) -> &'m [u8],
    out: &mut impl FnMut(usize, [u8; 16]),
) -> Result<(), usize> {
    let mut rk = [_mm256_setzero_si256(); 15];
    for i in 0..=NR {
        rk[i] = _mm256_broadcastsi128_si256(k.rk[i]);
    }
    let fold = _mm256_broadcastsi128_si256(k.fold);
    let tails = &k.tail_keys[usize::from(n > 1)];
    let mut base = start;
    while base < end {
        let mut lanes = [[&[][..]; 2]; L];
        for l in 0..L {
            for h in 0..2 {
                lanes[l][h] = msg((base + 2 * l + h).min(end - 1));
            }
        }
        let len = lanes[0][0].len();
        let mut last = [_mm256_setzero_si256(); L];
        if len >= BLOCK && lanes.iter().flatten().all(|m| m.len() == len) {
            // One packet size (the usual NTP batch): one shuffle and one
            // subkey for all lanes.
            if cmac_blocks(len) != n {
                return Err(base);
            }
            let r = len - BLOCK * (n - 1);
            let key = _mm256_broadcastsi128_si256(tails[r]);
            let shift = _mm256_broadcastsi128_si256(load16(&SHIFT_DOWN[r]));
            for l in 0..L {
                // SAFETY: len >= 16.
                let mut block = unsafe { load_pair(&lanes[l], len - BLOCK) };
                if r < BLOCK {
                    block = _mm256_shuffle_epi8(block, shift);
                }
                last[l] = _mm256_xor_si256(block, key);
            }
        } else {
            if !lanes.iter().flatten().all(|m| cmac_blocks(m.len()) == n) {
                return Err(base);
            }
            for l in 0..L {
                last[l] = _mm256_set_m128i(
                    last_block(tails, lanes[l][1], n),
                    last_block(tails, lanes[l][0], n),
                );
            }
        }
        // SAFETY: every lane has n blocks (checked above).
        let tags = unsafe { ymm_chunk::<L, NR>(&rk, fold, &lanes, &last, n) };
        let mut bytes = [[0u8; 16]; 2];
        for l in 0..L {
            store16(&mut bytes[0], _mm256_castsi256_si128(tags[l]));
            store16(&mut bytes[1], _mm256_extracti128_si256::<1>(tags[l]));
            for h in 0..2 {
                out((base + 2 * l + h).min(end - 1), bytes[h]);
            }
        }
        base += 2 * L;
    }
    Ok(())
}

/// AES rounds 1 to `NR - 1` on every ymm state.
#[inline]
#[target_feature(enable = "vaes,avx2,aes,sse4.1")]
fn rounds_ymm<const L: usize, const NR: usize>(s: &mut [__m256i; L], rk: &[__m256i; 15]) {
    for key in &rk[1..NR] {
        for x in s.iter_mut() {
            *x = _mm256_aesenc_epi128(*x, *key);
        }
    }
}

/// The blocks at `off` of a pair of messages (low and high half).
///
/// # Safety
/// Both messages have at least `off + 16` bytes.
#[inline]
#[target_feature(enable = "vaes,avx2,aes,sse4.1")]
unsafe fn load_pair(pair: &[&[u8]; 2], off: usize) -> __m256i {
    // SAFETY: the caller guarantees the length of both messages.
    unsafe { _mm256_set_m128i(load_at(pair[1], off), load_at(pair[0], off)) }
}

/// CMAC of `L` pairs of messages of `n` blocks, two per ymm register, given
/// their prepared last blocks ([`last_block`]).
///
/// # Safety
/// The CPU has VAES, AVX2, AES-NI and SSE4.1; every message has `n` blocks.
#[inline]
#[target_feature(enable = "vaes,avx2,aes,sse4.1")]
unsafe fn ymm_chunk<const L: usize, const NR: usize>(
    rk: &[__m256i; 15],
    fold: __m256i,
    lanes: &[[&[u8]; 2]; L],
    last: &[__m256i; L],
    n: usize,
) -> [__m256i; L] {
    let mut s = *last;
    if n > 1 {
        for l in 0..L {
            // SAFETY: n > 1 blocks: block 0 is full.
            s[l] = _mm256_xor_si256(unsafe { load_pair(&lanes[l], 0) }, rk[0]);
        }
        for b in 1..n - 1 {
            rounds_ymm::<L, NR>(&mut s, rk);
            for l in 0..L {
                // SAFETY: block b < n - 1 is full in every message.
                let next = _mm256_xor_si256(unsafe { load_pair(&lanes[l], BLOCK * b) }, fold);
                s[l] = _mm256_aesenclast_epi128(s[l], next);
            }
        }
        rounds_ymm::<L, NR>(&mut s, rk);
        for l in 0..L {
            s[l] = _mm256_aesenclast_epi128(s[l], last[l]);
        }
    }
    rounds_ymm::<L, NR>(&mut s, rk);
    for l in 0..L {
        s[l] = _mm256_aesenclast_epi128(s[l], rk[NR]);
    }
    s
}

/// Messages `start..end` in chunks of `L`; in a last, partial chunk the lanes
/// past `end` repeat message `end - 1`, whose tag then goes out more than once.
/// Stops with `Err(base)` before a chunk that holds another block count.
///
/// # Safety
/// The CPU has AES-NI and SSE4.1.
#[target_feature(enable = "aes,sse4.1")]
unsafe fn xmm_run<'m, const L: usize, const NR: usize>(
    k: &CmacKeys,
    n: usize,
    start: usize,
    end: usize,
    msg: &impl Fn(usize) -> &'m [u8],
    out: &mut impl FnMut(usize, [u8; 16]),
) -> Result<(), usize> {
    let tails = &k.tail_keys[usize::from(n > 1)];
    let mut base = start;
    while base < end {
        let mut lanes = [&[][..]; L];
        for l in 0..L {
            lanes[l] = msg((base + l).min(end - 1));
        }
        let len = lanes[0].len();
        let mut last = [_mm_setzero_si128(); L];
        if len >= BLOCK && lanes.iter().all(|m| m.len() == len) {
            if cmac_blocks(len) != n {
                return Err(base);
            }
            let r = len - BLOCK * (n - 1);
            let shift = load16(&SHIFT_DOWN[r]);
            for l in 0..L {
                // SAFETY: len >= 16.
                let mut block = unsafe { load_at(lanes[l], len - BLOCK) };
                if r < BLOCK {
                    block = _mm_shuffle_epi8(block, shift);
                }
                last[l] = _mm_xor_si128(block, tails[r]);
            }
        } else {
            if !lanes.iter().all(|m| cmac_blocks(m.len()) == n) {
                return Err(base);
            }
            for l in 0..L {
                last[l] = last_block(tails, lanes[l], n);
            }
        }
        // SAFETY: every lane has n blocks (checked above).
        let tags = unsafe { xmm_chunk::<L, NR>(k, &lanes, &last, n) };
        let mut bytes = [0u8; 16];
        for l in 0..L {
            store16(&mut bytes, tags[l]);
            out((base + l).min(end - 1), bytes);
        }
        base += L;
    }
    Ok(())
}

/// AES rounds 1 to `NR - 1` on every xmm state.
#[inline]
#[target_feature(enable = "aes,sse4.1")]
fn rounds_xmm<const L: usize, const NR: usize>(s: &mut [__m128i; L], rk: &[__m128i; 15]) {
    for key in &rk[1..NR] {
        for x in s.iter_mut() {
            *x = _mm_aesenc_si128(*x, *key);
        }
    }
}

/// CMAC of `L` messages of `n` blocks, one per xmm register, given their
/// prepared last blocks.
///
/// # Safety
/// The CPU has AES-NI and SSE4.1; every message has `n` blocks.
#[inline]
#[target_feature(enable = "aes,sse4.1")]
unsafe fn xmm_chunk<const L: usize, const NR: usize>(
    k: &CmacKeys,
    lanes: &[&[u8]; L],
    last: &[__m128i; L],
    n: usize,
) -> [__m128i; L] {
    let rk = &k.rk;
    let mut s = *last;
    if n > 1 {
        for l in 0..L {
            // SAFETY: n > 1 blocks: block 0 is full.
            s[l] = _mm_xor_si128(unsafe { load_at(lanes[l], 0) }, rk[0]);
        }
        for b in 1..n - 1 {
            rounds_xmm::<L, NR>(&mut s, rk);
            for l in 0..L {
                // SAFETY: block b < n - 1 is full in every message.
                let next = _mm_xor_si128(unsafe { load_at(lanes[l], BLOCK * b) }, k.fold);
                s[l] = _mm_aesenclast_si128(s[l], next);
            }
        }
        rounds_xmm::<L, NR>(&mut s, rk);
        for l in 0..L {
            s[l] = _mm_aesenclast_si128(s[l], last[l]);
        }
    }
    rounds_xmm::<L, NR>(&mut s, rk);
    for l in 0..L {
        s[l] = _mm_aesenclast_si128(s[l], rk[NR]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::cmac_x86::tests::{
        EXAMPLE_KEYS, EXAMPLE_MESSAGE, EXAMPLE_TAGS, SplitMix, aesni_kernel, lengths, reference,
    };
    use super::super::cmac_x86::{CmacX86, cmac_blocks};

    /// The kernel with VAES, or `None` (with a note) on a CPU without it.
    fn vaes_kernel(key: &[u8]) -> Option<CmacX86> {
        let kernel = aesni_kernel(key, true)?;
        if kernel.uses_vaes() {
            Some(kernel)
        } else {
            eprintln!("skipped: this CPU has no VAES");
            None
        }
    }

    /// A random length with `n` CMAC blocks.
    fn length_with_blocks(rng: &mut SplitMix, n: usize) -> usize {
        let (lo, hi) = if n == 1 {
            (0, 16)
        } else {
            (16 * (n - 1) + 1, 16 * n)
        };
        lo + (rng.next_u64() as usize) % (hi - lo + 1)
    }

    /// Every group size up to two chunks and a half, with messages of every
    /// length (the others in the group share its block count but vary in
    /// length), against RustCrypto.
    fn check_groups(kernel: &CmacX86, key: &[u8], rng: &mut SplitMix) {
        let width = kernel.lane_width();
        for len in lengths() {
            let n = cmac_blocks(len);
            let sizes: Vec<usize> = if len % 16 == 0 || len < 70 {
                (1..=2 * width + width / 2 + 1).collect()
            } else {
                vec![1, 2, 3, width - 1, width, width + 1, 2 * width + 3]
            };
            for count in sizes {
                let owned: Vec<Vec<u8>> = (0..count)
                    .map(|i| {
                        let l = if i == 0 {
                            len
                        } else {
                            length_with_blocks(rng, n)
                        };
                        rng.bytes(l)
                    })
                    .collect();
                let mut out = vec![None; count];
                let done = kernel.tag_group(
                    count,
                    |i| &owned[i],
                    |i, tag| {
                        // A padded lane repeats the last message: same tag again.
                        assert!(
                            out[i].replace(tag).is_none_or(|t| t == tag),
                            "tag {i} changed"
                        );
                    },
                );
                assert_eq!(done, Ok(()));
                for (msg, tag) in owned.iter().zip(&out) {
                    assert_eq!(
                        *tag,
                        Some(reference(key, msg)),
                        "len {} of {count}",
                        msg.len()
                    );
                }
            }
        }
    }

    fn check_examples(vaes: bool) {
        let msg = hex::decode(EXAMPLE_MESSAGE).expect("hex");
        for (key, tags) in EXAMPLE_KEYS.iter().zip(EXAMPLE_TAGS) {
            let key = hex::decode(key).expect("hex");
            let kernel = if vaes {
                vaes_kernel(&key)
            } else {
                aesni_kernel(&key, false)
            };
            let Some(kernel) = kernel else { return };
            for (len, tag) in tags {
                let count = kernel.lane_width() + 3;
                let mut out = vec![[0u8; 16]; count];
                let done = kernel.tag_group(count, |_| &msg[..len], |i, t| out[i] = t);
                assert_eq!(done, Ok(()));
                for got in &out {
                    assert_eq!(hex::encode(got), tag, "{len} bytes");
                }
            }
        }
    }

    // RFC 4493 section 4 and SP 800-38B appendix D.3, in every lane.
    #[test]
    fn cmac_rfc4493_examples_xmm_lanes() {
        check_examples(false);
    }

    #[test]
    fn cmac_rfc4493_examples_vaes_lanes() {
        check_examples(true);
    }

    #[test]
    fn xmm_lanes_match_reference() {
        let mut rng = SplitMix(2);
        for key_len in [16, 32] {
            let key = rng.bytes(key_len);
            let Some(kernel) = aesni_kernel(&key, false) else {
                return;
            };
            assert_eq!(kernel.lane_width(), super::XMM_LANES);
            check_groups(&kernel, &key, &mut rng);
        }
    }

    #[test]
    fn vaes_lanes_match_reference() {
        let mut rng = SplitMix(3);
        for key_len in [16, 32] {
            let key = rng.bytes(key_len);
            let Some(kernel) = vaes_kernel(&key) else {
                return;
            };
            assert_eq!(kernel.lane_width(), super::YMM_LANES);
            check_groups(&kernel, &key, &mut rng);
        }
    }
}
