//! The time an NTS-KE client checks the server's certificate chain against
//! (RFC 8915 section 8.5: a client whose clock is wrong cannot check it).
//!
//! By default rustls reads the system clock during the handshake. A caller
//! that knows better gives the time as data instead ([`CertTime`]): one
//! instant, or an interval `[earliest, latest]` such as the one Roughtime
//! servers agree on. With an interval the chain must be valid over all of
//! it, so it is checked by webpki (through rustls's `WebPkiServerVerifier`)
//! at both ends, and both checks must pass. Validity periods are intervals,
//! so a chain valid at both ends is valid in between; webpki may build
//! another path at each end (cross-signed intermediates), which is accepted
//! because each end then has a valid path of its own. Nothing here reads a
//! clock when a time is given: the verifier ignores the `now` rustls passes
//! in. The TLS 1.3 signature checks are rustls's own, unchanged.
//!
//! This answers chrony's `nocerttimecheck` (which skips the validity check
//! while the clock is unsynchronized) without switching the check off: the
//! certificate is still checked, against a time that signed sources vouch
//! for. Finding that time is the caller's job (`authtime query --nts
//! --roughtime-servers`); this module does no I/O.

use std::fmt;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// What "now" is for the certificate check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CertTime {
    /// The system clock, read by rustls during the handshake.
    #[default]
    SystemClock,
    /// One instant, in seconds since the Unix epoch.
    At(u64),
    /// Any instant in `[earliest, latest]` (Unix seconds, inclusive): the
    /// chain must be valid at both ends.
    Interval {
        /// The earliest the time can be.
        earliest: u64,
        /// The latest the time can be.
        latest: u64,
    },
}

/// Why a [`CertTime`] cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CertTimeError {
    /// An interval whose end comes before its start.
    EmptyInterval {
        /// Its start.
        earliest: u64,
        /// Its end.
        latest: u64,
    },
}

impl fmt::Display for CertTimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyInterval { earliest, latest } => {
                write!(f, "empty time interval [{earliest}, {latest}]")
            }
        }
    }
}

impl std::error::Error for CertTimeError {}

impl CertTime {
    /// The instants to check at: none for the system clock (rustls's own
    /// `now` is used), one for [`CertTime::At`], both ends of an interval.
    ///
    /// # Errors
    /// An interval whose end comes before its start.
    pub fn check_times(self) -> Result<Vec<UnixTime>, CertTimeError> {
        match self {
            Self::SystemClock => Ok(Vec::new()),
            Self::At(t) => Ok(vec![UnixTime::since_unix_epoch(secs(t))]),
            Self::Interval { earliest, latest } if earliest > latest => {
                Err(CertTimeError::EmptyInterval { earliest, latest })
            }
            Self::Interval { earliest, latest } if earliest == latest => {
                Ok(vec![UnixTime::since_unix_epoch(secs(earliest))])
            }
            Self::Interval { earliest, latest } => Ok(vec![
                UnixTime::since_unix_epoch(secs(earliest)),
                UnixTime::since_unix_epoch(secs(latest)),
            ]),
        }
    }
}

fn secs(s: u64) -> std::time::Duration {
    std::time::Duration::from_secs(s)
}

/// Whether `error` says a certificate is outside its validity period (at the
/// time it was checked against), as opposed to untrusted or misnamed.
pub fn is_validity_error(error: &rustls::Error) -> bool {
    matches!(
        error,
        rustls::Error::InvalidCertificate(
            CertificateError::Expired
                | CertificateError::ExpiredContext { .. }
                | CertificateError::NotValidYet
                | CertificateError::NotValidYetContext { .. }
        )
    )
}

/// A server certificate verifier that checks the chain at the given
/// instants instead of rustls's `now` (see the module doc).
#[derive(Debug)]
pub struct FixedTimeVerifier {
    inner: Arc<WebPkiServerVerifier>,
    times: Vec<UnixTime>,
}

impl FixedTimeVerifier {
    /// A verifier over `roots` checking at every instant of `times` (at
    /// least one).
    ///
    /// # Errors
    /// rustls refuses the root store (empty), or `times` is empty.
    pub fn new(
        roots: Arc<rustls::RootCertStore>,
        provider: Arc<CryptoProvider>,
        times: Vec<UnixTime>,
    ) -> Result<Self, rustls::Error> {
        if times.is_empty() {
            return Err(rustls::Error::General(
                "no time to check the certificate at".into(),
            ));
        }
        let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))?;
        Ok(Self { inner, times })
    }
}

impl ServerCertVerifier for FixedTimeVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let mut verified = Err(rustls::Error::General(
            "no time to check the certificate at".into(),
        ));
        for &time in &self.times {
            verified = Ok(self.inner.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                time,
            )?);
        }
        verified
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
#[path = "cert_time_tests.rs"]
mod tests;
