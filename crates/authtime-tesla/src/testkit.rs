//! Helpers for the unit tests: signers, a seeded generator, a bootstrapped pair.

use ed25519_dalek::{Signer as _, SigningKey, Verifier as _, VerifyingKey};

use crate::bootstrap::{BootstrapSigner, BootstrapVerifier, SignError, SyncClient};
use crate::params::Params;
use crate::receiver::{Receiver, ReceiverConfig};
use crate::sender::Sender;
use crate::time::Time;

/// Ed25519 through the bootstrap traits (scheme id 1 in these tests).
pub(crate) struct Ed25519Signer(pub(crate) SigningKey);

impl BootstrapSigner for Ed25519Signer {
    fn scheme_id(&self) -> u16 {
        1
    }
    fn sign(&mut self, msg: &[u8]) -> Result<Vec<u8>, SignError> {
        Ok(self.0.sign(msg).to_bytes().to_vec())
    }
}

pub(crate) struct Ed25519Verifier(pub(crate) VerifyingKey);

impl BootstrapVerifier for Ed25519Verifier {
    fn scheme_id(&self) -> u16 {
        1
    }
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        ed25519_dalek::Signature::from_slice(sig).is_ok_and(|s| self.0.verify(msg, &s).is_ok())
    }
}

pub(crate) fn ed25519_pair(seed: u8) -> (Ed25519Signer, Ed25519Verifier) {
    let sk = SigningKey::from_bytes(&[seed; 32]);
    let vk = sk.verifying_key();
    (Ed25519Signer(sk), Ed25519Verifier(vk))
}

pub(crate) const MS: u64 = 1_000_000;

/// 100 ms intervals from T_0 = 1000 s, d = 2, N = 16, lead 4, HMAC-SHA-256/16.
pub(crate) fn params() -> Params {
    Params {
        t0: Time::from_secs(1000),
        interval_ns: 100 * MS,
        disclosure_delay: 2,
        chain_len: 16,
        mac: authtime_mac::Algorithm::HmacSha256,
        tag_len: 16,
        rollover_lead: 4,
    }
}

/// A sender and a receiver bootstrapped at sender time `now` with a round trip
/// of `rtt` (the receiver's clock equals the sender's).
pub(crate) fn pair(p: Params, now: Time, rtt: u64, config: ReceiverConfig) -> (Sender, Receiver) {
    let mut tx = Sender::new(p, [42; 32], now).expect("sender");
    let (mut signer, verifier) = ed25519_pair(5);
    let sent = Time(now.0 - rtt);
    let (mut client, request) = SyncClient::new(&[9; 16], sent, config).expect("client");
    let fragments = tx
        .sync_response(&request, now, &mut signer)
        .expect("response");
    let mut rx = None;
    for f in &fragments {
        if let Some(r) = client.handle(f, now, &verifier).expect("bootstrap") {
            rx = Some(r);
        }
    }
    (tx, rx.expect("complete"))
}
