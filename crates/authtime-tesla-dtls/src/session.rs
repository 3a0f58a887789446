//! The two ends: a TESLA sender that is a DTLS server, and a TESLA receiver
//! that is a DTLS client (see the crate documentation for the message flow).

use std::{
    net::{SocketAddr, UdpSocket},
    time::{Duration, Instant},
};

use authtime_tesla::{
    BootstrapSigner, BootstrapVerifier, Receiver, ReceiverConfig, Sender, Status, SyncClient,
    SyncRequest, Time,
};
use openssl::ssl::{ErrorCode, Ssl, SslContext, SslStream};

use crate::{
    DtlsError,
    channel::DatagramChannel,
    config::{DtlsMode, MTU, client_context, peer_index, server_context},
    flights::DatagramLog,
};

/// RFC 5705 exporter label that binds a TESLA bootstrap to a DTLS session.
pub const EXPORTER_LABEL: &str = "EXPORTER-authtime-tesla-sync";
/// Length of the exported sync nonce.
pub const NONCE_LEN: usize = 32;
/// Largest sync-response fragment put in one DTLS record: with the record's
/// own 29 bytes (PSK-AES128-CCM8) or 37 (AES-GCM) it stays below [`MTU`].
pub const FRAGMENT_SIZE: usize = 1200;

/// A DTLS session over a UDP channel.
pub type DtlsStream = SslStream<DatagramChannel>;

/// The nonce both ends derive from the session: the sender signs it into the
/// sync response, the receiver checks it, so a signed response cannot be
/// replayed into another DTLS session.
///
/// # Errors
/// OpenSSL's (no session yet).
pub fn session_nonce(stream: &DtlsStream) -> Result<[u8; NONCE_LEN], DtlsError> {
    let mut nonce = [0u8; NONCE_LEN];
    stream
        .ssl()
        .export_keying_material(&mut nonce, EXPORTER_LABEL, None)?;
    Ok(nonce)
}

/// Waits for a Client Hello on `socket` and runs the server side of a
/// handshake with that peer (cookie exchange included).
///
/// # Errors
/// Timeouts, socket errors, a failed handshake.
pub fn accept_session(
    socket: &UdpSocket,
    ctx: &SslContext,
    timeout: Duration,
) -> Result<DtlsStream, DtlsError> {
    socket.set_read_timeout(Some(timeout))?;
    let mut buf = vec![0u8; 65_535];
    let (n, peer) = socket.recv_from(&mut buf).map_err(io_timeout)?;
    buf.truncate(n);
    let channel = DatagramChannel::new(socket.try_clone()?, peer, Some(buf));
    let mut ssl = Ssl::new(ctx)?;
    ssl.set_mtu(MTU)?;
    ssl.set_ex_data(peer_index()?, peer);
    let mut stream = SslStream::new(ssl, channel)?;
    stream.accept().map_err(ssl_error)?;
    Ok(stream)
}

/// Runs the client side of a handshake with `server` from a fresh loopback
/// socket; every datagram is recorded in `log`.
///
/// # Errors
/// Timeouts, socket errors, a failed handshake.
pub fn connect_session(
    server: SocketAddr,
    ctx: &SslContext,
    timeout: Duration,
    log: DatagramLog,
) -> Result<DtlsStream, DtlsError> {
    let bind: SocketAddr = if server.is_ipv4() {
        ([127, 0, 0, 1], 0).into()
    } else {
        (std::net::Ipv6Addr::LOCALHOST, 0).into()
    };
    let socket = UdpSocket::bind(bind)?;
    socket.set_read_timeout(Some(timeout))?;
    let channel = DatagramChannel::new(socket, server, None).with_log(log);
    let mut ssl = Ssl::new(ctx)?;
    ssl.set_mtu(MTU)?;
    let mut stream = SslStream::new(ssl, channel)?;
    stream.connect().map_err(ssl_error)?;
    Ok(stream)
}

/// Reads one record's plaintext.
///
/// # Errors
/// [`DtlsError::Timeout`], [`DtlsError::Closed`], or the session's error.
pub fn read_record(stream: &mut DtlsStream, buf: &mut [u8]) -> Result<usize, DtlsError> {
    match stream.ssl_read(buf) {
        Ok(0) => Err(DtlsError::Closed),
        Ok(n) => Ok(n),
        Err(e) if e.code() == ErrorCode::ZERO_RETURN => Err(DtlsError::Closed),
        Err(e) => Err(ssl_error(e)),
    }
}

/// Writes one record.
///
/// # Errors
/// The session's error.
pub fn write_record(stream: &mut DtlsStream, data: &[u8]) -> Result<(), DtlsError> {
    let n = stream.ssl_write(data).map_err(ssl_error)?;
    if n == data.len() {
        Ok(())
    } else {
        Err(DtlsError::Ssl(format!(
            "short write: {n} of {}",
            data.len()
        )))
    }
}

fn io_timeout(e: std::io::Error) -> DtlsError {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => DtlsError::Timeout,
        _ => DtlsError::Io(e),
    }
}

fn ssl_error(e: impl std::fmt::Display + SslErrorIo) -> DtlsError {
    if e.is_timeout() {
        DtlsError::Timeout
    } else {
        DtlsError::Ssl(e.to_string())
    }
}

/// Tells OpenSSL errors that are read timeouts of the channel.
trait SslErrorIo {
    fn is_timeout(&self) -> bool;
}

impl SslErrorIo for openssl::ssl::Error {
    fn is_timeout(&self) -> bool {
        self.io_error().is_some_and(|e| {
            matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            )
        })
    }
}

impl<S> SslErrorIo for openssl::ssl::HandshakeError<S> {
    fn is_timeout(&self) -> bool {
        match self {
            Self::Failure(m) | Self::WouldBlock(m) => m.error().is_timeout(),
            Self::SetupFailure(_) => false,
        }
    }
}

/// What the sender did for one client.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The client's address.
    pub peer: SocketAddr,
    /// Sync-response records sent (fragments).
    pub sync_records: usize,
    /// Sync-response bytes (plaintext, TESLA fragment headers included).
    pub sync_bytes: usize,
    /// Time spent signing and sending the response.
    pub bootstrap_time: Duration,
}

/// A TESLA sender serving DTLS clients: each client gets a handshake, then
/// the sync response signed over the session's exported nonce, then every
/// TESLA packet the sender broadcasts. The packets are the same bytes for
/// every client, so receivers authenticate the *sender*, not the session.
pub struct TeslaDtlsServer {
    socket: UdpSocket,
    ctx: SslContext,
    sender: Sender,
    signer: Box<dyn BootstrapSigner + Send>,
    sessions: Vec<DtlsStream>,
}

impl std::fmt::Debug for TeslaDtlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeslaDtlsServer")
            .field("sender", &self.sender)
            .field("sessions", &self.sessions.len())
            .finish_non_exhaustive()
    }
}

impl TeslaDtlsServer {
    /// A server on `socket` (bound already) in `mode`, sending for `sender`.
    ///
    /// # Errors
    /// OpenSSL's, or no randomness for the cookie secret.
    pub fn new(
        socket: UdpSocket,
        mode: &DtlsMode,
        mut sender: Sender,
        signer: Box<dyn BootstrapSigner + Send>,
    ) -> Result<Self, DtlsError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| DtlsError::Ssl(format!("no randomness: {e}")))?;
        sender.set_max_datagram(FRAGMENT_SIZE);
        Ok(Self {
            socket,
            ctx: server_context(mode, secret)?,
            sender,
            signer,
            sessions: Vec::new(),
        })
    }

    /// The local address clients connect to.
    ///
    /// # Errors
    /// The socket's.
    pub fn local_addr(&self) -> Result<SocketAddr, DtlsError> {
        Ok(self.socket.local_addr()?)
    }

    /// Sessions served.
    #[must_use]
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// The TESLA sender.
    #[must_use]
    pub fn sender(&self) -> &Sender {
        &self.sender
    }

    /// Accepts one client: handshake, then the signed sync response (bound to
    /// the session by [`session_nonce`]) as its first protected records.
    /// `clock` is the sender's clock (the TESLA schedule's time scale).
    ///
    /// # Errors
    /// Timeouts, a failed handshake, a signer failure.
    pub fn accept(
        &mut self,
        clock: &dyn Fn() -> Time,
        timeout: Duration,
    ) -> Result<Accepted, DtlsError> {
        let mut stream = accept_session(&self.socket, &self.ctx, timeout)?;
        let start = Instant::now();
        let nonce = session_nonce(&stream)?;
        let request = SyncRequest::encode(&nonce);
        let fragments = self
            .sender
            .sync_response(&request, clock(), self.signer.as_mut())
            .map_err(DtlsError::Sender)?;
        let mut sync_bytes = 0;
        for f in &fragments {
            write_record(&mut stream, f)?;
            sync_bytes += f.len();
        }
        let accepted = Accepted {
            peer: stream.get_ref().peer(),
            sync_records: fragments.len(),
            sync_bytes,
            bootstrap_time: start.elapsed(),
        };
        self.sessions.push(stream);
        Ok(accepted)
    }

    /// Sends `payload` in one TESLA data packet to every session; returns the
    /// packet (the same bytes went to everyone). Sessions whose write fails are
    /// closed.
    ///
    /// # Errors
    /// The sender's (a time outside the schedule).
    pub fn broadcast(&mut self, payload: &[u8], now: Time) -> Result<Vec<u8>, DtlsError> {
        let packet = self
            .sender
            .packet(payload, now)
            .map_err(DtlsError::Sender)?;
        self.send_all(&packet);
        Ok(packet)
    }

    /// Sends a key-disclosure packet to every session.
    ///
    /// # Errors
    /// The sender's.
    pub fn disclose_key(&mut self, now: Time) -> Result<Vec<u8>, DtlsError> {
        let packet = self.sender.key_disclosure(now).map_err(DtlsError::Sender)?;
        self.send_all(&packet);
        Ok(packet)
    }

    fn send_all(&mut self, packet: &[u8]) {
        self.sessions
            .retain_mut(|s| write_record(s, packet).is_ok());
    }

    /// Closes every session (DTLS close_notify).
    pub fn close(&mut self) {
        for mut s in self.sessions.drain(..) {
            let _ = s.shutdown();
        }
    }
}

/// How long a receiver's bootstrap took.
#[derive(Debug, Clone, Copy)]
pub struct BootstrapTiming {
    /// Client Hello to the end of the DTLS handshake.
    pub handshake: Duration,
    /// Client Hello to a verified sync response (the TESLA handshake).
    pub total: Duration,
    /// Sync-response records received.
    pub sync_records: usize,
}

/// A TESLA receiver bootstrapped over DTLS, reading the sender's stream.
pub struct TeslaDtlsClient {
    stream: DtlsStream,
    receiver: Receiver,
    log: DatagramLog,
    timing: BootstrapTiming,
    buf: Vec<u8>,
}

impl std::fmt::Debug for TeslaDtlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeslaDtlsClient")
            .field("receiver", &self.receiver)
            .field("timing", &self.timing)
            .finish_non_exhaustive()
    }
}

impl TeslaDtlsClient {
    /// Connects to `server`, runs the handshake, and bootstraps TESLA from the
    /// first protected records: the response must carry this session's
    /// exported nonce and verify under `verifier`. The clock bound is direct
    /// time synchronisation with the request time taken *before* the Client
    /// Hello (the nonce cannot exist earlier), so the whole handshake counts
    /// as round trip. `clock` is the receiver's local clock.
    ///
    /// # Errors
    /// Timeouts, a failed handshake, a refused bootstrap.
    pub fn connect(
        server: SocketAddr,
        mode: &DtlsMode,
        verifier: &dyn BootstrapVerifier,
        config: ReceiverConfig,
        clock: &dyn Fn() -> Time,
        timeout: Duration,
    ) -> Result<Self, DtlsError> {
        let ctx = client_context(mode)?;
        let log = DatagramLog::default();
        let start = Instant::now();
        let request_time = clock();
        let mut stream = connect_session(server, &ctx, timeout, log.clone())?;
        let handshake = start.elapsed();
        let nonce = session_nonce(&stream)?;
        let (mut sync, _request) =
            SyncClient::new(&nonce, request_time, config).map_err(DtlsError::Bootstrap)?;
        let mut buf = vec![0u8; 65_535];
        let mut sync_records = 0;
        let receiver = loop {
            let n = read_record(&mut stream, &mut buf)?;
            sync_records += 1;
            if let Some(r) = sync
                .handle(&buf[..n], clock(), verifier)
                .map_err(DtlsError::Bootstrap)?
            {
                break r;
            }
        };
        Ok(Self {
            stream,
            receiver,
            log,
            timing: BootstrapTiming {
                handshake,
                total: start.elapsed(),
                sync_records,
            },
            buf,
        })
    }

    /// Reads one record and hands it to the TESLA receiver.
    ///
    /// # Errors
    /// Timeouts, a closed session.
    pub fn recv(&mut self, clock: &dyn Fn() -> Time) -> Result<Status, DtlsError> {
        let n = read_record(&mut self.stream, &mut self.buf)?;
        Ok(self.receiver.handle(&self.buf[..n], clock()))
    }

    /// The TESLA receiver.
    #[must_use]
    pub fn receiver(&self) -> &Receiver {
        &self.receiver
    }

    /// Every datagram this end sent and received.
    #[must_use]
    pub fn log(&self) -> &DatagramLog {
        &self.log
    }

    /// Bootstrap timings.
    #[must_use]
    pub fn timing(&self) -> BootstrapTiming {
        self.timing
    }
}
