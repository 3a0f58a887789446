//! Key types as the key files name them, and the MAC each one means.

use core::fmt;

use authtime_mac::{Algorithm, Mac, MacError};

use crate::legacy_digest::LegacyDigest;

/// The MAC a key file line asks for.
///
/// The hash types are the legacy digest hash(key ‖ packet) of RFC 5905 section
/// 7.3 (not HMAC); the AES types are CMAC (RFC 4493, RFC 8573).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// MD5(key ‖ packet): `MD5` (and ntpd's old `M`).
    Md5,
    /// SHA-1(key ‖ packet): `SHA1`.
    Sha1,
    /// SHA-256(key ‖ packet), as chrony computes it: `SHA256`. Its 32-byte
    /// digest is truncated to 20 bytes in NTPv4 packets and sent whole in NTPv3.
    Sha256,
    /// AES-128-CMAC: chrony `AES128`, ntpd `AES128CMAC`, NTPsec `AES`.
    Aes128Cmac,
    /// AES-256-CMAC: chrony `AES256`, NTPsec `AES-256`.
    Aes256Cmac,
}

/// Type names that chrony or NTPsec accept and this library does not
/// implement: such lines are skipped with a warning, not refused.
const KNOWN_UNSUPPORTED: [&str; 17] = [
    "SHA224", "SHA-224", "SHA384", "SHA-384", "SHA512", "SHA-512", "SHA3-224", "SHA3-256",
    "SHA3-384", "SHA3-512", "TIGER", "RMD128", "RMD160", "RMD256", "RMD320", "AES-192", "AES192",
];

impl KeyType {
    /// Every type, in the order `authtime keygen --help` lists them.
    pub const ALL: [KeyType; 5] = [
        Self::Md5,
        Self::Sha1,
        Self::Sha256,
        Self::Aes128Cmac,
        Self::Aes256Cmac,
    ];

    /// Parses a type name as chrony, ntpd or NTPsec write it (case-insensitive).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        let upper = |s: &str| name.eq_ignore_ascii_case(s);
        Some(match () {
            () if upper("MD5") || upper("M") => Self::Md5,
            () if upper("SHA1") || upper("SHA-1") => Self::Sha1,
            () if upper("SHA256") || upper("SHA-256") => Self::Sha256,
            () if ["AES", "AES128", "AES-128", "AES128CMAC", "AES-128-CMAC"]
                .iter()
                .any(|s| upper(s)) =>
            {
                Self::Aes128Cmac
            }
            () if ["AES256", "AES-256", "AES256CMAC", "AES-256-CMAC"]
                .iter()
                .any(|s| upper(s)) =>
            {
                Self::Aes256Cmac
            }
            () => return None,
        })
    }

    /// The name, when `name` is a type that chrony or NTPsec know but this
    /// library does not implement.
    #[must_use]
    pub(crate) fn known_unsupported(name: &str) -> Option<&'static str> {
        KNOWN_UNSUPPORTED
            .iter()
            .find(|known| known.eq_ignore_ascii_case(name))
            .copied()
    }

    /// The name chrony writes (`MD5`, `SHA1`, `SHA256`, `AES128`, `AES256`).
    #[must_use]
    pub const fn chrony_name(self) -> &'static str {
        match self {
            Self::Md5 => "MD5",
            Self::Sha1 => "SHA1",
            Self::Sha256 => "SHA256",
            Self::Aes128Cmac => "AES128",
            Self::Aes256Cmac => "AES256",
        }
    }

    /// The name written into ntpd-format files: `AES128CMAC` is what ntpd 4.2.8
    /// reads and NTPsec accepts too; `AES-256` only NTPsec reads.
    #[must_use]
    pub const fn ntpd_name(self) -> &'static str {
        match self {
            Self::Md5 => "MD5",
            Self::Sha1 => "SHA1",
            Self::Sha256 => "SHA256",
            Self::Aes128Cmac => "AES128CMAC",
            Self::Aes256Cmac => "AES-256",
        }
    }

    /// The name used on authtime's command line (`md5`, `aes128`, ...).
    #[must_use]
    pub const fn cli_name(self) -> &'static str {
        match self {
            Self::Md5 => "md5",
            Self::Sha1 => "sha1",
            Self::Sha256 => "sha256",
            Self::Aes128Cmac => "aes128",
            Self::Aes256Cmac => "aes256",
        }
    }

    /// Length of the full MAC in bytes, before NTPv4's truncation to 20.
    #[must_use]
    pub const fn tag_len(self) -> usize {
        match self {
            Self::Md5 | Self::Aes128Cmac | Self::Aes256Cmac => 16,
            Self::Sha1 => 20,
            Self::Sha256 => 32,
        }
    }

    /// The key length CMAC needs; `None` for hash types, which take any length.
    #[must_use]
    pub const fn required_key_len(self) -> Option<usize> {
        match self {
            Self::Aes128Cmac => Some(16),
            Self::Aes256Cmac => Some(32),
            Self::Md5 | Self::Sha1 | Self::Sha256 => None,
        }
    }

    /// Length of the keys `authtime keygen` makes: the CMAC key size, and for
    /// hash types chrony's default of 160 bits (256 for SHA-256).
    #[must_use]
    pub const fn generated_key_len(self) -> usize {
        match self {
            Self::Md5 | Self::Sha1 => 20,
            Self::Aes128Cmac => 16,
            Self::Sha256 | Self::Aes256Cmac => 32,
        }
    }

    /// Sets up the MAC for `key`: the library's implementation where it has
    /// one for this key length, this crate's hash(key ‖ message) otherwise.
    ///
    /// # Errors
    /// [`MacError::KeyLength`] for an empty key or a CMAC key of the wrong length.
    pub fn new_mac(self, key: &[u8]) -> Result<Box<dyn Mac>, MacError> {
        let library = match self {
            Self::Md5 => Algorithm::Md5Legacy,
            Self::Sha1 => Algorithm::Sha1Legacy,
            Self::Aes128Cmac => Algorithm::Aes128Cmac,
            Self::Aes256Cmac => Algorithm::Aes256Cmac,
            Self::Sha256 => return LegacyDigest::new_sha256(key),
        };
        match library.new_mac(key) {
            // The library's legacy digests take keys of up to 32 bytes; chrony
            // and ntpd take longer ones.
            Err(MacError::KeyLength { .. }) if !key.is_empty() && self == Self::Md5 => {
                LegacyDigest::new_md5(key)
            }
            Err(MacError::KeyLength { .. }) if !key.is_empty() && self == Self::Sha1 => {
                LegacyDigest::new_sha1(key)
            }
            other => other,
        }
    }
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.chrony_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_every_implementation_map_to_one_type() {
        for (name, ty) in [
            ("MD5", KeyType::Md5),
            ("md5", KeyType::Md5),
            ("M", KeyType::Md5),
            ("SHA1", KeyType::Sha1),
            ("sha-1", KeyType::Sha1),
            ("SHA256", KeyType::Sha256),
            ("AES", KeyType::Aes128Cmac),
            ("AES128", KeyType::Aes128Cmac),
            ("AES-128", KeyType::Aes128Cmac),
            ("AES128CMAC", KeyType::Aes128Cmac),
            ("AES256", KeyType::Aes256Cmac),
            ("AES-256", KeyType::Aes256Cmac),
        ] {
            assert_eq!(KeyType::from_name(name), Some(ty), "{name}");
        }
        for ty in KeyType::ALL {
            assert_eq!(KeyType::from_name(ty.chrony_name()), Some(ty));
            assert_eq!(KeyType::from_name(ty.ntpd_name()), Some(ty));
        }
        assert_eq!(KeyType::from_name("SHA"), None);
        assert_eq!(KeyType::from_name("SHA512"), None);
        assert_eq!(KeyType::known_unsupported("sha512"), Some("SHA512"));
        assert_eq!(KeyType::known_unsupported("BLAKE"), None);
    }

    #[test]
    fn macs_have_the_expected_tag_lengths_and_long_hash_keys_work() {
        for ty in KeyType::ALL {
            let mac = ty.new_mac(&vec![7; ty.generated_key_len()]).expect("key");
            assert_eq!(mac.tag_len(), ty.tag_len());
        }
        let long = [9u8; 48];
        let md5 = KeyType::Md5.new_mac(&long).expect("long MD5 key");
        assert_eq!(md5.tag_len(), 16);
        let sha1 = KeyType::Sha1.new_mac(&long).expect("long SHA1 key");
        assert_eq!(sha1.tag_len(), 20);
        assert!(KeyType::Md5.new_mac(&[]).is_err());
        assert!(KeyType::Aes128Cmac.new_mac(&[0; 15]).is_err());
    }

    #[test]
    fn long_key_fallback_computes_the_same_digest_as_the_library() {
        // Both compute MD5(key ‖ message); compare on a key the library accepts.
        let key = [0x5a; 32];
        let library = Algorithm::Md5Legacy.new_mac(&key).expect("library");
        let local = LegacyDigest::new_md5(&key).expect("local");
        let msg = [1u8; 48];
        assert_eq!(
            library.compute(&[], &msg).expect("tag"),
            local.compute(&[], &msg).expect("tag")
        );
        let library = Algorithm::Sha1Legacy.new_mac(&key).expect("library");
        let local = LegacyDigest::new_sha1(&key).expect("local");
        assert_eq!(
            library.compute(&[], &msg).expect("tag"),
            local.compute(&[], &msg).expect("tag")
        );
    }
}
