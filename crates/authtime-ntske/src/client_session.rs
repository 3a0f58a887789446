//! An NTS client session (RFC 8915): NTS-KE over TLS 1.3 when the cookie jar
//! is empty, then NTS-protected NTP exchanges with the server NTS-KE names.
//! Each cookie is used once and the fresh ones are kept; an NTS NAK makes the
//! session redo NTS-KE once (section 5.7). The jar can be restored from and
//! saved to a file between runs ([`crate::cookie_store`]).
//!
//! This is a blocking driver: it owns a current-thread tokio runtime for the
//! TLS part and a UDP socket per exchange, and reads the system clock for t1
//! and t4. It prints nothing; callers read [`NtsSession::ke_stats`] and the
//! jar for their reports.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::Path;
use std::time::Duration;

use authtime_proto::Sample;

use crate::client_exchange::exchange;
pub use crate::client_session_error::{FailureClass, SessionError};
use crate::cookie_store::CookieJar;
use crate::{KeClient, KeClientError};

/// What NTS-KE did in this session, for the caller's report.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct KeStats {
    /// Key exchanges run (successful or not).
    pub exchanges: u32,
    /// Duration of the last successful key exchange, in milliseconds.
    pub last_ms: Option<f64>,
    /// Whether the session started from a stored jar.
    pub from_store: bool,
}

/// Why a session could not be set up.
#[non_exhaustive]
#[derive(Debug)]
pub enum SessionSetupError {
    /// The tokio runtime for NTS-KE did not start.
    Runtime(std::io::Error),
    /// The TLS client (its trust anchors) could not be made.
    Client(KeClientError),
}

impl fmt::Display for SessionSetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Runtime(e) => write!(f, "cannot start the async runtime: {e}"),
            Self::Client(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SessionSetupError {}

/// An NTS client bound to one NTS-KE server.
pub struct NtsSession {
    runtime: tokio::runtime::Runtime,
    client: KeClient,
    host: String,
    port: u16,
    timeout: Duration,
    jar: Option<CookieJar>,
    stats: KeStats,
    ntp_addr: Option<SocketAddr>,
}

impl fmt::Debug for NtsSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NtsSession")
            .field("ke_server", &self.ke_server())
            .field("jar", &self.jar)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl NtsSession {
    /// A session with the NTS-KE server `host:port`, trusting the system
    /// roots or only `ca` (a PEM file); `timeout` bounds each NTS-KE and
    /// each exchange.
    ///
    /// # Errors
    /// The runtime does not start, or `ca` cannot be loaded.
    pub fn new(
        host: &str,
        port: u16,
        ca: Option<&Path>,
        timeout: Duration,
    ) -> Result<Self, SessionSetupError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(SessionSetupError::Runtime)?;
        let client = KeClient::new(ca).map_err(SessionSetupError::Client)?;
        Ok(Self {
            runtime,
            client,
            host: host.to_owned(),
            port,
            timeout,
            jar: None,
            stats: KeStats::default(),
            ntp_addr: None,
        })
    }

    /// `host:port` of the NTS-KE server, as the cookie store keys it.
    #[must_use]
    pub fn ke_server(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// Starts from a stored jar (`None`: nothing stored for this server).
    pub fn restore(&mut self, jar: Option<CookieJar>) {
        self.stats.from_store = jar.is_some();
        self.jar = jar;
    }

    /// The current jar, to save or report.
    #[must_use]
    pub fn jar(&self) -> Option<&CookieJar> {
        self.jar.as_ref()
    }

    /// What NTS-KE did so far.
    #[must_use]
    pub fn ke_stats(&self) -> KeStats {
        self.stats
    }

    /// The NTP server last asked (or about to be asked), once resolved.
    #[must_use]
    pub fn ntp_addr(&self) -> Option<SocketAddr> {
        self.ntp_addr
    }

    /// One protected exchange: NTS-KE first if the jar is empty, and once
    /// more if the server answers with a NAK.
    ///
    /// # Errors
    /// Why there is no sample; [`SessionError::class`] says how to report it.
    pub fn query(&mut self) -> Result<Sample, SessionError> {
        let mut retried_after_nak = false;
        loop {
            if self.jar.as_ref().is_none_or(|j| j.cookies.is_empty()) {
                self.key_exchange()?;
            }
            match self.exchange() {
                Err(SessionError::Nak) if !retried_after_nak => {
                    // RFC 8915 section 5.7: the cookies are useless; redo NTS-KE.
                    retried_after_nak = true;
                    self.jar = None;
                }
                Err(SessionError::Nak) => return Err(SessionError::NakAfterFreshKe),
                other => return other,
            }
        }
    }

    /// One NTS-KE, replacing the jar.
    ///
    /// # Errors
    /// The key exchange failed or gave no cookie; the old jar is kept.
    pub fn key_exchange(&mut self) -> Result<(), SessionError> {
        self.stats.exchanges += 1;
        let server = self.ke_server();
        let outcome = self
            .runtime
            .block_on(self.client.fetch(&self.host, self.port, self.timeout))
            .map_err(|error| SessionError::KeyExchange {
                server: server.clone(),
                error,
            })?;
        self.stats.last_ms = Some(outcome.elapsed.as_secs_f64() * 1e3);
        if outcome.cookies.is_empty() {
            return Err(SessionError::NoCookie { server });
        }
        self.jar = Some(CookieJar {
            ke_server: server,
            aead_id: outcome.aead_id,
            c2s: outcome.keys.c2s.to_vec(),
            s2c: outcome.keys.s2c.to_vec(),
            ntp_server: outcome.ntp_server,
            ntp_port: outcome.ntp_port,
            cookies: outcome.cookies,
        });
        Ok(())
    }

    /// One protected exchange with the jar as it is: no NTS-KE, and a NAK
    /// returned as [`SessionError::Nak`].
    ///
    /// # Errors
    /// Why there is no sample.
    pub fn exchange(&mut self) -> Result<Sample, SessionError> {
        let Some(jar) = self.jar.as_mut() else {
            return Err(SessionError::NoCookieLeft);
        };
        let addr = resolve_ntp(jar)?;
        self.ntp_addr = Some(addr);
        exchange(jar, addr, self.timeout)
    }
}

fn resolve_ntp(jar: &CookieJar) -> Result<SocketAddr, SessionError> {
    let resolve_error = |error| SessionError::Resolve {
        ntp_server: jar.ntp_server.clone(),
        error,
    };
    (jar.ntp_server.as_str(), jar.ntp_port)
        .to_socket_addrs()
        .map_err(|e| resolve_error(Some(e)))?
        .next()
        .ok_or_else(|| resolve_error(None))
}
