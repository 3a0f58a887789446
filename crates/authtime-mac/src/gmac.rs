//! AES-128-GMAC (RFC 4543): AES-GCM over an empty plaintext with the message as
//! additional authenticated data; the tag is GCM's tag.
//!
//! **Never reuse a nonce under one key.** Joux showed that two tags under one
//! nonce reveal the GHASH key H, after which every tag can be forged
//! (draft-aanchal4-ntp-mac section 5.1). [`crate::NonceSealer`] generates the
//! nonces itself so that reuse is impossible by construction.

use core::fmt;

use aes_gcm::{Aes128Gcm, KeyInit, Nonce, aead::AeadInOut};

use crate::{Algorithm, Mac, MacError, Tag, mac::check_nonce};

/// AES-128-GMAC with an expanded key and precomputed GHASH key.
pub(crate) struct Aes128Gmac {
    cipher: Aes128Gcm,
}

impl Aes128Gmac {
    pub(crate) fn new(key: &[u8]) -> Result<Self, MacError> {
        let cipher = Aes128Gcm::new_from_slice(key).map_err(|_| MacError::KeyLength {
            algorithm: Algorithm::Aes128Gmac.name().to_owned(),
            got: key.len(),
            expected: Algorithm::Aes128Gmac.info().key,
        })?;
        Ok(Self { cipher })
    }
}

impl Mac for Aes128Gmac {
    fn name(&self) -> &str {
        Algorithm::Aes128Gmac.name()
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
        // GCM refuses only inputs beyond 2^36 bytes, which no slice in memory reaches.
        let tag = self
            .cipher
            .encrypt_inout_detached(&Nonce::from(n), message, (&mut [][..]).into())
            .map_err(|_| MacError::InvalidParameter("message too long for GMAC".into()))?;
        Ok(Tag::from_slice(&tag))
    }
}

impl fmt::Debug for Aes128Gmac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Aes128Gmac { .. }")
    }
}
