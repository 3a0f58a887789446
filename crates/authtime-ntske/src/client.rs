//! The NTS-KE client driver: TCP + TLS 1.3 (tokio-rustls) around [`client_core`].
//!
//! It sets TCP_NODELAY, sends SNI for host names (none for IP literals, as TLS requires),
//! accepts IPv6 literals with or without brackets, writes the request in one flush and
//! stops reading at End of Message instead of waiting for the server to close.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls_pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::TlsConnector;

use crate::ALPN_NTSKE;
use crate::NTP_PORT;
use crate::cert_time::{CertTime, is_validity_error};
use crate::client_core::{
    self, DEFAULT_AEAD_PREFERENCE, ResponseError, build_request, parse_response_records,
};
use crate::key_export::SessionKeys;
use crate::message::{MessageLimits, MessageReader, Progress};
use crate::tls_config::{TlsConfigError, client_config_at, negotiated_group};

/// Why a key exchange failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum KeClientError {
    /// The trust anchors could not be loaded.
    Config(TlsConfigError),
    /// The host is neither a DNS name nor an IP address.
    InvalidHost(String),
    /// An empty AEAD preference list.
    NoAeadOffered,
    /// TCP connect (or name resolution) failed.
    Connect(io::Error),
    /// The TLS handshake failed (certificate, version, ALPN refused by the server).
    Handshake(io::Error),
    /// The server completed the handshake without ALPN `ntske/1`.
    NoAlpn,
    /// Reading or writing after the handshake failed.
    Io(io::Error),
    /// The whole exchange took longer than the timeout.
    Timeout,
    /// The response was refused (server error, bad records, bad cookies, key export).
    Response(ResponseError),
}

impl fmt::Display for KeClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "{e}"),
            Self::InvalidHost(h) => write!(f, "invalid host name {h:?}"),
            Self::NoAeadOffered => f.write_str("no AEAD algorithm to offer"),
            Self::Connect(e) => write!(f, "connect: {e}"),
            Self::Handshake(e) => write!(f, "TLS handshake: {e}"),
            Self::NoAlpn => f.write_str("server did not negotiate ALPN ntske/1"),
            Self::Io(e) => write!(f, "NTS-KE I/O: {e}"),
            Self::Timeout => f.write_str("NTS-KE timed out"),
            Self::Response(e) => write!(f, "NTS-KE response: {e}"),
        }
    }
}

impl std::error::Error for KeClientError {}

impl KeClientError {
    /// Whether the TLS handshake failed because a certificate of the
    /// server's chain is outside its validity period at the time it was
    /// checked against (expired or not yet valid), as a wrong clock makes it.
    #[must_use]
    pub fn is_certificate_validity(&self) -> bool {
        let Self::Handshake(e) = self else {
            return false;
        };
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .is_some_and(is_validity_error)
    }
}

/// The result of a successful key exchange.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct KeOutcome {
    /// The AEAD the server chose.
    pub aead_id: u16,
    /// C2S and S2C.
    pub keys: SessionKeys,
    /// At most 8 cookies.
    pub cookies: Vec<Vec<u8>>,
    /// Cookies beyond 8 that were dropped.
    pub cookies_dropped: usize,
    /// NTP server to use: the Server Negotiation record, else the KE server's IP address
    /// (RFC 8915 section 4.1.7).
    pub ntp_server: String,
    /// NTP port: the Port Negotiation record, else 123.
    pub ntp_port: u16,
    /// The KE server's address we connected to.
    pub ke_peer: SocketAddr,
    /// Time from starting the TCP connect to keys ready.
    pub elapsed: Duration,
    /// Part of `elapsed` spent on TCP connect and TLS handshake.
    pub handshake_elapsed: Duration,
    /// The TLS key exchange group negotiated (`X25519MLKEM768`, `X25519`,
    /// ...: [`crate::tls_config::group_name`]).
    pub tls_group: Option<&'static str>,
}

/// An NTS-KE client with its trust anchors and AEAD preference.
#[derive(Clone)]
pub struct KeClient {
    tls: Arc<rustls::ClientConfig>,
    aead_preference: Vec<u16>,
}

impl fmt::Debug for KeClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeClient")
            .field("aead_preference", &self.aead_preference)
            .finish_non_exhaustive()
    }
}

/// The TLS name of `host` (brackets of an IPv6 literal removed).
fn server_name(host: &str) -> Result<ServerName<'static>, KeClientError> {
    let host = bare_host(host);
    ServerName::try_from(host.to_owned()).map_err(|_| KeClientError::InvalidHost(host.to_owned()))
}

/// Removes the brackets of an IPv6 literal (`[::1]` -> `::1`).
fn bare_host(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

impl KeClient {
    /// A client trusting the certificates in `ca_file` (a CA or the server's self-signed
    /// certificate), or the webpki roots when `None`.
    pub fn new(ca_file: Option<&Path>) -> Result<Self, KeClientError> {
        Self::new_at(ca_file, CertTime::SystemClock)
    }

    /// [`KeClient::new`] checking the server's certificate chain at `time`
    /// (an instant, or an interval over which it must be valid) instead of
    /// the system clock.
    pub fn new_at(ca_file: Option<&Path>, time: CertTime) -> Result<Self, KeClientError> {
        Ok(Self {
            tls: client_config_at(ca_file, time).map_err(KeClientError::Config)?,
            aead_preference: DEFAULT_AEAD_PREFERENCE.to_vec(),
        })
    }

    /// A client with a ready rustls configuration (it must offer ALPN `ntske/1`).
    pub fn from_config(tls: Arc<rustls::ClientConfig>) -> Self {
        Self {
            tls,
            aead_preference: DEFAULT_AEAD_PREFERENCE.to_vec(),
        }
    }

    /// Sets the AEAD ids to offer, most preferred first.
    pub fn with_aead_preference(mut self, aead_preference: Vec<u16>) -> Self {
        self.aead_preference = aead_preference;
        self
    }

    /// Runs one key exchange with `host:port` (host: DNS name, IPv4, or IPv6 with or
    /// without brackets), all of it within `timeout`.
    pub async fn fetch(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<KeOutcome, KeClientError> {
        match tokio::time::timeout(timeout, self.exchange(host, port)).await {
            Ok(result) => result,
            Err(_) => Err(KeClientError::Timeout),
        }
    }

    /// Runs one key exchange with the server at `addr`, checking its certificate
    /// against `tls_name` (a DNS name or IP address), all of it within `timeout`.
    /// Unlike [`KeClient::fetch`] it resolves no name: load generators call it
    /// many times a second.
    pub async fn fetch_at(
        &self,
        addr: SocketAddr,
        tls_name: &str,
        timeout: Duration,
    ) -> Result<KeOutcome, KeClientError> {
        let run = async {
            let started = Instant::now();
            let server_name = server_name(tls_name)?;
            let tcp = TcpStream::connect(addr)
                .await
                .map_err(KeClientError::Connect)?;
            self.exchange_on(started, server_name, tcp).await
        };
        match tokio::time::timeout(timeout, run).await {
            Ok(result) => result,
            Err(_) => Err(KeClientError::Timeout),
        }
    }

    /// [`KeClient::fetch_at`] from the local address `source` (port chosen by the
    /// system): several clients on one machine, each from an address of its own.
    pub async fn fetch_from(
        &self,
        source: IpAddr,
        addr: SocketAddr,
        tls_name: &str,
        timeout: Duration,
    ) -> Result<KeOutcome, KeClientError> {
        let run = async {
            let started = Instant::now();
            let server_name = server_name(tls_name)?;
            let socket = if addr.is_ipv4() {
                TcpSocket::new_v4()
            } else {
                TcpSocket::new_v6()
            }
            .map_err(KeClientError::Connect)?;
            socket
                .bind(SocketAddr::new(source, 0))
                .map_err(KeClientError::Connect)?;
            let tcp = socket.connect(addr).await.map_err(KeClientError::Connect)?;
            self.exchange_on(started, server_name, tcp).await
        };
        match tokio::time::timeout(timeout, run).await {
            Ok(result) => result,
            Err(_) => Err(KeClientError::Timeout),
        }
    }

    async fn exchange(&self, host: &str, port: u16) -> Result<KeOutcome, KeClientError> {
        let started = Instant::now();
        let server_name = server_name(host)?;
        let tcp = TcpStream::connect((bare_host(host), port))
            .await
            .map_err(KeClientError::Connect)?;
        self.exchange_on(started, server_name, tcp).await
    }

    async fn exchange_on(
        &self,
        started: Instant,
        server_name: ServerName<'static>,
        tcp: TcpStream,
    ) -> Result<KeOutcome, KeClientError> {
        let request =
            build_request(&self.aead_preference).map_err(|_| KeClientError::NoAeadOffered)?;
        let _ = tcp.set_nodelay(true);
        let ke_peer = tcp.peer_addr().map_err(KeClientError::Connect)?;
        let mut tls = TlsConnector::from(self.tls.clone())
            .connect(server_name, tcp)
            .await
            .map_err(KeClientError::Handshake)?;
        if tls.get_ref().1.alpn_protocol() != Some(ALPN_NTSKE) {
            return Err(KeClientError::NoAlpn);
        }
        let handshake_elapsed = started.elapsed();
        let tls_group = negotiated_group(tls.get_ref().1);

        tls.write_all(&request).await.map_err(KeClientError::Io)?;
        tls.flush().await.map_err(KeClientError::Io)?;

        let mut reader = MessageReader::new(MessageLimits::RESPONSE);
        let mut buf = vec![0u8; 4096];
        loop {
            let n = tls.read(&mut buf).await.map_err(KeClientError::Io)?;
            let progress = if n == 0 {
                Progress::Complete
            } else {
                reader
                    .feed(&buf[..n])
                    .map_err(|e| KeClientError::Response(ResponseError::Message(e)))?
            };
            if progress == Progress::Complete {
                break;
            }
        }
        let records = reader
            .finish()
            .map_err(|e| KeClientError::Response(ResponseError::Message(e)))?;
        let session = parse_response_records(&records, &self.aead_preference)
            .map_err(KeClientError::Response)?;
        let keys =
            client_core::derive_keys(tls.get_ref().1, &session).map_err(KeClientError::Response)?;
        let elapsed = started.elapsed();
        // Polite close_notify; the result does not matter any more.
        let _ = tls.shutdown().await;

        Ok(KeOutcome {
            aead_id: session.aead_id,
            keys,
            cookies: session.cookies,
            cookies_dropped: session.cookies_dropped,
            ntp_server: session
                .ntp_server
                .unwrap_or_else(|| ke_peer.ip().to_string()),
            ntp_port: session.ntp_port.unwrap_or(NTP_PORT),
            ke_peer,
            elapsed,
            handshake_elapsed,
            tls_group,
        })
    }
}

/// One-shot key exchange: [`KeClient::new`] then [`KeClient::fetch`].
pub async fn fetch(
    host: &str,
    port: u16,
    ca_file: Option<&Path>,
    timeout: Duration,
) -> Result<KeOutcome, KeClientError> {
    KeClient::new(ca_file)?.fetch(host, port, timeout).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_are_removed_from_ipv6_literals() {
        assert_eq!(bare_host("[::1]"), "::1");
        assert_eq!(bare_host("::1"), "::1");
        assert_eq!(bare_host("ntp.example"), "ntp.example");
        assert!(ServerName::try_from(bare_host("[2001:db8::1]").to_owned()).is_ok());
    }
}
