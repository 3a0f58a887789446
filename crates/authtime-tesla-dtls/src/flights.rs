//! Byte accounting of a DTLS 1.2 exchange: every datagram seen by one end,
//! split into records (RFC 6347 section 4.1: 13-byte header, length in bytes
//! 11..13) and named by content type and handshake message type, so that the
//! lab can print the talk's "bytes per flight" table.

use std::sync::{Arc, Mutex};

/// Which way a datagram went, seen from the end that logged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Sent by the logging end.
    Sent,
    /// Received by the logging end.
    Received,
}

/// One datagram as it crossed the socket.
#[derive(Debug, Clone)]
pub struct Datagram {
    /// Direction.
    pub direction: Direction,
    /// The bytes on the wire (UDP payload).
    pub bytes: Vec<u8>,
}

/// A shared, append-only log of datagrams (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct DatagramLog(Arc<Mutex<Vec<Datagram>>>);

impl DatagramLog {
    /// Appends a datagram.
    pub fn push(&self, direction: Direction, bytes: &[u8]) {
        if let Ok(mut log) = self.0.lock() {
            log.push(Datagram {
                direction,
                bytes: bytes.to_vec(),
            });
        }
    }

    /// A copy of the datagrams so far.
    #[must_use]
    pub fn snapshot(&self) -> Vec<Datagram> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Forgets every datagram.
    pub fn clear(&self) {
        if let Ok(mut log) = self.0.lock() {
            log.clear();
        }
    }
}

/// Length of a DTLS 1.2 record header.
pub const RECORD_HEADER_LEN: usize = 13;

/// One record of a datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordInfo {
    /// Direction of its datagram.
    pub direction: Direction,
    /// Record content type (20 change_cipher_spec, 21 alert, 22 handshake, 23 application data).
    pub content_type: u8,
    /// Epoch (0 before ChangeCipherSpec: the body is plaintext).
    pub epoch: u16,
    /// Handshake message type of a plaintext handshake record.
    pub handshake_type: Option<u8>,
    /// Bytes of the record, header included.
    pub len: usize,
}

impl RecordInfo {
    /// The record's name in the talk's Table 6.1 wording (client's view:
    /// `Sent` is the client's flight).
    #[must_use]
    pub fn name(&self) -> String {
        let from_client = self.direction == Direction::Sent;
        match (self.content_type, self.handshake_type) {
            (20, _) => format!(
                "Change Cipher Spec ({})",
                if from_client { "client" } else { "server" }
            ),
            (21, _) => "Alert".into(),
            (22, Some(1)) => "Client Hello".into(),
            (22, Some(3)) => "Hello Verify Request".into(),
            (22, Some(2)) => "Server Hello".into(),
            (22, Some(11)) => "Certificate".into(),
            (22, Some(12)) => "Server Key Exchange".into(),
            (22, Some(13)) => "Certificate Request".into(),
            (22, Some(14)) => "Server Hello Done".into(),
            (22, Some(16)) => "Client Key Exchange".into(),
            (22, Some(other)) => format!("Handshake type {other}"),
            (22, None) => format!(
                "Finished ({})",
                if from_client { "client" } else { "server" }
            ),
            (23, _) => "Application data".into(),
            (t, _) => format!("Content type {t}"),
        }
    }
}

/// Splits the logged datagrams into records. Bytes that do not parse as a
/// record are reported as one record of content type 0.
#[must_use]
pub fn records(log: &[Datagram]) -> Vec<RecordInfo> {
    let mut out = Vec::new();
    for d in log {
        let mut rest = d.bytes.as_slice();
        while !rest.is_empty() {
            let Some(header) = rest.get(..RECORD_HEADER_LEN) else {
                out.push(unparsed(d.direction, rest.len()));
                break;
            };
            let body_len = usize::from(u16::from_be_bytes([header[11], header[12]]));
            let total = RECORD_HEADER_LEN + body_len;
            if total > rest.len() {
                out.push(unparsed(d.direction, rest.len()));
                break;
            }
            let epoch = u16::from_be_bytes([header[3], header[4]]);
            let handshake_type = if header[0] == 22 && epoch == 0 {
                rest.get(RECORD_HEADER_LEN).copied()
            } else {
                None
            };
            out.push(RecordInfo {
                direction: d.direction,
                content_type: header[0],
                epoch,
                handshake_type,
                len: total,
            });
            rest = &rest[total..];
        }
    }
    out
}

fn unparsed(direction: Direction, len: usize) -> RecordInfo {
    RecordInfo {
        direction,
        content_type: 0,
        epoch: 0,
        handshake_type: None,
        len,
    }
}

/// The handshake records in order, with the second Client Hello named
/// "Client Hello (cookie)" as in the talk. Application data is left out.
#[must_use]
pub fn handshake_rows(records: &[RecordInfo]) -> Vec<(String, usize)> {
    let mut rows: Vec<(String, usize)> = Vec::new();
    let mut hellos = 0;
    for r in records.iter().filter(|r| r.content_type != 23) {
        let mut name = r.name();
        if r.handshake_type == Some(1) {
            hellos += 1;
            if hellos > 1 {
                name = "Client Hello (cookie)".into();
            }
        }
        rows.push((name, r.len));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_a_datagram_of_two_records() {
        let mut d = vec![22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 0];
        d.extend_from_slice(&[20, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1]);
        let log = [Datagram {
            direction: Direction::Received,
            bytes: d,
        }];
        let r = records(&log);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].name(), "Server Hello");
        assert_eq!(r[0].len, 15);
        assert_eq!(r[1].name(), "Change Cipher Spec (server)");
        assert_eq!(r[1].len, 14);
    }

    #[test]
    fn a_truncated_record_is_reported_not_lost() {
        let log = [Datagram {
            direction: Direction::Sent,
            bytes: vec![22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 1],
        }];
        let r = records(&log);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].content_type, 0);
        assert_eq!(r[0].len, 14);
    }
}
