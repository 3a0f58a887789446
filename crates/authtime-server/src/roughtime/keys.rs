//! The Roughtime online key in force, and the thread that keeps it fresh.
//!
//! With a long-term key file the keeper makes online keys itself: valid from
//! a little before now (clients whose clocks lag) to now plus
//! `online-key-lifetime`, replaced when a third of that is left. With a
//! `[keystore]` the key and its certificates live there too, as a blob of
//! their own beside the NTS master keys (sealed like them when sealing is
//! configured): a valid key found there is adopted, and a new one is written
//! with compare-and-swap, so the servers of a fleet agree on one key. A store
//! that is down never stops the server: it keeps the key it holds, makes a
//! new one locally when that one is due, and writes again when the store is
//! back. With a delegation file made offline the keeper re-reads the file
//! when it changes and warns as its MAXT comes near; past MAXT the workers
//! answer nothing.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use authtime_keys::store::MasterKeyStore;
use authtime_roughtime::delegation_file::{Delegation, delegation_text, parse_delegation};
use authtime_roughtime::request::srv_value;
use authtime_roughtime::{OnlineKey, SigningKey};

use crate::config::NtsSettings;
use crate::config::roughtime::{RoughtimeKeySource, RoughtimeSettings};
use crate::nts::keys::unix_now;
use crate::roughtime::key_files::{read_delegation, read_long_term_key};
use crate::roughtime::metrics::RoughtimeMetrics;

/// MINT is set this far before the moment a key is made (at most).
const MINT_SKEW: u64 = 300;

/// A delegation file's MAXT is warned about when this close.
const EXPIRY_WARNING: u64 = 3 * 86_400;

/// The key the workers sign with, and the SRV value that names its long-term key.
#[derive(Debug)]
pub struct ActiveKey {
    /// The online key with its certificates.
    pub key: OnlineKey,
    /// The long-term public key.
    pub long_term_public: [u8; 32],
    /// `srv_value(long_term_public)`.
    pub srv: [u8; 32],
}

impl ActiveKey {
    fn new(delegation: Delegation) -> Self {
        Self {
            srv: srv_value(&delegation.long_term_public),
            long_term_public: delegation.long_term_public,
            key: delegation.key,
        }
    }
}

enum Source {
    LongTerm {
        key: Box<SigningKey>,
        lifetime: u64,
        store: Option<Arc<dyn MasterKeyStore>>,
    },
    Delegation {
        path: PathBuf,
        modified: Mutex<Option<SystemTime>>,
        /// Unix second of the last expiry warning.
        warned: Mutex<u64>,
    },
}

/// The online key in force, shared by the workers.
pub struct RoughtimeKeys {
    current: RwLock<Arc<ActiveKey>>,
    source: Source,
    store_down_logged: AtomicBool,
    metrics: Arc<RoughtimeMetrics>,
}

impl std::fmt::Debug for RoughtimeKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoughtimeKeys")
            .field("current", &self.current())
            .finish_non_exhaustive()
    }
}

/// Where the online key's blob lives, given the NTS master keys' store: the
/// embedded file's name with `.roughtime` appended, or the Redis key or
/// memcached item name with `:roughtime` appended.
#[must_use]
pub fn roughtime_store_location(nts_location: &str) -> String {
    const SUFFIX: &str = ":roughtime";
    let default = format!("{}{SUFFIX}", authtime_keys::store::DEFAULT_KEY_NAME);
    let Some((scheme, rest)) = nts_location.split_once("://") else {
        return format!("{nts_location}.roughtime");
    };
    if scheme == "memcached" {
        return match rest.split_once('/') {
            Some((host, key)) if !key.is_empty() => format!("memcached://{host}/{key}{SUFFIX}"),
            Some((host, _)) => format!("memcached://{host}/{default}"),
            None => format!("memcached://{rest}/{default}"),
        };
    }
    let (base, query) = nts_location
        .split_once('?')
        .map_or((nts_location, None), |(b, q)| (b, Some(q)));
    let mut found = false;
    let mut params: Vec<String> = query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.strip_prefix("key=") {
            Some(k) if !k.is_empty() => {
                found = true;
                format!("key={k}{SUFFIX}")
            }
            _ => p.to_owned(),
        })
        .collect();
    if !found {
        params.push(format!("key={default}"));
    }
    format!("{base}?{}", params.join("&"))
}

/// Opens the online key's store beside the NTS master keys of `nts`, sealed
/// under the same key-encryption keys.
///
/// # Errors
/// A bad location, or a KEK file that is missing, too open or malformed.
pub fn open_roughtime_store(nts: &NtsSettings) -> Result<Arc<dyn MasterKeyStore>, String> {
    crate::nts::keys::open_sealed_at(
        &roughtime_store_location(&nts.store_location),
        nts,
        "Roughtime online key",
    )
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A fresh online key under `long_term`, valid from a little before `now`
/// to `now + lifetime`.
fn make_key(long_term: &SigningKey, lifetime: u64, now: u64) -> Result<OnlineKey, String> {
    let mut seed = zeroize::Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut seed[..]).map_err(|e| format!("no random bytes: {e}"))?;
    let mint = now.saturating_sub(MINT_SKEW.min(lifetime));
    OnlineKey::delegate(
        long_term,
        SigningKey::from_bytes(&seed),
        mint,
        now.saturating_add(lifetime),
    )
    .map_err(|e| e.to_string())
}

impl RoughtimeKeys {
    /// Reads the key files `settings` name and puts a key in force: from the
    /// store when it holds a valid one, else a new one (written to the store).
    ///
    /// # Errors
    /// A key file that cannot be read, or no random bytes.
    pub fn start(
        settings: &RoughtimeSettings,
        store: Option<Arc<dyn MasterKeyStore>>,
        metrics: Arc<RoughtimeMetrics>,
    ) -> Result<Arc<Self>, String> {
        let now = unix_now();
        let (first, source) = match &settings.keys {
            RoughtimeKeySource::LongTerm(path) => {
                let key = read_long_term_key(path)?;
                let first = ActiveKey {
                    long_term_public: key.verifying_key().to_bytes(),
                    srv: srv_value(&key.verifying_key().to_bytes()),
                    key: make_key(&key, settings.online_key_lifetime, now)?,
                };
                let source = Source::LongTerm {
                    key: Box::new(key),
                    lifetime: settings.online_key_lifetime,
                    store,
                };
                (first, source)
            }
            RoughtimeKeySource::Delegation(path) => {
                let delegation = read_delegation(path)?;
                let source = Source::Delegation {
                    path: path.clone(),
                    modified: Mutex::new(modified(path)),
                    warned: Mutex::new(0),
                };
                (ActiveKey::new(delegation), source)
            }
        };
        metrics.maxt.store(first.key.window().1, Ordering::Relaxed);
        let keys = Arc::new(Self {
            current: RwLock::new(Arc::new(first)),
            source,
            store_down_logged: AtomicBool::new(false),
            metrics,
        });
        keys.tick(now, true);
        // The first key in force is not a rotation.
        keys.metrics.rotations.store(0, Ordering::Relaxed);
        Ok(keys)
    }

    /// The key in force.
    #[must_use]
    pub fn current(&self) -> Arc<ActiveKey> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Where the key comes from, for logs.
    #[must_use]
    pub fn describe(&self) -> String {
        match &self.source {
            Source::LongTerm { store: Some(s), .. } => {
                format!("made here, shared in {}", s.describe())
            }
            Source::LongTerm { store: None, .. } => "made here, kept in memory".into(),
            Source::Delegation { path, .. } => format!("delegation {}", path.display()),
        }
    }

    fn set(&self, key: ActiveKey) {
        self.metrics
            .maxt
            .store(key.key.window().1, Ordering::Relaxed);
        self.metrics.rotations.fetch_add(1, Ordering::Relaxed);
        let (mint, maxt) = key.key.window();
        tracing::info!(
            mint,
            maxt,
            public = %hex_short(&key.key.public()),
            "Roughtime online key in force"
        );
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(key);
    }

    /// One round at `now`: adopt, rotate, publish, or re-read the delegation.
    /// `read_store`: whether to read the store even if nothing is due.
    pub fn tick(&self, now: u64, read_store: bool) {
        match &self.source {
            Source::LongTerm {
                key,
                lifetime,
                store,
            } => self.tick_long_term(now, read_store, key, *lifetime, store.as_deref()),
            Source::Delegation {
                path,
                modified: seen,
                warned,
            } => self.tick_delegation(now, path, seen, warned),
        }
    }

    fn due(key: &OnlineKey, lifetime: u64, now: u64) -> bool {
        let (mint, maxt) = key.window();
        now < mint || maxt.saturating_sub(now) <= lifetime / 3
    }

    fn tick_long_term(
        &self,
        now: u64,
        read_store: bool,
        long_term: &SigningKey,
        lifetime: u64,
        store: Option<&dyn MasterKeyStore>,
    ) {
        let public = long_term.verifying_key().to_bytes();
        let held = self.current();
        let held_due = Self::due(&held.key, lifetime, now);
        let Some(store) = store else {
            if held_due {
                self.rotate_locally(long_term, lifetime, now, &public);
            }
            return;
        };
        if !held_due && !read_store {
            return;
        }
        // The store is "back" only once it holds the key in force (or gave
        // one): one that can be read but not written (a read-only or full
        // disk) stays down, with one log line, until a write succeeds.
        let loaded = match store.load() {
            Ok(blob) => blob,
            Err(e) => {
                self.store_failed(store, &e.to_string());
                if held_due {
                    self.rotate_locally(long_term, lifetime, now, &public);
                }
                return;
            }
        };
        // The text is deterministic: equal bytes mean the store holds the key held.
        let held_text = delegation_text(&public, &held.key);
        if !held_due && loaded.as_deref() == Some(held_text.as_bytes()) {
            self.store_up(store);
            return;
        }
        if let Some(blob) = &loaded {
            match std::str::from_utf8(blob).ok().map(parse_delegation) {
                Some(Ok(d)) if d.long_term_public != public => {
                    return self.foreign(store, long_term, lifetime, now, held_due);
                }
                Some(Ok(d)) if !Self::due(&d.key, lifetime, now) => {
                    // Another server's key (or ours, written before a restart).
                    self.store_up(store);
                    self.set(ActiveKey::new(d));
                    return;
                }
                // A stale key is replaced below; so is garbage, unless it is
                // sealed under a key-encryption key this server lacks.
                Some(Ok(_)) => {}
                _ if authtime_keys::store::is_sealed_blob(blob) => {
                    return self.foreign(store, long_term, lifetime, now, held_due);
                }
                _ => {}
            }
        }
        // Publish the key held when it is fresh (a store that lost it, or one
        // that holds a stale key), else a new one.
        let (candidate, text) = if held_due {
            match make_key(long_term, lifetime, now) {
                Ok(k) => {
                    let text = delegation_text(&public, &k);
                    (Some(k), text)
                }
                Err(e) => {
                    tracing::error!("cannot make a Roughtime online key: {e}");
                    return;
                }
            }
        } else {
            (None, held_text)
        };
        let adopt = |key: OnlineKey| {
            self.set(ActiveKey {
                key,
                long_term_public: public,
                srv: srv_value(&public),
            });
        };
        match store.compare_and_swap(loaded.as_deref(), text.as_bytes()) {
            Ok(true) => {
                self.store_up(store);
                if let Some(key) = candidate {
                    adopt(key);
                }
            }
            // Another server wrote first: its key is adopted at the next
            // read, which is at once while the key held is due.
            Ok(false) => {
                self.store_up(store);
                if !held.key.covers(now) {
                    self.rotate_locally(long_term, lifetime, now, &public);
                }
            }
            Err(e) => {
                self.store_failed(store, &e.to_string());
                if let Some(key) = candidate {
                    adopt(key);
                }
            }
        }
    }

    /// The store holds a blob this server must not replace.
    fn foreign(
        &self,
        store: &dyn MasterKeyStore,
        long_term: &SigningKey,
        lifetime: u64,
        now: u64,
        held_due: bool,
    ) {
        self.store_failed(
            store,
            "the stored Roughtime key belongs to another long-term key (or is sealed under a \
             key-encryption key this server lacks); left untouched",
        );
        if held_due {
            let public = long_term.verifying_key().to_bytes();
            self.rotate_locally(long_term, lifetime, now, &public);
        }
    }

    fn rotate_locally(&self, long_term: &SigningKey, lifetime: u64, now: u64, public: &[u8; 32]) {
        match make_key(long_term, lifetime, now) {
            Ok(key) => self.set(ActiveKey {
                key,
                long_term_public: *public,
                srv: srv_value(public),
            }),
            Err(e) => tracing::error!("cannot make a Roughtime online key: {e}"),
        }
    }

    fn tick_delegation(
        &self,
        now: u64,
        path: &std::path::Path,
        seen: &Mutex<Option<SystemTime>>,
        warned: &Mutex<u64>,
    ) {
        let modified_now = modified(path);
        if modified_now.is_some() && modified_now != *lock(seen) {
            *lock(seen) = modified_now;
            match read_delegation(path) {
                Ok(d) => self.set(ActiveKey::new(d)),
                Err(e) => tracing::error!("keeping the Roughtime delegation in force: {e}"),
            }
        }
        let maxt = self.current().key.window().1;
        let mut last = lock(warned);
        if maxt.saturating_sub(now) <= EXPIRY_WARNING && now.saturating_sub(*last) >= 3600 {
            *last = now;
            if now > maxt {
                tracing::error!(
                    maxt,
                    path = %path.display(),
                    "the Roughtime delegation has expired: nothing is answered until a new one \
                     is written there (authtime roughtime delegate)"
                );
            } else {
                tracing::warn!(
                    maxt,
                    seconds_left = maxt - now,
                    path = %path.display(),
                    "the Roughtime delegation expires soon: write a new one there \
                     (authtime roughtime delegate)"
                );
            }
        }
    }

    fn store_failed(&self, store: &dyn MasterKeyStore, why: &str) {
        self.metrics.store_errors.fetch_add(1, Ordering::Relaxed);
        if !self.store_down_logged.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                store = %store.describe(),
                "Roughtime key store: {why}; serving with the online key held"
            );
        }
    }

    fn store_up(&self, store: &dyn MasterKeyStore) {
        if self.store_down_logged.swap(false, Ordering::Relaxed) {
            tracing::info!(store = %store.describe(), "Roughtime key store reachable again");
        }
    }

    /// Ticks every second (reading the store every `poll`) until `stop`.
    pub(crate) fn run(&self, poll: Duration, stop: &AtomicBool) {
        let step = Duration::from_millis(100);
        let (mut since_tick, mut since_poll) = (Duration::ZERO, Duration::ZERO);
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(step);
            since_tick += step;
            since_poll += step;
            if since_tick >= Duration::from_secs(1) {
                since_tick = Duration::ZERO;
                let read_store = since_poll >= poll;
                if read_store {
                    since_poll = Duration::ZERO;
                }
                self.tick(unix_now(), read_store);
            }
        }
    }
}

fn modified(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn hex_short(bytes: &[u8; 32]) -> String {
    bytes[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use authtime_keys::store::EmbeddedStore;
    use authtime_roughtime::delegation_file::seed_text;

    use super::*;
    use crate::roughtime::key_files::create_private_file;

    /// A fresh directory, removed when the test ends.
    fn scratch(name: &str) -> authtime_scratch::ScratchFile {
        authtime_scratch::ScratchFile::new(&format!("rt-keys-{name}"), "")
    }

    fn settings(dir: &std::path::Path, lifetime: u64) -> RoughtimeSettings {
        let seed = dir.join("lt.key");
        if !seed.exists() {
            create_private_file(&seed, &seed_text(&SigningKey::from_bytes(&[1; 32])))
                .expect("seed");
        }
        let text = format!(
            "[roughtime]\nlong-term-key = \"{}\"\nonline-key-lifetime = {lifetime}\n",
            seed.display()
        );
        crate::ConfigFile::parse(&text)
            .expect("parses")
            .validate(None)
            .expect("valid")
            .roughtime
            .expect("roughtime")
    }

    #[test]
    fn store_locations_sit_beside_the_nts_keys() {
        for (nts, rt) in [
            ("/var/lib/k", "/var/lib/k.roughtime"),
            (
                "redis://h:1/0",
                "redis://h:1/0?key=authtime:nts:master-keys:roughtime",
            ),
            (
                "rediss://h/0?key=k&ca=/c",
                "rediss://h/0?key=k:roughtime&ca=/c",
            ),
            (
                "rediss://h/0?ca=/c",
                "rediss://h/0?ca=/c&key=authtime:nts:master-keys:roughtime",
            ),
            ("memcached://h:2/k", "memcached://h:2/k:roughtime"),
            (
                "memcached://h",
                "memcached://h/authtime:nts:master-keys:roughtime",
            ),
        ] {
            assert_eq!(roughtime_store_location(nts), rt);
            // (A ca= file is read when the store is opened: not here.)
            assert!(
                rt.contains("ca=") || authtime_keys::store::open_store(rt).is_ok(),
                "{rt}"
            );
        }
    }

    #[test]
    fn without_a_store_keys_rotate_in_memory_when_a_third_is_left() {
        let dir = scratch("memory");
        let keys = RoughtimeKeys::start(&settings(&dir, 90), None, Arc::default()).expect("start");
        let first = keys.current();
        let (mint, maxt) = first.key.window();
        let now = unix_now();
        assert!(mint < now && maxt >= now + 89 && maxt <= now + 91);
        keys.tick(now + 10, false);
        assert_eq!(keys.current().key.seed(), first.key.seed());
        keys.tick(maxt - 30, false);
        assert_ne!(keys.current().key.seed(), first.key.seed());
        assert_eq!(keys.metrics.rotations.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn two_servers_share_one_key_through_the_store() {
        let dir = scratch("store");
        let store: Arc<dyn MasterKeyStore> =
            Arc::new(EmbeddedStore::new(dir.join("keys.roughtime")));
        let s = settings(&dir, 600);
        let a = RoughtimeKeys::start(&s, Some(Arc::clone(&store)), Arc::default()).expect("a");
        let b = RoughtimeKeys::start(&s, Some(Arc::clone(&store)), Arc::default()).expect("b");
        assert_eq!(a.current().key.seed(), b.current().key.seed());
        // A rotation by one reaches the other at its next read.
        let later = a.current().key.window().1 - 100;
        a.tick(later, true);
        assert_ne!(a.current().key.seed(), b.current().key.seed());
        b.tick(later, true);
        assert_eq!(a.current().key.seed(), b.current().key.seed());
        // Reads that find the key held write nothing (the embedded store
        // replaces its file on every write).
        let inode = |p: &std::path::Path| {
            use std::os::unix::fs::MetadataExt as _;
            std::fs::metadata(p).expect("stored").ino()
        };
        let before = inode(&dir.join("keys.roughtime"));
        a.tick(later + 1, true);
        b.tick(later + 1, true);
        assert_eq!(inode(&dir.join("keys.roughtime")), before);
        // A store that lost its content gets the key back.
        std::fs::remove_file(dir.join("keys.roughtime")).expect("rm");
        a.tick(later + 1, true);
        let stored = store.load().expect("load").expect("written back");
        let d = parse_delegation(std::str::from_utf8(&stored).expect("text")).expect("valid");
        assert_eq!(d.key.seed(), a.current().key.seed());
    }

    #[test]
    fn the_stored_key_is_sealed_when_the_nts_keys_are() {
        let dir = scratch("sealed");
        authtime_keys::store::create_kek_file(&dir.join("kek"), [7; 32]).expect("kek");
        settings(&dir, 600);
        let text = "[keystore]\npath = \"keys\"\nkey-encryption-key = \"kek\"\n\
                    [roughtime]\nlong-term-key = \"lt.key\"\n";
        let parsed = crate::ConfigFile::parse(text)
            .expect("parses")
            .validate(Some(&dir))
            .expect("valid");
        let nts = parsed.nts.expect("nts");
        let store = open_roughtime_store(&nts).expect("opens");
        let rt = parsed.roughtime.expect("roughtime");
        let a = RoughtimeKeys::start(&rt, Some(Arc::clone(&store)), Arc::default()).expect("a");
        let raw = std::fs::read(dir.join("keys.roughtime")).expect("written beside the NTS keys");
        assert!(authtime_keys::store::is_sealed_blob(&raw));
        // Another server with the same key-encryption key adopts the key.
        let b = RoughtimeKeys::start(
            &rt,
            Some(open_roughtime_store(&nts).expect("opens")),
            Arc::default(),
        )
        .expect("b");
        assert_eq!(a.current().key.seed(), b.current().key.seed());
        // One without it leaves the sealed blob alone and serves its own key.
        let unsealed: Arc<dyn MasterKeyStore> =
            Arc::new(EmbeddedStore::new(dir.join("keys.roughtime")));
        let c = RoughtimeKeys::start(&rt, Some(unsealed), Arc::default()).expect("c");
        assert_ne!(c.current().key.seed(), a.current().key.seed());
        assert_eq!(
            std::fs::read(dir.join("keys.roughtime")).expect("read"),
            raw
        );
    }

    #[test]
    fn a_store_that_is_down_never_stops_rotation() {
        let dir = scratch("down");
        // A directory that does not exist: every store operation fails.
        let store: Arc<dyn MasterKeyStore> =
            Arc::new(EmbeddedStore::new(dir.join("missing/keys.roughtime")));
        let keys = RoughtimeKeys::start(&settings(&dir, 60), Some(store), Arc::default())
            .expect("starts without the store");
        let first = keys.current();
        keys.tick(first.key.window().1 - 5, true);
        assert_ne!(keys.current().key.seed(), first.key.seed());
        assert!(keys.metrics.store_errors.load(Ordering::Relaxed) >= 2);
    }

    #[test]
    fn a_delegation_file_is_reread_when_it_changes() {
        let dir = scratch("delegation");
        let long_term = SigningKey::from_bytes(&[2; 32]);
        let public = long_term.verifying_key().to_bytes();
        let path = dir.join("d");
        let write = |seed: u8, maxt: u64| {
            let key = OnlineKey::delegate(&long_term, SigningKey::from_bytes(&[seed; 32]), 0, maxt)
                .expect("delegate");
            let _ = std::fs::remove_file(&path);
            create_private_file(&path, &delegation_text(&public, &key)).expect("write");
        };
        write(3, u64::MAX);
        let text = format!("[roughtime]\ndelegation = \"{}\"\n", path.display());
        let s = crate::ConfigFile::parse(&text)
            .expect("parses")
            .validate(None)
            .expect("valid")
            .roughtime
            .expect("roughtime");
        let keys = RoughtimeKeys::start(&s, None, Arc::default()).expect("start");
        assert_eq!(keys.current().key.seed(), [3; 32]);
        assert_eq!(keys.current().srv, srv_value(&public));
        // Force a different modification time.
        write(4, 10);
        let past = SystemTime::now() - Duration::from_secs(3600);
        let file = std::fs::File::options()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_modified(past).expect("mtime");
        keys.tick(unix_now(), false);
        assert_eq!(keys.current().key.seed(), [4; 32]);
    }
}
