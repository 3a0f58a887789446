//! Scratch directories for authtime's tests, removed when dropped: when a
//! test ends, and when it fails (the panic unwinds through them). A test
//! dependency only.

use std::path::{Path, PathBuf};

/// A fresh, empty `authtime-NAME-PID` in the system's temporary directory;
/// it dereferences to the directory.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Makes the directory, emptied of what a previous run with the same
    /// process id left.
    ///
    /// # Panics
    /// If the directory cannot be made.
    #[must_use]
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("authtime-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Self(dir)
    }

    /// A path inside.
    #[must_use]
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A path in a [`ScratchDir`] of its own, which it dereferences to; the
/// directory goes when it is dropped.
#[derive(Debug)]
pub struct ScratchFile {
    dir: ScratchDir,
    path: PathBuf,
}

impl ScratchFile {
    /// `inside` in a fresh `authtime-NAME-PID`.
    ///
    /// # Panics
    /// If the directory cannot be made.
    #[must_use]
    pub fn new(name: &str, inside: &str) -> Self {
        let dir = ScratchDir::new(name);
        let path = dir.path(inside);
        Self { dir, path }
    }

    /// The directory it is in.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.dir()
    }
}

impl std::ops::Deref for ScratchFile {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for ScratchFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl From<&ScratchFile> for PathBuf {
    fn from(s: &ScratchFile) -> Self {
        s.path.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_is_gone_after_the_drop() {
        let scratch = ScratchDir::new("scratch-dir-drop");
        let dir = scratch.dir().to_path_buf();
        std::fs::write(scratch.path("file"), b"x").expect("write");
        assert!(dir.is_dir());
        drop(scratch);
        assert!(!dir.exists());
    }

    #[test]
    fn a_scratch_file_takes_its_directory_with_it() {
        let file = ScratchFile::new("scratch-file-drop", "ring");
        std::fs::write(&*file, b"x").expect("write");
        let dir = file.dir().to_path_buf();
        assert_eq!(file.parent(), Some(dir.as_path()));
        drop(file);
        assert!(!dir.exists());
    }
}
