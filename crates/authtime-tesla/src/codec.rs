//! Big-endian byte reading and writing shared by the packet codec and the state files.

use core::fmt;

/// Why bytes could not be decoded. Every decoder of this crate returns it instead
/// of panicking; the receiver maps all of them to a silent drop with a counter.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The input ended before the field named here.
    Truncated(&'static str),
    /// Bytes were left after the last field of a fixed-layout message.
    TrailingBytes(usize),
    /// The header names a protocol version this crate does not speak.
    UnknownVersion(u8),
    /// The header names a packet kind this crate does not know.
    UnknownKind(u8),
    /// A field has a value the format forbids (the field is named).
    InvalidField(&'static str),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated(what) => write!(f, "input ends before {what}"),
            Self::TrailingBytes(n) => write!(f, "{n} bytes after the end of the message"),
            Self::UnknownVersion(v) => write!(f, "unknown TESLA packet version {v}"),
            Self::UnknownKind(k) => write!(f, "unknown TESLA packet kind {k:#x}"),
            Self::InvalidField(what) => write!(f, "invalid value in field {what}"),
        }
    }
}

impl std::error::Error for WireError {}

/// A cursor over borrowed bytes. Every read checks the remaining length first,
/// so no input can make it panic.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    pub(crate) fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if self.rest.len() < n {
            return Err(WireError::Truncated(what));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    pub(crate) fn array<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, WireError> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    /// A boolean written as one byte 0 or 1; anything else is invalid.
    pub(crate) fn flag(&mut self, what: &'static str) -> Result<bool, WireError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(WireError::InvalidField(what)),
        }
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.rest)
    }

    pub(crate) fn finish(&self) -> Result<(), WireError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(WireError::TrailingBytes(self.rest.len()))
        }
    }
}

pub(crate) fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

pub(crate) fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_never_reads_past_the_end() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u16("a"), Ok(0x0102));
        assert_eq!(r.u16("b"), Err(WireError::Truncated("b")));
        assert_eq!(r.finish(), Err(WireError::TrailingBytes(1)));
        assert_eq!(r.flag("c"), Err(WireError::InvalidField("c")));
        assert_eq!(r.finish(), Ok(()));
    }
}
