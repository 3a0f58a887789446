//! Known-answer tests for AES-CMAC: RFC 4493 section 4 (AES-128) and NIST
//! SP 800-38B appendix D.3 (AES-256).
//!
//! Both sources use prefixes of the same 64-byte message (the NIST SP 800-38A
//! example plaintext): 0, 16, 40 and 64 bytes. Every vector was also checked
//! against `openssl mac -cipher AES-*-CBC ... CMAC` (OpenSSL 3.0).

use authtime_mac::Algorithm;

const AES128_KEY: &str = "2b7e151628aed2a6abf7158809cf4f3c";
const AES256_KEY: &str = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";
const MESSAGE: &str = "6bc1bee22e409f96e93d7e117393172a\
                       ae2d8a571e03ac9c9eb76fac45af8e51\
                       30c81c46a35ce411e5fbc1191a0a52ef\
                       f69f2445df4f9b17ad2b417be66c3710";

/// Tags the first `len` bytes of [`MESSAGE`] and compares with `want` (hex).
fn check(algorithm: Algorithm, key: &str, len: usize, want: &str) {
    let key = hex::decode(key).expect("hex key");
    let message = hex::decode(MESSAGE).expect("hex message");
    let tag = algorithm
        .new_mac(&key)
        .expect("key accepted")
        .compute(&[], &message[..len])
        .expect("tag");
    assert_eq!(
        hex::encode(tag.as_bytes()),
        want,
        "{algorithm}, {len} bytes"
    );
}

// RFC 4493 section 4, example 1: empty message (the padded, K2 path).
#[test]
fn cmac_rfc4493_example_1() {
    check(
        Algorithm::Aes128Cmac,
        AES128_KEY,
        0,
        "bb1d6929e95937287fa37d129b756746",
    );
}

// RFC 4493 section 4, example 2: one whole block (the K1 path).
#[test]
fn cmac_rfc4493_example_2() {
    check(
        Algorithm::Aes128Cmac,
        AES128_KEY,
        16,
        "070a16b46b4d4144f79bdd9dd04a287c",
    );
}

// RFC 4493 section 4, example 3: 40 bytes, a partial last block.
#[test]
fn cmac_rfc4493_example_3() {
    check(
        Algorithm::Aes128Cmac,
        AES128_KEY,
        40,
        "dfa66747de9ae63030ca32611497c827",
    );
}

// RFC 4493 section 4, example 4: four whole blocks.
#[test]
fn cmac_rfc4493_example_4() {
    check(
        Algorithm::Aes128Cmac,
        AES128_KEY,
        64,
        "51f0bebf7e3b9d92fc49741779363cfe",
    );
}

// NIST SP 800-38B appendix D.3, AES-256 example 1: empty message.
#[test]
fn cmac_aes256_sp800_38b_d3_example_1() {
    check(
        Algorithm::Aes256Cmac,
        AES256_KEY,
        0,
        "028962f61b7bf89efc6b551f4667d983",
    );
}

// NIST SP 800-38B appendix D.3, AES-256 example 2: 128-bit message.
#[test]
fn cmac_aes256_sp800_38b_d3_example_2() {
    check(
        Algorithm::Aes256Cmac,
        AES256_KEY,
        16,
        "28a7023f452e8f82bd4bf28d8c37c35c",
    );
}

// NIST SP 800-38B appendix D.3, AES-256 example 3: 320-bit message.
#[test]
fn cmac_aes256_sp800_38b_d3_example_3() {
    check(
        Algorithm::Aes256Cmac,
        AES256_KEY,
        40,
        "aaf3d8f1de5640c232f5b169b9c911e6",
    );
}

// NIST SP 800-38B appendix D.3, AES-256 example 4: 512-bit message.
#[test]
fn cmac_aes256_sp800_38b_d3_example_4() {
    check(
        Algorithm::Aes256Cmac,
        AES256_KEY,
        64,
        "e1992190549f6ed5696a2c056c315410",
    );
}
