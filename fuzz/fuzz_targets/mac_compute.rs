//! Any algorithm name, key, nonce and message through `new_mac`: nothing
//! panics, errors have a message, and every tag computed verifies, alone and in
//! a batch, and the batch kernels chosen without SHA-NI agree with it.

#![no_main]

use authtime_mac::{Algorithm, Isa, KeyLength, MacInput, Tag, new_mac};
use libfuzzer_sys::{arbitrary::Unstructured, fuzz_target};

fuzz_target!(|data: &[u8]| {
    let _ = check(Unstructured::new(data));
});

fn check(mut u: Unstructured<'_>) -> Result<(), libfuzzer_sys::arbitrary::Error> {
    let base = Algorithm::ALL[u.choose_index(Algorithm::ALL.len())?];
    let name = match u.int_in_range(0..=3u8)? {
        0 | 1 => base.name().to_owned(),
        2 => format!("partial:{}:{}", base.name(), u.arbitrary::<&str>()?),
        _ => u.arbitrary::<String>()?,
    };
    let key_len = if u.ratio(7, 8)? {
        match base.info().key {
            KeyLength::Exact(n) => n,
            KeyLength::Range { min, max } => u.int_in_range(min..=max.min(80))?,
        }
    } else {
        u.int_in_range(0..=80)?
    };
    let key = u.bytes(key_len)?.to_vec();
    let nonce_choice = u.int_in_range(0..=7u8)?;
    let nonce_bytes: [u8; 16] = u.arbitrary()?;
    let message = u.take_rest();

    let mac = match new_mac(&name, &key) {
        Ok(mac) => mac,
        Err(err) => {
            assert!(!err.to_string().is_empty());
            return Ok(());
        }
    };
    // What the command line accepts is what the library accepts, and more
    // (a `partial:` prefix in any case).
    let parsed = authtime::mac_name::parse_mac_name(&name).expect("the CLI parses it too");
    assert_eq!(parsed.nonce_len(), mac.nonce_len());
    assert_eq!(parsed.tag_len(), mac.tag_len());

    let nonce_len = match nonce_choice {
        0 => usize::from(nonce_bytes[0]) % 17,
        _ => mac.nonce_len(),
    };
    let nonce = &nonce_bytes[..nonce_len];
    let tag = match mac.compute(nonce, message) {
        Ok(tag) => tag,
        Err(err) => {
            assert_ne!(nonce_len, mac.nonce_len(), "valid nonce refused: {err}");
            return Ok(());
        }
    };
    assert_eq!(tag.len(), mac.tag_len());
    assert_eq!(mac.verify(nonce, message, tag.as_bytes()), Ok(()));
    assert!(mac.verify(nonce, message, &tag.as_bytes()[1..]).is_err());

    let inputs = [MacInput { nonce, message }; 5];
    let mut tags = [Tag::EMPTY; 5];
    mac.compute_many(&inputs, &mut tags)
        .expect("batch of valid inputs");
    assert!(tags.iter().all(|t| *t == tag), "batch equals single");
    let refs = [tag.as_bytes(); 5];
    let mut ok = [false; 5];
    mac.verify_many(&inputs, &refs, &mut ok)
        .expect("batch of valid inputs");
    assert_eq!(ok, [true; 5]);

    // The kernels chosen without SHA-NI (the AVX-512 lanes of HMAC-SHA224/256
    // where the CPU has AVX-512), on the same batch and on the message's
    // prefixes: mixed lengths, grouped by block count, against one at a time.
    if name == base.name() {
        let no_sha = Isa::current().restricted("no-sha").expect("a known restriction");
        let other = base.new_mac_with_isa(&key, no_sha).expect("the same key");
        other.compute_many(&inputs, &mut tags).expect("batch of valid inputs");
        assert!(tags.iter().all(|t| *t == tag), "batch without SHA-NI");
        let cuts: Vec<MacInput<'_>> = (0..=40)
            .map(|i| MacInput {
                nonce,
                message: &message[..message.len() * (i % 21) / 20],
            })
            .collect();
        let mut tags = vec![Tag::EMPTY; cuts.len()];
        other.compute_many(&cuts, &mut tags).expect("batch of valid inputs");
        for (input, got) in cuts.iter().zip(&tags) {
            assert_eq!(*got, mac.compute(nonce, input.message).expect("tag"));
        }
    }
    Ok(())
}
