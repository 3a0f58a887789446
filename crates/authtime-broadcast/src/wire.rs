//! The TESLA-protected broadcast packet: an NTPv4 mode-5 header followed by
//! one extension field (RFC 7822) carrying the TESLA trailer.
//!
//! ```text
//! | NTP header (48) | EF type 0xF4A1 | EF length | TESLA header byte (1) | i (4) |
//! | [next K_0 (32)] | K_{i-d} (32) | MAC (t) | zero padding to a multiple of 4, >= 28 |
//! ```
//!
//! The MAC is the TESLA packet's: keyed with `F'(K_i)`, over
//! `TESLA header byte || NTP header || i || [next K_0] || K_{i-d}` — the TESLA
//! data packet whose payload is the 48-byte NTP header (authtime-tesla's
//! layout), rearranged so that the datagram is a valid NTP packet. With the
//! default 16-byte tag the extension field is 4 + 53 + 3 padding = 60 bytes,
//! the datagram 108 bytes. Type 0xF4A1 is not IANA-assigned: this is an
//! experiment, not a standard.

use authtime_tesla::{HEADER_LEN as TESLA_HEADER_LEN, trailer_len};
use authtime_wire::{
    ExtensionField, HEADER_LEN as NTP_HEADER_LEN, Header, Mode, Packet, PacketWriter, WireError,
};

/// Extension field type of the TESLA trailer (unassigned; experimental).
pub const EF_TESLA: u16 = 0xF4A1;

/// Bit of the TESLA header byte that says a next-chain commitment follows `i`.
const NEXT_COMMITMENT_BIT: u8 = 0x08;

/// Why a datagram is not a TESLA broadcast packet.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BroadcastWireError {
    /// Not a decodable NTP packet.
    Ntp(WireError),
    /// Not mode 5.
    NotBroadcast,
    /// No TESLA extension field.
    NoTeslaField,
    /// The TESLA field is shorter than its trailer.
    Truncated,
    /// The TESLA packet given to [`encode`] does not carry an NTP header.
    NotTeslaNtp,
}

impl core::fmt::Display for BroadcastWireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Ntp(e) => write!(f, "NTP: {e:?}"),
            Self::NotBroadcast => f.write_str("not an NTP broadcast (mode 5) packet"),
            Self::NoTeslaField => f.write_str("no TESLA extension field"),
            Self::Truncated => f.write_str("TESLA extension field truncated"),
            Self::NotTeslaNtp => f.write_str("TESLA packet does not carry an NTP header"),
        }
    }
}

impl std::error::Error for BroadcastWireError {}

/// Encodes the 48-byte header of a broadcast packet (what the TESLA sender
/// MACs as the payload).
///
/// # Errors
/// The header's encoding errors.
pub fn header_bytes(header: &Header) -> Result<[u8; NTP_HEADER_LEN], BroadcastWireError> {
    let mut out = [0u8; NTP_HEADER_LEN];
    let n = PacketWriter::new(&mut out, header)
        .and_then(PacketWriter::finish)
        .map_err(BroadcastWireError::Ntp)?;
    debug_assert_eq!(n, NTP_HEADER_LEN);
    Ok(out)
}

/// Turns a TESLA data packet whose payload is an NTP header into the
/// broadcast datagram.
///
/// # Errors
/// [`BroadcastWireError::NotTeslaNtp`] when the packet is too short.
pub fn encode(tesla_packet: &[u8]) -> Result<Vec<u8>, BroadcastWireError> {
    let split = TESLA_HEADER_LEN + NTP_HEADER_LEN;
    if tesla_packet.len() <= split {
        return Err(BroadcastWireError::NotTeslaNtp);
    }
    let mut value = Vec::with_capacity(tesla_packet.len() - NTP_HEADER_LEN + 4);
    value.push(tesla_packet[0]);
    value.extend_from_slice(&tesla_packet[split..]);
    let min_value = ExtensionField::MIN_LAST_LEN_WITHOUT_MAC - ExtensionField::HEADER_LEN;
    while value.len() < min_value || !(value.len() + ExtensionField::HEADER_LEN).is_multiple_of(4) {
        value.push(0);
    }
    let mut header = [0u8; NTP_HEADER_LEN];
    header.copy_from_slice(&tesla_packet[TESLA_HEADER_LEN..split]);
    let decoded = Packet::decode(&header).map_err(BroadcastWireError::Ntp)?;
    let mut out = vec![0u8; NTP_HEADER_LEN + ExtensionField::HEADER_LEN + value.len()];
    let mut w = PacketWriter::new(&mut out, decoded.header()).map_err(BroadcastWireError::Ntp)?;
    w.push_extension_field(ExtensionField {
        field_type: EF_TESLA,
        value: &value,
    })
    .map_err(BroadcastWireError::Ntp)?;
    let n = w.finish().map_err(BroadcastWireError::Ntp)?;
    out.truncate(n);
    Ok(out)
}

/// A received broadcast datagram, not yet authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unverified {
    /// The NTP header as received (untrusted until TESLA releases it).
    pub header: Header,
    /// The TESLA data packet to give to the receiver.
    pub tesla_packet: Vec<u8>,
}

/// Splits a broadcast datagram back into the NTP header and the TESLA packet;
/// `tag_len` comes from the bootstrap (it tells padding from trailer).
///
/// # Errors
/// See [`BroadcastWireError`].
pub fn decode(datagram: &[u8], tag_len: usize) -> Result<Unverified, BroadcastWireError> {
    let packet = Packet::decode(datagram).map_err(BroadcastWireError::Ntp)?;
    if packet.header().mode != Mode::Broadcast {
        return Err(BroadcastWireError::NotBroadcast);
    }
    let field = packet
        .extension_fields()
        .iter()
        .find(|f| f.field_type == EF_TESLA)
        .ok_or(BroadcastWireError::NoTeslaField)?;
    let first = *field.value.first().ok_or(BroadcastWireError::Truncated)?;
    let len = trailer_len(tag_len, first & NEXT_COMMITMENT_BIT != 0);
    let trailer = field
        .value
        .get(1..1 + len)
        .ok_or(BroadcastWireError::Truncated)?;
    let mut tesla_packet = Vec::with_capacity(1 + NTP_HEADER_LEN + len);
    tesla_packet.push(first);
    tesla_packet.extend_from_slice(&datagram[..NTP_HEADER_LEN]);
    tesla_packet.extend_from_slice(trailer);
    Ok(Unverified {
        header: *packet.header(),
        tesla_packet,
    })
}
