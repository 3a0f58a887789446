//! An NTS client session (RFC 8915): NTS-KE over TLS 1.3 when the cookie jar
//! is empty, then NTS-protected NTP exchanges with the server NTS-KE names.
//! Each cookie is used once and the fresh ones are kept; an NTS NAK makes the
//! session redo NTS-KE once (section 5.7). The jar can be restored from and
//! saved to a file between runs ([`crate::cookie_store`]). A restored jar
//! whose request gets no reply is dropped and NTS-KE redone once too: a
//! server that cannot open its old cookies after a key change may stay
//! silent instead of sending the NAK (NTPsec 1.2 does), and the stored
//! cookies would then fail one by one on every later run.
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

use crate::cert_time::CertTime;
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
    /// TLS key exchange group of the last successful key exchange
    /// (`X25519MLKEM768`, `X25519`, ...).
    pub tls_group: Option<&'static str>,
    /// Whether the session started from a stored jar.
    pub from_store: bool,
    /// Whether that stored jar was dropped because its request got no
    /// reply (NTS-KE was then redone).
    pub stored_session_dropped: bool,
}

/// Why [`NtsSession::query`] runs NTS-KE again after a failed exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recovery {
    /// The server sent an NTS NAK (RFC 8915 section 5.7).
    AfterNak,
    /// The stored jar got no reply: it is dropped.
    DropStoredSession,
}

/// The NTS-KE retries [`NtsSession::query`] has used in one call.
#[derive(Debug, Default, Clone, Copy)]
struct Retries {
    after_nak: bool,
    after_silence: bool,
}

impl Retries {
    /// Whether to run NTS-KE again after `error`, or the error to report.
    /// `stored` is true while the jar is the one restored from the store
    /// and has not given an authenticated reply in this run: only such a
    /// jar is dropped for silence, once; a silent fresh session is a
    /// silent server, and asking it again in a loop would not help.
    fn after(&mut self, error: SessionError, stored: bool) -> Result<Recovery, SessionError> {
        match error {
            SessionError::Nak if !self.after_nak => {
                self.after_nak = true;
                Ok(Recovery::AfterNak)
            }
            SessionError::Nak => Err(SessionError::NakAfterFreshKe),
            SessionError::Timeout(_) | SessionError::ConnectionRefused
                if stored && !self.after_silence =>
            {
                self.after_silence = true;
                Ok(Recovery::DropStoredSession)
            }
            SessionError::Timeout(t) if self.after_silence => {
                Err(SessionError::TimeoutAfterDroppingStored(t))
            }
            other => Err(other),
        }
    }
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
    /// The jar is the restored one and has not been answered in this run.
    jar_unproven_from_store: bool,
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
        Self::new_at(host, port, ca, timeout, CertTime::SystemClock)
    }

    /// [`NtsSession::new`] checking the NTS-KE server's certificate chain
    /// at `cert_time` (an instant, or an interval such as Roughtime's, over
    /// which the chain must be valid) instead of the system clock. The NTP
    /// exchanges still read the system clock for their timestamps.
    ///
    /// # Errors
    /// The runtime does not start, `ca` cannot be loaded, or `cert_time` is
    /// an empty interval.
    pub fn new_at(
        host: &str,
        port: u16,
        ca: Option<&Path>,
        timeout: Duration,
        cert_time: CertTime,
    ) -> Result<Self, SessionSetupError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(SessionSetupError::Runtime)?;
        let client = KeClient::new_at(ca, cert_time).map_err(SessionSetupError::Client)?;
        Ok(Self {
            runtime,
            client,
            host: host.to_owned(),
            port,
            timeout,
            jar: None,
            stats: KeStats::default(),
            ntp_addr: None,
            jar_unproven_from_store: false,
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
        self.jar_unproven_from_store = jar.is_some();
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
    /// more if the server answers with a NAK, or if a jar restored from the
    /// store gets no reply (no reply or an ICMP refusal; the jar is dropped
    /// and [`KeStats::stored_session_dropped`] says so).
    ///
    /// # Errors
    /// Why there is no sample; [`SessionError::class`] says how to report it.
    pub fn query(&mut self) -> Result<Sample, SessionError> {
        let mut retries = Retries::default();
        loop {
            if self.jar.as_ref().is_none_or(|j| j.cookies.is_empty()) {
                self.key_exchange()?;
            }
            let error = match self.exchange() {
                Ok(sample) => return Ok(sample),
                // An authenticated reply (even an unusable one) proves the jar.
                Err(e @ SessionError::Reply(_)) => {
                    self.jar_unproven_from_store = false;
                    return Err(e);
                }
                Err(e) => e,
            };
            match retries.after(error, self.jar_unproven_from_store)? {
                // RFC 8915 section 5.7: the cookies are useless; redo NTS-KE.
                Recovery::AfterNak => {}
                Recovery::DropStoredSession => self.stats.stored_session_dropped = true,
            }
            self.jar = None;
            self.jar_unproven_from_store = false;
        }
    }

    /// One NTS-KE, replacing the jar (on success).
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
        self.stats.tls_group = outcome.tls_group;
        if outcome.cookies.is_empty() {
            return Err(SessionError::NoCookie { server });
        }
        self.jar_unproven_from_store = false;
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
        let result = exchange(jar, addr, self.timeout);
        if result.is_ok() {
            self.jar_unproven_from_store = false;
        }
        result
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

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(2);

    #[test]
    fn a_silent_stored_session_is_dropped_once() {
        let mut retries = Retries::default();
        assert_eq!(
            retries.after(SessionError::Timeout(T), true).ok(),
            Some(Recovery::DropStoredSession)
        );
        // The fresh session is silent too: reported, not retried.
        let e = retries
            .after(SessionError::Timeout(T), false)
            .expect_err("fail");
        assert!(
            matches!(e, SessionError::TimeoutAfterDroppingStored(_)),
            "{e:?}"
        );
        assert_eq!(e.class(), FailureClass::NoAnswer);
        assert!(e.to_string().contains("dropped"), "{e}");
        // An ICMP refusal of a stored session counts as silence too.
        assert_eq!(
            Retries::default()
                .after(SessionError::ConnectionRefused, true)
                .ok(),
            Some(Recovery::DropStoredSession)
        );
    }

    #[test]
    fn a_silent_fresh_session_is_not_retried() {
        let e = Retries::default()
            .after(SessionError::Timeout(T), false)
            .expect_err("fail");
        assert!(matches!(e, SessionError::Timeout(_)), "{e:?}");
    }

    #[test]
    fn a_nak_redoes_nts_ke_once_also_after_a_dropped_session() {
        let mut retries = Retries::default();
        assert_eq!(
            retries.after(SessionError::Timeout(T), true).ok(),
            Some(Recovery::DropStoredSession)
        );
        assert_eq!(
            retries.after(SessionError::Nak, false).ok(),
            Some(Recovery::AfterNak)
        );
        let e = retries.after(SessionError::Nak, false).expect_err("fail");
        assert!(matches!(e, SessionError::NakAfterFreshKe), "{e:?}");
    }

    #[test]
    fn other_failures_are_reported_as_they_are() {
        let e = Retries::default()
            .after(SessionError::NoCookieLeft, true)
            .expect_err("fail");
        assert!(matches!(e, SessionError::NoCookieLeft), "{e:?}");
    }
}
