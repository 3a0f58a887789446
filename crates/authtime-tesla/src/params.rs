//! Session parameters, their limits, and the MAC of an interval.

use core::fmt;

use authtime_mac::{Algorithm, KeyLength, Mac, MacError};
use subtle::ConstantTimeEq;

use crate::codec::{Reader, WireError, put_u32, put_u64};
use crate::owf::{ChainKey, KEY_LEN, f_prime};
use crate::time::{Schedule, Time};

/// Shortest MAC tag accepted, in bytes (80 bits). RFC 2104 section 5 advises
/// truncated HMACs of no fewer than 80 bits; TESLA forgeries are online
/// guesses that must land before the interval key is disclosed, and at a
/// billion forged packets per second for a year an attacker succeeds with
/// probability about 3e-8 against 80 bits.
pub const MIN_TAG_LEN: usize = 10;
/// Shortest interval: 1 µs.
pub const MIN_INTERVAL_NS: u64 = 1_000;
/// Longest interval: one day.
pub const MAX_INTERVAL_NS: u64 = 86_400 * 1_000_000_000;
/// Longest disclosure delay, in intervals.
pub const MAX_DELAY: u32 = 65_535;

/// The parameters a sender announces in its signed bootstrap and a receiver
/// checks before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Start of interval 0 on the sender's clock, `T_0`.
    pub t0: Time,
    /// Interval length `T_int`, in nanoseconds.
    pub interval_ns: u64,
    /// Disclosure delay `d` in intervals: packets of interval `i` carry `K_{i-d}`.
    pub disclosure_delay: u32,
    /// Keys used per chain, `N` (`K_1 .. K_N`; `K_0` is the commitment).
    pub chain_len: u32,
    /// MAC algorithm keyed with `F'(K_i)`.
    pub mac: Algorithm,
    /// MAC tag length on the wire (the algorithm's tag, truncated).
    pub tag_len: u8,
    /// The last `rollover_lead` intervals of each chain carry the commitment of
    /// the next chain.
    pub rollover_lead: u32,
}

/// Why parameters were refused.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamError {
    /// `T_int` outside [`MIN_INTERVAL_NS`] ..= [`MAX_INTERVAL_NS`].
    Interval(u64),
    /// `d` must be at least 1, at most [`MAX_DELAY`], and below the chain length.
    Delay(u32),
    /// A chain needs at least 2 keys.
    ChainLength(u32),
    /// The rollover lead must be at least 1 and at most the chain length.
    RolloverLead(u32),
    /// The MAC algorithm cannot serve TESLA (reason given).
    Mac(&'static str),
    /// The tag length is below [`MIN_TAG_LEN`] or above the algorithm's tag.
    TagLength(u8),
    /// The algorithm name is unknown.
    UnknownMac(String),
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Interval(ns) => write!(f, "interval of {ns} ns out of range"),
            Self::Delay(d) => write!(f, "disclosure delay {d} out of range"),
            Self::ChainLength(n) => write!(f, "chain length {n} out of range"),
            Self::RolloverLead(l) => write!(f, "rollover lead {l} out of range"),
            Self::Mac(why) => write!(f, "MAC algorithm unsuitable: {why}"),
            Self::TagLength(t) => write!(f, "tag length {t} out of range"),
            Self::UnknownMac(name) => write!(f, "unknown MAC algorithm `{name}`"),
        }
    }
}

impl std::error::Error for ParamError {}

/// Looks a MAC up by name and checks that TESLA can use it.
///
/// # Errors
/// Unknown names, nonce-based MACs (many packets share one interval key, so a
/// nonce would need managing across them), the legacy `key || message`
/// digests (not MACs), tags below [`MIN_TAG_LEN`], and keys that cannot be
/// derived from the 32-byte `F'(K_i)`.
pub fn mac_by_name(name: &str) -> Result<Algorithm, ParamError> {
    let alg = Algorithm::from_name(name).map_err(|_| ParamError::UnknownMac(name.to_owned()))?;
    check_mac(alg)?;
    Ok(alg)
}

/// The MAC a decoded message names: as [`mac_by_name`], but only under its
/// canonical name (what [`Algorithm::name`] writes). `mac_by_name` accepts
/// other spellings (`HMAC-SHA256`); on the wire they would give a message a
/// second encoding, and a decoded body must re-encode to the bytes that were
/// signed (found by the issue-29 fuzz campaign, `tesla_bootstrap_parsing`).
pub(crate) fn mac_from_wire(name: &[u8]) -> Result<Algorithm, WireError> {
    let name = core::str::from_utf8(name).map_err(|_| WireError::InvalidField("MAC name"))?;
    match mac_by_name(name) {
        Ok(mac) if mac.name() == name => Ok(mac),
        _ => Err(WireError::InvalidField("MAC name")),
    }
}

fn check_mac(alg: Algorithm) -> Result<(), ParamError> {
    let info = alg.info();
    if matches!(alg, Algorithm::Md5Legacy | Algorithm::Sha1Legacy) {
        return Err(ParamError::Mac("a legacy key||message digest is not a MAC"));
    }
    if info.nonce_len != 0 {
        return Err(ParamError::Mac("nonce-based MACs are not supported"));
    }
    if info.tag_len < MIN_TAG_LEN {
        return Err(ParamError::Mac("tag shorter than 80 bits"));
    }
    if mac_key_len(info.key).is_none() {
        return Err(ParamError::Mac("key longer than 32 bytes"));
    }
    Ok(())
}

/// The MAC key length used with a key rule: 32 bytes when accepted, else the
/// exact length when it is shorter (the first bytes of `F'(K_i)`).
fn mac_key_len(rule: KeyLength) -> Option<usize> {
    if rule.accepts(KEY_LEN) {
        return Some(KEY_LEN);
    }
    match rule {
        KeyLength::Exact(n) if n <= KEY_LEN => Some(n),
        _ => None,
    }
}

impl Params {
    /// Checks every limit.
    ///
    /// # Errors
    /// The first parameter out of range.
    pub fn validate(&self) -> Result<(), ParamError> {
        if !(MIN_INTERVAL_NS..=MAX_INTERVAL_NS).contains(&self.interval_ns) {
            return Err(ParamError::Interval(self.interval_ns));
        }
        if self.chain_len < 2 {
            return Err(ParamError::ChainLength(self.chain_len));
        }
        let d = self.disclosure_delay;
        if d == 0 || d > MAX_DELAY || d >= self.chain_len {
            return Err(ParamError::Delay(d));
        }
        if self.rollover_lead == 0 || self.rollover_lead > self.chain_len {
            return Err(ParamError::RolloverLead(self.rollover_lead));
        }
        check_mac(self.mac)?;
        let t = usize::from(self.tag_len);
        if t < MIN_TAG_LEN || t > self.mac.info().tag_len {
            return Err(ParamError::TagLength(self.tag_len));
        }
        Ok(())
    }

    /// The interval schedule.
    #[must_use]
    pub fn schedule(&self) -> Schedule {
        Schedule {
            t0: self.t0,
            interval_ns: self.interval_ns,
        }
    }

    /// Chain that serves interval `i`: `i / N`.
    #[must_use]
    pub fn chain_of(&self, i: u32) -> u32 {
        i / self.chain_len
    }

    /// Index of interval `i`'s key in its chain: `i mod N + 1` (`K_1 .. K_N`).
    #[must_use]
    pub fn key_index(&self, i: u32) -> u32 {
        i % self.chain_len + 1
    }

    /// The global interval served by key `K_j` of chain `c`, `None` for
    /// `j = 0` (the commitment) or when it does not fit in a `u32`.
    #[must_use]
    pub fn interval_of(&self, chain: u32, j: u32) -> Option<u32> {
        if j == 0 || j > self.chain_len {
            return None;
        }
        let i = u64::from(chain) * u64::from(self.chain_len) + u64::from(j) - 1;
        u32::try_from(i).ok()
    }

    /// Whether packets of interval `i` carry the next chain's commitment.
    #[must_use]
    pub fn carries_next_commitment(&self, i: u32) -> bool {
        self.key_index(i) > self.chain_len - self.rollover_lead
    }

    /// Bytes of a data packet besides the payload (header, index, disclosed key,
    /// tag; plus 32 during the rollover lead).
    #[must_use]
    pub fn overhead(&self, with_next_commitment: bool) -> usize {
        crate::wire::HEADER_LEN
            + crate::wire::trailer_len(usize::from(self.tag_len), with_next_commitment)
    }
}

impl Params {
    /// Appends the parameters to a state file.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u64(out, self.t0.0);
        put_u64(out, self.interval_ns);
        put_u32(out, self.disclosure_delay);
        put_u32(out, self.chain_len);
        put_u32(out, self.rollover_lead);
        let name = self.mac.name().as_bytes();
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        out.push(self.tag_len);
    }

    /// Reads parameters written by [`Params::encode`] and validates them.
    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Self, WireError> {
        let t0 = Time(r.u64("T_0")?);
        let interval_ns = r.u64("T_int")?;
        let disclosure_delay = r.u32("delay")?;
        let chain_len = r.u32("chain length")?;
        let rollover_lead = r.u32("rollover lead")?;
        let name_len = usize::from(r.u8("MAC name length")?);
        let mac = mac_from_wire(r.bytes(name_len, "MAC name")?)?;
        let tag_len = r.u8("tag length")?;
        let p = Self {
            t0,
            interval_ns,
            disclosure_delay,
            chain_len,
            mac,
            tag_len,
            rollover_lead,
        };
        p.validate()
            .map_err(|_| WireError::InvalidField("parameters"))?;
        Ok(p)
    }
}

/// The MAC of one interval, keyed with `F'(K_i)`.
pub(crate) struct IntervalMac {
    mac: Box<dyn Mac>,
    tag_len: usize,
}

impl IntervalMac {
    pub(crate) fn new(params: &Params, key: &ChainKey) -> Result<Self, MacError> {
        let mac_key = f_prime(key);
        let len = mac_key_len(params.mac.info().key).unwrap_or(KEY_LEN);
        Ok(Self {
            mac: params.mac.new_mac(&mac_key.as_bytes()[..len])?,
            tag_len: usize::from(params.tag_len),
        })
    }

    /// The truncated tag of `message`.
    pub(crate) fn tag(&self, message: &[u8]) -> Result<Vec<u8>, MacError> {
        let tag = self.mac.compute(&[], message)?;
        Ok(tag.as_bytes()[..self.tag_len.min(tag.len())].to_vec())
    }

    /// Constant-time check of a truncated tag.
    pub(crate) fn verify(&self, message: &[u8], tag: &[u8]) -> bool {
        match self.tag(message) {
            Ok(expected) => expected.len() == tag.len() && bool::from(expected.ct_eq(tag)),
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn example() -> Params {
        Params {
            t0: Time::from_secs(1_700_000_000),
            interval_ns: 100_000_000,
            disclosure_delay: 2,
            chain_len: 1000,
            mac: Algorithm::HmacSha256,
            tag_len: 16,
            rollover_lead: 6,
        }
    }

    #[test]
    fn limits() {
        assert_eq!(example().validate(), Ok(()));
        let bad = |f: fn(&mut Params)| {
            let mut p = example();
            f(&mut p);
            p.validate().is_err()
        };
        assert!(bad(|p| p.interval_ns = 999));
        assert!(bad(|p| p.interval_ns = MAX_INTERVAL_NS + 1));
        assert!(bad(|p| p.disclosure_delay = 0));
        assert!(bad(|p| p.disclosure_delay = 1000));
        assert!(bad(|p| p.chain_len = 1));
        assert!(bad(|p| p.rollover_lead = 0));
        assert!(bad(|p| p.rollover_lead = 1001));
        assert!(bad(|p| p.tag_len = 9));
        assert!(bad(|p| p.tag_len = 33));
        assert!(bad(|p| p.mac = Algorithm::SipHash24));
        assert!(bad(|p| p.mac = Algorithm::Md5Legacy));
        assert!(bad(|p| p.mac = Algorithm::Aes128Gmac));
    }

    #[test]
    fn mac_names() {
        for ok in [
            "hmac-sha256",
            "hmac-sha256-128",
            "aes128-cmac",
            "blake3-keyed",
            "hmac-sha1",
        ] {
            assert!(mac_by_name(ok).is_ok(), "{ok}");
        }
        for bad in ["md5-legacy", "poly1305-chacha20", "siphash24", "nope"] {
            assert!(mac_by_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_wire_takes_only_canonical_mac_names() {
        assert_eq!(mac_from_wire(b"hmac-sha256"), Ok(Algorithm::HmacSha256));
        for bad in [&b"hmAc-sha256"[..], b"HMAC-SHA256", b"siphash24", b"\xff"] {
            assert_eq!(mac_from_wire(bad), Err(WireError::InvalidField("MAC name")));
        }
        // Params::decode, as the receiver's and sender's state files use it.
        let mut encoded = Vec::new();
        example().encode(&mut encoded);
        assert_eq!(Params::decode(&mut Reader::new(&encoded)), Ok(example()));
        let at = encoded.windows(4).position(|w| w == b"hmac").expect("name");
        encoded[at] = b'H';
        assert!(Params::decode(&mut Reader::new(&encoded)).is_err());
    }

    #[test]
    fn interval_key_indices() {
        let p = example();
        assert_eq!((p.chain_of(0), p.key_index(0)), (0, 1));
        assert_eq!((p.chain_of(999), p.key_index(999)), (0, 1000));
        assert_eq!((p.chain_of(1000), p.key_index(1000)), (1, 1));
        assert_eq!(p.interval_of(1, 1), Some(1000));
        assert_eq!(p.interval_of(1, 0), None);
        assert_eq!(p.interval_of(u32::MAX, 1000), None);
        let last = u32::MAX;
        assert_eq!(
            p.interval_of(p.chain_of(last), p.key_index(last)),
            Some(last)
        );
        assert!(!p.carries_next_commitment(993));
        assert!(p.carries_next_commitment(994));
        assert!(p.carries_next_commitment(999));
        assert!(!p.carries_next_commitment(1000));
        assert_eq!(p.overhead(false), 1 + 4 + 32 + 16);
        assert_eq!(p.overhead(true), 1 + 4 + 32 + 32 + 16);
    }

    #[test]
    fn interval_mac_truncates_and_derives_short_keys() {
        let key = ChainKey::from_bytes([5; 32]);
        let mut p = example();
        let m = IntervalMac::new(&p, &key).expect("mac");
        let tag = m.tag(b"hello").expect("tag");
        assert_eq!(tag.len(), 16);
        assert!(m.verify(b"hello", &tag));
        assert!(!m.verify(b"hellO", &tag));
        assert!(!m.verify(b"hello", &tag[..15]));
        p.mac = Algorithm::Aes128Cmac;
        let cmac = IntervalMac::new(&p, &key).expect("16-byte key from F'");
        assert_eq!(cmac.tag(b"x").expect("tag").len(), 16);
    }
}
