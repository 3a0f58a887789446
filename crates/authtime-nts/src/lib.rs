//! NTS for NTP (RFC 8915 sections 5 and 6), sans-IO.
//!
//! - [`aead`]: the negotiable AEADs (AES-SIV-CMAC-256/512, AES-128-GCM-SIV).
//! - [`key_ring`]: cookie master keys rotating by time period, with old keys
//!   kept and the next key published ahead, serialized to one blob for the
//!   shared master-key store.
//! - [`cookie`]: the section 6 cookie (key id, nonce, sealed session keys).
//! - [`extension`]: the NTS extension fields and a typed view of an NTS
//!   packet (authenticated plaintext, authenticator, discarded tail).
//! - [`server`]: checks an NTS request and writes the protected reply or the
//!   NTSN Kiss-o'-Death, one request at a time or the requests of a receive
//!   batch together ([`NtsServer::prepare_batch`]); [`client`]: builds
//!   requests and checks replies.
//!
//! This crate does no I/O, reads no clock and draws no randomness of its own:
//! time and random bytes are inputs. It does not do NTS-KE (TLS, records,
//! key export: `authtime-ntske`), does not store the key ring (the master-key
//! store of `authtime-keys`), and does not plan NTP header fields or compute
//! time (`authtime-proto`).

pub mod aead;
pub mod client;
pub mod cookie;
pub mod extension;
pub mod key_ring;
mod ring_blob;
pub mod server;
mod server_batch;
mod server_outcome;

#[doc(hidden)]
pub mod fuzz_harness;

pub use aead::{AeadAlgorithm, AeadError, AeadKey};
pub use client::{ClientError, ClientOutcome, PendingRequest, build_request, check_response};
pub use cookie::{CookieError, SessionKeys, open_cookie, seal_cookie};
pub use extension::{Authenticator, EfError, NtsPacket};
pub use key_ring::{CookieAead, KeyRing, MasterKey, RingError, RotationPolicy};
pub use server::{HeaderFor, NakReason, NtsDrop, NtsServer, ServerAction};
pub use server_batch::{MAX_BATCH, PreparedNts, REQUEST_BODY_MAX};
