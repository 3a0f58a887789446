//! HMAC (RFC 2104) over MD5, SHA-1, SHA-224 and SHA-256, full or truncated to 16 bytes.
//!
//! The keyed state (inner and outer padded-key compressions) is computed once at
//! setup, so a 48-byte packet costs two compressions. With the SHA extensions
//! the SHA-1 and SHA-2 variants run on the kernels of
//! [`crate::kernels::sha_x86`] (one packet, or up to four side by side in
//! [`Mac::compute_many`]); otherwise each message clones a RustCrypto `Hmac`,
//! except that batches of HMAC-SHA224/256 run 16 packets side by side in
//! AVX-512 registers where the CPU has AVX-512 ([`crate::kernels::sha256_wide`]).

use core::fmt;

use hmac::{Hmac, KeyInit, Mac as _};
use sha1::Sha1;
use sha2::{Sha224, Sha256};

use crate::kernels::md5_lanes::HmacMd5;
use crate::kernels::sha_x86::{HmacSha1Ni, HmacSha256Ni, Sha2Variant, ShaNi, tag_of};
use crate::kernels::sha256_wide::{Avx512, HmacSha256X16};
use crate::{Algorithm, Isa, Mac, MacError, MacInput, Tag, mac::check_nonce};

/// The keyed state of one HMAC, by hash and kernel. The SHA-NI states zeroize
/// themselves on drop.
#[derive(Clone)]
enum Keyed {
    Md5(HmacMd5),
    Sha1(Hmac<Sha1>),
    Sha224(Hmac<Sha224>),
    Sha256(Hmac<Sha256>),
    Sha1Ni(HmacSha1Ni),
    /// SHA-224 or SHA-256.
    Sha2Ni(HmacSha256Ni),
}

/// HMAC with its key schedule precomputed.
pub(crate) struct HmacMac {
    algorithm: Algorithm,
    keyed: Keyed,
    /// The batch kernel of HMAC-SHA224/256 without SHA-NI, with AVX-512.
    wide: Option<HmacSha256X16>,
}

// HMAC accepts keys of any length (RFC 2104 section 2), so `new_from_slice` cannot fail.
fn keyed<M: KeyInit>(key: &[u8]) -> M {
    match M::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC accepts every key length"),
    }
}

impl HmacMac {
    /// `algorithm` is one of the HMAC variants.
    pub(crate) fn new(algorithm: Algorithm, key: &[u8], isa: Isa) -> Self {
        let ni = ShaNi::new(isa);
        let keyed = match (algorithm, ni) {
            (Algorithm::HmacMd5, _) => Keyed::Md5(HmacMd5::new(key, isa)),
            (Algorithm::HmacSha1, Some(ni)) => Keyed::Sha1Ni(HmacSha1Ni::new(ni, key)),
            (Algorithm::HmacSha1, None) => Keyed::Sha1(keyed(key)),
            (Algorithm::HmacSha224 | Algorithm::HmacSha224_128, Some(ni)) => {
                Keyed::Sha2Ni(HmacSha256Ni::new(ni, Sha2Variant::Sha224, key))
            }
            (Algorithm::HmacSha224 | Algorithm::HmacSha224_128, None) => Keyed::Sha224(keyed(key)),
            (_, Some(ni)) => Keyed::Sha2Ni(HmacSha256Ni::new(ni, Sha2Variant::Sha256, key)),
            (_, None) => Keyed::Sha256(keyed(key)),
        };
        let variant = match &keyed {
            Keyed::Sha224(_) => Some(Sha2Variant::Sha224),
            Keyed::Sha256(_) => Some(Sha2Variant::Sha256),
            _ => None,
        };
        let wide = variant
            .zip(Avx512::new(isa))
            .map(|(variant, avx)| HmacSha256X16::new(avx, variant, key));
        Self {
            algorithm,
            keyed,
            wide,
        }
    }
}

impl Mac for HmacMac {
    fn name(&self) -> &str {
        self.algorithm.name()
    }
    fn nonce_len(&self) -> usize {
        0
    }
    fn tag_len(&self) -> usize {
        self.algorithm.info().tag_len
    }
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        check_nonce(self.name(), 0, nonce)?;
        // RFC 2104 section 5: a truncated HMAC keeps the leftmost bytes.
        let len = self.tag_len();
        Ok(match &self.keyed {
            Keyed::Md5(m) => m.tag(message),
            Keyed::Sha1(m) => {
                Tag::from_slice(&m.clone().chain_update(message).finalize().into_bytes()[..len])
            }
            Keyed::Sha224(m) => {
                Tag::from_slice(&m.clone().chain_update(message).finalize().into_bytes()[..len])
            }
            Keyed::Sha256(m) => {
                Tag::from_slice(&m.clone().chain_update(message).finalize().into_bytes()[..len])
            }
            Keyed::Sha1Ni(k) => tag_of(&k.mac(message), len),
            Keyed::Sha2Ni(k) => tag_of(&k.mac(message), len),
        })
    }

    fn compute_many(&self, inputs: &[MacInput<'_>], tags: &mut [Tag]) -> Result<(), MacError> {
        if inputs.len() != tags.len() {
            return Err(MacError::BatchLength {
                inputs: inputs.len(),
                outputs: tags.len(),
            });
        }
        for input in inputs {
            check_nonce(self.name(), 0, input.nonce)?;
        }
        match &self.keyed {
            Keyed::Sha1Ni(k) => k.mac_many(inputs, tags, self.tag_len()),
            Keyed::Sha2Ni(k) => k.mac_many(inputs, tags, self.tag_len()),
            Keyed::Md5(m) => m.compute_many(self.name(), inputs, tags)?,
            Keyed::Sha224(_) | Keyed::Sha256(_) if self.wide.is_some() => {
                if let Some(wide) = &self.wide {
                    wide.mac_many(inputs, tags, self.tag_len(), |message| {
                        self.compute(&[], message).unwrap_or(Tag::EMPTY)
                    });
                }
            }
            Keyed::Sha1(_) | Keyed::Sha224(_) | Keyed::Sha256(_) => {
                for (input, tag) in inputs.iter().zip(tags.iter_mut()) {
                    *tag = self.compute(input.nonce, input.message)?;
                }
            }
        }
        Ok(())
    }
}

impl fmt::Debug for HmacMac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacMac")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::sha_x86::tests::{SplitMix, batch_sizes, message_lengths, sha_ni_or_skip};

    /// The HMACs this file runs on SHA-NI.
    const SHA_HMACS: [Algorithm; 5] = [
        Algorithm::HmacSha1,
        Algorithm::HmacSha224,
        Algorithm::HmacSha256,
        Algorithm::HmacSha224_128,
        Algorithm::HmacSha256_128,
    ];

    /// RustCrypto's `hmac`, truncated like the algorithm.
    fn reference(algorithm: Algorithm, key: &[u8], message: &[u8]) -> Vec<u8> {
        fn full<M: hmac::Mac + KeyInit>(key: &[u8], message: &[u8]) -> Vec<u8> {
            keyed::<M>(key)
                .chain_update(message)
                .finalize()
                .into_bytes()
                .to_vec()
        }
        let mut tag = match algorithm {
            Algorithm::HmacSha1 => full::<Hmac<Sha1>>(key, message),
            Algorithm::HmacSha224 | Algorithm::HmacSha224_128 => full::<Hmac<Sha224>>(key, message),
            _ => full::<Hmac<Sha256>>(key, message),
        };
        tag.truncate(algorithm.info().tag_len);
        tag
    }

    /// Key lengths around the block size and the hash-first rule, then random ones.
    fn keys(rng: &mut SplitMix) -> Vec<Vec<u8>> {
        let mut lens = vec![1, 20, 32, 55, 63, 64, 65, 100, 128, 129, 200];
        lens.extend((0..4).map(|_| 1 + rng.below(200)));
        lens.into_iter().map(|len| rng.bytes(len)).collect()
    }

    /// Messages for a batch of `size`: one length for all on even sizes, every
    /// length mixed on odd ones (so groups of 1 to 4 lanes of many classes).
    fn batch(rng: &mut SplitMix, size: usize) -> Vec<Vec<u8>> {
        let lengths: Vec<usize> = message_lengths().collect();
        let uniform = lengths[rng.below(lengths.len())];
        (0..size)
            .map(|_| {
                let len = if size.is_multiple_of(2) {
                    uniform
                } else {
                    lengths[rng.below(lengths.len())]
                };
                rng.bytes(len)
            })
            .collect()
    }

    fn check_batch(mac: &HmacMac, key: &[u8], msgs: &[Vec<u8>]) {
        let inputs: Vec<MacInput<'_>> = msgs.iter().map(|m| MacInput::message(m)).collect();
        let mut tags = vec![Tag::EMPTY; msgs.len()];
        mac.compute_many(&inputs, &mut tags).expect("batch");
        for (msg, tag) in msgs.iter().zip(&tags) {
            assert_eq!(
                tag.as_bytes(),
                reference(mac.algorithm, key, msg).as_slice(),
                "{} key {} batch {} len {}",
                mac.algorithm,
                key.len(),
                msgs.len(),
                msg.len()
            );
        }
    }

    fn check_one_packet(mac: &HmacMac, key: &[u8], rng: &mut SplitMix) {
        for len in message_lengths() {
            let msg = rng.bytes(len);
            assert_eq!(
                mac.compute(&[], &msg).expect("tag").as_bytes(),
                reference(mac.algorithm, key, &msg).as_slice(),
                "{} key {} len {len}",
                mac.algorithm,
                key.len()
            );
        }
    }

    #[test]
    fn sha_ni_one_packet_matches_hmac_crate() {
        if sha_ni_or_skip("sha_ni_one_packet_matches_hmac_crate").is_none() {
            return;
        }
        let mut rng = SplitMix(1);
        for algorithm in SHA_HMACS {
            for key in keys(&mut rng) {
                let mac = HmacMac::new(algorithm, &key, Isa::detect());
                assert!(matches!(mac.keyed, Keyed::Sha1Ni(_) | Keyed::Sha2Ni(_)));
                check_one_packet(&mac, &key, &mut rng);
            }
        }
    }

    #[test]
    fn sha_ni_lanes_match_hmac_crate() {
        if sha_ni_or_skip("sha_ni_lanes_match_hmac_crate").is_none() {
            return;
        }
        let mut rng = SplitMix(2);
        for algorithm in SHA_HMACS {
            let keys = keys(&mut rng);
            for (i, size) in batch_sizes().enumerate() {
                let key = &keys[i % keys.len()];
                let mac = HmacMac::new(algorithm, key, Isa::detect());
                check_batch(&mac, key, &batch(&mut rng, size));
            }
            // Every length, once in a mixed batch and then four at a time so that
            // each fills the lanes of one group.
            let mac = HmacMac::new(algorithm, &keys[0], Isa::detect());
            let every: Vec<Vec<u8>> = message_lengths().map(|len| rng.bytes(len)).collect();
            check_batch(&mac, &keys[0], &every);
            let fours: Vec<Vec<u8>> = message_lengths()
                .flat_map(|len| (0..4).map(move |_| len))
                .map(|len| rng.bytes(len))
                .collect();
            check_batch(&mac, &keys[0], &fours);
        }
    }

    #[test]
    fn portable_matches_hmac_crate() {
        let mut rng = SplitMix(3);
        for algorithm in SHA_HMACS {
            for key in keys(&mut rng).into_iter().take(6) {
                let mac = HmacMac::new(algorithm, &key, Isa::PORTABLE);
                assert!(!matches!(mac.keyed, Keyed::Sha1Ni(_) | Keyed::Sha2Ni(_)));
                check_one_packet(&mac, &key, &mut rng);
                for size in [1, 7, 40] {
                    check_batch(&mac, &key, &batch(&mut rng, size));
                }
            }
        }
    }

    /// Message lengths of a random batch: mostly one length (as a server's
    /// batch), sometimes mixed, from the block boundaries of SHA-256 padding
    /// and random sizes up to 1500.
    fn random_batch(rng: &mut SplitMix, size: usize) -> Vec<Vec<u8>> {
        const EDGES: [usize; 12] = [0, 1, 48, 55, 56, 63, 64, 68, 119, 120, 228, 1024];
        let pick = |rng: &mut SplitMix| {
            if rng.below(2) == 0 {
                EDGES[rng.below(EDGES.len())]
            } else {
                rng.below(1501)
            }
        };
        let uniform = rng.below(3) != 0;
        let first = pick(rng);
        (0..size)
            .map(|_| {
                let len = if uniform { first } else { pick(rng) };
                rng.bytes(len)
            })
            .collect()
    }

    /// HMAC-SHA224/256 batches of 1 to 64 random packets under random keys
    /// (some longer than a block) through the kernels `isa` selects, against
    /// the one-packet path and the `hmac` crate.
    fn sha2_batches_match(isa: Isa, seed: u64) {
        let mut rng = SplitMix(seed);
        for algorithm in &SHA_HMACS[1..] {
            for size in 1..=64 {
                let key_len = [1, 32, 64, 65, 100, 200][rng.below(6)] + rng.below(3);
                let key = rng.bytes(key_len);
                let mac = HmacMac::new(*algorithm, &key, isa);
                let msgs = random_batch(&mut rng, size);
                check_batch(&mac, &key, &msgs);
                for msg in &msgs {
                    assert_eq!(
                        mac.compute(&[], msg).expect("tag").as_bytes(),
                        reference(*algorithm, &key, msg).as_slice()
                    );
                }
            }
        }
    }

    #[test]
    fn avx512_lanes_match_hmac_crate() {
        let isa = Isa {
            sha: false,
            ..Isa::detect()
        };
        if Avx512::new(isa).is_none() {
            eprintln!("avx512_lanes_match_hmac_crate: skipped, this CPU has no AVX-512");
            return;
        }
        assert!(
            HmacMac::new(Algorithm::HmacSha256, b"k", isa)
                .wide
                .is_some()
        );
        sha2_batches_match(isa, 4);
        // Every length 0..=200 and beyond, sixteen at a time so that each
        // fills the lanes of one call, and all mixed in one batch.
        let mut rng = SplitMix(5);
        for algorithm in &SHA_HMACS[1..] {
            let key_len = 1 + rng.below(150);
            let key = rng.bytes(key_len);
            let mac = HmacMac::new(*algorithm, &key, isa);
            let sixteens: Vec<Vec<u8>> = message_lengths()
                .flat_map(|len| (0..16).map(move |_| len))
                .map(|len| rng.bytes(len))
                .collect();
            check_batch(&mac, &key, &sixteens);
            let every: Vec<Vec<u8>> = message_lengths().map(|len| rng.bytes(len)).collect();
            check_batch(&mac, &key, &every);
        }
    }

    #[test]
    fn random_batches_match_on_every_path() {
        sha2_batches_match(Isa::PORTABLE, 6);
        if sha_ni_or_skip("random_batches_match_on_every_path (SHA-NI part)").is_some() {
            sha2_batches_match(Isa::detect(), 7);
        }
    }

    // RFC 4231 section 4.3 (test case 2) and RFC 2202 section 3 (test case 2, SHA-1):
    // key "Jefe", data "what do ya want for nothing?", through every path.
    #[test]
    fn rfc4231_case_2_every_path() {
        let want = [
            (
                Algorithm::HmacSha1,
                "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
            ),
            (
                Algorithm::HmacSha224,
                "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44",
            ),
            (
                Algorithm::HmacSha256,
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                Algorithm::HmacSha224_128,
                "a30e01098bc6dbbf45690f3a7e9e6d0f",
            ),
            (
                Algorithm::HmacSha256_128,
                "5bdcc146bf60754e6a042426089575c7",
            ),
        ];
        let data = b"what do ya want for nothing?";
        let mut isas = vec![Isa::PORTABLE];
        if sha_ni_or_skip("rfc4231_case_2_every_path (SHA-NI part)").is_some() {
            isas.push(Isa::detect());
        }
        let no_sha = Isa {
            sha: false,
            ..Isa::detect()
        };
        if Avx512::new(no_sha).is_some() {
            isas.push(no_sha);
        }
        for isa in isas {
            for (algorithm, tag) in want {
                let mac = algorithm.new_mac_with_isa(b"Jefe", isa).expect("key");
                assert_eq!(
                    hex::encode(mac.compute(&[], data).expect("tag").as_bytes()),
                    tag
                );
                for size in [1, 3, 4, 9, 16, 17, 33] {
                    let inputs = vec![MacInput::message(data); size];
                    let mut tags = vec![Tag::EMPTY; size];
                    mac.compute_many(&inputs, &mut tags).expect("batch");
                    assert!(
                        tags.iter().all(|t| hex::encode(t.as_bytes()) == tag),
                        "{algorithm}"
                    );
                }
            }
        }
    }

    // FIPS 180-2 "abc" as the message of an HMAC whose key is one zero byte is no
    // published vector, so "abc" runs through the hashes themselves: SHA-1 in
    // `sha_x86`'s tests (legacy digest) and SHA-224/256 on the kernels there. Here
    // the HMAC paths agree with each other and with the crate on it.
    #[test]
    fn abc_agrees_on_every_path() {
        let mut isas = vec![Isa::PORTABLE];
        if sha_ni_or_skip("abc_agrees_on_every_path (SHA-NI part)").is_some() {
            isas.push(Isa::detect());
        }
        for isa in isas {
            for algorithm in SHA_HMACS {
                let mac = HmacMac::new(algorithm, b"key", isa);
                check_batch(&mac, b"key", &vec![b"abc".to_vec(); 5]);
                assert_eq!(
                    mac.compute(&[], b"abc").expect("tag").as_bytes(),
                    reference(algorithm, b"key", b"abc")
                );
            }
        }
    }

    #[test]
    fn batch_checks_nonces_and_debug_hides_state() {
        let mac = HmacMac::new(Algorithm::HmacSha256, &[0xab; 32], Isa::current());
        let inputs = [
            MacInput::message(b"x"),
            MacInput {
                nonce: &[1],
                message: b"y",
            },
        ];
        let mut tags = [Tag::EMPTY; 2];
        assert!(matches!(
            mac.compute_many(&inputs, &mut tags),
            Err(MacError::NonceNotAccepted { .. })
        ));
        let shown = format!("{mac:?}");
        assert!(
            !shown.contains("inner") && !shown.contains("outer"),
            "{shown}"
        );
    }
}
