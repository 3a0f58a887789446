//! Secret keys for every [`Scheme`]: generation from an injected RNG or a 32-byte seed,
//! signing, and secret key files (written atomically, mode 0600).
//!
//! Signing is deterministic for every scheme (Ed25519 by design, ECDSA with RFC 6979 nonces,
//! ML-DSA and SLH-DSA in their deterministic variants with an empty context, LMS with the
//! randomizer derived in [`crate::lms_key`]), so `sign` needs no RNG.

use core::fmt;
use std::path::Path;

use chacha20::ChaCha20Rng;
use ml_dsa::{MlDsa44, MlDsa65};
use rand_core::{CryptoRng, SeedableRng};
use slh_dsa::Sha2_128s;
use zeroize::Zeroizing;

use crate::Scheme;
use crate::atomic_write::{FileMode, write_file_atomically};
use crate::error::{KeyDecodeError, KeyFileError, SignError};
use crate::key_file::{KeyKind, encode_key_file, parse_key_file};
use crate::lms_key::{LmsKey, lock_key_file};
use crate::verifying_key::{Inner as PublicInner, VerifyingKey};

/// A secret key of any supported scheme. Not `Clone`: a copied LMS key could reuse a
/// one-time key. Zeroized on drop by the underlying crates (see the crate doc for the one
/// exception), hidden from `Debug`.
pub struct SigningKey {
    inner: Inner,
}

enum Inner {
    Ed25519(ed25519_dalek::SigningKey),
    EcdsaP256(p256::ecdsa::SigningKey),
    MlDsa44(Box<ml_dsa::SigningKey<MlDsa44>>),
    MlDsa65(Box<ml_dsa::SigningKey<MlDsa65>>),
    SlhDsaSha2_128s(Box<slh_dsa::SigningKey<Sha2_128s>>),
    Lms(Box<LmsKey>),
}

impl SigningKey {
    /// Generates a fresh key for `scheme` with randomness from `rng`.
    pub fn generate<R: CryptoRng + ?Sized>(scheme: Scheme, rng: &mut R) -> Self {
        let inner = match scheme {
            Scheme::Ed25519 => Inner::Ed25519(ed25519_dalek::SigningKey::generate(rng)),
            Scheme::EcdsaP256 => {
                use p256::elliptic_curve::Generate;
                Inner::EcdsaP256(p256::ecdsa::SigningKey::generate_from_rng(rng))
            }
            Scheme::MlDsa44 => {
                let seed = random_seed(rng);
                Inner::MlDsa44(Box::new(ml_dsa::SigningKey::from_seed(&seed.into())))
            }
            Scheme::MlDsa65 => {
                let seed = random_seed(rng);
                Inner::MlDsa65(Box::new(ml_dsa::SigningKey::from_seed(&seed.into())))
            }
            Scheme::SlhDsaSha2_128s => {
                Inner::SlhDsaSha2_128s(Box::new(slh_dsa::SigningKey::new(rng)))
            }
            Scheme::Lms => Inner::Lms(Box::new(LmsKey::generate(rng))),
        };
        Self { inner }
    }

    /// Generates a key deterministically from a 32-byte seed (expanded with ChaCha20), for
    /// tests and for deriving keys from a master secret.
    pub fn generate_from_seed(scheme: Scheme, seed: [u8; 32]) -> Self {
        let mut rng = ChaCha20Rng::from_seed(seed);
        Self::generate(scheme, &mut rng)
    }

    /// The scheme of this key.
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

    /// Signs `msg`. For LMS this uses up one of the 1024 one-time keys and, when the key is
    /// file-backed, persists the advanced state before returning the signature.
    pub fn sign(&mut self, msg: &[u8]) -> Result<Vec<u8>, SignError> {
        match &mut self.inner {
            Inner::Ed25519(key) => {
                use ed25519_dalek::Signer;
                Ok(key.sign(msg).to_bytes().to_vec())
            }
            Inner::EcdsaP256(key) => {
                use p256::ecdsa::signature::Signer;
                let sig: p256::ecdsa::Signature = key
                    .try_sign(msg)
                    .map_err(|_| SignError::Backend(Scheme::EcdsaP256))?;
                Ok(sig.to_bytes().to_vec())
            }
            Inner::MlDsa44(key) => {
                use ml_dsa::Signer;
                let sig = key
                    .try_sign(msg)
                    .map_err(|_| SignError::Backend(Scheme::MlDsa44))?;
                Ok(sig.encode().to_vec())
            }
            Inner::MlDsa65(key) => {
                use ml_dsa::Signer;
                let sig = key
                    .try_sign(msg)
                    .map_err(|_| SignError::Backend(Scheme::MlDsa65))?;
                Ok(sig.encode().to_vec())
            }
            Inner::SlhDsaSha2_128s(key) => {
                // No opt_rand: the deterministic variant of FIPS 205 §10.2.1.
                let sig = key
                    .try_sign_with_context(msg, &[], None)
                    .map_err(|_| SignError::Backend(Scheme::SlhDsaSha2_128s))?;
                Ok(sig.to_vec())
            }
            Inner::Lms(key) => key.sign(msg),
        }
    }

    /// The matching public key.
    pub fn verifying_key(&self) -> VerifyingKey {
        let inner = match &self.inner {
            Inner::Ed25519(key) => PublicInner::Ed25519(key.verifying_key()),
            Inner::EcdsaP256(key) => PublicInner::EcdsaP256(*key.verifying_key()),
            Inner::MlDsa44(key) => {
                use ml_dsa::Keypair;
                PublicInner::MlDsa44(Box::new(key.verifying_key()))
            }
            Inner::MlDsa65(key) => {
                use ml_dsa::Keypair;
                PublicInner::MlDsa65(Box::new(key.verifying_key()))
            }
            Inner::SlhDsaSha2_128s(key) => {
                let public: &slh_dsa::VerifyingKey<Sha2_128s> = key.as_ref().as_ref();
                PublicInner::SlhDsaSha2_128s(Box::new(public.clone()))
            }
            Inner::Lms(key) => PublicInner::Lms(Box::new(key.verifying_key())),
        };
        VerifyingKey::from_inner(inner)
    }

    /// Signatures this key can still make: `None` for stateless schemes.
    pub fn remaining_signatures(&self) -> Option<u64> {
        match &self.inner {
            Inner::Lms(key) => Some(key.remaining()),
            _ => None,
        }
    }

    /// The next LMS leaf index (`None` for stateless schemes).
    pub fn next_lms_index(&self) -> Option<u32> {
        match &self.inner {
            Inner::Lms(key) => Some(key.next_index()),
            _ => None,
        }
    }

    /// The secret key encoding stored in key files (sizes in [`Scheme::sizes`]).
    ///
    /// For LMS these bytes are the *current state*: restoring an older copy, or signing with
    /// two copies, reuses one-time keys and breaks the scheme.
    pub fn to_secret_bytes(&self) -> Zeroizing<Vec<u8>> {
        Zeroizing::new(match &self.inner {
            Inner::Ed25519(key) => key.to_bytes().to_vec(),
            Inner::EcdsaP256(key) => key.to_bytes().to_vec(),
            Inner::MlDsa44(key) => key.to_seed().to_vec(),
            Inner::MlDsa65(key) => key.to_seed().to_vec(),
            Inner::SlhDsaSha2_128s(key) => key.to_vec(),
            Inner::Lms(key) => return key.state_bytes(),
        })
    }

    /// Decodes [`SigningKey::to_secret_bytes`] output. An LMS key decoded this way is
    /// in-memory only; use [`SigningKey::load_key_file`] to sign with persisted state.
    pub fn from_secret_bytes(scheme: Scheme, bytes: &[u8]) -> Result<Self, KeyDecodeError> {
        let expected = scheme.sizes().secret_key;
        if bytes.len() != expected {
            return Err(KeyDecodeError::WrongLength {
                expected,
                actual: bytes.len(),
            });
        }
        let seed32 = || -> Result<Zeroizing<[u8; 32]>, KeyDecodeError> {
            let mut seed = Zeroizing::new([0u8; 32]);
            seed.copy_from_slice(bytes.get(..32).ok_or(KeyDecodeError::Invalid)?);
            Ok(seed)
        };
        let inner = match scheme {
            Scheme::Ed25519 => Inner::Ed25519(ed25519_dalek::SigningKey::from_bytes(&*seed32()?)),
            Scheme::EcdsaP256 => Inner::EcdsaP256(
                p256::ecdsa::SigningKey::from_slice(bytes).map_err(|_| KeyDecodeError::Invalid)?,
            ),
            Scheme::MlDsa44 => Inner::MlDsa44(Box::new(ml_dsa::SigningKey::from_seed(
                &(*seed32()?).into(),
            ))),
            Scheme::MlDsa65 => Inner::MlDsa65(Box::new(ml_dsa::SigningKey::from_seed(
                &(*seed32()?).into(),
            ))),
            Scheme::SlhDsaSha2_128s => Inner::SlhDsaSha2_128s(Box::new(decode_slh_dsa(bytes)?)),
            Scheme::Lms => Inner::Lms(Box::new(LmsKey::from_state_bytes(bytes)?)),
        };
        Ok(Self { inner })
    }

    /// The key as a secret key file, in a zeroizing buffer.
    pub fn to_key_file_string(&self) -> Zeroizing<String> {
        encode_key_file(KeyKind::Secret, self.scheme(), &self.to_secret_bytes())
    }

    /// Parses a secret key file into an in-memory key (LMS state is not persisted).
    pub fn from_key_file_bytes(bytes: &[u8]) -> Result<Self, KeyFileError> {
        let parsed = parse_key_file(bytes, KeyKind::Secret)?;
        Ok(Self::from_secret_bytes(parsed.scheme, &parsed.key)?)
    }

    /// Writes the secret key file atomically with mode 0600. An LMS key becomes bound to
    /// `path`: it locks `<path>.lock` and persists its state there before every signature.
    pub fn write_key_file(&mut self, path: &Path) -> Result<(), KeyFileError> {
        if let Inner::Lms(key) = &mut self.inner {
            return key.bind_to_file(path);
        }
        let text = self.to_key_file_string();
        write_file_atomically(path, text.as_bytes(), FileMode::Secret).map_err(|source| {
            KeyFileError::Io {
                path: path.to_owned(),
                source,
            }
        })
    }

    /// Reads a secret key file. An LMS key is bound to the file (see
    /// [`SigningKey::write_key_file`]); a second loader of the same file gets
    /// [`KeyFileError::Locked`] while the first one lives.
    pub fn load_key_file(path: &Path) -> Result<Self, KeyFileError> {
        let io_error = |source| KeyFileError::Io {
            path: path.to_owned(),
            source,
        };
        // Peek at the header first: only LMS keys take the lock, and they must take it
        // before reading the state so no other signer can advance it in between.
        let first = Zeroizing::new(std::fs::read(path).map_err(io_error)?);
        if parse_key_file(&first, KeyKind::Secret)?.scheme != Scheme::Lms {
            return Self::from_key_file_bytes(&first);
        }
        let lock = lock_key_file(path)?;
        let bytes = Zeroizing::new(std::fs::read(path).map_err(io_error)?);
        let mut key = Self::from_key_file_bytes(&bytes)?;
        if let Inner::Lms(lms) = &mut key.inner {
            lms.attach_file(path, lock);
        }
        Ok(key)
    }
}

fn random_seed<R: CryptoRng + ?Sized>(rng: &mut R) -> [u8; 32] {
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    seed
}

/// Decodes SK.seed || SK.prf || PK.seed || PK.root and checks that PK.root really is the
/// root of the tree the seeds define (a corrupted file would otherwise sign garbage).
fn decode_slh_dsa(bytes: &[u8]) -> Result<slh_dsa::SigningKey<Sha2_128s>, KeyDecodeError> {
    let key =
        slh_dsa::SigningKey::<Sha2_128s>::try_from(bytes).map_err(|_| KeyDecodeError::Invalid)?;
    let (sk_seed, rest) = bytes.split_at_checked(16).ok_or(KeyDecodeError::Invalid)?;
    let (sk_prf, rest) = rest.split_at_checked(16).ok_or(KeyDecodeError::Invalid)?;
    let pk_seed = rest.get(..16).ok_or(KeyDecodeError::Invalid)?;
    let rebuilt = slh_dsa::SigningKey::<Sha2_128s>::slh_keygen_internal(sk_seed, sk_prf, pk_seed);
    if rebuilt == key {
        Ok(key)
    } else {
        Err(KeyDecodeError::Invalid)
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("scheme", &self.scheme())
            .field("secret", &"<hidden>")
            .field("next_lms_index", &self.next_lms_index())
            .finish()
    }
}
