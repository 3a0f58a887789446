//! Transmit timestamps from the socket's error queue.
//!
//! A datagram sent with a timestamp request ([`crate::Sender::send`]) comes
//! back on its socket's error queue once the network driver has it: a copy of
//! the packet as the driver saw it (link-layer, IP and UDP headers, then the
//! payload; cut to [`LOOPED_LEN`] bytes here) with an `SCM_TIMESTAMPING`
//! control message. [`TxStampReader::drain`] reads what is queued without
//! waiting; a caller matches each stamp to its datagram by the payload
//! ([`crate::looped_packet::parse`]).

use std::io;
use std::os::fd::AsRawFd;
use std::ptr;

use crate::control::{self, CONTROL_LEN, ControlBuf};
use crate::stamp::Stamp;

/// Packets read per system call.
const TX_BATCH: usize = 32;
/// Most system calls per [`TxStampReader::drain`], so that one call is
/// bounded however fast stamps arrive.
const MAX_CALLS: usize = 8;
/// Bytes kept of each looped packet: Ethernet with two VLAN tags (22), IPv6
/// with a few extension headers (up to 120), UDP (8) and an NTP header (48)
/// fit.
pub const LOOPED_LEN: usize = 256;

/// One transmit timestamp and the packet it stamped.
#[derive(Debug, Clone, Copy)]
pub struct TxStamp<'a> {
    /// When the driver took the packet (software), or when the card sent it
    /// (hardware).
    pub stamp: Stamp,
    /// The packet as the kernel looped it back, cut to [`LOOPED_LEN`] bytes.
    pub packet: &'a [u8],
    /// The kernel's `ee_data`: the datagram's number when the socket has
    /// `SOF_TIMESTAMPING_OPT_ID` (not used by this crate), else 0.
    pub id: u32,
}

/// Buffers for reading the error queue, allocated once.
pub struct TxStampReader {
    buffers: Box<[[u8; LOOPED_LEN]; TX_BATCH]>,
    iovecs: [libc::iovec; TX_BATCH],
    controls: [ControlBuf; TX_BATCH],
    headers: [libc::mmsghdr; TX_BATCH],
}

impl std::fmt::Debug for TxStampReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxStampReader").finish_non_exhaustive()
    }
}

impl TxStampReader {
    /// Buffers for [`TX_BATCH`] packets per call.
    #[must_use]
    pub fn new() -> Box<Self> {
        Box::new(Self {
            buffers: Box::new([[0; LOOPED_LEN]; TX_BATCH]),
            // SAFETY: iovec and mmsghdr are plain C structs for which all
            // zero bytes is valid.
            iovecs: unsafe { std::mem::zeroed() },
            controls: [ControlBuf::new(); TX_BATCH],
            // SAFETY: as above.
            headers: unsafe { std::mem::zeroed() },
        })
    }

    /// Reads the transmit timestamps queued on `socket` without waiting, and
    /// calls `each` for every one (other error-queue records are skipped).
    /// Returns how many records were read, stamps or not. Reads at most
    /// 256 records per call.
    ///
    /// # Errors
    /// A receive error other than an empty queue or an interrupted call.
    pub fn drain(
        &mut self,
        socket: &impl AsRawFd,
        mut each: impl FnMut(&TxStamp<'_>),
    ) -> io::Result<usize> {
        let mut total = 0;
        for _ in 0..MAX_CALLS {
            let n = self.read(socket)?;
            total += n;
            for i in 0..n {
                let h = &self.headers[i];
                // SAFETY: header `i` was just filled by the kernel; its
                // control pointer and length describe `self.controls[i]`.
                let facts = unsafe { control::read(&h.msg_hdr) };
                let (Some(stamp), Some(id)) = (facts.stamp, facts.tx_record) else {
                    continue;
                };
                let len = (h.msg_len as usize).min(LOOPED_LEN);
                each(&TxStamp {
                    stamp,
                    packet: &self.buffers[i][..len],
                    id,
                });
            }
            if n < TX_BATCH {
                break;
            }
        }
        Ok(total)
    }

    fn read(&mut self, socket: &impl AsRawFd) -> io::Result<usize> {
        for i in 0..TX_BATCH {
            self.iovecs[i] = libc::iovec {
                iov_base: self.buffers[i].as_mut_ptr().cast(),
                iov_len: LOOPED_LEN,
            };
            let h = &mut self.headers[i];
            h.msg_len = 0;
            h.msg_hdr.msg_name = ptr::null_mut();
            h.msg_hdr.msg_namelen = 0;
            h.msg_hdr.msg_iov = &raw mut self.iovecs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = self.controls[i].0.as_mut_ptr().cast();
            h.msg_hdr.msg_controllen = CONTROL_LEN as _;
            h.msg_hdr.msg_flags = 0;
        }
        loop {
            // SAFETY: every header points at a buffer and control area of
            // `self` with the lengths given above, alive and exclusively
            // borrowed for the call; MSG_DONTWAIT never blocks.
            let n = unsafe {
                libc::recvmmsg(
                    socket.as_raw_fd(),
                    self.headers.as_mut_ptr(),
                    TX_BATCH as libc::c_uint,
                    libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
                    ptr::null_mut(),
                )
            };
            if n >= 0 {
                return Ok(usize::try_from(n).unwrap_or(0).min(TX_BATCH));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => return Ok(0),
                _ => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::time::{SystemTime, UNIX_EPOCH};

    use super::*;
    use crate::{PeerName, Sender, StampSource, enable_timestamps, looped_packet};

    fn now_ns() -> i128 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_nanos() as i128
    }

    /// Every datagram sent with a request comes back stamped, with its own
    /// payload, after the clock read before its send and before the one
    /// after; datagrams sent without a request come back with nothing.
    fn stamps_come_back(local: &str) {
        let sender = UdpSocket::bind(local).expect("bind");
        let receiver = UdpSocket::bind(local).expect("bind");
        let support = enable_timestamps(&sender, true);
        assert!(support.transmit, "{support:?}");
        let to = PeerName::from(receiver.local_addr().expect("addr"));
        let mut tx = Sender::new();
        let mut reader = TxStampReader::new();
        let mut sent = Vec::new();
        for i in 0..40u8 {
            let payload = [i; 48];
            let before = now_ns();
            tx.send(&sender, &payload, Some(&to), i % 4 != 3)
                .expect("send");
            sent.push((i, before, now_ns()));
        }
        let mut seen = Vec::new();
        reader
            .drain(&sender, |t| {
                let udp = looped_packet::parse(t.packet).expect("a UDP packet");
                assert_eq!(udp.destination, receiver.local_addr().expect("addr"));
                assert_eq!(udp.payload.len(), 48);
                assert_eq!(t.stamp.source, StampSource::Kernel);
                seen.push((udp.payload[0], t.stamp.unix_nanos()));
            })
            .expect("drain");
        let wanted: Vec<u8> = (0..40).filter(|i| i % 4 != 3).collect();
        assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), wanted);
        for (i, at) in seen {
            let (_, before, after) = sent[usize::from(i)];
            assert!(
                before <= at && at <= after,
                "{i}: {before} <= {at} <= {after}"
            );
        }
        // The queue is empty now.
        assert_eq!(reader.drain(&sender, |_| panic!("more")).expect("drain"), 0);
        // Every datagram arrived, stamped or not (`sendmsg` or `sendto`).
        receiver
            .set_read_timeout(Some(std::time::Duration::from_secs(1)))
            .expect("timeout");
        let mut buf = [0u8; 64];
        for i in 0..40u8 {
            let n = receiver.recv(&mut buf).expect("a datagram");
            assert_eq!(&buf[..n], &[i; 48][..]);
        }
    }

    #[test]
    fn ipv4_transmit_stamps_come_back_with_their_datagrams() {
        stamps_come_back("127.0.0.1:0");
    }

    #[test]
    fn ipv6_transmit_stamps_come_back_with_their_datagrams() {
        if UdpSocket::bind("[::1]:0").is_err() {
            eprintln!("no IPv6 loopback; skipped");
            return;
        }
        stamps_come_back("[::1]:0");
    }
}
