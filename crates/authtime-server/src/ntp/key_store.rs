//! The current key set, replaced whole on reload while workers keep serving.
//!
//! Workers hold an `Arc<KeySet>` and compare a generation number once per
//! batch; only when it changed do they take the lock and clone the new `Arc`.
//! A reload that fails leaves the old keys in place.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use authtime_keys::{KeyFileError, KeyFileWarning, KeySet};

use crate::config::KeySource;

/// The keys workers verify and sign with.
#[derive(Debug)]
pub struct KeyStore {
    source: Option<KeySource>,
    generation: AtomicU64,
    current: Mutex<Arc<KeySet>>,
}

impl KeyStore {
    /// Loads the keys of `source` (none: an empty set, plain NTP only).
    ///
    /// # Errors
    /// The key file cannot be read or has a malformed line.
    pub fn load(source: Option<KeySource>) -> Result<(Self, Vec<KeyFileWarning>), KeyFileError> {
        let (keys, warnings) = read(source.as_ref())?;
        Ok((
            Self {
                source,
                generation: AtomicU64::new(0),
                current: Mutex::new(Arc::new(keys)),
            },
            warnings,
        ))
    }

    /// A store holding `keys`, with no file to reload from.
    #[must_use]
    pub fn fixed(keys: KeySet) -> Self {
        Self {
            source: None,
            generation: AtomicU64::new(0),
            current: Mutex::new(Arc::new(keys)),
        }
    }

    /// Reads the key file again and, if it is valid, makes its keys current.
    /// Returns the number of keys and the file's warnings.
    ///
    /// # Errors
    /// The file cannot be read or has a malformed line; the old keys stay.
    pub fn reload(&self) -> Result<(usize, Vec<KeyFileWarning>), KeyFileError> {
        let (keys, warnings) = read(self.source.as_ref())?;
        let count = keys.len();
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(keys);
        self.generation.fetch_add(1, Ordering::Release);
        Ok((count, warnings))
    }

    /// Changes with every successful reload.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current keys.
    #[must_use]
    pub fn current(&self) -> Arc<KeySet> {
        Arc::clone(&self.current.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The key file, if any.
    #[must_use]
    pub fn source(&self) -> Option<&KeySource> {
        self.source.as_ref()
    }
}

fn read(source: Option<&KeySource>) -> Result<(KeySet, Vec<KeyFileWarning>), KeyFileError> {
    match source {
        None => Ok((KeySet::empty(), Vec::new())),
        Some(s) => KeySet::load(&s.path, s.format),
    }
}

/// A worker's view of the store: the keys as of the last batch.
#[derive(Debug)]
pub(crate) struct KeyView {
    generation: u64,
    keys: Arc<KeySet>,
}

impl KeyView {
    pub(crate) fn new(store: &KeyStore) -> Self {
        let generation = store.generation();
        Self {
            generation,
            keys: store.current(),
        }
    }

    /// The current keys, refreshed if a reload happened since the last call.
    pub(crate) fn refresh(&mut self, store: &KeyStore) -> &KeySet {
        let generation = store.generation();
        if generation != self.generation {
            self.generation = generation;
            self.keys = store.current();
        }
        &self.keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reload_swaps_valid_files_and_keeps_old_keys_on_error() {
        let dir = std::env::temp_dir().join(format!("authtime-keystore-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("chrony.keys");
        std::fs::write(
            &path,
            "1 SHA1 HEX:00112233445566778899AABBCCDDEEFF00112233\n",
        )
        .expect("write");
        let source = KeySource {
            path: path.clone(),
            format: None,
        };
        let (store, _) = KeyStore::load(Some(source)).expect("load");
        let mut view = KeyView::new(&store);
        assert!(view.refresh(&store).get(1).is_some());

        std::fs::write(&path, "2 AES128 HEX:00112233445566778899AABBCCDDEEFF\n").expect("write");
        assert_eq!(store.reload().expect("reload").0, 1);
        let keys = view.refresh(&store);
        assert!(keys.get(1).is_none() && keys.get(2).is_some());

        std::fs::write(&path, "3 NOPE 1234\n").expect("write");
        let err = store.reload().expect_err("malformed");
        assert_eq!(err.line, Some(1));
        assert!(view.refresh(&store).get(2).is_some(), "old keys kept");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
