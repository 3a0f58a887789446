//! The online key and its certificate (draft-ietf-ntp-roughtime-19 §5.2.6):
//! the long-term key signs DELE = {PUBK, MINT, MAXT}, and the online key
//! signs every batch's SREP. Keys are inputs: where they live and when they
//! rotate is the daemon's business.
//!
//! SREP is signed with aws-lc-rs, whose Ed25519 signing takes about half
//! ed25519-dalek's time (`authtime-lab run --only roughtime` measures both);
//! Ed25519 is deterministic, so the signatures are the same bytes. Keys,
//! certificates and verification stay with ed25519-dalek.

use aws_lc_rs::signature::Ed25519KeyPair;
use ed25519_dalek::{Signer, SigningKey};

use crate::error::Error;
use crate::message;
use crate::tags::Tag;
use crate::version::Version;

/// An online signing key with its CERT, encoded once for each version
/// (the versions sign DELE with different context strings).
pub struct OnlineKey {
    signing: SigningKey,
    /// The same key in aws-lc-rs, which signs each batch's SREP.
    batch_signer: Ed25519KeyPair,
    mint: u64,
    maxt: u64,
    cert_draft: Vec<u8>,
    cert_rfc: Vec<u8>,
}

impl core::fmt::Debug for OnlineKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OnlineKey")
            .field("public", &self.signing.verifying_key())
            .field("mint", &self.mint)
            .field("maxt", &self.maxt)
            .finish_non_exhaustive()
    }
}

impl OnlineKey {
    /// Delegates to `online` for midpoints in [`mint`, `maxt`] (seconds since
    /// the Unix epoch), signed by `long_term`.
    pub fn delegate(
        long_term: &SigningKey,
        online: SigningKey,
        mint: u64,
        maxt: u64,
    ) -> Result<Self, Error> {
        if mint > maxt {
            return Err(Error::BadDelegationWindow);
        }
        let pubk = online.verifying_key().to_bytes();
        let dele = message::encode(&[
            (Tag::PUBK, &pubk),
            (Tag::MINT, &mint.to_le_bytes()),
            (Tag::MAXT, &maxt.to_le_bytes()),
        ])?;
        let cert = |version: Version| -> Result<Vec<u8>, Error> {
            let mut signed = version.contexts().delegation.to_vec();
            signed.extend_from_slice(&dele);
            let sig = long_term.sign(&signed).to_bytes();
            message::encode(&[(Tag::SIG, &sig), (Tag::DELE, &dele)])
        };
        Ok(OnlineKey {
            cert_draft: cert(Version::Draft12)?,
            cert_rfc: cert(Version::Rfc1)?,
            batch_signer: batch_signer(&online)?,
            signing: online,
            mint,
            maxt,
        })
    }

    /// An online key and the certificates made for it elsewhere (by
    /// [`OnlineKey::delegate`] on the machine that holds the long-term key):
    /// each CERT must be a DELE naming `online`'s public key, `mint` and
    /// `maxt`, signed by `long_term_public` with its version's context.
    ///
    /// # Errors
    /// A certificate that does not parse, names another key or window, or
    /// whose signature does not verify under `long_term_public`.
    pub fn from_parts(
        long_term_public: &[u8; 32],
        online: SigningKey,
        mint: u64,
        maxt: u64,
        cert_draft: Vec<u8>,
        cert_rfc: Vec<u8>,
    ) -> Result<Self, Error> {
        if mint > maxt {
            return Err(Error::BadDelegationWindow);
        }
        let pubk = online.verifying_key().to_bytes();
        for (version, cert) in [(Version::Draft12, &cert_draft), (Version::Rfc1, &cert_rfc)] {
            let parsed = message::Message::parse(cert)?;
            let dele_bytes = parsed.require(Tag::DELE)?;
            let sig = parsed.require_array::<64>(Tag::SIG)?;
            crate::verify::check_signature(
                long_term_public,
                version.contexts().delegation,
                dele_bytes,
                &sig,
            )
            .map_err(|_| Error::BadDelegationSignature)?;
            let dele = message::Message::parse(dele_bytes)?;
            if dele.require_array::<32>(Tag::PUBK)? != pubk
                || dele.require_u64(Tag::MINT)? != mint
                || dele.require_u64(Tag::MAXT)? != maxt
            {
                return Err(Error::BadDelegationSignature);
            }
        }
        Ok(OnlineKey {
            batch_signer: batch_signer(&online)?,
            signing: online,
            mint,
            maxt,
            cert_draft,
            cert_rfc,
        })
    }

    /// The online key's 32-byte Ed25519 seed (secret: for storing the key).
    pub fn seed(&self) -> [u8; 32] {
        self.signing.to_bytes()
    }

    /// The online key's public key.
    pub fn public(&self) -> [u8; 32] {
        self.signing.verifying_key().to_bytes()
    }

    /// The CERT value for `version`.
    pub fn cert(&self, version: Version) -> &[u8] {
        match version {
            Version::Draft12 => &self.cert_draft,
            Version::Rfc1 => &self.cert_rfc,
        }
    }

    /// MINT and MAXT.
    pub fn window(&self) -> (u64, u64) {
        (self.mint, self.maxt)
    }

    /// Whether a response with this midpoint would verify (MINT <= MIDP <= MAXT).
    pub fn covers(&self, midpoint: u64) -> bool {
        self.mint <= midpoint && midpoint <= self.maxt
    }

    /// The online key's signature over `srep` with `version`'s context string.
    pub fn sign_srep(&self, version: Version, srep: &[u8]) -> [u8; 64] {
        let mut signed = version.contexts().response.to_vec();
        signed.extend_from_slice(srep);
        let mut sig = [0u8; 64];
        sig.copy_from_slice(self.batch_signer.sign(&signed).as_ref());
        sig
    }
}

/// `online` as an aws-lc-rs key pair, checked to have the same public key.
fn batch_signer(online: &SigningKey) -> Result<Ed25519KeyPair, Error> {
    Ed25519KeyPair::from_seed_and_public_key(online.as_bytes(), online.verifying_key().as_bytes())
        .map_err(|_| Error::OnlineKeyRejected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    #[test]
    fn the_batch_signer_signs_as_ed25519_dalek_does() {
        let long_term = SigningKey::from_bytes(&[1; 32]);
        for seed in 0..16u8 {
            let online = SigningKey::from_bytes(&[seed.wrapping_mul(37).wrapping_add(3); 32]);
            let expected = online.clone();
            let key = OnlineKey::delegate(&long_term, online, 10, 20).unwrap();
            for len in [0usize, 1, 63, 64, 100, 156, 1000] {
                let srep = vec![seed ^ len as u8; len];
                for version in [Version::Draft12, Version::Rfc1] {
                    let mut signed = version.contexts().response.to_vec();
                    signed.extend_from_slice(&srep);
                    assert_eq!(
                        key.sign_srep(version, &srep),
                        expected.sign(&signed).to_bytes(),
                        "seed {seed} len {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn cert_holds_the_window_and_key() {
        let long_term = SigningKey::from_bytes(&[1; 32]);
        let online = SigningKey::from_bytes(&[2; 32]);
        let public = online.verifying_key().to_bytes();
        let key = OnlineKey::delegate(&long_term, online, 10, 20).unwrap();
        for v in [Version::Draft12, Version::Rfc1] {
            let cert = Message::parse(key.cert(v)).unwrap();
            let dele = Message::parse(cert.require(Tag::DELE).unwrap()).unwrap();
            assert_eq!(dele.require_array::<32>(Tag::PUBK).unwrap(), public);
            assert_eq!(dele.require_u64(Tag::MINT).unwrap(), 10);
            assert_eq!(dele.require_u64(Tag::MAXT).unwrap(), 20);
        }
        assert_ne!(key.cert(Version::Draft12), key.cert(Version::Rfc1));
        assert!(key.covers(10) && key.covers(20) && !key.covers(21));
        let online = SigningKey::from_bytes(&[2; 32]);
        assert!(OnlineKey::delegate(&long_term, online, 21, 20).is_err());
    }
}
