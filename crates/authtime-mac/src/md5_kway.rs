//! K-way interleaved MD5 (RFC 1810, "One Proposed Solution"), for K = 4 and 16.
//!
//! RFC 1810 proposes hashing block `i` of a message in chain `i mod K` so that K
//! chains run in parallel, and hashing the K digests again. The RFC leaves the
//! padding and the final step open; authtime defines them as follows:
//!
//! 1. Pad the whole message exactly as MD5 does (RFC 1321 section 3.1 and 3.2:
//!    `0x80`, zeros, the 64-bit little-endian bit length), giving `N >= 1` blocks
//!    of 64 bytes.
//! 2. Chain `j` (for `j` in `0..K`) starts from MD5's initial state and
//!    compresses blocks `j, j + K, j + 2K, …` in order. A chain that receives no
//!    block (when `N < K`) keeps the initial state.
//! 3. Each chain's state is serialized as MD5 serializes its digest (four
//!    little-endian words), giving `K` 16-byte values `s_0 .. s_{K-1}`.
//! 4. The result is the ordinary MD5 (with its own padding) of `s_0 ‖ … ‖ s_{K-1}`:
//!    64 bytes for K = 4, 256 bytes for K = 16.
//!
//! This is a hash, not MD5: its digests differ from MD5's, and it inherits MD5's
//! broken collision resistance. It exists to measure what RFC 1810 predicted.
//!
//! [`md5_kway`] is the definition, built on the `md-5` crate's compression; the
//! fast implementation is [`md5_kway_with_isa`] (chains in SIMD lanes for K = 4,
//! 8 and 16; otherwise the hand-written scalar compression, two chains
//! interleaved in one instruction stream), tested equal to it.
//! [`md5_parallel8`] is the other kind of parallelism: eight independent
//! messages in eight lanes.

use md5::{Digest, Md5, block_api::compress};

use crate::Isa;
use crate::kernels::{md5_lanes, md5_scalar};

const MD5_IV: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// Plain MD5 (RFC 1321), one chain, with the hand-written scalar compression.
#[must_use]
pub fn md5(data: &[u8]) -> [u8; 16] {
    md5_scalar::md5(data)
}

/// Plain MD5 of eight independent buffers (any lengths) in the eight 32-bit
/// lanes of AVX2 registers when `isa` allows, one after the other otherwise.
#[must_use]
pub fn md5_parallel8(buffers: [&[u8]; 8], isa: Isa) -> [[u8; 16]; 8] {
    md5_lanes::md5_x8(&buffers, isa).unwrap_or_else(|| buffers.map(md5_scalar::md5))
}

/// [`md5_kway`], computed fast: for K = 4, 8 and 16 with AVX2 (when `isa`
/// allows) the K chains run in SIMD lanes, otherwise two at a time with the
/// scalar compression. Same output as [`md5_kway`] for every input.
#[must_use]
pub fn md5_kway_with_isa(k: usize, data: &[u8], isa: Isa) -> [u8; 16] {
    let k = k.max(1);
    let chains =
        md5_lanes::kway_chains(k, data, isa).unwrap_or_else(|| kway_chains_scalar(k, data));
    let mut concat = Vec::with_capacity(16 * k);
    for state in &chains {
        concat.extend_from_slice(&md5_scalar::digest_bytes(state));
    }
    md5_scalar::md5(&concat)
}

/// Steps 1 to 3 of the definition with the scalar compression, two chains at a
/// time in one instruction stream ([`md5_scalar::compress_pair`]).
fn kway_chains_scalar(k: usize, data: &[u8]) -> Vec<[u32; 4]> {
    let total = (data.len() + 9).div_ceil(64);
    let whole = data.len() / 64;
    let mut tail = [0u8; 128];
    let rest = &data[64 * whole..];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()] = 0x80;
    let tail_len = 64 * (total - whole);
    let bits = (data.len() as u64).wrapping_mul(8).to_le_bytes();
    tail[tail_len - 8..tail_len].copy_from_slice(&bits);
    let block = |i: usize| {
        let bytes = if i < whole {
            &data[64 * i..64 * i + 64]
        } else {
            &tail[64 * (i - whole)..64 * (i - whole) + 64]
        };
        md5_scalar::words(md5_scalar::block_ref(bytes))
    };
    let mut chains = vec![MD5_IV; k];
    for pair in (0..k).step_by(2) {
        if pair + 1 == k {
            for i in (pair..total).step_by(k) {
                chains[pair] = md5_scalar::compress_words(chains[pair], &block(i));
            }
            break;
        }
        // Chain `pair` may have one block more than chain `pair + 1`.
        let mut i = pair;
        while i + 1 < total {
            let states = [chains[pair], chains[pair + 1]];
            [chains[pair], chains[pair + 1]] =
                md5_scalar::compress_pair(states, &block(i), &block(i + 1));
            i += k;
        }
        if i < total {
            chains[pair] = md5_scalar::compress_words(chains[pair], &block(i));
        }
    }
    chains
}

/// MD5's padding of `data` (step 1), as whole 64-byte blocks.
pub(crate) fn md5_padded_blocks(data: &[u8]) -> Vec<[u8; 64]> {
    let blocks = (data.len() + 9).div_ceil(64);
    let mut out = vec![[0u8; 64]; blocks];
    for (block, chunk) in out.iter_mut().zip(data.chunks(64)) {
        block[..chunk.len()].copy_from_slice(chunk);
    }
    let (q, r) = (data.len() / 64, data.len() % 64);
    out[q][r] = 0x80;
    let bits = (data.len() as u64).wrapping_mul(8).to_le_bytes();
    out[blocks - 1][56..].copy_from_slice(&bits);
    out
}

/// The K-way interleaved MD5 of `data`, for any `k >= 1` (the named variants are 4 and 16).
///
/// # Panics
/// Never for `k >= 1`; `k = 0` is treated as 1.
#[must_use]
pub fn md5_kway(k: usize, data: &[u8]) -> [u8; 16] {
    let k = k.max(1);
    let mut chains = vec![MD5_IV; k];
    for (i, block) in md5_padded_blocks(data).iter().enumerate() {
        compress(&mut chains[i % k], core::slice::from_ref(block));
    }
    let mut hasher = Md5::new();
    for state in &chains {
        for word in state {
            hasher.update(word.to_le_bytes());
        }
    }
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 1321 appendix A.5 test suite, through our padding and `compress`:
    // with one chain, step 1-3 is plain MD5, so its serialized state must match.
    #[test]
    fn padding_and_compress_reproduce_md5_rfc1321() {
        for (msg, want) in [
            (&b""[..], "d41d8cd98f00b204e9800998ecf8427e"),
            (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
            (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ] {
            let mut state = MD5_IV;
            compress(&mut state, &md5_padded_blocks(msg));
            let bytes: Vec<u8> = state.iter().flat_map(|w| w.to_le_bytes()).collect();
            assert_eq!(hex::encode(bytes), want);
            assert_eq!(hex::encode(md5(msg)), want);
            assert_eq!(md5(msg), <[u8; 16]>::from(Md5::digest(msg)));
        }
    }

    #[test]
    fn padding_block_counts() {
        assert_eq!(md5_padded_blocks(&[0; 55]).len(), 1);
        assert_eq!(md5_padded_blocks(&[0; 56]).len(), 2);
        assert_eq!(md5_padded_blocks(&[0; 64]).len(), 2);
        assert_eq!(md5_padded_blocks(&[0; 119]).len(), 2);
        assert_eq!(md5_padded_blocks(&[0; 120]).len(), 3);
    }

    #[test]
    fn kway_definition_by_hand_for_short_input() {
        // One block: chain 0 is MD5's state for "abc", chains 1..K keep the IV.
        let mut s0 = MD5_IV;
        compress(&mut s0, &md5_padded_blocks(b"abc"));
        let mut concat = Vec::new();
        for (j, state) in core::iter::once(s0)
            .chain(core::iter::repeat_n(MD5_IV, 3))
            .enumerate()
        {
            assert!(j < 4);
            concat.extend(state.iter().flat_map(|w| w.to_le_bytes()));
        }
        assert_eq!(md5_kway(4, b"abc"), md5(&concat));
    }

    #[test]
    fn kway_variants_differ_from_each_other_and_from_md5() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        let (a, b, c) = (md5(&data), md5_kway(4, &data), md5_kway(16, &data));
        assert!(a != b && b != c && a != c);
        let mut changed = data.clone();
        changed[5000] ^= 1;
        assert_ne!(md5_kway(16, &changed), c);
        // Swapping two blocks in different chains changes the digest.
        let mut swapped = data.clone();
        swapped.copy_within(0..64, 9000);
        swapped[..64].copy_from_slice(&data[9000..9064]);
        assert_ne!(md5_kway(4, &swapped), b);
    }

    fn check_kway(k: usize, data: &[u8]) {
        let want = md5_kway(k, data);
        assert_eq!(
            md5_kway_with_isa(k, data, Isa::PORTABLE),
            want,
            "portable k {k} len {}",
            data.len()
        );
        assert_eq!(
            md5_kway_with_isa(k, data, Isa::current()),
            want,
            "lanes k {k} len {}",
            data.len()
        );
    }

    #[test]
    fn kway_lanes_and_scalar_chains_match_the_definition() {
        if !md5_lanes::avx2_usable(Isa::current()) {
            eprintln!("AVX2 not available: the lane half of this test runs the scalar chains");
        }
        let mut rng = md5_scalar::tests::SplitMix(20);
        let big = rng.bytes(100_000);
        for k in [1, 2, 3, 4, 8, 16, 17] {
            for len in (0..=2000)
                .step_by(13)
                .chain(0..=300)
                .chain([4096, 65_536, 100_000])
            {
                if k != 4 && k != 16 && len % 5 != 0 {
                    continue;
                }
                check_kway(k, &big[..len]);
            }
        }
        let large: Vec<u8> = rng.bytes(1 << 20);
        check_kway(4, &large);
        check_kway(16, &large);
    }

    #[test]
    fn parallel8_matches_md5_crate() {
        let mut rng = md5_scalar::tests::SplitMix(21);
        for len in (0..=260).chain([1000, 1500, 10_000]) {
            let bufs: Vec<Vec<u8>> = (0..8).map(|_| rng.bytes(len)).collect();
            let refs: [&[u8]; 8] = core::array::from_fn(|i| bufs[i].as_slice());
            for isa in [Isa::PORTABLE, Isa::current()] {
                let got = md5_parallel8(refs, isa);
                for (b, d) in bufs.iter().zip(got) {
                    assert_eq!(d, <[u8; 16]>::from(Md5::digest(b)), "len {len}");
                }
            }
        }
    }
}
