//! Batched receive: up to [`BATCH`] datagrams per `recvmmsg`, each with its
//! source address and kernel receive timestamp.
//!
//! [`RecvBatch`] owns the datagram buffers, source addresses and control
//! space, allocated once. The pointers handed to the kernel are rebuilt from
//! `&mut self` before every call, so they never outlive or alias the buffers.

use std::io;
use std::mem::size_of;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::ptr;

use crate::control::{self, CONTROL_LEN, ControlBuf};
use crate::peer::PeerName;
use crate::stamp::Stamp;

/// Datagrams per system call.
pub const BATCH: usize = 32;
/// Receive buffer per datagram: an NTP request with extension fields and a
/// Roughtime request fit; longer datagrams are flagged as truncated.
pub const DATAGRAM_LEN: usize = 2048;

/// One received datagram.
#[derive(Debug, Clone, Copy)]
pub struct Datagram<'a> {
    /// Its bytes (at most [`DATAGRAM_LEN`]).
    pub data: &'a [u8],
    /// Who sent it; `None` for an address family other than IPv4 and IPv6.
    pub peer: Option<SocketAddr>,
    /// The kernel's receive timestamp, when timestamps are on.
    pub stamp: Option<Stamp>,
    /// Whether it was longer than the buffer (and cut).
    pub truncated: bool,
}

/// Buffers for one `recvmmsg` call of up to `N` datagrams ([`BATCH`]
/// unless a server asks for more: Roughtime answers a batch under one
/// signature, so it takes 64). Memory is `N` × ([`DATAGRAM_LEN`] + about
/// 500 bytes), allocated once.
pub struct RecvBatch<const N: usize = BATCH> {
    buffers: Box<[[u8; DATAGRAM_LEN]; N]>,
    names: [PeerName; N],
    iovecs: [libc::iovec; N],
    controls: [ControlBuf; N],
    headers: [libc::mmsghdr; N],
    received: usize,
    drops: u32,
}

impl RecvBatch {
    /// Buffers for [`BATCH`] datagrams, allocated once.
    #[must_use]
    pub fn new() -> Box<Self> {
        Self::boxed()
    }
}

impl<const N: usize> RecvBatch<N> {
    /// Buffers for `N` datagrams, allocated once.
    #[must_use]
    pub fn boxed() -> Box<Self> {
        Box::new(Self {
            buffers: vec![[0; DATAGRAM_LEN]; N]
                .into_boxed_slice()
                .try_into()
                .unwrap_or_else(|_| unreachable!("a vector of N buffers")),
            names: [PeerName::empty(); N],
            // SAFETY: iovec and mmsghdr are plain C structs for which all
            // zero bytes (null pointers, zero lengths) is valid.
            iovecs: unsafe { std::mem::zeroed() },
            controls: [ControlBuf::new(); N],
            // SAFETY: as above.
            headers: unsafe { std::mem::zeroed() },
            received: 0,
            drops: 0,
        })
    }

    /// Waits for at least one datagram on `socket` (up to the socket's read
    /// timeout) and takes up to `N` that are queued. Returns how many;
    /// 0 on a timeout or an interrupted call.
    ///
    /// # Errors
    /// Any other error of `recvmmsg`.
    pub fn receive(&mut self, socket: &impl AsRawFd) -> io::Result<usize> {
        self.received = 0;
        for i in 0..N {
            self.iovecs[i] = libc::iovec {
                iov_base: self.buffers[i].as_mut_ptr().cast(),
                iov_len: DATAGRAM_LEN,
            };
            self.names[i].len = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            let h = &mut self.headers[i];
            h.msg_len = 0;
            h.msg_hdr.msg_name = (&raw mut self.names[i].storage).cast();
            h.msg_hdr.msg_namelen = self.names[i].len;
            h.msg_hdr.msg_iov = &raw mut self.iovecs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = self.controls[i].0.as_mut_ptr().cast();
            h.msg_hdr.msg_controllen = CONTROL_LEN as _;
            h.msg_hdr.msg_flags = 0;
        }
        // SAFETY: every header points at a buffer, address and control area
        // of `self` with the lengths given above, all alive and exclusively
        // borrowed for the call; the count is the array's length; a null
        // timeout means the socket's own read timeout applies.
        let n = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                self.headers.as_mut_ptr(),
                N as libc::c_uint,
                libc::MSG_WAITFORONE,
                ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock
                | io::ErrorKind::TimedOut
                | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        self.received = usize::try_from(n).unwrap_or(0).min(N);
        for i in 0..self.received {
            self.names[i].len = self.headers[i].msg_hdr.msg_namelen;
        }
        Ok(self.received)
    }

    /// How many datagrams the last [`RecvBatch::receive`] took.
    #[must_use]
    pub fn len(&self) -> usize {
        self.received
    }

    /// Whether the last [`RecvBatch::receive`] took none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.received == 0
    }

    /// Datagram `i` of the last [`RecvBatch::receive`].
    ///
    /// # Panics
    /// If `i` is not below the count it returned.
    #[must_use]
    pub fn datagram(&self, i: usize) -> Datagram<'_> {
        assert!(i < self.received, "datagram {i} of {}", self.received);
        let h = &self.headers[i];
        let len = (h.msg_len as usize).min(DATAGRAM_LEN);
        Datagram {
            data: &self.buffers[i][..len],
            peer: self.names[i].socket_addr(),
            stamp: self.facts(i).stamp,
            truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
        }
    }

    /// Where to send the reply to datagram `i`.
    ///
    /// # Panics
    /// If `i` is not below the count [`RecvBatch::receive`] returned.
    #[must_use]
    pub fn peer_name(&self, i: usize) -> PeerName {
        assert!(i < self.received, "datagram {i} of {}", self.received);
        self.names[i]
    }

    /// The socket's count of datagrams the kernel dropped for want of
    /// receive buffer space, as the last datagram of the last batch carried
    /// it (the count when that datagram was queued). The kernel attaches it
    /// only once it is above 0 and [`crate::enable_drop_counter`] is on, so
    /// this is 0 until then. The count wraps at 2^32.
    #[must_use]
    pub fn kernel_drops(&mut self) -> u32 {
        if let Some(last) = self.received.checked_sub(1) {
            self.drops = self.facts(last).drops.unwrap_or(self.drops);
        }
        self.drops
    }

    fn facts(&self, i: usize) -> control::ControlFacts {
        // SAFETY: header `i` was filled by the kernel in the last receive;
        // its control pointer and length describe `self.controls[i]`, alive
        // and aligned while `self` is borrowed.
        unsafe { control::read(&self.headers[i].msg_hdr) }
    }
}

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use super::*;
    use crate::{SendBatch, StampSource, enable_drop_counter, enable_timestamps};

    fn pair(local: &str) -> (UdpSocket, UdpSocket) {
        let server = UdpSocket::bind(local).expect("bind");
        server
            .set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        let client = UdpSocket::bind(local).expect("bind");
        client
            .set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        (server, client)
    }

    /// The batch path against std's one-datagram-at-a-time path: same bytes,
    /// same peer, and replies arrive where `send_to` would send them.
    fn batch_matches_std(local: &str) {
        let (server, client) = pair(local);
        assert!(enable_timestamps(&server, false).receive);
        assert!(crate::wait_for_receive_stamps(Duration::from_secs(5)));
        let target = server.local_addr().expect("addr");
        let sizes = [48usize, 68, 72, 1, DATAGRAM_LEN + 10];
        for (i, &size) in sizes.iter().enumerate() {
            client.send_to(&vec![i as u8; size], target).expect("send");
        }
        let before = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
        let mut batch = RecvBatch::new();
        let mut got = 0;
        while got < sizes.len() {
            let n = batch.receive(&server).expect("receive");
            assert!(n > 0, "timed out after {got}");
            for i in 0..n {
                let d = batch.datagram(i);
                let size = sizes[got];
                assert_eq!(d.data.len(), size.min(DATAGRAM_LEN));
                assert!(d.data.iter().all(|&b| b == got as u8));
                assert_eq!(d.truncated, size > DATAGRAM_LEN);
                assert_eq!(d.peer, Some(client.local_addr().expect("addr")));
                let stamp = d.stamp.expect("kernel timestamp");
                assert_eq!(stamp.source, StampSource::Kernel);
                assert!(
                    (stamp.secs - before.as_secs() as i64).abs() <= 2,
                    "{stamp:?}"
                );
                got += 1;
            }
            let replies = (0..n).map(|i| (&b"reply"[..], batch.peer_name(i)));
            assert_eq!(SendBatch::new().send(&server, replies), 0);
            for _ in 0..n {
                let mut buf = [0u8; 16];
                let (len, from) = client.recv_from(&mut buf).expect("reply");
                assert_eq!((&buf[..len], from), (&b"reply"[..], target));
            }
        }
    }

    #[test]
    fn ipv4_batches_match_std() {
        batch_matches_std("127.0.0.1:0");
    }

    #[test]
    fn ipv6_batches_match_std() {
        if UdpSocket::bind("[::1]:0").is_err() {
            eprintln!("no IPv6 loopback; skipped");
            return;
        }
        batch_matches_std("[::1]:0");
    }

    /// A larger batch than the default takes a burst of 64 in one call.
    #[test]
    fn a_batch_of_64_takes_64_datagrams_at_once() {
        let (server, client) = pair("127.0.0.1:0");
        let target = server.local_addr().expect("addr");
        for i in 0..70u8 {
            client.send_to(&[i; 1036], target).expect("send");
        }
        let mut batch = RecvBatch::<64>::boxed();
        assert_eq!(batch.receive(&server).expect("receive"), 64);
        for i in 0..64 {
            assert_eq!(batch.datagram(i).data, &[i as u8; 1036][..]);
        }
        let replies = (0..64).map(|i| (&b"reply"[..], batch.peer_name(i)));
        assert_eq!(SendBatch::<64>::boxed().send(&server, replies), 0);
        for _ in 0..64 {
            let mut buf = [0u8; 16];
            let (len, _) = client.recv_from(&mut buf).expect("reply");
            assert_eq!(&buf[..len], b"reply");
        }
        assert_eq!(batch.receive(&server).expect("receive"), 6);
    }

    #[test]
    fn timeouts_return_zero() {
        let (server, _client) = pair("127.0.0.1:0");
        server
            .set_read_timeout(Some(Duration::from_millis(20)))
            .expect("timeout");
        assert_eq!(RecvBatch::new().receive(&server).expect("receive"), 0);
    }

    /// A receive buffer too small for a burst: the kernel's drop count
    /// reaches the next datagram received.
    #[test]
    fn kernel_drops_are_reported() {
        let server = socket_with_small_buffer();
        enable_drop_counter(&server).expect("SO_RXQ_OVFL");
        let target = server.local_addr().expect("addr");
        let client = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let mut batch = RecvBatch::new();
        client.send_to(&[1; 48], target).expect("send");
        assert_eq!(batch.receive(&server).expect("receive"), 1);
        assert_eq!(batch.kernel_drops(), 0);
        // A burst far beyond the buffer, then one more after draining.
        for _ in 0..2000 {
            let _ = client.send_to(&[2; 1000], target);
        }
        let mut total = 0;
        while batch.receive(&server).expect("receive") > 0 {
            total += batch.len();
        }
        assert!(total < 2000, "the buffer held every datagram");
        // The count a datagram carries is the one when it was queued: the
        // one sent after the burst carries every drop of the burst.
        client.send_to(&[3; 48], target).expect("send");
        assert_eq!(batch.receive(&server).expect("receive"), 1);
        let drops = batch.kernel_drops();
        assert!(drops > 0);
        assert_eq!(
            u64::from(drops) + total as u64,
            2000,
            "{drops} dropped, {total} read"
        );
    }

    fn socket_with_small_buffer() -> UdpSocket {
        let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let size: libc::c_int = 4096;
        // SAFETY: a live c_int of the length given, on a live socket.
        let r = unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&s),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&raw const size).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
        s.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        s
    }
}
