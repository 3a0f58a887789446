//! Known-answer tests for HMAC: RFC 2202 (HMAC-MD5, HMAC-SHA1) and RFC 4231
//! (HMAC-SHA224, HMAC-SHA256, and their 16-byte truncations of RFC 7630).
//!
//! Every vector was also checked against `openssl mac ... HMAC` (OpenSSL 3.0).

use authtime_mac::Algorithm;

/// Tags `message` under `key` with `algorithm` and compares with `want` (hex).
fn check(algorithm: Algorithm, key: &[u8], message: &[u8], want: &str) {
    let tag = algorithm
        .new_mac(key)
        .expect("key accepted")
        .compute(&[], message)
        .expect("tag");
    assert_eq!(hex::encode(tag.as_bytes()), want, "{algorithm}");
}

/// RFC 4231 gives full-length tags; the `-128` variant must be their first 16 bytes.
fn check_sha2(full: Algorithm, truncated: Algorithm, key: &[u8], message: &[u8], want: &str) {
    check(full, key, message, want);
    check(truncated, key, message, &want[..32]);
}

/// The 25-byte key 0x01 0x02 .. 0x19 of RFC 2202 and RFC 4231 case 4.
fn key_1_to_25() -> Vec<u8> {
    (1..=25).collect()
}

const LARGER_KEY_FIRST: &[u8] = b"Test Using Larger Than Block-Size Key - Hash Key First";
const LARGER_KEY_AND_DATA: &[u8] =
    b"Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data";
const RFC4231_CASE_7_DATA: &[u8] = b"This is a test using a larger than block-size key and a \
larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.";

// RFC 2202 section 2: test cases for HMAC-MD5.

#[test]
fn hmac_md5_rfc2202_case_1() {
    check(
        Algorithm::HmacMd5,
        &[0x0b; 16],
        b"Hi There",
        "9294727a3638bb1c13f48ef8158bfc9d",
    );
}

#[test]
fn hmac_md5_rfc2202_case_2() {
    check(
        Algorithm::HmacMd5,
        b"Jefe",
        b"what do ya want for nothing?",
        "750c783e6ab0b503eaa86e310a5db738",
    );
}

#[test]
fn hmac_md5_rfc2202_case_3() {
    check(
        Algorithm::HmacMd5,
        &[0xaa; 16],
        &[0xdd; 50],
        "56be34521d144c88dbb8c733f0e8b3f6",
    );
}

#[test]
fn hmac_md5_rfc2202_case_4() {
    check(
        Algorithm::HmacMd5,
        &key_1_to_25(),
        &[0xcd; 50],
        "697eaf0aca3a3aea3a75164746ffaa79",
    );
}

#[test]
fn hmac_md5_rfc2202_case_5() {
    check(
        Algorithm::HmacMd5,
        &[0x0c; 16],
        b"Test With Truncation",
        "56461ef2342edc00f9bab995690efd4c",
    );
}

#[test]
fn hmac_md5_rfc2202_case_6() {
    check(
        Algorithm::HmacMd5,
        &[0xaa; 80],
        LARGER_KEY_FIRST,
        "6b1ab7fe4bd7bf8f0b62e6ce61b9d0cd",
    );
}

#[test]
fn hmac_md5_rfc2202_case_7() {
    check(
        Algorithm::HmacMd5,
        &[0xaa; 80],
        LARGER_KEY_AND_DATA,
        "6f630fad67cda0ee1fb1f562db3aa53e",
    );
}

// RFC 2202 section 3: test cases for HMAC-SHA1.

#[test]
fn hmac_sha1_rfc2202_case_1() {
    check(
        Algorithm::HmacSha1,
        &[0x0b; 20],
        b"Hi There",
        "b617318655057264e28bc0b6fb378c8ef146be00",
    );
}

#[test]
fn hmac_sha1_rfc2202_case_2() {
    check(
        Algorithm::HmacSha1,
        b"Jefe",
        b"what do ya want for nothing?",
        "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
    );
}

#[test]
fn hmac_sha1_rfc2202_case_3() {
    check(
        Algorithm::HmacSha1,
        &[0xaa; 20],
        &[0xdd; 50],
        "125d7342b9ac11cd91a39af48aa17b4f63f175d3",
    );
}

#[test]
fn hmac_sha1_rfc2202_case_4() {
    check(
        Algorithm::HmacSha1,
        &key_1_to_25(),
        &[0xcd; 50],
        "4c9007f4026250c6bc8414f9bf50c86c2d7235da",
    );
}

#[test]
fn hmac_sha1_rfc2202_case_5() {
    check(
        Algorithm::HmacSha1,
        &[0x0c; 20],
        b"Test With Truncation",
        "4c1a03424b55e07fe7f27be1d58bb9324a9a5a04",
    );
}

#[test]
fn hmac_sha1_rfc2202_case_6() {
    check(
        Algorithm::HmacSha1,
        &[0xaa; 80],
        LARGER_KEY_FIRST,
        "aa4ae5e15272d00e95705637ce8a3b55ed402112",
    );
}

#[test]
fn hmac_sha1_rfc2202_case_7() {
    check(
        Algorithm::HmacSha1,
        &[0xaa; 80],
        LARGER_KEY_AND_DATA,
        "e8e99d0f45237d786d6bbaa7965c7808bbff1a91",
    );
}

// RFC 4231 section 4.2: test case 1.

#[test]
fn hmac_sha224_rfc4231_case_1() {
    check_sha2(
        Algorithm::HmacSha224,
        Algorithm::HmacSha224_128,
        &[0x0b; 20],
        b"Hi There",
        "896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22",
    );
}

#[test]
fn hmac_sha256_rfc4231_case_1() {
    check_sha2(
        Algorithm::HmacSha256,
        Algorithm::HmacSha256_128,
        &[0x0b; 20],
        b"Hi There",
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
    );
}

// RFC 4231 section 4.3: test case 2, a key shorter than the output.

#[test]
fn hmac_sha224_rfc4231_case_2() {
    check_sha2(
        Algorithm::HmacSha224,
        Algorithm::HmacSha224_128,
        b"Jefe",
        b"what do ya want for nothing?",
        "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44",
    );
}

#[test]
fn hmac_sha256_rfc4231_case_2() {
    check_sha2(
        Algorithm::HmacSha256,
        Algorithm::HmacSha256_128,
        b"Jefe",
        b"what do ya want for nothing?",
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    );
}

// RFC 4231 section 4.4: test case 3, 50 bytes of 0xdd.

#[test]
fn hmac_sha224_rfc4231_case_3() {
    check_sha2(
        Algorithm::HmacSha224,
        Algorithm::HmacSha224_128,
        &[0xaa; 20],
        &[0xdd; 50],
        "7fb3cb3588c6c1f6ffa9694d7d6ad2649365b0c1f65d69d1ec8333ea",
    );
}

#[test]
fn hmac_sha256_rfc4231_case_3() {
    check_sha2(
        Algorithm::HmacSha256,
        Algorithm::HmacSha256_128,
        &[0xaa; 20],
        &[0xdd; 50],
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
    );
}

// RFC 4231 section 4.5: test case 4, a 25-byte key.

#[test]
fn hmac_sha224_rfc4231_case_4() {
    check_sha2(
        Algorithm::HmacSha224,
        Algorithm::HmacSha224_128,
        &key_1_to_25(),
        &[0xcd; 50],
        "6c11506874013cac6a2abc1bb382627cec6a90d86efc012de7afec5a",
    );
}

#[test]
fn hmac_sha256_rfc4231_case_4() {
    check_sha2(
        Algorithm::HmacSha256,
        Algorithm::HmacSha256_128,
        &key_1_to_25(),
        &[0xcd; 50],
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
    );
}

// RFC 4231 section 4.6: test case 5, output truncated to 128 bits. The RFC gives
// only the truncated tag, which is exactly what the `-128` variants output.

#[test]
fn hmac_sha224_128_rfc4231_case_5() {
    check(
        Algorithm::HmacSha224_128,
        &[0x0c; 20],
        b"Test With Truncation",
        "0e2aea68a90c8d37c988bcdb9fca6fa8",
    );
}

#[test]
fn hmac_sha256_128_rfc4231_case_5() {
    check(
        Algorithm::HmacSha256_128,
        &[0x0c; 20],
        b"Test With Truncation",
        "a3b6167473100ee06e0c796c2955552b",
    );
}

// RFC 4231 section 4.7: test case 6, a 131-byte key (longer than the block).

#[test]
fn hmac_sha224_rfc4231_case_6() {
    check_sha2(
        Algorithm::HmacSha224,
        Algorithm::HmacSha224_128,
        &[0xaa; 131],
        LARGER_KEY_FIRST,
        "95e9a0db962095adaebe9b2d6f0dbce2d499f112f2d2b7273fa6870e",
    );
}

#[test]
fn hmac_sha256_rfc4231_case_6() {
    check_sha2(
        Algorithm::HmacSha256,
        Algorithm::HmacSha256_128,
        &[0xaa; 131],
        LARGER_KEY_FIRST,
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
    );
}

// RFC 4231 section 4.8: test case 7, a 131-byte key and 152 bytes of data.

#[test]
fn hmac_sha224_rfc4231_case_7() {
    check_sha2(
        Algorithm::HmacSha224,
        Algorithm::HmacSha224_128,
        &[0xaa; 131],
        RFC4231_CASE_7_DATA,
        "3a854166ac5d9f023f54d517d0b39dbd946770db9c2b95c9f6f565d1",
    );
}

#[test]
fn hmac_sha256_rfc4231_case_7() {
    check_sha2(
        Algorithm::HmacSha256,
        Algorithm::HmacSha256_128,
        &[0xaa; 131],
        RFC4231_CASE_7_DATA,
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
    );
}
