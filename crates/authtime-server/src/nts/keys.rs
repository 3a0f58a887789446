//! The daemon's NTS master keys: one [`KeyRing`] shared by the NTP workers
//! and the NTS-KE server, kept in step with the master-key store.
//!
//! A background thread reads the store every poll interval. The store's ring
//! is authoritative: a valid ring found there is adopted wholesale, so a
//! rotation made by any server of a fleet reaches all of them within one
//! poll. When the ring in force needs a rotation ([`KeyRing::plan`]), the
//! keeper compare-and-swaps the planned ring into the store and adopts it if
//! it won; if another server won, its ring is adopted at once. When the store
//! is unreachable the keeper keeps serving with the keys it holds (and still
//! rotates locally, so it never runs out of a current key), logs that once,
//! and publishes or adopts again when the store returns. A store that lost
//! its content (a restarted Redis without persistence, an evicted memcached
//! item) gets the ring in force written back. So does a store that can be
//! read but not written (a read-only or full disk, a Redis replica): keys
//! made meanwhile live only in memory, and are written at the first poll
//! that succeeds, not at the next rotation; until then the store counts as
//! down.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use authtime_keys::store::{
    MasterKeyStore, SealError, SealedStore, StoreError, open_store, read_kek_file, store_key_name,
};
use authtime_nts::{CookieAead, KeyRing, RotationPolicy};

use crate::config::NtsSettings;

/// Counters of the keeper, read by the metrics endpoint.
#[derive(Debug, Default)]
pub struct RingMetrics {
    /// Times the ring in force changed (local rotations and adoptions).
    pub ring_changes: AtomicU64,
    /// Rotations this server wrote to the store.
    pub rotations_published: AtomicU64,
    /// Store operations that failed (unreachable, protocol error, bad blob).
    pub store_errors: AtomicU64,
    /// Times the store held an earlier state of the ring in force (a
    /// restored snapshot, a replica promoted before it had the last writes),
    /// refused and overwritten with the ring in force.
    pub stale_rings_refused: AtomicU64,
    /// Master keys in the ring in force.
    pub keys: AtomicU64,
    /// 1 while the store cannot be read, or cannot be written and lacks
    /// keys of the ring in force.
    pub store_down: AtomicU64,
}

/// What became of a blob read from the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adoption {
    /// In force now (or already was).
    Taken,
    /// Not a valid ring: left alone, the ring in force written over it.
    Invalid,
    /// An earlier state of the ring in force: the same.
    Stale,
}

/// The shared ring and the store behind it.
#[derive(Debug)]
pub struct RingKeeper {
    store: Arc<dyn MasterKeyStore>,
    policy: RotationPolicy,
    /// The AEAD of the keys this server makes.
    cookie_aead: CookieAead,
    ring: RwLock<Arc<KeyRing>>,
    /// The blob last seen in (or written to) the store, to compare-and-swap against.
    last_seen: Mutex<Option<Vec<u8>>>,
    down_logged: AtomicBool,
    /// The ring in force holds keys the store lacks (made while it could
    /// not be written): written back at the next poll that reads the store.
    unpublished: AtomicBool,
    /// The counters.
    pub metrics: RingMetrics,
}

/// Opens the store `nts` names, sealed under its key-encryption keys when
/// it has any (the KEK files are read here, refusing loosely protected ones).
///
/// # Errors
/// A bad location, or a KEK file that is missing, too open or malformed.
pub fn open_key_store(nts: &NtsSettings) -> Result<Arc<dyn MasterKeyStore>, String> {
    open_sealed_at(&nts.store_location, nts, "NTS master keys")
}

/// The store at `location`, sealed under the key-encryption keys of `nts`
/// when it has any (the KEK files are read here, refusing loosely protected
/// ones). The NTS master keys and the Roughtime online key both use it.
///
/// # Errors
/// A bad location, or a KEK file that is missing, too open or malformed.
/// `what` names the content in the log line that says it is sealed.
pub(crate) fn open_sealed_at(
    location: &str,
    nts: &NtsSettings,
    what: &str,
) -> Result<Arc<dyn MasterKeyStore>, String> {
    let store = open_store(location).map_err(|e| e.to_string())?;
    let Some(sealing) = &nts.sealing else {
        return Ok(store);
    };
    let current = read_kek_file(&sealing.current).map_err(|e| e.to_string())?;
    let accepted = sealing
        .accepted
        .iter()
        .map(|p| read_kek_file(p).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    tracing::info!(
        current = %current.id(),
        accepted = ?accepted.iter().map(|k| k.id().to_string()).collect::<Vec<_>>(),
        "{what} sealed in the store under a key-encryption key"
    );
    Ok(Arc::new(
        SealedStore::new(store, &store_key_name(location), current, accepted)
            .seal_plaintext(sealing.seal_plaintext),
    ))
}

/// Seconds since the Unix epoch from the system clock.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A sealed blob returned by a store that does not open seals (no
/// key-encryption key configured) is refused, never taken for a damaged ring
/// and overwritten.
fn refuse_sealed_without_kek(blob: &[u8]) -> Result<(), StoreError> {
    match authtime_keys::store::sealed_header(blob) {
        Ok(header) => Err(StoreError::Sealing(SealError::KekMissing {
            blob: header.kek,
        })),
        Err(SealError::Malformed(why)) => Err(StoreError::Sealing(SealError::Malformed(why))),
        Err(_) => Ok(()),
    }
}

fn random(buf: &mut [u8]) {
    // getrandom fails only without any entropy source, which the daemon
    // checked at start (the rate limiter's key); all-zero keys are never used.
    if getrandom::fill(buf).is_err() {
        tracing::error!("no random bytes for an NTS master key");
    }
}

impl RingKeeper {
    /// A keeper for `store`: loads (or creates and publishes) the ring once.
    /// When the store cannot be reached it starts from a fresh local ring and
    /// says so; it publishes it or adopts the store's when the store returns.
    ///
    /// # Errors
    /// The store holds a blob this server must not read or replace: sealed
    /// under a key-encryption key it does not have (or sealed while it has
    /// none), damaged, or unsealed while sealing is configured. Nothing is
    /// written then.
    pub fn start(
        store: Arc<dyn MasterKeyStore>,
        policy: RotationPolicy,
    ) -> Result<Arc<Self>, StoreError> {
        Self::start_with(store, policy, CookieAead::Auto)
    }

    /// As [`RingKeeper::start`], making new keys under `cookie_aead`.
    ///
    /// # Errors
    /// As [`RingKeeper::start`].
    pub fn start_with(
        store: Arc<dyn MasterKeyStore>,
        policy: RotationPolicy,
        cookie_aead: CookieAead,
    ) -> Result<Arc<Self>, StoreError> {
        match store.load() {
            Err(e @ StoreError::Sealing(_)) => return Err(e),
            Ok(Some(blob)) => refuse_sealed_without_kek(&blob)?,
            Ok(None) | Err(_) => {}
        }
        let keeper = Arc::new(Self {
            store,
            policy,
            cookie_aead,
            ring: RwLock::new(Arc::new(KeyRing::new(policy))),
            last_seen: Mutex::new(None),
            down_logged: AtomicBool::new(false),
            unpublished: AtomicBool::new(false),
            metrics: RingMetrics::default(),
        });
        keeper.tick(unix_now());
        Ok(keeper)
    }

    /// The ring in force.
    #[must_use]
    pub fn current(&self) -> Arc<KeyRing> {
        match self.ring.read() {
            Ok(ring) => Arc::clone(&ring),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Where the keys live, for logs.
    #[must_use]
    pub fn describe(&self) -> String {
        self.store.describe()
    }

    fn set(&self, ring: KeyRing) {
        self.metrics
            .keys
            .store(ring.keys().len() as u64, Ordering::Relaxed);
        self.metrics.ring_changes.fetch_add(1, Ordering::Relaxed);
        let ring = Arc::new(ring);
        match self.ring.write() {
            Ok(mut slot) => *slot = ring,
            Err(poisoned) => *poisoned.into_inner() = ring,
        }
    }

    fn last_seen(&self) -> std::sync::MutexGuard<'_, Option<Vec<u8>>> {
        self.last_seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn store_failed(&self, e: &StoreError) {
        self.metrics.store_errors.fetch_add(1, Ordering::Relaxed);
        self.metrics.store_down.store(1, Ordering::Relaxed);
        if self.down_logged.swap(true, Ordering::Relaxed) {
            return;
        }
        if let StoreError::Sealing(_) = e {
            tracing::error!(
                store = %self.store.describe(),
                keys = self.current().keys().len(),
                "refusing the stored NTS master keys and leaving them untouched, \
                 serving with the keys held: {e}"
            );
        } else {
            tracing::warn!(
                store = %self.store.describe(),
                keys = self.current().keys().len(),
                "NTS key store unavailable, serving with the master keys held: {e}"
            );
        }
    }

    fn store_ok(&self) {
        self.metrics.store_down.store(0, Ordering::Relaxed);
        if self.down_logged.swap(false, Ordering::Relaxed) {
            tracing::info!(store = %self.store.describe(), "NTS key store reachable again");
        }
    }

    /// One round: adopt the store's ring, rotate if due, publish. Never
    /// blocks longer than the store's timeouts.
    pub fn tick(&self, now_unix_secs: u64) {
        let loaded = match self.store.load().and_then(|blob| {
            match blob.as_deref().map(refuse_sealed_without_kek) {
                Some(Err(e)) => Err(e),
                _ => Ok(blob),
            }
        }) {
            Ok(blob) => Some(blob),
            Err(e) => {
                self.store_failed(&e);
                None
            }
        };
        // A blob that is not a ring, or an earlier state of the ring in
        // force: the ring in force is written over it.
        let overwrite = match &loaded {
            Some(blob) => self.adopt(blob.as_deref()) != Adoption::Taken,
            None => false,
        };
        // Read, and nothing held that it lacks: the store is fine. Keys it
        // lacks are written below (and it stays down until they are).
        let pending = loaded.is_some() && self.unpublished.load(Ordering::Relaxed);
        if loaded.is_some() && !pending {
            self.store_ok();
        }
        let current = self.current();
        let policy_changed = current.policy() != self.policy;
        let base = (*current).clone().with_policy(self.policy);
        let planned = base.plan_with(now_unix_secs, &mut random, self.cookie_aead);
        let wanted = match planned {
            Some(ring) => Some(ring),
            None if policy_changed => Some(base),
            None => None,
        };
        let rotated = wanted.is_some();
        // Republish when the store lost its content, holds garbage or an
        // earlier state of the ring, or lacks keys made while it could not
        // be written.
        let store_empty = matches!(loaded, Some(None)) && !current.keys().is_empty();
        let Some(ring) =
            wanted.or_else(|| (store_empty || overwrite || pending).then(|| (*current).clone()))
        else {
            return;
        };
        let blob = ring.to_bytes();
        if loaded.is_none() {
            // Store down: rotate locally so a current key always exists.
            self.unpublished.store(true, Ordering::Relaxed);
            self.set(ring);
            return;
        }
        let expected = loaded.flatten();
        let created = current.keys().is_empty();
        match self.store.compare_and_swap(expected.as_deref(), &blob) {
            Ok(true) => {
                self.metrics
                    .rotations_published
                    .fetch_add(1, Ordering::Relaxed);
                *self.last_seen() = Some(blob.to_vec());
                self.unpublished.store(false, Ordering::Relaxed);
                self.store_ok();
                tracing::info!(
                    keys = ring.keys().len(),
                    generation = ring.generation(),
                    store = %self.store.describe(),
                    "{}",
                    if created {
                        "NTS master keys created"
                    } else if rotated {
                        "NTS master keys rotated"
                    } else {
                        "NTS master keys held in memory written to the store"
                    }
                );
                self.set(ring);
            }
            Ok(false) => {
                // Another server rotated first: take its ring (a blob this
                // server may not read is left alone, as at the top).
                match self.store.load() {
                    Ok(blob) => {
                        self.adopt(blob.as_deref());
                        if !self.unpublished.load(Ordering::Relaxed) {
                            self.store_ok();
                        }
                    }
                    Err(e) => {
                        self.store_failed(&e);
                        self.keep_unwritten(ring, rotated);
                    }
                }
            }
            Err(e) => {
                self.store_failed(&e);
                self.keep_unwritten(ring, rotated);
            }
        }
    }

    /// A write failed: a new ring is put in force all the same (a current
    /// key must exist), and written at a later poll.
    fn keep_unwritten(&self, ring: KeyRing, rotated: bool) {
        self.unpublished.store(true, Ordering::Relaxed);
        if rotated {
            self.set(ring);
        }
    }

    /// Adopts the store's blob when it is valid, differs from what was seen
    /// last and is not an earlier state of the ring in force.
    fn adopt(&self, blob: Option<&[u8]>) -> Adoption {
        let Some(blob) = blob else {
            return Adoption::Taken;
        };
        if self.last_seen().as_deref() == Some(blob) {
            return Adoption::Taken;
        }
        match KeyRing::from_bytes(blob) {
            Ok(ring) if ring.is_stale_copy_of(&self.current()) => {
                self.metrics
                    .stale_rings_refused
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    store = %self.store.describe(),
                    stored_generation = ring.generation(),
                    held_generation = self.current().generation(),
                    "the key store holds an earlier state of the NTS master keys (a restored \
                     snapshot, or a replica promoted before it had the last writes): keeping \
                     the keys in force and writing them back"
                );
                Adoption::Stale
            }
            Ok(ring) => {
                *self.last_seen() = Some(blob.to_vec());
                // The store's ring replaces the one held, keys made here
                // while it could not be written included.
                self.unpublished.store(false, Ordering::Relaxed);
                tracing::info!(
                    keys = ring.keys().len(),
                    generation = ring.generation(),
                    "NTS master keys loaded from the store"
                );
                self.set(ring);
                Adoption::Taken
            }
            Err(e) => {
                self.metrics.store_errors.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    store = %self.store.describe(),
                    "ignoring the stored NTS keys and writing the ring in force back: {e}"
                );
                Adoption::Invalid
            }
        }
    }

    /// Whether the ring held has a key for the period of `now_unix_secs`.
    /// It lacks one after the clock was stepped forward (or, for a moment,
    /// when a period begins before a peer published its key): cookies sealed
    /// then would be under a key already too old to open them.
    pub(crate) fn covers(&self, now_unix_secs: u64) -> bool {
        let p = self.policy.period_at(now_unix_secs);
        self.current().keys().iter().any(|k| k.period() == p)
    }

    /// Runs [`RingKeeper::tick`] every `interval` until `stop` is set, and
    /// at once (checked every 100 ms) when the ring lacks the current
    /// period's key, as after a step of the clock.
    pub(crate) fn run(&self, interval: Duration, stop: &AtomicBool) {
        let step = Duration::from_millis(100).min(interval);
        let mut waited = Duration::ZERO;
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(step);
            waited += step;
            let now = unix_now();
            if waited >= interval || !self.covers(now) {
                waited = Duration::ZERO;
                self.tick(now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_keys::store::EmbeddedStore;

    fn policy() -> RotationPolicy {
        RotationPolicy {
            interval_secs: 100,
            old_keys: 2,
        }
    }

    /// `ring` in a fresh directory, removed when the test ends.
    fn scratch(name: &str) -> authtime_scratch::ScratchFile {
        authtime_scratch::ScratchFile::new(&format!("ring-{name}"), "ring")
    }

    use authtime_keys::store::{KeyEncryptionKey, SealedStore, sealed_header};

    fn kek(byte: u8) -> KeyEncryptionKey {
        KeyEncryptionKey::from_bytes([byte; 32])
    }

    /// `inner` sealed under `current`, also opening blobs of `accepted`.
    fn sealed(
        inner: &Arc<dyn MasterKeyStore>,
        current: u8,
        accepted: &[u8],
    ) -> Arc<dyn MasterKeyStore> {
        Arc::new(SealedStore::new(
            Arc::clone(inner),
            "ring",
            kek(current),
            accepted.iter().map(|b| kek(*b)).collect(),
        ))
    }

    fn ids(k: &RingKeeper) -> Vec<u32> {
        k.current().keys().iter().map(|m| m.id()).collect()
    }

    #[test]
    fn a_wrong_or_missing_kek_refuses_to_start_and_writes_nothing() {
        let scratch_wrongkek = scratch("wrongkek");
        let inner: Arc<dyn MasterKeyStore> = Arc::new(EmbeddedStore::new(&*scratch_wrongkek));
        let first = RingKeeper::start(sealed(&inner, 1, &[]), policy()).expect("start");
        assert!(!ids(&first).is_empty());
        let stored = inner.load().expect("load").expect("sealed ring");
        let e = RingKeeper::start(sealed(&inner, 2, &[3]), policy()).expect_err("wrong kek");
        let shown = e.to_string();
        for id in [kek(1).id(), kek(2).id(), kek(3).id()] {
            assert!(shown.contains(&id.to_string()), "{shown}");
        }
        let e = RingKeeper::start(Arc::clone(&inner), policy()).expect_err("no kek");
        assert!(e.to_string().contains("none is configured"), "{e}");
        assert_eq!(inner.load().expect("load"), Some(stored), "unchanged");
    }

    #[test]
    fn a_ring_that_lacks_the_current_periods_key_after_a_step_is_seen_and_ticked() {
        let scratch_step = scratch("step");
        let inner: Arc<dyn MasterKeyStore> = Arc::new(EmbeddedStore::new(&*scratch_step));
        let keeper = RingKeeper::start(inner, policy()).expect("start");
        let now = unix_now();
        assert!(keeper.covers(now));
        // Stepped back one period: its key is missing; the next period's
        // (published ahead) is held.
        assert!(!keeper.covers(now - 100));
        assert!(keeper.covers(now + 100));
        // Stepped forward ten periods: missing until a tick makes it.
        assert!(!keeper.covers(now + 1000));
        keeper.tick(now + 1000);
        assert!(keeper.covers(now + 1000));
        // The key of the period before the step was rotated out (older than
        // old-keys 2 periods); a step back makes a new one under the same id.
        assert!(!keeper.covers(now));
        keeper.tick(now);
        assert!(keeper.covers(now) && keeper.covers(now + 1000));
    }

    #[test]
    fn a_running_keeper_never_overwrites_a_blob_it_cannot_open() {
        let scratch_foreign = scratch("foreign");
        let inner: Arc<dyn MasterKeyStore> = Arc::new(EmbeddedStore::new(&*scratch_foreign));
        let keeper = RingKeeper::start(sealed(&inner, 1, &[]), policy()).expect("start");
        let held = ids(&keeper);
        // Someone writes a ring sealed under a KEK this server does not have.
        let foreign = sealed(&inner, 9, &[1]);
        let plain = foreign.load().expect("load").expect("ring");
        assert!(foreign.compare_and_swap(Some(&plain), &plain).expect("cas"));
        let theirs = inner.load().expect("load");
        keeper.tick(unix_now());
        keeper.tick(unix_now() + 1000);
        assert_eq!(inner.load().expect("load"), theirs, "left alone");
        assert_eq!(keeper.metrics.store_down.load(Ordering::Relaxed), 1);
        assert!(!keeper.current().keys().is_empty());
        assert_ne!(
            ids(&keeper),
            held,
            "rotated locally, as when the store is down"
        );
    }

    /// A store that went back in time (a snapshot restored, a lagging
    /// replica promoted) hands back an earlier ring: the keeper keeps the
    /// keys in force, whose cookies clients hold, and writes them back.
    #[test]
    fn an_earlier_ring_in_the_store_is_refused_and_overwritten() {
        let scratch_stale = scratch("stale");
        let store: Arc<dyn MasterKeyStore> = Arc::new(EmbeddedStore::new(&*scratch_stale));
        let keeper = RingKeeper::start(Arc::clone(&store), policy()).expect("start");
        let now = unix_now();
        let earlier = store.load().expect("load").expect("ring");
        keeper.tick(now + 100);
        keeper.tick(now + 200);
        let held = ids(&keeper);
        let held_generation = keeper.current().generation();
        let current = store.load().expect("load").expect("ring");
        assert_ne!(current, earlier);
        // The store is restored from the first snapshot.
        assert!(
            store
                .compare_and_swap(Some(&current), &earlier)
                .expect("cas")
        );
        keeper.tick(now + 200);
        assert_eq!(ids(&keeper), held, "the keys in force are kept");
        assert_eq!(
            keeper.metrics.stale_rings_refused.load(Ordering::Relaxed),
            1
        );
        assert_eq!(
            store.load().expect("load").as_deref(),
            Some(&current[..]),
            "written back"
        );
        assert_eq!(keeper.metrics.store_down.load(Ordering::Relaxed), 0);
        let scratch_stale_other = scratch("stale-other");
        // A ring that diverged (another server's keys for the same periods,
        // an older generation) still wins, as before.
        let other = RingKeeper::start(
            Arc::new(EmbeddedStore::new(&*scratch_stale_other)),
            policy(),
        )
        .expect("other");
        let theirs = other.current().to_bytes();
        let now_blob = store.load().expect("load").expect("ring");
        assert!(
            store
                .compare_and_swap(Some(&now_blob), &theirs)
                .expect("cas")
        );
        keeper.tick(now + 200);
        // Adopted, then rotated to the test's time: one generation on.
        assert_eq!(
            keeper.current().generation(),
            other.current().generation() + 1
        );
        assert!(keeper.current().generation() < held_generation);
        assert_eq!(
            keeper.metrics.stale_rings_refused.load(Ordering::Relaxed),
            1
        );
    }

    /// Both keepers look at the store at `now` (a keeper started afresh
    /// ticked at the real time, behind the test's), then hold the same ring.
    fn settle(a: &RingKeeper, b: &RingKeeper, now: u64) {
        for keeper in [a, b, a] {
            keeper.tick(now);
        }
        assert_eq!(ids(a), ids(b));
    }

    /// The KEK rotation of docs/security.md with two servers.
    #[test]
    fn the_kek_rotation_procedure_keeps_two_servers_in_step() {
        let scratch_kekroll = scratch("kekroll");
        let inner: Arc<dyn MasterKeyStore> = Arc::new(EmbeddedStore::new(&*scratch_kekroll));
        let kek_of = || {
            sealed_header(&inner.load().expect("load").expect("blob"))
                .expect("sealed")
                .kek
        };
        let mut now = unix_now();
        let a = RingKeeper::start(sealed(&inner, 1, &[]), policy()).expect("a");
        let b = RingKeeper::start(sealed(&inner, 1, &[]), policy()).expect("b");
        assert_eq!(ids(&a), ids(&b));
        // 1. The new KEK (2) is accepted everywhere; writes still use 1.
        let a = RingKeeper::start(sealed(&inner, 1, &[2]), policy()).expect("a, step 1");
        let b_step1 = RingKeeper::start(sealed(&inner, 1, &[2]), policy()).expect("b, step 1");
        drop(b);
        // 2. Servers switch to current = 2 one at a time, keeping 1 accepted.
        let a = {
            drop(a);
            RingKeeper::start(sealed(&inner, 2, &[1]), policy()).expect("a, step 2")
        };
        now += 300;
        a.tick(now);
        assert_eq!(
            kek_of(),
            kek(2).id(),
            "a's rotation sealed under the new KEK"
        );
        b_step1.tick(now);
        assert_eq!(ids(&a), ids(&b_step1), "b, not yet switched, opens it");
        let b = RingKeeper::start(sealed(&inner, 2, &[1]), policy()).expect("b, step 2");
        drop(b_step1);
        settle(&a, &b, now);
        // Once every server writes with 2 and one rotation has passed, the
        // blob is sealed under 2 only.
        now += 300;
        b.tick(now);
        a.tick(now);
        assert_eq!(ids(&a), ids(&b));
        assert_eq!(kek_of(), kek(2).id());
        // 3. The old KEK is removed; both restart on the new one alone.
        let a = RingKeeper::start(sealed(&inner, 2, &[]), policy()).expect("a, step 3");
        let b = RingKeeper::start(sealed(&inner, 2, &[]), policy()).expect("b, step 3");
        now += 300;
        settle(&a, &b, now);
        assert_eq!(b.metrics.store_down.load(Ordering::Relaxed), 0);
        // A server still on the old KEK alone is refused.
        assert!(RingKeeper::start(sealed(&inner, 1, &[]), policy()).is_err());
    }

    #[test]
    fn two_keepers_on_one_store_share_every_rotation() {
        let scratch_share = scratch("share");
        let store: Arc<dyn MasterKeyStore> = Arc::new(EmbeddedStore::new(&*scratch_share));
        let a = RingKeeper::start(Arc::clone(&store), policy()).expect("start");
        let b = RingKeeper::start(Arc::clone(&store), policy()).expect("start");
        let ids = |k: &RingKeeper| {
            k.current()
                .keys()
                .iter()
                .map(|m| m.id())
                .collect::<Vec<_>>()
        };
        assert!(!ids(&a).is_empty());
        assert_eq!(ids(&a), ids(&b), "b adopted a's ring");
        // Time moves on by three periods; a rotates first, b adopts.
        let later = unix_now() + 300;
        a.tick(later);
        b.tick(later);
        assert_eq!(ids(&a), ids(&b));
        assert_eq!(a.metrics.rotations_published.load(Ordering::Relaxed), 2);
        assert_eq!(b.metrics.rotations_published.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn an_unreachable_store_keeps_the_keys_and_recovers() {
        let path = scratch("down");
        let dir = path.parent().expect("dir").to_path_buf();
        let store: Arc<dyn MasterKeyStore> = Arc::new(EmbeddedStore::new(&path));
        let keeper = RingKeeper::start(Arc::clone(&store), policy()).expect("start");
        let before = keeper.current().keys().len();
        std::fs::remove_dir_all(&dir).expect("remove");
        // The directory is gone: the keys cannot be written back.
        keeper.tick(unix_now());
        assert_eq!(keeper.current().keys().len(), before, "keys kept");
        assert_eq!(keeper.metrics.store_down.load(Ordering::Relaxed), 1);
        let generation = keeper.current().generation();
        keeper.tick(unix_now() + 1000);
        assert!(
            keeper.current().generation() > generation,
            "rotated locally"
        );
        std::fs::create_dir_all(&dir).expect("dir");
        keeper.tick(unix_now() + 1000);
        assert_eq!(keeper.metrics.store_down.load(Ordering::Relaxed), 0);
        let stored = store.load().expect("load").expect("republished");
        let ring = KeyRing::from_bytes(&stored).expect("valid");
        assert_eq!(ring.generation(), keeper.current().generation());
    }

    /// An embedded store whose writes fail while `read_only` is set, as on a
    /// read-only or full disk: reads work, writes do not.
    #[derive(Debug)]
    struct ReadOnly {
        inner: EmbeddedStore,
        read_only: AtomicBool,
    }

    impl MasterKeyStore for ReadOnly {
        fn load(&self) -> Result<Option<Vec<u8>>, StoreError> {
            self.inner.load()
        }

        fn compare_and_swap(
            &self,
            expected: Option<&[u8]>,
            new: &[u8],
        ) -> Result<bool, StoreError> {
            if self.read_only.load(Ordering::Relaxed) {
                return Err(StoreError::Io("Read-only file system (os error 30)".into()));
            }
            self.inner.compare_and_swap(expected, new)
        }

        fn describe(&self) -> String {
            self.inner.describe()
        }
    }

    #[test]
    fn keys_made_while_the_store_takes_no_writes_are_written_at_the_next_poll() {
        let scratch_readonly = scratch("readonly");
        let store = Arc::new(ReadOnly {
            inner: EmbeddedStore::new(&*scratch_readonly),
            read_only: AtomicBool::new(false),
        });
        let keeper = RingKeeper::start(Arc::clone(&store) as Arc<dyn MasterKeyStore>, policy())
            .expect("start");
        let before = store.load().expect("load");
        store.read_only.store(true, Ordering::Relaxed);
        let later = unix_now() + 300;
        keeper.tick(later);
        let held = ids(&keeper);
        assert_eq!(store.load().expect("load"), before, "the write failed");
        assert!(!held.is_empty());
        let changes = keeper.metrics.ring_changes.load(Ordering::Relaxed);
        // Every poll reads the store fine but cannot write the keys held:
        // the store stays down, and nothing changes in force.
        for _ in 0..3 {
            keeper.tick(later);
            assert_eq!(keeper.metrics.store_down.load(Ordering::Relaxed), 1);
        }
        assert_eq!(keeper.metrics.ring_changes.load(Ordering::Relaxed), changes);
        assert_eq!(ids(&keeper), held);
        // Writable again: the next poll writes them, with no rotation due.
        store.read_only.store(false, Ordering::Relaxed);
        keeper.tick(later);
        assert_eq!(keeper.metrics.store_down.load(Ordering::Relaxed), 0);
        let stored = store.load().expect("load").expect("written");
        let ring = KeyRing::from_bytes(&stored).expect("valid");
        assert_eq!(ring.keys().iter().map(|m| m.id()).collect::<Vec<_>>(), held);
    }

    #[test]
    fn a_corrupt_store_is_ignored_and_repaired() {
        let path = scratch("corrupt");
        let store: Arc<dyn MasterKeyStore> = Arc::new(EmbeddedStore::new(&path));
        let keeper = RingKeeper::start(Arc::clone(&store), policy()).expect("start");
        let held = keeper.current().generation();
        std::fs::write(&path, b"torn").expect("write");
        keeper.tick(unix_now());
        assert_eq!(keeper.current().generation(), held, "kept its ring");
        assert!(keeper.metrics.store_errors.load(Ordering::Relaxed) > 0);
        let repaired = store.load().expect("load").expect("written back");
        assert_eq!(
            KeyRing::from_bytes(&repaired).expect("valid").generation(),
            held
        );
    }
}
