//! HMAC (RFC 2104) over MD5, SHA-1, SHA-224 and SHA-256, full or truncated to 16 bytes.
//!
//! The keyed state (inner and outer padded-key compressions) is computed once at
//! setup; each message clones it, so a 48-byte packet costs two compressions.

use core::fmt;

use hmac::{Hmac, KeyInit, Mac as _};
use md5::Md5;
use sha1::Sha1;
use sha2::{Sha224, Sha256};

use crate::{Algorithm, Mac, MacError, Tag, mac::check_nonce};

#[derive(Clone)]
enum Keyed {
    Md5(Hmac<Md5>),
    Sha1(Hmac<Sha1>),
    Sha224(Hmac<Sha224>),
    Sha256(Hmac<Sha256>),
}

/// HMAC with its key schedule precomputed.
pub(crate) struct HmacMac {
    algorithm: Algorithm,
    keyed: Keyed,
}

// HMAC accepts keys of any length (RFC 2104 section 2), so `new_from_slice` cannot fail.
fn keyed<M: KeyInit>(key: &[u8]) -> M {
    match M::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC accepts every key length"),
    }
}

impl HmacMac {
    /// `algorithm` is one of the HMAC variants.
    pub(crate) fn new(algorithm: Algorithm, key: &[u8]) -> Self {
        let keyed = match algorithm {
            Algorithm::HmacMd5 => Keyed::Md5(keyed(key)),
            Algorithm::HmacSha1 => Keyed::Sha1(keyed(key)),
            Algorithm::HmacSha224 | Algorithm::HmacSha224_128 => Keyed::Sha224(keyed(key)),
            _ => Keyed::Sha256(keyed(key)),
        };
        Self { algorithm, keyed }
    }
}

impl Mac for HmacMac {
    fn name(&self) -> &str {
        self.algorithm.name()
    }
    fn nonce_len(&self) -> usize {
        0
    }
    fn tag_len(&self) -> usize {
        self.algorithm.info().tag_len
    }
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        check_nonce(self.name(), 0, nonce)?;
        let full = match &self.keyed {
            Keyed::Md5(m) => {
                Tag::from_slice(&m.clone().chain_update(message).finalize().into_bytes())
            }
            Keyed::Sha1(m) => {
                Tag::from_slice(&m.clone().chain_update(message).finalize().into_bytes())
            }
            Keyed::Sha224(m) => {
                Tag::from_slice(&m.clone().chain_update(message).finalize().into_bytes())
            }
            Keyed::Sha256(m) => {
                Tag::from_slice(&m.clone().chain_update(message).finalize().into_bytes())
            }
        };
        // RFC 2104 section 5: a truncated HMAC keeps the leftmost bytes.
        Ok(Tag::from_slice(&full.as_bytes()[..self.tag_len()]))
    }
}

impl fmt::Debug for HmacMac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacMac")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}
