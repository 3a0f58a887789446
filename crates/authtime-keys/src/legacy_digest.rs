//! hash(key ‖ packet) for the cases the MAC library does not cover: chrony's
//! SHA-256 keys, and MD5 or SHA-1 keys longer than the library's 32 bytes.
//!
//! Like the library's `md5-legacy` and `sha1-legacy`, this is the legacy NTP
//! digest of RFC 5905 section 7.3, not HMAC; it exists for interoperability with
//! chrony and ntpd, which compute exactly this for their hash key types.

use core::fmt;

use authtime_mac::{KeyLength, Mac, MacError, SecretBytes, Tag};
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest, Sha256};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Hash {
    Md5,
    Sha1,
    Sha256,
}

/// hash(key ‖ message) with MD5, SHA-1 or SHA-256, for keys of any non-zero length.
pub(crate) struct LegacyDigest {
    hash: Hash,
    key: SecretBytes,
}

impl LegacyDigest {
    fn boxed(hash: Hash, key: &[u8]) -> Result<Box<dyn Mac>, MacError> {
        let name = Self::name_of(hash);
        if key.is_empty() {
            return Err(MacError::KeyLength {
                algorithm: name.to_owned(),
                got: 0,
                expected: KeyLength::Range {
                    min: 1,
                    max: usize::MAX,
                },
            });
        }
        Ok(Box::new(Self {
            hash,
            key: SecretBytes::new(key),
        }))
    }

    /// SHA-256(key ‖ message), chrony's `SHA256` key type.
    pub(crate) fn new_sha256(key: &[u8]) -> Result<Box<dyn Mac>, MacError> {
        Self::boxed(Hash::Sha256, key)
    }

    /// MD5(key ‖ message) for keys the library does not take.
    pub(crate) fn new_md5(key: &[u8]) -> Result<Box<dyn Mac>, MacError> {
        Self::boxed(Hash::Md5, key)
    }

    /// SHA-1(key ‖ message) for keys the library does not take.
    pub(crate) fn new_sha1(key: &[u8]) -> Result<Box<dyn Mac>, MacError> {
        Self::boxed(Hash::Sha1, key)
    }

    const fn name_of(hash: Hash) -> &'static str {
        match hash {
            Hash::Md5 => "md5-legacy",
            Hash::Sha1 => "sha1-legacy",
            Hash::Sha256 => "sha256-legacy",
        }
    }
}

impl Mac for LegacyDigest {
    fn name(&self) -> &str {
        Self::name_of(self.hash)
    }

    fn nonce_len(&self) -> usize {
        0
    }

    fn tag_len(&self) -> usize {
        match self.hash {
            Hash::Md5 => 16,
            Hash::Sha1 => 20,
            Hash::Sha256 => 32,
        }
    }

    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        if !nonce.is_empty() {
            return Err(MacError::NonceNotAccepted {
                algorithm: self.name().to_owned(),
            });
        }
        let key = self.key.expose();
        Ok(match self.hash {
            Hash::Md5 => Tag::from_slice(
                &Md5::new()
                    .chain_update(key)
                    .chain_update(message)
                    .finalize(),
            ),
            Hash::Sha1 => Tag::from_slice(
                &Sha1::new()
                    .chain_update(key)
                    .chain_update(message)
                    .finalize(),
            ),
            Hash::Sha256 => Tag::from_slice(
                &Sha256::new()
                    .chain_update(key)
                    .chain_update(message)
                    .finalize(),
            ),
        })
    }
}

impl fmt::Debug for LegacyDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LegacyDigest")
            .field("algorithm", &self.name())
            .field("key", &self.key)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // FIPS 180-2 appendix B.1: SHA-256("abc"); key "a" then message "bc".
    #[test]
    fn sha256_legacy_is_sha256_of_key_then_message_fips180() {
        let mac = LegacyDigest::new_sha256(b"a").expect("key");
        let tag = mac.compute(&[], b"bc").expect("tag");
        let expected = [
            0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae,
            0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61,
            0xf2, 0x00, 0x15, 0xad,
        ];
        assert_eq!(tag.as_bytes(), expected);
        assert_eq!(mac.verify(&[], b"bc", &expected), Ok(()));
        assert_eq!(mac.verify(&[], b"bd", &expected), Err(MacError::BadTag));
    }

    #[test]
    fn refuses_empty_keys_and_nonces_and_hides_the_key() {
        assert!(LegacyDigest::new_sha256(&[]).is_err());
        let mac = LegacyDigest::new_md5(&[0xab; 40]).expect("key");
        assert!(mac.compute(&[1], b"x").is_err());
        let shown = format!("{mac:?}");
        assert!(!shown.contains("ab, ") && !shown.contains("171"), "{shown}");
    }
}
