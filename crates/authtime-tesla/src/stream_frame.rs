//! The stream framing the TESLA stream drivers put inside each payload, so
//! that receivers can restore the stream's order and see where it ends:
//!
//! ```text
//! | flags (1) | sequence number (8, big-endian) | stream bytes |
//! ```
//!
//! Flag bit 0 marks the end of the stream: no bytes, and the sequence number
//! is the number of data payloads sent before it. The sender repeats the end
//! marker in several intervals; receivers treat copies as one.

/// Bytes of framing before the stream bytes.
pub const FRAME_HEADER_LEN: usize = 9;
const END_FLAG: u8 = 1;

/// One payload of the stream, as the receiver reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// Stream bytes number `seq` (counting payloads from 0).
    Data {
        /// Position of this payload in the stream.
        seq: u64,
        /// The stream bytes.
        bytes: &'a [u8],
    },
    /// The stream ended after `count` payloads.
    End {
        /// Payloads sent before the end marker.
        count: u64,
    },
}

/// Frames payload `seq` holding `bytes`.
#[must_use]
pub fn encode_data(seq: u64, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + bytes.len());
    out.push(0);
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(bytes);
    out
}

/// The end marker after `count` payloads.
#[must_use]
pub fn encode_end(count: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN);
    out.push(END_FLAG);
    out.extend_from_slice(&count.to_be_bytes());
    out
}

/// Reads a frame; `None` for anything the sender cannot have written (an
/// authenticated payload is the sender's, so this only guards against a
/// sender of another program sharing the key).
#[must_use]
pub fn decode(payload: &[u8]) -> Option<Frame<'_>> {
    let (&flags, rest) = payload.split_first()?;
    let seq = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
    let bytes = rest.get(8..)?;
    match flags {
        0 => Some(Frame::Data { seq, bytes }),
        END_FLAG if bytes.is_empty() => Some(Frame::End { count: seq }),
        _ => None,
    }
}

/// Puts the authenticated payloads in order on the output.
///
/// Once a key authenticates payload `s`, every payload before `s` was sent
/// in the same or an earlier interval, whose key is now known: such a packet
/// arriving later is unsafe. So a gap below a released payload is final, and
/// the output is written in order without waiting.
#[derive(Debug, Default)]
pub struct StreamWriter {
    /// The next sequence number to write.
    pub next_seq: u64,
    /// Stream bytes written.
    pub written_bytes: u64,
    /// Payloads written.
    pub written_payloads: u64,
    /// Payloads skipped for good (lost).
    pub missing: u64,
    /// Payloads that came after a later one was written, or after the end.
    pub late: u64,
    /// Authenticated payloads without valid framing.
    pub unframed: u64,
    /// Whether the end marker was seen.
    pub ended: bool,
}

impl StreamWriter {
    /// Writes what `released` (one key's worth, oldest interval first) adds.
    ///
    /// # Errors
    /// The output's write or flush error.
    pub fn deliver(
        &mut self,
        released: Vec<crate::Delivered>,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let mut data = Vec::with_capacity(released.len());
        let mut end = None;
        for d in &released {
            match decode(&d.payload) {
                Some(Frame::Data { seq, bytes }) => data.push((seq, bytes)),
                Some(Frame::End { count }) => end = Some(end.unwrap_or(count).max(count)),
                None => self.unframed += 1,
            }
        }
        data.sort_by_key(|(seq, _)| *seq);
        for (seq, bytes) in data {
            if self.ended || seq < self.next_seq {
                self.late += 1;
                continue;
            }
            self.missing += seq - self.next_seq;
            out.write_all(bytes)?;
            self.written_bytes += bytes.len() as u64;
            self.written_payloads += 1;
            self.next_seq = seq + 1;
        }
        if let Some(count) = end
            && !self.ended
        {
            self.missing += count.saturating_sub(self.next_seq);
            self.next_seq = self.next_seq.max(count);
            self.ended = true;
        }
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Delivered;

    #[test]
    fn frames_round_trip_and_junk_is_refused() {
        let data = encode_data(7, b"abc");
        assert_eq!(
            decode(&data),
            Some(Frame::Data {
                seq: 7,
                bytes: b"abc"
            })
        );
        assert_eq!(decode(&encode_end(9)), Some(Frame::End { count: 9 }));
        assert_eq!(decode(&data[..5]), None);
        assert_eq!(decode(&[]), None);
        let mut end_with_bytes = encode_end(1);
        end_with_bytes.push(0);
        assert_eq!(decode(&end_with_bytes), None);
        let mut other_flag = data;
        other_flag[0] = 4;
        assert_eq!(decode(&other_flag), None);
    }

    fn delivered(payloads: &[Vec<u8>]) -> Vec<Delivered> {
        payloads
            .iter()
            .map(|p| Delivered {
                interval: 1,
                payload: p.clone(),
            })
            .collect()
    }

    #[test]
    fn writer_orders_payloads_counts_gaps_and_ignores_late_ones() {
        let mut w = StreamWriter::default();
        let mut out = Vec::new();
        w.deliver(
            delivered(&[
                encode_data(1, b"b"),
                encode_data(0, b"a"),
                encode_data(3, b"d"),
            ]),
            &mut out,
        )
        .expect("write");
        assert_eq!(out, b"abd");
        assert_eq!(w.missing, 1);
        w.deliver(delivered(&[encode_data(2, b"c"), encode_end(6)]), &mut out)
            .expect("write");
        assert_eq!(out, b"abd");
        assert_eq!((w.late, w.missing, w.ended), (1, 3, true));
        w.deliver(
            delivered(&[encode_data(6, b"x"), b"junk".to_vec()]),
            &mut out,
        )
        .expect("write");
        assert_eq!(out, b"abd");
        assert_eq!((w.late, w.unframed), (2, 1));
    }
}
