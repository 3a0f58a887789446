//! Scratch directories for the unit tests of the `authtime` command, removed
//! when dropped: when a test ends, and when it fails (the panic unwinds
//! through them).

use std::path::{Path, PathBuf};

/// A fresh `authtime-NAME-PID` in the system's temporary directory.
pub(crate) struct ScratchDir(PathBuf);

impl ScratchDir {
    pub(crate) fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("authtime-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Self(dir)
    }

    /// A path inside.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_is_gone_after_the_drop() {
        let scratch = ScratchDir::new("scratch-dir-drop");
        std::fs::write(scratch.path("file"), b"x").expect("write");
        let dir = scratch.dir().to_path_buf();
        assert!(dir.is_dir());
        drop(scratch);
        assert!(!dir.exists());
    }
}
