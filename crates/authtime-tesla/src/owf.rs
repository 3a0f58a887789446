//! The one-way functions of RFC 5776 section 3.1: `F(k) = HMAC-SHA-256(k, 0)` builds
//! the key chain, `F'(k) = HMAC-SHA-256(k, 1)` turns a chain key into a MAC key.
//!
//! Encoding (our reading of RFC 5776 / RFC 4082, which write `f_k(0)` and `f_k(1)`
//! for a PRF `f` keyed with `k`): the PRF is HMAC-SHA-256 (RFC 2104) keyed with
//! the 32-byte chain key, the message is the single octet `0x00` for `F` and
//! `0x01` for `F'`, and the 32-byte output is truncated to the key length, which
//! for 32-byte keys leaves it whole. libtesla encoded the 0 as four zero octets;
//! a peer built on that reading would not interoperate, which is why the
//! known-answer tests below pin our choice.

use core::fmt;

use hmac::{Hmac, KeyInit, Mac as _};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::codec::WireError;

/// Length of every chain key, in bytes.
pub const KEY_LEN: usize = 32;

/// One key of a TESLA key chain. Secret until its disclosure time: zeroized on
/// drop, hidden in `Debug`, compared in constant time.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct ChainKey([u8; KEY_LEN]);

impl ChainKey {
    /// Wraps 32 bytes (a random primary key `K_N`, or a disclosed key off the wire).
    #[must_use]
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        Self(bytes)
    }

    /// The key bytes. Callers must not log them before the key is disclosed.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
}

impl PartialEq for ChainKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl Eq for ChainKey {}

impl fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ChainKey(..)")
    }
}

fn hmac_sha256_byte(key: &[u8; KEY_LEN], message: u8) -> [u8; KEY_LEN] {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(&[message]);
    let digest = mac.finalize().into_bytes();
    let mut out = [0u8; KEY_LEN];
    out.copy_from_slice(&digest[..KEY_LEN]);
    out
}

/// `F(k) = HMAC-SHA-256(k, 0x00)`: the chain step, `K_i = F(K_{i+1})`.
#[must_use]
pub fn f(key: &ChainKey) -> ChainKey {
    ChainKey(hmac_sha256_byte(&key.0, 0x00))
}

/// `F'(k) = HMAC-SHA-256(k, 0x01)`: the MAC key `K'_i = F'(K_i)` of interval `i`.
#[must_use]
pub fn f_prime(key: &ChainKey) -> ChainKey {
    ChainKey(hmac_sha256_byte(&key.0, 0x01))
}

/// A one-way function a chain is built with. The traversal is generic over it
/// so that a counting function can measure the traversal's cost.
pub trait OneWayFunction {
    /// A chain element.
    type Value: ChainValue;
    /// One application.
    fn apply(&mut self, x: &Self::Value) -> Self::Value;
}

/// A chain element that can be written to and read from a state file.
pub trait ChainValue: Clone {
    /// Encoded length in bytes.
    const ENCODED_LEN: usize;
    /// Appends the encoding.
    fn encode(&self, out: &mut Vec<u8>);
    /// Decodes exactly [`ChainValue::ENCODED_LEN`] bytes.
    ///
    /// # Errors
    /// A slice of the wrong length.
    fn decode(bytes: &[u8]) -> Result<Self, WireError>;
}

impl ChainValue for ChainKey {
    const ENCODED_LEN: usize = KEY_LEN;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }
    fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let bytes: [u8; KEY_LEN] = bytes
            .try_into()
            .map_err(|_| WireError::InvalidField("chain key"))?;
        Ok(Self(bytes))
    }
}

impl ChainValue for u64 {
    const ENCODED_LEN: usize = 8;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_be_bytes());
    }
    fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let bytes: [u8; 8] = bytes
            .try_into()
            .map_err(|_| WireError::InvalidField("chain value"))?;
        Ok(u64::from_be_bytes(bytes))
    }
}

/// RFC 5776's `F`, as a [`OneWayFunction`] for the sender's chains.
#[derive(Debug, Clone, Copy, Default)]
pub struct TeslaF;

impl OneWayFunction for TeslaF {
    type Value = ChainKey;
    fn apply(&mut self, x: &ChainKey) -> ChainKey {
        f(x)
    }
}

/// A cheap stand-in for measurements: the value is the position in the chain
/// (`x + 1`), and every application is counted. Starting from seed 0, the chain
/// element at position `p` is `p`, which also lets tests check the output.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingFunction {
    /// Applications so far.
    pub evaluations: u64,
}

impl OneWayFunction for CountingFunction {
    type Value = u64;
    #[inline]
    fn apply(&mut self, x: &u64) -> u64 {
        self.evaluations += 1;
        x.wrapping_add(1)
    }
}

/// Counts the applications of any one-way function.
#[derive(Debug, Clone, Default)]
pub struct Counted<F> {
    /// The function counted.
    pub inner: F,
    /// Applications so far.
    pub evaluations: u64,
}

impl<F: OneWayFunction> OneWayFunction for Counted<F> {
    type Value = F::Value;
    fn apply(&mut self, x: &F::Value) -> F::Value {
        self.evaluations += 1;
        self.inner.apply(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(hex_str: &str) -> ChainKey {
        let bytes: [u8; 32] = hex::decode(hex_str)
            .expect("hex")
            .try_into()
            .expect("32 bytes");
        ChainKey::from_bytes(bytes)
    }

    // Known answers for our encoding of RFC 5776 section 3.1 (message = one octet
    // 0x00 / 0x01). Computed independently with
    // `printf '\x00' | openssl dgst -sha256 -mac HMAC -macopt hexkey:<key>`.
    #[test]
    fn f_and_f_prime_rfc5776_known_answers() {
        let k = key("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
        assert_eq!(hex::encode(f(&k).as_bytes()), F_OF_COUNTING_KEY);
        assert_eq!(hex::encode(f_prime(&k).as_bytes()), F_PRIME_OF_COUNTING_KEY);
        let zero = ChainKey::from_bytes([0; 32]);
        assert_eq!(hex::encode(f(&zero).as_bytes()), F_OF_ZERO_KEY);
        assert_eq!(hex::encode(f_prime(&zero).as_bytes()), F_PRIME_OF_ZERO_KEY);
    }

    const F_OF_COUNTING_KEY: &str =
        "e711546e3faad4c7c4aa756bc26cad6abea8241984a0f6b0839c70ca61c4ef88";
    const F_PRIME_OF_COUNTING_KEY: &str =
        "9b4c8120a4823a95f47cde17a244f4507244ee6e3957d1fab9fa29b44d3829b7";
    const F_OF_ZERO_KEY: &str = "6620b31f2924b8c01547745f41825d322336f83ebb13d723678789d554d8a3ef";
    const F_PRIME_OF_ZERO_KEY: &str =
        "3d7afb663124ecbf2c953f863d4fc8796eeb2d372b64aad58697ec5264649cdb";

    #[test]
    fn f_and_f_prime_differ_and_keys_hide_in_debug() {
        let k = ChainKey::from_bytes([7; 32]);
        assert_ne!(f(&k), f_prime(&k));
        assert_eq!(format!("{k:?}"), "ChainKey(..)");
    }

    #[test]
    fn counting_function_counts() {
        let mut c = Counted {
            inner: TeslaF,
            evaluations: 0,
        };
        let k = ChainKey::from_bytes([1; 32]);
        let k2 = c.apply(&k);
        assert_eq!(k2, f(&k));
        assert_eq!(c.evaluations, 1);
    }
}
