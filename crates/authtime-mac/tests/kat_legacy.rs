//! Known-answer tests for the legacy NTP digests, MD5(key ‖ message) (RFC 5905
//! section 7.3) and SHA-1(key ‖ message) (ntpd, chrony), and for plain [`md5`].
//!
//! No source publishes vectors for the keyed framing itself, but it is plain
//! hashing of the concatenation, so every hash test vector split into a key
//! (1 to 32 bytes, the accepted range) and a message is one: the RFC 1321 test
//! suite for MD5 and the FIPS 180-2 examples for SHA-1. Checked with
//! `openssl dgst -md5` / `-sha1` as well.

use authtime_mac::{Algorithm, md5};

/// Splits `input` after `key_len` bytes and tags it.
fn check(algorithm: Algorithm, input: &[u8], key_len: usize, want: &str) {
    let (key, message) = input.split_at(key_len);
    let tag = algorithm
        .new_mac(key)
        .expect("key accepted")
        .compute(&[], message)
        .expect("tag");
    assert_eq!(
        hex::encode(tag.as_bytes()),
        want,
        "{algorithm}, key {key_len} bytes"
    );
}

/// Checks every split of `input` whose key length the legacy digests accept.
fn check_all_splits(algorithm: Algorithm, input: &[u8], want: &str) {
    for key_len in 1..=input.len().min(32) {
        check(algorithm, input, key_len, want);
    }
}

// RFC 1321 appendix A.5: MD5 ("a").
#[test]
fn md5_legacy_rfc1321_a5_a() {
    check_all_splits(
        Algorithm::Md5Legacy,
        b"a",
        "0cc175b9c0f1b6a831c399e269772661",
    );
}

// RFC 1321 appendix A.5: MD5 ("message digest").
#[test]
fn md5_legacy_rfc1321_a5_message_digest() {
    check_all_splits(
        Algorithm::Md5Legacy,
        b"message digest",
        "f96b697d7cb7938d525a2f31aaf161d0",
    );
}

// RFC 1321 appendix A.5: MD5 ("abcdefghijklmnopqrstuvwxyz").
#[test]
fn md5_legacy_rfc1321_a5_alphabet() {
    check_all_splits(
        Algorithm::Md5Legacy,
        b"abcdefghijklmnopqrstuvwxyz",
        "c3fcd3d76192e4007dfb496cca67e13b",
    );
}

// RFC 1321 appendix A.5: MD5 ("A..Za..z0..9"), 62 bytes: two blocks after padding.
#[test]
fn md5_legacy_rfc1321_a5_alphanumeric() {
    check_all_splits(
        Algorithm::Md5Legacy,
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "d174ab98d277d9f5a5611c2c9f419d9f",
    );
}

// RFC 1321 appendix A.5: MD5 of eight times "1234567890".
#[test]
fn md5_legacy_rfc1321_a5_digits() {
    check_all_splits(
        Algorithm::Md5Legacy,
        "1234567890".repeat(8).as_bytes(),
        "57edf4a22be3c955ac49da2e2107b67a",
    );
}

// RFC 1321 appendix A.5: the whole suite through the plain `md5` function.
#[test]
fn md5_rfc1321_a5_suite() {
    for (input, want) in [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        (
            "abcdefghijklmnopqrstuvwxyz",
            "c3fcd3d76192e4007dfb496cca67e13b",
        ),
        (
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            "d174ab98d277d9f5a5611c2c9f419d9f",
        ),
        (
            "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
            "57edf4a22be3c955ac49da2e2107b67a",
        ),
    ] {
        assert_eq!(hex::encode(md5(input.as_bytes())), want, "{input:?}");
    }
}

// FIPS 180-2 appendix A.1: SHA-1 ("abc").
#[test]
fn sha1_legacy_fips180_2_a1() {
    check_all_splits(
        Algorithm::Sha1Legacy,
        b"abc",
        "a9993e364706816aba3e25717850c26c9cd0d89d",
    );
}

// FIPS 180-2 appendix A.2: SHA-1 of the 56-byte "abcdbcde…nopq", two blocks after padding.
#[test]
fn sha1_legacy_fips180_2_a2() {
    check_all_splits(
        Algorithm::Sha1Legacy,
        b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
    );
}
