//! Where a command's message comes from: the file of `--in FILE`, or standard
//! input (no `--in`, or `--in -`), read whole as raw bytes.

use std::{fs, path::Path};

use anyhow::Context as _;

use crate::Streams;

/// Reads the message from `path`, or from standard input when `path` is `None`
/// or `-`.
///
/// # Errors
/// A file or standard input that cannot be read; the message names the file.
pub fn read_message(path: Option<&Path>, streams: &mut Streams<'_>) -> anyhow::Result<Vec<u8>> {
    match path {
        Some(path) if path != Path::new("-") => {
            // `{:?}` quotes the path and escapes control characters, so the
            // error stays on one line.
            fs::read(path).with_context(|| format!("cannot read --in {path:?}"))
        }
        _ => {
            if streams.stdin_is_terminal {
                // A hint only; a closed standard error is no reason to stop.
                let _ = writeln!(
                    streams.stderr,
                    "authtime: reading the message from standard input; end it with Ctrl-D"
                );
            }
            let mut message = Vec::new();
            streams
                .stdin
                .read_to_end(&mut message)
                .context("cannot read the message from standard input")?;
            Ok(message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(
        path: Option<&Path>,
        stdin: &[u8],
        terminal: bool,
    ) -> (anyhow::Result<Vec<u8>>, String) {
        let mut stdin = stdin;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut streams = Streams {
            stdin: &mut stdin,
            stdin_is_terminal: terminal,
            stdout: &mut out,
            stderr: &mut err,
        };
        let got = read_message(path, &mut streams);
        (got, String::from_utf8(err).expect("utf-8"))
    }

    #[test]
    fn standard_input_without_path_or_with_dash() {
        assert_eq!(read(None, b"abc", false).0.expect("read"), b"abc");
        assert_eq!(
            read(Some(Path::new("-")), b"\x00\xff", false)
                .0
                .expect("read"),
            b"\x00\xff"
        );
        let (got, note) = read(None, b"", true);
        assert_eq!(got.expect("read"), b"");
        assert!(note.contains("standard input"), "{note}");
    }

    #[test]
    fn a_missing_file_is_named() {
        let (got, _) = read(Some(Path::new("/nonexistent/authtime\nmsg")), b"", false);
        let msg = format!("{:#}", got.expect_err("missing"));
        assert!(
            msg.starts_with(r#"cannot read --in "/nonexistent/authtime\nmsg": "#),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
    }
}
