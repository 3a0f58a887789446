//! The Roughtime packet (§4.3: "ROUGHTIM", uint32 length, message) and the
//! tag/offset message format (§4.2), parsed without copying and encoded.

use crate::error::Error;
use crate::tags::Tag;

/// The eight bytes every packet starts with (§4.3).
pub const MAGIC: &[u8; 8] = b"ROUGHTIM";
/// The packet header: magic and the uint32 message length.
pub const PACKET_HEADER_LEN: usize = 12;

/// The message inside a packet; rejects bad magic and any length mismatch,
/// trailing bytes included (§4.3: the length is the message's exact size).
pub fn unframe(packet: &[u8]) -> Result<&[u8], Error> {
    let header = packet.get(..PACKET_HEADER_LEN).ok_or(Error::Truncated)?;
    if &header[..8] != MAGIC {
        return Err(Error::BadMagic);
    }
    let claimed = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    let body = &packet[PACKET_HEADER_LEN..];
    if u64::from(claimed) != body.len() as u64 {
        return Err(Error::BadPacketLength {
            claimed: u64::from(claimed),
            present: body.len(),
        });
    }
    Ok(body)
}

/// A packet around `message`.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut packet = Vec::with_capacity(PACKET_HEADER_LEN + message.len());
    packet.extend_from_slice(MAGIC);
    // Messages come from `encode`, whose sizes are far below 4 GiB.
    packet.extend_from_slice(&(message.len() as u32).to_le_bytes());
    packet.extend_from_slice(message);
    packet
}

/// A parsed message: tags in wire order, each with its value borrowed from the input (§4.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    entries: Vec<(Tag, &'a [u8])>,
}

impl<'a> Message<'a> {
    /// Parses a message (no packet header) with every §4.2 rule checked:
    /// at least one tag, lengths and offsets multiples of 4, offsets
    /// non-decreasing and inside the values, tags strictly ascending.
    /// Unknown tags are kept.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        if !bytes.len().is_multiple_of(4) {
            return Err(Error::Misaligned);
        }
        let count = read_u32(bytes, 0)? as usize;
        if count == 0 {
            return Err(Error::NoTags);
        }
        // 4 bytes of count, 4(N-1) of offsets, 4N of tags; checked so that a
        // huge N cannot overflow or allocate.
        let header_len = count
            .checked_mul(8)
            .filter(|&len| len <= bytes.len())
            .ok_or(Error::Truncated)?;
        let values = &bytes[header_len..];
        let tags_start = 4 * count;
        let mut entries = Vec::with_capacity(count);
        let mut previous: Option<Tag> = None;
        for i in 0..count {
            let start = if i == 0 {
                0
            } else {
                read_u32(bytes, 4 * i)? as usize
            };
            let end = if i + 1 == count {
                values.len()
            } else {
                read_u32(bytes, 4 * (i + 1))? as usize
            };
            if !start.is_multiple_of(4) || !end.is_multiple_of(4) {
                return Err(Error::Misaligned);
            }
            if start > end || end > values.len() {
                return Err(Error::BadOffset);
            }
            let tag_bytes = bytes
                .get(tags_start + 4 * i..tags_start + 4 * i + 4)
                .ok_or(Error::Truncated)?;
            let tag = Tag([tag_bytes[0], tag_bytes[1], tag_bytes[2], tag_bytes[3]]);
            if previous.is_some_and(|p| p >= tag) {
                return Err(Error::TagsNotSorted);
            }
            previous = Some(tag);
            entries.push((tag, &values[start..end]));
        }
        Ok(Message { entries })
    }

    /// The value of `tag`, if present.
    pub fn get(&self, tag: Tag) -> Option<&'a [u8]> {
        self.entries
            .binary_search_by(|(t, _)| t.cmp(&tag))
            .ok()
            .map(|i| self.entries[i].1)
    }

    /// The value of `tag`, or `MissingTag`.
    pub fn require(&self, tag: Tag) -> Result<&'a [u8], Error> {
        self.get(tag).ok_or(Error::MissingTag(tag.0))
    }

    /// The value of `tag` as a fixed-size array, or `MissingTag` / `BadValueLength`.
    pub fn require_array<const N: usize>(&self, tag: Tag) -> Result<[u8; N], Error> {
        self.require(tag)?
            .try_into()
            .map_err(|_| Error::BadValueLength(tag.0))
    }

    /// The value of `tag` as a uint32 (§4.1.1).
    pub fn require_u32(&self, tag: Tag) -> Result<u32, Error> {
        self.require_array::<4>(tag).map(u32::from_le_bytes)
    }

    /// The value of `tag` as a uint64 (§4.1.2).
    pub fn require_u64(&self, tag: Tag) -> Result<u64, Error> {
        self.require_array::<8>(tag).map(u64::from_le_bytes)
    }

    /// The tags and values in wire order.
    pub fn entries(&self) -> &[(Tag, &'a [u8])] {
        &self.entries
    }
}

fn read_u32(bytes: &[u8], at: usize) -> Result<u32, Error> {
    let b = bytes.get(at..at + 4).ok_or(Error::Truncated)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Encodes a message from (tag, value) pairs in any order: sorts them, and
/// refuses duplicates and values whose length is not a multiple of 4 (§4.2).
pub fn encode(entries: &[(Tag, &[u8])]) -> Result<Vec<u8>, Error> {
    if entries.is_empty() {
        return Err(Error::NoTags);
    }
    let mut sorted: Vec<(Tag, &[u8])> = entries.to_vec();
    sorted.sort_by_key(|(tag, _)| *tag);
    if sorted.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(Error::TagsNotSorted);
    }
    if sorted.iter().any(|(_, v)| !v.len().is_multiple_of(4)) {
        return Err(Error::Misaligned);
    }
    let values_len: usize = sorted.iter().map(|(_, v)| v.len()).sum();
    let mut out = Vec::with_capacity(8 * sorted.len() + values_len);
    out.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    let mut offset = 0usize;
    for (_, value) in &sorted[..sorted.len() - 1] {
        offset += value.len();
        out.extend_from_slice(&(offset as u32).to_le_bytes());
    }
    for (tag, _) in &sorted {
        out.extend_from_slice(&tag.0);
    }
    for (_, value) in &sorted {
        out.extend_from_slice(value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_parse_keeps_every_value() {
        let nonce = [7u8; 32];
        let bytes = encode(&[
            (Tag::NONC, &nonce),
            (Tag::VER, &1u32.to_le_bytes()),
            (Tag::PATH, &[]),
        ])
        .unwrap();
        let msg = Message::parse(&bytes).unwrap();
        assert_eq!(msg.entries().len(), 3);
        assert_eq!(msg.require_u32(Tag::VER).unwrap(), 1);
        assert_eq!(msg.get(Tag::NONC).unwrap(), &nonce);
        assert_eq!(msg.get(Tag::PATH).unwrap(), &[] as &[u8]);
        assert_eq!(msg.get(Tag::SIG), None);
    }

    #[test]
    fn unknown_tags_survive() {
        let bytes = encode(&[(Tag(*b"GREZ"), &[1, 2, 3, 4])]).unwrap();
        let msg = Message::parse(&bytes).unwrap();
        assert_eq!(msg.get(Tag(*b"GREZ")).unwrap(), &[1, 2, 3, 4]);
    }

    #[test]
    fn unsorted_or_repeated_tags_are_refused() {
        let mut bytes = encode(&[(Tag::NONC, &[0; 4]), (Tag::VER, &[0; 4])]).unwrap();
        // Swap the two tags in the header: VER\0 (sorted first) moves second.
        bytes[8..16].rotate_left(4);
        assert_eq!(Message::parse(&bytes), Err(Error::TagsNotSorted));
        bytes.copy_within(12..16, 8);
        assert_eq!(Message::parse(&bytes), Err(Error::TagsNotSorted));
        assert!(encode(&[(Tag::VER, &[]), (Tag::VER, &[])]).is_err());
    }

    #[test]
    fn bad_offsets_are_refused() {
        let mut bytes = encode(&[(Tag::VER, &[0; 4]), (Tag::NONC, &[0; 4])]).unwrap();
        bytes[4..8].copy_from_slice(&12u32.to_le_bytes());
        assert_eq!(Message::parse(&bytes), Err(Error::BadOffset));
        bytes[4..8].copy_from_slice(&2u32.to_le_bytes());
        assert_eq!(Message::parse(&bytes), Err(Error::Misaligned));
    }

    #[test]
    fn huge_tag_count_is_an_error_not_an_allocation() {
        let bytes = u32::MAX.to_le_bytes();
        assert_eq!(Message::parse(&bytes), Err(Error::Truncated));
        assert_eq!(Message::parse(&0u32.to_le_bytes()), Err(Error::NoTags));
        assert_eq!(Message::parse(&[]), Err(Error::Truncated));
        assert_eq!(Message::parse(&[1, 0, 0]), Err(Error::Misaligned));
    }

    #[test]
    fn framing_checks_magic_and_exact_length() {
        let packet = frame(&[1, 0, 0, 0, b'V', b'E', b'R', 0]);
        assert_eq!(unframe(&packet).unwrap().len(), 8);
        let mut longer = packet.clone();
        longer.push(0);
        assert!(matches!(
            unframe(&longer),
            Err(Error::BadPacketLength { .. })
        ));
        let mut wrong = packet.clone();
        wrong[0] = b'X';
        assert_eq!(unframe(&wrong), Err(Error::BadMagic));
        assert_eq!(unframe(&packet[..11]), Err(Error::Truncated));
    }
}
