//! The tokio-rustls driver of [`crate::pool_client`]: one TLS 1.3 connection (ALPN
//! `ntske/1`) to a pool member, one request written in one flush, the answer read
//! through a bounded [`MessageReader`] up to End of Message.
//!
//! Connecting and exchanging are separate steps so that a balancer can tell failures
//! before its client's keys left (connect, TLS) from failures after.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::ALPN_NTSKE;
use crate::message::{MessageError, MessageLimits, MessageReader, Progress};
use crate::pool_client::{
    BackendError, PoolToken, Support, parse_support_response, support_request,
};
use crate::record::Record;

/// The TLS name for `host` (a DNS name or an IP address, brackets of an IPv6 literal
/// removed).
pub fn tls_server_name(host: &str) -> Result<ServerName<'static>, String> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    ServerName::try_from(bare.to_owned())
        .map_err(|_| format!("`{host}` is not a DNS name or an IP address"))
}

/// Where a backend is and how its certificate is checked.
#[derive(Clone)]
pub struct BackendEndpoint {
    /// Host name or IP address (an IPv6 literal with or without brackets).
    pub host: String,
    /// NTS-KE port.
    pub port: u16,
    /// The name its certificate must hold.
    pub tls_name: ServerName<'static>,
    /// TLS 1.3 client configuration with ALPN `ntske/1` and the trust anchors.
    pub tls: Arc<rustls::ClientConfig>,
}

impl fmt::Debug for BackendEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendEndpoint")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls_name", &self.tls_name)
            .finish_non_exhaustive()
    }
}

/// Why talking to a backend failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BackendIoError {
    /// TCP connect (or name resolution) failed.
    Connect(io::Error),
    /// The TLS handshake failed.
    Handshake(io::Error),
    /// The backend did not negotiate ALPN `ntske/1`.
    NoAlpn,
    /// Reading or writing after the handshake failed.
    Io(io::Error),
    /// The step took longer than its timeout.
    Timeout,
    /// The answer is not one valid message within the limits.
    Message(MessageError),
    /// The answer is a valid message that cannot be used.
    Backend(BackendError),
    /// The request could not be encoded.
    Encode,
}

impl fmt::Display for BackendIoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect(e) => write!(f, "connect: {e}"),
            Self::Handshake(e) => write!(f, "TLS handshake: {e}"),
            Self::NoAlpn => f.write_str("no ALPN ntske/1"),
            Self::Io(e) => write!(f, "I/O: {e}"),
            Self::Timeout => f.write_str("timed out"),
            Self::Message(e) => write!(f, "{e}"),
            Self::Backend(e) => write!(f, "{e}"),
            Self::Encode => f.write_str("request not encodable"),
        }
    }
}

impl std::error::Error for BackendIoError {}

/// An open TLS connection to a backend.
pub struct BackendConnection {
    tls: TlsStream<TcpStream>,
}

impl fmt::Debug for BackendConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendConnection").finish_non_exhaustive()
    }
}

impl BackendEndpoint {
    /// TCP connect and TLS handshake, within `timeout`.
    pub async fn connect(&self, timeout: Duration) -> Result<BackendConnection, BackendIoError> {
        let run = async {
            let host = self
                .host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(&self.host);
            let tcp = TcpStream::connect((host, self.port))
                .await
                .map_err(BackendIoError::Connect)?;
            let _ = tcp.set_nodelay(true);
            let tls = TlsConnector::from(self.tls.clone())
                .connect(self.tls_name.clone(), tcp)
                .await
                .map_err(BackendIoError::Handshake)?;
            if tls.get_ref().1.alpn_protocol() != Some(ALPN_NTSKE) {
                return Err(BackendIoError::NoAlpn);
            }
            Ok(BackendConnection { tls })
        };
        tokio::time::timeout(timeout, run)
            .await
            .unwrap_or(Err(BackendIoError::Timeout))
    }
}

impl BackendConnection {
    /// Writes `request` and reads the answer's records, End of Message included,
    /// within `timeout`.
    pub async fn exchange(
        &mut self,
        request: &[u8],
        timeout: Duration,
    ) -> Result<Vec<Record>, BackendIoError> {
        let run = async {
            self.tls
                .write_all(request)
                .await
                .map_err(BackendIoError::Io)?;
            self.tls.flush().await.map_err(BackendIoError::Io)?;
            let mut reader = MessageReader::new(MessageLimits::RESPONSE);
            let mut buf = vec![0u8; 4096];
            loop {
                let n = self.tls.read(&mut buf).await.map_err(BackendIoError::Io)?;
                if n == 0 {
                    return reader.finish().map_err(BackendIoError::Message);
                }
                match reader.feed(&buf[..n]).map_err(BackendIoError::Message)? {
                    Progress::Complete => return reader.finish().map_err(BackendIoError::Message),
                    Progress::NeedMore => {}
                }
            }
        };
        tokio::time::timeout(timeout, run)
            .await
            .unwrap_or(Err(BackendIoError::Timeout))
    }

    /// Sends close_notify (bounded by a short timeout) and closes.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_millis(250), self.tls.shutdown()).await;
    }
}

/// One Support query on a new connection, within `timeout` per step.
pub async fn query_support(
    endpoint: &BackendEndpoint,
    token: &PoolToken,
    timeout: Duration,
) -> Result<Support, BackendIoError> {
    let request = support_request(token, false).map_err(|_| BackendIoError::Encode)?;
    let mut connection = endpoint.connect(timeout).await?;
    let records = connection.exchange(&request, timeout).await;
    connection.close().await;
    parse_support_response(&records?).map_err(BackendIoError::Backend)
}
