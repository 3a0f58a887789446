//! chronyd's command protocol (version 6): the `tracking` request and reply,
//! which is what `chronyc tracking` asks.
//!
//! chronyd answers command packets on a Unix datagram socket (full access,
//! `/run/chrony/chronyd.sock` by default) and on UDP port 323 (read-only
//! commands, from the addresses `cmdallow` permits, localhost by default).
//! All integers are big-endian.
//!
//! A request is a 20-byte header (version, packet type, two reserved bytes,
//! command, attempt, sequence, eight reserved bytes) followed by the
//! command's data and zero padding up to the length of its reply, so that a
//! spoofed request cannot be amplified. `tracking` has no data: the request
//! is the header and 84 zero bytes, [`TRACKING_REQUEST_LEN`] = 104 bytes.
//!
//! A reply is a 28-byte header (version, packet type, two reserved bytes,
//! command, reply code, status, six reserved bytes, sequence, eight reserved
//! bytes) followed by the report. The tracking report is 76 bytes, so a
//! successful reply is [`TRACKING_REPLY_LEN`] = 104 bytes; a reply with an
//! error status carries reply code 1 ("null") and no report (28 bytes).
//!
//! Real numbers travel in chrony's 32-bit floating-point format, decoded by
//! [`decode_float`]: a 7-bit signed exponent `e` above a 25-bit signed
//! coefficient `c`, worth `c * 2^(e - 25)` (no hidden bit).
//!
//! Sans-IO: [`tracking_request`] builds the bytes to send and
//! [`parse_tracking_reply`] checks and decodes the bytes received; the
//! server's `chrony_client` does the socket work.

use core::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use authtime_wire::{ReferenceId, UnixTime};

use crate::reading::{LeapScope, LeapWarning, SourceReading, SyncedReading, UnsyncCause};

/// The command protocol version this module speaks.
pub const PROTOCOL_VERSION: u8 = 6;
/// Packet type of a request.
pub const PKT_TYPE_REQUEST: u8 = 1;
/// Packet type of a reply.
pub const PKT_TYPE_REPLY: u8 = 2;
/// The `tracking` command code.
pub const REQ_TRACKING: u16 = 33;
/// The reply code of a tracking report.
pub const RPY_TRACKING: u16 = 5;
/// The reply code of a reply without data (the one error replies carry).
pub const RPY_NULL: u16 = 1;

/// Length of a request header, before the command's data.
pub const REQUEST_HEADER_LEN: usize = 20;
/// Length of a reply header, before the report.
pub const REPLY_HEADER_LEN: usize = 28;
/// Length of the tracking report after the reply header.
pub const TRACKING_REPORT_LEN: usize = 76;
/// Length of a successful tracking reply.
pub const TRACKING_REPLY_LEN: usize = REPLY_HEADER_LEN + TRACKING_REPORT_LEN;
/// Length of a tracking request: the header padded with zeros to the length
/// of the reply, as chronyd requires from protocol version 6 on (shorter
/// requests get a "bad packet length" error).
pub const TRACKING_REQUEST_LEN: usize = TRACKING_REPLY_LEN;

/// Status codes of a reply.
mod status {
    pub(super) const SUCCESS: u16 = 0;
    pub(super) const FAILED: u16 = 1;
    pub(super) const UNAUTH: u16 = 2;
    pub(super) const INVALID: u16 = 3;
    pub(super) const BAD_PKT_VERSION: u16 = 18;
    pub(super) const BAD_PKT_LENGTH: u16 = 19;
}

/// Address families of chrony's address structure.
mod family {
    pub(super) const UNSPEC: u16 = 0;
    pub(super) const INET4: u16 = 1;
    pub(super) const INET6: u16 = 2;
}

/// `tv_sec_high` of a timestamp whose seconds fit in 32 bits, from senders
/// with a 32-bit `time_t`.
const NO_HIGH_SECONDS: u32 = 0x7fff_ffff;

/// Bits of the coefficient in chrony's floating-point format.
const FLOAT_COEF_BITS: u32 = 25;
/// Smallest and largest exponent.
const FLOAT_EXP_MIN: i32 = -64;
const FLOAT_EXP_MAX: i32 = 63;
/// Smallest and largest coefficient.
const FLOAT_COEF_MIN: i64 = -(1 << 24);
const FLOAT_COEF_MAX: i64 = (1 << 24) - 1;

/// A `tracking` request with sequence number `sequence`, first attempt.
#[must_use]
pub fn tracking_request(sequence: u32) -> [u8; TRACKING_REQUEST_LEN] {
    tracking_request_attempt(sequence, 0)
}

/// A `tracking` request with sequence number `sequence`; `attempt` counts
/// the resends of the same sequence number from zero, as chronyc does.
#[must_use]
pub fn tracking_request_attempt(sequence: u32, attempt: u16) -> [u8; TRACKING_REQUEST_LEN] {
    let mut packet = [0u8; TRACKING_REQUEST_LEN];
    packet[0] = PROTOCOL_VERSION;
    packet[1] = PKT_TYPE_REQUEST;
    // 2..4 reserved.
    packet[4..6].copy_from_slice(&REQ_TRACKING.to_be_bytes());
    packet[6..8].copy_from_slice(&attempt.to_be_bytes());
    packet[8..12].copy_from_slice(&sequence.to_be_bytes());
    // 12..20 reserved, then the padding: all zero.
    packet
}

/// chronyd's leap status in a tracking report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChronyLeap {
    /// 0: no leap second pending.
    Normal,
    /// 1: a second is inserted at the end of the month's last day.
    InsertSecond,
    /// 2: a second is deleted at the end of the month's last day.
    DeleteSecond,
    /// 3: the clock is not synchronised.
    NotSynchronised,
}

impl ChronyLeap {
    /// The status with wire value `value`.
    #[must_use]
    pub const fn from_wire(value: u16) -> Option<Self> {
        match value {
            0 => Some(Self::Normal),
            1 => Some(Self::InsertSecond),
            2 => Some(Self::DeleteSecond),
            3 => Some(Self::NotSynchronised),
            _ => None,
        }
    }

    /// The wire value.
    #[must_use]
    pub const fn to_wire(self) -> u16 {
        match self {
            Self::Normal => 0,
            Self::InsertSecond => 1,
            Self::DeleteSecond => 2,
            Self::NotSynchronised => 3,
        }
    }
}

/// chronyd's tracking report, as `chronyc tracking` shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tracking {
    /// Reference id of the source the clock follows (`0x7F7F0101`,
    /// "127.127.1.1", for the `local` reference; 0 when there is none).
    pub reference_id: u32,
    /// The source's IP address; `None` for a reference clock, the `local`
    /// reference or no source (chronyd's "unspecified" and "id" families).
    pub source_address: Option<IpAddr>,
    /// Stratum of the host's clock (0 when not synchronised).
    pub stratum: u16,
    /// Leap status.
    pub leap: ChronyLeap,
    /// When the clock was last updated from its source (the epoch when never).
    pub reference_time: UnixTime,
    /// Seconds the system clock is ahead of chronyd's notion of true time
    /// (positive: fast), still to be corrected.
    pub current_correction: f64,
    /// Offset at the last clock update, in seconds.
    pub last_offset: f64,
    /// Long-term average of the offset, in seconds.
    pub rms_offset: f64,
    /// Frequency error of the system clock in ppm (positive: fast).
    pub frequency_ppm: f64,
    /// Residual frequency of the current source in ppm.
    pub residual_frequency_ppm: f64,
    /// Estimated error bound of the frequency, in ppm.
    pub skew_ppm: f64,
    /// Root delay in seconds.
    pub root_delay: f64,
    /// Root dispersion in seconds.
    pub root_dispersion: f64,
    /// Seconds between the last two clock updates.
    pub last_update_interval: f64,
}

impl Tracking {
    /// What this report says about the host's clock.
    ///
    /// authtime serves the clock chronyd disciplines, so the stratum and the
    /// reference id are chronyd's own, not one stratum further. Leap status
    /// 3, stratum 0 and stratum 16 or more read as unsynchronized.
    #[must_use]
    pub fn to_reading(&self) -> SourceReading {
        let stratum = match u8::try_from(self.stratum) {
            Ok(s @ 1..=15) => s,
            _ => return SourceReading::Unsynchronized(UnsyncCause::ChronyNotSynchronised),
        };
        let leap = match self.leap {
            ChronyLeap::NotSynchronised => {
                return SourceReading::Unsynchronized(UnsyncCause::ChronyNotSynchronised);
            }
            ChronyLeap::Normal => LeapWarning::None,
            ChronyLeap::InsertSecond => LeapWarning::Insert,
            ChronyLeap::DeleteSecond => LeapWarning::Delete,
        };
        let zero = UnixTime::new(0, 0);
        SourceReading::Synchronized(SyncedReading {
            stratum,
            reference_id: ReferenceId(self.reference_id.to_be_bytes()),
            reference_time: (self.reference_time != zero).then_some(self.reference_time),
            root_delay: self.root_delay,
            root_dispersion: self.root_dispersion,
            leap,
            leap_scope: LeapScope::EndOfMonth,
            leap_in_progress: false,
        })
    }
}

/// Why a reply is not a usable tracking report.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChronyReplyError {
    /// Shorter than a reply header.
    TooShort {
        /// Bytes received.
        len: usize,
    },
    /// Another protocol version than 6.
    Version {
        /// The version received.
        got: u8,
    },
    /// Not a reply packet.
    PacketType {
        /// The packet type received.
        got: u8,
    },
    /// The reply is to another command than `tracking`.
    Command {
        /// The command received.
        got: u16,
    },
    /// The reply is to another request (a late reply to an earlier one, or
    /// not ours).
    Sequence {
        /// The sequence number sent.
        expected: u32,
        /// The sequence number received.
        got: u32,
    },
    /// chronyd refused the command as not allowed here (status 2).
    Unauthorised,
    /// chronyd found the request invalid (status 3).
    Invalid,
    /// chronyd could not execute the command (status 1).
    Failed,
    /// chronyd speaks another protocol version (status 18).
    BadPacketVersion,
    /// chronyd found the request's length wrong (status 19).
    BadPacketLength,
    /// Another error status.
    Status {
        /// The status code.
        code: u16,
    },
    /// A success without a tracking report.
    ReplyCode {
        /// The reply code received.
        got: u16,
    },
    /// A tracking reply shorter than the report.
    Truncated {
        /// Bytes received.
        len: usize,
    },
    /// A leap status other than 0 to 3.
    LeapStatus {
        /// The value received.
        got: u16,
    },
    /// A reference time with 10^9 nanoseconds or more.
    Nanoseconds {
        /// The value received.
        got: u32,
    },
}

impl fmt::Display for ChronyReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::TooShort { len } => write!(
                f,
                "reply of {len} bytes is shorter than a command reply header ({REPLY_HEADER_LEN} bytes)"
            ),
            Self::Version { got } => write!(
                f,
                "reply in command protocol version {got}, expected {PROTOCOL_VERSION}"
            ),
            Self::PacketType { got } => write!(
                f,
                "packet type {got} is not a command reply ({PKT_TYPE_REPLY})"
            ),
            Self::Command { got } => write!(
                f,
                "reply to command {got}, expected tracking ({REQ_TRACKING})"
            ),
            Self::Sequence { expected, got } => write!(
                f,
                "reply to sequence number {got:#010x}, expected {expected:#010x}"
            ),
            Self::Unauthorised => f.write_str(
                "chronyd refused the command: not authorised from this socket or address",
            ),
            Self::Invalid => f.write_str("chronyd found the command invalid"),
            Self::Failed => f.write_str("chronyd failed to execute the command"),
            Self::BadPacketVersion => {
                f.write_str("chronyd does not speak command protocol version 6")
            }
            Self::BadPacketLength => f.write_str("chronyd found the request's length wrong"),
            Self::Status { code } => write!(f, "chronyd answered with error status {code}"),
            Self::ReplyCode { got } => write!(
                f,
                "reply code {got} is not a tracking report ({RPY_TRACKING})"
            ),
            Self::Truncated { len } => write!(
                f,
                "tracking reply of {len} bytes is shorter than {TRACKING_REPLY_LEN} bytes"
            ),
            Self::LeapStatus { got } => write!(f, "leap status {got} is not 0 to 3"),
            Self::Nanoseconds { got } => {
                write!(f, "reference time has {got} nanoseconds, 10^9 or more")
            }
        }
    }
}

impl std::error::Error for ChronyReplyError {}

fn be16(bytes: &[u8], at: usize) -> u16 {
    match bytes.get(at..at + 2) {
        Some(&[a, b]) => u16::from_be_bytes([a, b]),
        _ => 0,
    }
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// Checks and decodes chronyd's reply `bytes` to the tracking request with
/// sequence number `sequence`. Bytes after the report are ignored.
///
/// # Errors
///
/// The first problem found, in this order: length of the header, version,
/// packet type, command, sequence number, status, reply code, length of the
/// report, leap status, reference time.
pub fn parse_tracking_reply(bytes: &[u8], sequence: u32) -> Result<Tracking, ChronyReplyError> {
    if bytes.len() < REPLY_HEADER_LEN {
        return Err(ChronyReplyError::TooShort { len: bytes.len() });
    }
    let version = bytes[0];
    if version != PROTOCOL_VERSION {
        return Err(ChronyReplyError::Version { got: version });
    }
    if bytes[1] != PKT_TYPE_REPLY {
        return Err(ChronyReplyError::PacketType { got: bytes[1] });
    }
    let command = be16(bytes, 4);
    if command != REQ_TRACKING {
        return Err(ChronyReplyError::Command { got: command });
    }
    let got = be32(bytes, 16);
    if got != sequence {
        return Err(ChronyReplyError::Sequence {
            expected: sequence,
            got,
        });
    }
    match be16(bytes, 8) {
        status::SUCCESS => {}
        status::FAILED => return Err(ChronyReplyError::Failed),
        status::UNAUTH => return Err(ChronyReplyError::Unauthorised),
        status::INVALID => return Err(ChronyReplyError::Invalid),
        status::BAD_PKT_VERSION => return Err(ChronyReplyError::BadPacketVersion),
        status::BAD_PKT_LENGTH => return Err(ChronyReplyError::BadPacketLength),
        code => return Err(ChronyReplyError::Status { code }),
    }
    let reply = be16(bytes, 6);
    if reply != RPY_TRACKING {
        return Err(ChronyReplyError::ReplyCode { got: reply });
    }
    let Some(report) = bytes.get(REPLY_HEADER_LEN..TRACKING_REPLY_LEN) else {
        return Err(ChronyReplyError::Truncated { len: bytes.len() });
    };
    decode_report(report)
}

/// Decodes the 76-byte tracking report.
fn decode_report(r: &[u8]) -> Result<Tracking, ChronyReplyError> {
    let leap_value = be16(r, 26);
    let leap = ChronyLeap::from_wire(leap_value)
        .ok_or(ChronyReplyError::LeapStatus { got: leap_value })?;
    let float = |at: usize| decode_float(be32(r, at));
    Ok(Tracking {
        reference_id: be32(r, 0),
        source_address: decode_address(r.get(4..24).unwrap_or(&[])),
        stratum: be16(r, 24),
        leap,
        reference_time: decode_timespec(be32(r, 28), be32(r, 32), be32(r, 36))?,
        current_correction: float(40),
        last_offset: float(44),
        rms_offset: float(48),
        frequency_ppm: float(52),
        residual_frequency_ppm: float(56),
        skew_ppm: float(60),
        root_delay: float(64),
        root_dispersion: float(68),
        last_update_interval: float(72),
    })
}

/// chrony's 20-byte address: 16 bytes of address, the family, 2 reserved
/// bytes. Only IPv4 and IPv6 addresses are addresses; the unspecified family,
/// the "id" family (a source not yet resolved) and unknown families give `None`.
fn decode_address(a: &[u8]) -> Option<IpAddr> {
    match be16(a, 16) {
        family::INET4 => Some(IpAddr::V4(Ipv4Addr::from(be32(a, 0)))),
        family::INET6 => {
            let octets: [u8; 16] = a.get(..16)?.try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(octets)))
        }
        family::UNSPEC => None,
        _ => None,
    }
}

/// chrony's timestamp: the high and low 32 bits of the seconds (high
/// `0x7fffffff` meaning none), and nanoseconds.
fn decode_timespec(high: u32, low: u32, nanos: u32) -> Result<UnixTime, ChronyReplyError> {
    if nanos >= 1_000_000_000 {
        return Err(ChronyReplyError::Nanoseconds { got: nanos });
    }
    let high = if high == NO_HIGH_SECONDS { 0 } else { high };
    // chrony reads the 64 bits as a signed time_t.
    let secs = i64::from_be_bytes(((u64::from(high) << 32) | u64::from(low)).to_be_bytes());
    Ok(UnixTime::new(secs, nanos))
}

/// Encodes a timestamp in chrony's format (for tests and fuzzing seeds).
#[must_use]
pub fn encode_timespec(time: UnixTime) -> [u8; 12] {
    let secs = u64::from_be_bytes(time.secs.to_be_bytes());
    let mut out = [0u8; 12];
    out[0..4].copy_from_slice(&((secs >> 32) as u32).to_be_bytes());
    out[4..8].copy_from_slice(&(secs as u32).to_be_bytes());
    out[8..12].copy_from_slice(&time.nanos.to_be_bytes());
    out
}

/// The value of chrony's 32-bit floating-point number `bits` (host order):
/// `coefficient * 2^(exponent - 25)`, with the 7-bit signed exponent in the
/// top bits and the 25-bit signed coefficient below. Always finite.
#[must_use]
pub fn decode_float(bits: u32) -> f64 {
    // Arithmetic shifts of the reinterpreted word sign-extend both fields.
    let word = i32::from_be_bytes(bits.to_be_bytes());
    let exponent = word >> FLOAT_COEF_BITS;
    let coefficient = (word << (32 - FLOAT_COEF_BITS)) >> (32 - FLOAT_COEF_BITS);
    f64::from(coefficient) * pow2(exponent - FLOAT_COEF_BITS as i32)
}

/// `value` in chrony's 32-bit floating-point format (host order), rounded
/// to the nearest representable number: 24 bits of precision for normal
/// magnitudes, saturating at about ±1.7e11 and going to zero below about
/// 3e-27. NaN encodes as zero.
#[must_use]
pub fn encode_float(value: f64) -> u32 {
    if value.is_nan() || value == 0.0 {
        return 0;
    }
    // The coefficient at exponent `e` is value * 2^(25 - e); pick the
    // smallest exponent where it fits, for the most precision.
    let coefficient_at = |e: i32| (value * pow2(FLOAT_COEF_BITS as i32 - e)).round();
    let fits = |c: f64| c >= FLOAT_COEF_MIN as f64 && c <= FLOAT_COEF_MAX as f64;
    let mut exponent = FLOAT_EXP_MIN;
    if value.is_finite() {
        // A first guess from the binary exponent, then adjust by one.
        let guess = value.abs().log2().floor() as i32 + 2;
        exponent = guess.clamp(FLOAT_EXP_MIN, FLOAT_EXP_MAX);
        while exponent > FLOAT_EXP_MIN && fits(coefficient_at(exponent - 1)) {
            exponent -= 1;
        }
    }
    while exponent < FLOAT_EXP_MAX && !fits(coefficient_at(exponent)) {
        exponent += 1;
    }
    let coefficient = coefficient_at(exponent).clamp(FLOAT_COEF_MIN as f64, FLOAT_COEF_MAX as f64);
    // In range by the clamp: the cast is exact.
    let coefficient = coefficient as i64;
    let exp_bits = u32::from_be_bytes(exponent.to_be_bytes()) & 0x7f;
    let coef_bits = u32::from_be_bytes((coefficient as i32).to_be_bytes()) & 0x01ff_ffff;
    (exp_bits << FLOAT_COEF_BITS) | coef_bits
}

/// 2^`exp` for the exponents the format uses (within ±200, exact).
fn pow2(exp: i32) -> f64 {
    2f64.powi(exp)
}

/// A tracking reply as chronyd would send it for `tracking` (for tests and
/// fuzzing seeds): status success, reply code tracking.
#[must_use]
pub fn encode_tracking_reply(sequence: u32, t: &Tracking) -> [u8; TRACKING_REPLY_LEN] {
    let mut p = [0u8; TRACKING_REPLY_LEN];
    p[0] = PROTOCOL_VERSION;
    p[1] = PKT_TYPE_REPLY;
    p[4..6].copy_from_slice(&REQ_TRACKING.to_be_bytes());
    p[6..8].copy_from_slice(&RPY_TRACKING.to_be_bytes());
    p[16..20].copy_from_slice(&sequence.to_be_bytes());
    let r = &mut p[REPLY_HEADER_LEN..];
    r[0..4].copy_from_slice(&t.reference_id.to_be_bytes());
    match t.source_address {
        Some(IpAddr::V4(a)) => {
            r[4..8].copy_from_slice(&a.octets());
            r[20..22].copy_from_slice(&family::INET4.to_be_bytes());
        }
        Some(IpAddr::V6(a)) => {
            r[4..20].copy_from_slice(&a.octets());
            r[20..22].copy_from_slice(&family::INET6.to_be_bytes());
        }
        None => {}
    }
    r[24..26].copy_from_slice(&t.stratum.to_be_bytes());
    r[26..28].copy_from_slice(&t.leap.to_wire().to_be_bytes());
    r[28..40].copy_from_slice(&encode_timespec(t.reference_time));
    let floats = [
        t.current_correction,
        t.last_offset,
        t.rms_offset,
        t.frequency_ppm,
        t.residual_frequency_ppm,
        t.skew_ppm,
        t.root_delay,
        t.root_dispersion,
        t.last_update_interval,
    ];
    for (i, v) in floats.into_iter().enumerate() {
        r[40 + 4 * i..44 + 4 * i].copy_from_slice(&encode_float(v).to_be_bytes());
    }
    p
}

/// Fuzzing entry: decodes `data` as a tracking reply (to the sequence
/// number it carries, so that decoding can get past that check) and, when it
/// decodes, turns it into a reading. Must never panic.
#[doc(hidden)]
pub fn fuzz_tracking_reply(data: &[u8]) {
    let sequence = be32(data, 16);
    if let Ok(tracking) = parse_tracking_reply(data, sequence) {
        let reading = tracking.to_reading();
        if let SourceReading::Synchronized(s) = reading {
            assert!((1..=15).contains(&s.stratum));
            assert!(s.root_delay.is_finite() && s.root_dispersion.is_finite());
        }
        // Re-encoding a decoded report and decoding it again gives the same.
        let again = parse_tracking_reply(&encode_tracking_reply(sequence, &tracking), sequence);
        assert_eq!(again.map(|t| t.stratum), Ok(tracking.stratum));
    }
    let _ = parse_tracking_reply(data, sequence.wrapping_add(1));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Tracking {
        Tracking {
            reference_id: 0xC0A8_0101,
            source_address: Some(IpAddr::V4(Ipv4Addr::new(192, 168, 1, 1))),
            stratum: 3,
            leap: ChronyLeap::Normal,
            reference_time: UnixTime::new(1_795_617_940, 163_498_695),
            current_correction: 1.5e-6,
            last_offset: -2.25e-6,
            rms_offset: 3.0e-5,
            frequency_ppm: -12.5,
            residual_frequency_ppm: 0.001,
            skew_ppm: 0.05,
            root_delay: 0.0123,
            root_dispersion: 0.000_456,
            last_update_interval: 64.0,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        a == b || ((a - b) / b).abs() < 1e-7
    }

    #[test]
    fn chrony_float_known_values() {
        assert_eq!(decode_float(0), 0.0);
        assert_eq!(encode_float(0.0), 0);
        assert_eq!(encode_float(-0.0), 0);
        assert_eq!(encode_float(f64::NAN), 0);
        // 1.0: the largest precision puts 1 at coefficient 2^23, exponent 2
        // (2^23 * 2^(2 - 25) = 1).
        assert_eq!(encode_float(1.0), (2 << 25) | (1 << 23));
        assert_eq!(decode_float((2 << 25) | (1 << 23)), 1.0);
        // -1.0: the coefficient's range reaches -2^24, so exponent 1 holds it.
        let minus_one = (1 << 25) | (1 << 24);
        assert_eq!(encode_float(-1.0), minus_one);
        assert_eq!(decode_float(minus_one), -1.0);
        // Other ways of writing 1.0 decode the same.
        assert_eq!(decode_float((25 << 25) | 1), 1.0);
        assert_eq!(decode_float((3 << 25) | (1 << 22)), 1.0);
        // Exponent -1 (0x7f), coefficient 1: 2^-26.
        assert_eq!(decode_float((0x7f << 25) | 1), 2f64.powi(-26));
        // The extremes.
        assert_eq!(
            decode_float((63 << 25) | 0x00ff_ffff),
            f64::from(0x00ff_ffff) * 2f64.powi(38)
        );
        assert_eq!(
            decode_float((63 << 25) | (1 << 24)),
            -(2f64.powi(24)) * 2f64.powi(38)
        );
        assert_eq!(decode_float((64 << 25) | 1), 2f64.powi(-89));
    }

    #[test]
    fn chrony_float_round_trip_within_precision() {
        for &v in &[
            1e-9, -1e-9, 3.7e-6, 0.000_456, 0.0123, 0.5, 2.0, 3.0, 64.0, 1024.5, -12.5, 500.0,
            1.0e6, 4.2e9, -7.77e10, 1e-20,
        ] {
            let back = decode_float(encode_float(v));
            assert!(close(back, v), "{v} came back as {back}");
        }
        // Powers of two and small integers are exact.
        for e in -60..30 {
            let v = 2f64.powi(e);
            assert_eq!(decode_float(encode_float(v)), v);
            assert_eq!(decode_float(encode_float(-v)), -v);
        }
        for i in -1000..1000 {
            assert_eq!(decode_float(encode_float(f64::from(i))), f64::from(i));
        }
        // Saturation and underflow.
        let max = f64::from(0x00ff_ffff) * 2f64.powi(38);
        assert_eq!(decode_float(encode_float(1e30)), max);
        assert_eq!(decode_float(encode_float(f64::INFINITY)), max);
        assert_eq!(
            decode_float(encode_float(f64::NEG_INFINITY)),
            -(2f64.powi(62))
        );
        assert_eq!(decode_float(encode_float(1e-40)), 0.0);
        // Every word decodes to a finite number that encodes back to itself
        // or to another word of the same value.
        for bits in (0..=u32::MAX).step_by(65_521) {
            let v = decode_float(bits);
            assert!(v.is_finite());
            assert_eq!(decode_float(encode_float(v)), v, "{bits:#x}");
        }
    }

    #[test]
    fn chrony_tracking_request_layout() {
        let r = tracking_request(0x0102_0304);
        assert_eq!(r.len(), 104);
        assert_eq!(TRACKING_REQUEST_LEN, 104);
        assert_eq!(
            r[..20],
            [6, 1, 0, 0, 0, 33, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert!(r[20..].iter().all(|&b| b == 0));
        let r = tracking_request_attempt(7, 2);
        assert_eq!(r[6..12], [0, 2, 0, 0, 0, 7]);
    }

    #[test]
    fn chrony_reply_built_by_hand_decodes() {
        let mut p = vec![6u8, 2, 0, 0, 0, 33, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0];
        p.extend_from_slice(&0xdead_beefu32.to_be_bytes());
        p.extend_from_slice(&[0; 8]);
        // Report: reference id 0xC0A80101, IPv4 192.168.1.1.
        p.extend_from_slice(&[0xC0, 0xA8, 1, 1, 0xC0, 0xA8, 1, 1]);
        p.extend_from_slice(&[0; 12]);
        p.extend_from_slice(&[0, 1, 0, 0]); // family 1, reserved
        p.extend_from_slice(&[0, 3, 0, 1]); // stratum 3, leap insert
        p.extend_from_slice(&[0x7f, 0xff, 0xff, 0xff]); // no high seconds
        p.extend_from_slice(&1_700_000_000u32.to_be_bytes());
        p.extend_from_slice(&500_000_000u32.to_be_bytes());
        for v in [0.25f64, -0.5, 1.0, -12.5, 0.125, 2.0, 0.0625, 0.03125, 64.0] {
            p.extend_from_slice(&encode_float(v).to_be_bytes());
        }
        p.extend_from_slice(&[0; 4]); // whatever follows is ignored
        let t = parse_tracking_reply(&p, 0xdead_beef).expect("decodes");
        assert_eq!(
            t,
            Tracking {
                reference_id: 0xC0A8_0101,
                source_address: Some(IpAddr::V4(Ipv4Addr::new(192, 168, 1, 1))),
                stratum: 3,
                leap: ChronyLeap::InsertSecond,
                reference_time: UnixTime::new(1_700_000_000, 500_000_000),
                current_correction: 0.25,
                last_offset: -0.5,
                rms_offset: 1.0,
                frequency_ppm: -12.5,
                residual_frequency_ppm: 0.125,
                skew_ppm: 2.0,
                root_delay: 0.0625,
                root_dispersion: 0.03125,
                last_update_interval: 64.0,
            }
        );
        // IPv6, and the "id" family (an unresolved source): no address.
        p[28 + 4..28 + 20]
            .copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        p[28 + 21] = 2;
        let t = parse_tracking_reply(&p, 0xdead_beef).expect("decodes");
        assert_eq!(
            t.source_address,
            Some("2001:db8::1".parse().expect("address"))
        );
        p[28 + 21] = 3;
        let t = parse_tracking_reply(&p, 0xdead_beef).expect("decodes");
        assert_eq!(t.source_address, None);
        // 64-bit seconds.
        p[28 + 28..28 + 32].copy_from_slice(&[0, 0, 0, 1]);
        let t = parse_tracking_reply(&p, 0xdead_beef).expect("decodes");
        assert_eq!(t.reference_time.secs, (1i64 << 32) + 1_700_000_000);
    }

    #[test]
    fn chrony_encoded_reply_round_trips() {
        let t = sample();
        let p = encode_tracking_reply(42, &t);
        let back = parse_tracking_reply(&p, 42).expect("decodes");
        assert_eq!(back.reference_id, t.reference_id);
        assert_eq!(back.source_address, t.source_address);
        assert_eq!(back.stratum, 3);
        assert_eq!(back.leap, ChronyLeap::Normal);
        assert_eq!(back.reference_time, t.reference_time);
        assert!(close(back.root_delay, t.root_delay));
        assert!(close(back.root_dispersion, t.root_dispersion));
        assert!(close(back.frequency_ppm, t.frequency_ppm));
        assert!(close(back.last_offset, t.last_offset));
        // Times before the epoch survive too.
        let mut early = t;
        early.reference_time = UnixTime::new(-5, 1);
        let p = encode_tracking_reply(42, &early);
        assert_eq!(
            parse_tracking_reply(&p, 42).map(|t| t.reference_time),
            Ok(UnixTime::new(-5, 1))
        );
    }

    #[test]
    fn chrony_malformed_replies() {
        let good = encode_tracking_reply(9, &sample());
        assert!(parse_tracking_reply(&good, 9).is_ok());
        let with = |at: usize, value: &[u8]| {
            let mut p = good;
            p[at..at + value.len()].copy_from_slice(value);
            p
        };
        assert_eq!(
            parse_tracking_reply(&[], 9),
            Err(ChronyReplyError::TooShort { len: 0 })
        );
        assert_eq!(
            parse_tracking_reply(&good[..27], 9),
            Err(ChronyReplyError::TooShort { len: 27 })
        );
        assert_eq!(
            parse_tracking_reply(&with(0, &[5]), 9),
            Err(ChronyReplyError::Version { got: 5 })
        );
        assert_eq!(
            parse_tracking_reply(&with(1, &[1]), 9),
            Err(ChronyReplyError::PacketType { got: 1 })
        );
        assert_eq!(
            parse_tracking_reply(&with(4, &[0, 14]), 9),
            Err(ChronyReplyError::Command { got: 14 })
        );
        assert_eq!(
            parse_tracking_reply(&good, 10),
            Err(ChronyReplyError::Sequence {
                expected: 10,
                got: 9
            })
        );
        for (code, error) in [
            (1, ChronyReplyError::Failed),
            (2, ChronyReplyError::Unauthorised),
            (3, ChronyReplyError::Invalid),
            (18, ChronyReplyError::BadPacketVersion),
            (19, ChronyReplyError::BadPacketLength),
            (6, ChronyReplyError::Status { code: 6 }),
        ] {
            // As chronyd sends errors: reply code null, header only.
            let p = with(6, &[0, 1, 0, code]);
            assert_eq!(parse_tracking_reply(&p[..28], 9), Err(error));
            assert_eq!(parse_tracking_reply(&p, 9), Err(error));
            assert!(!error.to_string().is_empty());
        }
        assert_eq!(
            parse_tracking_reply(&with(6, &[0, 1]), 9),
            Err(ChronyReplyError::ReplyCode { got: 1 })
        );
        for len in [28, 29, 60, 103] {
            assert_eq!(
                parse_tracking_reply(&good[..len], 9),
                Err(ChronyReplyError::Truncated { len })
            );
        }
        assert_eq!(
            parse_tracking_reply(&with(28 + 26, &[0, 4]), 9),
            Err(ChronyReplyError::LeapStatus { got: 4 })
        );
        assert_eq!(
            parse_tracking_reply(&with(28 + 36, &1_000_000_000u32.to_be_bytes()), 9),
            Err(ChronyReplyError::Nanoseconds { got: 1_000_000_000 })
        );
        // A request is not a reply.
        assert_eq!(
            parse_tracking_reply(&tracking_request(9), 9),
            Err(ChronyReplyError::PacketType { got: 1 })
        );
    }

    #[test]
    fn chrony_reading_mapping() {
        let t = sample();
        match t.to_reading() {
            SourceReading::Synchronized(s) => {
                assert_eq!(s.stratum, 3);
                assert_eq!(s.reference_id, ReferenceId([0xC0, 0xA8, 1, 1]));
                assert_eq!(s.reference_time, Some(t.reference_time));
                assert_eq!(s.root_delay, t.root_delay);
                assert_eq!(s.root_dispersion, t.root_dispersion);
                assert_eq!(s.leap, LeapWarning::None);
                assert_eq!(s.leap_scope, LeapScope::EndOfMonth);
                assert!(!s.leap_in_progress);
            }
            other => panic!("{other:?}"),
        }
        let leap = |leap| match (Tracking { leap, ..t }).to_reading() {
            SourceReading::Synchronized(s) => Some(s.leap),
            SourceReading::Unsynchronized(_) => None,
        };
        assert_eq!(leap(ChronyLeap::InsertSecond), Some(LeapWarning::Insert));
        assert_eq!(leap(ChronyLeap::DeleteSecond), Some(LeapWarning::Delete));
        let unsync = SourceReading::Unsynchronized(UnsyncCause::ChronyNotSynchronised);
        assert_eq!(leap(ChronyLeap::NotSynchronised), None);
        for stratum in [0, 16, 17, 255, 256, u16::MAX] {
            assert_eq!(Tracking { stratum, ..t }.to_reading(), unsync);
        }
        // What chronyd reports with no source: all zero, leap 3.
        let none = Tracking {
            reference_id: 0,
            source_address: None,
            stratum: 0,
            leap: ChronyLeap::NotSynchronised,
            reference_time: UnixTime::new(0, 0),
            ..t
        };
        assert_eq!(none.to_reading(), unsync);
        // Synchronised without a reference time: the reading leaves it open.
        let local = Tracking {
            reference_id: 0x7F7F_0101,
            source_address: None,
            stratum: 15,
            reference_time: UnixTime::new(0, 0),
            ..t
        };
        match local.to_reading() {
            SourceReading::Synchronized(s) => {
                assert_eq!(s.stratum, 15);
                assert_eq!(s.reference_id, ReferenceId(*b"\x7f\x7f\x01\x01"));
                assert_eq!(s.reference_time, None);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn chrony_fuzz_entry_survives_garbage() {
        let good = encode_tracking_reply(77, &sample());
        fuzz_tracking_reply(&good);
        fuzz_tracking_reply(&[]);
        let mut state = 0x1234_5678_9abc_def0u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut p = good;
            let at = (state % 104) as usize;
            p[at] = (state >> 32) as u8;
            let len = ((state >> 40) % 120) as usize;
            fuzz_tracking_reply(&p[..len.min(104)]);
            fuzz_tracking_reply(&p);
        }
    }
}
