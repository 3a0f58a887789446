//! Roughtime's protocol core, sans-IO: the message codec, request building,
//! a batched server core, client-side response verification, chains of
//! requests to several servers with malfeasance reports ([`chain`]) and
//! ecosystem server lists ([`ecosystem`]), the quorum rule for trusting a
//! chain's interval ([`quorum`]), the text forms of long-term
//! seeds and delegations ([`delegation_file`]), for both
//! wire versions: RFC 10049's version 1 and the drafts' 0x8000000c (drafts 12
//! to 19, spoken by roughenough 1.3.0-draft14 and Cloudflare's servers).
//!
//! What it does not do: sockets, clocks, randomness, key storage and
//! rotation, rate limits. Those belong to the daemon and the `authtime`
//! command, which give this crate bytes, times, random bytes and keys. The signature context strings differ between the two versions:
//! [`version`] says which and why.
//!
//! Section numbers in comments are those of draft-ietf-ntp-roughtime-19 (the
//! text RFC 10049 was published from). Ed25519 is ed25519-dalek's and
//! SHA-512 RustCrypto's, or for a batch's Merkle leaves `authtime-mac`'s
//! multi-lane SHA-512; nothing cryptographic is written here.

// Tests unwrap freely (a panic is the failure report); library code never does.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod chain;
pub mod delegation;
pub mod delegation_file;
pub mod ecosystem;
pub mod error;
pub mod merkle;
pub mod message;
pub mod quorum;
pub mod request;
pub mod server_batch;
pub mod tags;
pub mod verify;
pub mod version;

pub use chain::{Chain, MalfeasanceReport};
pub use delegation::OnlineKey;
/// The key type [`OnlineKey::delegate`] takes, re-exported so callers need not name ed25519-dalek.
pub use ed25519_dalek::SigningKey;
pub use error::Error;
pub use request::{build_request, parse_request};
pub use server_batch::{BatchTime, respond_batch, respond_parsed};
pub use verify::{Verified, verify_response};
pub use version::Version;
