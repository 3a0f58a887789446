//! Errors of the master-key stores.

use std::fmt;

/// Why a store operation failed. Never contains key material.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// The store's URL or path is not usable.
    BadLocation(String),
    /// Reading or writing the local file failed.
    Io(String),
    /// The server could not be reached or the connection broke or timed out.
    Unreachable(String),
    /// The server answered with an error or something this client does not
    /// understand.
    Protocol(String),
    /// The stored blob is sealed and cannot be opened (wrong or missing
    /// key-encryption key, damaged, moved or rolled back), or is not sealed
    /// while sealing is configured. Never overwritten.
    Sealing(super::SealError),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadLocation(m) => write!(f, "bad key store location: {m}"),
            Self::Io(m) => write!(f, "key store file: {m}"),
            Self::Unreachable(m) => write!(f, "key store unreachable: {m}"),
            Self::Protocol(m) => write!(f, "key store protocol error: {m}"),
            Self::Sealing(e) => write!(f, "sealed key store: {e}"),
        }
    }
}

impl std::error::Error for StoreError {}
