//! A UDP socket seen as a stream of datagrams to and from one peer, which is
//! what OpenSSL's DTLS needs from the `Read + Write` it runs on: each `write`
//! is one datagram, each `read` returns one datagram.
//!
//! The sender serves every client from one listening socket, so a channel
//! drops datagrams from other peers instead of handing them to the wrong
//! DTLS session.

use std::{
    io::{self, Read, Write},
    net::{SocketAddr, UdpSocket},
};

use crate::flights::{DatagramLog, Direction};

/// Largest datagram read.
const MAX_DATAGRAM: usize = 65_535;

/// One peer's datagrams on a (possibly shared) UDP socket.
#[derive(Debug)]
pub struct DatagramChannel {
    socket: UdpSocket,
    peer: SocketAddr,
    pending: Option<Vec<u8>>,
    log: Option<DatagramLog>,
    buf: Vec<u8>,
}

impl DatagramChannel {
    /// A channel to `peer` over `socket`; `first` is a datagram already read
    /// from the peer (the server's first Client Hello).
    #[must_use]
    pub fn new(socket: UdpSocket, peer: SocketAddr, first: Option<Vec<u8>>) -> Self {
        Self {
            socket,
            peer,
            pending: first,
            log: None,
            buf: vec![0; MAX_DATAGRAM],
        }
    }

    /// Logs every datagram that crosses this channel into `log`.
    #[must_use]
    pub fn with_log(mut self, log: DatagramLog) -> Self {
        if let Some(first) = &self.pending {
            log.push(Direction::Received, first);
        }
        self.log = Some(log);
        self
    }

    /// The peer.
    #[must_use]
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }
}

impl Read for DatagramChannel {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if let Some(first) = self.pending.take() {
            let n = first.len().min(out.len());
            out[..n].copy_from_slice(&first[..n]);
            return Ok(n);
        }
        loop {
            let (n, from) = self.socket.recv_from(&mut self.buf)?;
            if from != self.peer {
                continue;
            }
            let n = n.min(out.len());
            out[..n].copy_from_slice(&self.buf[..n]);
            if let Some(log) = &self.log {
                log.push(Direction::Received, &out[..n]);
            }
            return Ok(n);
        }
    }
}

impl Write for DatagramChannel {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = self.socket.send_to(data, self.peer)?;
        if let Some(log) = &self.log {
            log.push(Direction::Sent, &data[..n]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
