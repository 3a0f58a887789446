//! `authtime-sign` keys behind `authtime-tesla`'s bootstrap traits: the
//! sender signs sync responses with a `SigningKey`, the receiver checks them
//! with a `VerifyingKey`. Every TESLA transport (multicast, DTLS, NTP
//! broadcast) and the command line use these two adapters.

use authtime_sign::{SigningKey, VerifyingKey};
use authtime_tesla::{BootstrapSigner, BootstrapVerifier, SignError};

/// A sender's secret key signing sync responses; the scheme id on the wire is
/// `Scheme::id`. An LMS key loaded from its file saves its advanced state
/// before each signature is returned.
pub struct SchemeSigner(pub SigningKey);

impl BootstrapSigner for SchemeSigner {
    fn scheme_id(&self) -> u16 {
        self.0.scheme().id()
    }

    fn sign(&mut self, msg: &[u8]) -> Result<Vec<u8>, SignError> {
        self.0.sign(msg).map_err(|e| SignError(e.to_string()))
    }
}

/// A receiver's trusted copy of the sender's public key.
pub struct SchemeVerifier(pub VerifyingKey);

impl BootstrapVerifier for SchemeVerifier {
    fn scheme_id(&self) -> u16 {
        self.0.scheme().id()
    }

    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        self.0.is_valid(msg, sig)
    }
}

#[cfg(test)]
mod tests {
    use authtime_sign::Scheme;

    use super::*;

    #[test]
    fn signatures_made_through_the_traits_verify_and_a_flipped_bit_fails() {
        for scheme in [Scheme::Ed25519, Scheme::EcdsaP256, Scheme::MlDsa44] {
            let key = SigningKey::generate_from_seed(scheme, [7; 32]);
            let verifier = SchemeVerifier(key.verifying_key());
            let mut signer = SchemeSigner(key);
            assert_eq!(signer.scheme_id(), verifier.scheme_id());
            let mut sig = signer.sign(b"sync response").expect("sign");
            assert!(verifier.verify(b"sync response", &sig), "{scheme}");
            sig[0] ^= 1;
            assert!(!verifier.verify(b"sync response", &sig), "{scheme}");
            sig[0] ^= 1;
            sig[3] ^= 0x10;
            assert!(!verifier.verify(b"sync response", &sig), "{scheme}");
            assert!(!verifier.verify(b"sync response", &[]), "{scheme}");
        }
    }
}
