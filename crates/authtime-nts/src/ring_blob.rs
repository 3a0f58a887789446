//! The serialized key ring: the blob the master-key store keeps (a file,
//! Redis or memcached), shared by every server of a fleet.
//!
//! Layout, all integers big-endian:
//!
//! ```text
//! magic "ATNK" | version u8 (1) | 3 zero bytes
//! interval_secs u64 | old_keys u32 | generation u64 | key_count u32
//! key_count × ( id u32 | period u64 | aead_id u16 | key_len u16 | key )
//! SHA-256 of everything before it (32 bytes)
//! ```
//!
//! The checksum detects torn writes and corruption, not forgery: whoever can
//! write the store can replace the keys anyway. Decoding is strict: exact
//! length, known version, zero reserved bytes, valid policy, keys of a
//! master AEAD (AES-SIV-CMAC-256 or -512; releases before 2026-11-27 accept
//! only -512, see `docs/nts.md`) in strictly increasing period order with `id` = low 32 bits of
//! `period`.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::aead::{AeadAlgorithm, AeadKey};
use crate::key_ring::{KeyRing, MASTER_KEY_ALGORITHMS, MasterKey, RingError, RotationPolicy};

const MAGIC: [u8; 4] = *b"ATNK";
const VERSION: u8 = 1;
const FIXED_LEN: usize = 4 + 4 + 8 + 4 + 8 + 4;
const KEY_HEADER_LEN: usize = 4 + 8 + 2 + 2;
const CHECKSUM_LEN: usize = 32;

pub(crate) fn encode(ring: &KeyRing) -> Zeroizing<Vec<u8>> {
    let keys_len: usize = ring
        .keys
        .iter()
        .map(|k| KEY_HEADER_LEN + k.key.secret_bytes().len())
        .sum();
    let mut out = Zeroizing::new(Vec::with_capacity(FIXED_LEN + keys_len + CHECKSUM_LEN));
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&[VERSION, 0, 0, 0]);
    out.extend_from_slice(&ring.policy.interval_secs.to_be_bytes());
    out.extend_from_slice(&ring.policy.old_keys.to_be_bytes());
    out.extend_from_slice(&ring.generation.to_be_bytes());
    let count = u32::try_from(ring.keys.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_be_bytes());
    for k in &ring.keys {
        let secret = k.key.secret_bytes();
        out.extend_from_slice(&k.id.to_be_bytes());
        out.extend_from_slice(&k.period.to_be_bytes());
        out.extend_from_slice(&k.key.algorithm().id().to_be_bytes());
        out.extend_from_slice(&u16::try_from(secret.len()).unwrap_or(0).to_be_bytes());
        out.extend_from_slice(secret);
    }
    let checksum = Sha256::digest(out.as_slice());
    out.extend_from_slice(checksum.as_slice());
    out
}

/// A cursor that reports truncation instead of panicking.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], RingError> {
        if self.rest.len() < n {
            return Err(RingError::Truncated);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RingError> {
        self.take(N)?.try_into().map_err(|_| RingError::Truncated)
    }

    fn u16(&mut self) -> Result<u16, RingError> {
        self.array().map(u16::from_be_bytes)
    }

    fn u32(&mut self) -> Result<u32, RingError> {
        self.array().map(u32::from_be_bytes)
    }

    fn u64(&mut self) -> Result<u64, RingError> {
        self.array().map(u64::from_be_bytes)
    }
}

pub(crate) fn decode(blob: &[u8]) -> Result<KeyRing, RingError> {
    if blob.len() < 4 {
        return Err(RingError::Truncated);
    }
    if blob.get(..4) != Some(&MAGIC[..]) {
        return Err(RingError::BadMagic);
    }
    let Some(body_len) = blob.len().checked_sub(CHECKSUM_LEN) else {
        return Err(RingError::Truncated);
    };
    let (body, checksum) = blob.split_at(body_len);
    let mut c = Cursor { rest: body };
    c.take(4)?;
    let [version, r1, r2, r3] = c.array::<4>()?;
    if version != VERSION {
        return Err(RingError::UnsupportedVersion(version));
    }
    // The checksum first: a torn blob usually fails here, whatever it claims.
    let expected = Sha256::digest(body);
    if !bool::from(expected.as_slice().ct_eq(checksum)) {
        return Err(RingError::ChecksumMismatch);
    }
    if [r1, r2, r3] != [0, 0, 0] {
        return Err(RingError::UnsupportedVersion(version));
    }
    let policy = RotationPolicy {
        interval_secs: c.u64()?,
        old_keys: c.u32()?,
    };
    if !policy.is_valid() {
        return Err(RingError::InvalidPolicy);
    }
    let generation = c.u64()?;
    let count = c.u32()?;
    if usize::try_from(count).map_or(true, |n| n > KeyRing::MAX_KEYS) {
        return Err(RingError::TooManyKeys(count));
    }
    let mut keys: Vec<MasterKey> = Vec::new();
    for _ in 0..count {
        let id = c.u32()?;
        let period = c.u64()?;
        let algorithm = AeadAlgorithm::from_id(c.u16()?).ok_or(RingError::InvalidKey)?;
        if !MASTER_KEY_ALGORITHMS.contains(&algorithm) {
            return Err(RingError::InvalidKey);
        }
        let key_len = usize::from(c.u16()?);
        let key = AeadKey::new(algorithm, c.take(key_len)?)
            .map_err(|_| RingError::InvalidKey)?
            .expanded();
        #[allow(clippy::cast_possible_truncation)]
        let id_matches = id == period as u32;
        let ordered = keys.last().is_none_or(|prev| prev.period < period);
        if !id_matches || !ordered {
            return Err(RingError::InconsistentKeys);
        }
        keys.push(MasterKey { id, period, key });
    }
    if !c.rest.is_empty() {
        return Err(RingError::TrailingBytes);
    }
    Ok(KeyRing {
        policy,
        generation,
        keys,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> KeyRing {
        let mut state = 7u8;
        let mut rng = |b: &mut [u8]| {
            for x in b {
                state = state.wrapping_mul(31).wrapping_add(11);
                *x = state;
            }
        };
        let policy = RotationPolicy {
            interval_secs: 3600,
            old_keys: 3,
        };
        let mut ring = KeyRing::new(policy);
        for hour in 0..6u64 {
            if let Some(next) = ring.plan(1_700_000_000 + hour * 3600, &mut rng) {
                ring = next;
            }
        }
        ring
    }

    #[test]
    fn round_trip() {
        let ring = ring();
        let blob = ring.to_bytes();
        let back = KeyRing::from_bytes(&blob).expect("decode");
        assert_eq!(back.policy(), ring.policy());
        assert_eq!(back.generation(), ring.generation());
        assert_eq!(back.keys().len(), ring.keys().len());
        for (a, b) in back.keys().iter().zip(ring.keys()) {
            assert_eq!((a.id(), a.period()), (b.id(), b.period()));
            assert_eq!(a.key().secret_bytes(), b.key().secret_bytes());
        }
        assert_eq!(&*back.to_bytes(), &*blob);
        assert_eq!(
            blob.len(),
            FIXED_LEN + 5 * (KEY_HEADER_LEN + 32) + CHECKSUM_LEN
        );
    }

    #[test]
    fn every_truncation_is_refused() {
        let blob = ring().to_bytes();
        for len in 0..blob.len() {
            assert!(
                KeyRing::from_bytes(&blob[..len]).is_err(),
                "accepted {len} bytes"
            );
        }
        let mut longer = blob.to_vec();
        longer.push(0);
        assert!(KeyRing::from_bytes(&longer).is_err());
    }

    #[test]
    fn every_flipped_bit_is_refused() {
        let blob = ring().to_bytes();
        for i in 0..blob.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = blob.to_vec();
                bad[i] ^= bit;
                assert!(KeyRing::from_bytes(&bad).is_err(), "accepted flip at {i}");
            }
        }
    }

    /// A blob whose checksum is right but whose content is not (a writer
    /// bug, not corruption) is refused too.
    #[test]
    fn consistent_checksum_over_bad_content_is_refused() {
        let reseal = |mut body: Vec<u8>| {
            body.truncate(body.len() - CHECKSUM_LEN);
            let sum = Sha256::digest(&body);
            body.extend_from_slice(&sum);
            body
        };
        let blob = ring().to_bytes().to_vec();
        let mut zero_interval = blob.clone();
        zero_interval[8..16].copy_from_slice(&0u64.to_be_bytes());
        assert_eq!(
            KeyRing::from_bytes(&reseal(zero_interval)).map(|_| ()),
            Err(RingError::InvalidPolicy)
        );
        let mut bad_id = blob.clone();
        bad_id[FIXED_LEN] ^= 1;
        assert_eq!(
            KeyRing::from_bytes(&reseal(bad_id)).map(|_| ()),
            Err(RingError::InconsistentKeys)
        );
        // AES-128-GCM-SIV is not a master AEAD; AES-SIV-CMAC-512 needs 64 bytes.
        for alg in [30u16, 17] {
            let mut bad_alg = blob.clone();
            bad_alg[FIXED_LEN + 12..FIXED_LEN + 14].copy_from_slice(&alg.to_be_bytes());
            assert_eq!(
                KeyRing::from_bytes(&reseal(bad_alg)).map(|_| ()),
                Err(RingError::InvalidKey)
            );
        }
        let mut huge = blob;
        huge[28..32].copy_from_slice(&5000u32.to_be_bytes());
        assert_eq!(
            KeyRing::from_bytes(&reseal(huge)).map(|_| ()),
            Err(RingError::TooManyKeys(5000))
        );
        assert_eq!(
            KeyRing::from_bytes(b"NOPE....").map(|_| ()),
            Err(RingError::BadMagic)
        );
    }

    /// A ring blob and a cookie sealed under it by the release before
    /// AES-SIV-CMAC-256 master keys (commit b027ccf, AES-SIV-CMAC-512 keys,
    /// captured with a fixed RNG at 1_790_000_000): this release reads the
    /// blob, opens the cookie, and writes the blob back byte for byte, so a
    /// fleet that mixes the two releases shares one ring.
    #[test]
    fn a_ring_and_cookie_of_the_previous_release_still_work() {
        let hex = |s: &str| {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
                .collect::<Vec<u8>>()
        };
        let blob = hex(
            "41544e4b01000000000000000001518000000007000000000000000100000002\
             000050ed00000000000050ed00110040c64f14afd84b9a2e620777ca7d4bfaeb\
             6da1a0cb53281510938c23a5d3d938ed5a85309a082dd6dee34e92aba610c56f\
             e7a5a7ef55a7685ab28070c91162d3e2000050ee00000000000050ee00110040\
             4aae9dfc442c801db11bedd1c711d0f2c923f986a0c13b8efd601287f091a864\
             69ab8edf2a9408bcff0552a64bb8f51291474c1c5cc3b5a17ca0ea6b3d45908b\
             122f97ea2c06f55ace5a81939e34353e9d59c53763de4ad8638d758379258635",
        );
        let cookie = hex(
            "000050ed2dff701251bd2d3f66b18f212d2f18d083e05c80cc1d792dd687e907\
             fde664afa8983e3bea376a6a75002fec435c3354d40c720ded16e313d7855803\
             0d9c6355406b6212c95690b41d0a5711b013bd711d38c46642c5c814840b8382\
             1b4f36e33eb2cf22",
        );
        let now = 1_790_000_000;
        let ring = KeyRing::from_bytes(&blob).expect("previous release's ring");
        assert!(
            ring.keys()
                .iter()
                .all(|k| k.algorithm() == crate::AeadAlgorithm::AesSivCmac512)
        );
        assert_eq!(&*ring.to_bytes(), &blob[..]);
        let keys = crate::open_cookie(&ring, now, &cookie).expect("previous release's cookie");
        assert_eq!(keys.c2s().secret_bytes(), &[0x11; 32]);
        assert_eq!(keys.s2c().secret_bytes(), &[0x22; 32]);
        // Planned on, the ring keeps the AEAD its servers all read.
        let later = ring.plan(now + 3 * 86_400, &mut |b: &mut [u8]| b.fill(7));
        let later = later.expect("rotated");
        assert!(
            later
                .keys()
                .iter()
                .all(|k| k.algorithm() == crate::AeadAlgorithm::AesSivCmac512)
        );
    }

    #[test]
    fn empty_ring_round_trips() {
        let ring = KeyRing::new(RotationPolicy::default());
        let back = KeyRing::from_bytes(&ring.to_bytes()).expect("decode");
        assert!(back.keys().is_empty());
    }
}
