//! What the `authtimed` tests share: the binary, scratch directories, a
//! guard that kills a daemon left running, and who the tests run as.

#![allow(dead_code, reason = "each test file uses its own part of the support")]

use std::path::PathBuf;
use std::process::{Child, Command};

/// The `authtimed` binary of this build.
pub(crate) fn authtimed() -> Command {
    Command::new(env!("CARGO_BIN_EXE_authtimed"))
}

/// Whether the tests run as root (CI does).
pub(crate) fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    })
}

/// Started as root, the daemon switches user: to `nobody`, which every
/// Debian system has, rather than `authtime`, which the package creates.
pub(crate) fn identity_args() -> &'static [&'static str] {
    if running_as_root() {
        &["--user", "nobody"]
    } else {
        &[]
    }
}

/// A fresh scratch directory for one test.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("authtimed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// Kills the daemon if a test fails before it stops.
pub(crate) struct Guard(pub(crate) Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}
