//! The one interface every algorithm implements, and the constructor by name.

use core::fmt;

use crate::{Algorithm, Isa, KeyLength, MacError, Tag};

/// One message of a batch, with its nonce (empty for algorithms without one).
#[derive(Debug, Clone, Copy)]
pub struct MacInput<'a> {
    /// Nonce, or `&[]` for algorithms that take none.
    pub nonce: &'a [u8],
    /// The bytes to authenticate.
    pub message: &'a [u8],
}

impl<'a> MacInput<'a> {
    /// A message without nonce.
    #[must_use]
    pub fn message(message: &'a [u8]) -> Self {
        Self {
            nonce: &[],
            message,
        }
    }
}

/// A MAC algorithm with its key already set up.
///
/// Key setup (round keys, HMAC inner and outer states, subkeys) happens once when
/// the value is built; [`Mac::compute`] then costs only the per-message work.
/// Implementations hold their key in memory that is zeroized on drop and never
/// printed by `Debug`.
pub trait Mac: Send + Sync + fmt::Debug {
    /// Public name, as `authtime mac list` shows it (`aes128-cmac`, `partial:hmac-sha256:0.25`).
    fn name(&self) -> &str;

    /// Nonce length in bytes; 0 when the algorithm takes none.
    fn nonce_len(&self) -> usize;

    /// Tag length in bytes.
    fn tag_len(&self) -> usize;

    /// Computes the tag of `message`.
    ///
    /// For algorithms with a nonce (GMAC, Poly1305-ChaCha20), **a nonce must
    /// never be used twice with one key**: a single reuse reveals the
    /// authentication key (GMAC, Joux's attack) or the one-time key (Poly1305).
    /// Callers that do not manage nonces themselves should use
    /// [`crate::NonceSealer`], which makes reuse impossible by construction.
    ///
    /// # Errors
    /// A nonce of the wrong length, a missing nonce, or a nonce given to an
    /// algorithm that takes none.
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError>;

    /// Verifies `tag` over `message` in constant time.
    ///
    /// # Errors
    /// [`MacError::BadTag`] when the tag does not match; the usage errors of
    /// [`Mac::compute`]; [`MacError::TagLength`] for a tag of the wrong length.
    fn verify(&self, nonce: &[u8], message: &[u8], tag: &[u8]) -> Result<(), MacError> {
        if tag.len() != self.tag_len() {
            return Err(MacError::TagLength {
                got: tag.len(),
                expected: self.tag_len(),
            });
        }
        if self.compute(nonce, message)?.ct_matches(tag) {
            Ok(())
        } else {
            Err(MacError::BadTag)
        }
    }

    /// Computes the tags of many messages under this key, `tags[i]` for `inputs[i]`.
    /// Implementations with multi-lane kernels override this.
    ///
    /// # Errors
    /// [`MacError::BatchLength`] when the slices differ in length, or the first
    /// usage error of any input.
    fn compute_many(&self, inputs: &[MacInput<'_>], tags: &mut [Tag]) -> Result<(), MacError> {
        if inputs.len() != tags.len() {
            return Err(MacError::BatchLength {
                inputs: inputs.len(),
                outputs: tags.len(),
            });
        }
        for (input, tag) in inputs.iter().zip(tags.iter_mut()) {
            *tag = self.compute(input.nonce, input.message)?;
        }
        Ok(())
    }

    /// Verifies many messages: `ok[i]` is whether `tags[i]` authenticates
    /// `inputs[i]`. Each comparison is constant-time.
    ///
    /// # Errors
    /// [`MacError::BatchLength`] when the slices differ in length, or the first
    /// usage error of any input. A tag that does not match is not an error, it
    /// is `false` in `ok`.
    fn verify_many(
        &self,
        inputs: &[MacInput<'_>],
        tags: &[&[u8]],
        ok: &mut [bool],
    ) -> Result<(), MacError> {
        if inputs.len() != tags.len() || inputs.len() != ok.len() {
            return Err(MacError::BatchLength {
                inputs: inputs.len(),
                outputs: tags.len().min(ok.len()),
            });
        }
        // In chunks on the stack: no allocation per batch.
        const CHUNK: usize = 16;
        let mut computed = [Tag::EMPTY; CHUNK];
        for ((inputs, tags), ok) in inputs
            .chunks(CHUNK)
            .zip(tags.chunks(CHUNK))
            .zip(ok.chunks_mut(CHUNK))
        {
            let computed = &mut computed[..inputs.len()];
            self.compute_many(inputs, computed)?;
            for ((want, got), slot) in tags.iter().zip(computed.iter()).zip(ok.iter_mut()) {
                *slot = want.len() == got.len() && got.ct_matches(want);
            }
        }
        Ok(())
    }
}

/// Checks the nonce rules of an algorithm that takes no nonce or one of `len` bytes.
pub(crate) fn check_nonce(name: &str, len: usize, nonce: &[u8]) -> Result<(), MacError> {
    match (len, nonce.len()) {
        (0, 0) => Ok(()),
        (0, _) => Err(MacError::NonceNotAccepted {
            algorithm: name.to_owned(),
        }),
        (n, 0) => Err(MacError::NonceRequired {
            algorithm: name.to_owned(),
            len: n,
        }),
        (n, got) if got != n => Err(MacError::NonceLength {
            algorithm: name.to_owned(),
            got,
            expected: n,
        }),
        _ => Ok(()),
    }
}

/// Checks a key length against an algorithm's rule.
pub(crate) fn check_key(name: &str, rule: KeyLength, key: &[u8]) -> Result<(), MacError> {
    if rule.accepts(key.len()) {
        Ok(())
    } else {
        Err(MacError::KeyLength {
            algorithm: name.to_owned(),
            got: key.len(),
            expected: rule,
        })
    }
}

impl Algorithm {
    /// Sets up this algorithm with `key`.
    ///
    /// # Errors
    /// [`MacError::KeyLength`] when the key length is not one the algorithm accepts.
    pub fn new_mac(self, key: &[u8]) -> Result<Box<dyn Mac>, MacError> {
        self.new_mac_with_isa(key, Isa::current())
    }

    /// As [`Algorithm::new_mac`], with the kernels restricted to `isa` (tests
    /// and the lab use this to force the portable paths).
    ///
    /// # Errors
    /// [`MacError::KeyLength`] when the key length is not one the algorithm accepts.
    pub fn new_mac_with_isa(self, key: &[u8], isa: Isa) -> Result<Box<dyn Mac>, MacError> {
        let info = self.info();
        check_key(info.name, info.key, key)?;
        Ok(match self {
            Self::Md5Legacy | Self::Sha1Legacy => {
                Box::new(crate::legacy::LegacyDigest::new(self, key, isa))
            }
            Self::HmacMd5
            | Self::HmacSha1
            | Self::HmacSha224
            | Self::HmacSha256
            | Self::HmacSha224_128
            | Self::HmacSha256_128 => Box::new(crate::hmac_family::HmacMac::new(self, key, isa)),
            Self::Aes128Cmac | Self::Aes256Cmac => {
                Box::new(crate::cmac_aes::AesCmac::new(self, key, isa)?)
            }
            Self::Aes128Gmac => Box::new(crate::gmac::Aes128Gmac::new(key, isa)?),
            Self::Poly1305ChaCha20 => Box::new(
                crate::poly1305_chacha::Poly1305ChaCha20::new_with_isa(key, isa)?,
            ),
            Self::Blake3Keyed => Box::new(crate::blake3_keyed::Blake3Keyed::new(key)?),
            Self::SipHash24 => Box::new(crate::siphash::SipHash24::new(key)?),
        })
    }
}

/// Sets up the algorithm named `name` with `key`. Besides the base names of
/// [`Algorithm`], this accepts partial MACs written `partial:<inner>:<rate>`
/// (see [`crate::PartialMac`]).
///
/// # Errors
/// [`MacError::UnknownAlgorithm`], [`MacError::KeyLength`], or
/// [`MacError::InvalidParameter`] for a malformed partial-MAC name.
pub fn new_mac(name: &str, key: &[u8]) -> Result<Box<dyn Mac>, MacError> {
    if let Some(spec) = crate::partial::PartialSpec::parse(name)? {
        return Ok(Box::new(crate::PartialMac::new(spec, key)?));
    }
    Algorithm::from_name(name)?.new_mac(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonce_rules() {
        assert!(check_nonce("x", 0, &[]).is_ok());
        assert!(matches!(
            check_nonce("x", 0, &[1]),
            Err(MacError::NonceNotAccepted { .. })
        ));
        assert!(matches!(
            check_nonce("x", 12, &[]),
            Err(MacError::NonceRequired { len: 12, .. })
        ));
        assert!(matches!(
            check_nonce("x", 12, &[0; 11]),
            Err(MacError::NonceLength {
                got: 11,
                expected: 12,
                ..
            })
        ));
        assert!(check_nonce("x", 12, &[0; 12]).is_ok());
    }

    #[test]
    fn every_algorithm_builds_with_its_typical_key_and_rejects_a_bad_one() {
        for alg in Algorithm::ALL {
            let info = alg.info();
            let key = vec![0x42; info.key.typical()];
            let mac = alg.new_mac(&key).expect("typical key accepted");
            assert_eq!(mac.name(), info.name);
            assert_eq!(mac.tag_len(), info.tag_len);
            assert_eq!(mac.nonce_len(), info.nonce_len);
            let nonce = vec![7; info.nonce_len];
            let tag = mac.compute(&nonce, b"hello").expect("tag");
            assert_eq!(tag.len(), info.tag_len);
            assert_eq!(mac.verify(&nonce, b"hello", tag.as_bytes()), Ok(()));
            assert_eq!(
                mac.verify(&nonce, b"hellO", tag.as_bytes()),
                Err(MacError::BadTag)
            );
            let mut flipped = tag;
            let mut bytes = flipped.as_bytes().to_vec();
            bytes[0] ^= 1;
            flipped = Tag::from_slice(&bytes);
            assert_eq!(
                mac.verify(&nonce, b"hello", flipped.as_bytes()),
                Err(MacError::BadTag)
            );
            assert!(matches!(alg.new_mac(&[]), Err(MacError::KeyLength { .. })));
            assert!(matches!(
                alg.new_mac(&vec![1; 2000]),
                Err(MacError::KeyLength { .. })
            ));
        }
    }

    #[test]
    fn batch_matches_single_and_checks_lengths() {
        for alg in Algorithm::ALL {
            let info = alg.info();
            let mac = alg.new_mac(&vec![0x11; info.key.typical()]).expect("key");
            let nonces: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; info.nonce_len]).collect();
            let msgs: Vec<Vec<u8>> = (0..5usize).map(|i| vec![i as u8; i * 37]).collect();
            let inputs: Vec<MacInput<'_>> = nonces
                .iter()
                .zip(&msgs)
                .map(|(n, m)| MacInput {
                    nonce: n,
                    message: m,
                })
                .collect();
            let mut tags = vec![Tag::EMPTY; inputs.len()];
            mac.compute_many(&inputs, &mut tags).expect("batch");
            for (input, tag) in inputs.iter().zip(&tags) {
                assert_eq!(
                    *tag,
                    mac.compute(input.nonce, input.message).expect("single")
                );
            }
            let tag_refs: Vec<&[u8]> = tags.iter().map(Tag::as_bytes).collect();
            let mut ok = vec![false; inputs.len()];
            mac.verify_many(&inputs, &tag_refs, &mut ok)
                .expect("verify batch");
            assert!(ok.iter().all(|&b| b));
            let mut short = vec![Tag::EMPTY; 2];
            assert!(matches!(
                mac.compute_many(&inputs, &mut short),
                Err(MacError::BatchLength {
                    inputs: 5,
                    outputs: 2
                })
            ));
        }
    }
}
