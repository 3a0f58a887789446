//! Every scheme: sign/verify round trip, tampering rejected, wrong-scheme signatures rejected,
//! byte and file encodings round trip.

use authtime_scratch::ScratchDir;
use authtime_sign::{KeyDecodeError, Scheme, SigningKey, VerifyError, VerifyingKey};

/// The size of a TESLA sync response (RFC 4082 §3.3.2 as authtime encodes it).
const MESSAGE: [u8; 113] = [0x42; 113];

fn key(scheme: Scheme) -> SigningKey {
    SigningKey::generate_from_seed(scheme, [scheme.id() as u8; 32])
}

fn flip(bytes: &[u8], index: usize) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[index] ^= 0x01;
    out
}

#[test]
fn sign_verify_and_tampering_per_scheme() {
    for scheme in Scheme::ALL {
        let mut signer = key(scheme);
        let public = signer.verifying_key();
        assert_eq!(public.scheme(), scheme);
        let sig = signer.sign(&MESSAGE).expect("sign");
        assert_eq!(sig.len(), scheme.sizes().signature, "{scheme}");
        assert_eq!(
            public.to_bytes().len(),
            scheme.sizes().public_key,
            "{scheme}"
        );
        assert_eq!(
            signer.to_secret_bytes().len(),
            scheme.sizes().secret_key,
            "{scheme}"
        );
        assert_eq!(public.verify(&MESSAGE, &sig), Ok(()), "{scheme}");
        assert!(public.is_valid(&MESSAGE, &sig));

        // A flipped bit in the message, at both ends and in the middle of the signature.
        assert!(
            public.verify(&flip(&MESSAGE, 56), &sig).is_err(),
            "{scheme} message"
        );
        for index in [0, sig.len() / 2, sig.len() - 1] {
            assert!(
                public.verify(&MESSAGE, &flip(&sig, index)).is_err(),
                "{scheme} sig[{index}]"
            );
        }
        // A flipped bit in the public key: either it no longer decodes or it rejects.
        let pk = public.to_bytes();
        for index in [pk.len() / 2, pk.len() - 1] {
            if let Ok(other) = VerifyingKey::from_bytes(scheme, &flip(&pk, index)) {
                assert!(
                    other.verify(&MESSAGE, &sig).is_err(),
                    "{scheme} pk[{index}]"
                );
            }
        }
        // Truncated and extended signatures.
        assert!(matches!(
            public.verify(&MESSAGE, &sig[..sig.len() - 1]),
            Err(VerifyError::WrongLength { .. })
        ));
        let mut longer = sig.clone();
        longer.push(0);
        assert!(public.verify(&MESSAGE, &longer).is_err());
        assert!(public.verify(&MESSAGE, &[]).is_err());
    }
}

#[test]
fn signatures_of_one_scheme_never_verify_under_another() {
    let mut signatures = Vec::new();
    let mut publics = Vec::new();
    for scheme in Scheme::ALL {
        let mut signer = key(scheme);
        signatures.push((scheme, signer.sign(&MESSAGE).expect("sign")));
        publics.push(signer.verifying_key());
    }
    for (scheme, sig) in &signatures {
        for public in &publics {
            if public.scheme() != *scheme {
                assert!(
                    public.verify(&MESSAGE, sig).is_err(),
                    "{scheme} sig under {}",
                    public.scheme()
                );
            }
        }
    }
    // Ed25519 and P-256 signatures are both 64 bytes: rejected by the math, not the length.
    let ed = &signatures[0].1;
    assert_eq!(
        publics[1]
            .verify(&MESSAGE, ed)
            .err()
            .map(|e| matches!(e, VerifyError::WrongLength { .. })),
        Some(false)
    );
}

#[test]
fn key_encodings_round_trip() {
    for scheme in Scheme::ALL {
        let signer = key(scheme);
        let public = signer.verifying_key();
        assert_eq!(
            VerifyingKey::from_bytes(scheme, &public.to_bytes()),
            Ok(public.clone())
        );
        assert_eq!(
            VerifyingKey::from_tagged_bytes(&public.to_tagged_bytes()),
            Ok(public.clone())
        );
        let text = public.to_key_file_string();
        assert!(text.starts_with(&format!("authtime-sign v1 public {}\n", scheme.name())));
        assert_eq!(
            VerifyingKey::from_key_file_bytes(text.as_bytes()).expect("public file"),
            public
        );

        let secret = signer.to_secret_bytes();
        let again = SigningKey::from_secret_bytes(scheme, &secret).expect("secret bytes");
        assert_eq!(again.verifying_key(), public, "{scheme}");
        let file = signer.to_key_file_string();
        let again = SigningKey::from_key_file_bytes(file.as_bytes()).expect("secret file");
        assert_eq!(again.verifying_key(), public, "{scheme}");
        // Secret keys never show up in Debug.
        let debug = format!("{signer:?}");
        assert!(
            !debug.contains(&hex::encode(&secret[..8])),
            "{scheme}: {debug}"
        );

        // Wrong lengths are reported as such.
        assert_eq!(
            VerifyingKey::from_bytes(scheme, &public.to_bytes()[1..]),
            Err(KeyDecodeError::WrongLength {
                expected: scheme.sizes().public_key,
                actual: scheme.sizes().public_key - 1
            })
        );
        assert!(SigningKey::from_secret_bytes(scheme, &secret[1..]).is_err());
    }
    assert_eq!(
        VerifyingKey::from_tagged_bytes(&[0xff, 0xff, 0]),
        Err(KeyDecodeError::UnknownSchemeId(0xffff))
    );
}

#[test]
fn invalid_key_material_is_rejected() {
    // P-256: zero scalar, and an x coordinate that is not on the curve.
    assert_eq!(
        SigningKey::from_secret_bytes(Scheme::EcdsaP256, &[0; 32]).err(),
        Some(KeyDecodeError::Invalid)
    );
    let mut x_too_large = [0xffu8; 33]; // x >= p
    x_too_large[0] = 0x02;
    assert!(VerifyingKey::from_bytes(Scheme::EcdsaP256, &x_too_large).is_err());
    let mut bad_tag = [0u8; 33];
    bad_tag[0] = 0x05;
    assert!(VerifyingKey::from_bytes(Scheme::EcdsaP256, &bad_tag).is_err());
    // SLH-DSA: a public half that does not match the seeds.
    let signer = key(Scheme::SlhDsaSha2_128s);
    let secret = signer.to_secret_bytes();
    let mut corrupted = secret.to_vec();
    corrupted[63] ^= 1;
    assert_eq!(
        SigningKey::from_secret_bytes(Scheme::SlhDsaSha2_128s, &corrupted).err(),
        Some(KeyDecodeError::Invalid)
    );
}

#[test]
fn key_files_on_disk() {
    let dir = ScratchDir::new("files");
    let mut signer = key(Scheme::Ed25519);
    let secret_path = dir.join("ed25519.key");
    let public_path = dir.join("ed25519.pub");
    signer.write_key_file(&secret_path).expect("write secret");
    signer
        .verifying_key()
        .write_key_file(&public_path)
        .expect("write public");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&secret_path)
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let mut loaded = SigningKey::load_key_file(&secret_path).expect("load secret");
    let public = VerifyingKey::load_key_file(&public_path).expect("load public");
    let sig = loaded.sign(&MESSAGE).expect("sign");
    assert!(public.is_valid(&MESSAGE, &sig));
    // Kind mix-ups and missing files fail with clear errors.
    let err = SigningKey::load_key_file(&public_path).expect_err("public is not secret");
    assert!(
        err.to_string().contains("expected a secret key file"),
        "{err}"
    );
    assert!(VerifyingKey::load_key_file(&secret_path).is_err());
    let err = VerifyingKey::load_key_file(&dir.join("missing")).expect_err("missing file");
    assert!(err.to_string().contains("missing"), "{err}");
}
