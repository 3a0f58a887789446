//! The peer: `openssl speed`, run in the same session on the same sizes.
//!
//! `openssl speed -mr` prints machine-readable lines; `+R:<count>:<name>:<seconds>`
//! gives the operations done in the CPU seconds measured (OpenSSL divides by
//! user time, as our own measurements divide by thread CPU time).
//! `OPENSSL_ia32cap` masks turn AES-NI/PCLMULQDQ or SHA-NI off for the
//! "software" column, the same masks shared/reference/mac-perf-anchors.md used.

use std::process::Command;

/// `OPENSSL_ia32cap` value that clears AES-NI and PCLMULQDQ.
pub const MASK_NO_AESNI: &str = "~0x200000200000000";
/// `OPENSSL_ia32cap` value that clears SHA-NI.
pub const MASK_NO_SHA: &str = ":~0x20000000";

/// Version line of the `openssl` command, or `None` when it cannot be run.
#[must_use]
pub fn version() -> Option<String> {
    let out = Command::new("openssl").arg("version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Parses the operations per second from `openssl speed -mr` output.
#[must_use]
pub fn parse_ops_per_sec(output: &str) -> Option<f64> {
    output
        .lines()
        .filter_map(|l| l.strip_prefix("+R:"))
        .find_map(|rest| {
            let mut fields = rest.split(':');
            let count: f64 = fields.next()?.parse().ok()?;
            let secs: f64 = fields.next_back()?.parse().ok()?;
            (secs > 0.0).then_some(count / secs)
        })
}

/// Runs `openssl speed -mr -seconds <seconds> -bytes <bytes> <args>` with an
/// optional `OPENSSL_ia32cap` mask, and returns operations (packets) per second.
///
/// # Errors
/// A one-line reason when openssl cannot be run or its output has no result.
pub fn ops_per_sec(
    args: &[&str],
    bytes: usize,
    seconds: u32,
    mask: Option<&str>,
) -> Result<f64, String> {
    let mut cmd = Command::new("openssl");
    cmd.args([
        "speed",
        "-mr",
        "-seconds",
        &seconds.to_string(),
        "-bytes",
        &bytes.to_string(),
    ])
    .args(args);
    if let Some(mask) = mask {
        cmd.env("OPENSSL_ia32cap", mask);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run openssl: {e} (install it: ./test.sh does)"))?;
    // `-mr` writes the `+R:` result lines to standard error, the rest to standard output.
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    parse_ops_per_sec(&text).ok_or_else(|| {
        format!(
            "openssl speed {} gave no result: {}",
            args.join(" "),
            text.lines().find(|l| !l.starts_with('+')).unwrap_or("")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_real_output_shape() {
        let out = "+DT:cmac(aes-128-cbc):1:48\n+R:2956377:cmac(aes-128-cbc):0.990000\n+H:48\n+F:28:cmac(aes-128-cbc):143339490.91\n";
        let ops = parse_ops_per_sec(out).expect("parsed");
        assert!((ops - 2_956_377.0 / 0.99).abs() < 1.0);
        assert_eq!(parse_ops_per_sec("garbage\n+R:x:y:z\n"), None);
        assert_eq!(parse_ops_per_sec("+R:10:md5:0.000\n"), None);
    }

    #[test]
    fn runs_the_real_openssl() {
        let ops = ops_per_sec(&["md5"], 64, 1, None)
            .expect("openssl speed md5 runs (./test.sh installs openssl)");
        assert!(ops > 10_000.0, "{ops}");
    }
}
