//! Socket options: timestamping and the drop counter.

use std::io;
use std::mem::size_of;
use std::os::fd::AsRawFd;

/// What [`enable_timestamps`] got from the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamping {
    /// Received datagrams carry a kernel receive timestamp.
    pub receive: bool,
    /// Transmit timestamps can be asked for per datagram
    /// ([`crate::Sender::send`] with `tx_stamp`).
    pub transmit: bool,
}

fn set_int(socket: &impl AsRawFd, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is a live c_int and the length passed is its size; the
    // descriptor is borrowed from a live socket.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (&raw const value).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Switches timestamping on for `socket`: kernel receive timestamps on every
/// datagram, and, when `transmit`, the reporting of software transmit
/// timestamps that single datagrams ask for (none is taken until one asks).
///
/// `SO_TIMESTAMPING` first (receive and transmit); if the kernel refuses it,
/// `SO_TIMESTAMPNS` (receive only). Transmit timestamps come back with the
/// packet they stamp (not `OPT_TSONLY`), so that the caller can tell which
/// datagram each belongs to whatever the kernel version; with the sysctl
/// `net.core.tstamp_allow_data = 0` an unprivileged process gets none.
pub fn enable_timestamps(socket: &impl AsRawFd, transmit: bool) -> Timestamping {
    let flags = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
    if set_int(socket, libc::SO_TIMESTAMPING, flags as libc::c_int).is_ok() {
        return Timestamping {
            receive: true,
            transmit,
        };
    }
    Timestamping {
        receive: set_int(socket, libc::SO_TIMESTAMPNS, 1).is_ok(),
        transmit: false,
    }
}

/// Asks the kernel to attach to every received datagram the count of
/// datagrams it dropped on this socket for want of receive buffer space
/// (`SO_RXQ_OVFL`), read back by [`crate::RecvBatch::kernel_drops`].
///
/// # Errors
/// The kernel refused the option.
pub fn enable_drop_counter(socket: &impl AsRawFd) -> io::Result<()> {
    set_int(socket, libc::SO_RXQ_OVFL, 1)
}

/// Waits, at most `limit`, until the kernel stamps received datagrams, and
/// says whether it does. The kernel turns receive timestamping on for the
/// whole system in deferred work when the first socket asks for it, so the
/// first datagrams after that may arrive without a stamp. Call it after
/// [`enable_timestamps`] on the socket that needs stamps from its first
/// datagram (tests, measuring tools); a server reads the clock instead for
/// the few datagrams that come without one. Uses a pair of its own loopback
/// sockets.
#[must_use]
pub fn wait_for_receive_stamps(limit: std::time::Duration) -> bool {
    use std::net::UdpSocket;
    let (Ok(a), Ok(b)) = (
        UdpSocket::bind("127.0.0.1:0"),
        UdpSocket::bind("127.0.0.1:0"),
    ) else {
        return false;
    };
    let Ok(to) = b.local_addr() else {
        return false;
    };
    if !enable_timestamps(&b, false).receive {
        return false;
    }
    let deadline = std::time::Instant::now() + limit;
    let mut buf = [0u8; 8];
    while std::time::Instant::now() < deadline {
        if a.send_to(b"stamp?", to).is_err() {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        while let Ok(got) = crate::recv_one(&b, &mut buf, false) {
            if got.stamp.is_some() {
                return true;
            }
        }
    }
    false
}

/// Sets the socket's receive buffer to `bytes` as the kernel counts them
/// (each datagram costs its data plus a few hundred bytes of bookkeeping),
/// past `net.core.rmem_max` when the process may (`SO_RCVBUFFORCE`, with
/// `CAP_NET_ADMIN`), else capped by it. Returns the size the kernel took.
///
/// # Errors
/// The kernel refused both options.
pub fn set_receive_buffer(socket: &impl AsRawFd, bytes: usize) -> io::Result<usize> {
    // The kernel doubles the value it is given to leave room for its
    // bookkeeping; ask for half so that the total is `bytes`.
    let half = libc::c_int::try_from(bytes / 2).unwrap_or(libc::c_int::MAX);
    if set_int(socket, libc::SO_RCVBUFFORCE, half).is_err() {
        set_int(socket, libc::SO_RCVBUF, half)?;
    }
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are live and describe a c_int; the
    // descriptor is borrowed from a live socket.
    let r = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&raw mut value).cast(),
            &raw mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(value).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_receive_buffer_is_what_the_kernel_took() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        let got = set_receive_buffer(&s, 64 * 1024).expect("set");
        // Exactly the size asked for when it is below rmem_max or we may
        // force it; never more.
        assert!((4096..=64 * 1024).contains(&got), "{got}");
        let small = set_receive_buffer(&s, 8192).expect("set");
        assert!(small <= 8192, "{small}");
    }
}
