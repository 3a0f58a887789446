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
//! The multi-lane implementation (chains in SIMD lanes) must equal this one.

use md5::{Digest, Md5, block_api::compress};

const MD5_IV: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// Plain MD5 (RFC 1321).
#[must_use]
pub fn md5(data: &[u8]) -> [u8; 16] {
    Md5::digest(data).into()
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
}
