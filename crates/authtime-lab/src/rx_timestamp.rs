//! Kernel receive timestamps for the load generators' UDP sockets.
//!
//! A reply's round trip ends when the kernel received it, not when the
//! generator's single thread got round to reading it: with thousands of
//! requests a second in flight, the second would add the generator's own
//! queueing to every sample. `SO_TIMESTAMPNS` stamps each datagram on
//! arrival (real-time clock), so send times are read from the same clock.

#![allow(
    unsafe_code,
    reason = "setsockopt and recvmsg are FFI; each block has a SAFETY comment"
)]

use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Asks the kernel to stamp every datagram `socket` receives; false when it refused.
pub fn enable(socket: &impl AsRawFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: `on` is a live c_int and the length given is its size; the
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
    r == 0
}

/// Receives one datagram into `buf` without waiting: its length, and the
/// kernel's receive time when one was attached.
///
/// # Errors
/// `WouldBlock` when nothing is queued; any other receive error (an ICMP
/// port unreachable shows as `ConnectionRefused`).
pub fn recv(socket: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, Option<SystemTime>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // u64s so that the control buffer is aligned for cmsghdr.
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is a valid empty one.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&control);
    // SAFETY: msg points at iov (which covers `buf`) and at `control`, all
    // alive and exclusively borrowed for the call.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &raw mut msg, libc::MSG_DONTWAIT) };
    let Ok(n) = usize::try_from(n) else {
        return Err(io::Error::last_os_error());
    };
    let mut stamp = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled,
    // bounded by msg_controllen; the timestamp is read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&raw const msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let t: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if let (Ok(s), Ok(ns)) = (u64::try_from(t.tv_sec), u32::try_from(t.tv_nsec)) {
                    stamp = Some(UNIX_EPOCH + Duration::new(s, ns));
                }
            }
            c = libc::CMSG_NXTHDR(&raw const msg, c);
        }
    }
    Ok((n, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_arrives_with_its_kernel_time() {
        let a = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        let b = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        assert!(enable(&b));
        let mut buf = [0u8; 64];
        assert_eq!(
            recv(&b, &mut buf).map_err(|e| e.kind()),
            Err(io::ErrorKind::WouldBlock)
        );
        let before = SystemTime::now();
        a.send_to(b"hello", b.local_addr().expect("addr"))
            .expect("send");
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        let (n, stamp) = loop {
            match recv(&b, &mut buf) {
                Ok(got) => break got,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(std::time::Instant::now() < deadline, "nothing arrived");
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => panic!("{e}"),
            }
        };
        assert_eq!(&buf[..n], b"hello");
        let stamp = stamp.expect("a kernel timestamp");
        assert!(
            stamp >= before - Duration::from_millis(1),
            "{stamp:?} {before:?}"
        );
        assert!(stamp <= SystemTime::now());
    }
}
