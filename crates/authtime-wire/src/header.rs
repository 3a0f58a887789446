//! The 48-byte NTP header (RFC 5905 section 7.3).

use core::fmt;
use core::net::Ipv4Addr;

use crate::{KissCode, NtpShort, NtpTimestamp, Reader, WireError, Writer};

/// Length of the NTP header in bytes (RFC 5905 section 7.3, figure 8).
pub const HEADER_LEN: usize = 48;

/// Leap indicator: a warning of an impending leap second (RFC 5905 section 7.3, figure 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeapIndicator {
    /// No warning.
    NoWarning,
    /// The last minute of the day has 61 seconds.
    InsertSecond,
    /// The last minute of the day has 59 seconds.
    DeleteSecond,
    /// Unknown: the clock is unsynchronized.
    Unsynchronized,
}

impl LeapIndicator {
    /// From the two bits on the wire (higher bits are ignored).
    #[must_use]
    pub const fn from_bits(bits: u8) -> Self {
        match bits & 0b11 {
            0 => Self::NoWarning,
            1 => Self::InsertSecond,
            2 => Self::DeleteSecond,
            _ => Self::Unsynchronized,
        }
    }

    /// The two bits on the wire.
    #[must_use]
    pub const fn to_bits(self) -> u8 {
        match self {
            Self::NoWarning => 0,
            Self::InsertSecond => 1,
            Self::DeleteSecond => 2,
            Self::Unsynchronized => 3,
        }
    }
}

/// Association mode (RFC 5905 section 7.3, figure 10). All eight values are
/// named, so every packet's mode survives a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// 0, reserved.
    Reserved,
    /// 1, symmetric active.
    SymmetricActive,
    /// 2, symmetric passive.
    SymmetricPassive,
    /// 3, client.
    Client,
    /// 4, server.
    Server,
    /// 5, broadcast.
    Broadcast,
    /// 6, NTP control message (RFC 1305 appendix B, RFC 9327).
    Control,
    /// 7, reserved for private use (ntpdc).
    Private,
}

impl Mode {
    /// From the three bits on the wire (higher bits are ignored).
    #[must_use]
    pub const fn from_bits(bits: u8) -> Self {
        match bits & 0b111 {
            0 => Self::Reserved,
            1 => Self::SymmetricActive,
            2 => Self::SymmetricPassive,
            3 => Self::Client,
            4 => Self::Server,
            5 => Self::Broadcast,
            6 => Self::Control,
            _ => Self::Private,
        }
    }

    /// The three bits on the wire.
    #[must_use]
    pub const fn to_bits(self) -> u8 {
        match self {
            Self::Reserved => 0,
            Self::SymmetricActive => 1,
            Self::SymmetricPassive => 2,
            Self::Client => 3,
            Self::Server => 4,
            Self::Broadcast => 5,
            Self::Control => 6,
            Self::Private => 7,
        }
    }
}

/// Reference id (RFC 5905 section 7.3): a four-character ASCII source name at
/// stratum 1, the upstream server's IPv4 address (or a hash of its IPv6 address)
/// above, a [`KissCode`] at stratum 0.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ReferenceId(pub [u8; 4]);

impl ReferenceId {
    /// The reference id of an IPv4 upstream server.
    #[must_use]
    pub const fn from_ipv4(addr: Ipv4Addr) -> Self {
        Self(addr.octets())
    }

    /// An ASCII source name for stratum 1 (`b"GPS\0"`, `b"PPS\0"`, `b"LOCL"`).
    #[must_use]
    pub const fn from_ascii(name: [u8; 4]) -> Self {
        Self(name)
    }

    /// The id as a kiss code, for stratum-0 packets.
    #[must_use]
    pub const fn as_kiss_code(self) -> KissCode {
        KissCode(self.0)
    }

    /// The id as a big-endian number.
    #[must_use]
    pub const fn to_u32(self) -> u32 {
        u32::from_be_bytes(self.0)
    }

    /// The id as a packet of `stratum` means it: a name (or kiss code) at
    /// stratum 0 and 1 when it is printable, an IPv4 address (or the hash of
    /// an IPv6 one) in dotted quad above, even where its bytes happen to
    /// spell a name (71.80.83.0 is "GPS\0").
    #[must_use]
    pub const fn at_stratum(self, stratum: u8) -> ReferenceIdAt {
        ReferenceIdAt { id: self, stratum }
    }
}

/// A [`ReferenceId`] shown as its stratum means it ([`ReferenceId::at_stratum`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReferenceIdAt {
    id: ReferenceId,
    stratum: u8,
}

impl fmt::Display for ReferenceIdAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.stratum <= 1 {
            write!(f, "{}", self.id)
        } else {
            write!(f, "{}", Ipv4Addr::from(self.id.0))
        }
    }
}

impl From<KissCode> for ReferenceId {
    fn from(code: KissCode) -> Self {
        Self(code.0)
    }
}

impl fmt::Debug for ReferenceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReferenceId({self})")
    }
}

impl fmt::Display for ReferenceId {
    /// Printable ASCII (trailing NULs dropped) as text, anything else as dotted quad.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text_len = self.0.iter().position(|&b| b == 0).unwrap_or(4);
        let (text, pad) = self.0.split_at(text_len);
        if text_len > 0 && text.iter().all(u8::is_ascii_graphic) && pad.iter().all(|&b| b == 0) {
            for &b in text {
                write!(f, "{}", char::from(b))?;
            }
            Ok(())
        } else {
            write!(f, "{}", Ipv4Addr::from(self.0))
        }
    }
}

/// The NTP packet header (RFC 5905 section 7.3, figure 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// Leap indicator (LI).
    pub leap: LeapIndicator,
    /// Version number (VN), 0 to 7; 4 for NTPv4.
    pub version: u8,
    /// Association mode.
    pub mode: Mode,
    /// Stratum: 0 for Kiss-o'-Death, 1 primary, 2–15 secondary, 16 unsynchronized.
    pub stratum: u8,
    /// Poll exponent: log2 of the poll interval in seconds.
    pub poll: i8,
    /// Precision exponent: log2 of the clock precision in seconds.
    pub precision: i8,
    /// Total round-trip delay to the reference clock.
    pub root_delay: NtpShort,
    /// Total dispersion to the reference clock.
    pub root_dispersion: NtpShort,
    /// Reference id, or kiss code at stratum 0.
    pub reference_id: ReferenceId,
    /// When the system clock was last set or corrected.
    pub reference_ts: NtpTimestamp,
    /// Origin timestamp (T1): the transmit timestamp of the request this answers.
    pub origin_ts: NtpTimestamp,
    /// Receive timestamp (T2): when the request arrived at the server.
    pub receive_ts: NtpTimestamp,
    /// Transmit timestamp (T3): when this packet left.
    pub transmit_ts: NtpTimestamp,
}

impl Header {
    /// A header with every field zero except version 4 and `mode`.
    #[must_use]
    pub const fn new(mode: Mode) -> Self {
        Self {
            leap: LeapIndicator::NoWarning,
            version: 4,
            mode,
            stratum: 0,
            poll: 0,
            precision: 0,
            root_delay: NtpShort::ZERO,
            root_dispersion: NtpShort::ZERO,
            reference_id: ReferenceId([0; 4]),
            reference_ts: NtpTimestamp::ZERO,
            origin_ts: NtpTimestamp::ZERO,
            receive_ts: NtpTimestamp::ZERO,
            transmit_ts: NtpTimestamp::ZERO,
        }
    }

    /// The kiss code when this is a Kiss-o'-Death packet (stratum 0 with a
    /// code in the reference id, RFC 5905 section 7.4), `None` otherwise.
    /// Stratum 0 with reference id 0 is not a kiss: it is how chrony, NTPsec
    /// and authtime announce an unsynchronized clock (kiss codes are ASCII).
    #[must_use]
    pub const fn kiss_code(&self) -> Option<KissCode> {
        let id = self.reference_id.0;
        if self.stratum == 0 && !(id[0] == 0 && id[1] == 0 && id[2] == 0 && id[3] == 0) {
            Some(self.reference_id.as_kiss_code())
        } else {
            None
        }
    }

    /// Reads the 48 header bytes.
    ///
    /// # Errors
    /// [`WireError::Truncated`] when fewer than 48 bytes are left.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        let bytes: [u8; HEADER_LEN] = r.take_array()?;
        let mut r = Reader::new(&bytes);
        let first = r.u8()?;
        Ok(Self {
            leap: LeapIndicator::from_bits(first >> 6),
            version: (first >> 3) & 0b111,
            mode: Mode::from_bits(first),
            stratum: r.u8()?,
            poll: r.u8()? as i8,
            precision: r.u8()? as i8,
            root_delay: NtpShort::from_bits(r.u32()?),
            root_dispersion: NtpShort::from_bits(r.u32()?),
            reference_id: ReferenceId(r.take_array()?),
            reference_ts: NtpTimestamp::decode(&mut r)?,
            origin_ts: NtpTimestamp::decode(&mut r)?,
            receive_ts: NtpTimestamp::decode(&mut r)?,
            transmit_ts: NtpTimestamp::decode(&mut r)?,
        })
    }

    /// Writes the 48 header bytes.
    ///
    /// # Errors
    /// [`WireError::VersionOutOfRange`] for a version above 7,
    /// [`WireError::BufferTooSmall`] when 48 bytes do not fit; nothing is
    /// written then.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<(), WireError> {
        if self.version > 7 {
            return Err(WireError::VersionOutOfRange {
                version: self.version,
            });
        }
        let mut bytes = [0u8; HEADER_LEN];
        let mut b = Writer::new(&mut bytes);
        b.put_u8((self.leap.to_bits() << 6) | (self.version << 3) | self.mode.to_bits())?;
        b.put_u8(self.stratum)?;
        b.put_u8(self.poll as u8)?;
        b.put_u8(self.precision as u8)?;
        b.put_u32(self.root_delay.to_bits())?;
        b.put_u32(self.root_dispersion.to_bits())?;
        b.put(&self.reference_id.0)?;
        for ts in [
            self.reference_ts,
            self.origin_ts,
            self.receive_ts,
            self.transmit_ts,
        ] {
            ts.encode(&mut b)?;
        }
        w.put(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;

    /// A chrony 4.3 server reply (mode 4, stratum 8, poll 6, precision -25,
    /// refid 127.127.1.1 of `local stratum 8`), captured on loopback.
    const CHRONY_REPLY_HEADER: [u8; 48] = [
        0x24, 0x08, 0x06, 0xe7, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x7f, 0x01,
        0x01, 0xee, 0xad, 0x05, 0x45, 0xec, 0xc7, 0xa4, 0x2a, 0x6e, 0x5e, 0x60, 0x18, 0x58, 0xe9,
        0x9a, 0xc0, 0xee, 0xad, 0x05, 0x47, 0x7b, 0x3d, 0xd4, 0x9b, 0xee, 0xad, 0x05, 0x47, 0x7b,
        0x40, 0x44, 0x38,
    ];

    #[test]
    fn decodes_a_chrony_reply_and_encodes_it_back() {
        let h = Header::decode(&mut Reader::new(&CHRONY_REPLY_HEADER)).expect("header");
        assert_eq!(h.leap, LeapIndicator::NoWarning);
        assert_eq!(h.version, 4);
        assert_eq!(h.mode, Mode::Server);
        assert_eq!(h.stratum, 8);
        assert_eq!(h.poll, 6);
        assert_eq!(h.precision, -25);
        assert_eq!(
            h.reference_id,
            ReferenceId::from_ipv4(Ipv4Addr::new(127, 127, 1, 1))
        );
        assert_eq!(h.origin_ts.to_bits(), 0x6e5e_6018_58e9_9ac0);
        assert_eq!(h.kiss_code(), None);
        let mut out = [0u8; 48];
        h.encode(&mut Writer::new(&mut out)).expect("encode");
        assert_eq!(out, CHRONY_REPLY_HEADER);
    }

    #[test]
    fn every_first_byte_round_trips() {
        for first in 0..=255u8 {
            let mut bytes = CHRONY_REPLY_HEADER;
            bytes[0] = first;
            let h = Header::decode(&mut Reader::new(&bytes)).expect("header");
            let mut out = [0u8; 48];
            h.encode(&mut Writer::new(&mut out)).expect("encode");
            assert_eq!(out[0], first);
        }
    }

    #[test]
    fn kiss_code_only_at_stratum_zero() {
        let mut h = Header::new(Mode::Server);
        h.reference_id = KissCode::RATE.into();
        assert_eq!(h.kiss_code(), Some(KissCode::RATE));
        h.stratum = 1;
        assert_eq!(h.kiss_code(), None);
        // chrony's unsynchronized reply: stratum 0, reference id 0.
        h.stratum = 0;
        h.reference_id = ReferenceId([0; 4]);
        assert_eq!(h.kiss_code(), None);
    }

    #[test]
    fn short_input_and_bad_version_are_errors() {
        assert!(Header::decode(&mut Reader::new(&CHRONY_REPLY_HEADER[..47])).is_err());
        let mut h = Header::new(Mode::Client);
        h.version = 8;
        let mut out = [0u8; 48];
        assert_eq!(
            h.encode(&mut Writer::new(&mut out)),
            Err(WireError::VersionOutOfRange { version: 8 })
        );
        h.version = 4;
        assert!(h.encode(&mut Writer::new(&mut out[..40])).is_err());
    }

    #[test]
    fn reference_id_display() {
        assert_eq!(format!("{}", ReferenceId(*b"GPS\0")), "GPS");
        assert_eq!(format!("{}", ReferenceId(*b"LOCL")), "LOCL");
        assert_eq!(format!("{}", ReferenceId([127, 127, 1, 1])), "127.127.1.1");
        assert_eq!(format!("{}", ReferenceId([0; 4])), "0.0.0.0");
    }

    #[test]
    fn reference_id_display_follows_the_stratum() {
        let gps = ReferenceId(*b"GPS\0");
        assert_eq!(format!("{}", gps.at_stratum(1)), "GPS");
        assert_eq!(format!("{}", ReferenceId(*b"RATE").at_stratum(0)), "RATE");
        // Above stratum 1 the same bytes are the upstream's address.
        assert_eq!(format!("{}", gps.at_stratum(2)), "71.80.83.0");
        assert_eq!(
            format!("{}", ReferenceId([192, 0, 2, 1]).at_stratum(3)),
            "192.0.2.1"
        );
        assert_eq!(
            format!("{}", ReferenceId([127, 127, 1, 1]).at_stratum(1)),
            "127.127.1.1"
        );
    }
}
