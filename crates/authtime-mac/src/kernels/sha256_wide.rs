//! HMAC-SHA256 and HMAC-SHA224 batches on AVX-512, 16 packets per call, for
//! CPUs that have AVX-512 but not the SHA extensions (the kernel is
//! [`super::sha256_x16`]). The safe entry points; each takes an [`Avx512`],
//! the run-time proof that the CPU has the kernel's features.
//!
//! Measured on Zen 5 (EPYC, family 0x1a) with `AUTHTIME_ISA=no-sha
//! authtime-lab bench mac --alg hmac-sha256`, medians of 5 runs on 2026-11-27:
//! 111 cycles per 48-byte packet in batches of 64 (5.8x OpenSSL's EVP in the
//! same run), 162 at 68 bytes, 261 at 228, 910 at 1024: about 48 cycles per
//! block per packet, where the SHA-NI lanes of [`super::sha_x86`] take 74 on
//! this CPU. A compression is about 1,700 vector operations for 16 packets
//! and runs at about 2.2 of them per cycle. Which path runs is decided by the
//! CPU's features alone (SHA-NI first); where both exist, choosing these
//! lanes instead wants measuring on each CPU family first (Intel Sapphire
//! Rapids, the lab's other host, is not measured yet).

use core::fmt;

use zeroize::{Zeroize, ZeroizeOnDrop};

use super::sha_x86::{Sha2Variant, class, key_block, xor_pad};
use crate::{Isa, MacInput, Tag};

/// Messages per kernel call.
const LANES: usize = 16;

/// Inputs sorted by class at a time, on the stack.
const CHUNK: usize = 128;

/// Fewest messages of one class sent to the kernel; a lone one takes the
/// caller's one-packet path (16 lanes for one message cost more than it).
const MIN_LANES: usize = 2;

/// Messages from this length on take the one-packet path: the kernel's bit
/// length of ipad block and message is one 32-bit word.
const LONGEST: usize = (1 << 29) - 64;

/// Proof that the CPU has `avx512f` and `avx512bw`.
#[derive(Clone, Copy)]
pub(crate) struct Avx512(Proof);

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Proof;

// Off x86-64 the proof cannot exist, so code that holds one is unreachable.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy)]
enum Proof {}

impl Avx512 {
    /// `Some` when `isa` allows AVX-512 and the CPU really has it.
    pub(crate) fn new(isa: Isa) -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if isa.avx512 && has!("avx512f") && has!("avx512bw") {
                return Some(Self(Proof));
            }
        }
        let _ = isa;
        None
    }
}

impl fmt::Debug for Avx512 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Avx512")
    }
}

/// Initial hash values, A..H (FIPS 180-4 sections 5.3.3 and 5.3.2).
const IV256: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];
const IV224: [u32; 8] = [
    0xc1059ed8, 0x367cd507, 0x3070dd17, 0xf70e5939, 0xffc00b31, 0x68581511, 0x64f98fa7, 0xbefa4fa4,
];

/// HMAC-SHA256 or HMAC-SHA224 with the padded-key states precomputed (A..H).
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub(crate) struct HmacSha256X16 {
    #[zeroize(skip)]
    avx: Avx512,
    #[zeroize(skip)]
    variant: Sha2Variant,
    /// State after compress(IV, key ⊕ ipad).
    inner: [u32; 8],
    /// State after compress(IV, key ⊕ opad).
    outer: [u32; 8],
}

impl HmacSha256X16 {
    /// Sets up the key: two compressions, done once.
    pub(crate) fn new(avx: Avx512, variant: Sha2Variant, key: &[u8]) -> Self {
        use sha2::Digest as _;
        let mut block = key_block(key, |k, block| match variant {
            Sha2Variant::Sha224 => block[..28].copy_from_slice(&sha2::Sha224::digest(k)),
            Sha2Variant::Sha256 => block[..32].copy_from_slice(&sha2::Sha256::digest(k)),
        });
        let iv = match variant {
            Sha2Variant::Sha224 => IV224,
            Sha2Variant::Sha256 => IV256,
        };
        let mut pads = [xor_pad(&block, 0x36), xor_pad(&block, 0x5c)];
        let [mut inner, mut outer] = [iv; 2];
        sha2::block_api::compress256(&mut inner, &pads[..1]);
        sha2::block_api::compress256(&mut outer, &pads[1..]);
        block.zeroize();
        pads.zeroize();
        Self {
            avx,
            variant,
            inner,
            outer,
        }
    }

    /// `tags[i]` = the first `tag_len` bytes of the HMAC of `inputs[i]`; the
    /// slices have one length and the nonces were checked. A message alone in
    /// its class goes to `one`.
    pub(crate) fn mac_many(
        &self,
        inputs: &[MacInput<'_>],
        tags: &mut [Tag],
        tag_len: usize,
        mut one: impl FnMut(&[u8]) -> Tag,
    ) {
        // One packet size (a server's batch): 16 at a time in input order.
        let first = inputs.first().map(|input| class(0, input.message.len()));
        if inputs
            .iter()
            .all(|input| Some(class(0, input.message.len())) == first)
        {
            for (inputs, tags) in inputs.chunks(LANES).zip(tags.chunks_mut(LANES)) {
                let digests = self.lanes(inputs.len(), |l| inputs[l].message, &mut one);
                for (tag, digest) in tags.iter_mut().zip(digests) {
                    *tag = Tag::from_digest(digest, tag_len);
                }
            }
            return;
        }
        for_each_group(inputs, |idx| {
            let digests = self.lanes(idx.len(), |l| inputs[idx[l]].message, &mut one);
            for (&i, digest) in idx.iter().zip(digests) {
                tags[i] = Tag::from_digest(digest, tag_len);
            }
        });
    }

    /// The digests of the `n` messages `msg(0)..msg(n - 1)` of one class, 1 to
    /// [`LANES`] of them, truncated to the tag length where `one` computed
    /// them; idle lanes repeat the first message and their digests are dropped
    /// by the caller.
    fn lanes<'a>(
        &self,
        n: usize,
        msg: impl Fn(usize) -> &'a [u8],
        one: &mut impl FnMut(&[u8]) -> Tag,
    ) -> [[u8; 32]; LANES] {
        // The kernel's bit lengths are 32-bit: messages of 2^29 - 64 bytes or
        // more (none in NTP) take the one-packet path.
        if n < MIN_LANES || (0..n).any(|l| msg(l).len() >= LONGEST) {
            let mut digests = [[0u8; 32]; LANES];
            for (l, digest) in digests.iter_mut().enumerate().take(n) {
                let tag = one(msg(l));
                digest[..tag.len()].copy_from_slice(tag.as_bytes());
            }
            return digests;
        }
        let msgs: [&[u8]; LANES] = core::array::from_fn(|l| msg(if l < n { l } else { 0 }));
        self.avx.hmac_sha256(self, &msgs)
    }
}

impl fmt::Debug for HmacSha256X16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacSha256X16")
            .field("variant", &self.variant)
            .finish_non_exhaustive()
    }
}

/// Calls `run` with the indices of `inputs`, in groups of 1 to [`LANES`] inputs
/// of one [`class`]. Sorts [`CHUNK`] inputs at a time on the stack, unless they
/// are all of one class (one packet size), the common case.
fn for_each_group(inputs: &[MacInput<'_>], mut run: impl FnMut(&[usize])) {
    let mut order = [(0u64, 0u8); CHUNK];
    for (chunk_no, chunk) in inputs.chunks(CHUNK).enumerate() {
        let base = chunk_no * CHUNK;
        let order = &mut order[..chunk.len()];
        for (j, (slot, input)) in order.iter_mut().zip(chunk).enumerate() {
            *slot = (class(0, input.message.len()), j as u8);
        }
        if order.iter().any(|&(c, _)| c != order[0].0) {
            order.sort_unstable();
        }
        for run_of_class in order.chunk_by(|a, b| a.0 == b.0) {
            for lanes in run_of_class.chunks(LANES) {
                let mut idx = [0usize; LANES];
                for (slot, &(_, j)) in idx.iter_mut().zip(lanes) {
                    *slot = base + usize::from(j);
                }
                run(&idx[..lanes.len()]);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Avx512 {
    fn hmac_sha256(self, key: &HmacSha256X16, msgs: &[&[u8]; LANES]) -> [[u8; 32]; LANES] {
        let sha224 = key.variant == Sha2Variant::Sha224;
        // SAFETY: an `Avx512` exists only when the CPU has the features the
        // kernel is compiled for (`Avx512::new`).
        unsafe { super::sha256_x16::hmac_lanes(&key.inner, &key.outer, sha224, msgs) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl Avx512 {
    fn hmac_sha256(self, _: &HmacSha256X16, _: &[&[u8]; LANES]) -> [[u8; 32]; LANES] {
        match self.0 {}
    }
}
