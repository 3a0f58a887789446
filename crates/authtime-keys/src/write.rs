//! Writing key files that chrony, ntpd and NTPsec read back unchanged.

use core::fmt;
use core::fmt::Write as _;

use zeroize::Zeroizing;

use crate::{KeyFileFormat, KeyMaterial};

/// Shortest key written in hex to an ntpd file: ntpd reads keys of up to 20
/// characters as ASCII, so hex needs more than 20 digits.
const NTPD_MIN_HEX_KEY_BYTES: usize = 11;
/// Longest key NTPsec reads from hex.
const NTPD_MAX_HEX_KEY_BYTES: usize = 32;

/// Why keys could not be written in a format.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyWriteError {
    /// The format does not allow this key id.
    KeyIdOutOfRange {
        /// The id.
        id: u32,
        /// The largest id of the format.
        max: u32,
    },
    /// Two keys with one id.
    DuplicateKeyId {
        /// The id.
        id: u32,
    },
    /// The key cannot be spelled in the format (an ntpd file holds hex keys
    /// of 11 to 32 bytes and printable ASCII keys of up to 10).
    KeyNotRepresentable {
        /// The key id.
        id: u32,
        /// Its length in bytes.
        len: usize,
    },
}

impl fmt::Display for KeyWriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::KeyIdOutOfRange { id, max } => {
                write!(f, "key id {id} is outside 1..={max} of this format")
            }
            Self::DuplicateKeyId { id } => write!(f, "two keys have id {id}"),
            Self::KeyNotRepresentable { id, len } => write!(
                f,
                "key {id} of {len} bytes cannot be written in ntpd format (hex keys of 11 to \
                 32 bytes, or printable ASCII of up to 10); use the chrony format"
            ),
        }
    }
}

impl std::error::Error for KeyWriteError {}

/// The text of a key file with `keys` in `format`: chrony lines are
/// `id TYPE HEX:…`, ntpd lines `keyno TYPE hex` (short printable keys as
/// ASCII). The text holds the keys, so it is zeroized when dropped.
///
/// # Errors
/// A key id the format does not allow, a duplicate id, or (ntpd) a key that
/// cannot be spelled.
pub fn write_key_file(
    format: KeyFileFormat,
    keys: &[KeyMaterial],
) -> Result<Zeroizing<String>, KeyWriteError> {
    // Sized up front: growing the string would leave copies of keys behind in
    // freed allocations. Per line at most 10 digits of id, a type name of up
    // to 10 characters, `HEX:`, the hex digits, separators and the newline.
    let capacity = 128
        + keys
            .iter()
            .map(|k| 32 + 2 * k.secret().len())
            .sum::<usize>();
    let mut out = Zeroizing::new(String::with_capacity(capacity));
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "# {format} key file written by authtime; keep it secret (mode 0600)"
    );
    for (i, key) in keys.iter().enumerate() {
        let id = key.id();
        if id == 0 || id > format.max_key_id() {
            return Err(KeyWriteError::KeyIdOutOfRange {
                id,
                max: format.max_key_id(),
            });
        }
        if keys[..i].iter().any(|k| k.id() == id) {
            return Err(KeyWriteError::DuplicateKeyId { id });
        }
        let secret = key.secret().expose();
        match format {
            KeyFileFormat::Chrony => {
                let _ = write!(out, "{id} {} HEX:", key.key_type().chrony_name());
                push_hex(&mut out, secret, true);
            }
            KeyFileFormat::Ntpd => {
                let _ = write!(out, "{id} {} ", key.key_type().ntpd_name());
                if (NTPD_MIN_HEX_KEY_BYTES..=NTPD_MAX_HEX_KEY_BYTES).contains(&secret.len()) {
                    push_hex(&mut out, secret, false);
                } else if secret.len() < NTPD_MIN_HEX_KEY_BYTES
                    && !secret.is_empty()
                    && secret.iter().all(|&b| b.is_ascii_graphic() && b != b'#')
                {
                    secret.iter().for_each(|&b| out.push(char::from(b)));
                } else {
                    return Err(KeyWriteError::KeyNotRepresentable {
                        id,
                        len: secret.len(),
                    });
                }
            }
        }
        out.push('\n');
    }
    Ok(out)
}

fn push_hex(out: &mut String, bytes: &[u8], upper: bool) {
    let digits = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    for &b in bytes {
        out.push(char::from(digits[usize::from(b >> 4)]));
        out.push(char::from(digits[usize::from(b & 0xf)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KeyType, parse_key_file};

    fn sample_keys() -> Vec<KeyMaterial> {
        KeyType::ALL
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                KeyMaterial::new(
                    i as u32 + 1,
                    t,
                    &vec![0xa5 ^ i as u8; t.generated_key_len()],
                )
            })
            .collect()
    }

    #[test]
    fn both_formats_parse_back_to_the_same_keys() {
        let keys = sample_keys();
        for format in [KeyFileFormat::Chrony, KeyFileFormat::Ntpd] {
            let text = write_key_file(format, &keys).expect("write");
            let parsed = parse_key_file("out", text.as_bytes(), None).expect("parse back");
            assert_eq!(parsed.format, format, "{}", text.as_str());
            assert!(parsed.warnings.is_empty());
            assert_eq!(parsed.keys.len(), keys.len());
            for (a, b) in keys.iter().zip(&parsed.keys) {
                assert_eq!(a.id(), b.id());
                assert_eq!(a.key_type(), b.key_type());
                assert_eq!(a.secret().expose(), b.secret().expose());
            }
        }
    }

    #[test]
    fn output_never_reallocates() {
        let keys = sample_keys();
        for format in [KeyFileFormat::Chrony, KeyFileFormat::Ntpd] {
            let text = write_key_file(format, &keys).expect("write");
            let capacity = 128
                + keys
                    .iter()
                    .map(|k| 32 + 2 * k.secret().len())
                    .sum::<usize>();
            assert_eq!(text.capacity(), capacity);
        }
    }

    #[test]
    fn chrony_lines_look_like_chronyc_keygen() {
        let text = write_key_file(
            KeyFileFormat::Chrony,
            &[KeyMaterial::new(7, KeyType::Aes128Cmac, &[0xab; 16])],
        )
        .expect("write");
        assert!(text.ends_with("\n7 AES128 HEX:ABABABABABABABABABABABABABABABAB\n"));
    }

    #[test]
    fn ntpd_limits() {
        let big_id = [KeyMaterial::new(70_000, KeyType::Md5, &[1; 16])];
        assert_eq!(
            write_key_file(KeyFileFormat::Ntpd, &big_id),
            Err(KeyWriteError::KeyIdOutOfRange {
                id: 70_000,
                max: 65_535
            })
        );
        assert!(write_key_file(KeyFileFormat::Chrony, &big_id).is_ok());
        let long = [KeyMaterial::new(1, KeyType::Md5, &[1; 40])];
        assert!(matches!(
            write_key_file(KeyFileFormat::Ntpd, &long),
            Err(KeyWriteError::KeyNotRepresentable { id: 1, len: 40 })
        ));
        let ascii = [KeyMaterial::new(1, KeyType::Md5, b"short")];
        let text = write_key_file(KeyFileFormat::Ntpd, &ascii).expect("ascii");
        assert!(text.ends_with("\n1 MD5 short\n"));
        let dup = [
            KeyMaterial::new(1, KeyType::Md5, b"short"),
            KeyMaterial::new(1, KeyType::Md5, b"other"),
        ];
        assert_eq!(
            write_key_file(KeyFileFormat::Chrony, &dup),
            Err(KeyWriteError::DuplicateKeyId { id: 1 })
        );
    }
}
