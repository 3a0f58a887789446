//! Generates the files that document and complete authtime's commands, for
//! packages to install:
//!
//! - `dist/man/`: `authtimed.8` and `authtime.1` with one page per
//!   subcommand (`authtime-nts-cert.1`, as git does), all from the clap
//!   definitions ([`man_pages`]), and `authtimed.toml.5` from
//!   [`config_reference`], the one table of every configuration key
//!   ([`config_page`]);
//! - `dist/completions/`: bash, zsh and fish completions of both commands
//!   ([`completions`]).
//!
//! The output is deterministic (no dates), so that the files can be committed
//! and a test can fail when they are out of date. This crate writes files; it
//! does not install them, and it is not published.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

pub mod completions;
pub mod config_page;
pub mod config_reference;
pub mod interop_matrix;
pub mod man_pages;
mod roff_blocks;

/// The command that rewrites the committed files.
pub const REGENERATE_COMMAND: &str = "cargo run -p authtime-docgen";

/// The folders of `dist/` that hold only generated files: the generator
/// writes every file in them and removes any other.
pub const GENERATED_DIRS: [&str; 2] = ["man", "completions"];

/// One generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Its path under `dist/`, with `/` separators (`man/authtimed.8`).
    pub path: String,
    /// Its contents.
    pub bytes: Vec<u8>,
}

impl GeneratedFile {
    fn new(dir: &str, name: impl AsRef<str>, bytes: Vec<u8>) -> Self {
        Self {
            path: format!("{dir}/{}", name.as_ref()),
            bytes,
        }
    }
}

/// Every file, man pages first, in a fixed order.
#[must_use]
pub fn generate_all() -> Vec<GeneratedFile> {
    let mut files = man_pages::all_pages();
    files.push(config_page::page());
    files.extend(completions::all_completions());
    files
}

/// `dist/` of this workspace.
#[must_use]
pub fn workspace_dist_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .unwrap_or(manifest)
        .join("dist")
}

/// What [`write_all`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Files created or changed.
    pub written: Vec<String>,
    /// Files left as they were.
    pub unchanged: usize,
    /// Files removed from the generated folders (no longer generated).
    pub removed: Vec<String>,
}

/// Writes `files` under `dist`, leaving files whose contents are already
/// right untouched, and removes every other file from [`GENERATED_DIRS`].
///
/// # Errors
/// The first file or folder that cannot be read, written or removed.
pub fn write_all(dist: &Path, files: &[GeneratedFile]) -> io::Result<WriteReport> {
    let mut report = WriteReport::default();
    for dir in GENERATED_DIRS {
        std::fs::create_dir_all(dist.join(dir))?;
    }
    for file in files {
        let path = dist.join(&file.path);
        if std::fs::read(&path).is_ok_and(|old| old == file.bytes) {
            report.unchanged += 1;
        } else {
            std::fs::write(&path, &file.bytes)?;
            report.written.push(file.path.clone());
        }
    }
    let wanted: BTreeSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    for path in files_in_generated_dirs(dist)? {
        if !wanted.contains(path.as_str()) {
            std::fs::remove_file(dist.join(&path))?;
            report.removed.push(path);
        }
    }
    Ok(report)
}

/// How a committed file differs from the generated one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// Generated, but not committed.
    Missing(String),
    /// Both exist with different contents.
    Differs(String),
    /// Committed, but no longer generated.
    Extra(String),
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing(p) => write!(f, "dist/{p} is missing"),
            Self::Differs(p) => write!(f, "dist/{p} is out of date"),
            Self::Extra(p) => write!(f, "dist/{p} is no longer generated"),
        }
    }
}

/// Compares the generated folders of `generated` (a fresh output) with
/// those of `committed` (`dist/`).
///
/// # Errors
/// A folder or file that cannot be read.
pub fn compare_dirs(generated: &Path, committed: &Path) -> io::Result<Vec<Difference>> {
    let new = files_in_generated_dirs(generated)?;
    let old = files_in_generated_dirs(committed)?;
    let mut differences = Vec::new();
    for path in new.union(&old) {
        match (new.contains(path), old.contains(path)) {
            (true, false) => differences.push(Difference::Missing(path.clone())),
            (false, _) => differences.push(Difference::Extra(path.clone())),
            (true, true) => {
                if std::fs::read(generated.join(path))? != std::fs::read(committed.join(path))? {
                    differences.push(Difference::Differs(path.clone()));
                }
            }
        }
    }
    Ok(differences)
}

/// The files in [`GENERATED_DIRS`] under `dist`, as `dir/name`; a folder
/// that does not exist has none.
fn files_in_generated_dirs(dist: &Path) -> io::Result<BTreeSet<String>> {
    let mut found = BTreeSet::new();
    for dir in GENERATED_DIRS {
        let entries = match std::fs::read_dir(dist.join(dir)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                found.insert(format!("{dir}/{}", entry.file_name().to_string_lossy()));
            }
        }
    }
    Ok(found)
}
