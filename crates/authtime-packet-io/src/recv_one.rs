//! One datagram with its kernel receive timestamp, for clients and load
//! generators: a reply's round trip ends when the kernel received it, not
//! when a busy thread got round to reading it.

use std::io;
use std::mem::size_of;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use crate::control::{self, CONTROL_LEN, ControlBuf};
use crate::peer::PeerName;
use crate::stamp::Stamp;

/// What [`recv_one`] received.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    /// Bytes written into the buffer.
    pub len: usize,
    /// The sender, for IPv4 and IPv6.
    pub peer: Option<SocketAddr>,
    /// The kernel's receive timestamp, when timestamps are on
    /// ([`crate::enable_timestamps`]).
    pub stamp: Option<Stamp>,
    /// The datagram was longer than the buffer (and cut).
    pub truncated: bool,
}

/// Receives one datagram into `buf`. With `wait`, blocks up to the socket's
/// read timeout; without, returns at once.
///
/// # Errors
/// `WouldBlock` (or `TimedOut`) when nothing came; any other receive error
/// (an ICMP port unreachable shows as `ConnectionRefused` on a connected
/// socket).
pub fn recv_one(socket: &impl AsRawFd, buf: &mut [u8], wait: bool) -> io::Result<Received> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = ControlBuf::new();
    let mut name = PeerName::empty();
    // SAFETY: an all-zero msghdr is a valid empty one.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&raw mut name.storage).cast();
    msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = CONTROL_LEN as _;
    let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
    // SAFETY: msg points at iov (which covers `buf`), at `name` and at
    // `control`, all alive and exclusively borrowed for the call.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &raw mut msg, flags) };
    let Ok(len) = usize::try_from(n) else {
        return Err(io::Error::last_os_error());
    };
    name.len = msg.msg_namelen;
    // SAFETY: the kernel filled `msg`; its control pointer and length
    // describe `control`, alive and aligned.
    let facts = unsafe { control::read(&msg) };
    Ok(Received {
        len: len.min(buf.len()),
        peer: name.socket_addr(),
        stamp: facts.stamp,
        truncated: msg.msg_flags & libc::MSG_TRUNC != 0,
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use super::*;
    use crate::enable_timestamps;

    #[test]
    fn a_datagram_arrives_with_its_kernel_time() {
        let a = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        let b = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        assert!(enable_timestamps(&b, false).receive);
        assert!(crate::wait_for_receive_stamps(Duration::from_secs(5)));
        let mut buf = [0u8; 64];
        assert_eq!(
            recv_one(&b, &mut buf, false).map_err(|e| e.kind()).err(),
            Some(io::ErrorKind::WouldBlock)
        );
        let before = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
        a.send_to(b"hello", b.local_addr().expect("addr"))
            .expect("send");
        let deadline = Instant::now() + Duration::from_secs(2);
        let got = loop {
            match recv_one(&b, &mut buf, false) {
                Ok(got) => break got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "nothing arrived");
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => panic!("{e}"),
            }
        };
        let after = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
        assert_eq!(&buf[..got.len], b"hello");
        assert_eq!(got.peer, Some(a.local_addr().expect("addr")));
        assert!(!got.truncated);
        let stamp = got.stamp.expect("a kernel timestamp").unix_nanos();
        assert!(
            stamp >= before.as_nanos() as i128 - 1_000_000,
            "{stamp} {before:?}"
        );
        assert!(stamp <= after.as_nanos() as i128);
    }
}
