//! Crash-safe file replacement: write a temporary file in the same directory, fsync it,
//! rename it over the target, fsync the directory. A reader (or a restart after a crash)
//! sees either the old contents or the new ones, never a mix.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Who may read the file: secret key files are created with mode 0600 on Unix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileMode {
    /// Mode 0600: owner read/write only.
    Secret,
    /// Mode 0644.
    Public,
}

fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

fn temp_path_for(path: &Path) -> io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "key file path has no file name",
        )
    })?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".tmp-{}", std::process::id()));
    Ok(directory_of(path).join(temp_name))
}

/// Replaces `path` with `contents` atomically and durably (see the module doc).
pub(crate) fn write_file_atomically(
    path: &Path,
    contents: &[u8],
    mode: FileMode,
) -> io::Result<()> {
    let temp = temp_path_for(path)?;
    // A temp file left by a crashed earlier run with the same pid would block create_new.
    match fs::remove_file(&temp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let result = write_temp_then_rename(&temp, path, contents, mode);
    if result.is_err() {
        // Best effort: the temp file may not exist (or may already be renamed).
        let _ = fs::remove_file(&temp);
    }
    result
}

fn write_temp_then_rename(
    temp: &Path,
    path: &Path,
    contents: &[u8],
    mode: FileMode,
) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(match mode {
            FileMode::Secret => 0o600,
            FileMode::Public => 0o644,
        });
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(temp)?;
    file.write_all(contents)?;
    file.sync_all()?;
    drop(file);
    fs::rename(temp, path)?;
    sync_directory(directory_of(path))
}

/// Makes the rename itself durable.
fn sync_directory(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, File::open);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use authtime_scratch::ScratchDir;

    fn scratch_dir(name: &str) -> ScratchDir {
        ScratchDir::new(&format!("sign-{name}"))
    }

    #[test]
    fn replaces_contents_and_leaves_no_temp_file() {
        let dir = scratch_dir("atomic");
        let path = dir.join("key");
        write_file_atomically(&path, b"one", FileMode::Secret).expect("first write");
        write_file_atomically(&path, b"two", FileMode::Secret).expect("second write");
        assert_eq!(fs::read(&path).expect("read back"), b"two");
        let names: Vec<_> = fs::read_dir(&dir)
            .expect("list")
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        assert_eq!(names.len(), 1, "only the key file remains: {names:?}");
    }

    #[cfg(unix)]
    #[test]
    fn secret_files_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch_dir("mode");
        let path = dir.join("secret");
        write_file_atomically(&path, b"s", FileMode::Secret).expect("write");
        let mode = fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn missing_directory_is_an_error_not_a_panic() {
        let path = std::env::temp_dir().join("authtime-sign-no-such-dir/x/key");
        assert!(write_file_atomically(&path, b"x", FileMode::Public).is_err());
    }
}
