//! `authtime_mac::sha512_many` (SHA-512 of a batch in SIMD lanes) against
//! the `sha2` crate, one message at a time, for batches of 1 to 64
//! messages of any lengths, under every ISA restriction.

#![no_main]

use authtime_mac::{Isa, sha512_many_with_isa};
use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha512};

fuzz_target!(|data: &[u8]| {
    let Some((&shape, rest)) = data.split_first() else {
        return;
    };
    let prefix = &rest[..rest.len().min(usize::from(shape & 3))];
    let rest = &rest[prefix.len()..];
    // Message i is the next (i * 37 + shape) % 1200 bytes, or what is left.
    let mut messages = Vec::new();
    let mut at = 0;
    for i in 0..=usize::from(shape >> 2) {
        let len = ((i * 37 + usize::from(shape)) % 1200).min(rest.len() - at);
        messages.push(&rest[at..at + len]);
        at += len;
    }
    let expected: Vec<[u8; 64]> = messages
        .iter()
        .map(|m| {
            Sha512::new()
                .chain_update(prefix)
                .chain_update(m)
                .finalize()
                .into()
        })
        .collect();
    let detected = Isa::detect();
    let restricted = detected.restricted("no-avx512").unwrap_or(Isa::PORTABLE);
    for isa in [detected, restricted, Isa::PORTABLE] {
        let mut out = vec![[0u8; 64]; messages.len()];
        sha512_many_with_isa(prefix, &messages, &mut out, isa);
        assert_eq!(out, expected, "{}", isa.describe());
    }
});
