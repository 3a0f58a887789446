//! rustls configurations for NTS-KE: TLS 1.3 only, ALPN `ntske/1`, the `aws-lc-rs` provider.
//!
//! Key exchange: the hybrid post-quantum group X25519MLKEM768, then X25519,
//! secp256r1 and secp384r1 for peers without it (chrony's GnuTLS, older rustls). An
//! NTS-KE handshake carries the keys of every later NTS exchange, so a recorded one
//! must not be decryptable later ("harvest now, decrypt later"). The client offers
//! them in that order (with an X25519 share next to the hybrid one, so a classical
//! server needs no second round trip); the server supports the same groups and,
//! as rustls does, takes the first of the client's list it supports (chronyd 4.3
//! lists secp256r1 first and gets it). Every configuration names its provider: no
//! process-wide default is relied on (the Redis store installs one for the `redis`
//! crate, which NTS-KE does not use).
//!
//! Certificates come from PEM files (chain first, leaf first in the chain). Clients trust
//! a given CA or self-signed certificate file, or the webpki root set when none is given.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::ALPN_NTSKE;
use crate::cert_time::{CertTime, CertTimeError, FixedTimeVerifier};

/// Why a TLS configuration could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// A PEM file could not be read or parsed.
    Pem {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The file holds no certificate.
    NoCertificate(PathBuf),
    /// rustls refused the configuration (for instance key and certificate do not match).
    Rustls(String),
    /// The time to check certificates at is unusable.
    CertTime(CertTimeError),
}

impl fmt::Display for TlsConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pem { path, reason } => write!(f, "{}: {reason}", path.display()),
            Self::NoCertificate(path) => write!(f, "{}: no certificate", path.display()),
            Self::Rustls(e) => write!(f, "TLS configuration: {e}"),
            Self::CertTime(e) => write!(f, "certificate check time: {e}"),
        }
    }
}

impl std::error::Error for TlsConfigError {}

/// Key exchange groups, most preferred first (see the module doc). Named
/// here rather than taken from `default_provider()`, whose order depends on
/// rustls's `prefer-post-quantum` feature (off here: without it the hybrid
/// group comes last).
pub fn key_exchange_groups() -> Vec<&'static dyn SupportedKxGroup> {
    use rustls::crypto::aws_lc_rs::kx_group;
    vec![
        kx_group::X25519MLKEM768,
        kx_group::X25519,
        kx_group::SECP256R1,
        kx_group::SECP384R1,
    ]
}

/// The client's provider: [`key_exchange_groups`], aws-lc-rs's suites.
fn provider() -> Arc<CryptoProvider> {
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    provider.kx_groups = key_exchange_groups();
    seeded(provider)
}

/// `provider` with its random generator seeded now. AWS-LC seeds its
/// generator on first use from CPU jitter, which takes about 40 ms of one
/// core; without this the first handshake of every process (each
/// `authtime query --nts`, a daemon's first client) would wait for it and
/// count it as key exchange time. Later calls cost microseconds.
fn seeded(provider: CryptoProvider) -> Arc<CryptoProvider> {
    let _ = provider.secure_random.fill(&mut [0u8; 1]);
    Arc::new(provider)
}

/// The server's provider: [`key_exchange_groups`], the SHA-256 suites first.
/// Their handshake hashing runs on the SHA extensions of current x86 CPUs,
/// while SHA-384 has no such path: profiling an NTS-KE server (then on ring)
/// under load showed SHA-512 blocks at 8% of its CPU when clients chose
/// AES-256-GCM-SHA384 first.
fn server_provider() -> Arc<CryptoProvider> {
    use rustls::crypto::aws_lc_rs::cipher_suite as suite;
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    provider.cipher_suites = vec![
        suite::TLS13_AES_128_GCM_SHA256,
        suite::TLS13_CHACHA20_POLY1305_SHA256,
        suite::TLS13_AES_256_GCM_SHA384,
    ];
    provider.kx_groups = key_exchange_groups();
    seeded(provider)
}

/// The IANA name of a key exchange group this module offers
/// (`X25519MLKEM768`, `X25519`, `secp256r1`, `secp384r1`), `other` for the rest.
pub fn group_name(group: rustls::NamedGroup) -> &'static str {
    match group {
        rustls::NamedGroup::X25519MLKEM768 => "X25519MLKEM768",
        rustls::NamedGroup::X25519 => "X25519",
        rustls::NamedGroup::secp256r1 => "secp256r1",
        rustls::NamedGroup::secp384r1 => "secp384r1",
        _ => "other",
    }
}

/// The key exchange group `connection` negotiated ([`group_name`]), `None`
/// before its handshake got that far.
pub fn negotiated_group(connection: &rustls::CommonState) -> Option<&'static str> {
    connection
        .negotiated_key_exchange_group()
        .map(|g| group_name(g.name()))
}

fn rustls_error(e: rustls::Error) -> TlsConfigError {
    TlsConfigError::Rustls(e.to_string())
}

/// Reads every certificate of a PEM file.
pub fn load_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let pem_error = |e: rustls_pki_types::pem::Error| TlsConfigError::Pem {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(pem_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error)?;
    if certs.is_empty() {
        return Err(TlsConfigError::NoCertificate(path.to_path_buf()));
    }
    Ok(certs)
}

/// Reads the first private key (PKCS#8, PKCS#1 or SEC1) of a PEM file.
pub fn load_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsConfigError::Pem {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// A TLS 1.3-only server configuration offering ALPN `ntske/1`.
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, TlsConfigError> {
    let mut config = rustls::ServerConfig::builder_with_provider(server_provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(rustls_error)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(rustls_error)?;
    config.alpn_protocols = vec![ALPN_NTSKE.to_vec()];
    // The server's suite order wins (all three are strong).
    config.ignore_client_order = true;
    // One stateless session ticket, sent as soon as the client's Finished is
    // read. Its job is the TCP acknowledgement it carries: a client that
    // leaves Nagle on (NTPsec) holds its request until its Finished is
    // acknowledged, and with nothing to send the server left that to the
    // kernel's delayed ACK, about 40 ms on Linux (a median of 44 ms, against
    // 0.5 ms with the ticket, on loopback: tests/ke_nagle_client.rs). A client that keeps the ticket may
    // resume with it (PSK with a fresh key exchange); no server-side session
    // cache is kept. Clients that offer no resumption get no ticket.
    config.send_tls13_tickets = 1;
    config.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new().map_err(rustls_error)?;
    config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    Ok(Arc::new(config))
}

/// [`server_config`] from a chain PEM file and a key PEM file.
pub fn server_config_from_files(
    chain_path: &Path,
    key_path: &Path,
) -> Result<Arc<rustls::ServerConfig>, TlsConfigError> {
    Ok(server_config_and_expiry(chain_path, key_path)?.0)
}

/// [`server_config_from_files`] and the chain's earliest notAfter (seconds since
/// the Unix epoch; `None` when a certificate's validity cannot be read).
pub fn server_config_and_expiry(
    chain_path: &Path,
    key_path: &Path,
) -> Result<(Arc<rustls::ServerConfig>, Option<u64>), TlsConfigError> {
    let chain = load_certificates(chain_path)?;
    let not_after = crate::cert_expiry::earliest_not_after(&chain);
    Ok((
        server_config(chain, load_private_key(key_path)?)?,
        not_after,
    ))
}

/// The trust anchors in `ca_file`, or the webpki roots when `None`.
fn root_store(ca_file: Option<&Path>) -> Result<rustls::RootCertStore, TlsConfigError> {
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            for cert in load_certificates(path)? {
                roots.add(cert).map_err(rustls_error)?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    Ok(roots)
}

/// A shared TLS client configuration, as [`client_config`] makes (named for crates
/// that do not depend on rustls).
pub type ClientTlsConfig = Arc<rustls::ClientConfig>;

/// A TLS 1.3-only client configuration asking for ALPN `ntske/1`, trusting the
/// certificates in `ca_file` (a CA or a self-signed server certificate), or the webpki
/// roots when `None`.
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, TlsConfigError> {
    client_config_at(ca_file, CertTime::SystemClock)
}

/// [`client_config`] checking the server's certificate chain at `time`
/// instead of the system clock (see [`crate::cert_time`]).
pub fn client_config_at(
    ca_file: Option<&Path>,
    time: CertTime,
) -> Result<Arc<rustls::ClientConfig>, TlsConfigError> {
    let roots = root_store(ca_file)?;
    let times = time.check_times().map_err(TlsConfigError::CertTime)?;
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(rustls_error)?;
    let mut config = if times.is_empty() {
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        let verifier =
            FixedTimeVerifier::new(Arc::new(roots), provider, times).map_err(rustls_error)?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth()
    };
    config.alpn_protocols = vec![ALPN_NTSKE.to_vec()];
    Ok(Arc::new(config))
}

/// A client configuration like [`client_config`] for load generators, which
/// run thousands of handshakes a second against one server: the result of
/// the certificate chain check (path to a trust anchor, validity, the server
/// name) is remembered per (chain, name) for the life of the configuration,
/// so a chain already checked is not checked again, while every handshake's
/// signature (TLS 1.3 CertificateVerify) is still verified against its
/// certificate. An expiry reached during the run is therefore not noticed.
pub fn load_generator_client_config(
    ca_file: Option<&Path>,
) -> Result<Arc<rustls::ClientConfig>, TlsConfigError> {
    load_generator_client_config_offering(ca_file, key_exchange_groups())
}

/// [`load_generator_client_config`] offering only `groups` (most preferred
/// first), to measure one key exchange group against another.
pub fn load_generator_client_config_offering(
    ca_file: Option<&Path>,
    groups: Vec<&'static dyn SupportedKxGroup>,
) -> Result<Arc<rustls::ClientConfig>, TlsConfigError> {
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    provider.kx_groups = groups;
    let provider = seeded(provider);
    let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(root_store(ca_file)?),
        provider.clone(),
    )
    .build()
    .map_err(|e| TlsConfigError::Rustls(e.to_string()))?;
    let verifier = Arc::new(ChainCheckCache {
        inner,
        checked: std::sync::Mutex::new(Vec::new()),
    });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(rustls_error)?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_NTSKE.to_vec()];
    Ok(Arc::new(config))
}

/// Most (chain, name) pairs [`ChainCheckCache`] remembers.
const CHAIN_CACHE_MAX: usize = 16;

/// See [`load_generator_client_config`].
#[derive(Debug)]
struct ChainCheckCache {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    /// (end entity, intermediates, server name) that passed the inner check.
    checked: std::sync::Mutex<Vec<(Vec<Vec<u8>>, String)>>,
}

impl rustls::client::danger::ServerCertVerifier for ChainCheckCache {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls_pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let chain: Vec<Vec<u8>> = std::iter::once(end_entity)
            .chain(intermediates)
            .map(|c| c.as_ref().to_vec())
            .collect();
        let name = server_name.to_str().into_owned();
        let lock = || self.checked.lock().unwrap_or_else(|e| e.into_inner());
        if lock().iter().any(|(c, n)| *c == chain && *n == name) {
            return Ok(rustls::client::danger::ServerCertVerified::assertion());
        }
        let verified = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )?;
        let mut checked = lock();
        if checked.len() < CHAIN_CACHE_MAX {
            checked.push((chain, name));
        }
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_are_reported_with_their_path() {
        let err = server_config_from_files(
            Path::new("/nonexistent/chain.pem"),
            Path::new("/nonexistent/key.pem"),
        )
        .expect_err("missing");
        assert!(err.to_string().contains("/nonexistent/chain.pem"), "{err}");
        assert!(client_config(None).is_ok());
    }
}
