//! Control messages: what the kernel attaches to a received datagram or to a
//! transmit timestamp on the error queue, and the one this crate attaches to
//! a datagram whose transmit timestamp it wants.

use std::mem::size_of;
use std::ptr;

use crate::stamp::{Stamp, StampSource};

/// Control-message space per datagram: `SCM_TIMESTAMPING` (64 bytes with its
/// header), `SCM_TIMESTAMPNS` (32), `SO_RXQ_OVFL` (24), and on the error
/// queue `IP(V6)_RECVERR` with the offender's address (up to 64), with room
/// to spare.
pub(crate) const CONTROL_LEN: usize = 256;

/// Control-message space, aligned as `cmsghdr` needs.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub(crate) struct ControlBuf(pub(crate) [u8; CONTROL_LEN]);

impl ControlBuf {
    pub(crate) const fn new() -> Self {
        Self([0; CONTROL_LEN])
    }
}

/// `SCM_TSTAMP_SND`: the transmit timestamp taken when the driver got the
/// packet (`ee_info` of a timestamping error-queue message).
const SCM_TSTAMP_SND: u32 = 0;

/// What the control messages of one message said.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ControlFacts {
    /// The timestamp: software preferred on receive; on the error queue,
    /// whichever the kernel filled.
    pub(crate) stamp: Option<Stamp>,
    /// `SO_RXQ_OVFL`: datagrams the kernel dropped on this socket so far.
    pub(crate) drops: Option<u32>,
    /// A timestamping error-queue record of a sent packet (`SCM_TSTAMP_SND`),
    /// with its `ee_data` (the `SOF_TIMESTAMPING_OPT_ID` counter, when on).
    pub(crate) tx_record: Option<u32>,
}

/// Reads the control messages of `msg`.
///
/// # Safety
/// `msg` must be a header the kernel has just filled, whose `msg_control`
/// and `msg_controllen` describe a live, `cmsghdr`-aligned buffer.
pub(crate) unsafe fn read(msg: &libc::msghdr) -> ControlFacts {
    let mut facts = ControlFacts::default();
    let mut software = None;
    let mut hardware = None;
    // SAFETY: the caller guarantees the control pointer and length;
    // CMSG_FIRSTHDR/CMSG_NXTHDR stay within that length and return null at
    // its end.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !c.is_null() {
        // SAFETY: a non-null cmsghdr from CMSG_FIRSTHDR/NXTHDR lies within
        // the aligned control buffer.
        let header = unsafe { &*c };
        // SAFETY: CMSG_DATA of a header within the buffer points inside it.
        let data = unsafe { libc::CMSG_DATA(c) };
        let data_len = (header.cmsg_len as usize).saturating_sub(data as usize - c as usize);
        match (header.cmsg_level, header.cmsg_type) {
            (libc::SOL_SOCKET, libc::SCM_TIMESTAMPING)
                if data_len >= 3 * size_of::<libc::timespec>() =>
            {
                // SAFETY: the message carries three timespecs (software,
                // legacy, hardware), checked against its length above;
                // read_unaligned needs no alignment.
                let ts: [libc::timespec; 3] = unsafe { ptr::read_unaligned(data.cast()) };
                software = software.or(Stamp::from_timespec(&ts[0], StampSource::Kernel));
                hardware = hardware.or(Stamp::from_timespec(&ts[2], StampSource::Hardware));
            }
            (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS)
                if data_len >= size_of::<libc::timespec>() =>
            {
                // SAFETY: one timespec, length checked above.
                let ts: libc::timespec = unsafe { ptr::read_unaligned(data.cast()) };
                software = software.or(Stamp::from_timespec(&ts, StampSource::Kernel));
            }
            (libc::SOL_SOCKET, libc::SO_RXQ_OVFL) if data_len >= size_of::<u32>() => {
                // SAFETY: one u32, length checked above.
                facts.drops = Some(unsafe { ptr::read_unaligned(data.cast::<u32>()) });
            }
            (libc::SOL_IP, libc::IP_RECVERR) | (libc::SOL_IPV6, libc::IPV6_RECVERR)
                if data_len >= size_of::<libc::sock_extended_err>() =>
            {
                // SAFETY: a sock_extended_err, length checked above.
                let err: libc::sock_extended_err = unsafe { ptr::read_unaligned(data.cast()) };
                if err.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING
                    && err.ee_errno == libc::ENOMSG as u32
                    && err.ee_info == SCM_TSTAMP_SND
                {
                    facts.tx_record = Some(err.ee_data);
                }
            }
            _ => {}
        }
        // SAFETY: as for CMSG_FIRSTHDR; `c` came from this message.
        c = unsafe { libc::CMSG_NXTHDR(msg, c) };
    }
    facts.stamp = software.or(hardware);
    facts
}

/// The control message that asks the kernel for the software transmit
/// timestamp of one datagram (`SO_TIMESTAMPING` as a control message, Linux
/// 4.7 and later): written at the start of `buf`; returns its length.
pub(crate) fn write_tx_stamp_request(buf: &mut ControlBuf) -> usize {
    let flags: u32 = libc::SOF_TIMESTAMPING_TX_SOFTWARE;
    let data_len = size_of::<u32>() as u32;
    // SAFETY: CMSG_LEN and CMSG_SPACE only compute sizes.
    let (len, space) = unsafe {
        (
            libc::CMSG_LEN(data_len) as usize,
            libc::CMSG_SPACE(data_len) as usize,
        )
    };
    let header = libc::cmsghdr {
        cmsg_len: len as _,
        cmsg_level: libc::SOL_SOCKET,
        cmsg_type: libc::SO_TIMESTAMPING,
    };
    buf.0[..space].fill(0);
    // SAFETY: the buffer is 8-byte aligned (cmsghdr's alignment) and
    // CMSG_SPACE(4) long at least; the flags go where CMSG_DATA points,
    // `len - 4` bytes in, written unaligned.
    unsafe {
        ptr::write(buf.0.as_mut_ptr().cast::<libc::cmsghdr>(), header);
        let data = buf.0.as_mut_ptr().add(len - size_of::<u32>());
        ptr::write_unaligned(data.cast::<u32>(), flags);
    }
    space
}
