//! AES-CMAC (RFC 4493 for AES-128, NIST SP 800-38B for AES-256), as RFC 8573 uses for NTP.

use core::fmt;

use aes::{Aes128, Aes256};
use cmac::{Cmac, KeyInit, Mac as _};

use crate::{Algorithm, Mac, MacError, Tag, mac::check_nonce};

#[derive(Clone)]
enum Keyed {
    Aes128(Cmac<Aes128>),
    Aes256(Cmac<Aes256>),
}

/// AES-CMAC with expanded round keys and subkeys.
pub(crate) struct AesCmac {
    algorithm: Algorithm,
    keyed: Keyed,
}

impl AesCmac {
    /// `algorithm` is `Aes128Cmac` or `Aes256Cmac`.
    pub(crate) fn new(algorithm: Algorithm, key: &[u8]) -> Result<Self, MacError> {
        let bad_len = |_| MacError::KeyLength {
            algorithm: algorithm.name().to_owned(),
            got: key.len(),
            expected: algorithm.info().key,
        };
        let keyed = if algorithm == Algorithm::Aes128Cmac {
            Keyed::Aes128(Cmac::new_from_slice(key).map_err(bad_len)?)
        } else {
            Keyed::Aes256(Cmac::new_from_slice(key).map_err(bad_len)?)
        };
        Ok(Self { algorithm, keyed })
    }
}

impl Mac for AesCmac {
    fn name(&self) -> &str {
        self.algorithm.name()
    }
    fn nonce_len(&self) -> usize {
        0
    }
    fn tag_len(&self) -> usize {
        16
    }
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        check_nonce(self.name(), 0, nonce)?;
        Ok(match &self.keyed {
            Keyed::Aes128(m) => {
                Tag::from_slice(&m.clone().chain_update(message).finalize().into_bytes())
            }
            Keyed::Aes256(m) => {
                Tag::from_slice(&m.clone().chain_update(message).finalize().into_bytes())
            }
        })
    }
}

impl fmt::Debug for AesCmac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesCmac")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}
