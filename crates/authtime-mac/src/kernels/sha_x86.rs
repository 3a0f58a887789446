//! HMAC-SHA256, HMAC-SHA224, HMAC-SHA1 and SHA-1(key ‖ message) with the x86
//! SHA extensions, one packet at a time and many packets side by side.
//!
//! Written by hand because no maintained crate does what short NTP packets need:
//! RustCrypto's `hmac` clones a buffered `Digest` per message (about 430 cycles
//! for a 48-byte packet, mac-perf-anchors.md section 8) and runs one message at a
//! time, so a packet's two compressions sit on one chain of dependent
//! `SHA256RNDS2`. Here the padded-key states are computed once, the per-packet
//! work is the compressions plus padding built in registers
//! ([`super::sha_pad_x86`]), and a batch runs up to [`LANES`] (SHA-1) or
//! [`SHA256_LANES`] (SHA-2) packets of one block count through one interleaved
//! compression ([`super::sha256_x86`], [`super::sha1_x86`]).
//!
//! What bounds the batch path on Zen 4 (measured with the `probe_*` tests of the
//! kernels, 2.87 GHz core clock): a SHA-256 block costs 129 cycles in one lane
//! (32 dependent `SHA256RNDS2` of latency 4) and 68 cycles per lane with 2 to 8
//! lanes, not the 32 that the round instruction alone allows. Rounds alone (with
//! their `PSHUFD`) run at 43 cycles per block and the message schedule alone
//! (`SHA256MSG1`, `SHA256MSG2` at one per 2 cycles, `PALIGNR`) at 49; together
//! they share the vector pipes. A 48-byte HMAC is two blocks, so about 136 cycles
//! per packet is the floor of this instruction mix. SHA-1 costs 121 cycles per
//! block in one lane and 52 per lane with 4.
//!
//! On Zen 5 (EPYC, family 0x1a, 4.3 GHz; `probe_sha256_block_cost` on
//! 2026-11-27) the round instruction itself is the bound: `SHA256RNDS2` issues
//! once per 2 cycles or a little more (a loop of rounds alone runs at 67-74
//! cycles per block per lane with 8 lanes, the message schedule alone at 30),
//! and a block costs 130 cycles in one lane, 79 per lane with 4 and 74 with 8.
//! A 48-byte HMAC's two blocks therefore cost at least about 128-148 cycles
//! here; the batch path measures 175 (`authtime-lab bench mac --size 48`), 3.7x
//! OpenSSL's EVP. The AVX-512 lanes of [`super::sha256_wide`] do the same work
//! in 111 cycles on this CPU, but are chosen only where SHA-NI is absent.
//!
//! This file holds what both hashes share (the run-time proof that the CPU has the
//! extensions, framing, grouping a batch by block count) and the safe entry
//! points. It never runs on a CPU without SHA-NI: every entry point takes a
//! [`ShaNi`], and the only way to get one is [`ShaNi::new`].

use core::fmt;

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::{Isa, MacInput, Tag};

/// Packets compressed side by side in a batch of HMAC-SHA1 or SHA-1.
/// `SHA256RNDS2` has a latency of 4 cycles and a throughput of 1 per cycle on
/// Zen 4, `SHA1RNDS4` 6 and 1/2, so 4 independent chains keep either unit busy
/// (mac-perf-anchors.md section 5); in practice 2 lanes already reach the
/// shared-pipe bound above, and 4 hide the start and end of each compression.
pub(crate) const LANES: usize = 4;

/// Packets compressed side by side in a batch of HMAC-SHA224/256. On Zen 5
/// (`authtime-lab bench mac`, 2026-11-27) 8 lanes beat 4 by 7-10 % from 68
/// bytes up and tie at 48, while SHA-1 loses 10 % with 8; on Zen 5
/// `SHA256RNDS2` issues once per 2 cycles, so a block costs 74 cycles per lane
/// with 8 lanes (`probe_sha256_block_cost`).
const SHA256_LANES: usize = 8;

/// Inputs sorted by block count at a time, so the batch path never allocates.
const CHUNK: usize = 128;

/// Proof that the CPU has `sha`, `sse2`, `ssse3` and `sse4.1`.
#[derive(Clone, Copy)]
pub(crate) struct ShaNi(Proof);

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Proof;

// Off x86-64 the proof cannot exist, so code that holds one is unreachable.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy)]
enum Proof {}

impl ShaNi {
    /// `Some` when `isa` allows the SHA extensions and the CPU really has them
    /// (`Isa`'s fields are public, so the flag alone proves nothing).
    pub(crate) fn new(isa: Isa) -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if isa.sha && has!("sha") && has!("sse2") && has!("ssse3") && has!("sse4.1") {
                return Some(Self(Proof));
            }
        }
        let _ = isa;
        None
    }
}

impl fmt::Debug for ShaNi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ShaNi")
    }
}

/// The first block of `prefix ‖ msg` (`prefix` shorter than a block), zero-filled
/// when the input is shorter.
pub(crate) fn head_block(prefix: &[u8], msg: &[u8]) -> [u8; 64] {
    let mut block = [0u8; 64];
    let take = msg.len().min(64 - prefix.len());
    block[..prefix.len()].copy_from_slice(prefix);
    block[prefix.len()..prefix.len() + take].copy_from_slice(&msg[..take]);
    block
}

/// The 16 bytes that end `prefix ‖ msg`, zeros in front when it is shorter: in
/// place when `msg` has them, else assembled in `buf`.
pub(crate) fn end16<'a>(prefix: &[u8], msg: &'a [u8], buf: &'a mut [u8; 16]) -> &'a [u8; 16] {
    if let Some(end) = msg.last_chunk::<16>() {
        return end;
    }
    let from_prefix = (16 - msg.len()).min(prefix.len());
    buf[16 - msg.len()..].copy_from_slice(msg);
    buf[16 - msg.len() - from_prefix..16 - msg.len()]
        .copy_from_slice(&prefix[prefix.len() - from_prefix..]);
    buf
}

/// A number equal for two inputs `prefix ‖ message` exactly when they are cut
/// alike into a first block joined from prefix and message (when the prefix is
/// not empty), the message's full blocks, and one or two padded tail blocks, so
/// that they can share the lanes of one compression.
pub(crate) fn class(prefix_len: usize, message_len: usize) -> u64 {
    let (head, rest) = if prefix_len + message_len < 64 {
        (0, prefix_len + message_len)
    } else if prefix_len == 0 {
        (0, message_len)
    } else {
        (1, message_len - (64 - prefix_len))
    };
    let (body, tail) = (rest / 64, u64::from(rest % 64 >= 56));
    (((body as u64) << 1 | tail) << 1) | head
}

/// Calls `run` with the indices of `inputs`, in groups of 1 to `lanes` (at most
/// [`SHA256_LANES`]) inputs of one [`class`]. Sorts [`CHUNK`] inputs at a time on the stack, unless they are
/// all of one class (one packet size), the common case.
fn for_each_group(
    inputs: &[MacInput<'_>],
    prefix_len: usize,
    lanes: usize,
    mut run: impl FnMut(&[usize]),
) {
    let mut order = [(0u64, 0u8); CHUNK];
    for (chunk_no, chunk) in inputs.chunks(CHUNK).enumerate() {
        let base = chunk_no * CHUNK;
        let order = &mut order[..chunk.len()];
        for (j, (slot, input)) in order.iter_mut().zip(chunk).enumerate() {
            *slot = (class(prefix_len, input.message.len()), j as u8);
        }
        if order.iter().any(|&(c, _)| c != order[0].0) {
            order.sort_unstable();
        }
        let mut rest = &order[..];
        while let Some(&(class, _)) = rest.first() {
            let same = rest.iter().take_while(|(c, _)| *c == class).count();
            let (group, next) = rest.split_at(same);
            let mut left = group;
            while !left.is_empty() {
                // lanes + 1 = (lanes - 1) + 2 keeps every lane group at two or more.
                let take = if left.len() == lanes + 1 {
                    lanes - 1
                } else {
                    left.len().min(lanes)
                };
                let (lanes, after) = left.split_at(take);
                let mut idx = [0usize; SHA256_LANES];
                for (slot, &(_, j)) in idx.iter_mut().zip(lanes) {
                    *slot = base + usize::from(j);
                }
                run(&idx[..take]);
                left = after;
            }
            rest = next;
        }
    }
}

/// The first `len` bytes of `digest` as a tag, with a copy of fixed length for
/// the lengths in use (a variable one is a call to `memcpy`). The one-packet
/// paths.
pub(crate) fn tag_of(digest: &[u8], len: usize) -> Tag {
    match len {
        16 => Tag::from_slice(&digest[..16]),
        20 => Tag::from_slice(&digest[..20]),
        28 => Tag::from_slice(&digest[..28]),
        32 => Tag::from_slice(&digest[..32]),
        _ => Tag::from_slice(&digest[..len]),
    }
}

/// The first `len` bytes of an `N`-byte digest as a tag, built in registers
/// ([`Tag::from_digest`]): in a batch, the match of [`tag_of`] compiles to a
/// call to `memcpy` and a store-forwarding stall per packet. The batch paths.
pub(crate) fn lane_tag<const N: usize>(digest: &[u8; N], len: usize) -> Tag {
    let mut full = [0u8; crate::tag::MAX_TAG_LEN];
    full[..N].copy_from_slice(digest);
    Tag::from_digest(full, len)
}

/// Runs `$call` (lanes of `$msgs`) on the messages of `idx` and stores the first
/// `tag_len` bytes of each digest into `tags`.
macro_rules! dispatch_lanes {
    ($idx:expr, $inputs:expr, $tags:expr, $tag_len:expr, |$msgs:ident| $call:expr) => {{
        let idx: &[usize] = $idx;
        macro_rules! go {
            ($l:literal) => {{
                let $msgs: [&[u8]; $l] = core::array::from_fn(|k| $inputs[idx[k]].message);
                let out = $call;
                for (k, digest) in out.iter().enumerate() {
                    $tags[idx[k]] = lane_tag(digest, $tag_len);
                }
            }};
        }
        match idx.len() {
            1 => go!(1),
            2 => go!(2),
            3 => go!(3),
            4 => go!(4),
            5 => go!(5),
            6 => go!(6),
            7 => go!(7),
            _ => go!(8),
        }
    }};
}

/// Which SHA-2 function an [`HmacSha256Ni`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sha2Variant {
    /// SHA-224: its own initial value, 28-byte digest.
    Sha224,
    /// SHA-256.
    Sha256,
}

/// HMAC-SHA256 or HMAC-SHA224 with the padded-key states precomputed, in the
/// register layout of `SHA256RNDS2` (`ABEF`, `CDGH`).
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub(crate) struct HmacSha256Ni {
    #[zeroize(skip)]
    ni: ShaNi,
    #[zeroize(skip)]
    variant: Sha2Variant,
    /// State after compress(IV, key ⊕ ipad).
    inner: [u32; 8],
    /// State after compress(IV, key ⊕ opad).
    outer: [u32; 8],
}

/// `key` as one block: hashed by `hash` (which writes the digest at the front of
/// the block) when longer than a block (RFC 2104 section 2), then zero-padded.
pub(crate) fn key_block(key: &[u8], hash: impl FnOnce(&[u8], &mut [u8; 64])) -> [u8; 64] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        hash(key, &mut block);
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    block
}

/// `block` with every byte XORed with `pad` (0x36 for ipad, 0x5c for opad).
pub(crate) fn xor_pad(block: &[u8; 64], pad: u8) -> [u8; 64] {
    block.map(|b| b ^ pad)
}

impl HmacSha256Ni {
    /// Sets up the key: two compressions, done once.
    pub(crate) fn new(ni: ShaNi, variant: Sha2Variant, key: &[u8]) -> Self {
        use sha2::Digest as _;
        let mut block = key_block(key, |k, block| match variant {
            Sha2Variant::Sha224 => block[..28].copy_from_slice(&sha2::Sha224::digest(k)),
            Sha2Variant::Sha256 => block[..32].copy_from_slice(&sha2::Sha256::digest(k)),
        });
        let mut ipad = xor_pad(&block, 0x36);
        let mut opad = xor_pad(&block, 0x5c);
        let (inner, outer) = ni.sha256_pads(variant, &ipad, &opad);
        block.zeroize();
        ipad.zeroize();
        opad.zeroize();
        Self {
            ni,
            variant,
            inner,
            outer,
        }
    }

    /// The HMAC of one message: 32 bytes, of which SHA-224 uses the first 28.
    pub(crate) fn mac(&self, message: &[u8]) -> [u8; 32] {
        let [digest] = self.ni.hmac_sha256::<1>(self, [message]);
        digest
    }

    /// `tags[i]` = the first `tag_len` bytes of the HMAC of `inputs[i]`; the
    /// slices have one length and the nonces were checked.
    pub(crate) fn mac_many(&self, inputs: &[MacInput<'_>], tags: &mut [Tag], tag_len: usize) {
        for_each_group(inputs, 0, SHA256_LANES, |idx| {
            dispatch_lanes!(idx, inputs, tags, tag_len, |msgs| self
                .ni
                .hmac_sha256(self, msgs));
        });
    }
}

impl fmt::Debug for HmacSha256Ni {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacSha256Ni")
            .field("variant", &self.variant)
            .finish_non_exhaustive()
    }
}

/// HMAC-SHA1 with the padded-key states precomputed, in the register layout of
/// `SHA1RNDS4` (`ABCD` from lane 3 down, `E` in lane 3).
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub(crate) struct HmacSha1Ni {
    #[zeroize(skip)]
    ni: ShaNi,
    /// State after compress(IV, key ⊕ ipad).
    inner: [u32; 8],
    /// State after compress(IV, key ⊕ opad).
    outer: [u32; 8],
}

impl HmacSha1Ni {
    /// Sets up the key: two compressions, done once.
    pub(crate) fn new(ni: ShaNi, key: &[u8]) -> Self {
        use sha1::Digest as _;
        let mut block = key_block(key, |k, block| {
            block[..20].copy_from_slice(&sha1::Sha1::digest(k));
        });
        let mut ipad = xor_pad(&block, 0x36);
        let mut opad = xor_pad(&block, 0x5c);
        let (inner, outer) = ni.sha1_pads(&ipad, &opad);
        block.zeroize();
        ipad.zeroize();
        opad.zeroize();
        Self { ni, inner, outer }
    }

    /// The 20-byte HMAC of one message.
    pub(crate) fn mac(&self, message: &[u8]) -> [u8; 20] {
        let [digest] = self.ni.hmac_sha1::<1>(self, [message]);
        digest
    }

    /// As [`HmacSha256Ni::mac_many`].
    pub(crate) fn mac_many(&self, inputs: &[MacInput<'_>], tags: &mut [Tag], tag_len: usize) {
        for_each_group(inputs, 0, LANES, |idx| {
            dispatch_lanes!(idx, inputs, tags, tag_len, |msgs| self
                .ni
                .hmac_sha1(self, msgs));
        });
    }
}

impl fmt::Debug for HmacSha1Ni {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacSha1Ni").finish_non_exhaustive()
    }
}

/// SHA-1(key ‖ message), the legacy NTP digest.
pub(crate) fn sha1_legacy(ni: ShaNi, key: &[u8], message: &[u8]) -> [u8; 20] {
    if key.len() >= 64 {
        return sha1_concat_portable(key, message);
    }
    let [digest] = ni.sha1_plain::<1>(key, [message]);
    digest
}

/// `tags[i]` = SHA-1(key ‖ `inputs[i]`), batched as in [`HmacSha256Ni::mac_many`].
pub(crate) fn sha1_legacy_many(ni: ShaNi, key: &[u8], inputs: &[MacInput<'_>], tags: &mut [Tag]) {
    if key.len() >= 64 {
        for (input, tag) in inputs.iter().zip(tags.iter_mut()) {
            *tag = lane_tag(&sha1_concat_portable(key, input.message), 20);
        }
        return;
    }
    for_each_group(inputs, key.len(), LANES, |idx| {
        dispatch_lanes!(idx, inputs, tags, 20, |msgs| ni.sha1_plain(key, msgs));
    });
}

/// Keys of a block or more never reach the kernel (the legacy rules cap them at
/// 32 bytes); this keeps the function total.
fn sha1_concat_portable(key: &[u8], message: &[u8]) -> [u8; 20] {
    use sha1::Digest as _;
    sha1::Sha1::new()
        .chain_update(key)
        .chain_update(message)
        .finalize()
        .into()
}

#[cfg(target_arch = "x86_64")]
impl ShaNi {
    fn sha256_pads(
        self,
        variant: Sha2Variant,
        ipad: &[u8; 64],
        opad: &[u8; 64],
    ) -> ([u32; 8], [u32; 8]) {
        // SAFETY: a `ShaNi` exists only when the CPU has the features the
        // kernel is compiled for (`ShaNi::new`).
        unsafe { super::sha256_x86::pads(variant == Sha2Variant::Sha224, ipad, opad) }
    }

    fn hmac_sha256<const L: usize>(self, key: &HmacSha256Ni, msgs: [&[u8]; L]) -> [[u8; 32]; L] {
        let sha224 = key.variant == Sha2Variant::Sha224;
        // SAFETY: as in `sha256_pads`.
        unsafe { super::sha256_x86::hmac_lanes(&key.inner, &key.outer, sha224, &msgs) }
    }

    fn sha1_pads(self, ipad: &[u8; 64], opad: &[u8; 64]) -> ([u32; 8], [u32; 8]) {
        // SAFETY: as in `sha256_pads`.
        unsafe { super::sha1_x86::pads(ipad, opad) }
    }

    fn hmac_sha1<const L: usize>(self, key: &HmacSha1Ni, msgs: [&[u8]; L]) -> [[u8; 20]; L] {
        // SAFETY: as in `sha256_pads`.
        unsafe { super::sha1_x86::hmac_lanes(&key.inner, &key.outer, &msgs) }
    }

    fn sha1_plain<const L: usize>(self, key: &[u8], msgs: [&[u8]; L]) -> [[u8; 20]; L] {
        // SAFETY: as in `sha256_pads`.
        unsafe { super::sha1_x86::hash_lanes(key, &msgs) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl ShaNi {
    fn sha256_pads(self, _: Sha2Variant, _: &[u8; 64], _: &[u8; 64]) -> ([u32; 8], [u32; 8]) {
        match self.0 {}
    }
    fn hmac_sha256<const L: usize>(self, _: &HmacSha256Ni, _: [&[u8]; L]) -> [[u8; 32]; L] {
        match self.0 {}
    }
    fn sha1_pads(self, _: &[u8; 64], _: &[u8; 64]) -> ([u32; 8], [u32; 8]) {
        match self.0 {}
    }
    fn hmac_sha1<const L: usize>(self, _: &HmacSha1Ni, _: [&[u8]; L]) -> [[u8; 20]; L] {
        match self.0 {}
    }
    fn sha1_plain<const L: usize>(self, _: &[u8], _: [&[u8]; L]) -> [[u8; 20]; L] {
        match self.0 {}
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::Algorithm;

    /// splitmix64 (Steele, Lea, Flood 2014): a seeded generator for test inputs.
    pub(crate) struct SplitMix(pub(crate) u64);

    impl SplitMix {
        pub(crate) fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        pub(crate) fn below(&mut self, n: usize) -> usize {
            (self.next_u64() % n as u64) as usize
        }

        pub(crate) fn bytes(&mut self, len: usize) -> Vec<u8> {
            (0..len).map(|_| self.next_u64() as u8).collect()
        }
    }

    /// Every message length 0..=200, then 1500 and 2000.
    pub(crate) fn message_lengths() -> impl Iterator<Item = usize> {
        (0..=200).chain([1500, 2000])
    }

    /// The SHA-NI proof on this CPU, or `None` (and a note) when it lacks SHA-NI.
    pub(crate) fn sha_ni_or_skip(test: &str) -> Option<ShaNi> {
        let ni = ShaNi::new(Isa::detect());
        if ni.is_none() {
            eprintln!("{test}: skipped, this CPU has no SHA extensions");
        }
        ni
    }

    /// The batch sizes every lane test runs.
    pub(crate) fn batch_sizes() -> impl Iterator<Item = usize> {
        (1..=40).chain([100])
    }

    fn sha1_reference(key: &[u8], message: &[u8]) -> [u8; 20] {
        sha1_concat_portable(key, message)
    }

    // FIPS 180-2 appendix A.1 (SHA-1), B.1 (SHA-256) and RFC 3874 section 3.1
    // (SHA-224): the one-block message "abc", one lane and four lanes.
    #[test]
    fn fips180_abc_through_one_lane_and_four() {
        let Some(ni) = sha_ni_or_skip("fips180_abc_through_one_lane_and_four") else {
            return;
        };
        let sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let sha224 = "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7";
        let sha1 = "a9993e364706816aba3e25717850c26c9cd0d89d";
        let abc: &[u8] = b"abc";
        // SAFETY: `ni` proves the CPU has the kernels' features.
        let (one, four) = unsafe {
            (
                super::super::sha256_x86::hash_lanes(false, &[abc]),
                super::super::sha256_x86::hash_lanes(false, &[abc; 4]),
            )
        };
        for d in one.iter().chain(&four) {
            assert_eq!(hex::encode(d), sha256);
        }
        // SAFETY: as above.
        let (one, four) = unsafe {
            (
                super::super::sha256_x86::hash_lanes(true, &[abc]),
                super::super::sha256_x86::hash_lanes(true, &[abc; 4]),
            )
        };
        for d in one.iter().chain(&four) {
            assert_eq!(hex::encode(&d[..28]), sha224);
        }
        // SHA-1 through the legacy entry points, with the key as the first bytes.
        assert_eq!(hex::encode(sha1_legacy(ni, b"ab", b"c")), sha1);
        let inputs = [MacInput::message(b"c"); 5];
        let mut tags = [Tag::EMPTY; 5];
        sha1_legacy_many(ni, b"ab", &inputs, &mut tags);
        for t in &tags {
            assert_eq!(hex::encode(t.as_bytes()), sha1);
        }
        let portable = Algorithm::Sha1Legacy
            .new_mac_with_isa(b"ab", Isa::PORTABLE)
            .expect("key");
        assert_eq!(
            hex::encode(portable.compute(&[], b"c").expect("tag").as_bytes()),
            sha1
        );
    }

    #[test]
    fn classes_share_block_counts_and_joins_are_exact() {
        for prefix_len in [0, 1, 20, 32, 63] {
            let prefix: Vec<u8> = (1..=prefix_len as u8).collect();
            for len in message_lengths() {
                let msg: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(7)).collect();
                let joined = [prefix.as_slice(), msg.as_slice()].concat();
                let mut buf = [0u8; 16];
                let end = end16(&prefix, &msg, &mut buf);
                let want_from = joined.len().saturating_sub(16);
                assert_eq!(
                    &end[16 - (joined.len() - want_from)..],
                    &joined[want_from..]
                );
                let head = head_block(&prefix, &msg);
                let n = joined.len().min(64);
                assert_eq!(&head[..n], &joined[..n]);
                let blocks = |len: usize| (prefix_len + len + 9).div_ceil(64);
                for other in message_lengths() {
                    if class(prefix_len, other) == class(prefix_len, len) {
                        assert_eq!(blocks(other), blocks(len), "{prefix_len} {len} {other}");
                        assert_eq!(
                            (prefix_len + other) % 64 >= 56,
                            (prefix_len + len) % 64 >= 56,
                            "{prefix_len} {len} {other}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn sha1_legacy_one_packet_and_lanes_match_sha1_crate() {
        let Some(ni) = sha_ni_or_skip("sha1_legacy_one_packet_and_lanes_match_sha1_crate") else {
            return;
        };
        let mut rng = SplitMix(0x5a11_1e6a);
        for key_len in 1..=32 {
            let key = rng.bytes(key_len);
            let mac = Algorithm::Sha1Legacy
                .new_mac_with_isa(&key, Isa::detect())
                .expect("key");
            for len in message_lengths() {
                let msg = rng.bytes(len);
                let want = sha1_reference(&key, &msg);
                assert_eq!(sha1_legacy(ni, &key, &msg), want, "key {key_len} len {len}");
                assert_eq!(mac.compute(&[], &msg).expect("tag").as_bytes(), &want);
            }
        }
        for size in batch_sizes() {
            let key_len = 1 + rng.below(32);
            let key = rng.bytes(key_len);
            let mac = Algorithm::Sha1Legacy
                .new_mac_with_isa(&key, Isa::detect())
                .expect("key");
            let uniform = rng.below(201);
            let msgs: Vec<Vec<u8>> = (0..size)
                .map(|i| {
                    let len = if size.is_multiple_of(2) {
                        uniform
                    } else {
                        message_lengths().nth((i * 7 + size) % 203).unwrap_or(0)
                    };
                    rng.bytes(len)
                })
                .collect();
            let inputs: Vec<MacInput<'_>> = msgs.iter().map(|m| MacInput::message(m)).collect();
            let mut tags = vec![Tag::EMPTY; size];
            mac.compute_many(&inputs, &mut tags).expect("batch");
            for (msg, tag) in msgs.iter().zip(&tags) {
                assert_eq!(tag.as_bytes(), &sha1_reference(&key, msg), "batch {size}");
            }
        }
    }

    #[test]
    fn sha1_legacy_portable_matches_sha1_crate() {
        let mut rng = SplitMix(7);
        for key_len in [1, 16, 20, 32] {
            let key = rng.bytes(key_len);
            let mac = Algorithm::Sha1Legacy
                .new_mac_with_isa(&key, Isa::PORTABLE)
                .expect("key");
            for len in message_lengths() {
                let msg = rng.bytes(len);
                assert_eq!(
                    mac.compute(&[], &msg).expect("tag").as_bytes(),
                    &sha1_reference(&key, &msg)
                );
            }
        }
    }
}
