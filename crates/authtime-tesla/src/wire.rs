//! Zero-copy codec of the TESLA datagrams (layout in the crate documentation).
//!
//! Every datagram starts with one header byte: the version in the high nibble
//! (1), the kind in the low three bits, and bit 3 set when a data or
//! key-disclosure packet carries the next chain's commitment.

use crate::codec::{Reader, WireError, put_u32};
use crate::owf::KEY_LEN;

/// Protocol version in the header's high nibble.
pub const VERSION: u8 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 1;
/// Header bit: the packet carries the next chain's commitment.
const FLAG_NEXT_COMMITMENT: u8 = 0x08;
/// Shortest nonce of a sync request (RFC 4082 asks for an unpredictable nonce;
/// 16 bytes make it unguessable).
pub const MIN_NONCE_LEN: usize = 16;
/// Longest nonce of a sync request.
pub const MAX_NONCE_LEN: usize = 64;
/// Length of the nonce prefix that tags sync response fragments.
pub const FRAGMENT_TAG_LEN: usize = 8;
/// Header bytes of a sync response fragment before its chunk.
pub const FRAGMENT_HEADER_LEN: usize = HEADER_LEN + FRAGMENT_TAG_LEN + 2;

/// The kinds of datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Payload authenticated with the interval's MAC key, plus a disclosed key.
    Data,
    /// A disclosed key (and maybe the next commitment) with an empty payload,
    /// sent when no data flows so that keys keep being released.
    KeyDisclosure,
    /// A receiver's sync request: its nonce (RFC 4082 section 3.3.1).
    SyncRequest,
    /// One fragment of a signed sync response.
    SyncResponseFragment,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Self::Data => 1,
            Self::KeyDisclosure => 2,
            Self::SyncRequest => 3,
            Self::SyncResponseFragment => 4,
        }
    }

    fn header(self, next_commitment: bool) -> u8 {
        (VERSION << 4)
            | self.code()
            | if next_commitment {
                FLAG_NEXT_COMMITMENT
            } else {
                0
            }
    }
}

/// Reads the header byte: kind and the next-commitment flag.
///
/// # Errors
/// Empty input, another version, an unknown kind, or the flag on a kind that
/// cannot carry a commitment.
pub fn peek_kind(datagram: &[u8]) -> Result<(Kind, bool), WireError> {
    let Some(&h) = datagram.first() else {
        return Err(WireError::Truncated("header"));
    };
    if h >> 4 != VERSION {
        return Err(WireError::UnknownVersion(h >> 4));
    }
    let flag = h & FLAG_NEXT_COMMITMENT != 0;
    let kind = match h & 0x07 {
        1 => Kind::Data,
        2 => Kind::KeyDisclosure,
        3 => Kind::SyncRequest,
        4 => Kind::SyncResponseFragment,
        _ => return Err(WireError::UnknownKind(h & 0x0f)),
    };
    if flag && !matches!(kind, Kind::Data | Kind::KeyDisclosure) {
        return Err(WireError::UnknownKind(h & 0x0f));
    }
    Ok((kind, flag))
}

/// Trailer length of a data or key-disclosure packet: index (4), optional next
/// commitment (32), disclosed key (32), tag.
#[must_use]
pub fn trailer_len(tag_len: usize, with_next_commitment: bool) -> usize {
    let fixed = 4 + if with_next_commitment { KEY_LEN } else { 0 } + KEY_LEN;
    fixed.saturating_add(tag_len)
}

/// A data or key-disclosure packet, borrowed from the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataPacket<'a> {
    /// [`Kind::Data`] or [`Kind::KeyDisclosure`].
    pub kind: Kind,
    /// The payload (empty for key disclosures).
    pub payload: &'a [u8],
    /// Interval index `i` the packet was sent in.
    pub interval: u32,
    /// `K_0` of the next chain, during the rollover lead.
    pub next_commitment: Option<&'a [u8; KEY_LEN]>,
    /// `K_{i-d}` (meaningless while `i < d`: nothing is disclosed yet).
    pub disclosed_key: &'a [u8; KEY_LEN],
    /// The truncated MAC under `F'(K_i)`.
    pub tag: &'a [u8],
    authenticated: &'a [u8],
}

impl<'a> DataPacket<'a> {
    /// Parses a datagram whose tag is `tag_len` bytes (a session parameter).
    ///
    /// # Errors
    /// Any [`WireError`]; never panics.
    pub fn parse(datagram: &'a [u8], tag_len: usize) -> Result<Self, WireError> {
        let (kind, flag) = peek_kind(datagram)?;
        if !matches!(kind, Kind::Data | Kind::KeyDisclosure) {
            return Err(WireError::UnknownKind(kind.code()));
        }
        let trailer = trailer_len(tag_len, flag);
        let body_len = datagram
            .len()
            .checked_sub(trailer.saturating_add(HEADER_LEN))
            .ok_or(WireError::Truncated("trailer"))?;
        let authenticated = &datagram[..datagram.len() - tag_len];
        let mut r = Reader::new(&datagram[HEADER_LEN..]);
        let payload = r.bytes(body_len, "payload")?;
        if kind == Kind::KeyDisclosure && !payload.is_empty() {
            return Err(WireError::InvalidField("key disclosure payload"));
        }
        let interval = r.u32("interval index")?;
        let next_commitment = if flag {
            Some(as_key(r.bytes(KEY_LEN, "next commitment")?)?)
        } else {
            None
        };
        let disclosed_key = as_key(r.bytes(KEY_LEN, "disclosed key")?)?;
        let tag = r.bytes(tag_len, "tag")?;
        r.finish()?;
        Ok(Self {
            kind,
            payload,
            interval,
            next_commitment,
            disclosed_key,
            tag,
            authenticated,
        })
    }

    /// The bytes the tag covers: everything before it.
    #[must_use]
    pub fn authenticated_bytes(&self) -> &'a [u8] {
        self.authenticated
    }
}

fn as_key(bytes: &[u8]) -> Result<&[u8; KEY_LEN], WireError> {
    bytes.try_into().map_err(|_| WireError::Truncated("key"))
}

/// Writes a data or key-disclosure packet up to (not including) its tag; the
/// caller appends the tag computed over the bytes written.
pub(crate) fn write_data_head(
    out: &mut Vec<u8>,
    kind: Kind,
    payload: &[u8],
    interval: u32,
    next_commitment: Option<&[u8; KEY_LEN]>,
    disclosed_key: &[u8; KEY_LEN],
) {
    out.push(kind.header(next_commitment.is_some()));
    out.extend_from_slice(payload);
    put_u32(out, interval);
    if let Some(c) = next_commitment {
        out.extend_from_slice(c);
    }
    out.extend_from_slice(disclosed_key);
}

/// A sync request: the receiver's nonce (`MIN_NONCE_LEN ..= MAX_NONCE_LEN` bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncRequest<'a> {
    /// The nonce the signed response must echo.
    pub nonce: &'a [u8],
}

impl<'a> SyncRequest<'a> {
    /// Parses a sync request datagram.
    ///
    /// # Errors
    /// Another kind, or a nonce of the wrong length.
    pub fn parse(datagram: &'a [u8]) -> Result<Self, WireError> {
        if peek_kind(datagram)?.0 != Kind::SyncRequest {
            return Err(WireError::InvalidField("kind"));
        }
        let nonce = &datagram[HEADER_LEN..];
        if !(MIN_NONCE_LEN..=MAX_NONCE_LEN).contains(&nonce.len()) {
            return Err(WireError::InvalidField("nonce length"));
        }
        Ok(Self { nonce })
    }

    /// Encodes a request for `nonce` (the caller checks its length).
    #[must_use]
    pub fn encode(nonce: &[u8]) -> Vec<u8> {
        let mut out = vec![Kind::SyncRequest.header(false)];
        out.extend_from_slice(nonce);
        out
    }
}

/// One fragment of a signed sync response:
/// header | nonce tag (8) | index (1) | count (1) | chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment<'a> {
    /// First [`FRAGMENT_TAG_LEN`] bytes of the request's nonce.
    pub tag: &'a [u8; FRAGMENT_TAG_LEN],
    /// Fragment number, below `count`.
    pub index: u8,
    /// Number of fragments, at least 1.
    pub count: u8,
    /// The fragment's bytes, never empty.
    pub chunk: &'a [u8],
}

impl<'a> Fragment<'a> {
    /// Parses a fragment datagram.
    ///
    /// # Errors
    /// Another kind, a short datagram, `index >= count`, or an empty chunk.
    pub fn parse(datagram: &'a [u8]) -> Result<Self, WireError> {
        if peek_kind(datagram)?.0 != Kind::SyncResponseFragment {
            return Err(WireError::InvalidField("kind"));
        }
        let mut r = Reader::new(&datagram[HEADER_LEN..]);
        let tag = r
            .bytes(FRAGMENT_TAG_LEN, "fragment tag")?
            .try_into()
            .map_err(|_| WireError::Truncated("fragment tag"))?;
        let index = r.u8("fragment index")?;
        let count = r.u8("fragment count")?;
        let chunk = r.rest();
        if count == 0 || index >= count {
            return Err(WireError::InvalidField("fragment index"));
        }
        if chunk.is_empty() {
            return Err(WireError::Truncated("fragment chunk"));
        }
        Ok(Self {
            tag,
            index,
            count,
            chunk,
        })
    }

    pub(crate) fn encode(
        tag: &[u8; FRAGMENT_TAG_LEN],
        index: u8,
        count: u8,
        chunk: &[u8],
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(FRAGMENT_HEADER_LEN + chunk.len());
        out.push(Kind::SyncResponseFragment.header(false));
        out.extend_from_slice(tag);
        out.push(index);
        out.push(count);
        out.extend_from_slice(chunk);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(flag: bool, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let c = [0xcc; 32];
        write_data_head(
            &mut out,
            Kind::Data,
            payload,
            0x0102_0304,
            flag.then_some(&c),
            &[0xdd; 32],
        );
        out.extend_from_slice(&[0xee; 12]);
        out
    }

    #[test]
    fn data_packet_layout_is_exact() {
        let bytes = sample(false, b"hi");
        assert_eq!(bytes.len(), 1 + 2 + 4 + 32 + 12);
        assert_eq!(bytes[0], 0x11);
        assert_eq!(&bytes[3..7], &[1, 2, 3, 4]);
        let p = DataPacket::parse(&bytes, 12).expect("parse");
        assert_eq!(p.payload, b"hi");
        assert_eq!(p.interval, 0x0102_0304);
        assert_eq!(p.disclosed_key, &[0xdd; 32]);
        assert_eq!(p.tag, &[0xee; 12]);
        assert!(p.next_commitment.is_none());
        assert_eq!(p.authenticated_bytes(), &bytes[..bytes.len() - 12]);
        let with = sample(true, b"");
        assert_eq!(with[0], 0x19);
        let p = DataPacket::parse(&with, 12).expect("parse");
        assert_eq!(p.next_commitment, Some(&[0xcc; 32]));
        assert!(p.payload.is_empty());
    }

    #[test]
    fn every_prefix_and_wrong_header_is_an_error() {
        let bytes = sample(true, b"payload");
        for n in 0..(1 + 4 + 64 + 12) {
            assert!(DataPacket::parse(&bytes[..n], 12).is_err(), "prefix {n}");
        }
        let mut v2 = bytes.clone();
        v2[0] = 0x21;
        assert_eq!(
            DataPacket::parse(&v2, 12),
            Err(WireError::UnknownVersion(2))
        );
        let mut k = bytes.clone();
        k[0] = 0x17;
        assert!(DataPacket::parse(&k, 12).is_err());
        let mut req = bytes;
        req[0] = 0x1b;
        assert!(peek_kind(&req).is_err(), "flag on a sync request");
    }

    #[test]
    fn key_disclosure_has_no_payload() {
        let mut out = Vec::new();
        write_data_head(&mut out, Kind::KeyDisclosure, b"", 7, None, &[1; 32]);
        out.extend_from_slice(&[0; 10]);
        assert_eq!(out.len(), 1 + 4 + 32 + 10);
        let p = DataPacket::parse(&out, 10).expect("parse");
        assert_eq!(p.kind, Kind::KeyDisclosure);
        let mut bad = Vec::new();
        write_data_head(&mut bad, Kind::KeyDisclosure, b"x", 7, None, &[1; 32]);
        bad.extend_from_slice(&[0; 10]);
        assert!(DataPacket::parse(&bad, 10).is_err());
    }

    #[test]
    fn sync_request_and_fragment() {
        let req = SyncRequest::encode(&[9; 16]);
        assert_eq!(req.len(), 17);
        assert_eq!(SyncRequest::parse(&req).expect("req").nonce, &[9; 16]);
        assert!(SyncRequest::parse(&req[..16]).is_err());
        assert!(SyncRequest::parse(&SyncRequest::encode(&[0; 65])).is_err());
        let frag = Fragment::encode(&[1; 8], 2, 3, b"abc");
        let f = Fragment::parse(&frag).expect("frag");
        assert_eq!((f.index, f.count, f.chunk), (2, 3, &b"abc"[..]));
        assert!(Fragment::parse(&Fragment::encode(&[1; 8], 3, 3, b"a")).is_err());
        assert!(Fragment::parse(&Fragment::encode(&[1; 8], 0, 1, b"")).is_err());
        assert!(Fragment::parse(&frag[..10]).is_err());
    }
}
