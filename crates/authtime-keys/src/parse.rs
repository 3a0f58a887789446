//! Reading key-file text, line by line, into key material.

use std::collections::HashMap;

use authtime_mac::SecretBytes;
use zeroize::Zeroizing;

use crate::format::{lines, words};
use crate::{
    KeyFileError, KeyFileErrorKind, KeyFileFormat, KeyFileWarning, KeyType, MIN_SECURE_KEY_BITS,
    WarningKind,
};

/// Longest unprefixed ASCII key in an ntpd file; longer keys are hex.
const NTPD_MAX_ASCII_KEY: usize = 20;
/// Longest hex key NTPsec reads whole (its `keystr[32]`).
const NTPD_MAX_HEX_KEY_BYTES: usize = 32;

/// One key of a key file: id, type and secret bytes (zeroized on drop, hidden
/// from `Debug`).
#[derive(Debug, Clone)]
pub struct KeyMaterial {
    id: u32,
    key_type: KeyType,
    secret: SecretBytes,
}

impl KeyMaterial {
    /// A key with id `id` of type `key_type`.
    #[must_use]
    pub fn new(id: u32, key_type: KeyType, secret: &[u8]) -> Self {
        Self {
            id,
            key_type,
            secret: SecretBytes::new(secret),
        }
    }

    /// The key id.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The key type.
    #[must_use]
    pub fn key_type(&self) -> KeyType {
        self.key_type
    }

    /// The secret bytes.
    #[must_use]
    pub fn secret(&self) -> &SecretBytes {
        &self.secret
    }
}

/// The keys of a file, with the format they were read in and the warnings.
#[derive(Debug, Clone)]
pub struct ParsedKeyFile {
    /// The format the file was read in.
    pub format: KeyFileFormat,
    /// Why that format: stated by the caller, or the hint that detected it.
    pub format_reason: &'static str,
    /// The keys, in file order.
    pub keys: Vec<KeyMaterial>,
    /// Things that work but deserve attention.
    pub warnings: Vec<KeyFileWarning>,
}

/// Parses key-file `text` in `format`, or in the detected format when `None`.
/// `file` names the file in errors and warnings.
///
/// # Errors
/// The first malformed line, as a [`KeyFileError`] with its line number.
pub fn parse_key_file(
    file: &str,
    text: &[u8],
    format: Option<KeyFileFormat>,
) -> Result<ParsedKeyFile, KeyFileError> {
    let (format, format_reason) = match format {
        Some(format) => (format, "stated"),
        None => KeyFileFormat::detect(text),
    };
    let mut keys = Vec::new();
    let mut warnings = Vec::new();
    let mut first_line_of: HashMap<u32, usize> = HashMap::new();
    for (number, line) in lines(text) {
        let error = |kind| KeyFileError {
            file: file.to_owned(),
            line: Some(number),
            kind,
        };
        let mut line_warnings = Vec::new();
        let key = parse_line(format, line, &mut line_warnings).map_err(error)?;
        warnings.extend(line_warnings.into_iter().map(|kind| KeyFileWarning {
            file: file.to_owned(),
            line: Some(number),
            kind,
        }));
        let Some(key) = key else { continue };
        if let Some(&first_line) = first_line_of.get(&key.id) {
            return Err(error(KeyFileErrorKind::DuplicateKeyId {
                id: key.id,
                first_line,
            }));
        }
        first_line_of.insert(key.id, number);
        keys.push(key);
    }
    if keys.is_empty() {
        warnings.push(KeyFileWarning {
            file: file.to_owned(),
            line: None,
            kind: WarningKind::NoKeys,
        });
    }
    Ok(ParsedKeyFile {
        format,
        format_reason,
        keys,
        warnings,
    })
}

/// One line: `Ok(None)` for blank, comment and skipped lines.
fn parse_line(
    format: KeyFileFormat,
    line: &[u8],
    warnings: &mut Vec<WarningKind>,
) -> Result<Option<KeyMaterial>, KeyFileErrorKind> {
    if line.len() > format.max_line_len() {
        return Err(KeyFileErrorKind::LineTooLong {
            len: line.len(),
            max: format.max_line_len(),
        });
    }
    let mut w = words(format.content(line));
    let Some(id_word) = w.next() else {
        return Ok(None);
    };
    let id = parse_key_id(format, id_word)?;
    let rest: [Option<&[u8]>; 3] = [w.next(), w.next(), w.next()];
    let (type_word, key_word): (&[u8], &[u8]) = match (format, rest) {
        (_, [_, _, Some(_)]) => return Err(KeyFileErrorKind::TrailingText { id }),
        (_, [Some(t), Some(k), None]) => (t, k),
        (KeyFileFormat::Chrony, [Some(k), None, None]) => (b"MD5", k),
        (KeyFileFormat::Chrony, _) => return Err(KeyFileErrorKind::MissingKey { id }),
        (KeyFileFormat::Ntpd, _) => return Err(KeyFileErrorKind::MissingTypeOrKey { id }),
    };
    let type_name = core::str::from_utf8(type_word).unwrap_or_default();
    let Some(key_type) = KeyType::from_name(type_name) else {
        return match KeyType::known_unsupported(type_name) {
            Some(type_name) => {
                warnings.push(WarningKind::UnsupportedType { id, type_name });
                Ok(None)
            }
            None => Err(KeyFileErrorKind::UnknownType { id }),
        };
    };
    let mut secret = match format {
        KeyFileFormat::Chrony => decode_chrony_key(id, key_word)?,
        KeyFileFormat::Ntpd => decode_ntpd_key(id, key_word)?,
    };
    if let Some(expected) = key_type.required_key_len()
        && secret.len() != expected
    {
        if format == KeyFileFormat::Chrony {
            return Err(KeyFileErrorKind::KeyLength {
                id,
                key_type,
                len: secret.len(),
                expected,
            });
        }
        warnings.push(WarningKind::CmacKeyResized {
            id,
            from: secret.len(),
            to: expected,
        });
        // A new buffer rather than `resize`, which could leave a copy of the
        // key behind in a freed allocation.
        let mut resized = Zeroizing::new(vec![0u8; expected]);
        let kept = secret.len().min(expected);
        resized[..kept].copy_from_slice(&secret[..kept]);
        secret = resized;
    }
    let bits = secret.len() * 8;
    if bits < MIN_SECURE_KEY_BITS {
        warnings.push(WarningKind::ShortKey { id, bits });
    }
    Ok(Some(KeyMaterial::new(id, key_type, &secret)))
}

fn parse_key_id(format: KeyFileFormat, word: &[u8]) -> Result<u32, KeyFileErrorKind> {
    if word.is_empty() || !word.iter().all(u8::is_ascii_digit) {
        return Err(KeyFileErrorKind::BadKeyId);
    }
    let id = word.iter().fold(0u64, |acc, &d| {
        acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    match u32::try_from(id) {
        Ok(id) if id >= 1 && id <= format.max_key_id() => Ok(id),
        _ => Err(KeyFileErrorKind::KeyIdOutOfRange {
            id,
            max: format.max_key_id(),
        }),
    }
}

fn decode_chrony_key(id: u32, word: &[u8]) -> Result<Zeroizing<Vec<u8>>, KeyFileErrorKind> {
    let key = if let Some(hex) = word.strip_prefix(b"HEX:") {
        decode_hex(id, hex)?
    } else {
        Zeroizing::new(word.strip_prefix(b"ASCII:").unwrap_or(word).to_vec())
    };
    if key.is_empty() {
        return Err(KeyFileErrorKind::EmptyKey { id });
    }
    Ok(key)
}

fn decode_ntpd_key(id: u32, word: &[u8]) -> Result<Zeroizing<Vec<u8>>, KeyFileErrorKind> {
    if word.len() <= NTPD_MAX_ASCII_KEY {
        if !word.iter().all(u8::is_ascii_graphic) {
            return Err(KeyFileErrorKind::KeyNotPrintable { id });
        }
        return Ok(Zeroizing::new(word.to_vec()));
    }
    let key = decode_hex(id, word)?;
    if key.len() > NTPD_MAX_HEX_KEY_BYTES {
        return Err(KeyFileErrorKind::HexKeyTooLong {
            id,
            len: key.len(),
            max: NTPD_MAX_HEX_KEY_BYTES,
        });
    }
    Ok(key)
}

fn decode_hex(id: u32, hex: &[u8]) -> Result<Zeroizing<Vec<u8>>, KeyFileErrorKind> {
    if !hex.len().is_multiple_of(2) {
        return Err(KeyFileErrorKind::OddHexLength { id });
    }
    let nibble = |c: u8| -> Result<u8, KeyFileErrorKind> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(KeyFileErrorKind::InvalidHex { id }),
        }
    };
    let mut out = Zeroizing::new(Vec::with_capacity(hex.len() / 2));
    for pair in hex.chunks_exact(2) {
        out.push((nibble(pair[0])? << 4) | nibble(pair[1])?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, format: Option<KeyFileFormat>) -> Result<ParsedKeyFile, KeyFileError> {
        parse_key_file("test.keys", text.as_bytes(), format)
    }

    fn error_kind(text: &str, format: KeyFileFormat) -> KeyFileErrorKind {
        parse(text, Some(format)).expect_err("must fail").kind
    }

    #[test]
    fn chrony_file_with_every_syntax() {
        let text = "\
# chrony.keys
1 MD5 HEX:000102030405060708090A0B0C0D0E0F
2 SHA1 HEX:101112131415161718191a1b1c1d1e1f20212223
 3 AES128 HEX:2B7E151628AED2A6ABF7158809CF4F3C
4 SHA256 HEX:303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F
5 AES256 HEX:603DEB1015CA71BE2B73AEF0857D77811F352C073B6108D72D9810A30914DFF4
6 ASCII:authtime-md5
4294967295 SHA1 plain-ascii-key-of-good-length
% other comment
";
        let parsed = parse(text, None).expect("parse");
        assert_eq!(parsed.format, KeyFileFormat::Chrony);
        let summary: Vec<(u32, KeyType, usize)> = parsed
            .keys
            .iter()
            .map(|k| (k.id(), k.key_type(), k.secret().len()))
            .collect();
        assert_eq!(
            summary,
            [
                (1, KeyType::Md5, 16),
                (2, KeyType::Sha1, 20),
                (3, KeyType::Aes128Cmac, 16),
                (4, KeyType::Sha256, 32),
                (5, KeyType::Aes256Cmac, 32),
                (6, KeyType::Md5, 12),
                (4_294_967_295, KeyType::Sha1, 30),
            ]
        );
        assert_eq!(parsed.keys[5].secret().expose(), b"authtime-md5");
        assert_eq!(parsed.keys[0].secret().expose()[15], 0x0f);
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    }

    #[test]
    fn ntpd_file_as_ntp_keygen_writes_it() {
        let text = "\
# ntpkey_MD5key_host.3900000000
# Sat Aug 10 00:00:00 2023
 1 MD5 L\"%xJ7p9iG:b/E>E;~3t  # MD5 key
11 SHA1 8ad51e4ad1cd7ae9ac36fbd6fdcd5d7ce7d7bd56  # SHA1 key
21 AES 2b7e151628aed2a6abf7158809cf4f3c
22 AES128CMAC 2b7e151628aed2a6abf7158809cf4f3c
";
        let parsed = parse(text, None).expect("parse");
        assert_eq!(parsed.format, KeyFileFormat::Ntpd);
        let summary: Vec<(u32, KeyType, usize)> = parsed
            .keys
            .iter()
            .map(|k| (k.id(), k.key_type(), k.secret().len()))
            .collect();
        assert_eq!(
            summary,
            [
                (1, KeyType::Md5, 20),
                (11, KeyType::Sha1, 20),
                (21, KeyType::Aes128Cmac, 16),
                (22, KeyType::Aes128Cmac, 16),
            ]
        );
        assert_eq!(parsed.keys[0].secret().expose(), b"L\"%xJ7p9iG:b/E>E;~3t");
    }

    #[test]
    fn the_same_unprefixed_long_key_means_hex_to_ntpd_and_ascii_to_chrony() {
        let text = "1 MD5 00112233445566778899aabbccddeeff";
        let ntpd = parse(text, Some(KeyFileFormat::Ntpd)).expect("ntpd");
        assert_eq!(ntpd.keys[0].secret().len(), 16);
        let chrony = parse(text, Some(KeyFileFormat::Chrony)).expect("chrony");
        assert_eq!(chrony.keys[0].secret().len(), 32);
    }

    #[test]
    fn malformed_lines_are_errors_with_line_numbers() {
        use KeyFileErrorKind as K;
        use KeyFileFormat::{Chrony, Ntpd};
        let cases: Vec<(&str, KeyFileFormat, KeyFileErrorKind)> = vec![
            ("x MD5 abc", Ntpd, K::BadKeyId),
            ("-1 MD5 abc", Chrony, K::BadKeyId),
            (
                "0 MD5 abc",
                Chrony,
                K::KeyIdOutOfRange {
                    id: 0,
                    max: u32::MAX,
                },
            ),
            (
                "65536 MD5 abc",
                Ntpd,
                K::KeyIdOutOfRange {
                    id: 65_536,
                    max: 65_535,
                },
            ),
            (
                "4294967296 MD5 abc",
                Chrony,
                K::KeyIdOutOfRange {
                    id: 4_294_967_296,
                    max: u32::MAX,
                },
            ),
            ("7", Chrony, K::MissingKey { id: 7 }),
            ("7 MD5", Ntpd, K::MissingTypeOrKey { id: 7 }),
            ("7 WHIRLPOOL abc", Ntpd, K::UnknownType { id: 7 }),
            ("7 MD5 HEX:abc", Chrony, K::OddHexLength { id: 7 }),
            ("7 MD5 HEX:zz", Chrony, K::InvalidHex { id: 7 }),
            ("7 MD5 ASCII:", Chrony, K::EmptyKey { id: 7 }),
            ("7 MD5 HEX:", Chrony, K::EmptyKey { id: 7 }),
            (
                "7 MD5 0123456789abcdef0123456789abcdeg",
                Ntpd,
                K::InvalidHex { id: 7 },
            ),
            (
                "7 MD5 0123456789abcdef0123456789abcdef0",
                Ntpd,
                K::OddHexLength { id: 7 },
            ),
            (
                "7 AES128 HEX:00112233",
                Chrony,
                K::KeyLength {
                    id: 7,
                    key_type: KeyType::Aes128Cmac,
                    len: 4,
                    expected: 16,
                },
            ),
            ("7 MD5 abc def", Chrony, K::TrailingText { id: 7 }),
            ("7 MD5 abc def", Ntpd, K::TrailingText { id: 7 }),
        ];
        for (line, format, expected) in cases {
            let text = format!("# header\n\n{line}\n");
            let e = parse(&text, Some(format)).expect_err(line);
            assert_eq!(e.kind, expected, "{line}");
            assert_eq!(e.line, Some(3), "{line}");
            assert_eq!(e.file, "test.keys");
        }
        let long_hex = format!("7 SHA1 {}", "ab".repeat(33));
        assert_eq!(
            error_kind(&long_hex, Ntpd),
            K::HexKeyTooLong {
                id: 7,
                len: 33,
                max: 32
            }
        );
        assert_eq!(
            error_kind("7 MD5 \u{e9}t\u{e9}", Ntpd),
            K::KeyNotPrintable { id: 7 }
        );
        let long_line = format!("7 MD5 ASCII:{}", "k".repeat(3000));
        assert_eq!(
            error_kind(&long_line, Chrony),
            K::LineTooLong {
                len: 3012,
                max: 2046
            }
        );
        assert_eq!(
            error_kind("1 MD5 abc\n2 MD5 def\n1 SHA1 ghi", Chrony),
            K::DuplicateKeyId {
                id: 1,
                first_line: 1
            }
        );
    }

    #[test]
    fn errors_never_contain_the_key() {
        let secret = "TopSecretKeyMaterial1234";
        for line in [
            format!("1 {secret} MD5"),
            format!("1 MD5 HEX:{secret}"),
            format!("1 AES128 {secret}"),
            format!("1 MD5 {secret} extra"),
            format!("x MD5 {secret}"),
        ] {
            for format in [KeyFileFormat::Ntpd, KeyFileFormat::Chrony] {
                if let Err(e) = parse(&line, Some(format)) {
                    let shown = format!("{e} {e:?}");
                    assert!(!shown.contains(secret), "{shown}");
                    assert!(!shown.contains("TopSecret"), "{shown}");
                }
            }
        }
    }

    #[test]
    fn warnings_are_data() {
        let parsed = parse(
            "1 MD5 short\n2 SHA512 HEX:00\n3 AES 0011223344556677889900112233445566778899\n",
            Some(KeyFileFormat::Ntpd),
        )
        .expect("parse");
        let kinds: Vec<&WarningKind> = parsed.warnings.iter().map(|w| &w.kind).collect();
        assert_eq!(
            kinds,
            [
                &WarningKind::ShortKey { id: 1, bits: 40 },
                &WarningKind::UnsupportedType {
                    id: 2,
                    type_name: "SHA512"
                },
                &WarningKind::CmacKeyResized {
                    id: 3,
                    from: 20,
                    to: 16
                },
            ]
        );
        assert_eq!(parsed.keys.len(), 2);
        assert_eq!(parsed.warnings[0].line, Some(1));
        let empty = parse("# nothing\n", None).expect("parse");
        assert_eq!(empty.warnings[0].kind, WarningKind::NoKeys);
    }

    #[test]
    fn debug_of_key_material_hides_the_key() {
        let k = KeyMaterial::new(1, KeyType::Md5, b"hunter2hunter2");
        let shown = format!("{k:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("104"),
            "{shown}"
        );
    }
}
