//! Hex arguments (`--key`, `--nonce`, `--tag`): strict parsing with errors that
//! say which argument is wrong and why, and never show a secret one's digits.
//!
//! Accepted: an even, non-zero number of digits `0-9 a-f A-F`, nothing else (no
//! `0x` prefix, no spaces or separators).

use core::fmt;

/// A hex argument: its flag, for error messages, and whether it is secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HexArg {
    /// The flag as the user types it, e.g. `--key`.
    pub flag: &'static str,
    /// Whether the value is secret: errors then never show any of its characters.
    pub secret: bool,
}

impl HexArg {
    /// `--key`: secret.
    pub const KEY: Self = Self {
        flag: "--key",
        secret: true,
    };
    /// `--nonce`.
    pub const NONCE: Self = Self {
        flag: "--nonce",
        secret: false,
    };
    /// `--tag`.
    pub const TAG: Self = Self {
        flag: "--tag",
        secret: false,
    };
}

/// Why a hex argument was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexError {
    /// The argument.
    pub arg: HexArg,
    /// What is wrong with it.
    pub problem: HexProblem,
}

/// What is wrong with a hex argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HexProblem {
    /// No digits at all.
    Empty,
    /// Starts with `0x` or `0X`.
    Prefix,
    /// A character that is not a hex digit.
    NotHexDigit {
        /// Its position, counting characters from 1.
        position: usize,
        /// The character, or `None` for a secret argument.
        found: Option<char>,
    },
    /// An odd number of digits, so the last byte is incomplete.
    OddLength {
        /// Number of digits.
        digits: usize,
    },
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flag = self.arg.flag;
        match self.problem {
            HexProblem::Empty => write!(f, "{flag} is empty: give the bytes as hex digits"),
            HexProblem::Prefix => write!(
                f,
                "{flag} is not valid hex: write the digits without a 0x prefix"
            ),
            // `{:?}` quotes the character and escapes control characters, so
            // the message stays on one line.
            HexProblem::NotHexDigit {
                position,
                found: Some(c),
            } => write!(
                f,
                "{flag} is not valid hex: character {position} ({c:?}) is not a hex digit \
                 (0-9, a-f, A-F; no spaces)"
            ),
            HexProblem::NotHexDigit {
                position,
                found: None,
            } => write!(
                f,
                "{flag} is not valid hex: character {position} is not a hex digit \
                 (0-9, a-f, A-F; no spaces)"
            ),
            HexProblem::OddLength { digits } => write!(
                f,
                "{flag} is not valid hex: it has an odd number of digits ({digits}), \
                 two are needed per byte"
            ),
        }
    }
}

impl std::error::Error for HexError {}

/// Parses the value of `arg`.
///
/// The result has exactly the capacity it needs, so a key copied into it leaves
/// no stray copies behind when the caller wraps it in `Zeroizing`.
///
/// # Errors
/// [`HexError`] naming `arg` and the problem.
pub fn parse_hex(arg: HexArg, text: &str) -> Result<Vec<u8>, HexError> {
    let fail = |problem| HexError { arg, problem };
    if text.is_empty() {
        return Err(fail(HexProblem::Empty));
    }
    if text.starts_with("0x") || text.starts_with("0X") {
        return Err(fail(HexProblem::Prefix));
    }
    if let Some((index, c)) = text
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_hexdigit())
    {
        return Err(fail(HexProblem::NotHexDigit {
            position: index + 1,
            found: (!arg.secret).then_some(c),
        }));
    }
    // Only ASCII digits are left, so bytes and characters are the same.
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return Err(fail(HexProblem::OddLength {
            digits: digits.len(),
        }));
    }
    let mut out = Vec::with_capacity(digits.len() / 2);
    for pair in digits.chunks_exact(2) {
        out.push(digit_value(pair[0]) << 4 | digit_value(pair[1]));
    }
    Ok(out)
}

/// The value of an ASCII hex digit (already checked).
fn digit_value(d: u8) -> u8 {
    match d {
        b'0'..=b'9' => d - b'0',
        b'a'..=b'f' => d - b'a' + 10,
        b'A'..=b'F' => d - b'A' + 10,
        // parse_hex lets only hex digits through.
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_and_lower_case_digits() {
        assert_eq!(
            parse_hex(HexArg::NONCE, "00aAfF09"),
            Ok(vec![0x00, 0xaa, 0xff, 0x09])
        );
        let key = parse_hex(HexArg::KEY, "2b7e151628aed2a6abf7158809cf4f3c").expect("hex");
        assert_eq!(key.len(), 16);
        assert_eq!(key.capacity(), 16);
        assert_eq!(
            hex::encode(&key),
            "2b7e151628aed2a6abf7158809cf4f3c",
            "agrees with the hex crate"
        );
    }

    #[test]
    fn empty_prefix_odd_and_bad_characters_are_named() {
        let err = |arg, text| parse_hex(arg, text).expect_err("refused").to_string();
        assert_eq!(
            err(HexArg::NONCE, ""),
            "--nonce is empty: give the bytes as hex digits"
        );
        assert!(
            err(HexArg::TAG, "0x00")
                .contains("--tag is not valid hex: write the digits without a 0x prefix")
        );
        assert!(
            err(HexArg::TAG, "abc")
                .contains("--tag is not valid hex: it has an odd number of digits (3)")
        );
        assert!(err(HexArg::NONCE, "00g0").contains("--nonce is not valid hex: character 3 ('g')"));
        assert!(err(HexArg::NONCE, "00 00").contains("character 3 (' ')"));
        assert!(err(HexArg::NONCE, "00\n0").contains(r"character 3 ('\n')"));
        assert!(!err(HexArg::NONCE, "00\n0").contains('\n'));
        assert!(err(HexArg::NONCE, "éé").contains("character 1 ('é')"));
    }

    #[test]
    fn bad_characters_are_checked_before_the_length() {
        assert_eq!(
            parse_hex(HexArg::TAG, "é").map_err(|e| e.problem),
            Err(HexProblem::NotHexDigit {
                position: 1,
                found: Some('é')
            })
        );
    }

    #[test]
    fn secret_arguments_show_no_characters() {
        let msg = parse_hex(HexArg::KEY, "00112233q4556677")
            .expect_err("refused")
            .to_string();
        assert_eq!(
            msg,
            "--key is not valid hex: character 9 is not a hex digit (0-9, a-f, A-F; no spaces)"
        );
        for text in ["0011223", "0x0011", "", "zz00112233"] {
            let msg = parse_hex(HexArg::KEY, text)
                .expect_err("refused")
                .to_string();
            assert!(!msg.contains("0011") && !msg.contains("zz"), "{msg}");
        }
    }

    #[test]
    fn every_byte_value_round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(
            parse_hex(HexArg::TAG, &hex::encode(&bytes)),
            Ok(bytes.clone())
        );
        assert_eq!(
            parse_hex(HexArg::TAG, &hex::encode_upper(&bytes)),
            Ok(bytes)
        );
    }
}
