//! Poly1305 keyed by ChaCha20 (RFC 8439 section 2.6): the one-time Poly1305 key is
//! the first 32 bytes of the ChaCha20 block for (key, nonce, counter 0); the tag
//! is Poly1305 of the message under that one-time key. This is the MAC the NTP
//! draft measured, not the ChaCha20-Poly1305 AEAD (which pads and appends lengths).
//!
//! **Never reuse a nonce under one key**: two messages under one one-time key
//! let an attacker solve for it and forge. See [`crate::NonceSealer`].

use core::fmt;

use chacha20::{
    ChaCha20,
    cipher::{KeyIvInit, StreamCipher},
};
use poly1305::{Poly1305, universal_hash::KeyInit};
use zeroize::Zeroizing;

use crate::{Algorithm, Mac, MacError, Tag, mac::check_nonce};

/// Poly1305-ChaCha20 with its 32-byte key.
pub(crate) struct Poly1305ChaCha20 {
    key: Zeroizing<[u8; 32]>,
}

impl Poly1305ChaCha20 {
    pub(crate) fn new(key: &[u8]) -> Result<Self, MacError> {
        let key: [u8; 32] = key.try_into().map_err(|_| MacError::KeyLength {
            algorithm: Algorithm::Poly1305ChaCha20.name().to_owned(),
            got: key.len(),
            expected: Algorithm::Poly1305ChaCha20.info().key,
        })?;
        Ok(Self {
            key: Zeroizing::new(key),
        })
    }

    /// RFC 8439 section 2.6: `poly1305_key_gen(key, nonce)`.
    pub(crate) fn one_time_key(&self, nonce: &[u8; 12]) -> Zeroizing<[u8; 32]> {
        let mut otk = Zeroizing::new([0u8; 32]);
        let mut chacha = ChaCha20::new(&(*self.key).into(), &(*nonce).into());
        chacha.apply_keystream(&mut otk[..]);
        otk
    }
}

impl Mac for Poly1305ChaCha20 {
    fn name(&self) -> &str {
        Algorithm::Poly1305ChaCha20.name()
    }
    fn nonce_len(&self) -> usize {
        12
    }
    fn tag_len(&self) -> usize {
        16
    }
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        check_nonce(self.name(), 12, nonce)?;
        let mut n = [0u8; 12];
        n.copy_from_slice(nonce);
        let otk = self.one_time_key(&n);
        let tag = Poly1305::new(&(*otk).into()).compute_unpadded(message);
        Ok(Tag::from_slice(&tag))
    }
}

impl fmt::Debug for Poly1305ChaCha20 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Poly1305ChaCha20 { .. }")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        hex::decode(s.replace([' ', '\n', ':'], "")).expect("hex")
    }

    // RFC 8439 section 2.6.2: Poly1305 key generation test vector.
    #[test]
    fn poly1305_key_gen_rfc8439_2_6_2() {
        let key = unhex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
        let mac = Poly1305ChaCha20::new(&key).expect("key");
        let nonce: [u8; 12] = unhex("000000000001020304050607").try_into().expect("12");
        assert_eq!(
            hex::encode(*mac.one_time_key(&nonce)),
            "8ad5a08b905f81cc815040274ab29471a833b637e3fd0da508dbb8e2fdd1a646"
        );
    }

    // RFC 8439 appendix A.4, test vector #3: key generation with a nonzero key.
    #[test]
    fn poly1305_key_gen_rfc8439_a4_vector3() {
        let key = unhex("1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0");
        let mac = Poly1305ChaCha20::new(&key).expect("key");
        let nonce: [u8; 12] = unhex("000000000000000000000002").try_into().expect("12");
        assert_eq!(
            hex::encode(*mac.one_time_key(&nonce)),
            "965e3bc6f9ec7ed9560808f4d229f94b137ff275ca9b3fcbdd59deaad23310ae"
        );
    }
}
