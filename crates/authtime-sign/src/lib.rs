//! Signatures for TESLA bootstrap messages (the signed sync response of RFC 4082 §3.3), with
//! classical and post-quantum schemes behind one enum.
//!
//! | [`Scheme`] | standard | implemented by |
//! |---|---|---|
//! | `ed25519` | RFC 8032 | `ed25519-dalek` 3 (strict verification) |
//! | `p256` | FIPS 186-5 ECDSA, RFC 6979 nonces | `p256` 0.14 (RustCrypto `ecdsa` 0.17) |
//! | `ml-dsa-44`, `ml-dsa-65` | FIPS 204 | `ml-dsa` 0.1 (RustCrypto, not audited) |
//! | `slh-dsa-128s` | FIPS 205 SLH-DSA-SHA2-128s | `slh-dsa` 0.2.0-rc.5 (RustCrypto, release candidate) |
//! | `lms` | RFC 8554 LMS_SHA256_M32_H10 / LMOTS_SHA256_N32_W4 | `lms-signature` 0.1.0-rc.2 (RustCrypto, release candidate) |
//!
//! What this crate does: key generation with an injected RNG or seed, deterministic signing,
//! verification that never panics on any input, byte and file encodings (`authtime-sign v1`
//! text files, secret files written atomically with mode 0600), and the state discipline
//! of the stateful LMS scheme (persist the next index before releasing a signature; lock the
//! key file against a second signer).
//!
//! What it does not do: HSS (multi-level LMS), hedged/randomized signing, context strings,
//! pre-hashing, PKCS#8 or PEM, key rotation policy. The LMS crate keeps its own copy of the
//! seed without zeroizing it on drop; our copy is zeroized.
//!
//! The TESLA crate's `BootstrapSigner` / `BootstrapVerifier` traits map onto
//! [`SigningKey::sign`], [`VerifyingKey::is_valid`] and [`Scheme::id`].

mod atomic_write;
mod error;
mod key_file;
mod lms_key;
mod scheme;
mod signing_key;
mod timings;
mod verifying_key;

#[doc(hidden)]
pub mod fuzz_harness;

pub use error::{KeyDecodeError, KeyFileError, SignError, VerifyError};
pub use scheme::{Scheme, SchemeSizes, UnknownSchemeName};
pub use signing_key::SigningKey;
pub use timings::{SchemeTimings, measure_timings};
pub use verifying_key::VerifyingKey;
