//! The system calls that set an AF_XDP socket up: UMEM registration, ring
//! sizes, the kernel's ring layout, and the ring mappings.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::sync::atomic::AtomicU32;

use super::ring::RingMem;
use super::umem::Umem;
use crate::Error;

/// Capability socket(AF_XDP) needs.
pub(super) const SOCKET_CAPS: &str = "CAP_NET_RAW";

/// One mapped ring area.
pub(super) struct RingMap {
    ptr: *mut u8,
    len: usize,
}

impl Drop for RingMap {
    fn drop(&mut self) {
        // SAFETY: a mapping made in `map_ring`, unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Sets a `u32` socket option at level `SOL_XDP` (the ring sizes).
pub(super) fn setsockopt_u32(
    fd: &OwnedFd,
    opt: libc::c_int,
    value: u32,
    what: &'static str,
) -> Result<(), Error> {
    // SAFETY: `value` is a live u32 of the length passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            opt,
            (&raw const value).cast(),
            size_of::<u32>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(Error::from_sys(
            what,
            SOCKET_CAPS,
            io::Error::last_os_error(),
        ))
    }
}

/// Maps one ring of `entries` entries of `T` at page offset `pgoff`.
pub(super) fn map_ring<T>(
    fd: &OwnedFd,
    off: &libc::xdp_ring_offset,
    entries: u32,
    pgoff: i64,
) -> Result<(RingMap, RingMem<T>), Error> {
    let len = off.desc as usize + entries as usize * size_of::<T>();
    // SAFETY: a shared mapping of the socket's ring at the offset the
    // kernel defines for it; the result is checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd.as_raw_fd(),
            pgoff,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(Error::from_sys(
            "mmap of an AF_XDP ring",
            SOCKET_CAPS,
            io::Error::last_os_error(),
        ));
    }
    let ptr = p.cast::<u8>();
    // SAFETY: the offsets are the kernel's (XDP_MMAP_OFFSETS), inside the
    // mapping just made, and aligned for their types.
    let mem = unsafe {
        RingMem {
            producer: ptr.add(off.producer as usize).cast::<AtomicU32>(),
            consumer: ptr.add(off.consumer as usize).cast::<AtomicU32>(),
            flags: ptr.add(off.flags as usize).cast::<AtomicU32>(),
            entries: ptr.add(off.desc as usize).cast::<T>(),
            size: entries,
        }
    };
    Ok((RingMap { ptr, len }, mem))
}

/// Bytes reserved in front of each frame sent for the kernel's transmit
/// metadata (`struct xsk_tx_metadata`: flags, then the request or the
/// completion; 24 bytes since Linux 6.14 added the launch time).
pub(crate) const TX_META_LEN: u32 = 24;

/// Registers `umem` with the socket. With `tx_metadata`, it asks for
/// [`TX_META_LEN`] bytes of transmit metadata per frame
/// (`XDP_UMEM_TX_METADATA_LEN`, Linux 6.11 and later) and, if the kernel
/// refuses that, registers without it; returns whether the metadata is on.
pub(super) fn register_umem(
    fd: &OwnedFd,
    umem: &Umem,
    frame_size: u32,
    tx_metadata: bool,
) -> Result<bool, Error> {
    if tx_metadata {
        match umem_reg(fd, umem, frame_size, TX_META_LEN) {
            Ok(()) => return Ok(true),
            // A kernel without the flag (or without transmit metadata)
            // refuses it before taking the UMEM: register again without.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Err(e) => return Err(umem_error(umem, e)),
        }
    }
    umem_reg(fd, umem, frame_size, 0).map_err(|e| umem_error(umem, e))?;
    Ok(false)
}

fn umem_reg(fd: &OwnedFd, umem: &Umem, frame_size: u32, tx_metadata_len: u32) -> io::Result<()> {
    let reg = libc::xdp_umem_reg {
        addr: umem.as_ptr() as u64,
        len: umem.len() as u64,
        chunk_size: frame_size,
        headroom: 0,
        flags: if tx_metadata_len > 0 {
            libc::XDP_UMEM_TX_METADATA_LEN
        } else {
            0
        },
        tx_metadata_len,
    };
    // SAFETY: `reg` is a live xdp_umem_reg of the length passed, describing
    // a mapping the Xsk keeps until after the socket is closed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            libc::XDP_UMEM_REG,
            (&raw const reg).cast(),
            size_of::<libc::xdp_umem_reg>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn umem_error(umem: &Umem, e: io::Error) -> Error {
    if e.raw_os_error() == Some(libc::ENOBUFS) {
        Error::MemlockLimit {
            umem_bytes: umem.len() as u64,
        }
    } else {
        Error::from_sys("XDP_UMEM_REG", SOCKET_CAPS, e)
    }
}

pub(super) fn mmap_offsets(fd: &OwnedFd) -> Result<libc::xdp_mmap_offsets, Error> {
    // SAFETY: all-zero is a valid xdp_mmap_offsets.
    let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
    // SAFETY: `off` and `len` are live and describe each other.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            libc::XDP_MMAP_OFFSETS,
            (&raw mut off).cast(),
            &raw mut len,
        )
    };
    if r != 0 {
        return Err(Error::from_sys(
            "XDP_MMAP_OFFSETS",
            SOCKET_CAPS,
            io::Error::last_os_error(),
        ));
    }
    if len as usize != size_of::<libc::xdp_mmap_offsets>() {
        // Kernels before 5.4 give offsets without the flags word.
        return Err(Error::Sys {
            call: "XDP_MMAP_OFFSETS",
            source: io::Error::other("the kernel's ring layout has no flags (before Linux 5.4)"),
        });
    }
    Ok(off)
}
