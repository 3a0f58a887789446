//! Entry points for the fuzz targets in `fuzz/`: each takes arbitrary bytes and
//! panics only when an invariant of the key-file code breaks.

use crate::{KeyFileFormat, KeySet, write_key_file};

/// Parses `data` as a key file in both formats and the detected one. Whatever
/// parses must set up as a [`KeySet`], and when it can be written back in its
/// format, read back to the same keys; no error message may contain a long
/// word of the input (key material is never echoed).
pub fn parse_key_file(data: &[u8]) {
    for format in [None, Some(KeyFileFormat::Ntpd), Some(KeyFileFormat::Chrony)] {
        match crate::parse_key_file("fuzz.keys", data, format) {
            Ok(parsed) => {
                KeySet::from_parsed("fuzz.keys", &parsed).expect("parsed keys set up");
                let Ok(text) = write_key_file(parsed.format, &parsed.keys) else {
                    continue;
                };
                let again = crate::parse_key_file("again", text.as_bytes(), Some(parsed.format))
                    .expect("written file parses");
                assert_eq!(again.keys.len(), parsed.keys.len());
                for (a, b) in parsed.keys.iter().zip(&again.keys) {
                    assert_eq!((a.id(), a.key_type()), (b.id(), b.key_type()));
                    assert_eq!(a.secret().expose(), b.secret().expose());
                }
            }
            Err(e) => {
                let shown = e.to_string();
                for word in data.split(u8::is_ascii_whitespace) {
                    if word.len() >= 16
                        && let Ok(word) = core::str::from_utf8(word)
                    {
                        assert!(!shown.contains(word), "error echoes input: {shown}");
                    }
                }
            }
        }
    }
}

/// Parses `data` as a key-encryption key file: a key or an error, never a
/// panic, and no error that repeats a long word of the input.
pub fn kek_file_parsing(data: &[u8]) {
    match crate::store::KeyEncryptionKey::parse(data) {
        Ok(kek) => {
            let again = crate::store::KeyEncryptionKey::parse(kek.to_file_text().as_bytes())
                .expect("written file parses");
            assert_eq!(again.id(), kek.id());
        }
        Err(e) => {
            let shown = e.to_string();
            for word in data.split(u8::is_ascii_whitespace) {
                // The expected first line is quoted in the error on purpose.
                if word.len() >= 16
                    && let Ok(word) = core::str::from_utf8(word)
                    && !crate::store::KEK_FILE_HEADER.contains(word)
                {
                    assert!(!shown.contains(word), "error echoes input: {shown}");
                }
            }
        }
    }
}

/// Opens `data` as a sealed master-key blob under two fixed keys; whatever
/// opens must seal again to a blob that opens to the same plaintext, and a
/// blob sealed here must open.
pub fn sealed_blob_parsing(data: &[u8]) {
    use crate::store::{KeyEncryptionKey, open_blob, seal_blob, sealed_header};
    let keks = [
        KeyEncryptionKey::from_bytes([0x11; 32]),
        KeyEncryptionKey::from_bytes([0x22; 32]),
    ];
    let _ = sealed_header(data);
    if let Ok((header, plain)) = open_blob(&keks, "fuzz", data) {
        let again = seal_blob(&keks[0], "fuzz", header.version, [0; 12], &plain);
        let (_, reopened) = open_blob(&keks, "fuzz", &again).expect("resealed blob opens");
        assert_eq!(&reopened[..], &plain[..]);
    }
    // The input as a plaintext: sealing always round-trips.
    let version = data.len() as u64;
    let sealed = seal_blob(&keks[1], "fuzz", version, [7; 12], data);
    let (header, plain) = open_blob(&keks, "fuzz", &sealed).expect("sealed blob opens");
    assert_eq!((header.version, &plain[..]), (version, data));
}

/// Parses `data` as a Redis store URL, alone and with a known password
/// spliced in: no panic, a parsed URL names at least one node and a key, and
/// no error shows the password. Reads no file (the CA file is read only when
/// the store is built).
pub fn store_url_parsing(data: &[u8]) {
    use crate::store::redis_url::parse_redis_url;
    const SECRET: &str = "Fz9pw";
    let Ok(text) = core::str::from_utf8(data) else {
        return;
    };
    let bad = |why: &str| crate::store::StoreError::BadLocation(why.to_owned());
    if let Ok(url) = parse_redis_url(text, "dflt", bad) {
        assert!(!url.nodes.is_empty() && !url.key.is_empty());
        assert!(url.master.as_ref().is_none_or(|m| !m.is_empty()));
    }
    for scheme in ["redis", "rediss", "redis+sentinel", "rediss+sentinel"] {
        let url = format!("{scheme}://user:{SECRET}@{text}");
        if let Err(e) = crate::store::redis_url::parse_redacted(&url) {
            assert!(!e.to_string().contains(SECRET), "{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_accepts_real_and_random_files() {
        parse_key_file(b"1 MD5 HEX:00112233445566778899AABBCCDDEEFF\n2 AES128 HEX:00");
        parse_key_file(b"1 AES 00112233445566778899aabbccddeeff\n# c\n2 M abc");
        parse_key_file(b"1 MD5 0123456789abcdefXYZ0123456789");
        // Found by the CI fuzz step: an overlong key id was echoed in full.
        parse_key_file(b"111111111111111111 SHA1 F6D\n");
        let kek = format!(
            "{}\n# id\n{}\n",
            crate::store::KEK_FILE_HEADER,
            "ab".repeat(32)
        );
        kek_file_parsing(kek.as_bytes());
        let blob = crate::store::seal_blob(
            &crate::store::KeyEncryptionKey::from_bytes([0x11; 32]),
            "fuzz",
            9,
            [1; 12],
            b"ATNK ring",
        );
        sealed_blob_parsing(&blob);
        store_url_parsing(b"127.0.0.1:6379/2?key=k&ca=/ca.pem");
        store_url_parsing(b"a,b:1/m/3?key=k");
        let mut x = 0x1234_5678_9abc_def1_u64;
        let alphabet = b"0123456789 MD5SHA1AES128256HEX:ASCII:#\n\tabcdefxyz!%;";
        for _ in 0..5_000 {
            let text: Vec<u8> = (0..80)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            parse_key_file(&text);
            kek_file_parsing(&text);
            sealed_blob_parsing(&text);
        }
    }
}
