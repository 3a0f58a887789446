//! The key file format, version 1: one header line and one hex line.
//!
//! ```text
//! authtime-sign v1 public ml-dsa-44
//! 3a7c...
//! ```
//!
//! The header names the format version, the kind (`public` or `secret`) and the scheme by its
//! command-line name; the second line is the key's encoding (see [`crate::Scheme`]) in hex.
//! A final newline is optional; nothing else may follow. Loaders check the kind and scheme
//! before decoding, so a public key given where a secret one is expected fails clearly.

use zeroize::Zeroizing;

use crate::Scheme;
use crate::error::KeyFileError;

const MAGIC: &str = "authtime-sign";
const VERSION: &str = "v1";

/// Whether a key file holds a public or a secret key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyKind {
    Public,
    Secret,
}

impl KeyKind {
    pub(crate) fn label(self) -> &'static str {
        match self {
            KeyKind::Public => "public",
            KeyKind::Secret => "secret",
        }
    }
}

/// A key file split into its parts, the key bytes not yet decoded.
pub(crate) struct ParsedKeyFile {
    pub(crate) scheme: Scheme,
    pub(crate) key: Zeroizing<Vec<u8>>,
}

/// Renders a key file (kept in a zeroizing buffer: secret key files hold the key in hex).
pub(crate) fn encode_key_file(kind: KeyKind, scheme: Scheme, key: &[u8]) -> Zeroizing<String> {
    let mut text = Zeroizing::new(String::with_capacity(key.len() * 2 + 48));
    text.push_str(MAGIC);
    text.push(' ');
    text.push_str(VERSION);
    text.push(' ');
    text.push_str(kind.label());
    text.push(' ');
    text.push_str(scheme.name());
    text.push('\n');
    let hex = Zeroizing::new(hex::encode(key));
    text.push_str(&hex);
    text.push('\n');
    text
}

/// Splits a key file, checking everything except the key bytes themselves.
pub(crate) fn parse_key_file(
    bytes: &[u8],
    expected: KeyKind,
) -> Result<ParsedKeyFile, KeyFileError> {
    let text = core::str::from_utf8(bytes).map_err(|_| KeyFileError::NotText)?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    let (header, body) = text.split_once('\n').ok_or(KeyFileError::BadHeader)?;
    let fields: Vec<&str> = header.split(' ').collect();
    let [magic, version, kind, scheme_name] = fields[..] else {
        return Err(KeyFileError::BadHeader);
    };
    if magic != MAGIC {
        return Err(KeyFileError::BadHeader);
    }
    if version != VERSION {
        return Err(KeyFileError::UnsupportedVersion(version.to_owned()));
    }
    if kind != expected.label() {
        return Err(KeyFileError::WrongKind {
            expected: expected.label(),
            found: kind.to_owned(),
        });
    }
    let scheme = Scheme::from_name(scheme_name)
        .ok_or_else(|| KeyFileError::UnknownScheme(scheme_name.to_owned()))?;
    if body.contains('\n') {
        return Err(KeyFileError::TrailingData);
    }
    let key = Zeroizing::new(hex::decode(body).map_err(|_| KeyFileError::BadHex)?);
    Ok(ParsedKeyFile { scheme, key })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let text = encode_key_file(KeyKind::Public, Scheme::Lms, &[0xab, 0x01]);
        assert_eq!(text.as_str(), "authtime-sign v1 public lms\nab01\n");
        let parsed = parse_key_file(text.as_bytes(), KeyKind::Public).expect("parses");
        assert_eq!(parsed.scheme, Scheme::Lms);
        assert_eq!(parsed.key.as_slice(), &[0xab, 0x01]);
        // The final newline is optional.
        let trimmed = text.trim_end();
        assert!(parse_key_file(trimmed.as_bytes(), KeyKind::Public).is_ok());
    }

    #[test]
    fn malformed_files_get_specific_errors() {
        type Check = fn(&KeyFileError) -> bool;
        let cases: &[(&[u8], Check)] = &[
            (b"", |e| matches!(e, KeyFileError::BadHeader)),
            (b"authtime-sign v1 public ed25519", |e| {
                matches!(e, KeyFileError::BadHeader)
            }),
            (b"other v1 public ed25519\n00\n", |e| {
                matches!(e, KeyFileError::BadHeader)
            }),
            (b"authtime-sign  v1 public ed25519\n00\n", |e| {
                matches!(e, KeyFileError::BadHeader)
            }),
            (b"authtime-sign v2 public ed25519\n00\n", |e| {
                matches!(e, KeyFileError::UnsupportedVersion(_))
            }),
            (b"authtime-sign v1 secret ed25519\n00\n", |e| {
                matches!(e, KeyFileError::WrongKind { .. })
            }),
            (b"authtime-sign v1 public rsa\n00\n", |e| {
                matches!(e, KeyFileError::UnknownScheme(_))
            }),
            (b"authtime-sign v1 public ed25519\nzz\n", |e| {
                matches!(e, KeyFileError::BadHex)
            }),
            (b"authtime-sign v1 public ed25519\n0\n", |e| {
                matches!(e, KeyFileError::BadHex)
            }),
            (b"authtime-sign v1 public ed25519\n00\n\n", |e| {
                matches!(e, KeyFileError::TrailingData)
            }),
            (b"authtime-sign v1 public ed25519\n00\n11\n", |e| {
                matches!(e, KeyFileError::TrailingData)
            }),
            (b"\xff\xfe\n", |e| matches!(e, KeyFileError::NotText)),
        ];
        for (input, check) in cases {
            let err = parse_key_file(input, KeyKind::Public)
                .err()
                .unwrap_or_else(|| panic!("{:?} must be rejected", String::from_utf8_lossy(input)));
            assert!(
                check(&err),
                "{:?}: unexpected {err:?}",
                String::from_utf8_lossy(input)
            );
            assert!(!err.to_string().is_empty());
        }
    }
}
