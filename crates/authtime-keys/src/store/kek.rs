//! The fleet's key-encryption key (KEK): 32 secret bytes in a local file,
//! distributed to every server like a TLS private key, under which the
//! master-key blob is sealed before it reaches a shared store
//! ([`super::SealedStore`]).
//!
//! The file is text:
//!
//! ```text
//! authtime key-encryption-key v1
//! # id 1f0c6a9e3b5d7e21 (comments start with #)
//! <64 hex digits>
//! ```
//!
//! The first line is fixed, `#` lines are comments, and exactly one line holds
//! the key. [`read_kek_file`] refuses a file that its group or others may
//! read; [`create_kek_file`] makes it with mode 0600 and never overwrites.
//! No error ever contains the file's content.

use std::fmt;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

/// The file's first line.
pub const KEK_FILE_HEADER: &str = "authtime key-encryption-key v1";

/// Bytes of a key-encryption key (AES-256-GCM-SIV).
pub const KEK_LEN: usize = 32;

/// A key-encryption key's public name: the first 8 bytes of
/// SHA-256("authtime kek id" ‖ key). It names the key in sealed blobs, logs
/// and errors without revealing it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KekId(pub [u8; 8]);

impl fmt::Display for KekId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for KekId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KekId({self})")
    }
}

/// A key-encryption key. Zeroized on drop, hidden from `Debug`.
#[derive(Clone)]
pub struct KeyEncryptionKey {
    key: Zeroizing<[u8; KEK_LEN]>,
    id: KekId,
}

impl fmt::Debug for KeyEncryptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyEncryptionKey({})", self.id)
    }
}

impl KeyEncryptionKey {
    /// The key made of `bytes` (from a CSPRNG).
    #[must_use]
    pub fn from_bytes(bytes: [u8; KEK_LEN]) -> Self {
        let mut hash = Sha256::new();
        hash.update(b"authtime kek id");
        hash.update(bytes);
        let digest = hash.finalize();
        let mut id = [0; 8];
        id.copy_from_slice(&digest[..8]);
        Self {
            key: Zeroizing::new(bytes),
            id: KekId(id),
        }
    }

    /// The key's public id.
    #[must_use]
    pub fn id(&self) -> KekId {
        self.id
    }

    pub(crate) fn secret(&self) -> &[u8; KEK_LEN] {
        &self.key
    }

    /// Parses the text of a KEK file (see the module doc).
    ///
    /// # Errors
    /// [`KekFileError::Malformed`], saying what is wrong but never echoing
    /// the content.
    pub fn parse(text: &[u8]) -> Result<Self, KekFileError> {
        let bad = |why: &'static str| KekFileError::Malformed(why);
        let text = std::str::from_utf8(text).map_err(|_| bad("not UTF-8 text"))?;
        let mut lines = text.lines().map(str::trim);
        if lines.next() != Some(KEK_FILE_HEADER) {
            return Err(bad(
                "the first line is not `authtime key-encryption-key v1`",
            ));
        }
        let mut key = None;
        for line in lines {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if key.is_some() {
                return Err(bad("more than one key line"));
            }
            if line.len() != 2 * KEK_LEN {
                return Err(bad("the key line is not 64 hex digits"));
            }
            let mut bytes = Zeroizing::new([0; KEK_LEN]);
            hex::decode_to_slice(line, &mut bytes[..])
                .map_err(|_| bad("the key line is not 64 hex digits"))?;
            key = Some(Self::from_bytes(*bytes));
        }
        key.ok_or(bad("no key line"))
    }

    /// The file text for this key.
    #[must_use]
    pub fn to_file_text(&self) -> Zeroizing<String> {
        Zeroizing::new(format!(
            "{KEK_FILE_HEADER}\n\
             # id {}: seals the NTS master keys in the key store.\n\
             # Keep it secret (mode 0600), like a TLS private key.\n\
             {}\n",
            self.id,
            hex::encode(self.key.as_slice())
        ))
    }
}

/// Why a KEK file cannot be used. Never contains key material.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KekFileError {
    /// The file could not be read or created.
    Io(String),
    /// Its group or others may read or write it (mode shown in octal).
    TooOpen {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// The content is not a KEK file.
    Malformed(&'static str),
    /// The file is there already (it is never overwritten).
    Exists(String),
}

impl fmt::Display for KekFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(m) => write!(f, "key-encryption key file: {m}"),
            Self::TooOpen { path, mode } => write!(
                f,
                "key-encryption key file {path} has mode {mode:04o}: \
                 its group and others must have no access (chmod 600)"
            ),
            Self::Malformed(why) => write!(f, "malformed key-encryption key file: {why}"),
            Self::Exists(path) => write!(
                f,
                "{path} exists; a key-encryption key file is never overwritten"
            ),
        }
    }
}

impl std::error::Error for KekFileError {}

/// Reads the KEK file at `path`, refusing one its group or others can access.
///
/// # Errors
/// The file is missing or unreadable, too open, or malformed; the message
/// names the file.
pub fn read_kek_file(path: &Path) -> Result<KeyEncryptionKey, KekFileError> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| KekFileError::Io(format!("{shown}: {e}")))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KekFileError::TooOpen { path: shown, mode });
    }
    let text =
        Zeroizing::new(std::fs::read(path).map_err(|e| KekFileError::Io(format!("{shown}: {e}")))?);
    KeyEncryptionKey::parse(&text).map_err(|e| match e {
        KekFileError::Malformed(why) => KekFileError::Io(format!("{shown}: malformed: {why}")),
        other => other,
    })
}

/// Creates a KEK file at `path` (mode 0600, never over an existing file)
/// holding the key made of `random` (32 bytes from a CSPRNG, supplied by the
/// caller), and returns the key.
///
/// # Errors
/// The file exists or cannot be written.
pub fn create_kek_file(
    path: &Path,
    random: [u8; KEK_LEN],
) -> Result<KeyEncryptionKey, KekFileError> {
    let shown = path.display().to_string();
    let key = KeyEncryptionKey::from_bytes(random);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => KekFileError::Exists(shown.clone()),
            _ => KekFileError::Io(format!("{shown}: {e}")),
        })?;
    // The umask cannot widen 0600, but set it anyway in case it was narrower
    // than the owner needs.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .and_then(|()| file.write_all(key.to_file_text().as_bytes()))
        .and_then(|()| file.sync_all())
        .map_err(|e| {
            let _ = std::fs::remove_file(path);
            KekFileError::Io(format!("{shown}: {e}"))
        })?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_scratch::ScratchDir;

    /// The directory (removed when dropped) and a KEK file's path in it.
    fn scratch(name: &str) -> (ScratchDir, std::path::PathBuf) {
        let dir = ScratchDir::new(&format!("kek-{name}"));
        let kek = dir.path("kek");
        (dir, kek)
    }

    #[test]
    fn a_created_file_reads_back_as_the_same_key() {
        let (_dir, path) = scratch("roundtrip");
        let made = create_kek_file(&path, [7; 32]).expect("create");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let read = read_kek_file(&path).expect("read");
        assert_eq!(read.id(), made.id());
        assert_eq!(read.secret(), &[7; 32]);
        assert!(!format!("{read:?}").contains("0707"), "Debug hides the key");
        assert_eq!(
            create_kek_file(&path, [8; 32]).map(|k| k.id()),
            Err(KekFileError::Exists(path.display().to_string()))
        );
        assert_eq!(read_kek_file(&path).expect("kept").secret(), &[7; 32]);
    }

    #[test]
    fn a_file_others_can_read_is_refused() {
        let (_dir, path) = scratch("mode");
        create_kek_file(&path, [1; 32]).expect("create");
        for mode in [0o640, 0o604, 0o660, 0o644] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let e = read_kek_file(&path).expect_err("too open");
            assert!(matches!(e, KekFileError::TooOpen { .. }), "{e}");
            assert!(e.to_string().contains("chmod 600"), "{e}");
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).expect("chmod");
        read_kek_file(&path).expect("0400 is fine");
    }

    #[test]
    fn ids_differ_between_keys_and_are_stable() {
        let a = KeyEncryptionKey::from_bytes([1; 32]);
        let b = KeyEncryptionKey::from_bytes([2; 32]);
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id(), KeyEncryptionKey::from_bytes([1; 32]).id());
        assert_eq!(a.id().to_string().len(), 16);
    }

    #[test]
    fn malformed_files_are_errors_that_do_not_echo_the_content() {
        let key = "ab".repeat(32);
        for bad in [
            String::new(),
            key.clone(),
            format!("{KEK_FILE_HEADER}\n"),
            format!("{KEK_FILE_HEADER}\n{}\n", &key[..62]),
            format!("{KEK_FILE_HEADER}\n{key}ab\n"),
            format!("{KEK_FILE_HEADER}\n{}zz\n", &key[..62]),
            format!("{KEK_FILE_HEADER}\n{key}\n{key}\n"),
            format!("authtime key-encryption-key v2\n{key}\n"),
        ] {
            let e = KeyEncryptionKey::parse(bad.as_bytes()).expect_err(&bad);
            assert!(!e.to_string().contains(&key[..16]), "{e}");
        }
        assert!(KeyEncryptionKey::parse(&[0xff, 0xfe]).is_err());
        let good = format!("{KEK_FILE_HEADER}\r\n# comment\n\n  {key}  \n");
        KeyEncryptionKey::parse(good.as_bytes()).expect("comments, blank lines, CRLF");
    }
}
