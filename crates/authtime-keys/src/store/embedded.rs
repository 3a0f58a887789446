//! The default store: one file on local disk.
//!
//! A write goes to a temporary file in the same directory (mode 0600), is
//! flushed to disk, renamed over the old file, and the directory is flushed,
//! so a crash at any point leaves either the old or the new content (and the
//! temporary file of a writer killed before its rename is removed by the
//! next write). An
//! advisory lock on a sibling `.lock` file makes compare-and-swap atomic
//! between processes of one machine.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use super::{MasterKeyStore, StoreError};

/// A blob kept in one local file.
#[derive(Debug, Clone)]
pub struct EmbeddedStore {
    path: PathBuf,
}

impl EmbeddedStore {
    /// A store at `path` (the file need not exist yet; its directory must).
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Where the blob lives.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> Result<File, StoreError> {
        let mut lock_path = self.path.clone().into_os_string();
        lock_path.push(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| io_error(Path::new(&lock_path), &e))?;
        file.lock()
            .map_err(|e| io_error(Path::new(&lock_path), &e))?;
        Ok(file)
    }

    fn read(&self) -> Result<Option<Vec<u8>>, StoreError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&self.path, &e)),
        }
    }

    /// Removes the temporary files (`NAME.tmp.PID`) of writers that died
    /// between creating and renaming theirs (`kill -9`, a power cut): every
    /// writer holds the lock from creation to rename, so under the lock any
    /// such file is stale. Left alone they would pile up, one per crash,
    /// and take space on a small disk. Best effort: a failure is ignored.
    fn remove_stale_temporaries(&self) {
        let (Some(dir), Some(name)) = (self.path.parent(), self.path.file_name()) else {
            return;
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let mut prefix = name.to_os_string();
        prefix.push(".tmp.");
        let prefix = prefix.as_encoded_bytes();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let file_name = entry.file_name();
            let is_ours = file_name
                .as_encoded_bytes()
                .strip_prefix(prefix)
                .is_some_and(|pid| !pid.is_empty() && pid.iter().all(u8::is_ascii_digit));
            if is_ours {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn write_atomically(&self, bytes: &[u8]) -> Result<(), StoreError> {
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(format!(".tmp.{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let result = (|| {
            let mut file = OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            drop(file);
            std::fs::rename(&tmp, &self.path)?;
            File::open(&dir)?.sync_all()
        })();
        result.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io_error(&self.path, &e)
        })
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> StoreError {
    StoreError::Io(format!("{}: {e}", path.display()))
}

impl MasterKeyStore for EmbeddedStore {
    fn load(&self) -> Result<Option<Vec<u8>>, StoreError> {
        self.read()
    }

    fn compare_and_swap(&self, expected: Option<&[u8]>, new: &[u8]) -> Result<bool, StoreError> {
        let _lock = self.lock()?;
        let current = self.read()?;
        if current.as_deref() != expected {
            return Ok(false);
        }
        self.remove_stale_temporaries();
        self.write_atomically(new)?;
        Ok(true)
    }

    fn describe(&self) -> String {
        format!("embedded:{}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_scratch::ScratchDir;
    use std::os::unix::fs::PermissionsExt as _;

    /// The directory (removed when dropped) and the store's file in it.
    fn scratch(name: &str) -> (ScratchDir, PathBuf) {
        let dir = ScratchDir::new(&format!("embedded-{name}"));
        let ring = dir.path("ring");
        (dir, ring)
    }

    #[test]
    fn compare_and_swap_follows_the_expected_value() {
        let (_dir, path) = scratch("cas");
        let store = EmbeddedStore::new(path);
        assert_eq!(store.load().expect("load"), None);
        assert!(!store.compare_and_swap(Some(b"x"), b"a").expect("cas"));
        assert!(store.compare_and_swap(None, b"a").expect("cas"));
        assert!(!store.compare_and_swap(None, b"b").expect("cas"));
        assert!(!store.compare_and_swap(Some(b"b"), b"c").expect("cas"));
        assert!(store.compare_and_swap(Some(b"a"), b"c").expect("cas"));
        assert_eq!(store.load().expect("load").as_deref(), Some(&b"c"[..]));
    }

    #[test]
    fn the_file_is_private_and_no_temporary_file_remains() {
        let (_dir, path) = scratch("mode");
        let store = EmbeddedStore::new(&path);
        assert!(store.compare_and_swap(None, b"secret").expect("cas"));
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
            .expect("dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert!(names.iter().all(|n| !n.to_string_lossy().contains(".tmp.")));
    }

    #[test]
    fn temporary_files_of_dead_writers_are_removed_by_the_next_write() {
        let (_dir, path) = scratch("stale");
        let dir = path.parent().expect("dir").to_path_buf();
        for name in [
            "ring.tmp.4242",
            "ring.tmp.1",
            "ring.tmp.x",
            "ring.other.tmp.7",
            "other",
        ] {
            std::fs::write(dir.join(name), b"half").expect("write");
        }
        let store = EmbeddedStore::new(&path);
        assert!(store.compare_and_swap(None, b"a").expect("cas"));
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "other",
                "ring",
                "ring.lock",
                "ring.other.tmp.7",
                "ring.tmp.x"
            ]
        );
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_panic() {
        let store = EmbeddedStore::new("/nonexistent-authtime-dir/ring");
        assert!(matches!(
            store.compare_and_swap(None, b"a"),
            Err(StoreError::Io(_))
        ));
    }
}
