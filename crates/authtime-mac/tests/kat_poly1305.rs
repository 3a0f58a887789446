//! Known-answer test for Poly1305-ChaCha20 end to end (key and nonce in, tag out).
//!
//! RFC 8439 publishes no vector for this MAC alone, but its AEAD (section 2.8)
//! tags `mac_data = AAD ‖ pad16 ‖ ciphertext ‖ pad16 ‖ LE64(len AAD) ‖ LE64(len
//! ciphertext)` with Poly1305 under the one-time key of section 2.6, which is
//! exactly this MAC applied to `mac_data`. So the AEAD example of section 2.8.2
//! pins down key generation and Poly1305 together. The RFC 8439 section 2.6.2
//! key-generation vector is tested inside the crate.
//!
//! Checked against OpenSSL 3.0: `openssl enc -chacha20` of 32 zero bytes with
//! IV `00000000 ‖ nonce` gives the section 2.8.2 one-time key (7bac2b25…), and
//! `openssl mac -macopt hexkey:<that key> Poly1305` over `mac_data` gives the tag.

use authtime_mac::Algorithm;

/// RFC 8439 section 2.8.2: the AAD and the ciphertext of the "sunscreen" plaintext.
const AAD: &str = "50515253c0c1c2c3c4c5c6c7";
const CIPHERTEXT: &str = "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6\
                          3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36\
                          92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc\
                          3ff4def08e4b7a9de576d26586cec64b6116";

/// RFC 8439 section 2.8: the bytes the AEAD hands to Poly1305.
fn aead_mac_data(aad: &[u8], ciphertext: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for part in [aad, ciphertext] {
        out.extend_from_slice(part);
        out.resize(out.len().next_multiple_of(16), 0);
    }
    out.extend_from_slice(&(aad.len() as u64).to_le_bytes());
    out.extend_from_slice(&(ciphertext.len() as u64).to_le_bytes());
    out
}

// RFC 8439 section 2.8.2: example and test vector for AEAD_CHACHA20_POLY1305.
#[test]
fn poly1305_chacha20_rfc8439_2_8_2_aead_tag() {
    let key = hex::decode("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
        .expect("hex key");
    let nonce = hex::decode("070000004041424344454647").expect("hex nonce");
    let ciphertext = hex::decode(CIPHERTEXT).expect("hex ciphertext");
    assert_eq!(ciphertext.len(), 114);
    let mac_data = aead_mac_data(&hex::decode(AAD).expect("hex aad"), &ciphertext);
    assert_eq!(mac_data.len(), 160);
    let tag = Algorithm::Poly1305ChaCha20
        .new_mac(&key)
        .expect("key accepted")
        .compute(&nonce, &mac_data)
        .expect("tag");
    assert_eq!(
        hex::encode(tag.as_bytes()),
        "1ae10b594f09e26a7e902ecbd0600691"
    );
}
