//! The Merkle tree over a batch's request packets (draft-ietf-ntp-roughtime-19 §5.3).
//!
//! H is SHA-512 truncated to 32 bytes; a leaf is H(0x00 || request packet,
//! "ROUGHTIM" header included), a node H(0x01 || left || right). The draft
//! does not say how to complete a level with an odd number of nodes: like
//! roughenough, an all-zero node is added, which a verifier never needs to
//! know (it only follows PATH). Both wire versions use the same rules.
//!
//! roughenough 1.3.0-draft14 departs from them for 0x8000000c batches: its
//! `src/merkle.rs` hashes leaves and inner nodes with the full 64-byte
//! SHA-512, truncates only the root (`finalize_output`) and puts 64-byte
//! siblings in PATH. Its single-request responses (empty PATH, root =
//! truncated leaf) agree with these rules; its batched ones do not verify here.

use authtime_mac::sha512_many;
use sha2::{Digest, Sha512};

/// One 32-byte tree node.
pub type Hash = [u8; 32];

/// A Merkle tree may be at most 32 levels high (§5.2.4: at most 32 PATH entries).
pub const MAX_PATH_LEN: usize = 32;

fn truncated(hasher: Sha512) -> Hash {
    let digest = hasher.finalize();
    let mut out = [0u8; 32];
    out.copy_from_slice(&digest[..32]);
    out
}

/// H(0x00 || request packet).
pub fn leaf_hash(request_packet: &[u8]) -> Hash {
    let mut h = Sha512::new();
    h.update([0x00]);
    h.update(request_packet);
    truncated(h)
}

/// [`leaf_hash`] of every packet of a batch, several at a time in SIMD
/// lanes where the CPU has them ([`authtime_mac::sha512_many`]).
pub fn leaf_hashes(request_packets: &[&[u8]]) -> Vec<Hash> {
    let mut digests = vec![[0u8; 64]; request_packets.len()];
    sha512_many(&[0x00], request_packets, &mut digests);
    digests.iter().map(first_32).collect()
}

/// H(0x01 || left || right).
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha512::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    truncated(h)
}

/// The level above `level`: [`node_hash`] of each pair (the last node
/// paired with zeros when the count is odd), a level's nodes hashed
/// together in SIMD lanes like the leaves.
fn parents(level: &[Hash]) -> Vec<Hash> {
    let pairs: Vec<[u8; 64]> = level
        .chunks(2)
        .map(|pair| {
            let mut both = [0u8; 64];
            both[..32].copy_from_slice(&pair[0]);
            if let Some(right) = pair.get(1) {
                both[32..].copy_from_slice(right);
            }
            both
        })
        .collect();
    let messages: Vec<&[u8]> = pairs.iter().map(|p| &p[..]).collect();
    let mut digests = vec![[0u8; 64]; pairs.len()];
    sha512_many(&[0x01], &messages, &mut digests);
    digests.iter().map(first_32).collect()
}

fn first_32(digest: &[u8; 64]) -> Hash {
    let mut out = [0u8; 32];
    out.copy_from_slice(&digest[..32]);
    out
}

/// A built tree: every level, leaves first.
#[derive(Debug, Clone)]
pub struct MerkleTree {
    levels: Vec<Vec<Hash>>,
}

impl MerkleTree {
    /// Builds the tree over `leaves` (already hashed with [`leaf_hash`]).
    /// Returns `None` for an empty batch.
    pub fn new(leaves: Vec<Hash>) -> Option<Self> {
        if leaves.is_empty() {
            return None;
        }
        let mut levels = vec![leaves];
        while let Some(level) = levels.last().filter(|l| l.len() > 1) {
            levels.push(parents(level));
        }
        Some(MerkleTree { levels })
    }

    /// The root (ROOT).
    pub fn root(&self) -> Hash {
        // `new` refuses empty input, so the last level has one node.
        self.levels.last().map_or([0u8; 32], |l| l[0])
    }

    /// The siblings from leaf `index` up to the root (PATH), concatenated.
    pub fn path(&self, index: usize) -> Vec<u8> {
        let mut path = vec![0u8; self.path_len()];
        self.write_path(index, &mut path);
        path
    }

    /// The length of every leaf's PATH in bytes: 32 per level below the root.
    pub fn path_len(&self) -> usize {
        32 * (self.levels.len() - 1)
    }

    /// Writes [`MerkleTree::path`] of leaf `index` into the first
    /// [`MerkleTree::path_len`] bytes of `out` (fewer if `out` is shorter).
    pub fn write_path(&self, mut index: usize, out: &mut [u8]) {
        let levels = &self.levels[..self.levels.len() - 1];
        for (level, slot) in levels.iter().zip(out.chunks_exact_mut(32)) {
            slot.copy_from_slice(level.get(index ^ 1).unwrap_or(&[0u8; 32]));
            index /= 2;
        }
    }
}

/// §5.3.1: the root reached from `request_packet` by `path` and `index`, or
/// `None` when PATH is malformed or INDX has bits left over.
pub fn root_from_path(request_packet: &[u8], index: u32, path: &[u8]) -> Option<Hash> {
    if !path.len().is_multiple_of(32) || path.len() / 32 > MAX_PATH_LEN {
        return None;
    }
    let mut h = leaf_hash(request_packet);
    let mut bits = index;
    for node in path.chunks_exact(32) {
        let node: &Hash = node.try_into().ok()?;
        h = if bits & 1 == 0 {
            node_hash(&h, node)
        } else {
            node_hash(node, &h)
        };
        bits >>= 1;
    }
    (bits == 0).then_some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_leaf_reaches_the_root() {
        for n in [1usize, 2, 3, 5, 8, 64, 100] {
            let packets: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; 40]).collect();
            let tree = MerkleTree::new(packets.iter().map(|p| leaf_hash(p)).collect()).unwrap();
            for (i, p) in packets.iter().enumerate() {
                let path = tree.path(i);
                assert_eq!(
                    root_from_path(p, i as u32, &path),
                    Some(tree.root()),
                    "n={n} i={i}"
                );
                assert_ne!(root_from_path(p, (i as u32) ^ 1, &path), Some(tree.root()));
            }
        }
    }

    #[test]
    fn batched_leaves_equal_one_at_a_time() {
        for n in [1usize, 2, 3, 5, 8, 9, 31, 64] {
            let packets: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; 1000 + 7 * i]).collect();
            let refs: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
            let one: Vec<Hash> = refs.iter().map(|p| leaf_hash(p)).collect();
            assert_eq!(leaf_hashes(&refs), one, "n={n}");
        }
    }

    #[test]
    fn batched_levels_equal_node_hash_one_pair_at_a_time() {
        for n in 1usize..=70 {
            let leaves: Vec<Hash> = (0..n).map(|i| leaf_hash(&[i as u8; 7])).collect();
            let tree = MerkleTree::new(leaves.clone()).unwrap();
            let mut level = leaves;
            while level.len() > 1 {
                level = level
                    .chunks(2)
                    .map(|p| node_hash(&p[0], p.get(1).unwrap_or(&[0u8; 32])))
                    .collect();
            }
            assert_eq!(tree.root(), level[0], "n={n}");
        }
    }

    #[test]
    fn single_leaf_root_is_the_leaf_hash() {
        let tree = MerkleTree::new(vec![leaf_hash(b"x")]).unwrap();
        assert_eq!(tree.root(), leaf_hash(b"x"));
        assert!(tree.path(0).is_empty());
        assert!(MerkleTree::new(vec![]).is_none());
    }

    #[test]
    fn leftover_index_bits_fail() {
        assert_eq!(root_from_path(b"x", 1, &[]), None);
        assert_eq!(root_from_path(b"x", 0, &[0; 31]), None);
        assert!(root_from_path(b"x", 0, &[0; 32 * 33]).is_none());
    }
}
