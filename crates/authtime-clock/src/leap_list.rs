//! The IERS/NIST `leap-seconds.list` file (shipped by tzdata as
//! `/usr/share/zoneinfo/leap-seconds.list`).
//!
//! # Format
//!
//! - a data line is `NTP-seconds TAI-offset [# comment]`: from the instant
//!   `NTP-seconds` (seconds since 1900-01-01 00:00:00 UTC, always a UTC
//!   midnight) TAI − UTC is `TAI-offset` seconds. When the offset grows by
//!   one, 23:59:60 was inserted at the end of the previous day; when it
//!   shrinks by one, 23:59:59 was deleted;
//! - `#$ NTP-seconds`: when the file was last updated;
//! - `#@ NTP-seconds`: when the file expires;
//! - `#h w1 w2 w3 w4 w5`: the SHA-1 of the file's significant data, as five
//!   32-bit words in hexadecimal (big-endian; the published files drop
//!   leading zeros of a word, as in `8b60e46`);
//! - any other line starting with `#`, and blank lines, are comments.
//!
//! # Hash
//!
//! The SHA-1 is computed over the ASCII digits only, in file order, of the
//! `#$` value, the `#@` value and the first two fields of every data line;
//! white space, comments and the `#h` line itself are left out. This is what
//! the NIST file's own comment says ("the hash computation ignores comments
//! and whitespace characters in data lines. It includes the NTP values of
//! both the last modification time and the expiration time of the file, but
//! not the white space on those lines"), and what NTP's reference
//! implementation and NTPsec check (digits of the `#$`, `#@` and data lines,
//! up to any `#`). A missing or wrong hash does not fail the parse: it is
//! reported in [`LeapList::hash`] for the caller to warn about.

use core::fmt;

use authtime_wire::UnixTime;
use sha1::{Digest, Sha1};

use crate::reading::LeapWarning;

/// Seconds from the NTP epoch (1900-01-01) to the Unix epoch (1970-01-01).
const NTP_TO_UNIX: i64 = 2_208_988_800;
const SECS_PER_DAY: i64 = 86_400;

/// One line of the list: from `ntp_secs` on, TAI − UTC is `tai_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeapEntry {
    /// The instant the offset takes effect (a UTC midnight), in seconds since
    /// 1900-01-01 00:00:00 UTC.
    pub ntp_secs: u64,
    /// TAI − UTC from then on, in seconds.
    pub tai_offset: i32,
}

impl LeapEntry {
    /// The instant the offset takes effect, in seconds since the Unix epoch.
    #[must_use]
    pub fn unix_secs(&self) -> i64 {
        ntp_to_unix(self.ntp_secs)
    }
}

/// What the file's `#h` line says about its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashCheck {
    /// The SHA-1 in the `#h` line matches the data.
    Valid,
    /// The SHA-1 does not match, or the `#h` line is malformed or repeated.
    Invalid,
    /// The file has no `#h` line.
    Absent,
}

/// A parsed `leap-seconds.list`: entries strictly increasing in time, each
/// offset one more or one less than the previous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeapList {
    entries: Vec<LeapEntry>,
    updated: Option<u64>,
    expires: Option<u64>,
    hash: HashCheck,
}

/// Why a `leap-seconds.list` was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeapListError {
    /// The 1-based line at fault (for an empty list, the last line of the
    /// input, or 1 if there is none).
    pub line: usize,
    /// What is wrong with it.
    pub kind: LeapListErrorKind,
}

/// What is wrong with a line of a `leap-seconds.list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeapListErrorKind {
    /// Not a comment, a special `#$`/`#@`/`#h` line or `NTP-seconds offset`.
    Garbage,
    /// A number too large (times above 2^63 − 1, offsets above 2^31 − 1).
    Overflow,
    /// An entry that is not later than the previous one.
    NotIncreasing,
    /// An entry whose time is not a UTC midnight.
    NotMidnight,
    /// An offset that differs from the previous one by other than ±1.
    OffsetJump {
        /// The previous entry's offset.
        from: i32,
        /// This entry's offset.
        to: i32,
    },
    /// A second `#$` or `#@` line.
    Duplicate,
    /// No data lines at all.
    Empty,
}

impl fmt::Display for LeapListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "leap-seconds list, line {}: ", self.line)?;
        match self.kind {
            LeapListErrorKind::Garbage => {
                f.write_str("not a comment, a #$/#@ line or an \"NTP-seconds TAI-offset\" entry")
            }
            LeapListErrorKind::Overflow => f.write_str("number out of range"),
            LeapListErrorKind::NotIncreasing => {
                f.write_str("entry not later than the previous one")
            }
            LeapListErrorKind::NotMidnight => f.write_str("entry time is not a UTC midnight"),
            LeapListErrorKind::OffsetJump { from, to } => write!(
                f,
                "TAI offset changes from {from} to {to}, not by one second"
            ),
            LeapListErrorKind::Duplicate => f.write_str("repeated #$ or #@ line"),
            LeapListErrorKind::Empty => f.write_str("no leap-second entries in the list"),
        }
    }
}

impl std::error::Error for LeapListError {}

/// Seconds since the Unix epoch of `ntp` seconds since the NTP epoch
/// (saturating; parsed values never exceed `i64::MAX`).
fn ntp_to_unix(ntp: u64) -> i64 {
    i64::try_from(ntp)
        .unwrap_or(i64::MAX)
        .saturating_sub(NTP_TO_UNIX)
}

/// A decimal number made of ASCII digits only, at most `max`.
fn parse_decimal(text: &str, max: u64, line: usize) -> Result<u64, LeapListError> {
    let err = |kind| LeapListError { line, kind };
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(LeapListErrorKind::Garbage));
    }
    let mut value: u64 = 0;
    for b in text.bytes() {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .filter(|&v| v <= max)
            .ok_or_else(|| err(LeapListErrorKind::Overflow))?;
    }
    Ok(value)
}

/// The value of a `#$` or `#@` line (`rest` follows the two marker
/// characters): one number, then optionally a comment.
fn parse_special_time(rest: &str, line: usize) -> Result<(u64, &str), LeapListError> {
    let body = rest.split('#').next().unwrap_or_default();
    let mut fields = body.split_whitespace();
    match (fields.next(), fields.next()) {
        (Some(value), None) => Ok((parse_decimal(value, i64::MAX as u64, line)?, value)),
        _ => Err(LeapListError {
            line,
            kind: LeapListErrorKind::Garbage,
        }),
    }
}

/// The 20 bytes of a `#h` line (`rest` follows `#h`): five words of 1 to 8
/// hex digits. `None` if malformed.
fn parse_hash_line(rest: &str) -> Option<[u8; 20]> {
    let mut out = [0u8; 20];
    let mut words = rest.split_whitespace();
    for chunk in out.chunks_exact_mut(4) {
        let word = words.next()?;
        if word.is_empty() || word.len() > 8 || !word.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let value = u32::from_str_radix(word, 16).ok()?;
        chunk.copy_from_slice(&value.to_be_bytes());
    }
    match words.next() {
        None => Some(out),
        Some(_) => None,
    }
}

/// The hash line as read so far.
enum DeclaredHash {
    None,
    Words([u8; 20]),
    Malformed,
}

/// Parses a `leap-seconds.list` file.
///
/// # Errors
///
/// [`LeapListError`] naming the first line that is garbage, holds a number
/// out of range, repeats `#$` or `#@`, or breaks the list's order (times
/// strictly increasing, at UTC midnights, offsets changing by ±1); or the
/// last line if there are no entries. A bad or missing hash is not an error:
/// see [`LeapList::hash`].
pub fn parse(text: &str) -> Result<LeapList, LeapListError> {
    let mut hasher = Sha1::new();
    let mut declared = DeclaredHash::None;
    let mut entries: Vec<LeapEntry> = Vec::new();
    let mut updated = None;
    let mut expires = None;
    let mut last_line = 1;

    for (index, raw) in text.lines().enumerate() {
        let line = index.saturating_add(1);
        last_line = line;
        let raw = raw.trim_end_matches('\r');
        let err = |kind| LeapListError { line, kind };

        if let Some(rest) = raw.strip_prefix("#$") {
            let (value, digits) = parse_special_time(rest, line)?;
            if updated.replace(value).is_some() {
                return Err(err(LeapListErrorKind::Duplicate));
            }
            hasher.update(digits.as_bytes());
            continue;
        }
        if let Some(rest) = raw.strip_prefix("#@") {
            let (value, digits) = parse_special_time(rest, line)?;
            if expires.replace(value).is_some() {
                return Err(err(LeapListErrorKind::Duplicate));
            }
            hasher.update(digits.as_bytes());
            continue;
        }
        if let Some(rest) = raw.strip_prefix("#h") {
            declared = match (declared, parse_hash_line(rest)) {
                (DeclaredHash::None, Some(words)) => DeclaredHash::Words(words),
                _ => DeclaredHash::Malformed,
            };
            continue;
        }

        let body = raw.split('#').next().unwrap_or_default();
        let mut fields = body.split_whitespace();
        let (time_text, offset_text) = match (fields.next(), fields.next(), fields.next()) {
            (None, _, _) => continue, // blank or comment
            (Some(time), Some(offset), None) => (time, offset),
            _ => return Err(err(LeapListErrorKind::Garbage)),
        };
        let ntp_secs = parse_decimal(time_text, i64::MAX as u64, line)?;
        let tai_offset = parse_decimal(offset_text, i32::MAX as u64, line)?;
        let tai_offset = i32::try_from(tai_offset).map_err(|_| err(LeapListErrorKind::Overflow))?;
        if ntp_secs % SECS_PER_DAY as u64 != 0 {
            return Err(err(LeapListErrorKind::NotMidnight));
        }
        if let Some(prev) = entries.last() {
            if ntp_secs <= prev.ntp_secs {
                return Err(err(LeapListErrorKind::NotIncreasing));
            }
            let step = i64::from(tai_offset) - i64::from(prev.tai_offset);
            if step != 1 && step != -1 {
                return Err(err(LeapListErrorKind::OffsetJump {
                    from: prev.tai_offset,
                    to: tai_offset,
                }));
            }
        }
        hasher.update(time_text.as_bytes());
        hasher.update(offset_text.as_bytes());
        entries.push(LeapEntry {
            ntp_secs,
            tai_offset,
        });
    }

    if entries.is_empty() {
        return Err(LeapListError {
            line: last_line,
            kind: LeapListErrorKind::Empty,
        });
    }
    let hash = match declared {
        DeclaredHash::None => HashCheck::Absent,
        DeclaredHash::Malformed => HashCheck::Invalid,
        DeclaredHash::Words(words) => {
            if hasher.finalize().as_slice() == words.as_slice() {
                HashCheck::Valid
            } else {
                HashCheck::Invalid
            }
        }
    };
    Ok(LeapList {
        entries,
        updated,
        expires,
        hash,
    })
}

impl LeapList {
    /// The entries, strictly increasing in time (never empty).
    #[must_use]
    pub fn entries(&self) -> &[LeapEntry] {
        &self.entries
    }

    /// Whether the `#h` line matches the data.
    #[must_use]
    pub fn hash(&self) -> HashCheck {
        self.hash
    }

    /// When the file was last updated (`#$`), if it says.
    #[must_use]
    pub fn updated_at(&self) -> Option<UnixTime> {
        self.updated.map(|ntp| UnixTime::new(ntp_to_unix(ntp), 0))
    }

    /// When the file expires (`#@`), if it says.
    #[must_use]
    pub fn expires_at(&self) -> Option<UnixTime> {
        self.expires.map(|ntp| UnixTime::new(ntp_to_unix(ntp), 0))
    }

    /// Whether `now` is at or after the expiry. A list without `#@` never
    /// expires here; the caller may warn on [`Self::expires_at`] being `None`.
    #[must_use]
    pub fn is_expired(&self, now: UnixTime) -> bool {
        self.expires_at().is_some_and(|expiry| now >= expiry)
    }

    /// The leap second to announce at `now`: [`LeapWarning::Insert`] (or
    /// [`LeapWarning::Delete`]) when `now` is on the last UTC day before an
    /// entry whose offset is one more (or one less) than the previous entry's,
    /// that is when the entry takes effect at the next UTC midnight after
    /// `now`; [`LeapWarning::None`] otherwise. The first entry is the start of
    /// the list, not a leap.
    #[must_use]
    pub fn warning_for(&self, now: UnixTime) -> LeapWarning {
        let next_midnight = now
            .secs
            .div_euclid(SECS_PER_DAY)
            .checked_add(1)
            .and_then(|day| day.checked_mul(SECS_PER_DAY));
        let Some(next_midnight) = next_midnight else {
            return LeapWarning::None;
        };
        let found = self
            .entries
            .windows(2)
            .find(|pair| pair.get(1).is_some_and(|e| e.unix_secs() == next_midnight));
        match found {
            Some([prev, next]) => match i64::from(next.tai_offset) - i64::from(prev.tai_offset) {
                1 => LeapWarning::Insert,
                -1 => LeapWarning::Delete,
                _ => LeapWarning::None,
            },
            _ => LeapWarning::None,
        }
    }

    /// TAI − UTC at `now`, in seconds: the offset of the last entry at or
    /// before `now`; `None` before the first entry. Past the expiry this is
    /// still the last known offset (see [`Self::is_expired`]).
    #[must_use]
    pub fn tai_offset(&self, now: UnixTime) -> Option<i32> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.unix_secs() <= now.secs)
            .map(|e| e.tai_offset)
    }
}

/// Fuzzing entry point: parses arbitrary bytes (invalid UTF-8 replaced) and,
/// when they parse, queries the list at a few times. Must never panic.
#[doc(hidden)]
pub fn fuzz_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(list) = parse(&text) else {
        return;
    };
    let mut times = vec![
        UnixTime::new(i64::MIN, 0),
        UnixTime::new(i64::MAX, 999_999_999),
        UnixTime::new(0, 0),
    ];
    for entry in list.entries() {
        let at = entry.unix_secs();
        for delta in [-SECS_PER_DAY, -1, 0, 1] {
            times.push(UnixTime::new(at.saturating_add(delta), 0));
        }
    }
    times.extend(list.expires_at());
    times.extend(list.updated_at());
    for now in times {
        let _ = list.warning_for(now);
        let _ = list.tai_offset(now);
        let _ = list.is_expired(now);
    }
    let _ = (list.hash(), list.expires_at(), list.updated_at());
}

#[cfg(test)]
mod tests {
    use super::*;

    // An excerpt of the leap-seconds.list published by the IERS (Earth
    // Orientation Center, Paris Observatory, from IERS Bulletin C) and shipped
    // by tzdata: its update and expiry stamps and its last four entries. The
    // hash was computed for this excerpt with the rule in the module docs
    // (SHA-1 of "3960835200" "3991593600" "3439756800" "34" ... "37"); its
    // second word has a leading zero, dropped as the published files do.
    const EXCERPT: &str = "\
#\tThe following line shows the last update of this file in NTP timestamp:
#
#$\t3960835200
#
#\tExpire date in NTP timestamp:
#
#@\t3991593600
#
#NTP Time      DTAI    Day Month Year
#
3439756800      34      # 1 Jan 2009
3550089600      35      # 1 Jul 2012
3644697600      36      # 1 Jul 2015
3692217600      37      # 1 Jan 2017
#
#h\t88703993 fd132ff 6dd9f2e0 ba0d3655 c2b118a1
";

    const GOOD_HASH: &str = "#h\t88703993 fd132ff 6dd9f2e0 ba0d3655 c2b118a1";

    fn at(secs: i64) -> UnixTime {
        UnixTime::new(secs, 0)
    }

    // 2017-01-01 00:00:00 UTC, when TAI - UTC became 37 s.
    const JAN_2017: i64 = 1_483_228_800;
    // 2015-07-01 00:00:00 UTC, when TAI - UTC became 36 s.
    const JUL_2015: i64 = 1_435_708_800;

    fn excerpt() -> LeapList {
        match parse(EXCERPT) {
            Ok(list) => list,
            Err(e) => panic!("excerpt rejected: {e}"),
        }
    }

    fn error_of(text: &str) -> LeapListError {
        match parse(text) {
            Ok(list) => panic!("accepted: {list:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn leap_list_excerpt_parses_with_valid_hash() {
        let list = excerpt();
        assert_eq!(list.hash(), HashCheck::Valid);
        assert_eq!(list.entries().len(), 4);
        assert_eq!(
            list.entries().last(),
            Some(&LeapEntry {
                ntp_secs: 3_692_217_600,
                tai_offset: 37
            })
        );
        assert_eq!(list.entries()[3].unix_secs(), JAN_2017);
        // 2025-07-07 and 2026-06-28, 00:00 UTC.
        assert_eq!(list.updated_at(), Some(at(1_751_846_400)));
        assert_eq!(list.expires_at(), Some(at(1_782_604_800)));
    }

    #[test]
    fn leap_list_zero_padded_hash_words_also_match() {
        let text = EXCERPT.replace(" fd132ff ", " 0fd132ff ");
        assert_eq!(parse(&text).map(|l| l.hash()), Ok(HashCheck::Valid));
    }

    #[test]
    fn leap_list_hash_ignores_comments_and_white_space() {
        let text = EXCERPT
            .replace("3550089600      35      # 1 Jul 2012", " 3550089600 35 #")
            .replace("#$\t3960835200", "#$ 3960835200  # updated")
            .replace("\n", "\r\n");
        assert_eq!(parse(&text).map(|l| l.hash()), Ok(HashCheck::Valid));
    }

    #[test]
    fn leap_list_wrong_hash_is_invalid() {
        let wrong = EXCERPT.replace(GOOD_HASH, "#h\t88703993 fd132ff 6dd9f2e0 ba0d3655 c2b118a2");
        assert_eq!(parse(&wrong).map(|l| l.hash()), Ok(HashCheck::Invalid));
        // Same hash, altered data (expiry pushed by a day).
        let altered = EXCERPT.replace("3991593600", "3991680000");
        assert_eq!(parse(&altered).map(|l| l.hash()), Ok(HashCheck::Invalid));
        // Malformed or repeated hash lines.
        for bad in [
            "#h\t88703993 fd132ff 6dd9f2e0 ba0d3655",
            "#h\t88703993 fd132ff 6dd9f2e0 ba0d3655 c2b118a1 00",
            "#h\t88703993 fd132ff 6dd9f2e0 ba0d3655 1c2b118a1",
            "#h\t88703993 fd132ff 6dd9f2e0 ba0d3655 c2b118ag",
            "#h",
        ] {
            let text = EXCERPT.replace(GOOD_HASH, bad);
            assert_eq!(
                parse(&text).map(|l| l.hash()),
                Ok(HashCheck::Invalid),
                "{bad}"
            );
        }
        let twice = format!("{EXCERPT}{GOOD_HASH}\n");
        assert_eq!(parse(&twice).map(|l| l.hash()), Ok(HashCheck::Invalid));
    }

    #[test]
    fn leap_list_no_hash_is_absent() {
        let text = EXCERPT.replace(GOOD_HASH, "");
        assert_eq!(parse(&text).map(|l| l.hash()), Ok(HashCheck::Absent));
    }

    #[test]
    fn leap_list_warning_on_the_last_day_before_a_leap() {
        let list = excerpt();
        // 2016-12-31 12:00 UTC.
        assert_eq!(list.warning_for(at(JAN_2017 - 43_200)), LeapWarning::Insert);
        // 2016-12-31 00:00:00 and 23:59:59 UTC.
        assert_eq!(list.warning_for(at(JAN_2017 - 86_400)), LeapWarning::Insert);
        assert_eq!(
            list.warning_for(UnixTime::new(JAN_2017 - 1, 999_999_999)),
            LeapWarning::Insert
        );
        // 2016-12-30 12:00 and 23:59:59 UTC.
        assert_eq!(list.warning_for(at(JAN_2017 - 129_600)), LeapWarning::None);
        assert_eq!(list.warning_for(at(JAN_2017 - 86_401)), LeapWarning::None);
        // 2017-01-01 00:00:00 and 00:00:01 UTC.
        assert_eq!(list.warning_for(at(JAN_2017)), LeapWarning::None);
        assert_eq!(list.warning_for(at(JAN_2017 + 1)), LeapWarning::None);
        // 2015-06-30 23:59:59 UTC.
        assert_eq!(list.warning_for(at(JUL_2015 - 1)), LeapWarning::Insert);
        // The first entry (2009-01-01) has no predecessor in the list.
        assert_eq!(list.warning_for(at(1_230_768_000 - 1)), LeapWarning::None);
        // The ends of time.
        assert_eq!(list.warning_for(at(i64::MAX)), LeapWarning::None);
        assert_eq!(list.warning_for(at(i64::MIN)), LeapWarning::None);
    }

    #[test]
    fn leap_list_negative_leap_warns_delete() {
        let text = "3692217600 37\n3723753600 36 # a hypothetical 1 Jan 2018\n";
        let list = parse(text).expect("valid list");
        assert_eq!(list.hash(), HashCheck::Absent);
        // 2017-12-31 12:00 UTC.
        let jan_2018 = 3_723_753_600 - NTP_TO_UNIX;
        assert_eq!(list.warning_for(at(jan_2018 - 43_200)), LeapWarning::Delete);
        assert_eq!(list.tai_offset(at(jan_2018)), Some(36));
    }

    #[test]
    fn leap_list_tai_offset() {
        let list = excerpt();
        assert_eq!(list.tai_offset(at(JAN_2017 - 1)), Some(36));
        assert_eq!(list.tai_offset(at(JAN_2017)), Some(37));
        assert_eq!(list.tai_offset(at(i64::MAX)), Some(37));
        assert_eq!(list.tai_offset(at(JUL_2015)), Some(36));
        assert_eq!(list.tai_offset(at(JUL_2015 - 1)), Some(35));
        // Before 2009-01-01, the excerpt does not say.
        assert_eq!(list.tai_offset(at(1_230_768_000 - 1)), None);
        assert_eq!(list.tai_offset(at(i64::MIN)), None);
    }

    #[test]
    fn leap_list_expiry() {
        let list = excerpt();
        let expiry = 1_782_604_800; // 2026-06-28 00:00 UTC
        assert!(!list.is_expired(at(expiry - 1)));
        assert!(!list.is_expired(UnixTime::new(expiry - 1, 999_999_999)));
        assert!(list.is_expired(at(expiry)));
        assert!(list.is_expired(at(i64::MAX)));
        let no_expiry = parse("3692217600 37\n").expect("valid list");
        assert_eq!(no_expiry.expires_at(), None);
        assert_eq!(no_expiry.updated_at(), None);
        assert!(!no_expiry.is_expired(at(i64::MAX)));
    }

    #[test]
    fn leap_list_rejects_garbage() {
        for (text, line) in [
            ("3644697600 36\nhello world\n", 2),
            ("3644697600\n", 1),
            ("3644697600 36 12\n", 1),
            ("3644697600 +36\n", 1),
            ("3644697600 -36\n", 1),
            ("0x3644697600 36\n", 1),
            ("#\n#$ soon\n3644697600 36\n", 2),
            ("#@ 1 2\n3644697600 36\n", 1),
            ("#@\n3644697600 36\n", 1),
            ("3644697600 36\n3692217600 3７\n", 2),
        ] {
            let e = error_of(text);
            assert_eq!(
                (e.line, &e.kind),
                (line, &LeapListErrorKind::Garbage),
                "{text:?}"
            );
        }
    }

    #[test]
    fn leap_list_rejects_non_increasing_times() {
        let e = error_of("3644697600 36\n# c\n3644697600 37\n");
        assert_eq!((e.line, e.kind), (3, LeapListErrorKind::NotIncreasing));
        let e = error_of("3692217600 37\n3644697600 36\n");
        assert_eq!((e.line, e.kind), (2, LeapListErrorKind::NotIncreasing));
    }

    #[test]
    fn leap_list_rejects_offset_jumps() {
        let e = error_of("3644697600 36\n3692217600 38\n");
        assert_eq!(
            (e.line, e.kind),
            (2, LeapListErrorKind::OffsetJump { from: 36, to: 38 })
        );
        let e = error_of("3644697600 36\n3692217600 36\n");
        assert_eq!(
            (e.line, e.kind),
            (2, LeapListErrorKind::OffsetJump { from: 36, to: 36 })
        );
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn leap_list_rejects_overflow() {
        let e = error_of("99999999999999999999 36\n");
        assert_eq!((e.line, e.kind), (1, LeapListErrorKind::Overflow));
        let e = error_of("3644697600 36\n\n9223372036854775808 37\n");
        assert_eq!((e.line, e.kind), (3, LeapListErrorKind::Overflow));
        let e = error_of("3644697600 2147483648\n");
        assert_eq!((e.line, e.kind), (1, LeapListErrorKind::Overflow));
        let e = error_of("#$ 99999999999999999999\n3644697600 36\n");
        assert_eq!((e.line, e.kind), (1, LeapListErrorKind::Overflow));
    }

    #[test]
    fn leap_list_rejects_times_off_midnight() {
        let e = error_of("3644697600 36\n3692217601 37\n");
        assert_eq!((e.line, e.kind), (2, LeapListErrorKind::NotMidnight));
    }

    #[test]
    fn leap_list_rejects_duplicate_stamps() {
        let e = error_of("#@ 3991593600\n#@ 3991593600\n3644697600 36\n");
        assert_eq!((e.line, e.kind), (2, LeapListErrorKind::Duplicate));
    }

    #[test]
    fn leap_list_rejects_empty_lists() {
        let e = error_of("");
        assert_eq!((e.line, e.kind), (1, LeapListErrorKind::Empty));
        let e = error_of("# only comments\n#$ 3960835200\n\n#@ 3991593600\n");
        assert_eq!((e.line, &e.kind), (4, &LeapListErrorKind::Empty));
        assert!(e.to_string().contains("line 4"), "{e}");
        let hash_only = EXCERPT
            .lines()
            .filter(|l| !l.starts_with('3'))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(error_of(&hash_only).kind, LeapListErrorKind::Empty);
    }

    #[test]
    fn leap_list_fuzz_entry_survives_odd_input() {
        fuzz_parse(EXCERPT.as_bytes());
        fuzz_parse(b"\xff\xfe3644697600 36\n#h \xc3\n");
        fuzz_parse(b"0 0\n86400 1\n");
        fuzz_parse(b"9223372036785600000 2147483647\n");
        fuzz_parse(b"#h 0 0 0 0 0\n0 -1");
        fuzz_parse(b"");
    }

    /// The list tzdata installs, if this machine has it: hash valid, last
    /// entry 2017-01-01 (TAI - UTC = 37 s).
    #[test]
    fn leap_list_system_file_if_present() {
        let Ok(text) = std::fs::read_to_string("/usr/share/zoneinfo/leap-seconds.list") else {
            eprintln!("no /usr/share/zoneinfo/leap-seconds.list: skipped");
            return;
        };
        let list = parse(&text).expect("system leap-seconds.list parses");
        assert_eq!(list.hash(), HashCheck::Valid);
        assert_eq!(
            list.entries().last(),
            Some(&LeapEntry {
                ntp_secs: 3_692_217_600,
                tai_offset: 37
            })
        );
        assert_eq!(list.entries().first().map(|e| e.tai_offset), Some(10));
        assert!(list.expires_at().is_some());
        assert_eq!(list.warning_for(at(JAN_2017 - 43_200)), LeapWarning::Insert);
        assert_eq!(list.warning_for(at(JUL_2015 - 1)), LeapWarning::Insert);
        assert_eq!(list.tai_offset(at(JAN_2017)), Some(37));
    }
}
