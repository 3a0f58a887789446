//! The LMS state discipline: the next index is on disk before a signature is released, a
//! crash never leads to index reuse, and only one signer holds a key file.

use authtime_scratch::ScratchDir;
use authtime_sign::{KeyFileError, Scheme, SignError, SigningKey};

fn scratch_dir(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("lms-{name}"))
}

fn leaf_index(signature: &[u8]) -> u32 {
    u32::from_be_bytes(signature[..4].try_into().expect("4 bytes"))
}

#[test]
fn crash_after_signing_never_reuses_an_index() {
    let dir = scratch_dir("crash");
    let path = dir.join("lms.key");
    let mut key = SigningKey::generate_from_seed(Scheme::Lms, [9; 32]);
    let public = key.verifying_key();
    key.write_key_file(&path).expect("write");

    let first = key.sign(b"first").expect("sign");
    // The file already holds the next index when the signature is handed out.
    let on_disk =
        SigningKey::from_key_file_bytes(&std::fs::read(&path).expect("read")).expect("parse");
    assert_eq!(on_disk.next_lms_index(), Some(1));
    // "Crash": the process state is simply gone.
    drop(key);

    let mut reloaded = SigningKey::load_key_file(&path).expect("reload");
    let second = reloaded.sign(b"second").expect("sign");
    assert_eq!(leaf_index(&first), 0);
    assert_eq!(leaf_index(&second), 1);
    assert!(public.is_valid(b"first", &first));
    assert!(public.is_valid(b"second", &second));
    assert_eq!(reloaded.remaining_signatures(), Some(1022));
}

#[test]
fn a_second_signer_cannot_open_a_locked_key_file() {
    let dir = scratch_dir("lock");
    let path = dir.join("lms.key");
    let mut key = SigningKey::generate_from_seed(Scheme::Lms, [10; 32]);
    key.write_key_file(&path).expect("write");
    let err = SigningKey::load_key_file(&path).expect_err("locked");
    assert!(matches!(err, KeyFileError::Locked(_)), "{err:?}");
    drop(key);
    assert!(SigningKey::load_key_file(&path).is_ok());
}

#[test]
fn failed_persistence_releases_no_signature() {
    let dir = scratch_dir("persist");
    let path = dir.join("lms.key");
    let mut key = SigningKey::generate_from_seed(Scheme::Lms, [11; 32]);
    key.write_key_file(&path).expect("write");
    std::fs::remove_dir_all(&dir).expect("remove the directory under the signer");
    assert!(matches!(key.sign(b"m"), Err(SignError::StatePersist(_))));
    assert_eq!(key.next_lms_index(), Some(0), "index 0 was not used");
}

#[test]
fn in_memory_key_uses_a_new_index_per_signature() {
    let mut key = SigningKey::generate_from_seed(Scheme::Lms, [12; 32]);
    let public = key.verifying_key();
    let indices: Vec<u32> = (0..4)
        .map(|i| {
            let sig = key.sign(&[i]).expect("sign");
            assert!(public.is_valid(&[i], &sig));
            leaf_index(&sig)
        })
        .collect();
    assert_eq!(indices, [0, 1, 2, 3]);
    // Same message again: a fresh index, so a different signature.
    let again = key.sign(&[0]).expect("sign");
    assert_eq!(leaf_index(&again), 4);
}
