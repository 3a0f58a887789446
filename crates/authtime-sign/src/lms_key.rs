//! The stateful LMS signer (RFC 8554, LMS_SHA256_M32_H10 with LMOTS_SHA256_N32_W4, through the
//! RustCrypto `lms-signature` crate) and the rule that keeps it safe: the next leaf index q is
//! written to disk *before* a signature leaves this module, so a crash can skip an index but
//! never use one twice.
//!
//! Written here, not in the crate: the persistence, the file lock, and the derivation of the
//! LM-OTS randomizer C from the secret seed and q (so that signing needs no RNG; C stays
//! unpredictable to anyone without the seed, and q is never reused).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use chacha20::ChaCha20Rng;
use lms_signature::lms::{
    LmsSha256M32H10, SigningKey as LmsSigningKey, VerifyingKey as LmsVerifyingKey,
};
use lms_signature::ots::LmsOtsSha256N32W4;
use rand_core::{CryptoRng, SeedableRng};
use sha2::{Digest, Sha256};
use signature::RandomizedSignerMut;
use zeroize::Zeroizing;

use crate::Scheme;
use crate::atomic_write::{FileMode, write_file_atomically};
use crate::error::{KeyDecodeError, KeyFileError, SignError};
use crate::key_file::{KeyKind, encode_key_file};

/// The LMS parameter set (RFC 8554 §5.1 type 6 with LM-OTS type 3).
pub(crate) type LmsMode = LmsSha256M32H10<LmsOtsSha256N32W4>;

/// Number of one-time keys, 2^10.
pub(crate) const LMS_LEAVES: u64 = 1 << 10;

const LMS_TYPE: u32 = 6;
const LMOTS_TYPE: u32 = 3;
const ID_LEN: usize = 16;
const SEED_LEN: usize = 32;
/// u32 lms type || u32 ots type || u32 q || I || SEED.
const STATE_LEN: usize = 12 + ID_LEN + SEED_LEN;

/// Domain separation for the derived randomizer C.
const RANDOMIZER_LABEL: &[u8] = b"authtime-sign lms randomizer v1";

/// Where a file-backed key persists its state, and the lock that makes it the only signer.
struct Persistence {
    path: PathBuf,
    /// Held (flock on `<path>.lock`) for as long as the key lives.
    _lock: File,
}

/// An LMS signing key with its index; never `Clone` (a copy could reuse an index).
pub(crate) struct LmsKey {
    key: LmsSigningKey<LmsMode>,
    id: [u8; ID_LEN],
    seed: Zeroizing<[u8; SEED_LEN]>,
    persistence: Option<Persistence>,
}

impl LmsKey {
    /// Generates a key with a random identifier I and seed (RFC 8554 Appendix A).
    pub(crate) fn generate<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let mut id = [0u8; ID_LEN];
        let mut seed = Zeroizing::new([0u8; SEED_LEN]);
        rng.fill_bytes(&mut id);
        rng.fill_bytes(seed.as_mut());
        Self::from_parts(id, seed, 0)
    }

    fn from_parts(id: [u8; ID_LEN], seed: Zeroizing<[u8; SEED_LEN]>, q: u32) -> Self {
        let state = encode_state(&id, &seed, q);
        // The state has the length and type codes the crate expects, so this never fails;
        // the crate rebuilds the whole Merkle tree here (the key generation cost).
        let key = match LmsSigningKey::<LmsMode>::try_from(state.as_slice()) {
            Ok(key) => key,
            Err(_) => unreachable!("encode_state writes the crate's own format"),
        };
        Self {
            key,
            id,
            seed,
            persistence: None,
        }
    }

    /// Decodes `u32 type || u32 otstype || u32 q || I || SEED`, rejecting q beyond 2^10.
    pub(crate) fn from_state_bytes(bytes: &[u8]) -> Result<Self, KeyDecodeError> {
        if bytes.len() != STATE_LEN {
            return Err(KeyDecodeError::WrongLength {
                expected: STATE_LEN,
                actual: bytes.len(),
            });
        }
        let word = |at: usize| {
            bytes
                .get(at..at + 4)
                .and_then(|w| <[u8; 4]>::try_from(w).ok())
                .map(u32::from_be_bytes)
        };
        if word(0) != Some(LMS_TYPE) || word(4) != Some(LMOTS_TYPE) {
            return Err(KeyDecodeError::Invalid);
        }
        let q = word(8).ok_or(KeyDecodeError::Invalid)?;
        if u64::from(q) > LMS_LEAVES {
            return Err(KeyDecodeError::Invalid);
        }
        let id: [u8; ID_LEN] = bytes
            .get(12..12 + ID_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(KeyDecodeError::Invalid)?;
        let mut seed = Zeroizing::new([0u8; SEED_LEN]);
        seed.copy_from_slice(bytes.get(12 + ID_LEN..).ok_or(KeyDecodeError::Invalid)?);
        Ok(Self::from_parts(id, seed, q))
    }

    /// The current state (next index q). Anyone holding these bytes can sign at q: treat
    /// them as the key itself and never restore an old copy.
    pub(crate) fn state_bytes(&self) -> Zeroizing<Vec<u8>> {
        encode_state(&self.id, &self.seed, self.key.q())
    }

    /// The next leaf index to be used.
    pub(crate) fn next_index(&self) -> u32 {
        self.key.q()
    }

    /// Signatures left before the key is exhausted.
    pub(crate) fn remaining(&self) -> u64 {
        LMS_LEAVES.saturating_sub(u64::from(self.key.q()))
    }

    pub(crate) fn verifying_key(&self) -> LmsVerifyingKey<LmsMode> {
        self.key.public()
    }

    /// Binds the key to `path`: takes the lock, writes the current state, and from then on
    /// every signature first persists the advanced state there.
    pub(crate) fn bind_to_file(&mut self, path: &Path) -> Result<(), KeyFileError> {
        let lock = lock_key_file(path)?;
        let text = encode_key_file(KeyKind::Secret, Scheme::Lms, &self.state_bytes());
        write_file_atomically(path, text.as_bytes(), FileMode::Secret).map_err(|source| {
            KeyFileError::Io {
                path: path.to_owned(),
                source,
            }
        })?;
        self.persistence = Some(Persistence {
            path: path.to_owned(),
            _lock: lock,
        });
        Ok(())
    }

    /// Marks a key just loaded from `path` as backed by it (the caller already holds `lock`).
    pub(crate) fn attach_file(&mut self, path: &Path, lock: File) {
        self.persistence = Some(Persistence {
            path: path.to_owned(),
            _lock: lock,
        });
    }

    /// (1) claims index q, (2) persists q + 1 if file-backed, (3) only then signs.
    pub(crate) fn sign(&mut self, msg: &[u8]) -> Result<Vec<u8>, SignError> {
        let q = self.key.q();
        if u64::from(q) >= LMS_LEAVES {
            return Err(SignError::KeyExhausted {
                max_signatures: LMS_LEAVES,
            });
        }
        if let Some(persistence) = &self.persistence {
            let next = encode_state(&self.id, &self.seed, q + 1);
            let text = encode_key_file(KeyKind::Secret, Scheme::Lms, &next);
            // On failure nothing was signed at q, so a retry may use q safely.
            write_file_atomically(&persistence.path, text.as_bytes(), FileMode::Secret)
                .map_err(SignError::StatePersist)?;
        }
        let mut randomizer = self.randomizer_rng(q);
        let signature = self
            .key
            .try_sign_with_rng(&mut randomizer, msg)
            .map_err(|_| SignError::Backend(Scheme::Lms))?;
        Ok(signature.into())
    }

    /// C = first 32 bytes of ChaCha20(SHA-256(label || I || q || SEED)).
    fn randomizer_rng(&self, q: u32) -> ChaCha20Rng {
        let mut digest = Sha256::new();
        digest.update(RANDOMIZER_LABEL);
        digest.update(self.id);
        digest.update(q.to_be_bytes());
        digest.update(self.seed.as_slice());
        let mut rng_seed = Zeroizing::new([0u8; 32]);
        rng_seed.copy_from_slice(&digest.finalize());
        ChaCha20Rng::from_seed(*rng_seed)
    }
}

fn encode_state(id: &[u8; ID_LEN], seed: &[u8; SEED_LEN], q: u32) -> Zeroizing<Vec<u8>> {
    let mut state = Zeroizing::new(Vec::with_capacity(STATE_LEN));
    state.extend_from_slice(&LMS_TYPE.to_be_bytes());
    state.extend_from_slice(&LMOTS_TYPE.to_be_bytes());
    state.extend_from_slice(&q.to_be_bytes());
    state.extend_from_slice(id);
    state.extend_from_slice(seed);
    state
}

/// Takes an exclusive lock on `<path>.lock` (the key file itself is replaced on every
/// signature, so its inode cannot carry the lock).
pub(crate) fn lock_key_file(path: &Path) -> Result<File, KeyFileError> {
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock_path = PathBuf::from(lock_name);
    let io_error = |source| KeyFileError::Io {
        path: lock_path.clone(),
        source,
    };
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_error)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(KeyFileError::Locked(path.to_owned())),
        Err(std::fs::TryLockError::Error(source)) => Err(io_error(source)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_key() -> LmsKey {
        let mut rng = ChaCha20Rng::from_seed([7; 32]);
        LmsKey::generate(&mut rng)
    }

    #[test]
    fn state_matches_the_crate_encoding() {
        let key = test_key();
        let ours = key.state_bytes();
        // The crate exposes its private key encoding only as a typenum-sized array.
        let theirs: hybrid_array::Array<u8, hybrid_array::typenum::U60> = key.key.into();
        assert_eq!(ours.as_slice(), theirs.as_slice());
    }

    #[test]
    fn in_memory_key_never_signs_twice_at_one_index() {
        let mut key = test_key();
        let first = key.sign(b"one").expect("sign");
        let second = key.sign(b"two").expect("sign");
        assert_eq!(&first[..4], &0u32.to_be_bytes());
        assert_eq!(&second[..4], &1u32.to_be_bytes());
        assert_eq!(key.next_index(), 2);
    }

    #[test]
    fn exhausted_key_refuses_to_sign() {
        let key = test_key();
        let mut state = key.state_bytes();
        state[8..12].copy_from_slice(&1024u32.to_be_bytes());
        let mut exhausted =
            LmsKey::from_state_bytes(&state).expect("q = 2^10 is a valid, spent key");
        assert_eq!(exhausted.remaining(), 0);
        assert!(matches!(
            exhausted.sign(b"m"),
            Err(SignError::KeyExhausted {
                max_signatures: 1024
            })
        ));
        state[8..12].copy_from_slice(&1025u32.to_be_bytes());
        assert!(LmsKey::from_state_bytes(&state).is_err());
    }

    #[test]
    fn malformed_state_is_rejected() {
        let key = test_key();
        let state = key.state_bytes();
        assert!(LmsKey::from_state_bytes(&state[..59]).is_err());
        let mut wrong_type = state.clone();
        wrong_type[3] = 5;
        assert!(LmsKey::from_state_bytes(&wrong_type).is_err());
        let mut wrong_ots = state.clone();
        wrong_ots[7] = 4;
        assert!(LmsKey::from_state_bytes(&wrong_ots).is_err());
    }
}
