//! Cookie master keys that rotate by time period (RFC 8915 section 6: "the
//! server should periodically ... generate a new K, keep old ones for a while").
//!
//! Time is cut into periods of `interval_secs` seconds since the Unix epoch.
//! At period `p` the ring holds the keys of periods `p - old_keys ..= p + 1`:
//! new cookies are sealed under the key of `p`; cookies sealed under the
//! `old_keys` previous keys are still accepted; and the key of `p + 1` is
//! published one period ahead, so a server whose clock turns to `p + 1`
//! first can seal under it while its peers already accept it. A rotation
//! therefore never turns a cookie that is less than `old_keys` periods old
//! into an NTS NAK.
//!
//! Rotation is a pure function of the time and the ring: [`KeyRing::plan`]
//! returns the ring that should be stored, or `None` when nothing changes.
//! The daemon then compare-and-swaps its serialized form into the shared
//! store; when another server won the race, it loads and adopts that ring
//! wholesale ([`KeyRing::from_bytes`], [`KeyRing::is_newer_than`]).
//!
//! A key's id is its period number (truncated to 32 bits), so ids are unique
//! within a ring and not secret.

use core::fmt;

use crate::aead::{AeadAlgorithm, AeadKey};

/// The AEADs a master key may have. Cookies are this server's own format
/// (RFC 8915 section 6), so the choice is ours; each key carries its AEAD, so
/// a ring may mix them and every cookie opens under the AEAD it was sealed
/// with.
pub const MASTER_KEY_ALGORITHMS: [AeadAlgorithm; 2] =
    [AeadAlgorithm::AesSivCmac256, AeadAlgorithm::AesSivCmac512];

/// The AEAD of a new fleet's master keys: AES-SIV-CMAC-256 (AES-128 halves,
/// 10 rounds a block where AES-SIV-CMAC-512 takes 14). Releases before it
/// sealed every cookie with AES-SIV-CMAC-512.
pub const DEFAULT_MASTER_KEY_ALGORITHM: AeadAlgorithm = AeadAlgorithm::AesSivCmac256;

/// Which AEAD [`KeyRing::plan_with`] gives the keys it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CookieAead {
    /// The AEAD of the ring's newest key, so that a fleet keeps the AEAD
    /// every one of its servers reads; [`DEFAULT_MASTER_KEY_ALGORITHM`] for
    /// an empty ring.
    #[default]
    Auto,
    /// This AEAD (one of [`MASTER_KEY_ALGORITHMS`]; another falls back to
    /// [`CookieAead::Auto`]).
    Fixed(AeadAlgorithm),
}

impl CookieAead {
    /// The AEAD for the next key of `ring`.
    #[must_use]
    pub fn for_ring(self, ring: &KeyRing) -> AeadAlgorithm {
        match self {
            Self::Fixed(algorithm) if MASTER_KEY_ALGORITHMS.contains(&algorithm) => algorithm,
            _ => ring
                .keys
                .last()
                .map_or(DEFAULT_MASTER_KEY_ALGORITHM, |k| k.key.algorithm()),
        }
    }
}

/// How master keys rotate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RotationPolicy {
    /// Length of one period in seconds (default one day, as ntpd-rs and NTPsec).
    pub interval_secs: u64,
    /// Previous periods whose keys are still accepted (default 7, as ntpd-rs).
    pub old_keys: u32,
}

impl RotationPolicy {
    /// Longest accepted period: ten years.
    pub const MAX_INTERVAL_SECS: u64 = 10 * 366 * 86_400;
    /// Most old keys kept.
    pub const MAX_OLD_KEYS: u32 = 1000;

    /// The period that `unix_secs` falls in (0 for an interval of 0).
    #[must_use]
    pub fn period_at(&self, unix_secs: u64) -> u64 {
        unix_secs.checked_div(self.interval_secs).unwrap_or(0)
    }

    /// Whether the policy is usable: an interval of 1 s to ten years, at
    /// most [`Self::MAX_OLD_KEYS`] old keys.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        (1..=Self::MAX_INTERVAL_SECS).contains(&self.interval_secs)
            && self.old_keys <= Self::MAX_OLD_KEYS
    }
}

impl Default for RotationPolicy {
    fn default() -> Self {
        Self {
            interval_secs: 86_400,
            old_keys: 7,
        }
    }
}

/// One master key with its non-secret id and the period it belongs to
/// (RFC 8915 section 6: key `K` with identifier `I`).
#[derive(Clone, Debug)]
pub struct MasterKey {
    pub(crate) id: u32,
    pub(crate) period: u64,
    pub(crate) key: AeadKey,
}

impl MasterKey {
    /// The id carried in the first four bytes of every cookie sealed under it.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The rotation period it was made for.
    #[must_use]
    pub fn period(&self) -> u64 {
        self.period
    }

    /// The AEAD its cookies are sealed with.
    #[must_use]
    pub fn algorithm(&self) -> AeadAlgorithm {
        self.key.algorithm()
    }

    /// The AEAD key.
    pub(crate) fn key(&self) -> &AeadKey {
        &self.key
    }

    fn generate(period: u64, algorithm: AeadAlgorithm, rng: &mut impl FnMut(&mut [u8])) -> Self {
        Self {
            id: id_of_period(period),
            period,
            key: AeadKey::generate(algorithm, rng).expanded(),
        }
    }
}

/// The key id of a period: its low 32 bits.
#[must_use]
fn id_of_period(period: u64) -> u32 {
    // Truncation is the definition: with 1-second periods the ids wrap in
    // 2106, long after any old key of the same id was expired.
    #[allow(clippy::cast_possible_truncation)]
    let id = period as u32;
    id
}

/// Why a serialized ring was refused. Every variant means "keep the ring you
/// have and report": a torn or corrupt blob is never half-adopted.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingError {
    /// Shorter than its fixed parts or than the keys it announces.
    Truncated,
    /// Bytes after the checksum.
    TrailingBytes,
    /// Not a key ring (wrong magic).
    BadMagic,
    /// A format version this build does not read.
    UnsupportedVersion(u8),
    /// The checksum does not match: the blob was corrupted.
    ChecksumMismatch,
    /// Rotation policy out of range.
    InvalidPolicy,
    /// More keys than a ring may hold.
    TooManyKeys(u32),
    /// A key of an unknown or unexpected AEAD, or of the wrong length.
    InvalidKey,
    /// Keys not in strictly increasing period order, or an id that does not
    /// match its period.
    InconsistentKeys,
}

impl RingError {
    /// Short stable name for counters and logs.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Truncated => "ring_truncated",
            Self::TrailingBytes => "ring_trailing_bytes",
            Self::BadMagic => "ring_bad_magic",
            Self::UnsupportedVersion(_) => "ring_unsupported_version",
            Self::ChecksumMismatch => "ring_checksum_mismatch",
            Self::InvalidPolicy => "ring_invalid_policy",
            Self::TooManyKeys(_) => "ring_too_many_keys",
            Self::InvalidKey => "ring_invalid_key",
            Self::InconsistentKeys => "ring_inconsistent_keys",
        }
    }
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid NTS key ring: {}", self.name())
    }
}

impl core::error::Error for RingError {}

/// The master keys of a server or a fleet, oldest first.
#[derive(Clone, Debug)]
pub struct KeyRing {
    pub(crate) policy: RotationPolicy,
    pub(crate) generation: u64,
    pub(crate) keys: Vec<MasterKey>,
}

impl KeyRing {
    /// Most keys a ring holds (also bounds what [`KeyRing::from_bytes`] reads).
    pub const MAX_KEYS: usize = 1024;

    /// An empty ring; [`KeyRing::plan`] fills it.
    #[must_use]
    pub fn new(policy: RotationPolicy) -> Self {
        Self {
            policy,
            generation: 0,
            keys: Vec::new(),
        }
    }

    /// The same keys under another policy (after a configuration change);
    /// the next [`KeyRing::plan`] applies it.
    #[must_use]
    pub fn with_policy(mut self, policy: RotationPolicy) -> Self {
        if policy != self.policy {
            self.policy = policy;
            self.generation = self.generation.saturating_add(1);
        }
        self
    }

    /// The rotation policy.
    #[must_use]
    pub fn policy(&self) -> RotationPolicy {
        self.policy
    }

    /// Counts the changes since the ring was created: every planned ring is
    /// one more than the ring it came from.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The keys, oldest period first.
    #[must_use]
    pub fn keys(&self) -> &[MasterKey] {
        &self.keys
    }

    /// Whether `self` should replace `other` (a ring loaded from the store
    /// against the one in use): a later generation wins wholesale.
    #[must_use]
    pub fn is_newer_than(&self, other: &KeyRing) -> bool {
        self.generation > other.generation
    }

    /// Whether `self` (a ring loaded from the store) is an earlier state of
    /// `held`, the ring in force: an older generation none of whose keys is
    /// unknown to `held`, apart from keys `held` has already let expire. A
    /// store restored from an old snapshot, or a replica promoted before it
    /// had the last writes, hands back such a ring; adopting it would drop
    /// keys that cookies in clients' hands were sealed under. A ring that
    /// holds a key `held` lacks (another server's, made while this one could
    /// not write) is not stale: it diverged, and the store's ring wins.
    #[must_use]
    pub fn is_stale_copy_of(&self, held: &KeyRing) -> bool {
        let Some(oldest_held) = held.keys.iter().map(|k| k.period).min() else {
            return false;
        };
        self.generation < held.generation
            && self.keys.iter().all(|k| {
                k.period < oldest_held
                    || held.keys.iter().any(|h| {
                        h.id == k.id
                            && h.period == k.period
                            && h.key.algorithm() == k.key.algorithm()
                            && h.key.secret_bytes() == k.key.secret_bytes()
                    })
            })
    }

    /// The ring that should be in force at `now_unix_secs`, or `None` when
    /// this one already is: keys of periods before `p - old_keys` expired,
    /// keys of `p` and `p + 1` added (from `rng`) when missing. Keys a peer
    /// published for later periods are kept. New keys get the AEAD of
    /// [`CookieAead::Auto`].
    #[must_use]
    pub fn plan(&self, now_unix_secs: u64, rng: &mut impl FnMut(&mut [u8])) -> Option<KeyRing> {
        self.plan_with(now_unix_secs, rng, CookieAead::Auto)
    }

    /// As [`KeyRing::plan`], with new keys under the AEAD `aead` picks.
    #[must_use]
    pub fn plan_with(
        &self,
        now_unix_secs: u64,
        rng: &mut impl FnMut(&mut [u8]),
        aead: CookieAead,
    ) -> Option<KeyRing> {
        let algorithm = aead.for_ring(self);
        let p = self.policy.period_at(now_unix_secs);
        let oldest = p.saturating_sub(u64::from(self.policy.old_keys));
        let mut keys: Vec<MasterKey> = self
            .keys
            .iter()
            .filter(|k| k.period >= oldest)
            .cloned()
            .collect();
        let mut changed = keys.len() != self.keys.len();
        for period in [p, p.saturating_add(1)] {
            if !keys.iter().any(|k| k.period == period) {
                keys.push(MasterKey::generate(period, algorithm, rng));
                changed = true;
            }
        }
        if !changed {
            return None;
        }
        keys.sort_by_key(|k| k.period);
        keys.dedup_by_key(|k| k.period);
        if keys.len() > Self::MAX_KEYS {
            // Only reachable with a ring full of keys for future periods: keep
            // the oldest, which include `p` and `p + 1`.
            keys.truncate(Self::MAX_KEYS);
        }
        Some(KeyRing {
            policy: self.policy,
            generation: self.generation.saturating_add(1),
            keys,
        })
    }

    /// The key to seal new cookies under at `now_unix_secs`: the key of the
    /// current period, else the newest older one, else the oldest (a ring
    /// from a peer whose clock is ahead). `None` only for an empty ring.
    #[must_use]
    pub fn sealing_key(&self, now_unix_secs: u64) -> Option<&MasterKey> {
        let p = self.policy.period_at(now_unix_secs);
        self.keys
            .iter()
            .rev()
            .find(|k| k.period <= p)
            .or_else(|| self.keys.first())
    }

    /// The key with id `id` if cookies under it are still accepted at
    /// `now_unix_secs` (its period is at most `old_keys` periods back), even
    /// when the ring was not planned lately.
    #[must_use]
    pub fn opening_key(&self, id: u32, now_unix_secs: u64) -> Option<&MasterKey> {
        let p = self.policy.period_at(now_unix_secs);
        let oldest = p.saturating_sub(u64::from(self.policy.old_keys));
        self.keys.iter().find(|k| k.id == id && k.period >= oldest)
    }

    /// The versioned, checksummed blob for the master-key store. It holds
    /// secret keys: the buffer is zeroized when dropped.
    #[must_use]
    pub fn to_bytes(&self) -> zeroize::Zeroizing<Vec<u8>> {
        crate::ring_blob::encode(self)
    }

    /// Reads a blob written by [`KeyRing::to_bytes`], refusing anything
    /// truncated, corrupted or inconsistent.
    ///
    /// # Errors
    /// One [`RingError`] per cause.
    pub fn from_bytes(blob: &[u8]) -> Result<Self, RingError> {
        crate::ring_blob::decode(blob)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = 86_400;

    fn rng() -> impl FnMut(&mut [u8]) {
        let mut state = 0x1234_5678_u64;
        move |buf: &mut [u8]| {
            for b in buf {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *b = (state >> 33) as u8;
            }
        }
    }

    fn periods(ring: &KeyRing) -> Vec<u64> {
        ring.keys().iter().map(MasterKey::period).collect()
    }

    #[test]
    fn first_plan_creates_current_and_next_keys() {
        let now = 20_000 * DAY + 5;
        let ring = KeyRing::new(RotationPolicy::default())
            .plan(now, &mut rng())
            .expect("planned");
        assert_eq!(periods(&ring), [20_000, 20_001]);
        assert_eq!(ring.generation(), 1);
        assert_eq!(ring.sealing_key(now).map(MasterKey::id), Some(20_000));
        assert!(ring.plan(now + 100, &mut rng()).is_none());
    }

    #[test]
    fn rotation_keeps_old_keys_and_expires_beyond_the_window() {
        let policy = RotationPolicy {
            interval_secs: DAY,
            old_keys: 2,
        };
        let mut ring = KeyRing::new(policy);
        let mut r = rng();
        for day in 100..106 {
            if let Some(next) = ring.plan(day * DAY, &mut r) {
                ring = next;
            }
        }
        assert_eq!(periods(&ring), [103, 104, 105, 106]);
        let now = 105 * DAY;
        assert!(ring.opening_key(103, now).is_some());
        assert!(ring.opening_key(106, now).is_some(), "next key published");
        assert!(ring.opening_key(102, now).is_none());
        // Not planned for two more days: the window still moves with time.
        assert!(ring.opening_key(103, 107 * DAY).is_none());
        assert_eq!(ring.sealing_key(now).map(MasterKey::id), Some(105));
        assert_eq!(ring.sealing_key(200 * DAY).map(MasterKey::id), Some(106));
        assert_eq!(ring.sealing_key(0).map(MasterKey::id), Some(103));
    }

    #[test]
    fn an_older_state_of_the_ring_is_stale_and_a_diverged_one_is_not() {
        const DAY: u64 = 86_400;
        let policy = RotationPolicy {
            interval_secs: DAY,
            old_keys: 2,
        };
        let mut r = rng();
        let mut states = vec![KeyRing::new(policy)];
        for day in 100..106 {
            if let Some(next) = states.last().and_then(|ring| ring.plan(day * DAY, &mut r)) {
                states.push(next);
            }
        }
        let held = states.last().expect("a ring");
        // Every earlier state: its keys are the held ones or expired ones.
        for old in &states[1..states.len() - 1] {
            assert!(
                old.is_stale_copy_of(held),
                "generation {}",
                old.generation()
            );
        }
        assert!(
            !held.is_stale_copy_of(held),
            "the same generation is not stale"
        );
        assert!(
            !held.is_stale_copy_of(&states[2]),
            "a newer ring is not stale"
        );
        assert!(
            !states[2].is_stale_copy_of(&KeyRing::new(policy)),
            "nothing held"
        );
        // Another server's ring of the same periods (other keys), older
        // generation: diverged, not stale.
        let mut other = KeyRing::new(policy);
        for day in 104..106 {
            if let Some(next) = other.plan(day * DAY, &mut r) {
                other = next;
            }
        }
        assert!(other.generation() < held.generation());
        assert!(!other.is_stale_copy_of(held));
        // An older state that carries one key of its own for a live period.
        let mut forked = states[states.len() - 2].clone();
        if let Some(last) = forked.keys.last_mut() {
            last.key = AeadKey::generate(last.key.algorithm(), &mut r).expanded();
        }
        assert!(!forked.is_stale_copy_of(held));
    }

    #[test]
    fn plan_keeps_keys_a_peer_made_for_later_periods() {
        let mut r = rng();
        let ahead = KeyRing::new(RotationPolicy::default())
            .plan(11 * DAY, &mut r)
            .expect("plan");
        let behind = ahead.plan(10 * DAY, &mut r).expect("adds period 10");
        assert_eq!(periods(&behind), [10, 11, 12]);
        assert!(behind.plan(10 * DAY, &mut r).is_none());
    }

    #[test]
    fn newer_generation_wins() {
        let mut r = rng();
        let a = KeyRing::new(RotationPolicy::default())
            .plan(DAY, &mut r)
            .expect("plan");
        let b = a.plan(2 * DAY, &mut r).expect("plan");
        assert!(b.is_newer_than(&a));
        assert!(!a.is_newer_than(&b));
    }

    #[test]
    fn new_keys_follow_the_ring_unless_an_aead_is_fixed() {
        let mut r = rng();
        let fresh = KeyRing::new(RotationPolicy::default())
            .plan(DAY, &mut r)
            .expect("plan");
        assert!(
            fresh
                .keys()
                .iter()
                .all(|k| k.algorithm() == DEFAULT_MASTER_KEY_ALGORITHM)
        );
        let old = KeyRing::new(RotationPolicy::default())
            .plan_with(DAY, &mut r, CookieAead::Fixed(AeadAlgorithm::AesSivCmac512))
            .expect("plan");
        // Auto keeps what the fleet has; a fixed choice switches new keys only.
        let kept = old.plan(3 * DAY, &mut r).expect("plan");
        assert!(
            kept.keys()
                .iter()
                .all(|k| k.algorithm() == AeadAlgorithm::AesSivCmac512)
        );
        let switched = kept
            .plan_with(
                5 * DAY,
                &mut r,
                CookieAead::Fixed(AeadAlgorithm::AesSivCmac256),
            )
            .expect("plan");
        let algorithms: Vec<_> = switched.keys().iter().map(MasterKey::algorithm).collect();
        assert_eq!(
            algorithms,
            [
                AeadAlgorithm::AesSivCmac512,
                AeadAlgorithm::AesSivCmac512,
                AeadAlgorithm::AesSivCmac512,
                AeadAlgorithm::AesSivCmac512,
                AeadAlgorithm::AesSivCmac256,
                AeadAlgorithm::AesSivCmac256,
            ]
        );
        // A GCM-SIV master key is not offered: the choice falls back to Auto.
        let gcm = CookieAead::Fixed(AeadAlgorithm::Aes128GcmSiv).for_ring(&switched);
        assert_eq!(gcm, AeadAlgorithm::AesSivCmac256);
    }

    #[test]
    fn policy_validity_and_periods() {
        assert!(RotationPolicy::default().is_valid());
        let zero = RotationPolicy {
            interval_secs: 0,
            old_keys: 1,
        };
        assert!(!zero.is_valid());
        assert_eq!(zero.period_at(1000), 0);
        assert_eq!(RotationPolicy::default().period_at(DAY * 3 - 1), 2);
    }
}
