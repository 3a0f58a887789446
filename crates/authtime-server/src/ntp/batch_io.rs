//! What the shared batch logic ([`super::worker`]) needs from a data path:
//! the datagrams of one receive batch ([`Datagrams`]), and a way to send the
//! reply to one of them ([`Replies`]). The sockets implement them here
//! (`recvmmsg`, then one `sendto` or `sendmsg` per reply); the AF_XDP path in
//! [`super::xdp_worker`]. Both are generic parameters, not trait objects: the
//! socket path compiles to the same calls as before there were two paths.

use std::io;
use std::net::UdpSocket;

use authtime_packet_io::{Datagram, RecvBatch, Sender};

/// The datagrams of one receive batch.
pub(crate) trait Datagrams {
    /// Datagram `i` (below the count the receive returned): its bytes, its
    /// receive timestamp when the path has one, its source, and whether it
    /// was cut.
    fn datagram(&self, i: usize) -> Datagram<'_>;
}

/// Where the replies to a batch go.
pub(crate) trait Replies {
    /// Sends `reply` (a whole NTP datagram) to the source of datagram `i`
    /// of the batch, now; with `tx_stamp`, asks the kernel for its
    /// transmit timestamp (paths without them ignore it).
    ///
    /// # Errors
    /// The reply did not leave.
    fn send(&mut self, i: usize, reply: &[u8], tx_stamp: bool) -> io::Result<()>;
}

impl Datagrams for RecvBatch {
    #[inline]
    fn datagram(&self, i: usize) -> Datagram<'_> {
        RecvBatch::datagram(self, i)
    }
}

/// Replies on the socket the batch came in on, to the address each request
/// came from.
pub(crate) struct SocketReplies<'a> {
    pub(crate) socket: &'a UdpSocket,
    pub(crate) sender: &'a mut Sender,
    pub(crate) batch: &'a RecvBatch,
}

impl Replies for SocketReplies<'_> {
    #[inline]
    fn send(&mut self, i: usize, reply: &[u8], tx_stamp: bool) -> io::Result<()> {
        let peer = self.batch.peer_name(i);
        self.sender.send(self.socket, reply, Some(&peer), tx_stamp)
    }
}
