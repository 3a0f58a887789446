//! Why a Roughtime packet was refused.

use core::fmt;

/// Every reason this crate refuses a packet, a batch or a response.
///
/// Roughtime has no error messages on the wire (draft-ietf-ntp-roughtime-19
/// §5.2: errors are not reported back, to avoid NTP's Kiss-o'-Death problems),
/// so a server's reaction to each variant is the same: drop the request
/// silently and count it. A client's reaction is to discard the response.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The packet does not start with the "ROUGHTIM" magic (§4.3).
    BadMagic,
    /// The packet's length field does not match the bytes that follow it.
    BadPacketLength {
        /// The length the header claims.
        claimed: u64,
        /// The bytes present after the 12-byte header.
        present: usize,
    },
    /// The input ends before the structure it describes (a header, an offset table).
    Truncated,
    /// The message has no tags (§4.2 needs at least one).
    NoTags,
    /// A message's length, an offset or a value length is not a multiple of four (§4.2).
    Misaligned,
    /// The offsets go down, or point past the end of the values section (§4.2).
    BadOffset,
    /// The tags are not in strictly ascending order, or one repeats (§4.2).
    TagsNotSorted,
    /// A required tag is absent; the value is the tag's four wire bytes.
    MissingTag([u8; 4]),
    /// A tag's value has the wrong length for its type; the value is the tag's wire bytes.
    BadValueLength([u8; 4]),
    /// VER in a request is empty, longer than 32 entries, unsorted or repeats (§5.1.1).
    BadVersionList,
    /// The request offers no version this crate speaks.
    NoCommonVersion,
    /// TYPE is present with the wrong value (§5.1.3: 0 in requests, §5.2.3: 1 in responses).
    WrongType(u32),
    /// A request's packet is shorter than the 1024 bytes a server answers (§5.1).
    RequestTooShort(usize),
    /// The request names, in SRV, a long-term key this server does not hold (§5.2).
    UnknownServerKey,
    /// The response built for a request would be larger than the request (amplification, §9.7).
    ResponseTooLarge {
        /// The request's size in bytes.
        request: usize,
        /// The response's size in bytes.
        response: usize,
    },
    /// The batch is empty, or larger than a Merkle tree of height 32 allows.
    BadBatchSize(usize),
    /// RADI of zero is forbidden (§5.2.5).
    ZeroRadius,
    /// The response's NONC is not the request's nonce.
    NonceMismatch,
    /// The response's version is not one the request offered.
    VersionNotOffered(u32),
    /// The long-term key's signature over DELE does not verify (§5.2.6).
    BadDelegationSignature,
    /// The online key's signature over SREP does not verify (§5.2.1).
    BadResponseSignature,
    /// A public key is not a valid Ed25519 point.
    BadPublicKey,
    /// PATH and INDX do not lead from the request to ROOT (§5.3.1).
    MerkleMismatch,
    /// MIDP lies outside [MINT, MAXT] (§5.4).
    OutsideDelegation {
        /// The response's midpoint.
        midpoint: u64,
        /// The delegation's first valid second.
        mint: u64,
        /// The delegation's last valid second.
        maxt: u64,
    },
    /// MINT is after MAXT in a delegation being created.
    BadDelegationWindow,
    /// The batch signer (aws-lc-rs) refused the online key's seed, or derived
    /// another public key from it than ed25519-dalek did.
    OnlineKeyRejected,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadMagic => f.write_str("packet does not start with ROUGHTIM"),
            Error::BadPacketLength { claimed, present } => {
                write!(
                    f,
                    "packet length field {claimed} but {present} bytes follow"
                )
            }
            Error::Truncated => f.write_str("message truncated"),
            Error::NoTags => f.write_str("message has no tags"),
            Error::Misaligned => f.write_str("length or offset not a multiple of 4"),
            Error::BadOffset => f.write_str("offsets decrease or point past the end"),
            Error::TagsNotSorted => f.write_str("tags not strictly ascending"),
            Error::MissingTag(t) => write!(f, "missing tag {}", tag_name(t)),
            Error::BadValueLength(t) => write!(f, "wrong length for tag {}", tag_name(t)),
            Error::BadVersionList => f.write_str("VER list empty, too long, unsorted or repeated"),
            Error::NoCommonVersion => f.write_str("no version in common"),
            Error::WrongType(v) => write!(f, "wrong TYPE value {v}"),
            Error::RequestTooShort(n) => write!(f, "request of {n} bytes, at least 1024 needed"),
            Error::UnknownServerKey => f.write_str("SRV names a key this server does not hold"),
            Error::ResponseTooLarge { request, response } => {
                write!(f, "response of {response} bytes for a request of {request}")
            }
            Error::BadBatchSize(n) => write!(f, "batch of {n} requests"),
            Error::ZeroRadius => f.write_str("radius of zero"),
            Error::NonceMismatch => f.write_str("response nonce differs from the request's"),
            Error::VersionNotOffered(v) => write!(f, "response version {v:#x} was not offered"),
            Error::BadDelegationSignature => f.write_str("delegation signature does not verify"),
            Error::BadResponseSignature => f.write_str("response signature does not verify"),
            Error::BadPublicKey => f.write_str("invalid Ed25519 public key"),
            Error::MerkleMismatch => f.write_str("Merkle path does not lead to ROOT"),
            Error::OutsideDelegation {
                midpoint,
                mint,
                maxt,
            } => write!(f, "midpoint {midpoint} outside delegation [{mint}, {maxt}]"),
            Error::BadDelegationWindow => f.write_str("MINT after MAXT"),
            Error::OnlineKeyRejected => f.write_str("the batch signer refused the online key"),
        }
    }
}

impl std::error::Error for Error {}

fn tag_name(t: &[u8; 4]) -> String {
    t.iter()
        .filter(|b| b.is_ascii_uppercase())
        .map(|&b| char::from(b))
        .collect()
}
