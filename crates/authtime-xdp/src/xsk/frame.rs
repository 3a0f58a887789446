//! Received frames as user space sees them: a batch, and in it each frame's
//! bytes in its UMEM chunk, its receive time, and what becomes of the chunk
//! (recycled to the fill ring, or sent back as a reply from the same chunk).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::time::SystemTime;

use super::ring::Producer;
use super::setup::TX_META_LEN;
use crate::clock::TaiOffset;

/// Chunks whose frames user space is done with, collected while frames are
/// alive and moved to the rings by the socket's next `&mut self` call.
#[derive(Debug, Default)]
pub(crate) struct Returns {
    /// Chunk indices to give back to the fill ring.
    pub(crate) recycle: Vec<u32>,
    /// Replies: (chunk, address, length) to put on the TX ring.
    pub(crate) replies: Vec<(u32, u64, u32)>,
    /// Chunks [`RxFrame::send`] put on the TX ring itself: the bookkeeping
    /// moves them to "being sent" at the socket's next `&mut self` call,
    /// which every call that reads the completion ring makes first.
    pub(crate) sent: Vec<u32>,
    /// Of those, the ones sent with a transmit-timestamp request
    /// ([`RxFrame::send_stamped`]).
    pub(crate) stamped: Vec<Stamped>,
}

/// A frame sent with a transmit-timestamp request, until its completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamped {
    pub(crate) chunk: u32,
    pub(crate) addr: u64,
    pub(crate) len: u32,
    /// `CLOCK_TAI` read when the kick returned: a completion stamped later
    /// than this was not taken when the frame was handed over.
    pub(crate) kicked_tai_ns: u64,
}

/// The TX ring as frames reach it to send at once ([`RxFrame::send`]), and
/// what the kick needs.
pub(crate) struct TxSide {
    pub(crate) ring: Producer<libc::xdp_desc>,
    pub(crate) fd: std::os::fd::RawFd,
    /// Kick after every push (copy mode, or no need-wakeup flag); else only
    /// when the ring's need-wakeup flag says so.
    pub(crate) kick_always: bool,
}

/// One frame the socket took from the RX ring, before it is lent out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Taken {
    pub(crate) chunk: u32,
    pub(crate) addr: u64,
    pub(crate) len: u32,
    /// Bytes from `addr` to the end of the chunk.
    pub(crate) room: u32,
    pub(crate) tai_ns: Option<u64>,
    /// The socket has transmit metadata and the chunk has room for it in
    /// front of the frame.
    pub(crate) tx_meta: bool,
}

/// Where a frame's receive time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampSource {
    /// The XDP program's `bpf_ktime_get_tai_ns()` reading, from the
    /// frame's metadata: taken in the driver, before any queueing.
    XdpMetadata,
    /// `CLOCK_REALTIME` read when user space took the batch off the RX ring
    /// (no metadata came with the frame): later by the time the frame
    /// waited in the ring.
    UserSpace,
}

/// A frame's receive time, on the real-time clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxStamp {
    /// The time.
    pub time: SystemTime,
    /// Where it came from.
    pub source: StampSource,
}

/// The frames of one `Xsk::recv_batch`, lent out one at a time by
/// iteration. Frames not taken from the batch go back to the fill ring.
pub struct RxBatch<'a> {
    pub(crate) taken: std::vec::IntoIter<Taken>,
    pub(crate) base: *mut u8,
    pub(crate) returns: &'a RefCell<Returns>,
    pub(crate) tx: &'a RefCell<TxSide>,
    pub(crate) tai: Option<TaiOffset>,
    pub(crate) user_time: SystemTime,
    /// The batch stands for the exclusive borrow of the UMEM.
    pub(crate) _umem: PhantomData<&'a mut [u8]>,
}

impl<'a> Iterator for RxBatch<'a> {
    type Item = RxFrame<'a>;

    fn next(&mut self) -> Option<RxFrame<'a>> {
        let t = self.taken.next()?;
        // SAFETY: `t` came from a descriptor whose chunk the socket moved
        // from the fill ring to user space (checked in `Xsk::recv_batch`),
        // so no other frame of this or any batch covers it and the kernel
        // no longer writes it; `addr + room` is the chunk's end, inside the
        // UMEM mapping, which outlives `'a` (the batch borrows the socket).
        let buf = unsafe {
            std::slice::from_raw_parts_mut(self.base.add(t.addr as usize), t.room as usize)
        };
        // SAFETY: as above, for the TX_META_LEN bytes right in front of the
        // frame, inside the same chunk (`tx_meta` is only set when the
        // frame's offset in its chunk leaves room for them), and disjoint
        // from `buf`.
        let tx_meta = t.tx_meta.then(|| unsafe {
            std::slice::from_raw_parts_mut(
                self.base.add(t.addr as usize - TX_META_LEN as usize),
                TX_META_LEN as usize,
            )
        });
        let stamp = match (t.tai_ns, self.tai) {
            (Some(ns), Some(offset)) => RxStamp {
                time: offset.tai_to_system_time(ns),
                source: StampSource::XdpMetadata,
            },
            _ => RxStamp {
                time: self.user_time,
                source: StampSource::UserSpace,
            },
        };
        Some(RxFrame {
            buf,
            len: t.len as usize,
            chunk: t.chunk,
            addr: t.addr,
            tai_ns: t.tai_ns,
            stamp,
            tx_meta,
            returns: self.returns,
            tx: self.tx,
            done: false,
        })
    }
}

impl Drop for RxBatch<'_> {
    fn drop(&mut self) {
        let mut returns = self.returns.borrow_mut();
        returns.recycle.extend(self.taken.by_ref().map(|t| t.chunk));
    }
}

/// A received frame, in its UMEM chunk. Dropping it gives the chunk back
/// for receiving; [`RxFrame::reply`] sends from it instead.
pub struct RxFrame<'a> {
    buf: &'a mut [u8],
    len: usize,
    chunk: u32,
    addr: u64,
    tai_ns: Option<u64>,
    stamp: RxStamp,
    /// Where the transmit metadata goes, when the socket has it.
    tx_meta: Option<&'a mut [u8]>,
    returns: &'a RefCell<Returns>,
    tx: &'a RefCell<TxSide>,
    done: bool,
}

impl std::fmt::Debug for RxFrame<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RxFrame")
            .field("addr", &self.addr)
            .field("len", &self.len)
            .field("stamp", &self.stamp)
            .finish_non_exhaustive()
    }
}

impl RxFrame<'_> {
    /// The frame as received, from the Ethernet header on.
    #[must_use]
    pub fn data(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The frame, writable (to build a reply in place).
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }

    /// Everything from the frame's first byte to the end of its chunk: the
    /// room a reply built here may take.
    pub fn buffer_mut(&mut self) -> &mut [u8] {
        self.buf
    }

    /// Bytes a reply from this chunk may have.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// When the frame was received.
    #[must_use]
    pub fn stamp(&self) -> RxStamp {
        self.stamp
    }

    /// The XDP program's `CLOCK_TAI` reading, when the metadata came.
    #[must_use]
    pub fn tai_ns(&self) -> Option<u64> {
        self.tai_ns
    }

    /// The frame's address in the UMEM (chunk start plus the kernel's
    /// headroom).
    #[must_use]
    pub fn umem_addr(&self) -> u64 {
        self.addr
    }

    /// Sends the first `len` bytes of [`RxFrame::buffer_mut`] from this
    /// chunk, no copy: the reply goes on the TX ring at the socket's next
    /// `tx_submit`, and the chunk returns to the fill ring once the kernel
    /// reports it sent (`reclaim_completions`).
    ///
    /// # Panics
    /// If `len` exceeds [`RxFrame::capacity`].
    pub fn reply(mut self, len: usize) {
        assert!(
            len <= self.buf.len(),
            "a reply of {len} bytes in a chunk with room for {}",
            self.buf.len()
        );
        self.done = true;
        let mut returns = self.returns.borrow_mut();
        returns.replies.push((self.chunk, self.addr, len as u32));
    }

    /// Sends the first `len` bytes of [`RxFrame::buffer_mut`] from this
    /// chunk now, no copy: the descriptor goes on the TX ring and the
    /// kernel is kicked before this returns when it needs a kick (always in
    /// copy mode, where it transmits only inside that call). For a reply
    /// whose contents depend on when it leaves (a transmit timestamp), this
    /// keeps the other frames of the batch from waiting in front of it. The
    /// chunk returns to the fill ring once the kernel reports it sent
    /// (`reclaim_completions`). Returns false when the TX ring was full: the
    /// reply then waits for the socket's next `tx_submit`, as with
    /// [`RxFrame::reply`].
    ///
    /// # Errors
    /// The kick (sendto) failed other than by being busy; the frame is on
    /// the ring and goes out with the next kick.
    ///
    /// # Panics
    /// If `len` exceeds [`RxFrame::capacity`].
    pub fn send(self, len: usize) -> std::io::Result<bool> {
        self.push_and_kick(len, false).map(|(queued, _)| queued)
    }

    /// Whether [`RxFrame::send_stamped`] can ask for this frame's transmit
    /// time (the socket has transmit metadata: [`Xsk::tx_timestamps`](super::Xsk::tx_timestamps)).
    #[must_use]
    pub fn can_stamp(&self) -> bool {
        self.tx_meta.is_some()
    }

    /// As [`RxFrame::send`], asking the kernel for the frame's transmit
    /// time (`XDP_TXMD_FLAGS_TIMESTAMP` in the frame's transmit metadata),
    /// which [`Xsk::reclaim_completions_with`](super::Xsk::reclaim_completions_with)
    /// hands back with the frame. Returns whether the frame went on the TX
    /// ring and its time was asked for: false when the ring was full (the
    /// reply then waits for the next `tx_submit`, unstamped) or the socket
    /// has no transmit metadata (the frame is sent unstamped).
    ///
    /// # Errors
    /// As [`RxFrame::send`].
    ///
    /// # Panics
    /// If `len` exceeds [`RxFrame::capacity`].
    pub fn send_stamped(self, len: usize) -> std::io::Result<bool> {
        let stamp = self.tx_meta.is_some();
        self.push_and_kick(len, stamp)
            .map(|(queued, stamped)| queued && stamped)
    }

    /// Puts the frame on the TX ring (with a timestamp request when
    /// `stamp`) and kicks when needed; returns (on the ring, stamped).
    fn push_and_kick(mut self, len: usize, stamp: bool) -> std::io::Result<(bool, bool)> {
        assert!(
            len <= self.buf.len(),
            "a reply of {len} bytes in a chunk with room for {}",
            self.buf.len()
        );
        self.done = true;
        let mut options = 0;
        if stamp && let Some(meta) = self.tx_meta.as_deref_mut() {
            // struct xsk_tx_metadata: flags (u64), then the request (zero:
            // no checksum offload, no launch time), which the kernel
            // overwrites with the completion's timestamp.
            meta.fill(0);
            meta[..8].copy_from_slice(&u64::from(libc::XDP_TXMD_FLAGS_TIMESTAMP).to_ne_bytes());
            options = libc::XDP_TX_METADATA;
        }
        let desc = libc::xdp_desc {
            addr: self.addr,
            len: len as u32,
            options,
        };
        let mut tx = self.tx.borrow_mut();
        if tx.ring.push(std::slice::from_ref(&desc)) == 0 {
            drop(tx);
            self.returns
                .borrow_mut()
                .replies
                .push((self.chunk, self.addr, len as u32));
            return Ok((false, false));
        }
        self.returns.borrow_mut().sent.push(self.chunk);
        if tx.kick_always || tx.ring.needs_wakeup() {
            super::socket::kick_fd(tx.fd)?;
        }
        drop(tx);
        if options == 0 {
            return Ok((true, false));
        }
        // In copy mode the kernel has built, sent and completed the frame
        // inside the kick: a timestamp later than this is a completion's
        // (a driver freeing the frame after the card sent it), not the
        // hand-over's.
        let Some(kicked_tai_ns) = crate::clock::tai_now_ns() else {
            return Ok((true, false));
        };
        self.returns.borrow_mut().stamped.push(Stamped {
            chunk: self.chunk,
            addr: self.addr,
            len: len as u32,
            kicked_tai_ns,
        });
        Ok((true, true))
    }
}

impl Drop for RxFrame<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.returns.borrow_mut().recycle.push(self.chunk);
        }
    }
}
