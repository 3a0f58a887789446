//! The two key-file formats, their line syntax, and telling them apart.

use core::fmt;

/// A key-file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyFileFormat {
    /// ntpd and NTPsec `ntp.keys`: `keyno type key`, `#` starts a comment
    /// anywhere, key ids 1–65535, keys of up to 20 characters are ASCII and
    /// longer ones hex.
    Ntpd,
    /// chrony `chrony.keys`: `id [type] key`, comment lines start with `#`, `!`,
    /// `;` or `%`, ids 1–2^32−1, type MD5 when omitted, keys ASCII unless
    /// prefixed `HEX:` (`ASCII:` is also accepted).
    Chrony,
}

impl KeyFileFormat {
    /// `ntpd` or `chrony`, as configuration and the command line spell them.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Ntpd => "ntpd",
            Self::Chrony => "chrony",
        }
    }

    /// Parses `ntpd` (also `ntp`, `ntpsec`) or `chrony`, case-insensitively.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        if ["ntpd", "ntp", "ntpsec"]
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
        {
            Some(Self::Ntpd)
        } else if name.eq_ignore_ascii_case("chrony") {
            Some(Self::Chrony)
        } else {
            None
        }
    }

    /// The largest key id (ntpd's `NTP_MAXKEY`; chrony's `uint32_t`).
    #[must_use]
    pub const fn max_key_id(self) -> u32 {
        match self {
            Self::Ntpd => 65_535,
            Self::Chrony => u32::MAX,
        }
    }

    /// The longest line, in bytes without the line end, that the reference
    /// implementation reads whole (NTPsec's 512-byte buffer, chrony's 2048).
    #[must_use]
    pub const fn max_line_len(self) -> usize {
        match self {
            Self::Ntpd => 510,
            Self::Chrony => 2046,
        }
    }

    /// The part of `line` that is not a comment.
    pub(crate) fn content(self, line: &[u8]) -> &[u8] {
        match self {
            Self::Ntpd => line
                .iter()
                .position(|&b| b == b'#')
                .map_or(line, |end| &line[..end]),
            Self::Chrony => match line.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'#' | b'!' | b';' | b'%') => &[],
                _ => line,
            },
        }
    }

    /// Guesses the format of `text` from syntax that only chrony uses, and
    /// says why. Files without such syntax read the same in both formats except
    /// for unprefixed keys longer than 20 characters (hex for ntpd, ASCII for
    /// chrony); ntpd's reading is chosen for them, as chrony's own tools always
    /// write `HEX:`.
    #[must_use]
    pub fn detect(text: &[u8]) -> (Self, &'static str) {
        for (_, line) in lines(text) {
            if let Some(b'!' | b';' | b'%') = line.iter().find(|b| !b.is_ascii_whitespace()) {
                return (Self::Chrony, "a comment starts with `!`, `;` or `%`");
            }
            let mut w = words(Self::Ntpd.content(line));
            let (Some(id), second, third) = (w.next(), w.next(), w.next()) else {
                continue;
            };
            if second.is_some() && third.is_none() {
                return (Self::Chrony, "a line has no key type");
            }
            let key = third.or(second).unwrap_or_default();
            if key.starts_with(b"HEX:") || key.starts_with(b"ASCII:") {
                return (Self::Chrony, "a key has a `HEX:` or `ASCII:` prefix");
            }
            let id = core::str::from_utf8(id)
                .ok()
                .and_then(|s| s.parse::<u64>().ok());
            if id.is_some_and(|id| id > u64::from(Self::Ntpd.max_key_id())) {
                return (Self::Chrony, "a key id is above 65535");
            }
        }
        (Self::Ntpd, "no chrony-only syntax found")
    }
}

impl fmt::Display for KeyFileFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The lines of `text` with their 1-based numbers, without `\n` or `\r\n`.
pub(crate) fn lines(text: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    text.split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .enumerate()
        .map(|(i, line)| (i + 1, line))
}

/// The whitespace-separated words of `line`.
pub(crate) fn words(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(u8::is_ascii_whitespace)
        .filter(|word| !word.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_per_format() {
        assert_eq!(
            KeyFileFormat::Ntpd.content(b"1 MD5 abc # key"),
            b"1 MD5 abc "
        );
        assert_eq!(KeyFileFormat::Chrony.content(b"1 MD5 ab#c"), b"1 MD5 ab#c");
        assert_eq!(KeyFileFormat::Chrony.content(b"  % comment"), b"");
        assert_eq!(KeyFileFormat::Chrony.content(b"; comment"), b"");
    }

    #[test]
    fn detection_from_chrony_only_syntax() {
        let cases: [(&[u8], KeyFileFormat); 7] = [
            (b"1 MD5 HEX:0011", KeyFileFormat::Chrony),
            (b"# c\n1 ASCII:abc\n", KeyFileFormat::Chrony),
            (b"1 secret", KeyFileFormat::Chrony),
            (b"70000 SHA1 abcdefabcdefabcdefabcdef", KeyFileFormat::Chrony),
            (b"! chrony comment\n1 MD5 x", KeyFileFormat::Chrony),
            (b"1 MD5 abcdef  # MD5 key\n2 SHA1 00112233445566778899aabbccddeeff00112233  # SHA1 key\n", KeyFileFormat::Ntpd),
            (b"", KeyFileFormat::Ntpd),
        ];
        for (text, expected) in cases {
            assert_eq!(KeyFileFormat::detect(text).0, expected, "{text:?}");
        }
    }

    #[test]
    fn lines_and_words() {
        let text = b"a b\r\n\n c\td ";
        let v: Vec<(usize, Vec<&[u8]>)> =
            lines(text).map(|(n, l)| (n, words(l).collect())).collect();
        assert_eq!(
            v,
            [
                (1, vec![&b"a"[..], b"b"]),
                (2, vec![]),
                (3, vec![&b"c"[..], b"d"])
            ]
        );
        assert_eq!(
            KeyFileFormat::from_name("NTPsec"),
            Some(KeyFileFormat::Ntpd)
        );
        assert_eq!(
            KeyFileFormat::from_name("chrony"),
            Some(KeyFileFormat::Chrony)
        );
        assert_eq!(KeyFileFormat::from_name("x"), None);
    }
}
