//! Zero-copy codec for NTPv4 packets (RFC 5905) and what follows their header.
//!
//! - [`Header`]: the 48-byte header with leap indicator, version, mode, stratum,
//!   poll, precision, root delay and dispersion ([`NtpShort`]), reference id and
//!   the four timestamps.
//! - [`NtpTimestamp`]: 64-bit timestamps with era-aware conversion to and from
//!   [`UnixTime`], and [`NtpDuration`] for the signed differences the protocol
//!   computes.
//! - [`ExtensionField`]s (RFC 7822) with their length rules, the MAC trailer
//!   ([`MacTrailer`]: key id and digest), the crypto-NAK, and the choice between
//!   them that RFC 7822 section 7.5 prescribes ([`Trailer`]).
//! - [`KissCode`]s of Kiss-o'-Death packets, unknown codes kept as they came.
//!
//! [`Packet::decode`] borrows the input and never panics: every malformed input
//! is a [`WireError`] naming its cause. [`PacketWriter`] builds packets in a
//! caller-owned buffer and returns their length; nothing here allocates.
//!
//! This crate does not compute or check MACs (see `authtime-mac`), does not
//! know keys, and makes no protocol decisions (see `authtime-proto`); it does no
//! I/O and reads no clock.

#![no_std]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

mod error;
mod extension;
mod header;
mod kiss;
mod packet;
mod reader;
mod timestamp;
mod trailer;

#[doc(hidden)]
pub mod fuzz_harness;

pub use error::WireError;
pub use extension::{ExtensionField, ExtensionFieldIter, ExtensionFields};
pub use header::{HEADER_LEN, Header, LeapIndicator, Mode, ReferenceId, ReferenceIdAt};
pub use kiss::KissCode;
pub use packet::{Packet, PacketWriter};
pub use reader::{Reader, Writer};
pub use timestamp::{NtpDuration, NtpShort, NtpTimestamp, UnixTime};
pub use trailer::{
    CRYPTO_NAK_LEN, MAX_LEGACY_DIGEST_LEN, MAX_V4_DIGEST_LEN, MIN_DIGEST_LEN, MacTrailer, Trailer,
    digest_len_on_wire,
};
