//! Batched UDP receive and send (`recvmmsg`/`sendmmsg`) with kernel receive
//! timestamps (`SO_TIMESTAMPNS`): the crate's only unsafe code, all of it FFI
//! into libc on buffers this module owns.
//!
//! [`RecvBatch`] owns up to [`BATCH`] datagram buffers, their source addresses
//! and control-message space, allocated once; [`SendBatch`] owns the headers
//! for sending replies back to the addresses a batch came from. The pointers
//! handed to the kernel are rebuilt from `&mut self` before every call, so
//! they never outlive or alias the buffers. Linux only.

use std::io;
use std::mem::size_of;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, RawFd};
use std::ptr;

/// Datagrams per system call.
pub(crate) const BATCH: usize = 32;
/// Receive buffer per datagram: an NTP request with extension fields fits;
/// longer datagrams are flagged as truncated.
pub(crate) const DATAGRAM_LEN: usize = 2048;
/// Control-message space per datagram: one `SCM_TIMESTAMPNS` (16-byte header
/// and 16-byte `timespec`) with room to spare.
const CONTROL_LEN: usize = 64;

/// Control-message space, aligned as `cmsghdr` needs.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct ControlBuf([u8; CONTROL_LEN]);

/// Asks the kernel to attach a receive timestamp (`SCM_TIMESTAMPNS`, real-time
/// clock) to every datagram of `socket`.
///
/// # Errors
/// The kernel refused the option (then the caller reads the clock instead).
pub(crate) fn enable_receive_timestamps(socket: &impl AsRawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: `on` is a live c_int and the length passed is its size; the
    // descriptor is borrowed from a live socket.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&raw const on).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One received datagram.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Datagram<'a> {
    /// Its bytes (at most [`DATAGRAM_LEN`]).
    pub(crate) data: &'a [u8],
    /// Who sent it; `None` for an address family other than IPv4 and IPv6.
    pub(crate) peer: Option<SocketAddr>,
    /// The kernel's receive time (seconds and nanoseconds since 1970), when
    /// timestamps are on.
    pub(crate) kernel_time: Option<(i64, u32)>,
    /// Whether it was longer than the buffer (and cut).
    pub(crate) truncated: bool,
}

/// The sender of datagram `index` of a [`RecvBatch`], in the kernel's form,
/// to send a reply to.
#[derive(Clone, Copy)]
pub(crate) struct PeerName<'a> {
    name: &'a libc::sockaddr_storage,
    len: libc::socklen_t,
}

/// Buffers for one `recvmmsg` call.
pub(crate) struct RecvBatch {
    buffers: Box<[[u8; DATAGRAM_LEN]; BATCH]>,
    names: [libc::sockaddr_storage; BATCH],
    iovecs: [libc::iovec; BATCH],
    controls: [ControlBuf; BATCH],
    headers: [libc::mmsghdr; BATCH],
    received: usize,
}

impl RecvBatch {
    /// Buffers for [`BATCH`] datagrams, allocated once.
    #[must_use]
    pub(crate) fn new() -> Box<Self> {
        Box::new(Self {
            buffers: Box::new([[0; DATAGRAM_LEN]; BATCH]),
            // SAFETY: sockaddr_storage, iovec and mmsghdr are plain C structs
            // for which all zero bytes (null pointers, zero lengths) is valid.
            names: unsafe { std::mem::zeroed() },
            // SAFETY: as above.
            iovecs: unsafe { std::mem::zeroed() },
            controls: [ControlBuf([0; CONTROL_LEN]); BATCH],
            // SAFETY: as above.
            headers: unsafe { std::mem::zeroed() },
            received: 0,
        })
    }

    /// Waits for at least one datagram on `socket` (up to the socket's read
    /// timeout) and takes up to [`BATCH`] that are queued. Returns how many;
    /// 0 on a timeout or an interrupted call.
    ///
    /// # Errors
    /// Any other error of `recvmmsg`.
    pub(crate) fn receive(&mut self, socket: &impl AsRawFd) -> io::Result<usize> {
        self.received = 0;
        for i in 0..BATCH {
            self.iovecs[i] = libc::iovec {
                iov_base: self.buffers[i].as_mut_ptr().cast(),
                iov_len: DATAGRAM_LEN,
            };
            let h = &mut self.headers[i];
            h.msg_len = 0;
            h.msg_hdr.msg_name = (&raw mut self.names[i]).cast();
            h.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
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
                fd(socket),
                self.headers.as_mut_ptr(),
                BATCH as libc::c_uint,
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
        self.received = usize::try_from(n).unwrap_or(0).min(BATCH);
        Ok(self.received)
    }

    /// Datagram `i` of the last [`RecvBatch::receive`].
    ///
    /// # Panics
    /// If `i` is not below the count it returned.
    #[must_use]
    pub(crate) fn datagram(&self, i: usize) -> Datagram<'_> {
        assert!(i < self.received, "datagram {i} of {}", self.received);
        let h = &self.headers[i];
        let len = (h.msg_len as usize).min(DATAGRAM_LEN);
        Datagram {
            data: &self.buffers[i][..len],
            peer: socket_addr(&self.names[i], h.msg_hdr.msg_namelen),
            kernel_time: self.kernel_time(i),
            truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
        }
    }

    /// Where to send the reply to datagram `i`.
    ///
    /// # Panics
    /// If `i` is not below the count [`RecvBatch::receive`] returned.
    #[must_use]
    pub(crate) fn peer_name(&self, i: usize) -> PeerName<'_> {
        assert!(i < self.received, "datagram {i} of {}", self.received);
        PeerName {
            name: &self.names[i],
            len: self.headers[i].msg_hdr.msg_namelen,
        }
    }

    fn kernel_time(&self, i: usize) -> Option<(i64, u32)> {
        let msg = &self.headers[i].msg_hdr;
        // SAFETY: `msg` is the header the kernel just filled; its control
        // pointer and length describe `self.controls[i]`, alive while `self`
        // is borrowed. CMSG_FIRSTHDR/CMSG_NXTHDR stay within that length and
        // return null at its end.
        let mut c = unsafe { libc::CMSG_FIRSTHDR(msg) };
        while !c.is_null() {
            // SAFETY: a non-null cmsghdr from CMSG_FIRSTHDR/NXTHDR lies within
            // the control buffer, which is aligned for cmsghdr.
            let header = unsafe { &*c };
            if header.cmsg_level == libc::SOL_SOCKET && header.cmsg_type == libc::SCM_TIMESTAMPNS {
                // SAFETY: an SCM_TIMESTAMPNS message carries one timespec
                // after its header; read_unaligned needs no alignment.
                let ts: libc::timespec =
                    unsafe { ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>()) };
                return Some((ts.tv_sec, u32::try_from(ts.tv_nsec).unwrap_or(0)));
            }
            // SAFETY: as for CMSG_FIRSTHDR; `c` came from this message.
            c = unsafe { libc::CMSG_NXTHDR(msg, c) };
        }
        None
    }
}

/// Headers for one `sendmmsg` call.
pub(crate) struct SendBatch {
    iovecs: [libc::iovec; BATCH],
    headers: [libc::mmsghdr; BATCH],
}

impl SendBatch {
    /// Headers for [`BATCH`] datagrams.
    #[must_use]
    pub(crate) fn new() -> Box<Self> {
        Box::new(Self {
            // SAFETY: plain C structs; all zero bytes is valid.
            iovecs: unsafe { std::mem::zeroed() },
            // SAFETY: as above.
            headers: unsafe { std::mem::zeroed() },
        })
    }

    /// Sends each `(bytes, peer)` on `socket` in as few system calls as the
    /// kernel allows. Returns the number of datagrams the kernel refused (each
    /// is skipped; the rest are still sent). At most [`BATCH`] are sent; the
    /// rest of `replies` is ignored.
    pub(crate) fn send<'a>(
        &mut self,
        socket: &impl AsRawFd,
        replies: impl IntoIterator<Item = (&'a [u8], PeerName<'a>)>,
    ) -> usize {
        let mut count = 0;
        for (i, (bytes, peer)) in replies.into_iter().take(BATCH).enumerate() {
            count = i + 1;
            self.iovecs[i] = libc::iovec {
                // The kernel only reads from a send buffer.
                iov_base: bytes.as_ptr().cast_mut().cast(),
                iov_len: bytes.len(),
            };
            let h = &mut self.headers[i];
            h.msg_len = 0;
            h.msg_hdr.msg_name = ptr::from_ref(peer.name).cast_mut().cast();
            h.msg_hdr.msg_namelen = peer.len;
            h.msg_hdr.msg_iov = &raw mut self.iovecs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = ptr::null_mut();
            h.msg_hdr.msg_controllen = 0;
            h.msg_hdr.msg_flags = 0;
        }
        let mut done = 0;
        let mut refused = 0;
        while done < count {
            // SAFETY: headers `done..count` point at the reply bytes and peer
            // addresses borrowed for 'a (alive for this call, read only by
            // the kernel) and at `self.iovecs`, all set up above.
            let n = unsafe {
                libc::sendmmsg(
                    fd(socket),
                    self.headers[done..].as_mut_ptr(),
                    (count - done) as libc::c_uint,
                    0,
                )
            };
            match n {
                n if n > 0 => done += n as usize,
                _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
                _ => {
                    // The first remaining datagram failed: skip it.
                    refused += 1;
                    done += 1;
                }
            }
        }
        refused
    }
}

fn fd(socket: &impl AsRawFd) -> RawFd {
    socket.as_raw_fd()
}

/// The address in `name`, for IPv4 and IPv6.
fn socket_addr(name: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    let len = len as usize;
    match libc::c_int::from(name.ss_family) {
        libc::AF_INET if len >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in, which
            // sockaddr_storage is large and aligned enough for.
            let a = unsafe { &*ptr::from_ref(name).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 if len >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for sockaddr_in6.
            let a = unsafe { &*ptr::from_ref(name).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use super::*;

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
        enable_receive_timestamps(&server).expect("timestamps");
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
                let (secs, _) = d.kernel_time.expect("kernel timestamp");
                assert!((secs - before.as_secs() as i64).abs() <= 2, "{secs}");
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

    #[test]
    fn timeouts_return_zero() {
        let (server, _client) = pair("127.0.0.1:0");
        server
            .set_read_timeout(Some(Duration::from_millis(20)))
            .expect("timeout");
        assert_eq!(RecvBatch::new().receive(&server).expect("receive"), 0);
    }
}
