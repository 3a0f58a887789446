//! Known-answer tests for SipHash-2-4 (64-bit output): the `vectors_sip64` table
//! of the SipHash reference implementation (`vectors.h` in the SipHash repository,
//! by Aumasson and Bernstein), key `00 01 .. 0f`, message `00 01 .. (n-1)`. The
//! tag bytes are the reference's output bytes, the 64-bit result in
//! little-endian order. The paper's appendix A vector (n = 15) is tested inside
//! the crate.
//!
//! Every vector was also checked against
//! `openssl mac -macopt hexkey:000102…0f -macopt size:8 SIPHASH` (OpenSSL 3.0).

use authtime_mac::Algorithm;

fn check(len: u8, want: &str) {
    let key: Vec<u8> = (0..16).collect();
    let message: Vec<u8> = (0..len).collect();
    let tag = Algorithm::SipHash24
        .new_mac(&key)
        .expect("key accepted")
        .compute(&[], &message)
        .expect("tag");
    assert_eq!(hex::encode(tag.as_bytes()), want, "{len} bytes");
}

/// One `#[test]` per vector, so a failure names its message length.
macro_rules! siphash_vectors {
    ($($name:ident => ($len:expr, $want:expr),)*) => {
        $(
            #[test]
            fn $name() {
                check($len, $want);
            }
        )*
    };
}

siphash_vectors! {
    siphash24_reference_vectors_len_0 => (0, "310e0edd47db6f72"),
    siphash24_reference_vectors_len_1 => (1, "fd67dc93c539f874"),
    siphash24_reference_vectors_len_2 => (2, "5a4fa9d909806c0d"),
    siphash24_reference_vectors_len_3 => (3, "2d7efbd796666785"),
    siphash24_reference_vectors_len_4 => (4, "b7877127e09427cf"),
    siphash24_reference_vectors_len_5 => (5, "8da699cd64557618"),
    siphash24_reference_vectors_len_6 => (6, "cee3fe586e46c9cb"),
    siphash24_reference_vectors_len_7 => (7, "37d1018bf50002ab"),
    siphash24_reference_vectors_len_8 => (8, "6224939a79f5f593"),
    siphash24_reference_vectors_len_16 => (16, "db9bc2577fcc2a3f"),
    siphash24_reference_vectors_len_63 => (63, "724506eb4c328a95"),
}
