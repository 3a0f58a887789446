//! Entry points for the fuzz targets in `fuzz/`: each takes arbitrary bytes and
//! panics only when an invariant of the codec breaks.

use crate::{Header, NtpTimestamp, Packet, Reader, Trailer};

/// Decodes `data` as a packet; when that succeeds, the packet must encode to
/// exactly `data`, decode again to an equal packet, and its parts must add up.
pub fn packet_roundtrip(data: &[u8]) {
    let Ok(packet) = Packet::decode(data) else {
        return;
    };
    let mut out = [0u8; 2048];
    let Some(out) = out.get_mut(..data.len()) else {
        return;
    };
    let n = packet.encode(out).expect("a decoded packet encodes");
    assert_eq!(&out[..n], data, "encode(decode(x)) != x");
    let again = Packet::decode(&out[..n]).expect("re-decode");
    assert_eq!(again, packet);
    assert_eq!(
        packet.authenticated_bytes().len() + packet.trailer().len(),
        data.len()
    );
    if let Trailer::Mac(mac) = packet.trailer() {
        assert!(mac.digest.len() >= crate::MIN_DIGEST_LEN);
        if packet.header().version >= 4 {
            assert!(mac.digest.len() <= crate::MAX_V4_DIGEST_LEN);
        }
    }
    for field in packet.extension_fields() {
        assert!(field.len() >= crate::ExtensionField::MIN_LEN && field.len().is_multiple_of(4));
    }
}

/// Reads a header and a Unix reference time from `data`; the four timestamps
/// must survive the trip through Unix time near that reference.
pub fn timestamp_roundtrip(data: &[u8]) {
    let mut r = Reader::new(data);
    let (Ok(header), Ok(reference)) = (Header::decode(&mut r), r.u64()) else {
        return;
    };
    // Any reference within the i64 range; the result must stay within 2^31 s.
    let reference = reference as i64 >> 2;
    for ts in [
        header.reference_ts,
        header.origin_ts,
        header.receive_ts,
        header.transmit_ts,
    ] {
        let unix = ts.to_unix_near(reference);
        let back = NtpTimestamp::from_unix_time(unix);
        let saturated = unix.secs == i64::MAX || unix.secs == i64::MIN;
        if !saturated {
            assert_eq!(back.seconds(), ts.seconds());
            // Nanoseconds lose at most one 2^-32 fraction step on the way back.
            assert!(back.fraction().abs_diff(ts.fraction()) <= 5);
            assert!((i128::from(unix.secs) - i128::from(reference)).abs() <= 1 << 31);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harnesses_accept_arbitrary_bytes() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut buf = [0u8; 160];
        for round in 0..20_000 {
            for b in buf.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            // Mostly well-formed lengths so that the EF parser is reached.
            let len = 48 + (round % 28) * 4;
            buf[48..52].copy_from_slice(&[0, (round % 3) as u8, 0, (round % 40) as u8]);
            packet_roundtrip(&buf[..len]);
            packet_roundtrip(&buf[..(round % 160)]);
            timestamp_roundtrip(&buf[..56]);
        }
    }
}
