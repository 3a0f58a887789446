//! NTS cookies in the format of RFC 8915 section 6.
//!
//! ```text
//! cookie = key_id (u32) | nonce (16 bytes) | AEAD(K, nonce, P, no AD)
//! P      = aead_id (u16) | 0x0000 | S2C key | C2S key
//! ```
//!
//! `K` is the master key named by `key_id` ([`crate::key_ring`]), sealed with
//! AES-SIV-CMAC-512. The two zero bytes after the AEAD id (checked on opening)
//! keep every cookie a multiple of four bytes, so an NTS Cookie extension
//! field needs no padding and a client returns exactly what it was given.
//!
//! Sizes: 104 bytes for AES-SIV-CMAC-256 sessions (4 + 16 + 2 + 2 + 32 + 32 +
//! 16), 72 for AES-128-GCM-SIV, 168 for AES-SIV-CMAC-512. Clients treat
//! cookies as opaque.

use core::fmt;

use crate::aead::{AeadAlgorithm, AeadError, AeadKey, MAX_KEY_LEN, TAG_LEN};
use crate::key_ring::{KeyRing, MasterKey};

/// Bytes of the key id that starts every cookie.
pub const KEY_ID_LEN: usize = 4;
/// Bytes of random nonce in a cookie.
pub const COOKIE_NONCE_LEN: usize = 16;
/// Longest cookie this crate issues (AES-SIV-CMAC-512 sessions).
pub const MAX_COOKIE_LEN: usize = cookie_len(AeadAlgorithm::AesSivCmac512);

pub(crate) const PLAINTEXT_HEADER_LEN: usize = 4;
pub(crate) const MAX_PLAINTEXT_LEN: usize = PLAINTEXT_HEADER_LEN + 2 * MAX_KEY_LEN;

/// Length of the cookies this crate issues for sessions using `algorithm`.
#[must_use]
pub const fn cookie_len(algorithm: AeadAlgorithm) -> usize {
    KEY_ID_LEN + COOKIE_NONCE_LEN + PLAINTEXT_HEADER_LEN + 2 * algorithm.key_len() + TAG_LEN
}

/// The keys of one NTS session, exported from the NTS-KE TLS session (RFC
/// 8915 section 5.1): C2S protects requests, S2C responses. Zeroized on drop,
/// never printed.
#[derive(Clone, Debug)]
pub struct SessionKeys {
    c2s: AeadKey,
    s2c: AeadKey,
}

impl SessionKeys {
    /// The session keys for `algorithm` from the exporter output.
    ///
    /// # Errors
    /// [`AeadError::KeyLength`] when a key does not have the algorithm's length.
    pub fn new(algorithm: AeadAlgorithm, c2s: &[u8], s2c: &[u8]) -> Result<Self, AeadError> {
        Ok(Self {
            c2s: AeadKey::new(algorithm, c2s)?,
            s2c: AeadKey::new(algorithm, s2c)?,
        })
    }

    /// The negotiated AEAD.
    #[must_use]
    pub fn algorithm(&self) -> AeadAlgorithm {
        self.c2s.algorithm()
    }

    /// The client-to-server key.
    #[must_use]
    pub fn c2s(&self) -> &AeadKey {
        &self.c2s
    }

    /// The server-to-client key.
    #[must_use]
    pub fn s2c(&self) -> &AeadKey {
        &self.s2c
    }
}

/// Why a cookie could not be sealed or opened.
///
/// Reaction on a server: every opening failure ([`CookieError::is_nak`]) is
/// an NTS NAK (RFC 8915 section 5.7); the sealing errors are local faults
/// (drop and count).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CookieError {
    /// Too short or too long to be one of our cookies.
    BadLength {
        /// Its length.
        len: usize,
    },
    /// Its key id is not in the ring or has expired (RFC 8915 section 6).
    UnknownKey {
        /// The key id.
        id: u32,
    },
    /// It does not decrypt under the key its id names: forged, corrupted, or
    /// sealed under a key that was replaced.
    Undecryptable {
        /// The key id.
        id: u32,
    },
    /// It decrypted but its content is not a valid session (unknown AEAD id,
    /// wrong key length, non-zero reserved bytes): a bug on our side.
    InvalidContent {
        /// The key id.
        id: u32,
    },
    /// No master key to seal under (empty ring).
    NoMasterKey,
    /// The output buffer is too small.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
}

impl CookieError {
    /// Whether the server answers this with an NTS NAK.
    #[must_use]
    pub const fn is_nak(&self) -> bool {
        matches!(
            self,
            Self::BadLength { .. }
                | Self::UnknownKey { .. }
                | Self::Undecryptable { .. }
                | Self::InvalidContent { .. }
        )
    }

    /// Short stable name for counters.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::BadLength { .. } => "cookie_bad_length",
            Self::UnknownKey { .. } => "cookie_unknown_key",
            Self::Undecryptable { .. } => "cookie_undecryptable",
            Self::InvalidContent { .. } => "cookie_invalid_content",
            Self::NoMasterKey => "cookie_no_master_key",
            Self::BufferTooSmall { .. } => "cookie_buffer_too_small",
        }
    }
}

impl fmt::Display for CookieError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl core::error::Error for CookieError {}

/// Seals `keys` into a cookie under `master`, with a nonce from `rng`, and
/// returns its length ([`cookie_len`] of the session's algorithm).
///
/// # Errors
/// [`CookieError::BufferTooSmall`].
pub fn seal_cookie(
    master: &MasterKey,
    keys: &SessionKeys,
    rng: &mut impl FnMut(&mut [u8]),
    out: &mut [u8],
) -> Result<usize, CookieError> {
    let algorithm = keys.algorithm();
    let needed = cookie_len(algorithm);
    let available = out.len();
    let out = out
        .get_mut(..needed)
        .ok_or(CookieError::BufferTooSmall { needed, available })?;
    let (head, body) = out.split_at_mut(KEY_ID_LEN + COOKIE_NONCE_LEN);
    let (id, nonce) = head.split_at_mut(KEY_ID_LEN);
    id.copy_from_slice(&master.id().to_be_bytes());
    rng(nonce);
    // P goes straight into the output and is encrypted in place.
    let s2c = keys.s2c.secret_bytes();
    let c2s = keys.c2s.secret_bytes();
    let mut w = 0;
    for part in [&algorithm.id().to_be_bytes()[..], &[0, 0], s2c, c2s] {
        if let Some(dst) = body.get_mut(w..w + part.len()) {
            dst.copy_from_slice(part);
        }
        w += part.len();
    }
    master
        .key()
        .seal_in_place(nonce, &[], body, w)
        .map_err(|_| CookieError::BufferTooSmall { needed, available })?;
    Ok(needed)
}

/// Opens a cookie with the ring's keys valid at `now_unix_secs`.
///
/// # Errors
/// [`CookieError::BadLength`], [`CookieError::UnknownKey`],
/// [`CookieError::Undecryptable`], [`CookieError::InvalidContent`]: all NTS
/// NAKs.
pub fn open_cookie(
    ring: &KeyRing,
    now_unix_secs: u64,
    cookie: &[u8],
) -> Result<SessionKeys, CookieError> {
    let len = cookie.len();
    let min = KEY_ID_LEN + COOKIE_NONCE_LEN + TAG_LEN;
    if !(min..=MAX_COOKIE_LEN).contains(&len) {
        return Err(CookieError::BadLength { len });
    }
    let (id, rest) = cookie.split_at(KEY_ID_LEN);
    let (nonce, ciphertext) = rest.split_at(COOKIE_NONCE_LEN);
    let id = u32::from_be_bytes(id.try_into().map_err(|_| CookieError::BadLength { len })?);
    let master = ring
        .opening_key(id, now_unix_secs)
        .ok_or(CookieError::UnknownKey { id })?;
    let mut plaintext = [0u8; MAX_PLAINTEXT_LEN + TAG_LEN];
    let result = master
        .key()
        .open(nonce, &[], ciphertext, &mut plaintext)
        .map_err(|_| CookieError::Undecryptable { id })
        .and_then(|n| parse_plaintext(plaintext.get(..n).unwrap_or_default(), id));
    authtime_mac::wipe(&mut plaintext);
    result
}

fn parse_plaintext(p: &[u8], id: u32) -> Result<SessionKeys, CookieError> {
    let invalid = CookieError::InvalidContent { id };
    let [a, b, 0, 0, keys @ ..] = p else {
        return Err(invalid);
    };
    let algorithm = AeadAlgorithm::from_id(u16::from_be_bytes([*a, *b])).ok_or(invalid)?;
    if keys.len() != 2 * algorithm.key_len() {
        return Err(invalid);
    }
    let (s2c, c2s) = keys.split_at(algorithm.key_len());
    SessionKeys::new(algorithm, c2s, s2c).map_err(|_| invalid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_ring::RotationPolicy;

    const DAY: u64 = 86_400;

    pub(crate) fn counter_rng(seed: u8) -> impl FnMut(&mut [u8]) {
        let mut state = seed;
        move |b: &mut [u8]| {
            for x in b {
                state = state.wrapping_mul(13).wrapping_add(17);
                *x = state;
            }
        }
    }

    fn session(alg: AeadAlgorithm) -> SessionKeys {
        let k = alg.key_len();
        SessionKeys::new(alg, &vec![0xc2; k], &vec![0x5c; k]).expect("keys")
    }

    #[test]
    fn sizes_are_stated() {
        assert_eq!(cookie_len(AeadAlgorithm::AesSivCmac256), 104);
        assert_eq!(cookie_len(AeadAlgorithm::Aes128GcmSiv), 72);
        assert_eq!(cookie_len(AeadAlgorithm::AesSivCmac512), 168);
        for alg in AeadAlgorithm::ALL {
            assert_eq!(cookie_len(alg) % 4, 0);
        }
    }

    #[test]
    fn seal_open_round_trip_and_failures() {
        let mut rng = counter_rng(3);
        let now = 500 * DAY;
        let ring = KeyRing::new(RotationPolicy::default())
            .plan(now, &mut rng)
            .expect("ring");
        let master = ring.sealing_key(now).expect("key");
        for alg in AeadAlgorithm::ALL {
            let keys = session(alg);
            let mut cookie = [0u8; MAX_COOKIE_LEN];
            let n = seal_cookie(master, &keys, &mut rng, &mut cookie).expect("seal");
            assert_eq!(n, cookie_len(alg));
            let cookie = &cookie[..n];
            assert_eq!(&cookie[..4], &500u32.to_be_bytes());
            let back = open_cookie(&ring, now, cookie).expect("open");
            assert_eq!(back.algorithm(), alg);
            assert_eq!(back.c2s().secret_bytes(), keys.c2s().secret_bytes());
            assert_eq!(back.s2c().secret_bytes(), keys.s2c().secret_bytes());

            for i in 4..n {
                let mut bad = cookie.to_vec();
                bad[i] ^= 1;
                assert_eq!(
                    open_cookie(&ring, now, &bad).map(|_| ()),
                    Err(CookieError::Undecryptable { id: 500 })
                );
            }
            let mut unknown = cookie.to_vec();
            unknown[..4].copy_from_slice(&7u32.to_be_bytes());
            assert_eq!(
                open_cookie(&ring, now, &unknown).map(|_| ()),
                Err(CookieError::UnknownKey { id: 7 })
            );
            // Eight days later the key is past the 7 old keys kept.
            assert_eq!(
                open_cookie(&ring, now + 8 * DAY, cookie).map(|_| ()),
                Err(CookieError::UnknownKey { id: 500 })
            );
            assert!(open_cookie(&ring, now + 7 * DAY, cookie).is_ok());
            assert!(matches!(
                open_cookie(&ring, now, &cookie[..n - 1]),
                Err(e) if e.is_nak()
            ));
        }
        let mut small = [0u8; 50];
        assert!(matches!(
            seal_cookie(
                master,
                &session(AeadAlgorithm::AesSivCmac256),
                &mut rng,
                &mut small
            ),
            Err(CookieError::BufferTooSmall { .. })
        ));
        assert!(matches!(
            open_cookie(&ring, now, &[]),
            Err(CookieError::BadLength { len: 0 })
        ));
    }
}
