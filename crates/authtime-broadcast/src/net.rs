//! Sockets and clocks for the broadcast server and client (IPv4 multicast).

use std::{
    net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket},
    sync::OnceLock,
    time::{Duration, Instant},
};

use authtime_clock::{Announcement, UnsyncCause};
use authtime_tesla::{
    BootstrapSigner, BootstrapVerifier, Receiver, ReceiverConfig, Sender, SenderError, SyncClient,
    Time,
};
use authtime_wire::{Header, Mode, NtpTimestamp};
use socket2::{Domain, Protocol, Socket, Type};

use crate::{
    client::{Bootstrap, BroadcastClient, ClientConfig},
    wire,
};

/// Why the server or the client failed.
#[non_exhaustive]
#[derive(Debug)]
pub enum BroadcastError {
    /// A socket error.
    Io(std::io::Error),
    /// The TESLA sender failed (time outside the schedule, signer).
    Sender(SenderError),
    /// The bootstrap was refused.
    Bootstrap(authtime_tesla::BootstrapError),
    /// No bootstrap answer in time.
    Timeout,
    /// The packet could not be encoded.
    Wire(wire::BroadcastWireError),
}

impl core::fmt::Display for BroadcastError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "socket: {e}"),
            Self::Sender(e) => write!(f, "TESLA sender: {e}"),
            Self::Bootstrap(e) => write!(f, "bootstrap: {e}"),
            Self::Timeout => f.write_str("no sync response in time"),
            Self::Wire(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BroadcastError {}

impl From<std::io::Error> for BroadcastError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// The system clock as TESLA time (Unix nanoseconds): the server's clock.
#[must_use]
pub fn unix_time() -> Time {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    Time(ns)
}

/// A monotonic local clock (nanoseconds since the first call, plus one): the
/// client's clock for the safety condition, which nothing here ever sets.
#[must_use]
pub fn monotonic_time() -> Time {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = ORIGIN.get_or_init(Instant::now);
    Time(u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX) + 1)
}

fn ntp_from_unix(t: Time) -> NtpTimestamp {
    NtpTimestamp::from_unix(
        i64::try_from(t.0 / 1_000_000_000).unwrap_or(i64::MAX),
        (t.0 % 1_000_000_000) as u32,
    )
}

/// A UDP socket joined to `group` on interface `iface`, bound to the group's port.
///
/// # Errors
/// Socket errors.
pub fn join_group(group: SocketAddrV4, iface: Ipv4Addr) -> Result<UdpSocket, BroadcastError> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_address(true)?;
    s.bind(&SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, group.port())).into())?;
    s.join_multicast_v4(group.ip(), &iface)?;
    s.set_multicast_loop_v4(true)?;
    Ok(s.into())
}

/// A UDP socket sending multicast through `iface` (loop on, TTL `ttl`).
///
/// # Errors
/// Socket errors.
pub fn multicast_sender(iface: Ipv4Addr, ttl: u32) -> Result<UdpSocket, BroadcastError> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_multicast_if_v4(&iface)?;
    s.set_multicast_loop_v4(true)?;
    s.set_multicast_ttl_v4(ttl)?;
    s.bind(&SocketAddr::V4(SocketAddrV4::new(iface, 0)).into())?;
    Ok(s.into())
}

/// A TESLA-protected NTP broadcast server: multicasts mode-5 packets and
/// answers sync requests (direct time synchronisation) on a unicast socket.
pub struct BroadcastServer {
    data: UdpSocket,
    sync: UdpSocket,
    group: SocketAddrV4,
    sender: Sender,
    signer: Box<dyn BootstrapSigner + Send>,
    sent: u64,
    syncs: u64,
    clock: Announcement,
}

impl core::fmt::Debug for BroadcastServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BroadcastServer")
            .field("group", &self.group)
            .field("sent", &self.sent)
            .field("syncs", &self.syncs)
            .finish_non_exhaustive()
    }
}

impl BroadcastServer {
    /// A server multicasting to `group` through `data`, answering sync
    /// requests on `sync`. The sender's clock is [`unix_time`].
    #[must_use]
    pub fn new(
        data: UdpSocket,
        sync: UdpSocket,
        group: SocketAddrV4,
        sender: Sender,
        signer: Box<dyn BootstrapSigner + Send>,
    ) -> Self {
        Self {
            data,
            sync,
            group,
            sender,
            signer,
            sent: 0,
            syncs: 0,
            clock: Announcement::unsynchronized(UnsyncCause::NotYetRead),
        }
    }

    /// What the next broadcast packets say about the sender's clock (leap,
    /// stratum, reference, root delay and dispersion): the server's clock
    /// source's announcement. Until it is set, packets say unsynchronized.
    pub fn set_clock(&mut self, announcement: Announcement) {
        self.clock = announcement;
    }

    /// Packets multicast so far.
    #[must_use]
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Sync requests answered so far.
    #[must_use]
    pub fn syncs(&self) -> u64 {
        self.syncs
    }

    /// Both counters.
    #[must_use]
    pub fn status(&self) -> crate::ServeStatus {
        crate::ServeStatus {
            sent: self.sent,
            syncs: self.syncs,
        }
    }

    /// The group packets go to.
    #[must_use]
    pub fn group(&self) -> SocketAddrV4 {
        self.group
    }

    /// The sender's interval schedule.
    #[must_use]
    pub fn schedule(&self) -> authtime_tesla::Schedule {
        self.sender.params().schedule()
    }

    /// Multicasts one broadcast packet stamped now; returns its length.
    ///
    /// # Errors
    /// Socket, sender or encoding errors.
    pub fn broadcast(&mut self) -> Result<usize, BroadcastError> {
        let now = unix_time();
        let clock = &self.clock;
        let mut header = Header::new(Mode::Broadcast);
        header.leap = clock.leap;
        header.stratum = clock.stratum;
        header.poll = 4;
        header.precision = -20;
        header.reference_id = clock.reference_id;
        header.reference_ts = clock.reference_ts;
        header.root_delay = clock.root_delay;
        header.root_dispersion = clock.root_dispersion;
        header.transmit_ts = ntp_from_unix(now);
        let payload = wire::header_bytes(&header).map_err(BroadcastError::Wire)?;
        let packet = self
            .sender
            .packet(&payload, now)
            .map_err(BroadcastError::Sender)?;
        let datagram = wire::encode(&packet).map_err(BroadcastError::Wire)?;
        self.data.send_to(&datagram, self.group)?;
        self.sent += 1;
        Ok(datagram.len())
    }

    /// Answers sync requests that arrive within `wait`; returns how many.
    ///
    /// # Errors
    /// Socket errors (a bad request is skipped, not an error).
    pub fn answer_syncs(&mut self, wait: Duration) -> Result<usize, BroadcastError> {
        let deadline = Instant::now() + wait;
        let mut answered = 0;
        let mut buf = [0u8; 1500];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(answered);
            }
            self.sync.set_read_timeout(Some(left))?;
            let (n, from) = match self.sync.recv_from(&mut buf) {
                Ok(r) => r,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(answered);
                }
                Err(e) => return Err(e.into()),
            };
            let Ok(fragments) =
                self.sender
                    .sync_response(&buf[..n], unix_time(), self.signer.as_mut())
            else {
                continue;
            };
            for f in fragments {
                self.sync.send_to(&f, from)?;
            }
            answered += 1;
            self.syncs += 1;
        }
    }
}

/// Bootstraps a client by direct time synchronisation with the server's sync
/// address, on the [`monotonic_time`] clock.
///
/// # Errors
/// Socket errors, a refused response, or none within `timeout`.
pub fn bootstrap(
    sync_addr: SocketAddr,
    verifier: &dyn BootstrapVerifier,
    receiver_config: ReceiverConfig,
    config: ClientConfig,
    timeout: Duration,
) -> Result<BroadcastClient, BroadcastError> {
    let socket = UdpSocket::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let mut nonce = [0u8; 32];
    getrandom::fill(&mut nonce)
        .map_err(|e| BroadcastError::Io(std::io::Error::other(e.to_string())))?;
    let sent_at = monotonic_time();
    let (mut sync, request) =
        SyncClient::new(&nonce, sent_at, receiver_config).map_err(BroadcastError::Bootstrap)?;
    socket.send_to(&request, sync_addr)?;
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 2048];
    let receiver: Receiver = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(BroadcastError::Timeout);
        }
        socket.set_read_timeout(Some(left))?;
        let n = match socket.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(BroadcastError::Timeout);
            }
            Err(e) => return Err(e.into()),
        };
        match sync.handle(&buf[..n], monotonic_time(), verifier) {
            Ok(Some(r)) => break r,
            Ok(None) => {}
            Err(e) => return Err(BroadcastError::Bootstrap(e)),
        }
    };
    let arrived = monotonic_time();
    let bound = *receiver.clock_bound();
    let sender_time = i128::from(bound.reference.0) + i128::from(bound.offset_ns);
    let lower = sender_time - i128::from(arrived.0);
    let sender_unix_secs = i64::try_from(sender_time / 1_000_000_000).unwrap_or(0);
    Ok(BroadcastClient::new(
        receiver,
        Bootstrap {
            bound,
            lower_offset_ns: i64::try_from(lower).unwrap_or(i64::MIN),
        },
        config,
        sender_unix_secs,
    ))
}
