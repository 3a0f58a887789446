//! A pool authentication token: what a key-exchange load balancer sends in the
//! Authentication record (14) and a pool member accepts. One type for both sides.
//!
//! A token is a secret: zeroized on drop, never shown by `Debug`, compared in constant
//! time for a given length. It is one word of text (what ntpd-rs's
//! `accepted-pool-authentication-tokens` and the pool hand out), surrounding white space
//! removed, at most [`MAX_TEXT_LEN`] bytes.

use std::fmt;

use zeroize::Zeroizing;

use crate::pool_record::{MAX_TEXT_LEN, PoolRecord};
use crate::record::Record;

/// A pool authentication token.
#[derive(Clone)]
pub struct PoolToken(Zeroizing<String>);

/// Why text is not a usable token.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    /// Empty after trimming.
    Empty,
    /// Longer than [`MAX_TEXT_LEN`] bytes.
    TooLong,
    /// Holds white space or control characters inside (it must be one word).
    NotOneWord,
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("the token is empty"),
            Self::TooLong => write!(f, "the token is longer than {MAX_TEXT_LEN} bytes"),
            Self::NotOneWord => f.write_str("the token holds spaces or control characters"),
        }
    }
}

impl std::error::Error for TokenError {}

impl PoolToken {
    /// The token in `text`, surrounding white space (a final newline) removed.
    ///
    /// # Errors
    /// Empty, too long, or more than one word.
    pub fn new(text: &str) -> Result<Self, TokenError> {
        let token = text.trim();
        if token.is_empty() {
            return Err(TokenError::Empty);
        }
        if token.len() > MAX_TEXT_LEN {
            return Err(TokenError::TooLong);
        }
        if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(TokenError::NotOneWord);
        }
        Ok(Self(Zeroizing::new(token.to_owned())))
    }

    /// Whether `candidate` is this token: constant time for candidates of the token's
    /// length (the length itself is not hidden).
    pub fn matches(&self, candidate: &[u8]) -> bool {
        let ours = self.0.as_bytes();
        if ours.len() != candidate.len() {
            return false;
        }
        let diff = ours
            .iter()
            .zip(candidate)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }

    /// The Authentication record carrying the token.
    pub(crate) fn record(&self) -> Record {
        PoolRecord::Authentication(self.0.as_str().to_owned()).to_record()
    }
}

/// Equality in constant time (see [`PoolToken::matches`]).
impl PartialEq for PoolToken {
    fn eq(&self, other: &Self) -> bool {
        self.matches(other.0.as_bytes())
    }
}

impl Eq for PoolToken {}

impl fmt::Debug for PoolToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PoolToken(<hidden>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_one_trimmed_word_of_bounded_length() {
        let t = PoolToken::new("  s3cret\n").expect("valid");
        assert!(t.matches(b"s3cret"));
        assert!(!t.matches(b"s3cre"));
        assert!(!t.matches(b"s3creT"));
        assert_eq!(t, PoolToken::new("s3cret").expect("valid"));
        assert_eq!(PoolToken::new(" \n").err(), Some(TokenError::Empty));
        assert_eq!(PoolToken::new("a b").err(), Some(TokenError::NotOneWord));
        assert_eq!(
            PoolToken::new("a\u{7}b").err(),
            Some(TokenError::NotOneWord)
        );
        assert_eq!(
            PoolToken::new(&"x".repeat(MAX_TEXT_LEN + 1)).err(),
            Some(TokenError::TooLong)
        );
        assert!(PoolToken::new(&"x".repeat(MAX_TEXT_LEN)).is_ok());
    }

    #[test]
    fn debug_never_shows_the_token() {
        let t = PoolToken::new("hunter2").expect("valid");
        assert!(!format!("{t:?}").contains("hunter2"));
    }

    #[test]
    fn the_record_is_authentication_with_the_trimmed_token() {
        let r = PoolToken::new("tok\n").expect("valid").record();
        assert_eq!(
            PoolRecord::from_record(&r),
            Some(Ok(PoolRecord::Authentication("tok".into())))
        );
    }
}
