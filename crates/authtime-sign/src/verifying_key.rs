//! Public keys and verification for every [`Scheme`], their byte encodings and public key files.

use core::fmt;
use std::path::Path;

use ml_dsa::{MlDsa44, MlDsa65};
use slh_dsa::Sha2_128s;

use crate::Scheme;
use crate::atomic_write::{FileMode, write_file_atomically};
use crate::error::{KeyDecodeError, KeyFileError, VerifyError};
use crate::key_file::{KeyKind, encode_key_file, parse_key_file};
use crate::lms_key::LmsMode;

/// A public key of any supported scheme.
#[derive(Clone)]
pub struct VerifyingKey {
    inner: Inner,
}

#[derive(Clone)]
pub(crate) enum Inner {
    Ed25519(ed25519_dalek::VerifyingKey),
    EcdsaP256(p256::ecdsa::VerifyingKey),
    MlDsa44(Box<ml_dsa::VerifyingKey<MlDsa44>>),
    MlDsa65(Box<ml_dsa::VerifyingKey<MlDsa65>>),
    SlhDsaSha2_128s(Box<slh_dsa::VerifyingKey<Sha2_128s>>),
    Lms(Box<lms_signature::lms::VerifyingKey<LmsMode>>),
}

fn exact_length<E>(
    bytes: &[u8],
    expected: usize,
    error: impl FnOnce(usize, usize) -> E,
) -> Result<(), E> {
    if bytes.len() == expected {
        Ok(())
    } else {
        Err(error(expected, bytes.len()))
    }
}

impl VerifyingKey {
    pub(crate) fn from_inner(inner: Inner) -> Self {
        Self { inner }
    }

    /// The scheme this key verifies.
    pub fn scheme(&self) -> Scheme {
        match &self.inner {
            Inner::Ed25519(_) => Scheme::Ed25519,
            Inner::EcdsaP256(_) => Scheme::EcdsaP256,
            Inner::MlDsa44(_) => Scheme::MlDsa44,
            Inner::MlDsa65(_) => Scheme::MlDsa65,
            Inner::SlhDsaSha2_128s(_) => Scheme::SlhDsaSha2_128s,
            Inner::Lms(_) => Scheme::Lms,
        }
    }

    /// Checks `signature` over `msg`. Never panics, whatever the bytes.
    pub fn verify(&self, msg: &[u8], signature: &[u8]) -> Result<(), VerifyError> {
        exact_length(
            signature,
            self.scheme().sizes().signature,
            |expected, actual| VerifyError::WrongLength { expected, actual },
        )?;
        match &self.inner {
            Inner::Ed25519(key) => {
                let sig = ed25519_dalek::Signature::from_slice(signature)
                    .map_err(|_| VerifyError::Malformed)?;
                // Strict: rejects small-order keys and non-canonical R (RFC 8032 §5.1.7 plus).
                key.verify_strict(msg, &sig)
                    .map_err(|_| VerifyError::Invalid)
            }
            Inner::EcdsaP256(key) => {
                use p256::ecdsa::signature::Verifier;
                let sig = p256::ecdsa::Signature::from_slice(signature)
                    .map_err(|_| VerifyError::Malformed)?;
                key.verify(msg, &sig).map_err(|_| VerifyError::Invalid)
            }
            Inner::MlDsa44(key) => {
                let sig = ml_dsa::Signature::<MlDsa44>::try_from(signature)
                    .map_err(|_| VerifyError::Malformed)?;
                ok_if(key.verify_with_context(msg, &[], &sig))
            }
            Inner::MlDsa65(key) => {
                let sig = ml_dsa::Signature::<MlDsa65>::try_from(signature)
                    .map_err(|_| VerifyError::Malformed)?;
                ok_if(key.verify_with_context(msg, &[], &sig))
            }
            Inner::SlhDsaSha2_128s(key) => {
                let sig = slh_dsa::Signature::<Sha2_128s>::try_from(signature)
                    .map_err(|_| VerifyError::Malformed)?;
                key.try_verify_with_context(msg, &[], &sig)
                    .map_err(|_| VerifyError::Invalid)
            }
            Inner::Lms(key) => {
                use signature::Verifier;
                let sig = lms_signature::lms::Signature::<LmsMode>::try_from(signature)
                    .map_err(|_| VerifyError::Malformed)?;
                key.verify(msg, &sig).map_err(|_| VerifyError::Invalid)
            }
        }
    }

    /// `verify` as a boolean, the shape of the TESLA crate's `BootstrapVerifier::verify`.
    pub fn is_valid(&self, msg: &[u8], signature: &[u8]) -> bool {
        self.verify(msg, signature).is_ok()
    }

    /// The scheme's standard public key encoding (sizes in [`Scheme::sizes`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        match &self.inner {
            Inner::Ed25519(key) => key.to_bytes().to_vec(),
            Inner::EcdsaP256(key) => key.to_sec1_point(true).as_bytes().to_vec(),
            Inner::MlDsa44(key) => key.encode().to_vec(),
            Inner::MlDsa65(key) => key.encode().to_vec(),
            Inner::SlhDsaSha2_128s(key) => key.to_vec(),
            Inner::Lms(key) => {
                let bytes: hybrid_array::Array<u8, _> = (**key).clone().into();
                bytes.to_vec()
            }
        }
    }

    /// Decodes [`VerifyingKey::to_bytes`] output for `scheme`; exact length only.
    pub fn from_bytes(scheme: Scheme, bytes: &[u8]) -> Result<Self, KeyDecodeError> {
        exact_length(bytes, scheme.sizes().public_key, |expected, actual| {
            KeyDecodeError::WrongLength { expected, actual }
        })?;
        let inner = match scheme {
            Scheme::Ed25519 => {
                let bytes: &[u8; 32] = bytes.try_into().map_err(|_| KeyDecodeError::Invalid)?;
                Inner::Ed25519(
                    ed25519_dalek::VerifyingKey::from_bytes(bytes)
                        .map_err(|_| KeyDecodeError::Invalid)?,
                )
            }
            Scheme::EcdsaP256 => {
                // Only the SEC1 compressed form (02/03): sec1 would also take the compact
                // form (05), a second encoding of the same key.
                if !matches!(bytes.first(), Some(0x02 | 0x03)) {
                    return Err(KeyDecodeError::Invalid);
                }
                Inner::EcdsaP256(
                    p256::ecdsa::VerifyingKey::from_sec1_bytes(bytes)
                        .map_err(|_| KeyDecodeError::Invalid)?,
                )
            }
            Scheme::MlDsa44 => {
                let enc = ml_dsa::EncodedVerifyingKey::<MlDsa44>::try_from(bytes)
                    .map_err(|_| KeyDecodeError::Invalid)?;
                Inner::MlDsa44(Box::new(ml_dsa::VerifyingKey::decode(&enc)))
            }
            Scheme::MlDsa65 => {
                let enc = ml_dsa::EncodedVerifyingKey::<MlDsa65>::try_from(bytes)
                    .map_err(|_| KeyDecodeError::Invalid)?;
                Inner::MlDsa65(Box::new(ml_dsa::VerifyingKey::decode(&enc)))
            }
            Scheme::SlhDsaSha2_128s => Inner::SlhDsaSha2_128s(Box::new(
                slh_dsa::VerifyingKey::try_from(bytes).map_err(|_| KeyDecodeError::Invalid)?,
            )),
            Scheme::Lms => Inner::Lms(Box::new(
                lms_signature::lms::VerifyingKey::try_from(bytes)
                    .map_err(|_| KeyDecodeError::Invalid)?,
            )),
        };
        Ok(Self { inner })
    }

    /// `u16 scheme id (big-endian) || to_bytes()`, for carrying a key inside a message.
    pub fn to_tagged_bytes(&self) -> Vec<u8> {
        let mut out = self.scheme().id().to_be_bytes().to_vec();
        out.extend_from_slice(&self.to_bytes());
        out
    }

    /// Decodes [`VerifyingKey::to_tagged_bytes`] output.
    pub fn from_tagged_bytes(bytes: &[u8]) -> Result<Self, KeyDecodeError> {
        let (id, key) = bytes
            .split_at_checked(2)
            .ok_or(KeyDecodeError::WrongLength {
                expected: 2,
                actual: bytes.len(),
            })?;
        let id = u16::from_be_bytes([id[0], id[1]]);
        let scheme = Scheme::from_id(id).ok_or(KeyDecodeError::UnknownSchemeId(id))?;
        Self::from_bytes(scheme, key)
    }

    /// The key as a public key file (see [`crate::key_file`] for the format).
    pub fn to_key_file_string(&self) -> String {
        encode_key_file(KeyKind::Public, self.scheme(), &self.to_bytes()).to_string()
    }

    /// Parses a public key file.
    pub fn from_key_file_bytes(bytes: &[u8]) -> Result<Self, KeyFileError> {
        let parsed = parse_key_file(bytes, KeyKind::Public)?;
        Ok(Self::from_bytes(parsed.scheme, &parsed.key)?)
    }

    /// Writes a public key file atomically (mode 0644).
    pub fn write_key_file(&self, path: &Path) -> Result<(), KeyFileError> {
        write_file_atomically(path, self.to_key_file_string().as_bytes(), FileMode::Public).map_err(
            |source| KeyFileError::Io {
                path: path.to_owned(),
                source,
            },
        )
    }

    /// Reads a public key file.
    pub fn load_key_file(path: &Path) -> Result<Self, KeyFileError> {
        let bytes = std::fs::read(path).map_err(|source| KeyFileError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::from_key_file_bytes(&bytes)
    }
}

fn ok_if(valid: bool) -> Result<(), VerifyError> {
    if valid {
        Ok(())
    } else {
        Err(VerifyError::Invalid)
    }
}

impl PartialEq for VerifyingKey {
    fn eq(&self, other: &Self) -> bool {
        self.scheme() == other.scheme() && self.to_bytes() == other.to_bytes()
    }
}

impl Eq for VerifyingKey {}

impl fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.to_bytes();
        let prefix = bytes.get(..8).unwrap_or(&bytes);
        write!(
            f,
            "VerifyingKey({}, {}..)",
            self.scheme(),
            hex::encode(prefix)
        )
    }
}
