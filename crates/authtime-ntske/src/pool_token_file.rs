//! Reading a pool member's Authentication tokens from their files.
//!
//! Each file holds one token; surrounding whitespace is trimmed and an empty file is an
//! error. The files are secrets: one its group or others can access is refused, as the
//! project's other key files are. Errors name the file, never its content.

use std::fmt;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use zeroize::Zeroizing;

use crate::pool_token::{PoolToken, TokenError};

/// Why the token files could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolTokenFileError {
    /// The file cannot be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: String,
    },
    /// Its group or others have access.
    TooOpen {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Nothing but whitespace.
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Not UTF-8 (the Authentication record carries text).
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// Text, but not one token (more than one word, or too long).
    NotAToken {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: TokenError,
    },
}

impl fmt::Display for PoolTokenFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, error } => write!(f, "pool token file {}: {error}", path.display()),
            Self::TooOpen { path, mode } => write!(
                f,
                "pool token file {} has mode {mode:04o}: its group and others must have no \
                 access (chmod 600)",
                path.display()
            ),
            Self::Empty { path } => write!(f, "pool token file {} is empty", path.display()),
            Self::NotText { path } => {
                write!(f, "pool token file {} is not UTF-8 text", path.display())
            }
            Self::NotAToken { path, reason } => write!(
                f,
                "pool token file {}: {reason} (one token per file)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for PoolTokenFileError {}

/// Reads one token file.
///
/// # Errors
/// Missing, unreadable, too open, empty or not text.
pub fn read_pool_token_file(path: &Path) -> Result<PoolToken, PoolTokenFileError> {
    let io = |e: std::io::Error| PoolTokenFileError::Io {
        path: path.to_path_buf(),
        error: e.to_string(),
    };
    let mode = std::fs::metadata(path).map_err(io)?.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(PoolTokenFileError::TooOpen {
            path: path.to_path_buf(),
            mode,
        });
    }
    let bytes = Zeroizing::new(std::fs::read(path).map_err(io)?);
    let text = std::str::from_utf8(&bytes).map_err(|_| PoolTokenFileError::NotText {
        path: path.to_path_buf(),
    })?;
    PoolToken::new(text).map_err(|reason| match reason {
        TokenError::Empty => PoolTokenFileError::Empty {
            path: path.to_path_buf(),
        },
        reason => PoolTokenFileError::NotAToken {
            path: path.to_path_buf(),
            reason,
        },
    })
}

/// Reads every token file, all or nothing.
///
/// # Errors
/// The first file that cannot be used.
pub fn read_pool_token_files(paths: &[PathBuf]) -> Result<Vec<PoolToken>, PoolTokenFileError> {
    paths.iter().map(|p| read_pool_token_file(p)).collect()
}

/// Modification time and size of each file (`None` for one that cannot be read), to
/// notice replacements.
pub(crate) fn stamps(paths: &[PathBuf]) -> Vec<Option<(SystemTime, u64)>> {
    paths
        .iter()
        .map(|p| {
            let m = std::fs::metadata(p).ok()?;
            Some((m.modified().ok()?, m.len()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_scratch::ScratchDir;

    /// A token file in a directory of its own: the directory (removed when
    /// dropped) and the file.
    fn file(name: &str, content: &[u8], mode: u32) -> (ScratchDir, PathBuf) {
        let dir = ScratchDir::new(&format!("pool-token-{name}"));
        let path = dir.path("token");
        std::fs::write(&path, content).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        (dir, path)
    }

    #[test]
    fn a_private_file_gives_its_trimmed_token() {
        let (_dir, path) = file("ok", b"  s3cret-token\n", 0o600);
        let token = read_pool_token_file(&path).expect("readable");
        assert!(crate::pool_member::PoolTokens::new(vec![token]).accepts(b"s3cret-token"));
    }

    #[test]
    fn open_empty_and_missing_files_are_refused_without_their_content() {
        let (_open_dir, open) = file("open", b"s3cret-token", 0o644);
        let e = read_pool_token_file(&open).expect_err("too open");
        let shown = e.to_string();
        assert!(
            shown.contains("0644") && shown.contains("chmod 600"),
            "{shown}"
        );
        assert!(shown.contains(&open.display().to_string()));
        assert!(!shown.contains("s3cret"));
        let (_group_dir, group) = file("group", b"t", 0o640);
        assert!(matches!(
            read_pool_token_file(&group),
            Err(PoolTokenFileError::TooOpen { mode: 0o640, .. })
        ));
        let (_empty_dir, empty) = file("empty", b" \n\t", 0o600);
        assert!(matches!(
            read_pool_token_file(&empty),
            Err(PoolTokenFileError::Empty { .. })
        ));
        let (_binary_dir, binary) = file("binary", &[0xff, 0xfe], 0o600);
        assert!(matches!(
            read_pool_token_file(&binary),
            Err(PoolTokenFileError::NotText { .. })
        ));
        let (_two_dir, two) = file("two-words", b"two words\n", 0o600);
        let e = read_pool_token_file(&two).expect_err("two words");
        assert!(matches!(
            e,
            PoolTokenFileError::NotAToken {
                reason: crate::pool_token::TokenError::NotOneWord,
                ..
            }
        ));
        assert!(!e.to_string().contains("two words"), "{e}");
        assert!(matches!(
            read_pool_token_file(Path::new("/nonexistent/authtime/pool-token")),
            Err(PoolTokenFileError::Io { .. })
        ));
    }
}
