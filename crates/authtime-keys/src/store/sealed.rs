//! Sealing: the master-key blob is encrypted and authenticated under the
//! fleet's key-encryption key before it reaches a store, so that a Redis
//! dump, a replica, a backup or the network between servers shows no key
//! material. [`SealedStore`] wraps any backend and is itself a
//! [`MasterKeyStore`]: callers keep seeing the plaintext blob, backends keep
//! seeing opaque bytes.
//!
//! A sealed blob (all integers big-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 4 | magic `ATSK` |
//! | 1 | format, 1 |
//! | 8 | id of the KEK that sealed it ([`KekId`]) |
//! | 8 | blob version, strictly increasing on every write |
//! | 12 | nonce (random) |
//! | n + 16 | AES-256-GCM-SIV ciphertext and tag |
//!
//! The associated data is the first 21 bytes (magic, format, KEK id,
//! version) followed by the store's key name (4-byte length, then the name).
//! So a blob copied to another key name, or with another version or KEK id
//! written into its header, does not open. GCM-SIV (from the `aes-gcm-siv`
//! crate) keeps a repeated random nonce from being fatal.
//!
//! Rollback: a `SealedStore` remembers the highest version it has opened or
//! written and refuses a lower one ([`SealError::Rollback`]), so a running
//! server never goes back to an older ring put in the store. A server that
//! starts afresh has seen nothing and accepts any blob that opens under its
//! KEKs, including an old one replayed; the versions it writes are at least
//! the Unix time in microseconds, so a server starting while the store is
//! empty does not write a version below what the others have seen.
//!
//! What is refused, and never overwritten: a blob that no configured KEK
//! opens (the error lists the KEK ids configured and the one the blob
//! names), a damaged or moved blob, an older version, and a plaintext blob
//! (unless migration is on: [`SealedStore::seal_plaintext`]).

use std::fmt;
use std::sync::{Arc, Mutex};

use aes_gcm_siv::aead::{Aead as _, KeyInit as _, Payload};
use aes_gcm_siv::{Aes256GcmSiv, Nonce};
use zeroize::Zeroizing;

use super::kek::{KekId, KeyEncryptionKey};
use super::{MasterKeyStore, StoreError};

const MAGIC: [u8; 4] = *b"ATSK";
const FORMAT: u8 = 1;
/// Magic, format, KEK id, version: bound as associated data.
const BOUND_LEN: usize = 4 + 1 + 8 + 8;
const NONCE_LEN: usize = 12;
const HEADER_LEN: usize = BOUND_LEN + NONCE_LEN;
const TAG_LEN: usize = 16;

/// Why a sealed blob was refused. Never contains key material.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SealError {
    /// The store holds a plaintext blob while sealing is configured (and
    /// migration is off).
    NotSealed,
    /// The store holds a sealed blob but no key-encryption key is configured.
    KekMissing {
        /// The KEK the blob names.
        blob: KekId,
    },
    /// The blob names a KEK that is not configured.
    UnknownKek {
        /// The KEK the blob names.
        blob: KekId,
        /// The KEKs configured (current first).
        configured: Vec<KekId>,
    },
    /// The blob names a configured KEK but does not open: damaged, moved from
    /// another key name, or its header changed.
    DoesNotOpen {
        /// The KEK the blob names.
        blob: KekId,
    },
    /// The blob is older than one this server has already seen.
    Rollback {
        /// The highest version seen.
        seen: u64,
        /// The version found.
        found: u64,
    },
    /// The blob starts like a sealed one but its header is cut or unknown.
    Malformed(&'static str),
    /// No random bytes for a nonce.
    NoRandom,
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSealed => f.write_str(
                "the store holds unsealed master keys while a key-encryption key is \
                 configured (set `seal-plaintext-keys = true` once to seal them)",
            ),
            Self::KekMissing { blob } => write!(
                f,
                "the stored master keys are sealed under key-encryption key {blob}, \
                 but none is configured (`key-encryption-key`)"
            ),
            Self::UnknownKek { blob, configured } => {
                write!(
                    f,
                    "the stored master keys are sealed under key-encryption key {blob}, \
                     which is not configured (configured:"
                )?;
                for id in configured {
                    write!(f, " {id}")?;
                }
                f.write_str(")")
            }
            Self::DoesNotOpen { blob } => write!(
                f,
                "the stored master keys name key-encryption key {blob} but do not open \
                 under it: damaged, or moved from another key name"
            ),
            Self::Rollback { seen, found } => write!(
                f,
                "the stored master keys have version {found}, older than version {seen} \
                 seen before: refused as a rollback"
            ),
            Self::Malformed(why) => write!(f, "malformed sealed master-key blob: {why}"),
            Self::NoRandom => f.write_str("no random bytes for a nonce"),
        }
    }
}

impl std::error::Error for SealError {}

/// Whether `blob` starts like a sealed blob (whatever follows).
#[must_use]
pub fn is_sealed_blob(blob: &[u8]) -> bool {
    blob.starts_with(&MAGIC)
}

/// The header of a sealed blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealedHeader {
    /// The KEK that sealed it.
    pub kek: KekId,
    /// Its version.
    pub version: u64,
}

/// Reads the header of a sealed blob, without opening it.
///
/// # Errors
/// [`SealError::NotSealed`] without the magic, [`SealError::Malformed`] for
/// a cut blob or an unknown format.
pub fn sealed_header(blob: &[u8]) -> Result<SealedHeader, SealError> {
    if !is_sealed_blob(blob) {
        return Err(SealError::NotSealed);
    }
    if blob.len() < HEADER_LEN + TAG_LEN {
        return Err(SealError::Malformed("shorter than a header and a tag"));
    }
    if blob[4] != FORMAT {
        return Err(SealError::Malformed("unknown format version"));
    }
    let mut kek = [0; 8];
    kek.copy_from_slice(&blob[5..13]);
    let mut version = [0; 8];
    version.copy_from_slice(&blob[13..21]);
    Ok(SealedHeader {
        kek: KekId(kek),
        version: u64::from_be_bytes(version),
    })
}

fn associated_data(bound: &[u8], key_name: &str) -> Vec<u8> {
    let mut ad = Vec::with_capacity(bound.len() + 4 + key_name.len());
    ad.extend_from_slice(bound);
    ad.extend_from_slice(
        &u32::try_from(key_name.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    ad.extend_from_slice(key_name.as_bytes());
    ad
}

/// Seals `plain` under `kek` for the store key `key_name` at `version`.
#[must_use]
pub fn seal_blob(
    kek: &KeyEncryptionKey,
    key_name: &str,
    version: u64,
    nonce: [u8; NONCE_LEN],
    plain: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + plain.len() + TAG_LEN);
    out.extend_from_slice(&MAGIC);
    out.push(FORMAT);
    out.extend_from_slice(&kek.id().0);
    out.extend_from_slice(&version.to_be_bytes());
    let ad = associated_data(&out, key_name);
    out.extend_from_slice(&nonce);
    let cipher = Aes256GcmSiv::new(kek.secret().into());
    let sealed = cipher
        .encrypt(
            &Nonce::from(nonce),
            Payload {
                msg: plain,
                aad: &ad,
            },
        )
        // Encryption fails only for messages of 2^36 bytes; blobs are bounded
        // far below by every backend.
        .unwrap_or_default();
    out.extend_from_slice(&sealed);
    out
}

/// Opens a sealed blob with the first of `keks` it names, checking it was
/// sealed for `key_name`. Returns its header and plaintext.
///
/// # Errors
/// Every [`SealError`] but `Rollback` and `NoRandom`.
pub fn open_blob(
    keks: &[KeyEncryptionKey],
    key_name: &str,
    blob: &[u8],
) -> Result<(SealedHeader, Zeroizing<Vec<u8>>), SealError> {
    let header = sealed_header(blob)?;
    let ad = associated_data(&blob[..BOUND_LEN], key_name);
    let mut nonce = [0; NONCE_LEN];
    nonce.copy_from_slice(&blob[BOUND_LEN..HEADER_LEN]);
    let nonce = &Nonce::from(nonce);
    let mut named = keks.iter().filter(|k| k.id() == header.kek).peekable();
    if named.peek().is_none() {
        return Err(SealError::UnknownKek {
            blob: header.kek,
            configured: keks.iter().map(KeyEncryptionKey::id).collect(),
        });
    }
    for kek in named {
        let cipher = Aes256GcmSiv::new(kek.secret().into());
        let payload = Payload {
            msg: &blob[HEADER_LEN..],
            aad: &ad,
        };
        if let Ok(plain) = cipher.decrypt(nonce, payload) {
            return Ok((header, Zeroizing::new(plain)));
        }
    }
    Err(SealError::DoesNotOpen { blob: header.kek })
}

/// What a [`SealedStore`] remembers between calls.
#[derive(Default)]
struct Seen {
    /// The highest version opened or written.
    highest: Option<u64>,
    /// The sealed bytes last loaded or written, to compare-and-swap against.
    sealed: Option<Vec<u8>>,
    /// Their plaintext.
    plain: Option<Zeroizing<Vec<u8>>>,
}

/// A store whose blob is sealed under a key-encryption key (see the module
/// doc). `load` returns the opened plaintext, `compare_and_swap` takes and
/// compares plaintexts and writes sealed bytes under the current KEK.
pub struct SealedStore {
    inner: Arc<dyn MasterKeyStore>,
    key_name: String,
    /// The current KEK first, then the others accepted for reading.
    keks: Vec<KeyEncryptionKey>,
    seal_plaintext: bool,
    seen: Mutex<Seen>,
}

impl fmt::Debug for SealedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealedStore")
            .field("inner", &self.inner)
            .field("key_name", &self.key_name)
            .field("keks", &self.keks)
            .finish_non_exhaustive()
    }
}

impl SealedStore {
    /// Seals what goes to `inner` under `current`, binding `key_name` (the
    /// store's key or item name, or the embedded file's path: see
    /// [`store_key_name`]); blobs sealed under `current` or any of `accepted`
    /// are opened.
    #[must_use]
    pub fn new(
        inner: Arc<dyn MasterKeyStore>,
        key_name: &str,
        current: KeyEncryptionKey,
        accepted: Vec<KeyEncryptionKey>,
    ) -> Self {
        let mut keks = vec![current];
        keks.extend(accepted);
        Self {
            inner,
            key_name: key_name.to_owned(),
            keks,
            seal_plaintext: false,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Migration from an unsealed store: a plaintext blob found by `load` is
    /// sealed in place (compare-and-swap, so a concurrent writer wins) instead
    /// of refused.
    #[must_use]
    pub fn seal_plaintext(mut self, on: bool) -> Self {
        self.seal_plaintext = on;
        self
    }

    /// The KEK blobs are written under.
    #[must_use]
    pub fn current_kek(&self) -> KekId {
        self.keks[0].id()
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next version to write: above everything seen, and at least the
    /// Unix time in microseconds.
    fn next_version(&self, seen: &Seen) -> u64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        seen.highest.map_or(0, |h| h.saturating_add(1)).max(now)
    }

    fn seal(&self, version: u64, plain: &[u8]) -> Result<Vec<u8>, StoreError> {
        let mut nonce = [0; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| StoreError::Sealing(SealError::NoRandom))?;
        Ok(seal_blob(
            &self.keks[0],
            &self.key_name,
            version,
            nonce,
            plain,
        ))
    }

    /// Seals a plaintext blob found in the store in place (migration).
    fn migrate(&self, seen: &mut Seen, plain: Vec<u8>) -> Result<Option<Vec<u8>>, StoreError> {
        let version = self.next_version(seen);
        let sealed = self.seal(version, &plain)?;
        if !self.inner.compare_and_swap(Some(&plain), &sealed)? {
            // Someone else wrote first: open what they wrote.
            return self.load_into(seen, false);
        }
        seen.highest = Some(version);
        seen.sealed = Some(sealed);
        seen.plain = Some(Zeroizing::new(plain.clone()));
        Ok(Some(plain))
    }

    fn load_into(&self, seen: &mut Seen, may_migrate: bool) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(raw) = self.inner.load()? else {
            seen.sealed = None;
            seen.plain = None;
            return Ok(None);
        };
        if seen.sealed.as_deref() == Some(&raw[..])
            && let Some(plain) = &seen.plain
        {
            return Ok(Some(plain.to_vec()));
        }
        if !is_sealed_blob(&raw) {
            if self.seal_plaintext && may_migrate {
                return self.migrate(seen, raw);
            }
            return Err(StoreError::Sealing(SealError::NotSealed));
        }
        let (header, plain) =
            open_blob(&self.keks, &self.key_name, &raw).map_err(StoreError::Sealing)?;
        if let Some(highest) = seen.highest
            && header.version < highest
        {
            return Err(StoreError::Sealing(SealError::Rollback {
                seen: highest,
                found: header.version,
            }));
        }
        seen.highest = Some(header.version);
        seen.sealed = Some(raw);
        seen.plain = Some(plain.clone());
        Ok(Some(plain.to_vec()))
    }
}

impl MasterKeyStore for SealedStore {
    fn load(&self) -> Result<Option<Vec<u8>>, StoreError> {
        let mut seen = self.seen();
        self.load_into(&mut seen, true)
    }

    fn compare_and_swap(&self, expected: Option<&[u8]>, new: &[u8]) -> Result<bool, StoreError> {
        let mut seen = self.seen();
        let expected_sealed = match expected {
            None => None,
            Some(plain) => {
                if seen.plain.as_deref().map(Vec::as_slice) != Some(plain) {
                    // Not what was loaded last: look again.
                    if self.load_into(&mut seen, false)?.as_deref() != Some(plain) {
                        return Ok(false);
                    }
                }
                seen.sealed.clone()
            }
        };
        let version = self.next_version(&seen);
        let sealed = self.seal(version, new)?;
        if !self
            .inner
            .compare_and_swap(expected_sealed.as_deref(), &sealed)?
        {
            return Ok(false);
        }
        seen.highest = Some(version);
        seen.sealed = Some(sealed);
        seen.plain = Some(Zeroizing::new(new.to_vec()));
        Ok(true)
    }

    fn describe(&self) -> String {
        format!(
            "{} (sealed, kek {})",
            self.inner.describe(),
            self.keks[0].id()
        )
    }
}

/// The name a blob is bound to when sealed, from a store location as
/// [`super::open_store`] takes it: the key name of a Redis URL (its `key`
/// parameter, the default otherwise), the item name of a memcached URL, the
/// path of the embedded store. Host, port and database are left out, so that
/// servers reaching one store under different addresses (or a new master
/// after a failover) agree on it.
#[must_use]
pub fn store_key_name(location: &str) -> String {
    let default = super::DEFAULT_KEY_NAME;
    let Some((scheme, rest)) = location.split_once("://") else {
        return location
            .strip_prefix("file:")
            .unwrap_or(location)
            .to_owned();
    };
    if scheme == "memcached" {
        return match rest.split_once('/') {
            Some((_, key)) if !key.is_empty() => key.to_owned(),
            _ => default.to_owned(),
        };
    }
    rest.split_once('?')
        .and_then(|(_, query)| {
            query
                .split('&')
                .find_map(|p| p.strip_prefix("key="))
                .filter(|k| !k.is_empty())
        })
        .unwrap_or(default)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::EmbeddedStore;
    use authtime_scratch::ScratchDir;

    fn kek(byte: u8) -> KeyEncryptionKey {
        KeyEncryptionKey::from_bytes([byte; 32])
    }

    /// The directory (removed when dropped) and an embedded store in it.
    fn scratch(name: &str) -> (ScratchDir, Arc<dyn MasterKeyStore>) {
        let dir = ScratchDir::new(&format!("sealed-{name}"));
        let store = Arc::new(EmbeddedStore::new(dir.path("ring")));
        (dir, store)
    }

    fn sealed(inner: &Arc<dyn MasterKeyStore>, current: u8, accepted: &[u8]) -> SealedStore {
        SealedStore::new(
            Arc::clone(inner),
            "ring",
            kek(current),
            accepted.iter().map(|b| kek(*b)).collect(),
        )
    }

    const SECRET: &[u8] = b"ATNK the master keys 0123456789abcdef";

    #[test]
    fn seal_then_open_gives_the_plaintext_back() {
        let blob = seal_blob(&kek(1), "k", 42, [9; 12], SECRET);
        let (header, plain) = open_blob(&[kek(1)], "k", &blob).expect("opens");
        assert_eq!(header.version, 42);
        assert_eq!(header.kek, kek(1).id());
        assert_eq!(&plain[..], SECRET);
        assert!(!blob.windows(8).any(|w| SECRET.windows(8).any(|s| s == w)));
    }

    #[test]
    fn the_wrong_kek_or_another_key_name_does_not_open() {
        let blob = seal_blob(&kek(1), "k", 1, [0; 12], SECRET);
        let e = open_blob(&[kek(2), kek(3)], "k", &blob).expect_err("unknown kek");
        assert_eq!(
            e,
            SealError::UnknownKek {
                blob: kek(1).id(),
                configured: vec![kek(2).id(), kek(3).id()],
            }
        );
        assert!(e.to_string().contains(&kek(1).id().to_string()));
        assert!(e.to_string().contains(&kek(3).id().to_string()));
        assert_eq!(
            open_blob(&[kek(1)], "other", &blob).map(|_| ()),
            Err(SealError::DoesNotOpen { blob: kek(1).id() })
        );
    }

    #[test]
    fn every_changed_byte_makes_the_blob_fail() {
        let blob = seal_blob(&kek(1), "k", 7, [3; 12], SECRET);
        for i in 0..blob.len() {
            let mut bad = blob.clone();
            bad[i] ^= 0x01;
            assert!(open_blob(&[kek(1)], "k", &bad).is_err(), "byte {i}");
        }
    }

    #[test]
    fn malformed_blobs_are_errors_not_panics() {
        let blob = seal_blob(&kek(1), "k", 7, [3; 12], SECRET);
        for len in 0..blob.len() {
            assert!(open_blob(&[kek(1)], "k", &blob[..len]).is_err(), "{len}");
        }
        let mut future = blob.clone();
        future[4] = 2;
        assert_eq!(
            sealed_header(&future),
            Err(SealError::Malformed("unknown format version"))
        );
        assert_eq!(sealed_header(b"ATNK"), Err(SealError::NotSealed));
        assert!(open_blob(&[], "k", &blob).is_err());
    }

    #[test]
    fn the_store_sees_only_sealed_bytes_and_callers_only_plaintext() {
        let (_dir, inner) = scratch("roundtrip");
        let store = sealed(&inner, 1, &[]);
        assert_eq!(store.load().expect("load"), None);
        assert!(store.compare_and_swap(None, SECRET).expect("cas"));
        let raw = inner.load().expect("raw").expect("written");
        assert!(is_sealed_blob(&raw));
        assert_eq!(store.load().expect("load").as_deref(), Some(SECRET));
        assert!(!store.compare_and_swap(Some(b"stale"), b"x").expect("cas"));
        assert!(store.compare_and_swap(Some(SECRET), b"next").expect("cas"));
        // A second server (fresh state) follows.
        let other = sealed(&inner, 1, &[]);
        assert_eq!(other.load().expect("load").as_deref(), Some(&b"next"[..]));
        assert!(
            other
                .compare_and_swap(Some(b"next"), b"third")
                .expect("cas")
        );
        assert_eq!(store.load().expect("load").as_deref(), Some(&b"third"[..]));
        let v = |raw: &[u8]| sealed_header(raw).expect("header").version;
        let third = inner.load().expect("raw").expect("blob");
        assert!(v(&third) > v(&raw), "versions grow");
    }

    #[test]
    fn an_older_blob_put_back_is_refused_and_left_alone() {
        let (_dir, inner) = scratch("rollback");
        let store = sealed(&inner, 1, &[]);
        assert!(store.compare_and_swap(None, b"old").expect("cas"));
        let old = inner.load().expect("raw").expect("blob");
        assert!(store.compare_and_swap(Some(b"old"), b"new").expect("cas"));
        let new = inner.load().expect("raw").expect("blob");
        assert!(inner.compare_and_swap(Some(&new), &old).expect("replay"));
        let e = store.load().expect_err("rollback");
        assert!(
            matches!(e, StoreError::Sealing(SealError::Rollback { .. })),
            "{e}"
        );
        assert!(!store.compare_and_swap(Some(b"new"), b"x").expect("cas"));
        assert_eq!(inner.load().expect("raw"), Some(old.clone()), "untouched");
        // A fresh server has seen nothing and accepts the valid old blob.
        assert_eq!(
            sealed(&inner, 1, &[]).load().expect("fresh").as_deref(),
            Some(&b"old"[..])
        );
    }

    #[test]
    fn plaintext_is_refused_unless_migration_is_on() {
        let (_dir, inner) = scratch("plain");
        assert!(inner.compare_and_swap(None, SECRET).expect("plain"));
        let store = sealed(&inner, 1, &[]);
        assert_eq!(store.load(), Err(StoreError::Sealing(SealError::NotSealed)));
        assert_eq!(inner.load().expect("raw").as_deref(), Some(SECRET));
        let migrating = sealed(&inner, 1, &[]).seal_plaintext(true);
        assert_eq!(migrating.load().expect("load").as_deref(), Some(SECRET));
        let raw = inner.load().expect("raw").expect("blob");
        assert!(is_sealed_blob(&raw), "sealed in place");
        assert_eq!(store.load().expect("load").as_deref(), Some(SECRET));
    }

    #[test]
    fn an_accepted_kek_opens_and_writes_use_the_current_one() {
        let (_dir, inner) = scratch("accepted");
        let old = sealed(&inner, 1, &[]);
        assert!(old.compare_and_swap(None, b"ring").expect("cas"));
        let new = sealed(&inner, 2, &[1]);
        assert_eq!(new.load().expect("load").as_deref(), Some(&b"ring"[..]));
        assert!(new.compare_and_swap(Some(b"ring"), b"ring2").expect("cas"));
        let raw = inner.load().expect("raw").expect("blob");
        assert_eq!(sealed_header(&raw).expect("header").kek, kek(2).id());
        let e = old.load().expect_err("old alone cannot open");
        assert!(e.to_string().contains(&kek(2).id().to_string()), "{e}");
    }

    #[test]
    fn key_names_come_from_every_location_kind() {
        for (location, name) in [
            ("redis://127.0.0.1:7000/2?key=ring", "ring"),
            ("redis://:pw@localhost", crate::store::DEFAULT_KEY_NAME),
            ("rediss://h:1/0?key=a&ca=/etc/ca.pem", "a"),
            ("redis+sentinel://a,b:26380/mymaster/2?key=k", "k"),
            ("memcached://[::1]:11300/k", "k"),
            ("memcached://h", crate::store::DEFAULT_KEY_NAME),
            ("/var/lib/authtime/nts-keys", "/var/lib/authtime/nts-keys"),
            ("file:keys", "keys"),
        ] {
            assert_eq!(store_key_name(location), name, "{location}");
        }
    }
}
