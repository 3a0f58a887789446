//! Bounds-checked cursors over borrowed input and caller-owned output.
//!
//! Every access goes through `split_at_checked`, so short input becomes a
//! [`WireError::Truncated`] and a short buffer a [`WireError::BufferTooSmall`],
//! never a panic.

use crate::WireError;

/// A cursor over input bytes that never panics: reads past the end are errors.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    /// Bytes consumed so far; `buf` is always the unread rest.
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    #[must_use]
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    #[must_use]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// Whether every byte was consumed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The unread bytes, without consuming them.
    #[must_use]
    pub fn rest(&self) -> &'a [u8] {
        self.buf
    }

    /// Consumes the next `n` bytes.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when fewer than `n` bytes are left.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let (head, tail) = self.buf.split_at_checked(n).ok_or(WireError::Truncated {
            offset: self.pos,
            needed: n,
            available: self.buf.len(),
        })?;
        self.buf = tail;
        self.pos += n;
        Ok(head)
    }

    /// Consumes the next `N` bytes as an array.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when fewer than `N` bytes are left.
    pub fn take_array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// Consumes one byte.
    ///
    /// # Errors
    /// [`WireError::Truncated`] at the end of the input.
    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take_array::<1>()?[0])
    }

    /// Consumes a big-endian `u16`.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when fewer than 2 bytes are left.
    pub fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.take_array()?))
    }

    /// Consumes a big-endian `u32`.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when fewer than 4 bytes are left.
    pub fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.take_array()?))
    }

    /// Consumes a big-endian `u64`.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when fewer than 8 bytes are left.
    pub fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.take_array()?))
    }
}

/// A cursor that appends to a caller-owned buffer and never writes past its end.
#[derive(Debug)]
pub struct Writer<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl<'b> Writer<'b> {
    /// A writer at the start of `buf`.
    #[must_use]
    pub fn new(buf: &'b mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// Bytes written so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Size of the whole buffer.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes written so far.
    #[must_use]
    pub fn written(&self) -> &[u8] {
        // `len` never exceeds the buffer: `put` checks before advancing.
        self.buf.get(..self.len).unwrap_or_default()
    }

    /// Appends `bytes`.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`] when they do not fit; nothing is written then.
    pub fn put(&mut self, bytes: &[u8]) -> Result<(), WireError> {
        let needed = self.len + bytes.len();
        let available = self.buf.len();
        let dst = self
            .buf
            .get_mut(self.len..needed)
            .ok_or(WireError::BufferTooSmall { needed, available })?;
        dst.copy_from_slice(bytes);
        self.len = needed;
        Ok(())
    }

    /// Appends one byte.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`] when the buffer is full.
    pub fn put_u8(&mut self, v: u8) -> Result<(), WireError> {
        self.put(&[v])
    }

    /// Appends a big-endian `u16`.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`] when it does not fit.
    pub fn put_u16(&mut self, v: u16) -> Result<(), WireError> {
        self.put(&v.to_be_bytes())
    }

    /// Appends a big-endian `u32`.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`] when it does not fit.
    pub fn put_u32(&mut self, v: u32) -> Result<(), WireError> {
        self.put(&v.to_be_bytes())
    }

    /// Appends a big-endian `u64`.
    ///
    /// # Errors
    /// [`WireError::BufferTooSmall`] when it does not fit.
    pub fn put_u64(&mut self, v: u64) -> Result<(), WireError> {
        self.put(&v.to_be_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_reports_truncation_with_offsets() {
        let mut r = Reader::new(&[1, 2, 3, 4, 5]);
        assert_eq!(r.u16(), Ok(0x0102));
        assert_eq!(r.position(), 2);
        assert_eq!(
            r.u32(),
            Err(WireError::Truncated {
                offset: 2,
                needed: 4,
                available: 3
            })
        );
        // A failed read consumes nothing.
        assert_eq!(r.remaining(), 3);
        assert_eq!(r.take(3), Ok(&[3, 4, 5][..]));
        assert!(r.is_empty());
        assert!(r.u8().is_err());
        assert_eq!(r.take(0), Ok(&[][..]));
    }

    #[test]
    fn reader_never_panics_on_huge_lengths() {
        let mut r = Reader::new(&[0; 4]);
        assert!(r.take(usize::MAX).is_err());
        assert!(r.u64().is_err());
    }

    #[test]
    fn writer_refuses_to_overflow() {
        let mut buf = [0u8; 5];
        let mut w = Writer::new(&mut buf);
        w.put_u32(0xdead_beef).expect("fits");
        assert_eq!(
            w.put_u16(1),
            Err(WireError::BufferTooSmall {
                needed: 6,
                available: 5
            })
        );
        w.put_u8(7).expect("fits");
        assert_eq!(w.written(), &[0xde, 0xad, 0xbe, 0xef, 7]);
        assert!(w.put(&[]).is_ok());
        assert!(w.put_u64(0).is_err());
    }
}
