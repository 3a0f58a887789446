//! DTLS 1.2 contexts for the two authentication modes the talk compares (PSK,
//! as in TinyDTLS) plus the certificate mode real deployments use.
//!
//! - PSK: `PSK-AES128-CCM8` (RFC 6655), TinyDTLS's suite, so that the record
//!   overhead matches the talk's setting (13-byte header, 8-byte explicit
//!   nonce, 8-byte tag).
//! - Certificate: `ECDHE-ECDSA-AES128-GCM-SHA256` with a P-256 certificate the
//!   client pins (no PKI here: the client trusts exactly that certificate).
//!
//! The server always runs the stateless cookie exchange (Hello Verify Request),
//! the flight the talk's Table 6.1 counts.

use std::{fmt, net::SocketAddr, sync::OnceLock};

use openssl::{
    asn1::Asn1Time,
    bn::{BigNum, MsbOption},
    ec::{EcGroup, EcKey},
    error::ErrorStack,
    ex_data::Index,
    hash::MessageDigest,
    nid::Nid,
    pkey::{PKey, Private},
    sign::Signer,
    ssl::{
        Ssl, SslContext, SslContextBuilder, SslMethod, SslOptions, SslRef, SslVerifyMode,
        SslVersion,
    },
    x509::{X509, X509NameBuilder, store::X509StoreBuilder},
};

use crate::DtlsError;

/// PSK cipher suite.
pub const PSK_CIPHER: &str = "PSK-AES128-CCM8";
/// Certificate-mode cipher suite.
pub const CERT_CIPHER: &str = "ECDHE-ECDSA-AES128-GCM-SHA256";
/// DTLS path MTU used by both ends (OpenSSL cannot query it through a Rust stream).
pub const MTU: u32 = 1400;

/// A P-256 key and its self-signed certificate.
#[derive(Clone)]
pub struct SelfSigned {
    /// The certificate (the client pins it).
    pub cert: X509,
    /// The private key.
    pub key: PKey<Private>,
}

impl fmt::Debug for SelfSigned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelfSigned").finish_non_exhaustive()
    }
}

impl SelfSigned {
    /// A new P-256 key and a certificate for `common_name`, valid 30 days.
    ///
    /// # Errors
    /// OpenSSL's.
    pub fn generate(common_name: &str) -> Result<Self, DtlsError> {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
        let key = PKey::from_ec_key(EcKey::generate(&group)?)?;
        let mut name = X509NameBuilder::new()?;
        name.append_entry_by_nid(Nid::COMMONNAME, common_name)?;
        let name = name.build();
        let mut b = X509::builder()?;
        b.set_version(2)?;
        let mut serial = BigNum::new()?;
        serial.rand(64, MsbOption::MAYBE_ZERO, false)?;
        let serial = serial.to_asn1_integer()?;
        b.set_serial_number(&serial)?;
        b.set_subject_name(&name)?;
        b.set_issuer_name(&name)?;
        b.set_pubkey(&key)?;
        let not_before = Asn1Time::days_from_now(0)?;
        let not_after = Asn1Time::days_from_now(30)?;
        b.set_not_before(&not_before)?;
        b.set_not_after(&not_after)?;
        b.sign(&key, MessageDigest::sha256())?;
        Ok(Self {
            cert: b.build(),
            key,
        })
    }
}

/// How the DTLS session is authenticated.
#[derive(Clone)]
pub enum DtlsMode {
    /// A pre-shared key with its identity (both ends hold the same).
    Psk {
        /// Identity the client announces.
        identity: Vec<u8>,
        /// The key.
        key: Vec<u8>,
    },
    /// Certificates: the server presents `cert`, the client trusts exactly it.
    Certificate(SelfSigned),
}

impl fmt::Debug for DtlsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Psk { identity, .. } => f
                .debug_struct("Psk")
                .field("identity", &String::from_utf8_lossy(identity))
                .finish_non_exhaustive(),
            Self::Certificate(_) => f.write_str("Certificate"),
        }
    }
}

impl DtlsMode {
    /// The mode's name in reports (`psk` or `certificate`).
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Psk { .. } => "psk",
            Self::Certificate(_) => "certificate",
        }
    }
}

fn dtls12(b: &mut SslContextBuilder) -> Result<(), DtlsError> {
    b.set_min_proto_version(Some(SslVersion::DTLS1_2))?;
    b.set_max_proto_version(Some(SslVersion::DTLS1_2))?;
    Ok(())
}

/// The sender's (DTLS server's) context. `cookie_secret` keys the Hello
/// Verify Request cookies (HMAC-SHA-256 of the client's address).
///
/// # Errors
/// OpenSSL's.
pub fn server_context(mode: &DtlsMode, cookie_secret: [u8; 32]) -> Result<SslContext, DtlsError> {
    let mut b = SslContext::builder(SslMethod::dtls_server())?;
    dtls12(&mut b)?;
    b.set_options(SslOptions::COOKIE_EXCHANGE | SslOptions::NO_QUERY_MTU);
    b.set_cookie_generate_cb(move |ssl, out| {
        let cookie = cookie_for(ssl, &cookie_secret)?;
        let n = cookie.len().min(out.len());
        out[..n].copy_from_slice(&cookie[..n]);
        Ok(n)
    });
    b.set_cookie_verify_cb(move |ssl, cookie| {
        cookie_for(ssl, &cookie_secret)
            .is_ok_and(|c| c.len() == cookie.len() && openssl::memcmp::eq(&c, cookie))
    });
    match mode {
        DtlsMode::Psk { identity, key } => {
            b.set_cipher_list(&format!("{PSK_CIPHER}:@SECLEVEL=0"))?;
            let (identity, key) = (identity.clone(), key.clone());
            b.set_psk_server_callback(move |_ssl, got, out| {
                if got != Some(identity.as_slice()) || key.len() > out.len() {
                    return Ok(0);
                }
                out[..key.len()].copy_from_slice(&key);
                Ok(key.len())
            });
        }
        DtlsMode::Certificate(s) => {
            b.set_cipher_list(CERT_CIPHER)?;
            b.set_certificate(&s.cert)?;
            b.set_private_key(&s.key)?;
            b.check_private_key()?;
        }
    }
    Ok(b.build())
}

/// The receiver's (DTLS client's) context.
///
/// # Errors
/// OpenSSL's.
pub fn client_context(mode: &DtlsMode) -> Result<SslContext, DtlsError> {
    let mut b = SslContext::builder(SslMethod::dtls_client())?;
    dtls12(&mut b)?;
    b.set_options(SslOptions::NO_QUERY_MTU);
    match mode {
        DtlsMode::Psk { identity, key } => {
            b.set_cipher_list(&format!("{PSK_CIPHER}:@SECLEVEL=0"))?;
            let (identity, key) = (identity.clone(), key.clone());
            b.set_psk_client_callback(move |_ssl, _hint, id_out, key_out| {
                // OpenSSL wants the identity NUL-terminated.
                if identity.len() >= id_out.len() || key.len() > key_out.len() {
                    return Ok(0);
                }
                id_out[..identity.len()].copy_from_slice(&identity);
                id_out[identity.len()] = 0;
                key_out[..key.len()].copy_from_slice(&key);
                Ok(key.len())
            });
            b.set_verify(SslVerifyMode::NONE);
        }
        DtlsMode::Certificate(s) => {
            b.set_cipher_list(CERT_CIPHER)?;
            let mut store = X509StoreBuilder::new()?;
            store.add_cert(s.cert.clone())?;
            b.set_verify_cert_store(store.build())?;
            b.set_verify(SslVerifyMode::PEER);
        }
    }
    Ok(b.build())
}

/// Where the server stores the peer address on each `Ssl` for the cookie.
pub(crate) fn peer_index() -> Result<Index<Ssl, SocketAddr>, ErrorStack> {
    static INDEX: OnceLock<Index<Ssl, SocketAddr>> = OnceLock::new();
    if let Some(i) = INDEX.get() {
        return Ok(*i);
    }
    let i = Ssl::new_ex_index::<SocketAddr>()?;
    Ok(*INDEX.get_or_init(|| i))
}

/// The Hello Verify Request cookie: HMAC-SHA-256 (truncated to 16 bytes) of
/// the client's address under the server's secret (RFC 6347 section 4.2.1).
fn cookie_for(ssl: &SslRef, secret: &[u8; 32]) -> Result<Vec<u8>, ErrorStack> {
    let peer = peer_index()
        .ok()
        .and_then(|i| ssl.ex_data(i))
        .map(ToString::to_string)
        .unwrap_or_default();
    let key = PKey::hmac(secret)?;
    let mut signer = Signer::new(MessageDigest::sha256(), &key)?;
    signer.update(peer.as_bytes())?;
    let mut mac = signer.sign_to_vec()?;
    mac.truncate(16);
    Ok(mac)
}
