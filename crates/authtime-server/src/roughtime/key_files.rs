//! Roughtime key files: the long-term seed and the delegation made offline
//! (their text forms are `authtime_roughtime::delegation_file`'s). Both hold
//! secrets: reading refuses a file its group or others can access, writing
//! creates it with mode 0600 and never replaces an existing file.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use authtime_roughtime::SigningKey;
use authtime_roughtime::delegation_file::{Delegation, parse_delegation, parse_seed};
use zeroize::Zeroizing;

/// Reads a private file's text; the error names the file.
fn read_private(path: &Path, what: &str) -> Result<Zeroizing<String>, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("{what} {shown}: {e}"))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{what} {shown} has mode {mode:04o}: its group and others must have no access \
             (chmod 600)"
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{what} {shown}: {e}"))?;
    String::from_utf8(bytes)
        .map(Zeroizing::new)
        .map_err(|_| format!("{what} {shown}: not text"))
}

/// Reads the long-term seed file.
///
/// # Errors
/// Missing, unreadable, too open or malformed (the message names the file,
/// never its content).
pub fn read_long_term_key(path: &Path) -> Result<SigningKey, String> {
    let text = read_private(path, "Roughtime long-term key")?;
    parse_seed(&text).map_err(|e| format!("Roughtime long-term key {}: {e}", path.display()))
}

/// Reads and checks a delegation file.
///
/// # Errors
/// Missing, unreadable, too open, malformed, or certificates that do not verify.
pub fn read_delegation(path: &Path) -> Result<Delegation, String> {
    let text = read_private(path, "Roughtime delegation")?;
    parse_delegation(&text).map_err(|e| format!("Roughtime delegation {}: {e}", path.display()))
}

/// Creates `path` with mode 0600 holding `text`; never over an existing file.
///
/// # Errors
/// The file exists or cannot be written.
pub fn create_private_file(path: &Path, text: &str) -> Result<(), String> {
    let shown = path.display();
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                format!("{shown} exists; a key file is never overwritten")
            }
            _ => format!("{shown}: {e}"),
        })?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .and_then(|()| file.write_all(text.as_bytes()))
        .and_then(|()| file.sync_all())
        .map_err(|e| {
            let _ = std::fs::remove_file(path);
            format!("{shown}: {e}")
        })
}

#[cfg(test)]
mod tests {
    use authtime_roughtime::OnlineKey;
    use authtime_roughtime::delegation_file::{delegation_text, seed_text};

    use super::*;

    /// `name` in a fresh directory, removed when the test ends.
    fn scratch(name: &str) -> authtime_scratch::ScratchFile {
        authtime_scratch::ScratchFile::new(&format!("rt-files-{name}"), name)
    }

    #[test]
    fn a_created_seed_reads_back_once_and_open_files_are_refused() {
        let path = scratch("seed");
        let key = SigningKey::from_bytes(&[5; 32]);
        create_private_file(&path, &seed_text(&key)).expect("created");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            read_long_term_key(&path).expect("reads").to_bytes(),
            key.to_bytes()
        );
        let e = create_private_file(&path, "x").expect_err("no overwrite");
        assert!(e.contains("never overwritten"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let e = read_long_term_key(&path).expect_err("too open");
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::write(&path, "not hex").expect("write");
        let e = read_long_term_key(&path).expect_err("malformed");
        assert!(!e.contains("not hex"), "{e}");
        let scratch_missing = scratch("missing");
        assert!(read_long_term_key(&scratch_missing).is_err());
    }

    #[test]
    fn a_delegation_file_reads_back() {
        let path = scratch("delegation");
        let long_term = SigningKey::from_bytes(&[6; 32]);
        let key = OnlineKey::delegate(&long_term, SigningKey::from_bytes(&[8; 32]), 1, 2)
            .expect("delegated");
        let public = long_term.verifying_key().to_bytes();
        create_private_file(&path, &delegation_text(&public, &key)).expect("created");
        let back = read_delegation(&path).expect("reads");
        assert_eq!((back.long_term_public, back.key.window()), (public, (1, 2)));
    }
}
