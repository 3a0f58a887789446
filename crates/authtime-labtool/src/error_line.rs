//! Turns an error into the one line `main` prints after `authtime-lab: `
//! (the same rule as `authtime`'s, copied: two small functions are not worth
//! a crate both binaries would depend on).
//!
//! Error messages can quote what the user typed (an algorithm name, a file
//! name), and that may hold a newline or a terminal escape sequence. Those are
//! written as escapes so the report stays one line and cannot drive the terminal.

/// The error and its causes on one line, control characters escaped.
#[must_use]
pub fn error_line(err: &anyhow::Error) -> String {
    // `{:#}` joins the cause chain with ": ".
    escape_controls(&format!("{err:#}"))
}

/// `text` with every control character written as its Rust escape (`\n`, `\u{1b}`).
#[must_use]
pub fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use anyhow::{Context as _, anyhow};

    use super::*;

    #[test]
    fn causes_join_on_one_line_and_controls_are_escaped() {
        let err = Err::<(), _>(anyhow!("unknown algorithm `md4\nx\u{1b}[2J`"))
            .context("--alg")
            .expect_err("an error");
        assert_eq!(
            error_line(&err),
            r"--alg: unknown algorithm `md4\nx\u{1b}[2J`"
        );
        assert_eq!(escape_controls("é \"quoted\" tab\t"), "é \"quoted\" tab\\t");
    }
}
