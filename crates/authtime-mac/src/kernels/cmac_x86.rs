//! AES-CMAC (RFC 4493, NIST SP 800-38B) with AES-NI: key expansion, subkeys,
//! the one-packet path, and the entry to the multi-lane batch kernels of
//! [`super::cmac_lanes`].
//!
//! Written by hand because no maintained crate runs many short CMACs side by
//! side: RustCrypto's `cmac` chains one message at a time through a generic
//! block-cipher interface (about 500 cycles for a 48-byte NTP packet here),
//! where the serial AES chain alone is 120.
//!
//! Two tricks keep the XORs off the serial chain. The first round key is
//! folded into every input block (`m ^ rk[0]`), and the last round of block
//! `i` uses the key `rk[nr] ^ rk[0] ^ m[i+1]`, so that `AESENCLAST` itself
//! produces the next block's state: each block costs exactly `nr` AES latencies.
//! The subkey K1 or K2 is folded into the last block the same way.
//!
//! Not here: the portable path (RustCrypto `cmac`, in `crate::cmac_aes`) and the
//! choice between the two, which `crate::cmac_aes::AesCmac` makes once per key.

#![cfg(target_arch = "x86_64")]

use core::arch::x86_64::{
    __m128i, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_aeskeygenassist_si128, _mm_loadu_si128,
    _mm_set_epi64x, _mm_setzero_si128, _mm_shuffle_epi8, _mm_shuffle_epi32, _mm_slli_si128,
    _mm_storeu_si128, _mm_xor_si128,
};
use core::fmt;

use zeroize::{Zeroize, ZeroizeOnDrop};

use super::cmac_lanes;
use crate::Isa;

/// AES block length in bytes.
pub(crate) const BLOCK: usize = 16;

/// Number of CMAC blocks of a message of `len` bytes; the empty message has one
/// (RFC 4493 section 2.4, step 3).
#[must_use]
pub(crate) const fn cmac_blocks(len: usize) -> usize {
    if len == 0 { 1 } else { len.div_ceil(BLOCK) }
}

/// Expanded AES key and CMAC subkeys, with the combinations the kernels fold
/// into their inputs. Zeroized on drop; `Debug` shows only the round count.
#[derive(Zeroize, ZeroizeOnDrop)]
pub(crate) struct CmacKeys {
    /// Round keys `rk[0..=nr]`; the rest are zero.
    pub(super) rk: [__m128i; 15],
    /// `rk[0] ^ rk[nr]`: XORed into a full middle block before it becomes a last-round key.
    pub(super) fold: __m128i,
    /// What the last block is XORed with when `r` of its bytes are message
    /// bytes: `tail_keys[f][r] = pad(r) ^ (K1 if r == 16 else K2) ^ c`, with
    /// `c = rk[0]` for `f = 0` (a one-block message: the last block is also
    /// the first) and `c = rk[0] ^ rk[nr]` for `f = 1` (see [`last_block`]).
    pub(super) tail_keys: [[__m128i; 17]; 2],
    /// 10 for AES-128, 14 for AES-256.
    #[zeroize(skip)]
    pub(super) nr: usize,
}

impl fmt::Debug for CmacKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CmacKeys")
            .field("rounds", &self.nr)
            .finish_non_exhaustive()
    }
}

/// AES-CMAC on x86-64 with AES-NI, and with VAES for batches when present.
///
/// A value exists only when the CPU has the features its kernels use (checked in
/// [`CmacX86::new`]), which is what makes its safe methods sound.
#[derive(Debug)]
pub(crate) struct CmacX86 {
    keys: CmacKeys,
    /// Batches run on ymm registers with VAES (checked present).
    vaes: bool,
}

impl CmacX86 {
    /// Expands `key` (16 or 32 bytes). `None` when `isa` or the CPU lacks AES-NI,
    /// or for another key length. VAES is used for batches when `isa` allows it
    /// and the CPU has it.
    #[must_use]
    pub(crate) fn new(key: &[u8], isa: Isa) -> Option<Self> {
        use std::arch::is_x86_feature_detected as has;
        // `Isa` is a plain public struct: check the CPU too, so that a caller
        // cannot make us run an instruction the CPU lacks.
        if !(isa.aesni && has!("aes") && has!("sse4.1")) {
            return None;
        }
        let vaes = isa.vaes && has!("vaes") && has!("avx2");
        // SAFETY: AES-NI and SSE4.1 were detected just above.
        let keys = unsafe { expand(key) }?;
        Some(Self { keys, vaes })
    }

    /// Messages per chunk of the batch kernel: groups of this size (or a
    /// multiple) run at full speed.
    #[must_use]
    pub(crate) fn lane_width(&self) -> usize {
        if self.vaes {
            cmac_lanes::YMM_LANES
        } else {
            cmac_lanes::XMM_LANES
        }
    }

    /// Whether batches run on the VAES kernel.
    #[must_use]
    pub(crate) fn uses_vaes(&self) -> bool {
        self.vaes
    }

    /// The tag of one message.
    #[must_use]
    pub(crate) fn tag(&self, msg: &[u8]) -> [u8; 16] {
        // SAFETY: `new` checked AES-NI and SSE4.1.
        unsafe {
            if self.keys.nr == 10 {
                tag_one::<10>(&self.keys, msg)
            } else {
                tag_one::<14>(&self.keys, msg)
            }
        }
    }

    /// The tags of `count` messages that have the block count of the first,
    /// computed side by side: `out(i, tag)` for message `msg(i)`. `out` may
    /// be called more than once for an index, with the same tag.
    ///
    /// # Errors
    /// `Err(i)` when the chunk of lanes that starts at message `i` holds a
    /// message of another block count: messages `i..` are left alone (those
    /// before have their tags). The kernels read whole blocks on the promise
    /// of one block count, so they check it.
    pub(crate) fn tag_group<'m>(
        &self,
        count: usize,
        msg: impl Fn(usize) -> &'m [u8],
        mut out: impl FnMut(usize, [u8; 16]),
    ) -> Result<(), usize> {
        if count == 0 {
            return Ok(());
        }
        let n = cmac_blocks(msg(0).len());
        // SAFETY: `new` checked AES-NI and SSE4.1, and VAES with AVX2 when
        // `self.vaes`; the kernels check every message's block count before
        // reading it.
        unsafe {
            if self.vaes {
                cmac_lanes::run_ymm(&self.keys, n, count, &msg, &mut out)
            } else {
                cmac_lanes::run_xmm(&self.keys, n, count, &msg, &mut out)
            }
        }
    }
}

/// Loads the 16 bytes of `msg` at `off`.
///
/// # Safety
/// `off + 16 <= msg.len()`.
#[inline(always)]
pub(super) unsafe fn load_at(msg: &[u8], off: usize) -> __m128i {
    debug_assert!(off + BLOCK <= msg.len());
    // SAFETY: the caller guarantees 16 readable bytes at `off`; `loadu` takes
    // any alignment.
    unsafe { _mm_loadu_si128(msg.as_ptr().add(off).cast()) }
}

/// Loads a 16-byte array.
#[inline(always)]
pub(super) fn load16(bytes: &[u8; 16]) -> __m128i {
    // SAFETY: 16 readable bytes; `loadu` takes any alignment.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

/// Stores a block into a 16-byte array.
#[inline(always)]
pub(super) fn store16(out: &mut [u8; 16], v: __m128i) {
    // SAFETY: 16 writable bytes; `storeu` takes any alignment.
    unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) }
}

/// `PSHUFB` masks that move the last `r` bytes of a 16-byte load to the front
/// and zero the rest: `SHIFT_DOWN[r][j] = 16 - r + j` for `j < r`
/// (`SHIFT_DOWN[16]` is the identity).
pub(super) static SHIFT_DOWN: [[u8; 16]; 17] = {
    let mut t = [[0x80u8; 16]; 17];
    let mut r = 0;
    while r <= 16 {
        let mut j = 0;
        while j < r {
            t[r][j] = (16 - r + j) as u8;
            j += 1;
        }
        r += 1;
    }
    t
};

/// The last block of a message of fewer than 16 bytes, zero-filled, as an
/// integer in little-endian byte order; read with overlapping loads instead
/// of a copy.
#[inline]
pub(super) fn short_block(msg: &[u8]) -> u128 {
    let len = msg.len();
    let word = |at: usize, width: usize| {
        let mut b = [0u8; 8];
        b[..width].copy_from_slice(&msg[at..at + width]);
        u128::from(u64::from_le_bytes(b)) << (8 * at)
    };
    match len {
        8.. => word(0, 8) | word(len - 8, 8),
        4..8 => word(0, 4) | word(len - 4, 4),
        1..4 => word(0, 1) | word(len / 2, 1) | word(len - 1, 1),
        0 => 0,
    }
}

/// The last block of a message of `n` blocks, padded and XORed with its subkey
/// and with `rk[0]` (when `n == 1`: it is then also the first block) or with
/// `rk[0] ^ rk[nr]` (the key of the previous block's last round); `tails` is
/// the matching row of [`CmacKeys::tail_keys`].
///
/// `n` must be `cmac_blocks(msg.len())`.
#[inline]
#[target_feature(enable = "aes,sse4.1")]
pub(super) fn last_block(tails: &[__m128i; 17], msg: &[u8], n: usize) -> __m128i {
    let len = msg.len();
    if len >= BLOCK {
        // The 16 bytes that end the message hold the r = 1..=16 bytes of the
        // last block at the top; one shuffle moves them down.
        let r = len - BLOCK * (n - 1);
        // SAFETY: len >= 16.
        let end = unsafe { load_at(msg, len - BLOCK) };
        _mm_xor_si128(_mm_shuffle_epi8(end, load16(&SHIFT_DOWN[r])), tails[r])
    } else {
        let v = short_block(msg);
        _mm_xor_si128(_mm_set_epi64x((v >> 64) as i64, v as i64), tails[len])
    }
}

/// AES rounds 1 to `NR - 1` of one block.
#[inline]
#[target_feature(enable = "aes,sse4.1")]
fn middle_rounds<const NR: usize>(rk: &[__m128i; 15], mut s: __m128i) -> __m128i {
    for key in &rk[1..NR] {
        s = _mm_aesenc_si128(s, *key);
    }
    s
}

/// One-packet CMAC: the serial chain of `cmac_blocks(len)` AES encryptions,
/// with the loads and XORs off the chain (see the module docs).
///
/// # Safety
/// The CPU has AES-NI and SSE4.1.
#[target_feature(enable = "aes,sse4.1")]
pub(super) unsafe fn tag_one<const NR: usize>(k: &CmacKeys, msg: &[u8]) -> [u8; 16] {
    let rk = &k.rk;
    let n = cmac_blocks(msg.len());
    let last = last_block(&k.tail_keys[usize::from(n > 1)], msg, n);
    let mut s = last;
    if n > 1 {
        // SAFETY: a message of n > 1 blocks has more than 16 bytes.
        s = _mm_xor_si128(unsafe { load_at(msg, 0) }, rk[0]);
        for b in 1..n - 1 {
            // SAFETY: block b < n - 1 is a full block inside the message.
            let next = _mm_xor_si128(unsafe { load_at(msg, BLOCK * b) }, k.fold);
            s = _mm_aesenclast_si128(middle_rounds::<NR>(rk, s), next);
        }
        s = _mm_aesenclast_si128(middle_rounds::<NR>(rk, s), last);
    }
    s = _mm_aesenclast_si128(middle_rounds::<NR>(rk, s), rk[NR]);
    let mut tag = [0u8; 16];
    store16(&mut tag, s);
    tag
}

/// One AES-128 key-expansion step (FIPS 197 section 5.2) from the previous
/// round key and `AESKEYGENASSIST` of it.
#[inline]
#[target_feature(enable = "aes,sse4.1")]
fn expand_step<const WORD: i32>(prev: __m128i, assist: __m128i) -> __m128i {
    // Broadcast the word of `assist` that holds SubWord(RotWord(w)) ^ rcon
    // (0xff) or SubWord(w) (0xaa).
    let assist = _mm_shuffle_epi32::<WORD>(assist);
    let mut t = prev;
    t = _mm_xor_si128(t, _mm_slli_si128::<4>(t));
    t = _mm_xor_si128(t, _mm_slli_si128::<8>(t));
    _mm_xor_si128(t, assist)
}

/// AES round keys `rk[0..=nr]` of a 16- or 32-byte key (the rest zero) and
/// `nr`; `None` for another length.
///
/// # Safety
/// The CPU has AES-NI and SSE4.1.
#[target_feature(enable = "aes,sse4.1")]
pub(super) unsafe fn round_keys(key: &[u8]) -> Option<([__m128i; 15], usize)> {
    let mut rk = [_mm_setzero_si128(); 15];
    macro_rules! step128 {
        ($i:literal, $rcon:literal) => {
            rk[$i] =
                expand_step::<0xff>(rk[$i - 1], _mm_aeskeygenassist_si128::<$rcon>(rk[$i - 1]));
        };
    }
    // AES-256: even round keys from rk[i-2] with the rotated, substituted
    // word of rk[i-1]; odd ones with its substituted word only.
    macro_rules! step256 {
        (even $i:literal, $rcon:literal) => {
            rk[$i] =
                expand_step::<0xff>(rk[$i - 2], _mm_aeskeygenassist_si128::<$rcon>(rk[$i - 1]));
        };
        ($i:literal, $rcon:literal) => {
            step256!(even $i, $rcon);
            rk[$i + 1] = expand_step::<0xaa>(rk[$i - 1], _mm_aeskeygenassist_si128::<0>(rk[$i]));
        };
    }
    let nr = match key.len() {
        16 => {
            // SAFETY: 16 bytes.
            rk[0] = unsafe { load_at(key, 0) };
            step128!(1, 0x01);
            step128!(2, 0x02);
            step128!(3, 0x04);
            step128!(4, 0x08);
            step128!(5, 0x10);
            step128!(6, 0x20);
            step128!(7, 0x40);
            step128!(8, 0x80);
            step128!(9, 0x1b);
            step128!(10, 0x36);
            10
        }
        32 => {
            // SAFETY: 32 bytes.
            rk[0] = unsafe { load_at(key, 0) };
            // SAFETY: 32 bytes.
            rk[1] = unsafe { load_at(key, 16) };
            step256!(2, 0x01);
            step256!(4, 0x02);
            step256!(6, 0x04);
            step256!(8, 0x08);
            step256!(10, 0x10);
            step256!(12, 0x20);
            step256!(even 14, 0x40);
            14
        }
        _ => return None,
    };
    Some((rk, nr))
}

/// AES round keys of a 16- or 32-byte key, with the CMAC subkeys; `None` for
/// another length.
///
/// # Safety
/// The CPU has AES-NI and SSE4.1.
#[target_feature(enable = "aes,sse4.1")]
unsafe fn expand(key: &[u8]) -> Option<CmacKeys> {
    // SAFETY: the caller guarantees AES-NI and SSE4.1.
    let (rk, nr) = unsafe { round_keys(key) }?;

    // RFC 4493 section 2.3: L = AES(K, 0); K1 = L·x, K2 = L·x² in GF(2^128).
    let mut l = _mm_xor_si128(_mm_setzero_si128(), rk[0]);
    for key in &rk[1..nr] {
        l = _mm_aesenc_si128(l, *key);
    }
    l = _mm_aesenclast_si128(l, rk[nr]);
    let mut l_bytes = [0u8; 16];
    store16(&mut l_bytes, l);
    let double = |v: u128| (v << 1) ^ (0u128.wrapping_sub(v >> 127) & 0x87);
    let mut l_int = u128::from_be_bytes(l_bytes);
    let mut k1_int = double(l_int);
    let mut k2_int = double(k1_int);
    let mut k1_bytes = k1_int.to_be_bytes();
    let mut k2_bytes = k2_int.to_be_bytes();
    let (k1, k2) = (load16(&k1_bytes), load16(&k2_bytes));
    l_bytes.zeroize();
    l_int.zeroize();
    k1_int.zeroize();
    k2_int.zeroize();
    k1_bytes.zeroize();
    k2_bytes.zeroize();

    let fold = _mm_xor_si128(rk[0], rk[nr]);
    let mut tail_keys = [[_mm_setzero_si128(); 17]; 2];
    for (row, c) in tail_keys.iter_mut().zip([rk[0], fold]) {
        for (r, slot) in row.iter_mut().enumerate() {
            let mut pad = [0u8; 16];
            let subkey = if r == BLOCK {
                k1
            } else {
                pad[r] = 0x80;
                k2
            };
            *slot = _mm_xor_si128(_mm_xor_si128(load16(&pad), subkey), c);
        }
    }
    Some(CmacKeys {
        rk,
        fold,
        tail_keys,
        nr,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use aes::{Aes128, Aes256};
    use cmac::{Cmac, KeyInit, Mac as _};

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
    }

    /// The RustCrypto tag, the reference every kernel is checked against.
    pub(crate) fn reference(key: &[u8], msg: &[u8]) -> [u8; 16] {
        let tag = if key.len() == 16 {
            Cmac::<Aes128>::new_from_slice(key)
                .expect("key")
                .chain_update(msg)
                .finalize()
                .into_bytes()
        } else {
            Cmac::<Aes256>::new_from_slice(key)
                .expect("key")
                .chain_update(msg)
                .finalize()
                .into_bytes()
        };
        tag.into()
    }

    /// Lengths the tests cover: every one up to 200, and two long ones.
    pub(crate) fn lengths() -> impl Iterator<Item = usize> {
        (0..=200).chain([1500, 2000])
    }

    /// The AES-NI kernel, or `None` (with a note) on a CPU without it.
    pub(crate) fn aesni_kernel(key: &[u8], vaes: bool) -> Option<CmacX86> {
        let isa = Isa {
            vaes,
            ..Isa::detect()
        };
        let kernel = CmacX86::new(key, isa);
        if kernel.is_none() {
            eprintln!("skipped: this CPU has no AES-NI");
        }
        kernel
    }

    fn to_array(v: __m128i) -> [u8; 16] {
        let mut out = [0; 16];
        store16(&mut out, v);
        out
    }

    // RFC 4493 section 4, subkey generation for K = 2b7e1516...
    #[test]
    fn cmac_rfc4493_subkeys() {
        let key = hex::decode("2b7e151628aed2a6abf7158809cf4f3c").expect("hex");
        let Some(kernel) = aesni_kernel(&key, false) else {
            return;
        };
        let k = &kernel.keys;
        // SAFETY: SSE2 is part of x86-64.
        let unfold = |v| to_array(unsafe { _mm_xor_si128(v, k.rk[0]) });
        assert_eq!(
            hex::encode(unfold(k.tail_keys[0][16])),
            "fbeed618357133667c85e08f7236a8de"
        );
        // The pad byte of an empty last block sits on K2's first byte.
        let mut k2 = unfold(k.tail_keys[0][0]);
        k2[0] ^= 0x80;
        assert_eq!(hex::encode(k2), "f7ddac306ae266ccf90bc11ee46d513b");
        assert!(!format!("{kernel:?}").contains("fbee"));
        assert!(format!("{:?}", kernel.keys).starts_with("CmacKeys { rounds: 10"));
    }

    // FIPS 197 appendix A.1 and A.3: the last round key of the example keys.
    #[test]
    fn key_expansion_fips197() {
        let cases = [
            (
                "2b7e151628aed2a6abf7158809cf4f3c",
                10,
                "d014f9a8c9ee2589e13f0cc8b6630ca6",
            ),
            (
                "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
                14,
                "fe4890d1e6188d0b046df344706c631e",
            ),
        ];
        for (key, nr, last) in cases {
            let key = hex::decode(key).expect("hex");
            let Some(kernel) = aesni_kernel(&key, false) else {
                return;
            };
            assert_eq!(kernel.keys.nr, nr);
            assert_eq!(hex::encode(to_array(kernel.keys.rk[nr])), last);
        }
    }

    // RFC 4493 section 4 (AES-128) and NIST SP 800-38B appendix D.3 (AES-256),
    // examples 1 to 4: messages of 0, 16, 40 and 64 bytes.
    pub(crate) const EXAMPLE_KEYS: [&str; 2] = [
        "2b7e151628aed2a6abf7158809cf4f3c",
        "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
    ];
    pub(crate) const EXAMPLE_MESSAGE: &str = "6bc1bee22e409f96e93d7e117393172a\
        ae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52ef\
        f69f2445df4f9b17ad2b417be66c3710";
    pub(crate) const EXAMPLE_TAGS: [[(usize, &str); 4]; 2] = [
        [
            (0, "bb1d6929e95937287fa37d129b756746"),
            (16, "070a16b46b4d4144f79bdd9dd04a287c"),
            (40, "dfa66747de9ae63030ca32611497c827"),
            (64, "51f0bebf7e3b9d92fc49741779363cfe"),
        ],
        [
            (0, "028962f61b7bf89efc6b551f4667d983"),
            (16, "28a7023f452e8f82bd4bf28d8c37c35c"),
            (40, "aaf3d8f1de5640c232f5b169b9c911e6"),
            (64, "e1992190549f6ed5696a2c056c315410"),
        ],
    ];

    #[test]
    fn cmac_rfc4493_examples_one_packet() {
        let msg = hex::decode(EXAMPLE_MESSAGE).expect("hex");
        for (key, tags) in EXAMPLE_KEYS.iter().zip(EXAMPLE_TAGS) {
            let key = hex::decode(key).expect("hex");
            let Some(kernel) = aesni_kernel(&key, false) else {
                return;
            };
            for (len, tag) in tags {
                assert_eq!(hex::encode(kernel.tag(&msg[..len])), tag, "{len} bytes");
                assert_eq!(hex::encode(reference(&key, &msg[..len])), tag);
            }
        }
    }

    #[test]
    fn one_packet_matches_reference() {
        let mut rng = SplitMix(1);
        for key_len in [16, 32] {
            for _ in 0..4 {
                let key = rng.bytes(key_len);
                let Some(kernel) = aesni_kernel(&key, false) else {
                    return;
                };
                for len in lengths() {
                    let msg = rng.bytes(len);
                    assert_eq!(kernel.tag(&msg), reference(&key, &msg), "{key_len} {len}");
                }
            }
        }
    }

    #[test]
    fn rejects_other_key_lengths_and_the_portable_isa() {
        assert!(CmacX86::new(&[0; 24], Isa::detect()).is_none());
        assert!(CmacX86::new(&[0; 16], Isa::PORTABLE).is_none());
    }

    #[test]
    fn tag_group_stops_at_another_block_count() {
        for vaes in [false, true] {
            let Some(kernel) = aesni_kernel(&[7; 16], vaes) else {
                return;
            };
            let width = kernel.lane_width();
            // One full chunk of 48-byte messages, then a chunk with a 49.
            let mut msgs = vec![vec![1u8; 48]; 2 * width];
            msgs[width + 1] = vec![1; 49];
            let mut done = vec![false; msgs.len()];
            let got = kernel.tag_group(
                msgs.len(),
                |i| &msgs[i],
                |i, tag| {
                    assert_eq!(tag, reference(&[7; 16], &msgs[i]));
                    done[i] = true;
                },
            );
            assert_eq!(got, Err(width));
            assert!(done[..width].iter().all(|&d| d) && !done[width..].iter().any(|&d| d));
        }
    }
}
