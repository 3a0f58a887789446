//! The four single-producer single-consumer rings an AF_XDP socket shares
//! with the kernel: fill and TX (user space produces), completion and RX
//! (user space consumes).
//!
//! Each ring is a power-of-two array of entries plus a producer and a
//! consumer index, free-running `u32`s that wrap; an index is taken modulo
//! the size only to address an entry. The protocol is libxdp's (xsk.h):
//! the producer writes entries, then publishes them by storing its index
//! with release ordering; the consumer reads the producer index with
//! acquire ordering before reading entries, and gives entries back by
//! storing its own index with release ordering, which the producer reads
//! with acquire before reusing them. Each side keeps a cached copy of the
//! other's index and reads the shared one only when the cache says the
//! ring is full (or empty).

use std::sync::atomic::{AtomicU32, Ordering};

/// A ring's memory: where its indices, flags and entries are. Either a
/// mapping of the socket ([`super::socket`]) or, in tests, a buffer.
pub(crate) struct RingMem<T> {
    pub(crate) producer: *const AtomicU32,
    pub(crate) consumer: *const AtomicU32,
    pub(crate) flags: *const AtomicU32,
    pub(crate) entries: *mut T,
    /// A power of two.
    pub(crate) size: u32,
}

impl<T> RingMem<T> {
    fn producer(&self) -> &AtomicU32 {
        // SAFETY: RingMem's constructor promised a live, aligned index.
        unsafe { &*self.producer }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as above.
        unsafe { &*self.consumer }
    }

    fn slot(&self, index: u32) -> *mut T {
        // SAFETY: masking keeps the offset inside the `size` entries.
        unsafe { self.entries.add((index & (self.size - 1)) as usize) }
    }
}

/// The user-space producer side (fill ring, TX ring).
pub(crate) struct Producer<T> {
    mem: RingMem<T>,
    /// The next index to write.
    cached_prod: u32,
    /// The consumer index plus size, as last read: writing up to it is
    /// safe.
    cached_cons: u32,
}

impl<T: Copy> Producer<T> {
    /// # Safety
    /// The pointers of `mem` must stay valid, aligned and shared with at
    /// most one consumer for the life of the producer, and `size` must be
    /// a power of two.
    pub(crate) unsafe fn new(mem: RingMem<T>) -> Self {
        let cached_prod = mem.producer().load(Ordering::Relaxed);
        let cached_cons = mem
            .consumer()
            .load(Ordering::Acquire)
            .wrapping_add(mem.size);
        Self {
            mem,
            cached_prod,
            cached_cons,
        }
    }

    /// How many entries can be written now (at least `wanted` if the
    /// consumer has freed that many).
    pub(crate) fn free(&mut self, wanted: u32) -> u32 {
        let free = self.cached_cons.wrapping_sub(self.cached_prod);
        if free >= wanted {
            return free;
        }
        self.cached_cons = self
            .mem
            .consumer()
            .load(Ordering::Acquire)
            .wrapping_add(self.mem.size);
        self.cached_cons.wrapping_sub(self.cached_prod)
    }

    /// Writes as many of `items` as fit and publishes them; returns how
    /// many.
    pub(crate) fn push(&mut self, items: &[T]) -> usize {
        let wanted = u32::try_from(items.len()).unwrap_or(u32::MAX);
        let n = self.free(wanted).min(wanted);
        for (i, item) in (0..n).zip(items) {
            // SAFETY: the slot is between the consumer's index and ours
            // plus `free`: the consumer is done with it.
            unsafe { self.mem.slot(self.cached_prod.wrapping_add(i)).write(*item) };
        }
        self.cached_prod = self.cached_prod.wrapping_add(n);
        self.mem
            .producer()
            .store(self.cached_prod, Ordering::Release);
        n as usize
    }

    /// Whether the kernel asked to be woken (`XDP_RING_NEED_WAKEUP`).
    pub(crate) fn needs_wakeup(&self) -> bool {
        // SAFETY: as in RingMem::producer.
        let flags = unsafe { &*self.mem.flags };
        flags.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    /// Entries written and not yet consumed.
    pub(crate) fn outstanding(&mut self) -> u32 {
        self.mem.size - self.free(self.mem.size)
    }
}

/// The user-space consumer side (RX ring, completion ring).
pub(crate) struct Consumer<T> {
    mem: RingMem<T>,
    /// The producer index as last read.
    cached_prod: u32,
    /// The next index to read.
    cached_cons: u32,
}

impl<T: Copy> Consumer<T> {
    /// # Safety
    /// As for [`Producer::new`], with at most one producer.
    pub(crate) unsafe fn new(mem: RingMem<T>) -> Self {
        let cached_cons = mem.consumer().load(Ordering::Relaxed);
        let cached_prod = mem.producer().load(Ordering::Acquire);
        Self {
            mem,
            cached_prod,
            cached_cons,
        }
    }

    /// Reads up to `max` entries into `out` and hands their slots back to
    /// the producer; returns how many.
    pub(crate) fn pop(&mut self, max: usize, out: &mut Vec<T>) -> usize {
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        let mut n = self.cached_prod.wrapping_sub(self.cached_cons);
        if n < max {
            self.cached_prod = self.mem.producer().load(Ordering::Acquire);
            n = self.cached_prod.wrapping_sub(self.cached_cons);
        }
        let n = n.min(max);
        for i in 0..n {
            // SAFETY: the slot is between our index and the producer's,
            // published with release and read after the acquire above.
            out.push(unsafe { self.mem.slot(self.cached_cons.wrapping_add(i)).read() });
        }
        if n > 0 {
            self.cached_cons = self.cached_cons.wrapping_add(n);
            self.mem
                .consumer()
                .store(self.cached_cons, Ordering::Release);
        }
        n as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring in a plain buffer: [producer, consumer, flags, pad, entries].
    struct TestRing {
        words: Box<[AtomicU32]>,
        entries: Box<[u64]>,
    }

    impl TestRing {
        fn new(size: u32, start: u32) -> Self {
            let words: Box<[AtomicU32]> = (0..4).map(|_| AtomicU32::new(0)).collect();
            words[0].store(start, Ordering::Relaxed);
            words[1].store(start, Ordering::Relaxed);
            Self {
                words,
                entries: vec![0u64; size as usize].into_boxed_slice(),
            }
        }

        fn mem(&mut self) -> RingMem<u64> {
            RingMem {
                producer: &raw const self.words[0],
                consumer: &raw const self.words[1],
                flags: &raw const self.words[2],
                entries: self.entries.as_mut_ptr(),
                size: self.entries.len() as u32,
            }
        }
    }

    fn pair(ring: &mut TestRing) -> (Producer<u64>, Consumer<u64>) {
        // SAFETY: the test ring outlives both ends within each test, and
        // its size is a power of two.
        unsafe { (Producer::new(ring.mem()), Consumer::new(ring.mem())) }
    }

    #[test]
    fn a_full_ring_takes_no_more_until_the_consumer_frees_slots() {
        let mut ring = TestRing::new(8, 0);
        let (mut p, mut c) = pair(&mut ring);
        assert_eq!(p.push(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]), 8);
        assert_eq!(p.push(&[11]), 0);
        assert_eq!(p.outstanding(), 8);
        let mut out = Vec::new();
        assert_eq!(c.pop(3, &mut out), 3);
        assert_eq!(out, [1, 2, 3]);
        assert_eq!(p.push(&[11, 12, 13, 14]), 3);
        out.clear();
        assert_eq!(c.pop(100, &mut out), 8);
        assert_eq!(out, [4, 5, 6, 7, 8, 11, 12, 13]);
        assert_eq!(c.pop(100, &mut out), 0);
    }

    #[test]
    fn indices_wrap_past_u32_max_without_losing_or_repeating_entries() {
        // Start 5 below the wrap: the indices cross u32::MAX mid-batch.
        let mut ring = TestRing::new(4, u32::MAX - 5);
        let (mut p, mut c) = pair(&mut ring);
        let mut next = 0u64;
        let mut seen = Vec::new();
        for round in 0..50 {
            let batch: Vec<u64> = (next..next + 3).collect();
            let pushed = p.push(&batch);
            next += pushed as u64;
            let mut out = Vec::new();
            c.pop(1 + round % 4, &mut out);
            seen.extend(out);
        }
        let mut out = Vec::new();
        c.pop(100, &mut out);
        seen.extend(out);
        assert_eq!(seen, (0..next).collect::<Vec<_>>());
        assert!(next > 40, "the ring moved {next} entries");
        // The index went past u32::MAX and on from 0.
        let producer = ring.words[0].load(Ordering::Relaxed);
        assert_eq!(producer, (u32::MAX - 5).wrapping_add(next as u32));
        assert!(
            producer < 1000,
            "the producer index did not wrap: {producer}"
        );
    }

    #[test]
    fn the_consumer_publishes_its_index_and_the_producer_its_own() {
        let mut ring = TestRing::new(4, 10);
        let (mut p, mut c) = pair(&mut ring);
        p.push(&[7, 8]);
        assert_eq!(ring.words[0].load(Ordering::Relaxed), 12);
        let mut out = Vec::new();
        c.pop(1, &mut out);
        assert_eq!(ring.words[1].load(Ordering::Relaxed), 11);
    }

    #[test]
    fn need_wakeup_is_the_flag_bit() {
        let mut ring = TestRing::new(4, 0);
        let (p, _c) = pair(&mut ring);
        assert!(!p.needs_wakeup());
        ring.words[2].store(libc::XDP_RING_NEED_WAKEUP, Ordering::Relaxed);
        assert!(p.needs_wakeup());
    }
}
