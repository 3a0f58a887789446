//! Sending: one datagram at a time ([`Sender`]), when what it carries depends
//! on the moment it leaves, or many in one `sendmmsg` ([`SendBatch`]), when
//! it does not.

use std::io;
use std::os::fd::AsRawFd;
use std::ptr;

use crate::control::{ControlBuf, write_tx_stamp_request};
use crate::peer::PeerName;
use crate::recv_batch::BATCH;

/// Sends single datagrams, each optionally with a request for its transmit
/// timestamp. Holds the control space for that request.
pub struct Sender {
    control: ControlBuf,
    control_len: usize,
}

impl Default for Sender {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender").finish_non_exhaustive()
    }
}

impl Sender {
    /// A sender; nothing is allocated.
    #[must_use]
    pub fn new() -> Self {
        let mut control = ControlBuf::new();
        let control_len = write_tx_stamp_request(&mut control);
        Self {
            control,
            control_len,
        }
    }

    /// Sends `bytes` on `socket` to `peer` (`None`: the socket's connected
    /// peer) in one `sendto`, or `sendmsg` with `tx_stamp`, which asks the kernel for the
    /// datagram's software transmit timestamp, which it queues on the
    /// socket's error queue ([`crate::TxStampReader`]) once the datagram
    /// has been handed to the network driver: on loopback and veth, before
    /// this call returns. An interrupted call is retried.
    ///
    /// # Errors
    /// The kernel refused the datagram (full buffer, no route, ...).
    pub fn send(
        &mut self,
        socket: &impl AsRawFd,
        bytes: &[u8],
        peer: Option<&PeerName>,
        tx_stamp: bool,
    ) -> io::Result<()> {
        if !tx_stamp {
            return send_to(socket, bytes, peer);
        }
        let mut iov = libc::iovec {
            // The kernel only reads from a send buffer.
            iov_base: bytes.as_ptr().cast_mut().cast(),
            iov_len: bytes.len(),
        };
        // SAFETY: an all-zero msghdr is a valid empty one.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        if let Some(peer) = peer {
            msg.msg_name = ptr::from_ref(&peer.storage).cast_mut().cast();
            msg.msg_namelen = peer.len;
        }
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        if tx_stamp {
            msg.msg_control = self.control.0.as_mut_ptr().cast();
            msg.msg_controllen = self.control_len as _;
        }
        loop {
            // SAFETY: msg points at `iov` (which covers `bytes`), at the
            // peer's address and at `self.control`, all alive for the call
            // and only read by the kernel.
            let n = unsafe { libc::sendmsg(socket.as_raw_fd(), &raw const msg, 0) };
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// `sendto`: no control message to pass, so no message header for the
/// kernel to copy in.
fn send_to(socket: &impl AsRawFd, bytes: &[u8], peer: Option<&PeerName>) -> io::Result<()> {
    let (name, len) = match peer {
        Some(p) => (ptr::from_ref(&p.storage).cast::<libc::sockaddr>(), p.len),
        None => (ptr::null(), 0),
    };
    loop {
        // SAFETY: `bytes` and the peer's address are alive for the call and
        // only read by the kernel; a null address with length 0 means the
        // connected peer.
        let n = unsafe {
            libc::sendto(
                socket.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                0,
                name,
                len,
            )
        };
        if n >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Headers for one `sendmmsg` call of up to `N` datagrams.
pub struct SendBatch<const N: usize = BATCH> {
    names: [PeerName; N],
    iovecs: [libc::iovec; N],
    headers: [libc::mmsghdr; N],
}

impl SendBatch {
    /// Headers for [`BATCH`] datagrams.
    #[must_use]
    pub fn new() -> Box<Self> {
        Self::boxed()
    }
}

impl<const N: usize> SendBatch<N> {
    /// Headers for `N` datagrams.
    #[must_use]
    pub fn boxed() -> Box<Self> {
        Box::new(Self {
            names: [PeerName::empty(); N],
            // SAFETY: plain C structs; all zero bytes is valid.
            iovecs: unsafe { std::mem::zeroed() },
            // SAFETY: as above.
            headers: unsafe { std::mem::zeroed() },
        })
    }

    /// Sends each `(bytes, peer)` on `socket` in as few system calls as the
    /// kernel allows. Returns the number of datagrams the kernel refused (each
    /// is skipped; the rest are still sent). At most `N` are sent; the
    /// rest of `replies` is ignored.
    pub fn send<'a>(
        &mut self,
        socket: &impl AsRawFd,
        replies: impl IntoIterator<Item = (&'a [u8], PeerName)>,
    ) -> usize {
        let mut count = 0;
        for (i, (bytes, peer)) in replies.into_iter().take(N).enumerate() {
            count = i + 1;
            self.names[i] = peer;
            self.iovecs[i] = libc::iovec {
                // The kernel only reads from a send buffer.
                iov_base: bytes.as_ptr().cast_mut().cast(),
                iov_len: bytes.len(),
            };
            let h = &mut self.headers[i];
            h.msg_len = 0;
            h.msg_hdr.msg_name = (&raw mut self.names[i].storage).cast();
            h.msg_hdr.msg_namelen = self.names[i].len;
            h.msg_hdr.msg_iov = &raw mut self.iovecs[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = ptr::null_mut();
            h.msg_hdr.msg_controllen = 0;
            h.msg_hdr.msg_flags = 0;
        }
        let mut done = 0;
        let mut refused = 0;
        while done < count {
            // SAFETY: headers `done..count` point at the reply bytes borrowed
            // for 'a (alive for this call, read only by the kernel) and at
            // `self.names` and `self.iovecs`, all set up above.
            let n = unsafe {
                libc::sendmmsg(
                    socket.as_raw_fd(),
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
