//! Tags: small fixed buffers compared in constant time.

use core::fmt;

use subtle::ConstantTimeEq;

/// Longest tag of any algorithm in the library (BLAKE3, HMAC-SHA256), in bytes.
pub const MAX_TAG_LEN: usize = 32;

/// A computed MAC tag. Tags are public wire values, so `Debug` shows them in
/// hex; equality with another tag is constant-time.
#[derive(Clone, Copy)]
pub struct Tag {
    bytes: [u8; MAX_TAG_LEN],
    len: u8,
}

impl Tag {
    /// An empty tag, for preallocated batch outputs.
    pub const EMPTY: Tag = Tag {
        bytes: [0; MAX_TAG_LEN],
        len: 0,
    };

    /// Builds a tag from at most [`MAX_TAG_LEN`] bytes; longer input is truncated
    /// on the left-hand side kept (RFC 2104 section 5 truncation).
    #[must_use]
    pub fn from_slice(tag: &[u8]) -> Self {
        let len = tag.len().min(MAX_TAG_LEN);
        let mut bytes = [0; MAX_TAG_LEN];
        bytes[..len].copy_from_slice(&tag[..len]);
        Self {
            bytes,
            len: len as u8,
        }
    }

    /// The first `len` bytes of a digest as a tag (RFC 2104 section 5
    /// truncation), built in registers: a copy of variable length would be a
    /// call to `memcpy` and a stall on the narrow stores it leaves behind.
    #[inline]
    pub(crate) fn from_digest(digest: [u8; MAX_TAG_LEN], len: usize) -> Self {
        let len = len.min(MAX_TAG_LEN);
        let mut bytes = digest;
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = if i < len { *b } else { 0 };
        }
        Self {
            bytes,
            len: len as u8,
        }
    }

    /// The tag bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Tag length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether the tag is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Constant-time comparison with `other` (the length is not secret).
    #[must_use]
    pub fn ct_matches(&self, other: &[u8]) -> bool {
        ct_bytes_eq(self.as_bytes(), other)
    }
}

/// Whether `a` and `b` are equal, in time that depends only on their
/// lengths: the differences of all bytes are OR-ed together eight bytes at a
/// time, and only the total is compared (`subtle` on slices pays an
/// optimization barrier per byte).
#[must_use]
pub fn ct_bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u64;
    let (mut wa, mut wb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in wa.by_ref().zip(wb.by_ref()) {
        let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]));
        diff |= word(x) ^ word(y);
    }
    for (x, y) in wa.remainder().iter().zip(wb.remainder()) {
        diff |= u64::from(x ^ y);
    }
    core::hint::black_box(diff).ct_eq(&0).into()
}

impl PartialEq for Tag {
    fn eq(&self, other: &Self) -> bool {
        self.ct_matches(other.as_bytes())
    }
}

impl Eq for Tag {}

impl fmt::Debug for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tag(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

impl AsRef<[u8]> for Tag {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

#[cfg(test)]
mod tests {
    /// The word-wise comparison agrees with plain equality on every length
    /// from 0 to 40 and a difference in any byte.
    #[test]
    fn ct_bytes_eq_finds_a_difference_in_any_byte() {
        for len in 0..=40usize {
            let a: Vec<u8> = (0..len).map(|i| (i * 37 + 5) as u8).collect();
            assert!(ct_bytes_eq(&a, &a.clone()));
            for at in 0..len {
                for bit in [0x01u8, 0x80] {
                    let mut b = a.clone();
                    b[at] ^= bit;
                    assert!(!ct_bytes_eq(&a, &b), "len {len}, byte {at}");
                }
            }
            assert!(!ct_bytes_eq(&a, &a[..len.saturating_sub(1)]) || len == 0);
        }
    }

    use super::*;

    #[test]
    fn tag_truncates_and_compares() {
        let t = Tag::from_slice(&[7u8; 40]);
        assert_eq!(t.len(), MAX_TAG_LEN);
        assert!(t.ct_matches(&[7u8; 32]));
        assert!(!t.ct_matches(&[7u8; 31]));
        assert_ne!(Tag::from_slice(&[1, 2]), Tag::from_slice(&[1, 3]));
        assert_eq!(format!("{:?}", Tag::from_slice(&[0xab, 0x01])), "Tag(ab01)");
    }
}
