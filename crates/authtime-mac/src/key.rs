//! Key material: zeroized on drop, never printed.

use core::fmt;

use zeroize::{Zeroize, ZeroizeOnDrop};

/// The key lengths an algorithm accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLength {
    /// Exactly this many bytes.
    Exact(usize),
    /// Any length from `min` to `max` bytes, both included.
    Range {
        /// Shortest accepted key.
        min: usize,
        /// Longest accepted key.
        max: usize,
    },
}

impl KeyLength {
    /// Whether a key of `len` bytes is accepted.
    #[must_use]
    pub fn accepts(self, len: usize) -> bool {
        match self {
            Self::Exact(n) => len == n,
            Self::Range { min, max } => (min..=max).contains(&len),
        }
    }

    /// A length that is always accepted: the exact length, or the typical one
    /// (16 bytes when in range), for generating keys.
    #[must_use]
    pub fn typical(self) -> usize {
        match self {
            Self::Exact(n) => n,
            Self::Range { min, max } => 16.clamp(min, max),
        }
    }
}

impl fmt::Display for KeyLength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exact(n) => write!(f, "{n} bytes"),
            Self::Range { min, max } => write!(f, "{min} to {max} bytes"),
        }
    }
}

/// Secret bytes of a key. Zeroized on drop; `Debug` shows only the length.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct SecretBytes(Vec<u8>);

impl SecretBytes {
    /// Copies `bytes` into a new secret.
    #[must_use]
    pub fn new(bytes: &[u8]) -> Self {
        Self(bytes.to_vec())
    }

    /// The key bytes. Callers must not log or print them.
    #[must_use]
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// Length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the key is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SecretBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretBytes({} bytes, hidden)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_key_bytes() {
        let key = SecretBytes::new(&[0xab; 16]);
        let shown = format!("{key:?}");
        assert!(!shown.contains("ab") && !shown.contains("171"), "{shown}");
        assert!(shown.contains("16 bytes"));
    }

    #[test]
    fn key_length_rules() {
        assert!(KeyLength::Exact(16).accepts(16));
        assert!(!KeyLength::Exact(16).accepts(15));
        let r = KeyLength::Range { min: 1, max: 32 };
        assert!(r.accepts(1) && r.accepts(32) && !r.accepts(0) && !r.accepts(33));
        assert_eq!(r.typical(), 16);
        assert_eq!(KeyLength::Range { min: 20, max: 40 }.typical(), 20);
    }
}
