//! SipHash-2-4 with a 64-bit tag, the fast-and-weak reference point of seed 004.
//! The tag is the 64-bit result in little-endian byte order, as the reference
//! implementation and OpenSSL's SIPHASH MAC output it.

use core::{fmt, hash::Hasher};

use siphasher::sip::SipHasher24;
use zeroize::Zeroizing;

use crate::{Algorithm, Mac, MacError, Tag, mac::check_nonce};

/// SipHash-2-4.
pub(crate) struct SipHash24 {
    key: Zeroizing<[u8; 16]>,
}

impl SipHash24 {
    pub(crate) fn new(key: &[u8]) -> Result<Self, MacError> {
        let key: [u8; 16] = key.try_into().map_err(|_| MacError::KeyLength {
            algorithm: Algorithm::SipHash24.name().to_owned(),
            got: key.len(),
            expected: Algorithm::SipHash24.info().key,
        })?;
        Ok(Self {
            key: Zeroizing::new(key),
        })
    }
}

impl Mac for SipHash24 {
    fn name(&self) -> &str {
        Algorithm::SipHash24.name()
    }
    fn nonce_len(&self) -> usize {
        0
    }
    fn tag_len(&self) -> usize {
        8
    }
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        check_nonce(self.name(), 0, nonce)?;
        let mut h = SipHasher24::new_with_key(&self.key);
        h.write(message);
        Ok(Tag::from_slice(&h.finish().to_le_bytes()))
    }
}

impl fmt::Debug for SipHash24 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SipHash24 { .. }")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // SipHash paper (Aumasson and Bernstein, 2012), appendix A: key 00..0f,
    // message 00..0e (15 bytes), result a129ca6149be45e5 as a 64-bit integer.
    #[test]
    fn siphash24_paper_appendix_a() {
        let key: Vec<u8> = (0u8..16).collect();
        let msg: Vec<u8> = (0u8..15).collect();
        let tag = SipHash24::new(&key)
            .expect("key")
            .compute(&[], &msg)
            .expect("tag");
        assert_eq!(
            u64::from_le_bytes(tag.as_bytes().try_into().expect("8")),
            0xa129_ca61_49be_45e5
        );
    }
}
