//! AES-CMAC (RFC 4493 for AES-128, NIST SP 800-38B for AES-256), as RFC 8573 uses for NTP.
//!
//! With AES-NI the hand-written kernels of `crate::kernels::cmac_x86` run: one
//! packet at a time at the serial AES latency, and batches with many packets'
//! chains interleaved (VAES on ymm registers when present). Without AES-NI, or
//! when the [`Isa`] given forbids it, RustCrypto's `cmac` runs.

use core::fmt;

use aes::{Aes128, Aes256};
use cmac::{Cmac, KeyInit, Mac as _};

#[cfg(target_arch = "x86_64")]
use crate::kernels::cmac_x86::{CmacX86, cmac_blocks};
use crate::{Algorithm, Isa, Mac, MacError, MacInput, Tag, mac::check_nonce};

/// The implementation chosen for one key, once, when it is set up.
#[allow(
    clippy::large_enum_variant,
    reason = "one per key, already behind the `Box<dyn Mac>`; a second box would cost a load per packet"
)]
enum Engine {
    /// RustCrypto `cmac` (any CPU).
    Aes128(Cmac<Aes128>),
    Aes256(Cmac<Aes256>),
    /// AES-NI, and VAES for batches when present.
    #[cfg(target_arch = "x86_64")]
    X86(CmacX86),
}

/// AES-CMAC with expanded round keys and subkeys.
pub(crate) struct AesCmac {
    algorithm: Algorithm,
    engine: Engine,
}

impl AesCmac {
    /// `algorithm` is `Aes128Cmac` or `Aes256Cmac`; `isa` says which kernels may run.
    pub(crate) fn new(algorithm: Algorithm, key: &[u8], isa: Isa) -> Result<Self, MacError> {
        let bad_len = || MacError::KeyLength {
            algorithm: algorithm.name().to_owned(),
            got: key.len(),
            expected: algorithm.info().key,
        };
        let want = if algorithm == Algorithm::Aes128Cmac {
            16
        } else {
            32
        };
        if key.len() != want {
            return Err(bad_len());
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(kernel) = CmacX86::new(key, isa) {
            return Ok(Self {
                algorithm,
                engine: Engine::X86(kernel),
            });
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = isa;
        let engine = if want == 16 {
            Engine::Aes128(Cmac::new_from_slice(key).map_err(|_| bad_len())?)
        } else {
            Engine::Aes256(Cmac::new_from_slice(key).map_err(|_| bad_len())?)
        };
        Ok(Self { algorithm, engine })
    }

    /// The tag from RustCrypto `cmac`. Not inlined: its state copy would
    /// weigh on the frame of the fast path.
    #[inline(never)]
    fn portable_tag(&self, message: &[u8]) -> Tag {
        let tag = match &self.engine {
            Engine::Aes128(m) => m.clone().chain_update(message).finalize().into_bytes(),
            Engine::Aes256(m) => m.clone().chain_update(message).finalize().into_bytes(),
            #[cfg(target_arch = "x86_64")]
            Engine::X86(kernel) => kernel.tag(message).into(),
        };
        Tag::from_slice(&tag)
    }

    /// Which implementation runs: `portable`, `aesni` or `vaes`.
    fn engine_name(&self) -> &'static str {
        match &self.engine {
            Engine::Aes128(_) | Engine::Aes256(_) => "portable",
            #[cfg(target_arch = "x86_64")]
            Engine::X86(k) if k.uses_vaes() => "vaes",
            #[cfg(target_arch = "x86_64")]
            Engine::X86(_) => "aesni",
        }
    }
}

/// Batch of mixed block counts on the x86 kernels, in one pass and without
/// allocation: messages go into a few buckets by block count, a bucket runs
/// side by side as soon as it fills the kernel's lanes, and the partial
/// buckets run at the end (or when a fifth block count needs a bucket).
#[cfg(target_arch = "x86_64")]
fn tag_bucketed(kernel: &CmacX86, inputs: &[MacInput<'_>], tags: &mut [Tag]) {
    const BUCKETS: usize = 4;
    const CAPACITY: usize = 32;
    let width = kernel.lane_width().min(CAPACITY);
    let mut blocks = [0usize; BUCKETS];
    let mut fill = [0usize; BUCKETS];
    let mut members = [[0usize; CAPACITY]; BUCKETS];
    let mut flush = |members: &[usize]| {
        let done = kernel.tag_group(
            members.len(),
            |j| inputs[members[j]].message,
            |j, tag| tags[members[j]] = Tag::from_slice(&tag),
        );
        // A bucket holds one block count, so the kernel takes all of it;
        // should it not, the one-packet path finishes the job.
        if let Err(from) = done {
            for &i in &members[from..] {
                tags[i] = Tag::from_slice(&kernel.tag(inputs[i].message));
            }
        }
    };
    for (i, input) in inputs.iter().enumerate() {
        let n = cmac_blocks(input.message.len());
        let b = match (0..BUCKETS).find(|&b| fill[b] > 0 && blocks[b] == n) {
            Some(b) => b,
            None => {
                let b = (0..BUCKETS).max_by_key(|&b| fill[b]).unwrap_or(0);
                let b = (0..BUCKETS).find(|&b| fill[b] == 0).unwrap_or(b);
                if fill[b] > 0 {
                    flush(&members[b][..fill[b]]);
                    fill[b] = 0;
                }
                blocks[b] = n;
                b
            }
        };
        members[b][fill[b]] = i;
        fill[b] += 1;
        if fill[b] == width {
            flush(&members[b][..width]);
            fill[b] = 0;
        }
    }
    for b in 0..BUCKETS {
        flush(&members[b][..fill[b]]);
    }
}

impl Mac for AesCmac {
    fn name(&self) -> &str {
        self.algorithm.name()
    }
    fn nonce_len(&self) -> usize {
        0
    }
    fn tag_len(&self) -> usize {
        16
    }
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        if !nonce.is_empty() {
            check_nonce(self.name(), 0, nonce)?;
        }
        Ok(match &self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::X86(kernel) => Tag::from_slice(&kernel.tag(message)),
            _ => self.portable_tag(message),
        })
    }

    fn compute_many(&self, inputs: &[MacInput<'_>], tags: &mut [Tag]) -> Result<(), MacError> {
        if inputs.len() != tags.len() {
            return Err(MacError::BatchLength {
                inputs: inputs.len(),
                outputs: tags.len(),
            });
        }
        if inputs.iter().fold(0, |any, i| any | i.nonce.len()) != 0 {
            for input in inputs {
                check_nonce(self.name(), 0, input.nonce)?;
            }
        }
        match &self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::X86(kernel) => {
                // NTP batches are mostly of one packet size: run the batch as
                // one group, and bucket by block count only from the first
                // chunk that mixes them.
                let done = kernel.tag_group(
                    inputs.len(),
                    |i| inputs[i].message,
                    |i, tag| tags[i] = Tag::from_slice(&tag),
                );
                if let Err(from) = done {
                    tag_bucketed(kernel, &inputs[from..], &mut tags[from..]);
                }
            }
            _ => {
                for (input, tag) in inputs.iter().zip(tags.iter_mut()) {
                    *tag = self.portable_tag(input.message);
                }
            }
        }
        Ok(())
    }
}

impl fmt::Debug for AesCmac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesCmac")
            .field("algorithm", &self.algorithm)
            .field("engine", &self.engine_name())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64, for reproducible random keys and messages.
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

    fn reference(key: &[u8], msg: &[u8]) -> Tag {
        let tag = if key.len() == 16 {
            Cmac::<Aes128>::new_from_slice(key)
                .expect("key")
                .chain_update(msg)
                .finalize()
                .into_bytes()
        } else {
            Cmac::<Aes256>::new_from_slice(key)
                .expect("key")
                .chain_update(msg)
                .finalize()
                .into_bytes()
        };
        Tag::from_slice(&tag)
    }

    /// Every implementation this CPU can run, with its name; the portable one
    /// always.
    fn engines(algorithm: Algorithm, key: &[u8]) -> Vec<AesCmac> {
        let detected = Isa::detect();
        let mut out = vec![AesCmac::new(algorithm, key, Isa::PORTABLE).expect("key")];
        let aesni = AesCmac::new(
            algorithm,
            key,
            Isa {
                vaes: false,
                ..detected
            },
        )
        .expect("key");
        if aesni.engine_name() == "aesni" {
            out.push(aesni);
        } else {
            eprintln!("skipped the AES-NI kernels: not on this CPU");
        }
        let vaes = AesCmac::new(algorithm, key, detected).expect("key");
        if vaes.engine_name() == "vaes" {
            out.push(vaes);
        } else {
            eprintln!("skipped the VAES kernel: not on this CPU");
        }
        assert_eq!(out[0].engine_name(), "portable");
        out
    }

    fn algorithm_for(key: &[u8]) -> Algorithm {
        if key.len() == 16 {
            Algorithm::Aes128Cmac
        } else {
            Algorithm::Aes256Cmac
        }
    }

    // RFC 4493 section 4 (AES-128) and NIST SP 800-38B appendix D.3 (AES-256),
    // examples 1 to 4, through every implementation, one by one and batched.
    #[test]
    fn cmac_rfc4493_examples_every_engine() {
        let keys = [
            "2b7e151628aed2a6abf7158809cf4f3c",
            "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
        ];
        let msg = hex::decode(
            "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51\
             30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710",
        )
        .expect("hex");
        let tags = [
            [
                "bb1d6929e95937287fa37d129b756746",
                "070a16b46b4d4144f79bdd9dd04a287c",
                "dfa66747de9ae63030ca32611497c827",
                "51f0bebf7e3b9d92fc49741779363cfe",
            ],
            [
                "028962f61b7bf89efc6b551f4667d983",
                "28a7023f452e8f82bd4bf28d8c37c35c",
                "aaf3d8f1de5640c232f5b169b9c911e6",
                "e1992190549f6ed5696a2c056c315410",
            ],
        ];
        let lens = [0, 16, 40, 64];
        for (key, want) in keys.iter().zip(tags) {
            let key = hex::decode(key).expect("hex");
            for mac in engines(algorithm_for(&key), &key) {
                let inputs: Vec<MacInput<'_>> =
                    lens.iter().map(|&l| MacInput::message(&msg[..l])).collect();
                let mut batch = vec![Tag::EMPTY; inputs.len()];
                mac.compute_many(&inputs, &mut batch).expect("batch");
                for ((len, tag), got) in lens.iter().zip(want).zip(&batch) {
                    let one = mac.compute(&[], &msg[..*len]).expect("tag");
                    assert_eq!(hex::encode(one.as_bytes()), tag, "{}", mac.engine_name());
                    assert_eq!(hex::encode(got.as_bytes()), tag, "{}", mac.engine_name());
                }
            }
        }
    }

    #[test]
    fn one_packet_matches_reference_every_engine() {
        let mut rng = SplitMix(11);
        for key_len in [16, 32] {
            let key = rng.bytes(key_len);
            for mac in engines(algorithm_for(&key), &key) {
                for len in (0..=200).chain([1500, 2000]) {
                    let msg = rng.bytes(len);
                    assert_eq!(
                        mac.compute(&[], &msg).expect("tag"),
                        reference(&key, &msg),
                        "{} {len}",
                        mac.engine_name()
                    );
                }
            }
        }
    }

    /// Batches of every size up to 40 and of 100, with lengths mixed in one
    /// batch (all short, around the NTP sizes, or anything up to 2000 bytes)
    /// and of one length.
    #[test]
    fn batches_match_reference_every_engine() {
        let mut rng = SplitMix(12);
        for key_len in [16, 32] {
            let key = rng.bytes(key_len);
            let macs = engines(algorithm_for(&key), &key);
            for size in (1..=40).chain([100]) {
                for shape in 0..4 {
                    let owned: Vec<Vec<u8>> = (0..size)
                        .map(|_| {
                            let r = rng.next_u64() as usize;
                            let len = match shape {
                                0 => 48,
                                1 => r % 201,
                                2 => [48, 68, 64, 0, 16, 17, 120][r % 7],
                                _ => [0, 1, 15, 200, 1500, 2000][r % 6],
                            };
                            rng.bytes(len)
                        })
                        .collect();
                    let inputs: Vec<MacInput<'_>> =
                        owned.iter().map(|m| MacInput::message(m)).collect();
                    let want: Vec<Tag> = owned.iter().map(|m| reference(&key, m)).collect();
                    for mac in &macs {
                        let mut got = vec![Tag::EMPTY; size];
                        mac.compute_many(&inputs, &mut got).expect("batch");
                        assert_eq!(got, want, "{} size {size} shape {shape}", mac.engine_name());
                    }
                }
            }
        }
    }

    #[test]
    fn forced_portable_and_no_vaes_through_the_public_constructor() {
        let key = [0x2b; 16];
        let portable = Algorithm::Aes128Cmac
            .new_mac_with_isa(&key, Isa::PORTABLE)
            .expect("key");
        let no_vaes = Algorithm::Aes128Cmac
            .new_mac_with_isa(
                &key,
                Isa {
                    vaes: false,
                    ..Isa::detect()
                },
            )
            .expect("key");
        let msg = [0x5a; 68];
        let want = reference(&key, &msg);
        assert_eq!(portable.compute(&[], &msg), Ok(want));
        assert_eq!(no_vaes.compute(&[], &msg), Ok(want));
        assert!(!format!("{portable:?}").contains("2b2b"));
    }

    #[test]
    fn batch_rejects_nonces_and_bad_lengths() {
        let mac = AesCmac::new(Algorithm::Aes128Cmac, &[1; 16], Isa::detect()).expect("key");
        let inputs = [
            MacInput::message(b"a"),
            MacInput {
                nonce: b"n",
                message: b"b",
            },
        ];
        let mut tags = [Tag::EMPTY; 2];
        assert!(matches!(
            mac.compute_many(&inputs, &mut tags),
            Err(MacError::NonceNotAccepted { .. })
        ));
        assert!(matches!(
            mac.compute_many(&inputs[..1], &mut tags),
            Err(MacError::BatchLength { .. })
        ));
        assert!(matches!(
            AesCmac::new(Algorithm::Aes256Cmac, &[1; 16], Isa::detect()),
            Err(MacError::KeyLength { .. })
        ));
    }
}
