//! A command-line value that is secret (a key): zeroized on drop, hidden in `Debug`.

use core::{convert::Infallible, fmt, str::FromStr};

use zeroize::Zeroizing;

/// The text of a secret argument, as typed. `Debug` shows only its length.
#[derive(Clone)]
pub struct SecretArg(Zeroizing<String>);

impl SecretArg {
    /// The text. Callers must not print it.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl FromStr for SecretArg {
    type Err = Infallible;
    fn from_str(s: &str) -> Result<Self, Infallible> {
        Ok(Self(Zeroizing::new(s.to_owned())))
    }
}

impl fmt::Debug for SecretArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretArg({} chars, hidden)", self.0.chars().count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_text() {
        let arg: SecretArg = "00112233".parse().expect("infallible");
        assert_eq!(arg.expose(), "00112233");
        assert_eq!(format!("{arg:?}"), "SecretArg(8 chars, hidden)");
    }
}
