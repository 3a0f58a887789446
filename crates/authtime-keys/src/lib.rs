//! Symmetric keys for NTP: the key files operators already have, and a key set
//! ready to authenticate packets.
//!
//! - Reads both formats in use: ntpd/NTPsec `ntp.keys` (`keyno type key`, key
//!   ids 1–65535, keys of up to 20 characters in ASCII and longer ones in hex)
//!   and chrony `chrony.keys` (`id [type] key`, ids up to 2^32−1, MD5 by
//!   default, `ASCII:`/`HEX:` prefixes). The format is detected or stated
//!   ([`KeyFileFormat`]). Each type name maps to a MAC of `authtime-mac`
//!   ([`KeyType`]).
//! - Every malformed line is a [`KeyFileError`] with file name and line number;
//!   short keys, unsupported types and loosely protected files are
//!   [`KeyFileWarning`]s returned as data. No error or warning ever contains key
//!   material.
//! - Writes files that chrony and ntpd accept ([`write_key_file`]), with keys
//!   from caller-supplied random bytes ([`generate_keys`]), so the RNG stays
//!   injectable.
//! - [`KeySet`] maps key ids to ready-to-use MACs; keys are zeroized on drop
//!   and hidden from `Debug`.
//!
//! Written here by hand, because no crate provides it: SHA-256(key ‖ packet),
//! the digest chrony computes for its `SHA256` keys ([`KeyType::Sha256`]); the
//! MAC library has only the MD5 and SHA-1 forms of that legacy construction.
//!
//! This crate does not parse packets or decide anything about them (see
//! `authtime-proto`). Its only I/O is reading a key file and creating a new one
//! ([`read_key_file`], [`create_key_file`]).

#![forbid(unsafe_code)]

mod error;
mod file_io;
mod format;
mod generate;
mod key_set;
mod key_type;
mod legacy_digest;
mod parse;
mod write;

pub mod store;

#[doc(hidden)]
pub mod fuzz_harness;

pub use error::{KeyFileError, KeyFileErrorKind, KeyFileWarning, WarningKind};
pub use file_io::{create_key_file, read_key_file};
pub use format::KeyFileFormat;
pub use generate::{KeyGenError, generate_keys, random_bytes_needed};
pub use key_set::{KeyEntry, KeySet};
pub use key_type::KeyType;
pub use parse::{KeyMaterial, ParsedKeyFile, parse_key_file};
pub use write::{KeyWriteError, write_key_file};

/// Keys shorter than this many bits get a [`WarningKind::ShortKey`] (chrony's threshold).
pub const MIN_SECURE_KEY_BITS: usize = 80;
