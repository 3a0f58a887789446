//! Runs the real `authtime` binary with arguments and standard input, for the
//! integration tests.

use std::{
    io::Write as _,
    path::PathBuf,
    process::{Command, Stdio},
};

/// What one run of the binary did.
#[derive(Debug)]
pub(crate) struct Run {
    /// Exit code.
    pub(crate) code: i32,
    /// Standard output as text.
    pub(crate) stdout: String,
    /// Standard error as text.
    pub(crate) stderr: String,
}

/// Runs `authtime <args>` with `stdin` piped in.
pub(crate) fn authtime(args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_authtime"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start authtime");
    let mut pipe = child.stdin.take().expect("stdin piped");
    // A command that fails before reading closes the pipe early: not an error.
    let _ = pipe.write_all(stdin);
    drop(pipe);
    let out = child.wait_with_output().expect("wait for authtime");
    Run {
        code: out.status.code().expect("exited, not killed by a signal"),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

/// Writes `bytes` to a fresh file under the test target directory.
pub(crate) fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, bytes).expect("write temp file");
    path
}

/// Asserts that `run` is a usage error: exit 2, nothing on stdout, and one
/// line `authtime: ...` on stderr that contains `want` and no panic.
pub(crate) fn assert_usage_error(run: &Run, want: &str) {
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "", "{run:?}");
    assert!(run.stderr.starts_with("authtime: "), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "one line: {run:?}");
    assert!(run.stderr.contains(want), "wanted {want:?}: {run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
}
