//! The keys a server or client uses: key id → ready-to-use MAC.

use core::fmt;
use std::path::Path;

use authtime_mac::{Mac, MacError};

use crate::{
    KeyFileError, KeyFileErrorKind, KeyFileFormat, KeyFileWarning, KeyMaterial, KeyType,
    ParsedKeyFile, read_key_file,
};

/// One key: its id, its type, and its MAC with the key already set up.
pub struct KeyEntry {
    id: u32,
    key_type: KeyType,
    mac: Box<dyn Mac>,
}

impl KeyEntry {
    /// Sets up the MAC of `key`.
    ///
    /// # Errors
    /// [`MacError::KeyLength`] for a key its type cannot take.
    pub fn new(key: &KeyMaterial) -> Result<Self, MacError> {
        Ok(Self {
            id: key.id(),
            key_type: key.key_type(),
            mac: key.key_type().new_mac(key.secret().expose())?,
        })
    }

    /// The key id.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The key type.
    #[must_use]
    pub fn key_type(&self) -> KeyType {
        self.key_type
    }

    /// The MAC, keyed. Its key is zeroized when the entry is dropped.
    #[must_use]
    pub fn mac(&self) -> &dyn Mac {
        self.mac.as_ref()
    }
}

impl fmt::Debug for KeyEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyEntry")
            .field("id", &self.id)
            .field("key_type", &self.key_type)
            .field("mac", &self.mac.name())
            .finish_non_exhaustive()
    }
}

/// Keys by id, for looking up the key a packet's MAC names. Immutable once
/// built: a daemon reloads by building a new set and swapping it in.
#[derive(Default)]
pub struct KeySet {
    /// Sorted by id, ids unique.
    entries: Vec<KeyEntry>,
}

impl KeySet {
    /// A set without keys: every MAC names an unknown key.
    #[must_use]
    pub fn empty() -> Self {
        Self::default()
    }

    /// Builds the set from parsed keys. A later key with an id already seen
    /// replaces the earlier one (files are checked for duplicates when parsed).
    ///
    /// # Errors
    /// [`MacError::KeyLength`] for a key its type cannot take.
    pub fn new<'k>(keys: impl IntoIterator<Item = &'k KeyMaterial>) -> Result<Self, MacError> {
        let entries = keys
            .into_iter()
            .map(KeyEntry::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::from_entries(entries))
    }

    fn from_entries(mut entries: Vec<KeyEntry>) -> Self {
        // A stable sort keeps file order among equal ids; keep the last one.
        entries.sort_by_key(|e| e.id);
        entries.reverse();
        entries.dedup_by_key(|e| e.id);
        entries.reverse();
        Self { entries }
    }

    /// Builds the set from a parsed file.
    ///
    /// # Errors
    /// A [`KeyFileError`] naming the file, should a key not fit its MAC (the
    /// parser checks lengths, so this does not happen for parsed files).
    pub fn from_parsed(file: &str, parsed: &ParsedKeyFile) -> Result<Self, KeyFileError> {
        let entries = parsed
            .keys
            .iter()
            .map(|key| {
                KeyEntry::new(key).map_err(|e| KeyFileError {
                    file: file.to_owned(),
                    line: None,
                    kind: KeyFileErrorKind::UnusableKey {
                        id: key.id(),
                        reason: e.to_string(),
                    },
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::from_entries(entries))
    }

    /// Reads, checks and sets up the keys of the file at `path`, in `format`
    /// or the detected one.
    ///
    /// # Errors
    /// The file cannot be read, or a line is malformed.
    pub fn load(
        path: &Path,
        format: Option<KeyFileFormat>,
    ) -> Result<(Self, Vec<KeyFileWarning>), KeyFileError> {
        let parsed = read_key_file(path, format)?;
        let set = Self::from_parsed(&path.display().to_string(), &parsed)?;
        Ok((set, parsed.warnings))
    }

    /// The key with id `id`.
    #[must_use]
    pub fn get(&self, id: u32) -> Option<&KeyEntry> {
        self.entries
            .binary_search_by_key(&id, |e| e.id)
            .ok()
            .and_then(|i| self.entries.get(i))
    }

    /// The keys, by increasing id.
    pub fn iter(&self) -> impl Iterator<Item = &KeyEntry> {
        self.entries.iter()
    }

    /// Number of keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the set has no keys.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl fmt::Debug for KeySet {
    /// Ids and types only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|e| (e.id, e.key_type)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_keys_up_by_id() {
        let keys = [
            KeyMaterial::new(9, KeyType::Sha1, &[1; 20]),
            KeyMaterial::new(2, KeyType::Aes128Cmac, &[2; 16]),
            KeyMaterial::new(2, KeyType::Md5, &[3; 16]),
        ];
        let set = KeySet::new(&keys).expect("set");
        assert_eq!(set.len(), 2);
        assert_eq!(set.get(2).map(KeyEntry::key_type), Some(KeyType::Md5));
        assert_eq!(set.get(9).map(|e| e.mac().tag_len()), Some(20));
        assert!(set.get(3).is_none());
        assert!(KeySet::empty().get(1).is_none());
        let ids: Vec<u32> = set.iter().map(KeyEntry::id).collect();
        assert_eq!(ids, [2, 9]);
    }

    #[test]
    fn debug_shows_ids_and_types_never_keys() {
        let set = KeySet::new(&[KeyMaterial::new(5, KeyType::Md5, &[0xab; 16])]).expect("set");
        let shown = format!("{set:?} {:?}", set.get(5));
        assert_eq!(format!("{set:?}"), "{5: Md5}");
        assert!(!shown.contains("ab, ") && !shown.contains("171"), "{shown}");
    }

    #[test]
    fn refuses_a_key_its_mac_cannot_take() {
        assert!(KeySet::new(&[KeyMaterial::new(1, KeyType::Aes128Cmac, &[0; 5])]).is_err());
    }
}
