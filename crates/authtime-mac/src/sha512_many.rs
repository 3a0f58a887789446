//! SHA-512 of many independent messages with one common prefix, the shape
//! of a batch of Merkle leaves (Roughtime hashes `0x00 || request` for every
//! request of a batch).
//!
//! [`sha512_many`] picks its kernel once per call from [`Isa`]: eight
//! messages at a time in AVX-512 lanes, four in AVX2 lanes, and the `sha2`
//! crate one message at a time where neither is present (or for a lone
//! message, where lanes would stand idle: see `hash_some` for the counts). Every kernel gives the `sha2`
//! crate's digest for every input; the tests check it.

use sha2::{Digest, Sha512};

use crate::Isa;
use crate::kernels::sha512_lanes::{self, MAX_LANES};

/// `out[i] = SHA-512(prefix || messages[i])` for every `i`, with the
/// fastest kernel [`Isa::current`] allows. Messages may differ in length.
///
/// # Panics
/// If `out` and `messages` differ in length.
pub fn sha512_many(prefix: &[u8], messages: &[&[u8]], out: &mut [[u8; 64]]) {
    sha512_many_with_isa(prefix, messages, out, Isa::current());
}

/// [`sha512_many`] restricted to the kernels `isa` allows
/// ([`Isa::PORTABLE`]: the `sha2` crate alone).
///
/// # Panics
/// If `out` and `messages` differ in length.
pub fn sha512_many_with_isa(prefix: &[u8], messages: &[&[u8]], out: &mut [[u8; 64]], isa: Isa) {
    assert_eq!(messages.len(), out.len(), "one output per message");
    let mut done = 0;
    while done < messages.len() {
        done += hash_some(prefix, &messages[done..], &mut out[done..], isa);
    }
}

/// Hashes the first few of `messages` (at least one) and says how many.
/// A pass of the lanes costs the same however many lanes carry a message:
/// per 1036-byte message the eight-lane pass is cheaper than `sha2` from two
/// messages on, and cheaper than the four-lane pass at any count; the
/// four-lane pass (no AVX-512) beats `sha2` from three messages on.
fn hash_some(prefix: &[u8], messages: &[&[u8]], out: &mut [[u8; 64]], isa: Isa) -> usize {
    let eight = messages.len().min(MAX_LANES);
    if eight >= 2 && sha512_lanes::sha512_x8(isa, prefix, &messages[..eight], out) {
        return eight;
    }
    let four = messages.len().min(4);
    if four >= 3 && sha512_lanes::sha512_x4(isa, prefix, &messages[..four], out) {
        return four;
    }
    out[0] = one(prefix, messages[0]);
    1
}

/// SHA-512(prefix || message) with the `sha2` crate.
fn one(prefix: &[u8], message: &[u8]) -> [u8; 64] {
    Sha512::new()
        .chain_update(prefix)
        .chain_update(message)
        .finalize()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic byte stream (xorshift), so failures reproduce.
    fn bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn isas() -> Vec<Isa> {
        let detected = Isa::detect();
        let mut isas = vec![Isa::PORTABLE, detected];
        if let Ok(no512) = detected.restricted("no-avx512") {
            isas.push(no512);
        }
        isas
    }

    fn check(prefix: &[u8], lens: &[usize], seed: u64) {
        let bodies: Vec<Vec<u8>> = lens
            .iter()
            .enumerate()
            .map(|(i, &len)| bytes(seed + i as u64, len))
            .collect();
        let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
        for isa in isas() {
            let mut out = vec![[0u8; 64]; refs.len()];
            sha512_many_with_isa(prefix, &refs, &mut out, isa);
            for (i, (body, digest)) in refs.iter().zip(&out).enumerate() {
                assert_eq!(
                    *digest,
                    one(prefix, body),
                    "isa {} batch {} message {i} len {}",
                    isa.describe(),
                    refs.len(),
                    body.len()
                );
            }
        }
    }

    #[test]
    fn every_batch_size_of_roughtime_requests_matches_sha2() {
        // 1036 bytes: the request packets of draft 19's Appendix B and of the lab.
        for n in 1..=64 {
            check(&[0x00], &vec![1036; n], n as u64);
        }
    }

    #[test]
    fn every_batch_size_with_random_and_boundary_lengths_matches_sha2() {
        // With a one-byte prefix, 111 and 112 bytes are the last lengths
        // whose padding fits one block and the first that needs two (and
        // 239/240 for two and three); 127/128 and 1036 besides.
        let boundaries = [111usize, 112, 127, 128, 239, 240, 1036, 0, 1];
        let mut seed = 7u64;
        for n in 1..=64 {
            let lens: Vec<usize> = (0..n)
                .map(|i| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    if i % 3 == 0 {
                        boundaries[(seed >> 33) as usize % boundaries.len()]
                    } else {
                        (seed >> 40) as usize % 1500
                    }
                })
                .collect();
            for prefix in [&b""[..], &[0x00], &[0xff; 5]] {
                check(prefix, &lens, n as u64);
            }
        }
    }

    #[test]
    fn empty_batch_is_fine() {
        sha512_many(&[0], &[], &mut []);
    }
}
