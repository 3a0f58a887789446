//! The legacy NTP digests: hash(key ‖ message).
//!
//! RFC 5905 section 7.3 authenticates a packet with MD5 over the key followed by the
//! packet; ntpd and chrony do the same with SHA-1 for "SHA1" keys. This is not HMAC
//! (it is open to length extension) and is never called one here; it exists so that
//! authtime can talk to the servers that use it.

use core::fmt;

use md5::Md5;
use sha1::{Digest, Sha1};

use crate::{Algorithm, Mac, MacError, SecretBytes, Tag, mac::check_nonce};

/// MD5(key ‖ message) or SHA-1(key ‖ message).
pub(crate) struct LegacyDigest {
    algorithm: Algorithm,
    key: SecretBytes,
}

impl LegacyDigest {
    /// `algorithm` is `Md5Legacy` or `Sha1Legacy`; the key length was checked.
    pub(crate) fn new(algorithm: Algorithm, key: &[u8]) -> Self {
        Self {
            algorithm,
            key: SecretBytes::new(key),
        }
    }
}

impl Mac for LegacyDigest {
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
        Ok(if self.algorithm == Algorithm::Md5Legacy {
            Tag::from_slice(
                &Md5::new()
                    .chain_update(self.key.expose())
                    .chain_update(message)
                    .finalize(),
            )
        } else {
            Tag::from_slice(
                &Sha1::new()
                    .chain_update(self.key.expose())
                    .chain_update(message)
                    .finalize(),
            )
        })
    }
}

impl fmt::Debug for LegacyDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LegacyDigest")
            .field("algorithm", &self.algorithm)
            .field("key", &self.key)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 1321 appendix A.5: MD5("abc"); with key "a" and message "bc" the
    // concatenation is "abc", so the legacy digest must equal it.
    #[test]
    fn md5_legacy_is_md5_of_key_then_message_rfc1321() {
        let mac = Algorithm::Md5Legacy.new_mac(b"a").expect("key");
        let tag = mac.compute(&[], b"bc").expect("tag");
        assert_eq!(
            hex::encode(tag.as_bytes()),
            "900150983cd24fb0d6963f7d28e17f72"
        );
    }

    // FIPS 180-2 appendix A.1: SHA-1("abc").
    #[test]
    fn sha1_legacy_is_sha1_of_key_then_message_fips180() {
        let mac = Algorithm::Sha1Legacy.new_mac(b"ab").expect("key");
        let tag = mac.compute(&[], b"c").expect("tag");
        assert_eq!(
            hex::encode(tag.as_bytes()),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
    }
}
