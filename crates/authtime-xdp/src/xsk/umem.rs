//! The UMEM: one anonymous mapping cut into equal chunks, registered with
//! the socket, into which the kernel writes received frames and from which
//! it sends; and the bookkeeping of who holds each chunk.
//!
//! A chunk is always in exactly one place: free in user space, on the fill
//! ring (the kernel's to receive into), held by user space as a received
//! frame, or given to the kernel to send (TX ring, then completion ring).
//! Every move is checked against that state, so a chunk is never handed
//! out twice: a descriptor naming a chunk the kernel does not hold is
//! refused, not turned into a second `&mut` to the same bytes.

use std::io;
use std::ptr::NonNull;

/// Where a chunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// In user space, unused.
    Free,
    /// On the fill ring: the kernel may write a frame into it.
    Fill,
    /// Received, and lent to user space as an `RxFrame`.
    User,
    /// On the TX ring or not yet completed: the kernel reads it.
    Tx,
}

/// The chunk states, apart from the memory (testable without a mapping).
#[derive(Debug)]
pub(crate) struct Chunks {
    held: Vec<Held>,
    size: u32,
}

impl Chunks {
    pub(crate) fn new(count: u32, size: u32) -> Self {
        Self {
            held: vec![Held::Free; count as usize],
            size,
        }
    }

    /// The chunk an address (chunk start plus an offset) falls in.
    pub(crate) fn index_of(&self, addr: u64) -> Option<u32> {
        let index = u32::try_from(addr / u64::from(self.size)).ok()?;
        ((index as usize) < self.held.len()).then_some(index)
    }

    /// The address of chunk `index`'s first byte.
    pub(crate) fn base(&self, index: u32) -> u64 {
        u64::from(index) * u64::from(self.size)
    }

    pub(crate) fn size(&self) -> u32 {
        self.size
    }

    pub(crate) fn count(&self) -> u32 {
        self.held.len() as u32
    }

    /// Moves chunk `index` from `from` to `to`; false (and no move) when it
    /// is not in `from`.
    pub(crate) fn change(&mut self, index: u32, from: Held, to: Held) -> bool {
        match self.held.get_mut(index as usize) {
            Some(h) if *h == from => {
                *h = to;
                true
            }
            _ => false,
        }
    }

    /// How many chunks are in `state`.
    pub(crate) fn count_in(&self, state: Held) -> usize {
        self.held.iter().filter(|&&h| h == state).count()
    }
}

/// The mapping.
#[derive(Debug)]
pub(crate) struct Umem {
    area: NonNull<u8>,
    len: usize,
}

impl Umem {
    /// Maps `count` chunks of `size` bytes, zeroed and populated.
    pub(crate) fn map(count: u32, size: u32) -> io::Result<Self> {
        let len = usize::try_from(u64::from(count) * u64::from(size))
            .map_err(|_| io::Error::from_raw_os_error(libc::ENOMEM))?;
        // SAFETY: an anonymous private mapping of `len` bytes at an address
        // the kernel chooses; the result is checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let area =
            NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave null"))?;
        Ok(Self { area, len })
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.area.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once; the socket that
        // registered it is closed first (see Xsk's field order).
        unsafe { libc::munmap(self.area.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_moves_only_from_the_state_it_is_in() {
        let mut c = Chunks::new(4, 2048);
        assert!(c.change(1, Held::Free, Held::Fill));
        // Received once: lent to user space.
        assert!(c.change(1, Held::Fill, Held::User));
        // The same descriptor again (a duplicate): refused.
        assert!(!c.change(1, Held::Fill, Held::User));
        assert!(c.change(1, Held::User, Held::Tx));
        assert!(!c.change(1, Held::User, Held::Fill));
        assert!(c.change(1, Held::Tx, Held::Fill));
        assert_eq!(c.count_in(Held::Fill), 1);
        assert_eq!(c.count_in(Held::Free), 3);
        assert!(!c.change(9, Held::Free, Held::Fill));
    }

    #[test]
    fn addresses_map_to_chunks_and_out_of_range_ones_to_none() {
        let c = Chunks::new(4, 2048);
        assert_eq!(c.index_of(0), Some(0));
        assert_eq!(c.index_of(2048 + 256), Some(1));
        assert_eq!(c.index_of(4 * 2048 - 1), Some(3));
        assert_eq!(c.index_of(4 * 2048), None);
        assert_eq!(c.index_of(u64::MAX), None);
        assert_eq!(c.base(3), 3 * 2048);
    }

    #[test]
    fn the_mapping_is_zeroed_and_writable() {
        let u = Umem::map(2, 4096).expect("mmap");
        assert_eq!(u.len(), 8192);
        // SAFETY: the pointer covers `len` bytes of our own mapping.
        let bytes = unsafe { std::slice::from_raw_parts_mut(u.as_ptr(), u.len()) };
        assert!(bytes.iter().all(|&b| b == 0));
        bytes[8191] = 1;
    }
}
