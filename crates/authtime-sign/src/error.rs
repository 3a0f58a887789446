//! Error types: one enum per operation, one variant per cause, never holding key material.

use core::fmt;
use std::io;
use std::path::PathBuf;

use crate::Scheme;

/// Why a signature could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum SignError {
    /// The stateful (LMS) key has used all of its one-time keys.
    KeyExhausted {
        /// Signatures the key could make in total.
        max_signatures: u64,
    },
    /// The advanced LMS state could not be written to disk, so no signature was released.
    /// Retrying is safe: the index that failed to persist has not been used.
    StatePersist(io::Error),
    /// The underlying signature crate reported an error (e.g. ML-DSA rejection sampling gave up).
    Backend(Scheme),
}

impl fmt::Display for SignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignError::KeyExhausted { max_signatures } => write!(
                f,
                "the stateful signing key is exhausted (all {max_signatures} signatures used)"
            ),
            SignError::StatePersist(e) => {
                write!(
                    f,
                    "could not persist the signing key state, nothing signed: {e}"
                )
            }
            SignError::Backend(scheme) => write!(f, "the {scheme} implementation failed to sign"),
        }
    }
}

impl std::error::Error for SignError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SignError::StatePersist(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a signature was rejected. Callers should treat every variant alike (drop the message);
/// the split exists for counters and debugging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyError {
    /// The signature has the wrong length for the scheme.
    WrongLength {
        /// Length the scheme requires.
        expected: usize,
        /// Length received.
        actual: usize,
    },
    /// The signature bytes do not decode (bad type code, out-of-range value, non-canonical encoding).
    Malformed,
    /// The signature decodes but does not verify for this key and message.
    Invalid,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::WrongLength { expected, actual } => write!(
                f,
                "signature has {actual} bytes, the scheme needs {expected}"
            ),
            VerifyError::Malformed => f.write_str("signature is malformed"),
            VerifyError::Invalid => f.write_str("signature does not verify"),
        }
    }
}

impl std::error::Error for VerifyError {}

/// Why key bytes could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyDecodeError {
    /// The key has the wrong length for the scheme.
    WrongLength {
        /// Length the scheme requires.
        expected: usize,
        /// Length received.
        actual: usize,
    },
    /// The bytes have the right length but are not a valid key (not a curve point, zero scalar,
    /// wrong LMS type code, inconsistent SLH-DSA public half, ...).
    Invalid,
    /// A tagged encoding names a scheme id this build does not know.
    UnknownSchemeId(u16),
}

impl fmt::Display for KeyDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyDecodeError::WrongLength { expected, actual } => {
                write!(f, "key has {actual} bytes, the scheme needs {expected}")
            }
            KeyDecodeError::Invalid => f.write_str("key bytes are not a valid key for the scheme"),
            KeyDecodeError::UnknownSchemeId(id) => write!(f, "unknown signature scheme id {id}"),
        }
    }
}

impl std::error::Error for KeyDecodeError {}

/// Why a key file could not be read or written.
#[derive(Debug)]
#[non_exhaustive]
pub enum KeyFileError {
    /// Reading, writing or locking the file failed.
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The first line is not `authtime-sign <version> <kind> <scheme>`.
    BadHeader,
    /// The format version is not `v1`.
    UnsupportedVersion(String),
    /// The file holds a public key where a secret key was expected, or the reverse.
    WrongKind {
        /// What the caller asked for.
        expected: &'static str,
        /// What the file says it holds.
        found: String,
    },
    /// The scheme named in the header is unknown.
    UnknownScheme(String),
    /// The second line is not lower- or upper-case hex.
    BadHex,
    /// Something other than a final newline follows the key line.
    TrailingData,
    /// The file is not valid UTF-8 (key files are ASCII).
    NotText,
    /// The hex decodes, but not to a valid key.
    Key(KeyDecodeError),
    /// Another process holds the lock on this stateful key (two signers would reuse indices).
    Locked(PathBuf),
}

impl fmt::Display for KeyFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyFileError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            KeyFileError::BadHeader => f.write_str(
                "key file must start with a line `authtime-sign v1 <public|secret> <scheme>`",
            ),
            KeyFileError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "key file format version {v:?} is not supported (expected v1)"
                )
            }
            KeyFileError::WrongKind { expected, found } => {
                write!(f, "expected a {expected} key file, found {found:?}")
            }
            KeyFileError::UnknownScheme(name) => {
                write!(f, "{}", crate::scheme::UnknownSchemeName(name.clone()))
            }
            KeyFileError::BadHex => f.write_str("key line is not hex"),
            KeyFileError::TrailingData => f.write_str("unexpected data after the key line"),
            KeyFileError::NotText => f.write_str("key file is not ASCII text"),
            KeyFileError::Key(e) => write!(f, "bad key in key file: {e}"),
            KeyFileError::Locked(path) => write!(
                f,
                "{} is locked by another signer (a stateful key must have one signer)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for KeyFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            KeyFileError::Io { source, .. } => Some(source),
            KeyFileError::Key(e) => Some(e),
            _ => None,
        }
    }
}

impl From<KeyDecodeError> for KeyFileError {
    fn from(e: KeyDecodeError) -> Self {
        KeyFileError::Key(e)
    }
}
