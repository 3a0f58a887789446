//! Errors and warnings about key files. None of them ever holds key material:
//! they carry key ids, lengths and line numbers only.

use core::fmt;

use crate::KeyType;

/// Why a key file was refused: where, and the cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFileError {
    /// The file's name as given (or a label such as `<config>` for text).
    pub file: String,
    /// The 1-based line number, `None` for errors about the whole file.
    pub line: Option<usize>,
    /// The cause.
    pub kind: KeyFileErrorKind,
}

/// The cause of a [`KeyFileError`], one variant per way a line can be wrong.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyFileErrorKind {
    /// The file could not be read (the operating system's message).
    Io(String),
    /// A line longer than the format allows.
    LineTooLong {
        /// Its length in bytes.
        len: usize,
        /// The longest line the format's reference implementation reads whole.
        max: usize,
    },
    /// The first word is not a decimal key id.
    BadKeyId,
    /// A key id outside the format's range.
    KeyIdOutOfRange {
        /// The id.
        id: u64,
        /// The largest id the format allows.
        max: u32,
    },
    /// A line with a key id and nothing else.
    MissingKey {
        /// The key id.
        id: u32,
    },
    /// An ntpd line with a key id and one more word: the type or the key is missing.
    MissingTypeOrKey {
        /// The key id.
        id: u32,
    },
    /// A type name that no implementation uses (the name is not repeated, in
    /// case the line's words are in the wrong order and it is the key).
    UnknownType {
        /// The key id.
        id: u32,
    },
    /// A hex key with a character that is not a hex digit.
    InvalidHex {
        /// The key id.
        id: u32,
    },
    /// A hex key with an odd number of digits.
    OddHexLength {
        /// The key id.
        id: u32,
    },
    /// A hex key longer than the format's reference implementation reads.
    HexKeyTooLong {
        /// The key id.
        id: u32,
        /// Its length in bytes.
        len: usize,
        /// The longest key that is read whole.
        max: usize,
    },
    /// An ASCII key with a byte that is not printable ASCII.
    KeyNotPrintable {
        /// The key id.
        id: u32,
    },
    /// A key of zero bytes (`ASCII:` or `HEX:` with nothing after it).
    EmptyKey {
        /// The key id.
        id: u32,
    },
    /// A CMAC key of the wrong length (chrony refuses those).
    KeyLength {
        /// The key id.
        id: u32,
        /// Its type.
        key_type: KeyType,
        /// Its length in bytes.
        len: usize,
        /// The length the cipher needs.
        expected: usize,
    },
    /// More words after the key.
    TrailingText {
        /// The key id.
        id: u32,
    },
    /// A key the MAC library refused (the library's reason, which names
    /// lengths and algorithms, never key bytes).
    UnusableKey {
        /// The key id.
        id: u32,
        /// Why.
        reason: String,
    },
    /// A key id defined twice.
    DuplicateKeyId {
        /// The key id.
        id: u32,
        /// The line of its first definition.
        first_line: usize,
    },
}

impl fmt::Display for KeyFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.kind),
            None => write!(f, "{}: {}", self.file, self.kind),
        }
    }
}

impl fmt::Display for KeyFileErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(message) => write!(f, "cannot read the key file: {message}"),
            Self::LineTooLong { len, max } => {
                write!(f, "line of {len} bytes is longer than the {max} allowed")
            }
            Self::BadKeyId => f.write_str("the first word must be a decimal key id"),
            // An "id" too long for any format may be a key typed in the
            // wrong column: it is not echoed (fuzzing found the echo).
            Self::KeyIdOutOfRange { id, max } if *id > u64::from(u32::MAX) => {
                write!(
                    f,
                    "the key id is larger than {max} (the first word must be the id)"
                )
            }
            Self::KeyIdOutOfRange { id, max } => {
                write!(f, "key id {id} is outside 1..={max}")
            }
            Self::MissingKey { id } => write!(f, "key {id} has no key"),
            Self::MissingTypeOrKey { id } => write!(
                f,
                "key {id}: ntpd format needs three words, `keyno type key`"
            ),
            Self::UnknownType { id } => write!(
                f,
                "key {id} has an unknown type (expected MD5, SHA1, SHA256, AES128, AES256 or an \
                 ntpd spelling of them such as AES128CMAC)"
            ),
            Self::InvalidHex { id } => write!(f, "key {id}: the hex key has a non-hex character"),
            Self::OddHexLength { id } => {
                write!(f, "key {id}: the hex key has an odd number of digits")
            }
            Self::HexKeyTooLong { id, len, max } => write!(
                f,
                "key {id}: the hex key is {len} bytes; ntpd and NTPsec read at most {max}"
            ),
            Self::KeyNotPrintable { id } => write!(
                f,
                "key {id}: an ASCII key must be printable characters without spaces"
            ),
            Self::EmptyKey { id } => write!(f, "key {id} is empty"),
            Self::KeyLength {
                id,
                key_type,
                len,
                expected,
            } => write!(
                f,
                "key {id}: a {key_type} key must be {expected} bytes, this one is {len}"
            ),
            Self::TrailingText { id } => write!(f, "key {id}: unexpected words after the key"),
            Self::UnusableKey { id, reason } => write!(f, "key {id} cannot be used: {reason}"),
            Self::DuplicateKeyId { id, first_line } => {
                write!(f, "key {id} is already defined on line {first_line}")
            }
        }
    }
}

impl std::error::Error for KeyFileError {}

/// Something about a key file that works but deserves the operator's attention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFileWarning {
    /// The file's name as given.
    pub file: String,
    /// The 1-based line number, `None` for warnings about the whole file.
    pub line: Option<usize>,
    /// What it is about.
    pub kind: WarningKind,
}

/// The cause of a [`KeyFileWarning`].
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarningKind {
    /// A key shorter than [`crate::MIN_SECURE_KEY_BITS`].
    ShortKey {
        /// The key id.
        id: u32,
        /// Its length in bits.
        bits: usize,
    },
    /// A type that chrony or NTPsec implement and authtime does not; the line
    /// was skipped.
    UnsupportedType {
        /// The key id.
        id: u32,
        /// The type name (one of a fixed list, never key material).
        type_name: &'static str,
    },
    /// An ntpd-format CMAC key of the wrong length, padded with zeros or
    /// truncated as NTPsec does.
    CmacKeyResized {
        /// The key id.
        id: u32,
        /// Its length in the file.
        from: usize,
        /// Its length as used.
        to: usize,
    },
    /// The file can be read or written by users other than its owner.
    LoosePermissions {
        /// The file's permission bits.
        mode: u32,
    },
    /// The file holds no keys.
    NoKeys,
}

impl fmt::Display for KeyFileWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.kind),
            None => write!(f, "{}: {}", self.file, self.kind),
        }
    }
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ShortKey { id, bits } => write!(
                f,
                "key {id} has only {bits} bits; use at least {} (`authtime keygen`)",
                crate::MIN_SECURE_KEY_BITS
            ),
            Self::UnsupportedType { id, type_name } => {
                write!(
                    f,
                    "key {id}: type {type_name} is not supported, key skipped"
                )
            }
            Self::CmacKeyResized { id, from, to } => write!(
                f,
                "key {id}: CMAC key of {from} bytes used as {to} bytes, as NTPsec does"
            ),
            Self::LoosePermissions { mode } => write!(
                f,
                "mode {mode:04o} lets other users access the keys; run `chmod 600`"
            ),
            Self::NoKeys => f.write_str("the file holds no keys"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_file_and_line() {
        let e = KeyFileError {
            file: "/etc/chrony/chrony.keys".into(),
            line: Some(7),
            kind: KeyFileErrorKind::OddHexLength { id: 3 },
        };
        assert_eq!(
            e.to_string(),
            "/etc/chrony/chrony.keys:7: key 3: the hex key has an odd number of digits"
        );
        let w = KeyFileWarning {
            file: "ntp.keys".into(),
            line: None,
            kind: WarningKind::LoosePermissions { mode: 0o644 },
        };
        assert!(w.to_string().starts_with("ntp.keys: mode 0644"));
    }
}
