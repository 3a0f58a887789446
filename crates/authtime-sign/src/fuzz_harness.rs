//! Entry points for cargo-fuzz (`fuzz/fuzz_targets/sign_parsing.rs`): every decoder and
//! `verify` on arbitrary bytes. None of them may panic.

use crate::{Scheme, SigningKey, VerifyingKey};

/// Feeds `data` to the public and secret key file parsers, the raw and tagged key decoders
/// of every scheme, and to `verify` of a fixed key of every scheme as a signature.
pub fn parse_keys_and_signatures(data: &[u8]) {
    let _ = VerifyingKey::from_key_file_bytes(data);
    let _ = SigningKey::from_key_file_bytes(data);
    let _ = VerifyingKey::from_tagged_bytes(data);
    for scheme in Scheme::ALL {
        let _ = VerifyingKey::from_bytes(scheme, data);
        // Secret decoding of LMS and SLH-DSA rebuilds trees (slow): only try exact lengths.
        if data.len() == scheme.sizes().secret_key {
            let _ = SigningKey::from_secret_bytes(scheme, data);
        }
    }
    verify_arbitrary_signatures(data);
}

/// Verifies `data` as a signature (and as a message) under one key of each scheme.
pub fn verify_arbitrary_signatures(data: &[u8]) {
    use std::sync::OnceLock;
    static KEYS: OnceLock<Vec<VerifyingKey>> = OnceLock::new();
    let keys = KEYS.get_or_init(|| {
        Scheme::ALL
            .iter()
            .map(|&scheme| SigningKey::generate_from_seed(scheme, [0x5a; 32]).verifying_key())
            .collect()
    });
    for key in keys {
        let expected = key.scheme().sizes().signature;
        let _ = key.verify(b"authtime fuzz message", data);
        // Also at the exact length, so the decoders past the length check get exercised.
        let mut padded = data.to_vec();
        padded.resize(expected, 0);
        let _ = key.verify(data, &padded);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_inputs_do_not_panic() {
        let mut inputs: Vec<Vec<u8>> = vec![
            Vec::new(),
            vec![0],
            vec![0xff; 7],
            b"authtime-sign v1 public lms\n".to_vec(),
            b"authtime-sign v1 secret lms\n00000006000000030000ffff".to_vec(),
            b"authtime-sign v1 public p256\n02ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\n".to_vec(),
            b"authtime-sign v1 secret p256\n0000000000000000000000000000000000000000000000000000000000000000\n".to_vec(),
            vec![0x00, 0x06, 0xff, 0xff],
        ];
        for scheme in Scheme::ALL {
            let sizes = scheme.sizes();
            inputs.push(vec![0xff; sizes.signature]);
            inputs.push(vec![0x00; sizes.public_key]);
            inputs.push(vec![0xff; sizes.secret_key]);
        }
        // An LMS signature with q beyond the tree and every type code wrong.
        let mut lms = vec![0xff; Scheme::Lms.sizes().signature];
        lms[..4].copy_from_slice(&1023u32.to_be_bytes());
        inputs.push(lms);
        for input in &inputs {
            parse_keys_and_signatures(input);
        }
    }
}
