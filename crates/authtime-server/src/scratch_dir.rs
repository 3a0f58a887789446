//! Scratch directories for the unit tests of authtime-server, removed when
//! dropped: when a test ends, and when it fails (the panic unwinds through
//! them).

use std::path::{Path, PathBuf};

/// A fresh `authtime-NAME-PID` in the system's temporary directory, and a
/// path inside it, which it dereferences to.
pub(crate) struct Scratch {
    dir: PathBuf,
    path: PathBuf,
}

impl Scratch {
    /// The directory `authtime-NAME-PID`, emptied, and `inside` in it.
    pub(crate) fn new(name: &str, inside: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("authtime-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let path = dir.join(inside);
        Self { dir, path }
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl From<&Scratch> for PathBuf {
    fn from(s: &Scratch) -> Self {
        s.path.clone()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_is_gone_after_the_drop() {
        let scratch = Scratch::new("server-scratch-drop", "file");
        std::fs::write(&*scratch, b"x").expect("write");
        let dir = scratch.parent().expect("dir").to_path_buf();
        assert!(dir.is_dir());
        drop(scratch);
        assert!(!dir.exists());
    }
}
