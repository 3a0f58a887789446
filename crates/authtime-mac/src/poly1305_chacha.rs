//! Poly1305 keyed by ChaCha20 (RFC 8439 section 2.6): the one-time Poly1305 key is
//! the first 32 bytes of the ChaCha20 block for (key, nonce, counter 0); the tag
//! is Poly1305 of the message under that one-time key. This is the MAC the NTP
//! draft measured, not the ChaCha20-Poly1305 AEAD (which pads and appends lengths).
//!
//! **Never reuse a nonce under one key**: two messages under one one-time key
//! let an attacker solve for it and forge. See [`crate::NonceSealer`].
//!
//! Both halves run on kernels written here (`kernels/chacha_*`,
//! `kernels/poly1305_*`), because the RustCrypto crates, which remain the
//! test oracle, are built for streams: `chacha20` computes four blocks for
//! one key, and `poly1305`'s backends cost thousands of cycles (AVX2) or 2.6
//! cycles per byte (portable) on a packet. One packet: one ChaCha20 block
//! (xmm rows with AVX2, else portable Rust), then Poly1305 one block at a time
//! below [`poly1305_avx2::MIN_LEN`] bytes and four blocks per step with AVX2
//! from there. Batches: eight one-time keys per AVX2 ChaCha20 call.

use core::fmt;

use zeroize::Zeroizing;

#[cfg(target_arch = "x86_64")]
use crate::kernels::{
    chacha_x86::{self, ChaChaX86},
    poly1305_avx2::{self, Poly1305Avx2},
};
use crate::{
    Algorithm, Isa, Mac, MacError, MacInput, Tag,
    kernels::{
        chacha_scalar,
        poly1305_scalar::{self, OneTimeKey},
    },
    mac::check_nonce,
};

/// Nonce length in bytes (RFC 8439 section 2.6).
const NONCE_LEN: usize = 12;

/// Poly1305-ChaCha20 with its 32-byte key and the kernels of this CPU.
pub(crate) struct Poly1305ChaCha20 {
    /// The key as ChaCha20's eight state words, loaded once.
    key: Zeroizing<[u32; 8]>,
    #[cfg(target_arch = "x86_64")]
    chacha: Option<ChaChaX86>,
    #[cfg(target_arch = "x86_64")]
    poly: Option<Poly1305Avx2>,
}

impl Poly1305ChaCha20 {
    /// With the kernels `isa` allows ([`Isa::PORTABLE`]: portable Rust only).
    pub(crate) fn new_with_isa(key: &[u8], isa: Isa) -> Result<Self, MacError> {
        let key: &[u8; 32] = key.try_into().map_err(|_| MacError::KeyLength {
            algorithm: Algorithm::Poly1305ChaCha20.name().to_owned(),
            got: key.len(),
            expected: Algorithm::Poly1305ChaCha20.info().key,
        })?;
        #[cfg(not(target_arch = "x86_64"))]
        let _ = isa;
        Ok(Self {
            key: Zeroizing::new(chacha_scalar::key_words(key)),
            #[cfg(target_arch = "x86_64")]
            chacha: ChaChaX86::new(isa),
            #[cfg(target_arch = "x86_64")]
            poly: Poly1305Avx2::new(isa),
        })
    }

    /// RFC 8439 section 2.6: `poly1305_key_gen(key, nonce)`, as bytes.
    #[cfg(test)]
    pub(crate) fn one_time_key(&self, nonce: &[u8; NONCE_LEN]) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(poly1305_scalar::otk_to_bytes(&self.otk(nonce)))
    }

    /// RFC 8439 section 2.6: `poly1305_key_gen(key, nonce)`.
    fn otk(&self, nonce: &[u8; NONCE_LEN]) -> Zeroizing<OneTimeKey> {
        #[cfg(target_arch = "x86_64")]
        if let Some(chacha) = self.chacha {
            return Zeroizing::new(chacha.one_time_key(&self.key, nonce));
        }
        Zeroizing::new(chacha_scalar::one_time_key(&self.key, nonce))
    }

    /// Poly1305 of `message` under `otk`, on the kernel for its length.
    fn poly1305(&self, otk: &OneTimeKey, message: &[u8]) -> Tag {
        #[cfg(target_arch = "x86_64")]
        if let Some(poly) = self.poly
            && message.len() >= poly1305_avx2::MIN_LEN
        {
            return Tag::from_slice(&poly.tag(otk, message));
        }
        Tag::from_slice(&poly1305_scalar::tag(otk, message))
    }
}

/// `nonce` as an array, or the usage error.
fn nonce_of<'a>(name: &str, nonce: &'a [u8]) -> Result<&'a [u8; NONCE_LEN], MacError> {
    check_nonce(name, NONCE_LEN, nonce)?;
    Ok(nonce.try_into().expect("length checked"))
}

impl Mac for Poly1305ChaCha20 {
    fn name(&self) -> &str {
        Algorithm::Poly1305ChaCha20.name()
    }
    fn nonce_len(&self) -> usize {
        NONCE_LEN
    }
    fn tag_len(&self) -> usize {
        16
    }
    fn compute(&self, nonce: &[u8], message: &[u8]) -> Result<Tag, MacError> {
        let nonce = nonce_of(self.name(), nonce)?;
        let otk = self.otk(nonce);
        Ok(self.poly1305(&otk, message))
    }

    /// Batches derive their one-time keys eight at a time with AVX2 (one
    /// ChaCha20 block per lane), then run Poly1305 message by message.
    fn compute_many(&self, inputs: &[MacInput<'_>], tags: &mut [Tag]) -> Result<(), MacError> {
        if inputs.len() != tags.len() {
            return Err(MacError::BatchLength {
                inputs: inputs.len(),
                outputs: tags.len(),
            });
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(chacha) = self.chacha {
            return self.compute_many_x8(chacha, inputs, tags);
        }
        for (input, tag) in inputs.iter().zip(tags.iter_mut()) {
            *tag = self.compute(input.nonce, input.message)?;
        }
        Ok(())
    }
}

#[cfg(target_arch = "x86_64")]
impl Poly1305ChaCha20 {
    /// [`Mac::compute_many`] with the eight-lane ChaCha20 kernel. A chunk of
    /// one message takes the one-block kernel; a shorter chunk fills its
    /// free lanes with its first nonce.
    fn compute_many_x8(
        &self,
        chacha: ChaChaX86,
        inputs: &[MacInput<'_>],
        tags: &mut [Tag],
    ) -> Result<(), MacError> {
        let mut otks = Zeroizing::new([[0u64; 4]; chacha_x86::LANES]);
        for (chunk, out) in inputs
            .chunks(chacha_x86::LANES)
            .zip(tags.chunks_mut(chacha_x86::LANES))
        {
            if chunk.len() == 1 {
                out[0] = self.compute(chunk[0].nonce, chunk[0].message)?;
                continue;
            }
            let mut nonces = [nonce_of(self.name(), chunk[0].nonce)?; chacha_x86::LANES];
            for (slot, input) in nonces.iter_mut().zip(chunk).skip(1) {
                *slot = nonce_of(self.name(), input.nonce)?;
            }
            chacha.one_time_keys(&self.key, &nonces, &mut otks);
            for ((input, otk), tag) in chunk.iter().zip(otks.iter()).zip(out.iter_mut()) {
                *tag = self.poly1305(otk, input.message);
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Poly1305ChaCha20 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Poly1305ChaCha20 { .. }")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::md5_scalar::tests::SplitMix;

    fn unhex(s: &str) -> Vec<u8> {
        hex::decode(s.replace([' ', '\n', ':'], "")).expect("hex")
    }

    // RFC 8439 section 2.6.2: Poly1305 key generation test vector.
    #[test]
    fn poly1305_key_gen_rfc8439_2_6_2() {
        let key = unhex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f");
        let mac = Poly1305ChaCha20::new_with_isa(&key, Isa::current()).expect("key");
        let nonce: [u8; 12] = unhex("000000000001020304050607").try_into().expect("12");
        assert_eq!(
            hex::encode(*mac.one_time_key(&nonce)),
            "8ad5a08b905f81cc815040274ab29471a833b637e3fd0da508dbb8e2fdd1a646"
        );
    }

    // RFC 8439 appendix A.4, test vector #3: key generation with a nonzero key.
    #[test]
    fn poly1305_key_gen_rfc8439_a4_vector3() {
        let key = unhex("1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0");
        let mac = Poly1305ChaCha20::new_with_isa(&key, Isa::current()).expect("key");
        let nonce: [u8; 12] = unhex("000000000000000000000002").try_into().expect("12");
        assert_eq!(
            hex::encode(*mac.one_time_key(&nonce)),
            "965e3bc6f9ec7ed9560808f4d229f94b137ff275ca9b3fcbdd59deaad23310ae"
        );
    }
    /// The one-time key and tag of the RustCrypto crates (the oracle).
    fn reference(key: &[u8; 32], nonce: &[u8; 12], msg: &[u8]) -> Tag {
        let otk = crate::kernels::chacha_scalar::tests::reference(key, nonce);
        Tag::from_slice(&crate::kernels::poly1305_scalar::tests::reference(
            &otk, msg,
        ))
    }

    /// Every way to build the MAC: the CPU's kernels, forced portable, and
    /// through the public constructor.
    fn macs(key: &[u8; 32]) -> Vec<Box<dyn Mac>> {
        vec![
            Box::new(Poly1305ChaCha20::new_with_isa(key, Isa::detect()).expect("key")),
            Box::new(Poly1305ChaCha20::new_with_isa(key, Isa::PORTABLE).expect("key")),
            Algorithm::Poly1305ChaCha20
                .new_mac_with_isa(key, Isa::PORTABLE)
                .expect("key"),
            Algorithm::Poly1305ChaCha20.new_mac(key).expect("key"),
        ]
    }

    fn lengths() -> impl Iterator<Item = usize> {
        crate::kernels::poly1305_scalar::tests::lengths()
    }

    #[test]
    fn matches_rustcrypto_on_random_keys_every_length() {
        let mut rng = SplitMix(0x8439);
        for round in 0..2 {
            let key: [u8; 32] = rng.bytes(32).try_into().expect("32");
            let macs = macs(&key);
            for len in lengths() {
                let nonce: [u8; 12] = rng.bytes(12).try_into().expect("12");
                let msg = rng.bytes(len);
                let want = reference(&key, &nonce, &msg);
                for (i, mac) in macs.iter().enumerate() {
                    assert_eq!(mac.compute(&nonce, &msg), Ok(want), "{round} {len} mac {i}");
                }
            }
        }
    }

    #[test]
    fn one_time_key_matches_rustcrypto() {
        let mut rng = SplitMix(0x2602);
        for _ in 0..200 {
            let key: [u8; 32] = rng.bytes(32).try_into().expect("32");
            let nonce: [u8; 12] = rng.bytes(12).try_into().expect("12");
            let want = crate::kernels::chacha_scalar::tests::reference(&key, &nonce);
            for isa in [Isa::detect(), Isa::PORTABLE] {
                let mac = Poly1305ChaCha20::new_with_isa(&key, isa).expect("key");
                assert_eq!(*mac.one_time_key(&nonce), want);
            }
        }
    }

    #[test]
    fn batch_matches_one_packet() {
        let mut rng = SplitMix(0xba7c);
        let key: [u8; 32] = rng.bytes(32).try_into().expect("32");
        for mac in macs(&key) {
            for count in 1..=40 {
                // Mixed lengths on even counts, one length on odd ones.
                let lens: Vec<usize> = (0..count)
                    .map(|_| {
                        if count % 2 == 0 {
                            (rng.next_u64() % 1600) as usize
                        } else {
                            48 + count
                        }
                    })
                    .collect();
                let nonces: Vec<Vec<u8>> = (0..count).map(|_| rng.bytes(12)).collect();
                let msgs: Vec<Vec<u8>> = lens.iter().map(|&l| rng.bytes(l)).collect();
                let inputs: Vec<MacInput<'_>> = nonces
                    .iter()
                    .zip(&msgs)
                    .map(|(nonce, message)| MacInput { nonce, message })
                    .collect();
                let mut tags = vec![Tag::EMPTY; count];
                mac.compute_many(&inputs, &mut tags).expect("batch");
                for (input, tag) in inputs.iter().zip(&tags) {
                    assert_eq!(Ok(*tag), mac.compute(input.nonce, input.message), "{count}");
                }
                let refs: Vec<&[u8]> = tags.iter().map(Tag::as_bytes).collect();
                let mut ok = vec![false; count];
                mac.verify_many(&inputs, &refs, &mut ok).expect("verify");
                assert!(ok.iter().all(|&b| b));
            }
        }
    }

    #[test]
    fn batch_reports_usage_errors() {
        for mac in macs(&[9; 32]) {
            let good = [1u8; 12];
            let short = [1u8; 11];
            for bad_at in [0, 3, 8, 9] {
                let inputs: Vec<MacInput<'_>> = (0..10)
                    .map(|i| MacInput {
                        nonce: if i == bad_at { &short } else { &good },
                        message: b"packet",
                    })
                    .collect();
                let mut tags = vec![Tag::EMPTY; 10];
                assert!(matches!(
                    mac.compute_many(&inputs, &mut tags),
                    Err(MacError::NonceLength {
                        got: 11,
                        expected: 12,
                        ..
                    })
                ));
            }
            let inputs = [MacInput::message(b"no nonce")];
            assert!(matches!(
                mac.compute_many(&inputs, &mut [Tag::EMPTY]),
                Err(MacError::NonceRequired { len: 12, .. })
            ));
            assert!(matches!(
                mac.compute_many(&inputs, &mut []),
                Err(MacError::BatchLength {
                    inputs: 1,
                    outputs: 0
                })
            ));
        }
    }

    // RFC 8439 section 2.6.2 and 2.5.2 joined: the tag of the section 2.5.2
    // message under the one-time key of section 2.6.2 is what the crates give.
    #[test]
    fn tag_under_rfc_key_matches_rustcrypto() {
        let key: [u8; 32] =
            unhex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
                .try_into()
                .expect("32");
        let nonce: [u8; 12] = unhex("000000000001020304050607").try_into().expect("12");
        let msg = b"Cryptographic Forum Research Group";
        for mac in macs(&key) {
            assert_eq!(mac.compute(&nonce, msg), Ok(reference(&key, &nonce, msg)));
        }
    }
}
