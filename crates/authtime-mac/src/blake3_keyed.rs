//! BLAKE3 in keyed mode (the `keyed_hash` function), 32-byte key and tag.

use core::fmt;

use zeroize::Zeroizing;

use crate::{Algorithm, Mac, MacError, Tag, mac::check_nonce};

/// Keyed BLAKE3.
pub(crate) struct Blake3Keyed {
    key: Zeroizing<[u8; 32]>,
}

impl Blake3Keyed {
    pub(crate) fn new(key: &[u8]) -> Result<Self, MacError> {
        let key: [u8; 32] = key.try_into().map_err(|_| MacError::KeyLength {
            algorithm: Algorithm::Blake3Keyed.name().to_owned(),
            got: key.len(),
            expected: Algorithm::Blake3Keyed.info().key,
        })?;
        Ok(Self {
            key: Zeroizing::new(key),
        })
    }
}

impl Mac for Blake3Keyed {
    fn name(&self) -> &str {
        Algorithm::Blake3Keyed.name()
    }
    fn nonce_len(&self) -> usize {
        0
    }
    fn tag_len(&self) -> usize {
        32
    }
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        check_nonce(self.name(), 0, nonce)?;
        Ok(Tag::from_slice(
            blake3::keyed_hash(&self.key, message).as_bytes(),
        ))
    }
}

impl fmt::Debug for Blake3Keyed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Blake3Keyed { .. }")
    }
}
