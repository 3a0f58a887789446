//! Message authentication codes for authenticated time and packet authentication.
//!
//! One interface, [`Mac`], for every algorithm the NTP MAC draft
//! (draft-aanchal4-ntp-mac), RFC 5905, RFC 8573 and seed 004 evaluate, set up once
//! per key and then used per packet; verification is constant-time. Algorithms
//! are looked up by their public names ([`Algorithm`], [`new_mac`]); partial
//! MACs ([`PartialMac`]) wrap any of them; the nonce-based MACs (GMAC,
//! Poly1305-ChaCha20) get their nonces from a [`NonceSealer`] when the caller does
//! not manage them. [`md5_kway`] is RFC 1810's interleaved MD5. [`AesSiv`] is
//! the AEAD of NTS (RFC 5297), here because it is two of the same AES-CMAC
//! chains and a CTR pass, on the same kernels.
//!
//! The primitives come from maintained crates (RustCrypto `aes`, `cmac`,
//! `hmac`, `sha1`, `sha2`, `md-5`, `aes-gcm`, `chacha20`, `poly1305`; `blake3`;
//! `siphasher`), which are also the portable paths and the test oracles. Written
//! here by hand, because no crate provides them: the legacy digest framing, the
//! partial-MAC selection, the nonce sealer, the K-way MD5 chaining, and the
//! kernels in `kernels/` (AES-NI/VAES CMAC one packet and in lanes, AES-NI AES-SIV, SHA-NI
//! SHA-1/SHA-256 for HMAC one packet and interleaved, scalar and AVX2 MD5). Each
//! kernel is chosen once from the CPU's features ([`Isa`]) and tested against
//! the crate it replaces on random inputs.
//!
//! This crate does not parse packets, key files or configuration, and does no I/O.

mod aes_siv;
mod algorithm;
mod blake3_keyed;
mod cmac_aes;
mod error;
mod gmac;
mod hmac_family;
mod isa;
mod kernels;
mod key;
mod legacy;
mod mac;
mod md5_kway;
mod partial;
mod poly1305_chacha;
mod sealer;
mod sha512_many;
mod siphash;
mod siv_portable;
mod tag;
#[expect(
    unsafe_code,
    reason = "volatile stores that the compiler may not elide; each has a SAFETY comment"
)]
mod wipe;

pub use aes_siv::{AesSiv, SIV_TAG_LEN, SivKeyRef, SivOp};
pub use algorithm::{Algorithm, AlgorithmInfo};
pub use error::MacError;
pub use isa::Isa;
pub use key::{KeyLength, SecretBytes};
pub use mac::{Mac, MacInput, new_mac};
pub use md5_kway::{md5, md5_kway, md5_kway_with_isa, md5_parallel8};
pub use partial::{PIECE_LEN, PartialMac, PartialSpec, detection_probability};
pub use sealer::{NonceSealer, SealedTag, open_sealed};
pub use sha512_many::{sha512_many, sha512_many_with_isa};
pub use tag::{MAX_TAG_LEN, Tag, ct_bytes_eq};
pub use wipe::wipe;
