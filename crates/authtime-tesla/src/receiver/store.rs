//! The receiver's bounded stores: the buffer of packets waiting for their
//! keys (hashed by whole datagram, random eviction when full) and the memory
//! of delivered packets (hashed by interval and tag, first in, first out).
//!
//! Lookups go through 64-bit fingerprints computed with [`RandomState`]
//! (SipHash under keys the attacker does not know), and every hit is
//! confirmed byte for byte, so a collision can never turn a new packet into a
//! replay.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

use sha2::{Digest, Sha256};

/// Hashes a `u64` fingerprint to itself: fingerprints are already keyed
/// hashes, unpredictable to an attacker.
#[derive(Default)]
pub(super) struct FingerprintHasher(u64);

impl Hasher for FingerprintHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type FingerprintMap<V> = HashMap<u64, V, BuildHasherDefault<FingerprintHasher>>;

/// A packet waiting for its key.
pub(super) struct Slot {
    pub(super) interval: u32,
    fingerprint: u64,
    /// Arrival order (slots move when others are removed).
    pub(super) arrival: u64,
    pub(super) bytes: Vec<u8>,
}

/// Packets waiting for their keys, unordered; each datagram held once.
pub(super) struct PacketBuffer {
    slots: Vec<Slot>,
    /// Fingerprint of a held datagram to its slot. A datagram whose
    /// fingerprint collides with a held one's (probability 2^-64 per pair,
    /// under a key the attacker does not know) is held unindexed.
    index: FingerprintMap<usize>,
    hasher: RandomState,
    bytes: usize,
    /// At most the smallest interval held (`u32::MAX` when empty).
    min_interval: u32,
    /// Emptied byte vectors of released packets, reused for new ones.
    spare: Vec<Vec<u8>>,
    arrivals: u64,
}

/// Most emptied byte vectors kept for reuse.
const SPARE_MAX: usize = 256;

impl PacketBuffer {
    pub(super) fn new() -> Self {
        Self {
            slots: Vec::new(),
            index: FingerprintMap::default(),
            hasher: RandomState::new(),
            bytes: 0,
            min_interval: u32::MAX,
            spare: Vec::new(),
            arrivals: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(super) fn slots(&self) -> &[Slot] {
        &self.slots
    }

    pub(super) fn fingerprint(&self, datagram: &[u8]) -> u64 {
        self.hasher.hash_one(datagram)
    }

    /// Whether this exact datagram is held.
    pub(super) fn contains(&self, fingerprint: u64, datagram: &[u8]) -> bool {
        self.index
            .get(&fingerprint)
            .is_some_and(|&i| self.slots[i].bytes == datagram)
    }

    pub(super) fn push(&mut self, interval: u32, fingerprint: u64, datagram: &[u8]) {
        let mut bytes = self.spare.pop().unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(datagram);
        self.bytes += bytes.len();
        self.min_interval = self.min_interval.min(interval);
        self.index.entry(fingerprint).or_insert(self.slots.len());
        self.slots.push(Slot {
            interval,
            fingerprint,
            arrival: self.arrivals,
            bytes,
        });
        self.arrivals += 1;
    }

    /// Removes slot `i` (the last slot moves into its place).
    pub(super) fn remove(&mut self, i: usize) -> Slot {
        let last = self.slots.len() - 1;
        let slot = self.slots.swap_remove(i);
        if self.index.get(&slot.fingerprint) == Some(&i) {
            self.index.remove(&slot.fingerprint);
        }
        if i < last {
            let moved = self.slots[i].fingerprint;
            if let Some(at) = self.index.get_mut(&moved)
                && *at == last
            {
                *at = i;
            }
        }
        self.bytes -= slot.bytes.len();
        if self.slots.is_empty() {
            self.min_interval = u32::MAX;
        }
        slot
    }

    /// Gives an emptied slot's byte vector back for reuse.
    pub(super) fn recycle(&mut self, slot: Slot) {
        if self.spare.len() < SPARE_MAX {
            self.spare.push(slot.bytes);
        }
    }

    /// Removes every slot `pick` selects, in no particular order, and
    /// returns them.
    pub(super) fn take_where(&mut self, mut pick: impl FnMut(&Slot) -> bool) -> Vec<Slot> {
        let mut taken = Vec::new();
        let mut i = 0;
        while i < self.slots.len() {
            if pick(&self.slots[i]) {
                taken.push(self.remove(i));
            } else {
                i += 1;
            }
        }
        self.min_interval = self
            .slots
            .iter()
            .map(|s| s.interval)
            .min()
            .unwrap_or(u32::MAX);
        taken
    }

    /// Removes the slots of intervals below `first_kept`; returns how many.
    /// Scans only when the smallest interval held may be below it.
    pub(super) fn drop_before(&mut self, first_kept: i128) -> usize {
        if i128::from(self.min_interval) >= first_kept {
            return 0;
        }
        let dropped = self.take_where(|s| i128::from(s.interval) < first_kept);
        let n = dropped.len();
        for s in dropped {
            self.recycle(s);
        }
        n
    }

    pub(super) fn clear(&mut self) -> usize {
        let n = self.slots.len();
        self.slots.clear();
        self.index.clear();
        self.bytes = 0;
        self.min_interval = u32::MAX;
        n
    }
}

/// Delivered packets, `(interval, tag)`, remembered first in, first out.
pub(super) struct ReplayMemory {
    capacity: usize,
    tag_len: usize,
    /// Entries written so far; entry `n` lives in ring slot `n % capacity`.
    written: u64,
    intervals: Vec<u32>,
    fingerprints: Vec<u64>,
    tags: Vec<u8>,
    /// Fingerprint to the number of its newest entry.
    index: FingerprintMap<u64>,
    hasher: RandomState,
}

impl ReplayMemory {
    pub(super) fn new(capacity: usize, tag_len: usize) -> Self {
        Self {
            capacity,
            tag_len,
            written: 0,
            intervals: Vec::new(),
            fingerprints: Vec::new(),
            tags: Vec::new(),
            index: FingerprintMap::default(),
            hasher: RandomState::new(),
        }
    }

    fn fingerprint(&self, interval: u32, tag: &[u8]) -> u64 {
        self.hasher.hash_one((interval, tag))
    }

    fn slot(&self, entry: u64) -> usize {
        // Entry numbers below `written`, reduced modulo a `usize` capacity.
        (entry % self.capacity as u64) as usize
    }

    /// Whether `(interval, tag)` was delivered (among the remembered ones).
    pub(super) fn contains(&self, interval: u32, tag: &[u8]) -> bool {
        if self.capacity == 0 || tag.len() != self.tag_len {
            return false;
        }
        let Some(&entry) = self.index.get(&self.fingerprint(interval, tag)) else {
            return false;
        };
        let s = self.slot(entry);
        self.intervals[s] == interval && &self.tags[s * self.tag_len..][..self.tag_len] == tag
    }

    pub(super) fn insert(&mut self, interval: u32, tag: &[u8]) {
        if self.capacity == 0 || tag.len() != self.tag_len {
            return;
        }
        let fingerprint = self.fingerprint(interval, tag);
        let entry = self.written;
        let s = self.slot(entry);
        if s == self.intervals.len() {
            self.intervals.push(interval);
            self.fingerprints.push(fingerprint);
            self.tags.extend_from_slice(tag);
        } else {
            let old = self.fingerprints[s];
            if self.index.get(&old) == Some(&(entry - self.capacity as u64)) {
                self.index.remove(&old);
            }
            self.intervals[s] = interval;
            self.fingerprints[s] = fingerprint;
            self.tags[s * self.tag_len..][..self.tag_len].copy_from_slice(tag);
        }
        self.index.insert(fingerprint, entry);
        self.written += 1;
    }
}

/// Chooses buffered packets to evict: SHA-256 in counter mode under a seed
/// the attacker cannot predict (an attacker who could would know which
/// buffered packet its next forgery pushes out).
pub(super) struct EvictionRng {
    seed: [u8; 32],
    counter: u64,
    pool: [u64; 4],
    left: usize,
}

impl EvictionRng {
    pub(super) fn new(seed: &[u8]) -> Self {
        let mut h = Sha256::new();
        h.update(b"authtime-tesla receiver eviction seed v1");
        h.update((seed.len() as u64).to_be_bytes());
        h.update(seed);
        Self {
            seed: h.finalize().into(),
            counter: 0,
            pool: [0; 4],
            left: 0,
        }
    }

    /// A seed from the standard library's per-process random keys.
    pub(super) fn unpredictable() -> Self {
        let s = RandomState::new();
        let mut seed = [0u8; 32];
        for (n, chunk) in seed.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&s.hash_one(n).to_le_bytes());
        }
        Self::new(&seed)
    }

    fn next_u64(&mut self) -> u64 {
        if self.left == 0 {
            let mut h = Sha256::new();
            h.update(self.seed);
            h.update(self.counter.to_be_bytes());
            self.counter += 1;
            let out: [u8; 32] = h.finalize().into();
            for (v, c) in self.pool.iter_mut().zip(out.chunks_exact(8)) {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                *v = u64::from_le_bytes(b);
            }
            self.left = 4;
        }
        self.left -= 1;
        self.pool[self.left]
    }

    /// Uniform in `0..n` (bias below `n / 2^64`); `n > 0`.
    pub(super) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_index_follows_removals() {
        let mut b = PacketBuffer::new();
        let data: Vec<Vec<u8>> = (0..20u8).map(|n| vec![n; 10 + usize::from(n)]).collect();
        for (n, d) in data.iter().enumerate() {
            b.push(n as u32, b.fingerprint(d), d);
        }
        b.remove(3);
        b.remove(0);
        let taken = b.take_where(|s| s.interval % 2 == 1);
        assert_eq!(taken.len(), 9);
        for (n, d) in data.iter().enumerate() {
            let held = n != 0 && n != 3 && n % 2 == 0;
            assert_eq!(b.contains(b.fingerprint(d), d), held, "{n}");
        }
        assert_eq!(b.bytes(), b.slots().iter().map(|s| s.bytes.len()).sum());
        assert_eq!(b.drop_before(10), 4);
        assert_eq!(b.len(), 5);
        assert!(!b.contains(b.fingerprint(&data[4]), &data[4]));
        assert!(b.contains(b.fingerprint(&data[12]), &data[12]));
        let mut other = data[12].clone();
        other[0] ^= 1;
        assert!(!b.contains(b.fingerprint(&other), &other));
    }

    #[test]
    fn replay_memory_forgets_first_in_first_out() {
        let mut m = ReplayMemory::new(3, 2);
        for n in 0..5u8 {
            m.insert(u32::from(n), &[n, n]);
        }
        assert!(!m.contains(0, &[0, 0]) && !m.contains(1, &[1, 1]));
        assert!(m.contains(2, &[2, 2]) && m.contains(4, &[4, 4]));
        assert!(!m.contains(4, &[4, 5]) && !m.contains(3, &[4, 4]));
        assert!(!ReplayMemory::new(0, 2).contains(0, &[0, 0]));
    }

    #[test]
    fn eviction_choices_follow_the_seed_and_are_uniform() {
        let draw = |seed: &[u8]| -> Vec<usize> {
            let mut r = EvictionRng::new(seed);
            (0..64).map(|_| r.below(64)).collect()
        };
        assert_eq!(draw(b"nonce a"), draw(b"nonce a"));
        assert_ne!(draw(b"nonce a"), draw(b"nonce b"));
        let mut r = EvictionRng::unpredictable();
        let mut counts = [0u32; 8];
        for _ in 0..80_000 {
            counts[r.below(8)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }
}
