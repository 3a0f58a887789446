//! Partial MACs (seed 004): authenticate keyed, per-packet pseudo-random pieces of
//! a message instead of all of it.
//!
//! # Construction (`partial:<inner>:<rate>`, version 1)
//!
//! Parameters: an inner MAC from [`crate::Algorithm`], a sampling rate
//! `p` in (0, 1], piece size `w` = 8 bytes. Inputs: the key `K` (the inner MAC's
//! key), a nonce `N` (the inner MAC's 12-byte nonce if it takes one, else an
//! 8-byte sequence number), and the message `M` of `L` bytes.
//!
//! 1. Selection key: `Ks = BLAKE3-derive_key("authtime partial-mac v1 selection key", K)`.
//! 2. Pieces: `M` is cut into `n = ceil(L / w)` pieces `P_0 .. P_{n-1}`, the last
//!    one possibly shorter.
//! 3. Selection stream: `S = BLAKE3-keyed(Ks, N ‖ LE64(L))` in XOF mode;
//!    `r_i` is the little-endian u32 at bytes `4i .. 4i+4` of `S`.
//! 4. `P_i` is selected when `r_i < T`, with `T = round(p · 2^32)` clamped to
//!    `1 ..= 2^32` (so `p = 1` selects everything). The effective rate is `T / 2^32`.
//! 5. Tag: `inner(K, N_inner, BE64(L) ‖ N ‖ P_{i1} ‖ P_{i2} ‖ …)` over the selected
//!    pieces in order, where `N_inner` is `N` if the inner MAC takes a nonce and
//!    empty otherwise.
//!
//! The selection depends on the key and on the nonce, so someone without `K`
//! cannot tell which bytes of a packet are covered, and it changes from packet to
//! packet. `L` and `N` are always authenticated, so a change of length or
//! nonce is always detected (up to the inner MAC's forgery bound).
//!
//! # Detection probability
//!
//! An attacker who changes bytes lying in `m` distinct pieces (length unchanged)
//! escapes detection only when none of those pieces is selected:
//! `P(escape) = (1 - p)^m`, plus the inner tag's `2^-t` forgery chance. For `k`
//! changed bytes, `m >= ceil(k / w)` with equality when the attacker packs them
//! into whole pieces, so **detection >= 1 - (1 - p)^ceil(k/w)**, the bound
//! [`detection_probability`] returns. An attacker who changes one byte of a
//! 48-byte NTP header (the transmit timestamp) escapes with probability `1 - p`:
//! partial MACs do not suit protocols where one word is the whole point.
//!
//! Requirements on the caller: a nonce must not repeat under one key and the
//! receiver must reject repeated nonces. Otherwise an attacker can probe one
//! selection again and again and learn which pieces are left out.

use core::fmt;

use crate::{Algorithm, Mac, MacError, Tag, mac::check_nonce};

/// Piece size `w` of version 1, in bytes.
pub const PIECE_LEN: usize = 8;

const SELECTION_CONTEXT: &str = "authtime partial-mac v1 selection key";
const FULL: u64 = 1 << 32;

/// The parameters of a partial MAC, parsed from `partial:<inner>:<rate>`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartialSpec {
    /// The MAC over the selected pieces.
    pub inner: Algorithm,
    /// Sampling rate in (0, 1].
    pub rate: f64,
}

impl PartialSpec {
    /// Parses `partial:<inner>:<rate>`. Returns `Ok(None)` for names that are not
    /// partial-MAC names at all.
    ///
    /// # Errors
    /// [`MacError::InvalidParameter`] for a malformed name or a rate outside (0, 1],
    /// [`MacError::UnknownAlgorithm`] for an unknown inner algorithm.
    pub fn parse(name: &str) -> Result<Option<Self>, MacError> {
        let Some(rest) = name.strip_prefix("partial:") else {
            return if name == "partial" {
                Err(MacError::InvalidParameter(
                    "a partial MAC is named partial:<inner>:<rate>, e.g. partial:aes128-cmac:0.25"
                        .into(),
                ))
            } else {
                Ok(None)
            };
        };
        let (inner, rate) = rest.rsplit_once(':').ok_or_else(|| {
            MacError::InvalidParameter(format!(
                "`{name}`: a partial MAC is named partial:<inner>:<rate>, e.g. partial:aes128-cmac:0.25"
            ))
        })?;
        let inner = Algorithm::from_name(inner)?;
        let rate: f64 = rate.parse().map_err(|_| {
            MacError::InvalidParameter(format!("`{rate}` is not a sampling rate in (0, 1]"))
        })?;
        Self::new(inner, rate).map(Some)
    }

    /// Checks the rate.
    ///
    /// # Errors
    /// [`MacError::InvalidParameter`] for a rate outside (0, 1].
    pub fn new(inner: Algorithm, rate: f64) -> Result<Self, MacError> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(MacError::InvalidParameter(format!(
                "sampling rate {rate} is not in (0, 1]"
            )));
        }
        Ok(Self { inner, rate })
    }

    /// The selection threshold `T` of step 4.
    #[must_use]
    pub fn threshold(&self) -> u64 {
        // rate is in (0, 1], so the product is in (0, 2^32] and the cast is exact.
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "range checked"
        )]
        let t = (self.rate * FULL as f64).round() as u64;
        t.clamp(1, FULL)
    }

    /// The rate actually applied, `T / 2^32`.
    #[must_use]
    pub fn effective_rate(&self) -> f64 {
        self.threshold() as f64 / FULL as f64
    }

    /// Nonce length: the inner MAC's, or 8 bytes for a sequence number.
    #[must_use]
    pub fn nonce_len(&self) -> usize {
        match self.inner.info().nonce_len {
            0 => 8,
            n => n,
        }
    }
}

/// The lower bound on detecting a change of `k` bytes (length unchanged) at
/// sampling rate `rate`: `1 - (1 - rate)^ceil(k / 8)`. Zero for `k = 0`.
#[must_use]
pub fn detection_probability(rate: f64, changed_bytes: usize) -> f64 {
    let pieces = changed_bytes.div_ceil(PIECE_LEN);
    1.0 - (1.0 - rate).powi(i32::try_from(pieces).unwrap_or(i32::MAX))
}

/// A partial MAC: see the module documentation for the construction.
pub struct PartialMac {
    spec: PartialSpec,
    name: String,
    inner: Box<dyn Mac>,
    selection_key: zeroize::Zeroizing<[u8; 32]>,
}

impl PartialMac {
    /// Sets up the partial MAC with the inner MAC's key.
    ///
    /// # Errors
    /// The inner algorithm's key errors.
    pub fn new(spec: PartialSpec, key: &[u8]) -> Result<Self, MacError> {
        let inner = spec.inner.new_mac(key)?;
        let selection_key = zeroize::Zeroizing::new(blake3::derive_key(SELECTION_CONTEXT, key));
        let name = format!("partial:{}:{}", spec.inner.name(), spec.rate);
        Ok(Self {
            spec,
            name,
            inner,
            selection_key,
        })
    }

    /// The parameters.
    #[must_use]
    pub fn spec(&self) -> PartialSpec {
        self.spec
    }

    /// Indices of the pieces selected for a message of `len` bytes under `nonce`
    /// (step 3 and 4). The nonce length is not checked here.
    #[must_use]
    pub fn selected_pieces(&self, nonce: &[u8], len: usize) -> Vec<usize> {
        let mut out = Vec::new();
        self.for_each_selected(nonce, len, |i| out.push(i));
        out
    }

    fn for_each_selected(&self, nonce: &[u8], len: usize, mut f: impl FnMut(usize)) {
        let threshold = self.spec.threshold();
        let mut xof = blake3::Hasher::new_keyed(&self.selection_key)
            .update(nonce)
            .update(&(len as u64).to_le_bytes())
            .finalize_xof();
        let pieces = len.div_ceil(PIECE_LEN);
        let mut block = [0u8; 256];
        for start in (0..pieces).step_by(block.len() / 4) {
            xof.fill(&mut block);
            for (j, r) in block.chunks_exact(4).enumerate() {
                let i = start + j;
                if i >= pieces {
                    break;
                }
                let r = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
                if u64::from(r) < threshold {
                    f(i);
                }
            }
        }
    }
}

impl Mac for PartialMac {
    fn name(&self) -> &str {
        &self.name
    }
    fn nonce_len(&self) -> usize {
        self.spec.nonce_len()
    }
    fn tag_len(&self) -> usize {
        self.inner.tag_len()
    }
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        check_nonce(&self.name, self.nonce_len(), nonce)?;
        let expected = (message.len() as f64 * self.spec.effective_rate()) as usize + PIECE_LEN;
        let mut covered = Vec::with_capacity(8 + nonce.len() + expected);
        covered.extend_from_slice(&(message.len() as u64).to_be_bytes());
        covered.extend_from_slice(nonce);
        self.for_each_selected(nonce, message.len(), |i| {
            let start = i * PIECE_LEN;
            covered.extend_from_slice(&message[start..message.len().min(start + PIECE_LEN)]);
        });
        let inner_nonce = if self.inner.nonce_len() == 0 {
            &[][..]
        } else {
            nonce
        };
        self.inner.compute(inner_nonce, &covered)
    }
}

impl fmt::Debug for PartialMac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartialMac")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(name: &str) -> PartialMac {
        let spec = PartialSpec::parse(name).expect("parse").expect("partial");
        PartialMac::new(spec, &[5u8; 16]).expect("key")
    }

    #[test]
    fn names_parse_and_reject_bad_ones() {
        let spec = PartialSpec::parse("partial:aes128-cmac:0.25")
            .expect("ok")
            .expect("some");
        assert_eq!(spec.inner, Algorithm::Aes128Cmac);
        assert!((spec.rate - 0.25).abs() < f64::EPSILON);
        assert_eq!(PartialSpec::parse("aes128-cmac"), Ok(None));
        for bad in [
            "partial",
            "partial:aes128-cmac",
            "partial:aes128-cmac:0",
            "partial:aes128-cmac:1.5",
            "partial:aes128-cmac:nan",
            "partial:aes128-cmac:-0.1",
            "partial:aes128-cmac:x",
        ] {
            assert!(
                matches!(PartialSpec::parse(bad), Err(MacError::InvalidParameter(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            PartialSpec::parse("partial:md4:0.5"),
            Err(MacError::UnknownAlgorithm(_))
        ));
    }

    #[test]
    fn selection_depends_on_nonce_and_rate_is_respected() {
        let m = mac("partial:hmac-sha256:0.25");
        let a = m.selected_pieces(&1u64.to_be_bytes(), 8 * 4000);
        let b = m.selected_pieces(&2u64.to_be_bytes(), 8 * 4000);
        assert_ne!(a, b);
        // 4000 Bernoulli(0.25) trials: mean 1000, sd ~27; 6 sd bounds.
        assert!((840..=1160).contains(&a.len()), "{}", a.len());
        assert_eq!(
            mac("partial:hmac-sha256:1")
                .selected_pieces(&[0; 8], 81)
                .len(),
            11
        );
    }

    #[test]
    fn selected_change_is_detected_and_unselected_one_is_not() {
        let m = mac("partial:aes128-cmac:0.5");
        let nonce = 7u64.to_be_bytes();
        let msg = vec![0xaau8; 1500];
        let tag = m.compute(&nonce, &msg).expect("tag");
        let selected = m.selected_pieces(&nonce, msg.len());
        let unselected = (0..msg.len().div_ceil(8))
            .find(|i| !selected.contains(i))
            .expect("some");
        let mut changed = msg.clone();
        changed[selected[0] * 8] ^= 1;
        assert_eq!(
            m.verify(&nonce, &changed, tag.as_bytes()),
            Err(MacError::BadTag)
        );
        let mut changed = msg.clone();
        changed[unselected * 8 + 3] ^= 1;
        assert_eq!(
            m.verify(&nonce, &changed, tag.as_bytes()),
            Ok(()),
            "partial MACs miss unselected bytes"
        );
        assert_eq!(
            m.verify(&nonce, &msg[..1499], tag.as_bytes()),
            Err(MacError::BadTag),
            "length is covered"
        );
        assert_eq!(
            m.verify(&8u64.to_be_bytes(), &msg, tag.as_bytes()),
            Err(MacError::BadTag),
            "nonce is covered"
        );
    }

    #[test]
    fn rate_one_covers_every_byte() {
        let m = mac("partial:siphash24:1");
        let nonce = [3u8; 8];
        let msg: Vec<u8> = (0..=255).collect();
        let tag = m.compute(&nonce, &msg).expect("tag");
        for i in 0..msg.len() {
            let mut changed = msg.clone();
            changed[i] ^= 0x80;
            assert_eq!(
                m.verify(&nonce, &changed, tag.as_bytes()),
                Err(MacError::BadTag)
            );
        }
    }

    #[test]
    fn nonce_based_inner_takes_the_same_nonce() {
        let spec = PartialSpec::parse("partial:aes128-gmac:0.5")
            .expect("ok")
            .expect("some");
        assert_eq!(spec.nonce_len(), 12);
        let m = PartialMac::new(spec, &[1; 16]).expect("key");
        assert!(matches!(
            m.compute(&[0; 8], b"x"),
            Err(MacError::NonceLength { .. })
        ));
        assert!(m.compute(&[0; 12], b"x").is_ok());
    }

    #[test]
    fn detection_bound() {
        assert!(detection_probability(0.5, 0).abs() < 1e-12);
        assert!((detection_probability(0.5, 1) - 0.5).abs() < 1e-12);
        assert!((detection_probability(0.5, 9) - 0.75).abs() < 1e-12);
        assert!((detection_probability(1.0, 3) - 1.0).abs() < 1e-12);
    }
}
