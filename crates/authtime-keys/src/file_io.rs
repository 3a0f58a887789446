//! The crate's only I/O: reading a key file (with a look at its permissions)
//! and creating a new one that only its owner can read.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;

use zeroize::Zeroizing;

use crate::{
    KeyFileError, KeyFileErrorKind, KeyFileFormat, KeyFileWarning, ParsedKeyFile, WarningKind,
    parse_key_file,
};

/// Reads and parses the key file at `path`, in `format` or the detected one.
/// Besides the parser's warnings, warns when users other than the owner may
/// read or write the file.
///
/// # Errors
/// The file cannot be read, or a line is malformed.
pub fn read_key_file(
    path: &Path,
    format: Option<KeyFileFormat>,
) -> Result<ParsedKeyFile, KeyFileError> {
    let name = path.display().to_string();
    let io_error = |e: std::io::Error| KeyFileError {
        file: name.clone(),
        line: None,
        kind: KeyFileErrorKind::Io(e.to_string()),
    };
    let text = Zeroizing::new(std::fs::read(path).map_err(io_error)?);
    let mut parsed = parse_key_file(&name, &text, format)?;
    if let Some(mode) = loose_permissions(path) {
        parsed.warnings.push(KeyFileWarning {
            file: name,
            line: None,
            kind: WarningKind::LoosePermissions { mode },
        });
    }
    Ok(parsed)
}

/// The permission bits of `path` when group or others have any access.
#[cfg(unix)]
fn loose_permissions(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o7777;
    (mode & 0o077 != 0).then_some(mode)
}

#[cfg(not(unix))]
fn loose_permissions(_path: &Path) -> Option<u32> {
    None
}

/// Creates a new file at `path` with `contents`, readable and writable by its
/// owner only (mode 0600 on Unix). Refuses to overwrite an existing file.
///
/// # Errors
/// The file exists or cannot be created or written.
pub fn create_key_file(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(contents.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("authtime-keys-{}-{name}", std::process::id()))
    }

    #[test]
    fn created_files_are_private_and_read_back_without_warnings() {
        let path = temp_path("private.keys");
        let _ = std::fs::remove_file(&path);
        create_key_file(
            &path,
            "1 SHA1 HEX:00112233445566778899AABBCCDDEEFF00112233\n",
        )
        .expect("create");
        assert!(create_key_file(&path, "").is_err(), "must not overwrite");
        let parsed = read_key_file(&path, None).expect("read");
        assert_eq!(parsed.keys.len(), 1);
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        std::fs::remove_file(&path).expect("cleanup");
    }

    #[cfg(unix)]
    #[test]
    fn world_readable_files_get_a_warning() {
        use std::os::unix::fs::PermissionsExt as _;
        let path = temp_path("loose.keys");
        let _ = std::fs::remove_file(&path);
        std::fs::write(&path, "1 MD5 HEX:00112233445566778899AABBCCDDEEFF\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let parsed = read_key_file(&path, Some(KeyFileFormat::Chrony)).expect("read");
        assert_eq!(
            parsed.warnings.last().map(|w| &w.kind),
            Some(&WarningKind::LoosePermissions { mode: 0o644 })
        );
        std::fs::remove_file(&path).expect("cleanup");
    }

    #[test]
    fn missing_file_is_an_io_error_naming_it() {
        let e = read_key_file(Path::new("/nonexistent/authtime.keys"), None).expect_err("missing");
        assert!(matches!(e.kind, KeyFileErrorKind::Io(_)));
        assert!(e.to_string().starts_with("/nonexistent/authtime.keys: "));
    }
}
