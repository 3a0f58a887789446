//! NTS-KE messages (RFC 8915 section 4): records terminated by End of Message, read from
//! a byte stream in arbitrary chunks.
//!
//! TLS delivers application data in whatever pieces the peer's records and our reads
//! produce, so a record may be split over several reads (a bug NTPsec 1.2.5 fixed).
//! [`MessageReader`] buffers at most one incomplete record, counts every byte against a
//! message limit, completes exactly at End of Message and refuses any byte after it.

use std::fmt;

use crate::record::{Decoded, Record, RecordError};

/// Size limits for one received message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageLimits {
    /// Largest accepted message, all record headers included.
    pub max_message_len: usize,
    /// Largest accepted record body.
    pub max_record_body_len: usize,
}

impl MessageLimits {
    /// What a server accepts from a client: 16 KiB in all, bodies up to 4 KiB.
    ///
    /// RFC 8915 section 4 requires servers to accept requests of at least 1024 bytes; a
    /// real request (next protocol, AEAD list, End of Message) is about 20 bytes.
    pub const REQUEST: Self = Self {
        max_message_len: 16 * 1024,
        max_record_body_len: 4 * 1024,
    };

    /// What a client accepts from a server: 64 KiB in all (RFC 8915 section 4: clients
    /// SHOULD accept at least 65536 bytes), any body the length field can express.
    pub const RESPONSE: Self = Self {
        max_message_len: 64 * 1024,
        max_record_body_len: u16::MAX as usize,
    };
}

/// Why a byte stream is not one valid message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageError {
    /// A record is malformed or over the body limit.
    Record(RecordError),
    /// The message grew past the message limit.
    MessageTooLarge {
        /// The limit in force.
        max: usize,
    },
    /// Bytes followed End of Message.
    DataAfterEndOfMessage,
    /// The stream ended before End of Message.
    MissingEndOfMessage,
}

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Record(e) => write!(f, "bad record: {e}"),
            Self::MessageTooLarge { max } => write!(f, "message longer than {max} bytes"),
            Self::DataAfterEndOfMessage => f.write_str("data after End of Message"),
            Self::MissingEndOfMessage => f.write_str("stream ended before End of Message"),
        }
    }
}

impl std::error::Error for MessageError {}

impl From<RecordError> for MessageError {
    fn from(e: RecordError) -> Self {
        Self::Record(e)
    }
}

/// Whether a message is complete after [`MessageReader::feed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// End of Message not seen yet.
    NeedMore,
    /// End of Message seen; the records are ready.
    Complete,
}

/// Streaming reader of one NTS-KE message.
#[derive(Debug)]
pub struct MessageReader {
    limits: MessageLimits,
    pending: Vec<u8>,
    records: Vec<Record>,
    total: usize,
    complete: bool,
    failed: Option<MessageError>,
}

impl MessageReader {
    /// A reader that enforces `limits`.
    pub fn new(limits: MessageLimits) -> Self {
        Self {
            limits,
            pending: Vec::new(),
            records: Vec::new(),
            total: 0,
            complete: false,
            failed: None,
        }
    }

    /// Feeds the next bytes of the stream. Once an error is returned, every later call
    /// returns it again.
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, MessageError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = self.feed_inner(data);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
            self.pending = Vec::new();
        }
        result
    }

    fn feed_inner(&mut self, mut data: &[u8]) -> Result<Progress, MessageError> {
        if self.complete {
            return if data.is_empty() {
                Ok(Progress::Complete)
            } else {
                Err(MessageError::DataAfterEndOfMessage)
            };
        }
        self.total = self.total.saturating_add(data.len());
        if self.total > self.limits.max_message_len {
            return Err(MessageError::MessageTooLarge {
                max: self.limits.max_message_len,
            });
        }
        while !data.is_empty() {
            // Decode straight from `data` when nothing is pending (the common case of a
            // whole message in one read); otherwise top up the pending record first.
            let (decoded, from_pending) = if self.pending.is_empty() {
                (
                    Record::decode(data, self.limits.max_record_body_len)?,
                    false,
                )
            } else {
                let need = self.bytes_needed_for_pending();
                let take = need.min(data.len());
                self.pending.extend_from_slice(&data[..take]);
                data = &data[take..];
                (
                    Record::decode(&self.pending, self.limits.max_record_body_len)?,
                    true,
                )
            };
            match decoded {
                Decoded::Incomplete => {
                    if !from_pending {
                        self.pending.extend_from_slice(data);
                        data = &[];
                    }
                }
                Decoded::Complete(record, used) => {
                    if from_pending {
                        self.pending.clear();
                    } else {
                        data = &data[used..];
                    }
                    let end = record == Record::EndOfMessage;
                    self.records.push(record);
                    if end {
                        self.complete = true;
                        if !data.is_empty() {
                            return Err(MessageError::DataAfterEndOfMessage);
                        }
                    }
                }
            }
        }
        Ok(if self.complete {
            Progress::Complete
        } else {
            Progress::NeedMore
        })
    }

    /// Bytes still missing from the pending partial record (header first, then body).
    fn bytes_needed_for_pending(&self) -> usize {
        let have = self.pending.len();
        if have < crate::record::RECORD_HEADER_LEN {
            return crate::record::RECORD_HEADER_LEN - have;
        }
        let body = usize::from(u16::from_be_bytes([self.pending[2], self.pending[3]]));
        (crate::record::RECORD_HEADER_LEN + body).saturating_sub(have)
    }

    /// True once End of Message was read.
    pub fn is_complete(&self) -> bool {
        self.complete && self.failed.is_none()
    }

    /// The records of the complete message, End of Message included; call at end of
    /// stream or once [`Progress::Complete`] was returned.
    pub fn finish(self) -> Result<Vec<Record>, MessageError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if !self.complete {
            return Err(MessageError::MissingEndOfMessage);
        }
        Ok(self.records)
    }
}

/// Decodes one complete message held in `bytes`.
pub fn decode_message(bytes: &[u8], limits: MessageLimits) -> Result<Vec<Record>, MessageError> {
    let mut reader = MessageReader::new(limits);
    reader.feed(bytes)?;
    reader.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::encode_records;

    fn sample() -> (Vec<Record>, Vec<u8>) {
        let records = vec![
            Record::NextProtocol(vec![0]),
            Record::AeadAlgorithm(vec![15, 17, 30]),
            Record::NewCookie(vec![0xab; 300]),
            Record::Unknown {
                critical: false,
                record_type: 1024,
                body: vec![],
            },
            Record::Server("ntp.example.org".into()),
            Record::Port(4123),
            Record::EndOfMessage,
        ];
        let bytes = encode_records(&records).expect("encodable");
        (records, bytes)
    }

    #[test]
    fn whole_message_in_one_read() {
        let (records, bytes) = sample();
        assert_eq!(decode_message(&bytes, MessageLimits::RESPONSE), Ok(records));
    }

    #[test]
    fn records_split_byte_by_byte() {
        let (records, bytes) = sample();
        let mut reader = MessageReader::new(MessageLimits::RESPONSE);
        for (i, b) in bytes.iter().enumerate() {
            let p = reader.feed(std::slice::from_ref(b)).expect("valid");
            assert_eq!(p == Progress::Complete, i == bytes.len() - 1);
        }
        assert_eq!(reader.finish(), Ok(records));
    }

    #[test]
    fn records_split_at_every_point_into_two_reads() {
        let (records, bytes) = sample();
        for cut in 0..=bytes.len() {
            let mut reader = MessageReader::new(MessageLimits::RESPONSE);
            reader.feed(&bytes[..cut]).expect("valid");
            reader.feed(&bytes[cut..]).expect("valid");
            assert_eq!(reader.finish(), Ok(records.clone()), "cut at {cut}");
        }
    }

    #[test]
    fn data_after_end_of_message_is_rejected() {
        let (_, mut bytes) = sample();
        bytes.push(0);
        assert_eq!(
            decode_message(&bytes, MessageLimits::RESPONSE),
            Err(MessageError::DataAfterEndOfMessage)
        );
        let (_, bytes) = sample();
        let mut reader = MessageReader::new(MessageLimits::RESPONSE);
        assert_eq!(reader.feed(&bytes), Ok(Progress::Complete));
        assert_eq!(reader.feed(&[]), Ok(Progress::Complete));
        assert_eq!(
            reader.feed(&[0x80]),
            Err(MessageError::DataAfterEndOfMessage)
        );
        assert!(reader.finish().is_err());
    }

    #[test]
    fn missing_end_of_message_is_rejected() {
        let (_, bytes) = sample();
        for cut in 0..bytes.len() {
            assert_eq!(
                decode_message(&bytes[..cut], MessageLimits::RESPONSE),
                Err(MessageError::MissingEndOfMessage)
            );
        }
    }

    #[test]
    fn oversized_message_is_rejected_without_waiting_for_the_end() {
        let limits = MessageLimits::REQUEST;
        let filler = Record::Unknown {
            critical: false,
            record_type: 4000,
            body: vec![0; 4000],
        };
        let bytes = encode_records(&vec![filler; 5]).expect("encodable");
        let mut reader = MessageReader::new(limits);
        let mut err = None;
        for chunk in bytes.chunks(1000) {
            if let Err(e) = reader.feed(chunk) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(
            err,
            Some(MessageError::MessageTooLarge {
                max: limits.max_message_len
            })
        );
    }

    #[test]
    fn oversized_record_is_rejected_from_its_header() {
        let mut reader = MessageReader::new(MessageLimits::REQUEST);
        assert!(matches!(
            reader.feed(&[0x00, 5, 0x10, 0x01]),
            Err(MessageError::Record(RecordError::BodyTooLarge { .. }))
        ));
    }
}
