//! Published known-answer vectors, one test per source.

use authtime_sign::{Scheme, SigningKey, VerifyingKey};

fn unhex(s: &str) -> Vec<u8> {
    let compact: String = s.split_whitespace().collect();
    hex::decode(compact).expect("test vector hex")
}

/// RFC 8032 §7.1, TEST 1, TEST 2 and TEST 3: (secret key, public key, message, signature).
const RFC8032_ED25519: [(&str, &str, &str, &str); 3] = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
];

#[test]
fn ed25519_rfc8032_section_7_1_tests_1_to_3() {
    for (secret, public, message, signature) in RFC8032_ED25519 {
        let mut key =
            SigningKey::from_secret_bytes(Scheme::Ed25519, &unhex(secret)).expect("secret");
        assert_eq!(key.verifying_key().to_bytes(), unhex(public));
        let sig = key.sign(&unhex(message)).expect("sign");
        assert_eq!(sig, unhex(signature));
        let public = VerifyingKey::from_bytes(Scheme::Ed25519, &unhex(public)).expect("public");
        assert_eq!(public.verify(&unhex(message), &sig), Ok(()));
    }
}

/// RFC 6979 Appendix A.2.5: P-256, SHA-256, message "sample".
#[test]
fn ecdsa_p256_rfc6979_a_2_5_sample() {
    let x = "C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721";
    let ux = "60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6";
    // Uy = 7903FE10...D4462299 is odd, so the compressed point starts with 03.
    let r = "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716";
    let s = "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8";
    let mut expected_public = vec![0x03];
    expected_public.extend(unhex(ux));
    let expected_sig = unhex(&format!("{r}{s}"));

    let public = VerifyingKey::from_bytes(Scheme::EcdsaP256, &expected_public).expect("public");
    assert_eq!(public.verify(b"sample", &expected_sig), Ok(()));
    assert!(public.verify(b"samplf", &expected_sig).is_err());

    let mut key = SigningKey::from_secret_bytes(Scheme::EcdsaP256, &unhex(x)).expect("secret");
    assert_eq!(key.verifying_key().to_bytes(), expected_public);
    // Deterministic nonces: our signature is the published one.
    assert_eq!(key.sign(b"sample").expect("sign"), expected_sig);
}

struct HssVector {
    public_key: Vec<u8>,
    message: Vec<u8>,
    signature: Vec<u8>,
}

fn rfc8554_test_case_2() -> HssVector {
    let text = include_str!("vectors/rfc8554_appendix_f_test_case_2.txt");
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(name) = line.strip_prefix('[') {
            sections.push((name.trim_end_matches(']').to_owned(), String::new()));
        } else if let Some((_, hex)) = sections.last_mut() {
            hex.push_str(line.trim());
        }
    }
    let get = |name: &str| {
        sections
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| unhex(h))
            .expect("section present")
    };
    HssVector {
        public_key: get("public-key"),
        message: get("message"),
        signature: get("signature"),
    }
}

/// RFC 8554 Appendix F, Test Case 2, verified as HSS with L = 2: the top-level tree uses
/// exactly our parameter set (LMS_SHA256_M32_H10 / LMOTS_SHA256_N32_W4), so its signature
/// over the second-level public key goes through our `VerifyingKey`; the second level
/// (H5 / W8) is checked with `lms-signature` directly.
#[test]
fn lms_rfc8554_appendix_f_test_case_2_hss_verification() {
    use lms_signature::lms::{LmsSha256M32H5, Signature, VerifyingKey as Lms};
    use lms_signature::ots::LmsOtsSha256N32W8;
    use signature::Verifier;
    type Leaf = LmsSha256M32H5<LmsOtsSha256N32W8>;

    let v = rfc8554_test_case_2();
    // HSS public key: u32 L || top-level LMS public key (RFC 8554 §6.1).
    assert_eq!(&v.public_key[..4], &2u32.to_be_bytes());
    let top = VerifyingKey::from_bytes(Scheme::Lms, &v.public_key[4..]).expect("top-level key");

    // HSS signature: u32 Nspk || sig[0] || pub[1] || sig[1] (RFC 8554 §6.2).
    let nspk = &v.signature[..4];
    assert_eq!(nspk, &1u32.to_be_bytes());
    let top_len = Scheme::Lms.sizes().signature;
    let (sig0, rest) = v.signature[4..].split_at(top_len);
    let (pub1, sig1) = rest.split_at(56);
    assert_eq!(
        &sig0[..4],
        &3u32.to_be_bytes(),
        "the RFC signs with q = 3 at the top level"
    );

    assert_eq!(top.verify(pub1, sig0), Ok(()));
    let leaf = Lms::<Leaf>::try_from(pub1).expect("second-level key");
    let leaf_sig = Signature::<Leaf>::try_from(sig1).expect("second-level signature");
    assert!(leaf.verify(&v.message, &leaf_sig).is_ok());

    // A flipped bit anywhere in the chain breaks it.
    let mut bad = sig0.to_vec();
    bad[100] ^= 1;
    assert!(top.verify(pub1, &bad).is_err());
    let mut bad_msg = v.message.clone();
    bad_msg[0] ^= 1;
    assert!(leaf.verify(&bad_msg, &leaf_sig).is_err());
}

/// RFC 8554 Appendix F, Test Case 2, top-level private values (SEED and I) give the published
/// top-level public key: checks our secret key encoding and key generation.
#[test]
fn lms_rfc8554_appendix_f_test_case_2_key_generation() {
    let seed = unhex("558b8966c48ae9cb898b423c83443aae014a72f1b1ab5cc85cf1d892903b5439");
    let id = unhex("d08fabd4a2091ff0a8cb4ed834e74534");
    let mut state = Vec::new();
    state.extend_from_slice(&6u32.to_be_bytes());
    state.extend_from_slice(&3u32.to_be_bytes());
    state.extend_from_slice(&0u32.to_be_bytes());
    state.extend_from_slice(&id);
    state.extend_from_slice(&seed);
    let key = SigningKey::from_secret_bytes(Scheme::Lms, &state).expect("state");
    let v = rfc8554_test_case_2();
    assert_eq!(key.verifying_key().to_bytes(), v.public_key[4..]);
}
