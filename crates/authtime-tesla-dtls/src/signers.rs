//! `authtime-sign` keys behind `authtime-tesla`'s bootstrap traits (the same
//! twenty lines the command line has in `authtime::tesla_signatures`, kept here
//! so that this crate does not depend on the binary crate).

use authtime_sign::{SigningKey, VerifyingKey};
use authtime_tesla::{BootstrapSigner, BootstrapVerifier, SignError};

/// A sender's secret key signing sync responses; the scheme id on the wire is
/// `Scheme::id`.
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
    fn adapter_signatures_verify_and_a_flipped_bit_fails() {
        let key = SigningKey::generate_from_seed(Scheme::Ed25519, [3; 32]);
        let verifier = SchemeVerifier(key.verifying_key());
        let mut signer = SchemeSigner(key);
        assert_eq!(signer.scheme_id(), verifier.scheme_id());
        let mut sig = signer.sign(b"m").expect("sign");
        assert!(verifier.verify(b"m", &sig));
        sig[3] ^= 0x10;
        assert!(!verifier.verify(b"m", &sig));
    }
}
