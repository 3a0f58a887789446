//! The AF_XDP socket: creation (UMEM registration, ring sizes, ring
//! mappings, bind), receive, transmit, and the wake-ups the kernel asks for.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::marker::PhantomData;
use std::mem::size_of;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::time::{Duration, SystemTime};

use super::frame::{Returns, RxBatch, Stamped, Taken, TxSide};
use super::ring::{Consumer, Producer};
use super::setup::{
    RingMap, SOCKET_CAPS, TX_META_LEN, map_ring, mmap_offsets, register_umem, setsockopt_u32,
};
use super::umem::{Chunks, Held, Umem};
use crate::Error;
use crate::clock::TaiOffset;
use crate::iface::Interface;
use crate::program::{META_LEN, META_MAGIC};

/// How the kernel moves frames between the driver and the UMEM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindMode {
    /// The kernel copies each frame (`XDP_COPY`): every driver, including
    /// generic (skb) mode and veth.
    Copy,
    /// The driver DMAs into the UMEM (`XDP_ZEROCOPY`): drivers with AF_XDP
    /// zero-copy support (mlx5, i40e, ice, ...) in native mode.
    ZeroCopy,
}

/// Sizes and modes of an AF_XDP socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XskConfig {
    /// Bytes per UMEM chunk: 2048 or 4096 (one frame each).
    pub frame_size: u32,
    /// Chunks in the UMEM.
    pub frame_count: u32,
    /// Entries of the fill ring (a power of two).
    pub fill_size: u32,
    /// Entries of the completion ring (a power of two).
    pub completion_size: u32,
    /// Entries of the RX ring (a power of two).
    pub rx_size: u32,
    /// Entries of the TX ring (a power of two).
    pub tx_size: u32,
    /// Copy or zero-copy.
    pub bind: BindMode,
    /// Ask the kernel to say when it needs a system call to make progress
    /// (`XDP_USE_NEED_WAKEUP`), instead of always making one.
    pub need_wakeup: bool,
    /// Reserve transmit metadata in front of each frame so that
    /// [`RxFrame::send_stamped`](super::RxFrame::send_stamped) can ask for
    /// a frame's transmit time. Copy mode only (in zero-copy mode a driver
    /// stamps with its card's clock, which this crate cannot relate to the
    /// system's); the socket goes without when the kernel has no transmit
    /// metadata (before Linux 6.11): [`Xsk::tx_timestamps`] says.
    pub tx_timestamps: bool,
}

impl Default for XskConfig {
    fn default() -> Self {
        Self {
            frame_size: 2048,
            frame_count: 4096,
            fill_size: 4096,
            completion_size: 2048,
            rx_size: 2048,
            tx_size: 2048,
            bind: BindMode::Copy,
            need_wakeup: true,
            tx_timestamps: true,
        }
    }
}

impl XskConfig {
    fn validate(&self) -> Result<(), Error> {
        let bad = |why: String| Err(Error::InvalidConfig(why));
        if !matches!(self.frame_size, 2048 | 4096) {
            return bad(format!("frame size {} (2048 or 4096)", self.frame_size));
        }
        if self.frame_count == 0 {
            return bad("no frames".into());
        }
        for (name, n) in [
            ("fill", self.fill_size),
            ("completion", self.completion_size),
            ("rx", self.rx_size),
            ("tx", self.tx_size),
        ] {
            if !n.is_power_of_two() {
                return bad(format!("{name} ring size {n} is not a power of two"));
            }
        }
        Ok(())
    }
}

/// Counters the kernel keeps for the socket (`XDP_STATISTICS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XskStats {
    /// Frames dropped for reasons other than those below.
    pub rx_dropped: u64,
    /// Fill-ring descriptors the kernel found invalid.
    pub rx_invalid_descs: u64,
    /// TX descriptors the kernel found invalid.
    pub tx_invalid_descs: u64,
    /// Frames dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// Times the fill ring was empty when a frame came.
    pub rx_fill_ring_empty: u64,
    /// Times the TX ring was empty when the kernel looked.
    pub tx_ring_empty: u64,
    /// RX descriptors this side refused (a chunk the kernel did not hold,
    /// or a frame crossing its chunk's end): never seen from a sound
    /// kernel.
    pub refused_descs: u64,
    /// Transmit times handed back with their frames
    /// ([`Xsk::reclaim_completions_with`]).
    pub tx_timestamps: u64,
    /// Frames sent with a timestamp request whose completion carried a time
    /// later than the kick's return: the time the driver freed the frame
    /// (after the card sent it), not when it was handed over; not handed
    /// back.
    pub tx_timestamps_late: u64,
    /// Frames sent with a timestamp request whose completion carried none.
    pub tx_timestamps_missing: u64,
}

/// An AF_XDP socket bound to one queue of one interface, with its UMEM.
pub struct Xsk {
    fill: Producer<u64>,
    completion: Consumer<u64>,
    rx: Consumer<libc::xdp_desc>,
    /// The TX ring, shared with the frames of a batch ([`RxFrame::send`](super::RxFrame::send)).
    tx: RefCell<TxSide>,
    // Fields drop in order: the rings above only hold pointers into these
    // mappings, which are unmapped first; then the socket is closed (the
    // kernel lets go of the UMEM); then the UMEM is unmapped.
    _maps: [RingMap; 4],
    fd: OwnedFd,
    umem: Umem,
    chunks: Chunks,
    free: Vec<u32>,
    returns: RefCell<Returns>,
    pending_tx: VecDeque<libc::xdp_desc>,
    scratch: Vec<libc::xdp_desc>,
    scratch_addrs: Vec<u64>,
    /// Per chunk: the frame sent from it with a timestamp request, until
    /// its completion.
    stamped: Vec<Option<Stamped>>,
    /// Transmit metadata is on ([`XskConfig::tx_timestamps`]).
    tx_meta: bool,
    tx_stamp_counts: TxStampCounts,
    config: XskConfig,
    interface: Interface,
    queue: u32,
    refused: u64,
}

/// What became of the transmit timestamps asked for.
#[derive(Debug, Clone, Copy, Default)]
struct TxStampCounts {
    delivered: u64,
    late: u64,
    missing: u64,
}

/// A frame sent with [`RxFrame::send_stamped`](super::RxFrame::send_stamped),
/// given back by the completion ring with the time the kernel handed it to
/// the driver.
#[derive(Debug)]
pub struct TxCompletion<'a> {
    /// The frame as sent, from the Ethernet header on.
    pub frame: &'a [u8],
    /// When it was handed over: the kernel's `CLOCK_TAI` reading as the
    /// frame's buffer was released (`ktime_get_tai_fast_ns` in copy mode),
    /// on the real-time clock.
    pub sent: SystemTime,
}

// SAFETY: the raw pointers an Xsk holds point into mappings it owns; none
// of its state is tied to the thread that made it, and moving it moves
// the only handle to them (it is not Sync: the RefCell stays on one thread).
unsafe impl Send for Xsk {}

impl Xsk {
    /// Opens an AF_XDP socket on `queue` of `ifname` with `config`'s UMEM
    /// and rings, fills the fill ring, and binds. Frames reach it once an
    /// [`crate::Attachment`] on the same interface has
    /// [registered](crate::Attachment::register) it.
    ///
    /// # Errors
    /// [`Error::NoSuchInterface`], [`Error::QueueOutOfRange`],
    /// [`Error::NoAfXdp`], [`Error::MissingCapability`] (CAP_NET_RAW),
    /// [`Error::NoZeroCopy`], [`Error::QueueBusy`], [`Error::InvalidConfig`].
    pub fn open(ifname: &str, queue: u32, config: &XskConfig) -> Result<Self, Error> {
        config.validate()?;
        let interface = Interface::by_name(ifname)?;
        let queues = interface.rx_queues()?;
        if queue >= queues {
            return Err(Error::QueueOutOfRange {
                ifname: ifname.to_owned(),
                queue,
                queues,
            });
        }
        let umem = Umem::map(config.frame_count, config.frame_size)
            .map_err(|e| Error::from_sys("mmap of the UMEM", SOCKET_CAPS, e))?;
        // SAFETY: plain socket(2); the descriptor is checked and owned below.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::EAFNOSUPPORT) {
                Error::NoAfXdp
            } else {
                Error::from_sys("socket(AF_XDP)", SOCKET_CAPS, e)
            });
        }
        // SAFETY: a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let tx_meta = register_umem(
            &fd,
            &umem,
            config.frame_size,
            config.tx_timestamps && config.bind == BindMode::Copy,
        )?;
        setsockopt_u32(
            &fd,
            libc::XDP_UMEM_FILL_RING,
            config.fill_size,
            "XDP_UMEM_FILL_RING",
        )?;
        setsockopt_u32(
            &fd,
            libc::XDP_UMEM_COMPLETION_RING,
            config.completion_size,
            "XDP_UMEM_COMPLETION_RING",
        )?;
        setsockopt_u32(&fd, libc::XDP_RX_RING, config.rx_size, "XDP_RX_RING")?;
        setsockopt_u32(&fd, libc::XDP_TX_RING, config.tx_size, "XDP_TX_RING")?;
        let off = mmap_offsets(&fd)?;
        let (rx_map, rx_mem) = map_ring(&fd, &off.rx, config.rx_size, libc::XDP_PGOFF_RX_RING)?;
        let (tx_map, tx_mem) = map_ring(&fd, &off.tx, config.tx_size, libc::XDP_PGOFF_TX_RING)?;
        let (fill_map, fill_mem) = map_ring(
            &fd,
            &off.fr,
            config.fill_size,
            libc::XDP_UMEM_PGOFF_FILL_RING as i64,
        )?;
        let (comp_map, comp_mem) = map_ring(
            &fd,
            &off.cr,
            config.completion_size,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING as i64,
        )?;
        // SAFETY: each RingMem points into its own mapping, kept alive in
        // `_maps` as long as the rings; the kernel is the other side of each.
        let (fill, completion, rx, tx) = unsafe {
            (
                Producer::new(fill_mem),
                Consumer::new(comp_mem),
                Consumer::new(rx_mem),
                Producer::new(tx_mem),
            )
        };
        let chunks = Chunks::new(config.frame_count, config.frame_size);
        let tx = RefCell::new(TxSide {
            ring: tx,
            fd: fd.as_raw_fd(),
            kick_always: config.bind == BindMode::Copy || !config.need_wakeup,
        });
        let mut xsk = Self {
            fill,
            completion,
            rx,
            tx,
            _maps: [rx_map, tx_map, fill_map, comp_map],
            fd,
            umem,
            free: (0..chunks.count()).rev().collect(),
            chunks,
            returns: RefCell::default(),
            pending_tx: VecDeque::new(),
            scratch: Vec::new(),
            scratch_addrs: Vec::new(),
            stamped: vec![None; config.frame_count as usize],
            tx_meta,
            tx_stamp_counts: TxStampCounts::default(),
            config: config.clone(),
            interface,
            queue,
            refused: 0,
        };
        xsk.top_up_fill();
        xsk.bind()?;
        Ok(xsk)
    }

    fn bind(&self) -> Result<(), Error> {
        let mut flags = match self.config.bind {
            BindMode::Copy => libc::XDP_COPY,
            BindMode::ZeroCopy => libc::XDP_ZEROCOPY,
        };
        if self.config.need_wakeup {
            flags |= libc::XDP_USE_NEED_WAKEUP;
        }
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: self.interface.index,
            sxdp_queue_id: self.queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: `addr` is a live sockaddr_xdp of the length passed.
        let r = unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                (&raw const addr).cast(),
                size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        Err(match e.raw_os_error() {
            Some(libc::EBUSY) => Error::QueueBusy {
                ifname: self.interface.name.clone(),
                queue: self.queue,
            },
            Some(libc::EOPNOTSUPP | libc::EPROTONOSUPPORT)
                if self.config.bind == BindMode::ZeroCopy =>
            {
                Error::NoZeroCopy {
                    ifname: self.interface.name.clone(),
                    source: e,
                }
            }
            _ => Error::from_sys("bind(AF_XDP)", SOCKET_CAPS, e),
        })
    }

    /// Whether frames can be sent with a transmit-timestamp request
    /// ([`XskConfig::tx_timestamps`], granted).
    #[must_use]
    pub fn tx_timestamps(&self) -> bool {
        self.tx_meta
    }

    /// The queue the socket is bound to.
    #[must_use]
    pub fn queue(&self) -> u32 {
        self.queue
    }

    /// The interface it is bound to.
    #[must_use]
    pub fn interface(&self) -> &Interface {
        &self.interface
    }

    pub(crate) fn raw_fd(&self) -> u32 {
        self.fd.as_raw_fd() as u32
    }

    /// Waits up to `timeout` for frames on the RX ring; true when some
    /// came.
    ///
    /// # Errors
    /// poll(2) failed.
    pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one live pollfd.
        let r = unsafe { libc::poll(&raw mut pfd, 1, ms) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r > 0 && pfd.revents & libc::POLLIN != 0)
        }
    }

    /// Takes up to `max` frames off the RX ring. Iterate the batch for the
    /// frames; each one not replied to goes back to the fill ring when it
    /// is dropped.
    pub fn recv_batch(&mut self, max: usize) -> RxBatch<'_> {
        self.settle();
        self.scratch.clear();
        let n = self.rx.pop(max, &mut self.scratch);
        if n == 0 && self.config.need_wakeup && self.fill.needs_wakeup() {
            self.wake_rx();
        }
        let user_time = SystemTime::now();
        let tai = if n > 0 { TaiOffset::read().ok() } else { None };
        let mut taken = Vec::with_capacity(n);
        let descs = std::mem::take(&mut self.scratch);
        for d in &descs {
            match self.take(d) {
                Some(t) => taken.push(t),
                None => self.refused += 1,
            }
        }
        self.scratch = descs;
        RxBatch {
            taken: taken.into_iter(),
            base: self.umem.as_ptr(),
            returns: &self.returns,
            tx: &self.tx,
            tai,
            user_time,
            _umem: PhantomData,
        }
    }

    /// Checks an RX descriptor against the chunk bookkeeping, moves its
    /// chunk to user space, and reads (and clears) the metadata.
    fn take(&mut self, d: &libc::xdp_desc) -> Option<Taken> {
        let chunk = self.chunks.index_of(d.addr)?;
        let offset = d.addr - self.chunks.base(chunk);
        let size = u64::from(self.chunks.size());
        if offset + u64::from(d.len) > size {
            return None;
        }
        if !self.chunks.change(chunk, Held::Fill, Held::User) {
            return None;
        }
        let tai_ns = if offset >= META_LEN as u64 {
            // SAFETY: the chunk is ours now (moved to User above) and the
            // META_LEN bytes before the frame are inside it.
            let meta = unsafe {
                std::slice::from_raw_parts_mut(
                    self.umem.as_ptr().add((d.addr as usize) - META_LEN),
                    META_LEN,
                )
            };
            read_meta(meta)
        } else {
            None
        };
        Some(Taken {
            chunk,
            addr: d.addr,
            len: d.len,
            room: (size - offset) as u32,
            tai_ns,
            tx_meta: self.tx_meta && offset >= u64::from(TX_META_LEN),
        })
    }

    /// Moves what frames gave back to the rings' side: recycled chunks to
    /// the fill ring, replies to the TX queue.
    fn settle(&mut self) {
        let mut returns = std::mem::take(&mut *self.returns.borrow_mut());
        for chunk in returns.recycle.drain(..) {
            if self.chunks.change(chunk, Held::User, Held::Free) {
                self.free.push(chunk);
            }
        }
        for chunk in returns.sent.drain(..) {
            if !self.chunks.change(chunk, Held::User, Held::Tx) {
                self.refused += 1;
            }
            // A request whose completion never came is forgotten when the
            // chunk is sent again (re-recorded below if stamped again).
            if let Some(slot) = self.stamped.get_mut(chunk as usize) {
                *slot = None;
            }
        }
        for s in returns.stamped.drain(..) {
            if let Some(slot) = self.stamped.get_mut(s.chunk as usize) {
                *slot = Some(s);
            }
        }
        for (chunk, addr, len) in returns.replies.drain(..) {
            if let Some(slot) = self.stamped.get_mut(chunk as usize) {
                *slot = None;
            }
            if self.chunks.change(chunk, Held::User, Held::Tx) {
                self.pending_tx.push_back(libc::xdp_desc {
                    addr,
                    len,
                    options: 0,
                });
            }
        }
        // Keep the vectors' capacity.
        *self.returns.borrow_mut() = returns;
        self.top_up_fill();
    }

    /// Puts free chunks on the fill ring, as many as fit.
    fn top_up_fill(&mut self) {
        if self.free.is_empty() {
            return;
        }
        let room = self.fill.free(self.free.len() as u32) as usize;
        let n = room.min(self.free.len());
        let start = self.free.len() - n;
        self.scratch_addrs.clear();
        for &chunk in &self.free[start..] {
            let moved = self.chunks.change(chunk, Held::Free, Held::Fill);
            debug_assert!(moved);
            self.scratch_addrs.push(self.chunks.base(chunk));
        }
        let pushed = self.fill.push(&self.scratch_addrs);
        debug_assert_eq!(pushed, n);
        self.free.truncate(start);
    }

    /// Puts the replies given so far on the TX ring (as many as fit; the
    /// rest wait for the next call) and, when the kernel needs it, kicks
    /// it to send them. Returns how many went on the ring.
    ///
    /// # Errors
    /// The kick (sendto) failed other than by being busy.
    pub fn tx_submit(&mut self) -> io::Result<usize> {
        self.settle();
        let tx = self.tx.get_mut();
        let (a, b) = self.pending_tx.as_slices();
        let mut pushed = tx.ring.push(a);
        if pushed == a.len() {
            pushed += tx.ring.push(b);
        }
        self.pending_tx.drain(..pushed);
        let waiting = tx.ring.outstanding() > 0;
        // In copy mode the kernel sends only inside sendmsg; in zero-copy
        // mode the driver asks for a kick through the need-wakeup flag.
        if waiting && (tx.kick_always || tx.ring.needs_wakeup()) {
            self.kick()?;
        }
        Ok(pushed)
    }

    /// Tells the kernel there is something on the TX ring
    /// (`sendto(MSG_DONTWAIT)`). A busy or full kernel is not an error:
    /// the next kick retries.
    ///
    /// # Errors
    /// sendto failed for another reason.
    pub fn kick(&self) -> io::Result<()> {
        kick_fd(self.fd.as_raw_fd())
    }

    /// Lets the kernel refill its receive side when the fill ring asked
    /// for a wake-up (`recvfrom(MSG_DONTWAIT)`, as libxdp does).
    fn wake_rx(&self) {
        // SAFETY: a zero-length receive with no buffer and no address.
        unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
        }
    }

    /// Takes the chunks the kernel has sent off the completion ring and
    /// puts them back on the fill ring; returns how many.
    pub fn reclaim_completions(&mut self) -> usize {
        self.reclaim_completions_with(|_| {})
    }

    /// As [`Xsk::reclaim_completions`], handing each frame sent with
    /// [`RxFrame::send_stamped`](super::RxFrame::send_stamped) to `sent`
    /// with its transmit time, before its chunk is reused. A completion
    /// without a time, or with one later than the kick that sent the frame
    /// returned (a driver that frees frames once the card has sent them,
    /// in copy mode), is counted ([`XskStats`]) and not handed over.
    pub fn reclaim_completions_with(&mut self, mut sent: impl FnMut(TxCompletion<'_>)) -> usize {
        // First what frames sent themselves: their chunks must be known as
        // being sent before their completions are read.
        self.settle();
        self.scratch_addrs.clear();
        let mut addrs = std::mem::take(&mut self.scratch_addrs);
        let n = self.completion.pop(usize::MAX, &mut addrs);
        let mut tai: Option<TaiOffset> = None;
        for &addr in &addrs {
            let Some(chunk) = self.chunks.index_of(addr) else {
                self.refused += 1;
                continue;
            };
            if !self.chunks.change(chunk, Held::Tx, Held::Free) {
                self.refused += 1;
                continue;
            }
            if let Some(s) = self.stamped[chunk as usize].take()
                && s.addr == addr
            {
                // SAFETY: the chunk is back in user space (moved from Tx
                // above, not yet on the fill ring); the metadata's
                // TX_META_LEN bytes in front of the frame and the frame's
                // `len` bytes were inside it when it was sent
                // (`push_and_kick` checked both).
                let (meta, frame) = unsafe {
                    let at = self.umem.as_ptr().add(addr as usize);
                    (
                        std::slice::from_raw_parts(
                            at.sub(TX_META_LEN as usize),
                            TX_META_LEN as usize,
                        ),
                        std::slice::from_raw_parts(at, s.len as usize),
                    )
                };
                match completion_time(meta, s.kicked_tai_ns) {
                    Completion::Time(ns) => {
                        let offset = *tai.get_or_insert_with(|| {
                            TaiOffset::read().unwrap_or(TaiOffset::from_difference_ns(0))
                        });
                        self.tx_stamp_counts.delivered += 1;
                        sent(TxCompletion {
                            frame,
                            sent: offset.tai_to_system_time(ns),
                        });
                    }
                    Completion::Late => self.tx_stamp_counts.late += 1,
                    Completion::Missing => self.tx_stamp_counts.missing += 1,
                }
            }
            self.free.push(chunk);
        }
        addrs.clear();
        self.scratch_addrs = addrs;
        self.top_up_fill();
        n
    }

    /// Chunks in each place: (free in user space, on the fill ring, lent
    /// out as frames, being sent).
    #[must_use]
    pub fn chunk_census(&self) -> (usize, usize, usize, usize) {
        (
            self.chunks.count_in(Held::Free),
            self.chunks.count_in(Held::Fill),
            self.chunks.count_in(Held::User),
            self.chunks.count_in(Held::Tx),
        )
    }

    /// The kernel's counters for this socket, and this side's.
    ///
    /// # Errors
    /// getsockopt failed.
    pub fn stats(&self) -> io::Result<XskStats> {
        // SAFETY: all-zero is a valid xdp_statistics.
        let mut s: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: `s` and `len` are live and describe each other.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                (&raw mut s).cast(),
                &raw mut len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(XskStats {
            rx_dropped: s.rx_dropped,
            rx_invalid_descs: s.rx_invalid_descs,
            tx_invalid_descs: s.tx_invalid_descs,
            rx_ring_full: s.rx_ring_full,
            rx_fill_ring_empty: s.rx_fill_ring_empty_descs,
            tx_ring_empty: s.tx_ring_empty_descs,
            refused_descs: self.refused,
            tx_timestamps: self.tx_stamp_counts.delivered,
            tx_timestamps_late: self.tx_stamp_counts.late,
            tx_timestamps_missing: self.tx_stamp_counts.missing,
        })
    }
}

impl std::fmt::Debug for Xsk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Xsk")
            .field("interface", &self.interface)
            .field("queue", &self.queue)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Tells the kernel there is something on the TX ring of socket `fd`
/// (`sendto(MSG_DONTWAIT)`); a busy or full kernel is not an error.
pub(crate) fn kick_fd(fd: RawFd) -> io::Result<()> {
    // SAFETY: a zero-length send with no buffer and no address.
    let r = unsafe {
        libc::sendto(
            fd,
            std::ptr::null(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null(),
            0,
        )
    };
    if r >= 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOBUFS | libc::EAGAIN | libc::EBUSY | libc::ENETDOWN) => Ok(()),
        _ => Err(e),
    }
}

/// What a completed frame's transmit metadata says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Completion {
    /// The kernel's `CLOCK_TAI` time of the hand-over.
    Time(u64),
    /// A time later than the kick returned: the completion's, not the
    /// hand-over's.
    Late,
    /// No time (the driver does not stamp).
    Missing,
}

/// Reads the completion time from `meta` (`struct xsk_tx_metadata`: flags,
/// then `completion.tx_timestamp`), for a frame whose kick returned at
/// `kicked_tai_ns`.
fn completion_time(meta: &[u8], kicked_tai_ns: u64) -> Completion {
    let Some(ns) = meta
        .get(8..16)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_ne_bytes)
    else {
        return Completion::Missing;
    };
    match ns {
        0 => Completion::Missing,
        ns if ns > kicked_tai_ns => Completion::Late,
        ns => Completion::Time(ns),
    }
}

/// The timestamp in a frame's metadata when the XDP program wrote one; the
/// magic is cleared so that a later frame in the same chunk without
/// metadata does not read this one's.
fn read_meta(meta: &mut [u8]) -> Option<u64> {
    let magic = u32::from_ne_bytes(meta[8..12].try_into().ok()?);
    if magic != META_MAGIC {
        return None;
    }
    meta[8..12].fill(0);
    Some(u64::from_ne_bytes(meta[..8].try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_read_once_and_only_with_the_magic() {
        let mut meta = [0u8; META_LEN];
        meta[..8].copy_from_slice(&123_456_789u64.to_ne_bytes());
        assert_eq!(read_meta(&mut meta), None);
        meta[8..12].copy_from_slice(&META_MAGIC.to_ne_bytes());
        assert_eq!(read_meta(&mut meta), Some(123_456_789));
        assert_eq!(read_meta(&mut meta), None);
    }

    #[test]
    fn completion_times_are_taken_only_up_to_the_kick() {
        let mut meta = [0u8; TX_META_LEN as usize];
        meta[..8].copy_from_slice(&1u64.to_ne_bytes());
        assert_eq!(completion_time(&meta, 1_000), Completion::Missing);
        meta[8..16].copy_from_slice(&900u64.to_ne_bytes());
        assert_eq!(completion_time(&meta, 1_000), Completion::Time(900));
        assert_eq!(completion_time(&meta, 900), Completion::Time(900));
        assert_eq!(completion_time(&meta, 899), Completion::Late);
        assert_eq!(completion_time(&meta[..12], 1_000), Completion::Missing);
    }

    #[test]
    fn configs_are_checked() {
        assert!(XskConfig::default().validate().is_ok());
        let odd = XskConfig {
            rx_size: 1000,
            ..XskConfig::default()
        };
        assert!(matches!(odd.validate(), Err(Error::InvalidConfig(_))));
        let big = XskConfig {
            frame_size: 8192,
            ..XskConfig::default()
        };
        assert!(big.validate().is_err());
    }
}
