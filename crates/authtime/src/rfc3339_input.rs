//! Reading a UTC instant given on the command line: RFC 3339
//! (`2036-01-01T00:00:00Z`, `2036-01-01T01:00:00+01:00`, fractions of a
//! second dropped) or `@SECONDS` since the Unix epoch. Written here because
//! the few lines it takes are fewer than a date crate's parsing feature.

use anyhow::{anyhow, bail};

/// Seconds since the Unix epoch of `text`.
///
/// # Errors
/// `text` is neither RFC 3339 nor `@SECONDS`, or lies before 1970.
pub fn parse_utc(text: &str) -> anyhow::Result<u64> {
    if let Some(secs) = text.strip_prefix('@') {
        return secs
            .parse()
            .map_err(|_| anyhow!("{text:?}: not @SECONDS since 1970"));
    }
    let bad = || anyhow!("{text:?}: not an RFC 3339 time such as 2036-01-01T00:00:00Z");
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    if b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| -> anyhow::Result<i64> {
        let s = text.get(r).ok_or_else(bad)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse().map_err(|_| bad())
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return Err(bad());
    }
    if second > 60 {
        return Err(bad());
    }
    let mut rest = text.get(19..).ok_or_else(bad)?;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        rest = &frac[digits..];
    }
    let zone = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(rest.as_bytes()[0], b'+' | b'-') => {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            let part = |r: std::ops::Range<usize>| rest.get(r).ok_or_else(bad);
            let digits = |r: std::ops::Range<usize>| -> anyhow::Result<i64> {
                let s = part(r)?;
                if !s.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(bad());
                }
                s.parse().map_err(|_| bad())
            };
            let (hh, mm) = (digits(1..3)?, digits(4..6)?);
            if part(3..4)? != ":" || hh > 23 || mm > 59 {
                return Err(bad());
            }
            sign * (hh * 3600 + mm * 60)
        }
        _ => return Err(bad()),
    };
    let secs =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - zone;
    if secs < 0 {
        bail!("{text:?}: before 1970");
    }
    u64::try_from(secs).map_err(|_| bad())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::parse_utc;

    #[test]
    fn rfc3339_and_epoch_seconds() {
        assert_eq!(parse_utc("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(parse_utc("2026-03-16T18:26:11Z").unwrap(), 1_773_685_571);
        assert_eq!(
            parse_utc("2026-03-16T19:26:11.25+01:00").unwrap(),
            1_773_685_571
        );
        assert_eq!(parse_utc("2000-02-29T00:00:00Z").unwrap(), 951_782_400);
        assert_eq!(parse_utc("@1773685571").unwrap(), 1_773_685_571);
        for bad in [
            "2026-03-16",
            "2026-13-01T00:00:00Z",
            "1969-12-31T23:59:59Z",
            "@x",
            "2026-03-16T18:26:11",
            "2026-03-16T18:26:11+-1:00",
            "2026-03-16T18:26:11+01:+9",
            "2026-03-16T18:26:11.Z",
            "2026-03-16T18:26:11+01:00:00",
            "@18446744073709551616",
            "2026-03-16T18:26:1\u{e9}Z",
            "",
        ] {
            assert!(parse_utc(bad).is_err(), "{bad}");
        }
    }
}
