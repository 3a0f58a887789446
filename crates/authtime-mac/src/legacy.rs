//! The legacy NTP digests: hash(key ‖ message).
//!
//! RFC 5905 section 7.3 authenticates a packet with MD5 over the key followed by the
//! packet; ntpd and chrony do the same with SHA-1 for "SHA1" keys. This is not HMAC
//! (it is open to length extension) and is never called one here; it exists so that
//! authtime can talk to the servers that use it.

use core::fmt;

use sha1::{Digest, Sha1};

use crate::kernels::md5_lanes::LegacyMd5;
use crate::kernels::sha_x86::{self, ShaNi};
use crate::{Algorithm, Isa, Mac, MacError, MacInput, SecretBytes, Tag, mac::check_nonce};

/// MD5(key ‖ message) or SHA-1(key ‖ message).
pub(crate) struct LegacyDigest {
    algorithm: Algorithm,
    key: SecretBytes,
    /// SHA-1 with the SHA extensions, when the CPU has them.
    sha_ni: Option<ShaNi>,
    /// MD5 with the key absorbed and the lane kernels `isa` allows.
    md5: Option<LegacyMd5>,
}

impl LegacyDigest {
    /// `algorithm` is `Md5Legacy` or `Sha1Legacy`; the key length was checked.
    pub(crate) fn new(algorithm: Algorithm, key: &[u8], isa: Isa) -> Self {
        Self {
            algorithm,
            key: SecretBytes::new(key),
            sha_ni: ShaNi::new(isa),
            md5: (algorithm == Algorithm::Md5Legacy).then(|| LegacyMd5::new(key, isa)),
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
        Ok(if let Some(md5) = &self.md5 {
            md5.tag(message)
        } else if let Some(ni) = self.sha_ni {
            sha_x86::tag_of(&sha_x86::sha1_legacy(ni, self.key.expose(), message), 20)
        } else {
            Tag::from_slice(
                &Sha1::new()
                    .chain_update(self.key.expose())
                    .chain_update(message)
                    .finalize(),
            )
        })
    }

    fn compute_many(&self, inputs: &[MacInput<'_>], tags: &mut [Tag]) -> Result<(), MacError> {
        if let Some(md5) = &self.md5 {
            return md5.compute_many(self.name(), inputs, tags);
        }
        if inputs.len() != tags.len() {
            return Err(MacError::BatchLength {
                inputs: inputs.len(),
                outputs: tags.len(),
            });
        }
        for input in inputs {
            check_nonce(self.name(), 0, input.nonce)?;
        }
        match (self.algorithm, self.sha_ni) {
            (Algorithm::Sha1Legacy, Some(ni)) => {
                sha_x86::sha1_legacy_many(ni, self.key.expose(), inputs, tags);
            }
            _ => {
                for (input, tag) in inputs.iter().zip(tags.iter_mut()) {
                    *tag = self.compute(input.nonce, input.message)?;
                }
            }
        }
        Ok(())
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
