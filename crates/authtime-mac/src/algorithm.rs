//! The registry: every algorithm by its public name, with its sizes.

use crate::{KeyLength, MacError};

/// One of the library's base MAC algorithms. The names returned by
/// [`Algorithm::name`] are part of the public interface (key files, config,
/// command line) and never change.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// MD5(key ‖ message), the legacy NTP digest of RFC 5905 section 7.3. Not a MAC in the
    /// modern sense (length extension), kept for interoperability.
    Md5Legacy,
    /// SHA-1(key ‖ message), as ntpd and chrony compute their "SHA1" keys.
    Sha1Legacy,
    /// HMAC-MD5 (RFC 2104).
    HmacMd5,
    /// HMAC-SHA1 (RFC 2104).
    HmacSha1,
    /// HMAC-SHA224 (RFC 2104, RFC 4231).
    HmacSha224,
    /// HMAC-SHA256 (RFC 2104, RFC 4231).
    HmacSha256,
    /// HMAC-SHA224 truncated to 16 bytes (RFC 7630 section 4).
    HmacSha224_128,
    /// HMAC-SHA256 truncated to 16 bytes (RFC 7630 section 4).
    HmacSha256_128,
    /// AES-128-CMAC (RFC 4493, RFC 8573).
    Aes128Cmac,
    /// AES-256-CMAC (NIST SP 800-38B).
    Aes256Cmac,
    /// AES-128-GMAC: GCM with empty plaintext and the message as AAD (RFC 4543).
    Aes128Gmac,
    /// Poly1305 with a one-time key from ChaCha20 (RFC 8439 section 2.6).
    Poly1305ChaCha20,
    /// BLAKE3 in keyed mode.
    Blake3Keyed,
    /// SipHash-2-4 with a 64-bit tag: fast, weak, a reference point.
    SipHash24,
}

/// Sizes and name of an algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlgorithmInfo {
    /// Public name.
    pub name: &'static str,
    /// Key lengths accepted.
    pub key: KeyLength,
    /// Nonce length in bytes, 0 when the algorithm takes none.
    pub nonce_len: usize,
    /// Tag length in bytes.
    pub tag_len: usize,
    /// One line for `authtime mac list`.
    pub summary: &'static str,
}

impl Algorithm {
    /// Every base algorithm, in the order `authtime mac list` prints them.
    pub const ALL: [Algorithm; 14] = [
        Self::Md5Legacy,
        Self::Sha1Legacy,
        Self::HmacMd5,
        Self::HmacSha1,
        Self::HmacSha224,
        Self::HmacSha256,
        Self::HmacSha224_128,
        Self::HmacSha256_128,
        Self::Aes128Cmac,
        Self::Aes256Cmac,
        Self::Aes128Gmac,
        Self::Poly1305ChaCha20,
        Self::Blake3Keyed,
        Self::SipHash24,
    ];

    /// Name, sizes and summary.
    #[must_use]
    pub const fn info(self) -> AlgorithmInfo {
        const LEGACY_KEY: KeyLength = KeyLength::Range { min: 1, max: 32 };
        const HMAC_KEY: KeyLength = KeyLength::Range { min: 1, max: 1024 };
        let (name, key, nonce_len, tag_len, summary) = match self {
            Self::Md5Legacy => (
                "md5-legacy",
                LEGACY_KEY,
                0,
                16,
                "MD5(key || message), RFC 5905",
            ),
            Self::Sha1Legacy => (
                "sha1-legacy",
                LEGACY_KEY,
                0,
                20,
                "SHA-1(key || message), ntpd/chrony",
            ),
            Self::HmacMd5 => ("hmac-md5", HMAC_KEY, 0, 16, "HMAC-MD5, RFC 2104"),
            Self::HmacSha1 => ("hmac-sha1", HMAC_KEY, 0, 20, "HMAC-SHA1, RFC 2104"),
            Self::HmacSha224 => ("hmac-sha224", HMAC_KEY, 0, 28, "HMAC-SHA224, RFC 4231"),
            Self::HmacSha256 => ("hmac-sha256", HMAC_KEY, 0, 32, "HMAC-SHA256, RFC 4231"),
            Self::HmacSha224_128 => (
                "hmac-sha224-128",
                HMAC_KEY,
                0,
                16,
                "HMAC-SHA224 truncated to 16 bytes, RFC 7630",
            ),
            Self::HmacSha256_128 => (
                "hmac-sha256-128",
                HMAC_KEY,
                0,
                16,
                "HMAC-SHA256 truncated to 16 bytes, RFC 7630",
            ),
            Self::Aes128Cmac => (
                "aes128-cmac",
                KeyLength::Exact(16),
                0,
                16,
                "AES-128-CMAC, RFC 4493/8573",
            ),
            Self::Aes256Cmac => (
                "aes256-cmac",
                KeyLength::Exact(32),
                0,
                16,
                "AES-256-CMAC, SP 800-38B",
            ),
            Self::Aes128Gmac => (
                "aes128-gmac",
                KeyLength::Exact(16),
                12,
                16,
                "AES-128-GMAC, RFC 4543 (never reuse a nonce)",
            ),
            Self::Poly1305ChaCha20 => (
                "poly1305-chacha20",
                KeyLength::Exact(32),
                12,
                16,
                "Poly1305 keyed by ChaCha20, RFC 8439 2.6 (never reuse a nonce)",
            ),
            Self::Blake3Keyed => (
                "blake3-keyed",
                KeyLength::Exact(32),
                0,
                32,
                "BLAKE3 keyed mode",
            ),
            Self::SipHash24 => (
                "siphash24",
                KeyLength::Exact(16),
                0,
                8,
                "SipHash-2-4, 64-bit tag (weak)",
            ),
        };
        AlgorithmInfo {
            name,
            key,
            nonce_len,
            tag_len,
            summary,
        }
    }

    /// Public name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// Looks an algorithm up by its public name (case-insensitive).
    ///
    /// # Errors
    /// [`MacError::UnknownAlgorithm`] when no algorithm has that name.
    pub fn from_name(name: &str) -> Result<Self, MacError> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| MacError::UnknownAlgorithm(name.to_owned()))
    }
}

impl core::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl core::str::FromStr for Algorithm {
    type Err = MacError;
    fn from_str(s: &str) -> Result<Self, MacError> {
        Self::from_name(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for alg in Algorithm::ALL {
            assert_eq!(Algorithm::from_name(alg.name()), Ok(alg));
            assert_eq!(Algorithm::from_name(&alg.name().to_uppercase()), Ok(alg));
        }
        let mut names: Vec<_> = Algorithm::ALL.iter().map(|a| a.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Algorithm::ALL.len());
    }

    #[test]
    fn unknown_name_is_an_error() {
        assert_eq!(
            Algorithm::from_name("md4"),
            Err(MacError::UnknownAlgorithm("md4".into()))
        );
    }
}
