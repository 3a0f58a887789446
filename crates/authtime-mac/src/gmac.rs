//! AES-128-GMAC (RFC 4543): AES-GCM over an empty plaintext with the message as
//! additional authenticated data; the tag is GCM's tag.
//!
//! **Never reuse a nonce under one key.** Joux showed that two tags under one
//! nonce reveal the GHASH key H, after which every tag can be forged
//! (draft-aanchal4-ntp-mac section 5.1). [`crate::NonceSealer`] generates the
//! nonces itself so that reuse is impossible by construction.
//!
//! With AES-NI and PCLMULQDQ the hand-written kernels of
//! `crate::kernels::gmac_x86` run: one packet with E_K(J0) beside an
//! aggregated GHASH, and batches two packets per ymm register (VAES and
//! VPCLMULQDQ) when present. Without them, or when the [`Isa`] given forbids
//! them, the `aes-gcm` crate runs.

use core::fmt;

use aes_gcm::{Aes128Gcm, KeyInit, Nonce, aead::AeadInOut};

#[cfg(target_arch = "x86_64")]
use crate::kernels::gmac_x86::GmacX86;
use crate::{Algorithm, Isa, Mac, MacError, MacInput, Tag, mac::check_nonce};

/// Nonce length in bytes (a 96-bit IV, NIST SP 800-38D section 5.2.1.1).
const NONCE_LEN: usize = 12;

/// Longest message GCM takes as additional data, in bytes (the `aes-gcm`
/// crate's limit, kept so that both paths refuse the same inputs).
const MAX_MESSAGE: u64 = 1 << 36;

/// The implementation chosen for one key, once, when it is set up.
#[allow(
    clippy::large_enum_variant,
    reason = "one per key, already behind the `Box<dyn Mac>`; a second box would cost a load per packet"
)]
enum Engine {
    /// The `aes-gcm` crate (any CPU).
    Portable(Aes128Gcm),
    /// AES-NI and PCLMULQDQ, and VAES with VPCLMULQDQ for batches when present.
    #[cfg(target_arch = "x86_64")]
    X86(GmacX86),
}

/// AES-128-GMAC with an expanded key and precomputed powers of the GHASH key.
pub(crate) struct Aes128Gmac {
    engine: Engine,
}

impl Aes128Gmac {
    /// Sets up a 16-byte key; `isa` says which kernels may run.
    pub(crate) fn new(key: &[u8], isa: Isa) -> Result<Self, MacError> {
        let bad_len = || MacError::KeyLength {
            algorithm: Algorithm::Aes128Gmac.name().to_owned(),
            got: key.len(),
            expected: Algorithm::Aes128Gmac.info().key,
        };
        if key.len() != 16 {
            return Err(bad_len());
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(kernel) = GmacX86::new(key, isa) {
            return Ok(Self {
                engine: Engine::X86(kernel),
            });
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = isa;
        let cipher = Aes128Gcm::new_from_slice(key).map_err(|_| bad_len())?;
        Ok(Self {
            engine: Engine::Portable(cipher),
        })
    }

    /// The nonce as an array, after the usage checks of [`Mac::compute`].
    #[inline]
    fn checked<'a>(&self, nonce: &'a [u8], message: &[u8]) -> Result<&'a [u8; 12], MacError> {
        let Ok(nonce) = <&[u8; NONCE_LEN]>::try_from(nonce) else {
            return Err(check_nonce(self.name(), NONCE_LEN, nonce).err().unwrap_or(
                MacError::NonceLength {
                    algorithm: self.name().to_owned(),
                    got: nonce.len(),
                    expected: NONCE_LEN,
                },
            ));
        };
        if message.len() as u64 > MAX_MESSAGE {
            return Err(MacError::InvalidParameter(
                "message too long for GMAC".into(),
            ));
        }
        Ok(nonce)
    }

    /// The tag from the `aes-gcm` crate. Not inlined: it would weigh on the
    /// frame of the fast path.
    #[inline(never)]
    fn portable_tag(cipher: &Aes128Gcm, nonce: &[u8; 12], message: &[u8]) -> Result<Tag, MacError> {
        let tag = cipher
            .encrypt_inout_detached(&Nonce::from(*nonce), message, (&mut [][..]).into())
            .map_err(|_| MacError::InvalidParameter("message too long for GMAC".into()))?;
        Ok(Tag::from_slice(&tag))
    }

    /// Which implementation runs: `portable`, `aesni` or `vaes`.
    fn engine_name(&self) -> &'static str {
        match &self.engine {
            Engine::Portable(_) => "portable",
            #[cfg(target_arch = "x86_64")]
            Engine::X86(k) if k.uses_lanes() => "vaes",
            #[cfg(target_arch = "x86_64")]
            Engine::X86(_) => "aesni",
        }
    }
}

impl Mac for Aes128Gmac {
    fn name(&self) -> &str {
        Algorithm::Aes128Gmac.name()
    }
    fn nonce_len(&self) -> usize {
        NONCE_LEN
    }
    fn tag_len(&self) -> usize {
        16
    }
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        let nonce = self.checked(nonce, message)?;
        match &self.engine {
            Engine::Portable(cipher) => Self::portable_tag(cipher, nonce, message),
            #[cfg(target_arch = "x86_64")]
            Engine::X86(kernel) => Ok(Tag::from_slice(&kernel.tag(nonce, message))),
        }
    }

    fn compute_many(&self, inputs: &[MacInput<'_>], tags: &mut [Tag]) -> Result<(), MacError> {
        if inputs.len() != tags.len() {
            return Err(MacError::BatchLength {
                inputs: inputs.len(),
                outputs: tags.len(),
            });
        }
        static EXP: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
        let exp = *EXP.get_or_init(|| {
            std::env::var("GMAC_EXP")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        });
        if exp == 1 {
            return Ok(());
        }
        // One pass without branches to errors for the common case; the
        // errors themselves from the first input that has one.
        let valid = inputs.iter().fold(true, |ok, i| {
            ok & (i.nonce.len() == NONCE_LEN) & (i.message.len() as u64 <= MAX_MESSAGE)
        });
        if !valid {
            for input in inputs {
                self.checked(input.nonce, input.message)?;
            }
        }
        match &self.engine {
            Engine::Portable(cipher) => {
                for (input, tag) in inputs.iter().zip(tags.iter_mut()) {
                    let nonce = self.checked(input.nonce, input.message)?;
                    *tag = Self::portable_tag(cipher, nonce, input.message)?;
                }
            }
            #[cfg(target_arch = "x86_64")]
            Engine::X86(kernel) => {
                // The kernels write plain arrays, which become tags in a
                // simple loop: building each `Tag` inside them makes the
                // compiler copy it through the stack.
                const CHUNK: usize = 64;
                let mut raw = [[0u8; 16]; CHUNK];
                let zero = [0u8; NONCE_LEN];
                for (inputs, tags) in inputs.chunks(CHUNK).zip(tags.chunks_mut(CHUNK)) {
                    let raw = &mut raw[..inputs.len()];
                    // Checked above: every nonce has 12 bytes.
                    let nonce = |i: usize| <&[u8; NONCE_LEN]>::try_from(inputs[i].nonce).ok();
                    if exp != 2 {
                        kernel.tag_batch(|i| (nonce(i).unwrap_or(&zero), inputs[i].message), raw);
                    }
                    for (tag, raw) in tags.iter_mut().zip(raw.iter()) {
                        *tag = Tag::from_slice(raw);
                    }
                }
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Aes128Gmac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Aes128Gmac")
            .field("engine", &self.engine_name())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64, for reproducible random keys, nonces and messages.
    struct SplitMix(u64);

    impl SplitMix {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn bytes(&mut self, len: usize) -> Vec<u8> {
            (0..len).map(|_| self.next_u64() as u8).collect()
        }
    }

    /// The `aes-gcm` crate's tag, computed here directly.
    fn reference(key: &[u8], nonce: &[u8], msg: &[u8]) -> Tag {
        let cipher = Aes128Gcm::new_from_slice(key).expect("key");
        let nonce: [u8; 12] = nonce.try_into().expect("nonce");
        let tag = cipher
            .encrypt_inout_detached(&Nonce::from(nonce), msg, (&mut [][..]).into())
            .expect("tag");
        Tag::from_slice(&tag)
    }

    /// Every implementation this CPU can run; the portable one always.
    fn engines(key: &[u8]) -> Vec<Aes128Gmac> {
        let detected = Isa::detect();
        let mut out = vec![Aes128Gmac::new(key, Isa::PORTABLE).expect("key")];
        let no_lanes = Isa {
            vaes: false,
            ..detected
        };
        for (isa, name) in [(no_lanes, "aesni"), (detected, "vaes")] {
            let mac = Aes128Gmac::new(key, isa).expect("key");
            if mac.engine_name() == name {
                out.push(mac);
            } else {
                eprintln!("skipped the {name} kernels: not on this CPU");
            }
        }
        assert_eq!(out[0].engine_name(), "portable");
        out
    }

    #[test]
    fn gcm_spec_test_case_1_every_engine() {
        // McGrew-Viega, "The Galois/Counter Mode of Operation", appendix B,
        // test case 1: zero key, zero IV, no plaintext, no AAD.
        for mac in engines(&[0; 16]) {
            let tag = mac.compute(&[0; 12], &[]).expect("tag");
            assert_eq!(
                hex::encode(tag.as_bytes()),
                "58e2fccefa7e3061367f1d57a4e7455a",
                "{}",
                mac.engine_name()
            );
        }
    }

    #[test]
    fn one_packet_matches_aes_gcm_every_engine() {
        let mut rng = SplitMix(21);
        for _ in 0..2 {
            let key = rng.bytes(16);
            for mac in engines(&key) {
                for len in (0..=300).chain([1000, 1500, 2000, 4096]) {
                    let nonce = rng.bytes(12);
                    let msg = rng.bytes(len);
                    assert_eq!(
                        mac.compute(&nonce, &msg).expect("tag"),
                        reference(&key, &nonce, &msg),
                        "{} {len}",
                        mac.engine_name()
                    );
                }
            }
        }
    }

    /// Batches of every size up to 40 and of 100, of one length and of mixed
    /// lengths (short, around the NTP sizes, or anything up to 4096 bytes),
    /// against the one-packet results and the reference.
    #[test]
    fn batches_match_single_every_engine() {
        let mut rng = SplitMix(22);
        let key = rng.bytes(16);
        let macs = engines(&key);
        for size in (1..=40).chain([100]) {
            for shape in 0..5 {
                let owned: Vec<(Vec<u8>, Vec<u8>)> = (0..size)
                    .map(|_| {
                        let r = rng.next_u64() as usize;
                        let len = match shape {
                            0 => 48,
                            1 => r % 301,
                            2 => [48, 68, 64, 0, 16, 17, 120][r % 7],
                            3 => [0, 1, 15, 200, 1500, 4096][r % 6],
                            _ => 1500,
                        };
                        (rng.bytes(12), rng.bytes(len))
                    })
                    .collect();
                let inputs: Vec<MacInput<'_>> = owned
                    .iter()
                    .map(|(n, m)| MacInput {
                        nonce: n,
                        message: m,
                    })
                    .collect();
                let want: Vec<Tag> = owned.iter().map(|(n, m)| reference(&key, n, m)).collect();
                for mac in &macs {
                    let mut got = vec![Tag::EMPTY; size];
                    mac.compute_many(&inputs, &mut got).expect("batch");
                    assert_eq!(got, want, "{} size {size} shape {shape}", mac.engine_name());
                    for (input, tag) in inputs.iter().zip(&got) {
                        assert_eq!(*tag, mac.compute(input.nonce, input.message).expect("one"));
                    }
                }
            }
        }
    }

    #[test]
    fn forced_portable_through_the_public_constructor() {
        let key = [0x2b; 16];
        let portable = Algorithm::Aes128Gmac
            .new_mac_with_isa(&key, Isa::PORTABLE)
            .expect("key");
        assert!(format!("{portable:?}").contains("portable"));
        let fast = Algorithm::Aes128Gmac.new_mac(&key).expect("key");
        let nonce = [9u8; 12];
        for len in [0, 48, 68, 1500] {
            let msg = vec![0x42u8; len];
            assert_eq!(
                portable.compute(&nonce, &msg),
                fast.compute(&nonce, &msg),
                "{len}"
            );
        }
    }

    #[test]
    fn nonce_rules_and_hidden_key() {
        for mac in engines(&[0x11; 16]) {
            assert!(matches!(
                mac.compute(&[], b"x"),
                Err(MacError::NonceRequired { len: 12, .. })
            ));
            assert!(matches!(
                mac.compute(&[0; 16], b"x"),
                Err(MacError::NonceLength {
                    got: 16,
                    expected: 12,
                    ..
                })
            ));
            let inputs = [
                MacInput {
                    nonce: &[0; 12],
                    message: b"a",
                },
                MacInput::message(b"b"),
            ];
            let mut tags = [Tag::EMPTY; 2];
            assert!(matches!(
                mac.compute_many(&inputs, &mut tags),
                Err(MacError::NonceRequired { .. })
            ));
            let shown = format!("{mac:?}");
            assert!(!shown.contains("11") && !shown.contains("rk"), "{shown}");
        }
    }
}
