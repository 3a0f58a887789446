//! When the server's certificate chain stops being valid: the earliest
//! notAfter (RFC 5280 section 4.1.2.5) of the certificates it serves, for the
//! metric `authtime_ntske_certificate_expiry_timestamp_seconds` and the alert
//! that warns before clients start refusing the handshake.
//!
//! Written by hand: the server links no X.509 parser (rustls hands the chain to
//! the client as opaque DER, and webpki, which parses it, does not expose the
//! validity period). Only the path to `tbsCertificate.validity.notAfter` is
//! walked, never trusted for anything but this number; any DER it does not
//! understand gives `None`, never a panic.

use rustls_pki_types::CertificateDer;

/// The earliest notAfter of `chain`, in seconds since the Unix epoch, or `None`
/// when a certificate's validity cannot be read.
pub fn earliest_not_after(chain: &[CertificateDer<'_>]) -> Option<u64> {
    chain
        .iter()
        .map(|cert| not_after(cert.as_ref()))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .min()
}

/// The notAfter of one DER certificate, in seconds since the Unix epoch.
pub fn not_after(der: &[u8]) -> Option<u64> {
    const SEQUENCE: u8 = 0x30;
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signature }
    let (certificate, _) = element(der, SEQUENCE)?;
    let (mut tbs, _) = element(certificate, SEQUENCE)?;
    // version [0] EXPLICIT is absent from v1 certificates.
    if tbs.first() == Some(&0xa0) {
        tbs = any_element(tbs)?.1;
    }
    let (_, rest) = element(tbs, 0x02)?; // serialNumber INTEGER
    let (_, rest) = element(rest, SEQUENCE)?; // signature AlgorithmIdentifier
    let (_, rest) = element(rest, SEQUENCE)?; // issuer Name
    let (validity, _) = element(rest, SEQUENCE)?;
    let (_, after) = any_element(validity)?; // notBefore
    let (tag, content, _) = split(after)?;
    match tag {
        0x17 => utc_time(content),
        0x18 => generalized_time(content),
        _ => None,
    }
}

/// The content of the element at the start of `input` if its tag is `tag`,
/// and what follows it.
fn element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (found, content, rest) = split(input)?;
    (found == tag).then_some((content, rest))
}

/// Skips the element at the start of `input`: (its content, what follows).
fn any_element(input: &[u8]) -> Option<(&[u8], &[u8])> {
    let (_, content, rest) = split(input)?;
    Some((content, rest))
}

/// Tag, content and rest of the DER element at the start of `input`
/// (single-byte tags, definite lengths of up to four bytes).
fn split(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let (bytes, after) = rest.split_at(n);
        rest = after;
        bytes
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b))
    };
    if rest.len() < len {
        return None;
    }
    let (content, after) = rest.split_at(len);
    Some((tag, content, after))
}

/// UTCTime `YYMMDDHHMMSSZ` (RFC 5280 section 4.1.2.5.1: YY below 50 is 20YY).
fn utc_time(text: &[u8]) -> Option<u64> {
    if text.len() != 13 {
        return None;
    }
    let yy = digits(&text[..2])?;
    let year = if yy < 50 { 2000 + yy } else { 1900 + yy };
    seconds(year, &text[2..])
}

/// GeneralizedTime `YYYYMMDDHHMMSSZ` (RFC 5280 section 4.1.2.5.2).
fn generalized_time(text: &[u8]) -> Option<u64> {
    if text.len() != 15 {
        return None;
    }
    seconds(digits(&text[..4])?, &text[4..])
}

/// `MMDDHHMMSSZ` of `year`, in seconds since the Unix epoch.
fn seconds(year: u64, rest: &[u8]) -> Option<u64> {
    if rest.get(10) != Some(&b'Z') || year < 1970 {
        return None;
    }
    let field = |i: usize| digits(&rest[i..i + 2]);
    let (month, day) = (field(0)?, field(2)?);
    let (hour, minute, second) = (field(4)?, field(6)?, field(8)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // Days from 1970-01-01 to the civil date (H. Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second.min(60))
}

fn digits(text: &[u8]) -> Option<u64> {
    text.iter().try_fold(0u64, |acc, b| {
        b.is_ascii_digit().then(|| acc * 10 + u64::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use rcgen::{CertificateParams, KeyPair, date_time_ymd};

    fn cert_until(year: i32, month: u8, day: u8) -> CertificateDer<'static> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(year, month, day);
        params.self_signed(&key).unwrap().der().clone()
    }

    #[test]
    fn utc_time_not_after_of_an_rcgen_certificate() {
        // 2027-01-01T00:00:00Z (`date -d 2027-01-01Z +%s`).
        assert_eq!(not_after(&cert_until(2027, 1, 1)), Some(1_798_761_600));
        // A leap day: 2028-02-29T00:00:00Z.
        assert_eq!(not_after(&cert_until(2028, 2, 29)), Some(1_835_395_200));
    }

    #[test]
    fn generalized_time_from_2050_on() {
        // RFC 5280 encodes 2050 and later as GeneralizedTime; 2051-03-01T00:00:00Z.
        assert_eq!(not_after(&cert_until(2051, 3, 1)), Some(2_561_241_600));
    }

    #[test]
    fn the_chain_expires_with_its_first_certificate() {
        let chain = [cert_until(2040, 1, 1), cert_until(2027, 1, 1)];
        assert_eq!(earliest_not_after(&chain), Some(1_798_761_600));
        let broken = [
            cert_until(2040, 1, 1),
            CertificateDer::from(vec![0x30, 0x00]),
        ];
        assert_eq!(earliest_not_after(&broken), None);
    }

    #[test]
    fn every_truncation_and_garbage_gives_none_without_panicking() {
        let der = cert_until(2027, 1, 1);
        let bytes = der.as_ref();
        for n in 0..bytes.len() {
            assert_eq!(not_after(&bytes[..n]), None, "prefix of {n} bytes");
        }
        assert_eq!(not_after(b"not a certificate"), None);
        assert_eq!(not_after(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(utc_time(b"2701010000ZZZ"), None);
        assert_eq!(generalized_time(b"20271301000000Z"), None);
    }
}
