//! Cross-checks every algorithm in [`Algorithm::ALL`] against an independent
//! implementation, the OpenSSL 3 command line (and `b3sum` for BLAKE3, which
//! OpenSSL does not implement), on pseudo-random keys and messages of many lengths.
//!
//! The tools are required: when `openssl` or `b3sum` is missing the test fails
//! and says to run `./test.sh`, which installs them. A new algorithm without a
//! reference mapping in [`reference_for`] fails the test too.
//!
//! Cost: one process per case (two for Poly1305-ChaCha20), a few milliseconds
//! each; about 400 processes in total.

use std::{
    fs,
    io::Write as _,
    path::PathBuf,
    process::{Command, Stdio},
    sync::atomic::{AtomicU64, Ordering},
};

use authtime_mac::{Algorithm, KeyLength};

/// Message lengths around the block sizes (16 for AES, 64 for the hashes, 55/56
/// for MD and SHA padding), NTP packet sizes (48, 68) and a full MTU.
const FIXED_LENGTHS: [usize; 17] = [
    0, 1, 15, 16, 17, 47, 48, 55, 56, 63, 64, 65, 68, 127, 128, 1500, 2000,
];
/// How many more message lengths to draw at random from `0..=2000`.
const RANDOM_LENGTHS: usize = 10;
/// Key lengths tried for algorithms that accept a range (those in range, plus
/// the range's ends): short, block-sized, and longer than an HMAC block.
const KEY_LENGTHS: [usize; 9] = [1, 16, 20, 32, 64, 65, 100, 131, 1024];

/// SplitMix64 (Steele, Lea and Flood 2014): a seeded stream, so a failure is
/// reproducible.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..n`, for small `n` (the modulo bias does not matter here).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// How the reference tools compute an algorithm's tag.
#[derive(Debug, Clone, Copy)]
enum Reference {
    /// `openssl dgst -<digest>` over key ‖ message.
    Digest(&'static str),
    /// `openssl mac -digest <digest> HMAC`, truncated to the tag length.
    Hmac(&'static str),
    /// `openssl mac -cipher <cipher> CMAC`.
    Cmac(&'static str),
    /// `openssl mac -cipher AES-128-GCM GMAC`.
    Gmac,
    /// The one-time key from `openssl enc -chacha20` over 32 zero bytes with
    /// counter 0, then `openssl mac Poly1305` (RFC 8439 section 2.6).
    Poly1305ChaCha20,
    /// `openssl mac -macopt size:8 SIPHASH`, whose output bytes are the 64-bit
    /// result in little-endian order, like the library's tag.
    SipHash24,
    /// `b3sum --keyed`: BLAKE3 is not in OpenSSL.
    Blake3Keyed,
}

fn reference_for(algorithm: Algorithm) -> Reference {
    match algorithm {
        Algorithm::Md5Legacy => Reference::Digest("-md5"),
        Algorithm::Sha1Legacy => Reference::Digest("-sha1"),
        Algorithm::HmacMd5 => Reference::Hmac("MD5"),
        Algorithm::HmacSha1 => Reference::Hmac("SHA1"),
        Algorithm::HmacSha224 | Algorithm::HmacSha224_128 => Reference::Hmac("SHA224"),
        Algorithm::HmacSha256 | Algorithm::HmacSha256_128 => Reference::Hmac("SHA256"),
        Algorithm::Aes128Cmac => Reference::Cmac("AES-128-CBC"),
        Algorithm::Aes256Cmac => Reference::Cmac("AES-256-CBC"),
        Algorithm::Aes128Gmac => Reference::Gmac,
        Algorithm::Poly1305ChaCha20 => Reference::Poly1305ChaCha20,
        Algorithm::SipHash24 => Reference::SipHash24,
        Algorithm::Blake3Keyed => Reference::Blake3Keyed,
        other => panic!(
            "no reference-tool cross-check for `{other}`: add one to `reference_for` in \
             crates/authtime-mac/tests/openssl_crosscheck.rs"
        ),
    }
}

/// A file in the system temp directory, removed on drop (also when a test fails).
struct TempFile(PathBuf);

impl TempFile {
    fn with_contents(parts: &[&[u8]]) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "authtime-mac-crosscheck-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::write(&path, parts.concat()).expect("write temp file");
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("temp dir path is UTF-8")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Runs `program` with `args`, feeding `stdin`, and returns its standard output.
fn run(program: &str, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run `{program}` ({e}): run ./test.sh, which installs it")
        });
    let mut input = child.stdin.take().expect("piped stdin");
    input.write_all(stdin).expect("write stdin");
    drop(input);
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "`{program} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Fails, with the fix, when a reference tool is missing or too old.
fn require_tools() {
    let version = run("openssl", &["version"], &[]);
    assert!(
        version.starts_with(b"OpenSSL 3"),
        "OpenSSL 3 is needed for `openssl mac`, found {}: run ./test.sh",
        String::from_utf8_lossy(&version).trim()
    );
    let macs =
        String::from_utf8_lossy(&run("openssl", &["list", "-mac-algorithms"], &[])).to_uppercase();
    for needed in ["CMAC", "GMAC", "HMAC", "SIPHASH", "POLY1305"] {
        assert!(macs.contains(needed), "`openssl` lacks the {needed} MAC");
    }
    run("b3sum", &["--version"], &[]);
}

/// `openssl mac <options> -binary -in <file> <name>`; the MAC name must come last.
fn openssl_mac(options: &[&str], file: &str, name: &str) -> Vec<u8> {
    let mut args = vec!["mac"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["-binary", "-in", file, name]);
    run("openssl", &args, &[])
}

/// The tag of `message` under `key` and `nonce` according to the reference tools.
fn reference_tag(reference: Reference, key: &[u8], nonce: &[u8], message: &[u8]) -> Vec<u8> {
    let hexkey = format!("hexkey:{}", hex::encode(key));
    if let Reference::Digest(digest) = reference {
        let input = TempFile::with_contents(&[key, message]);
        return run("openssl", &["dgst", digest, "-binary", input.path()], &[]);
    }
    let input = TempFile::with_contents(&[message]);
    let file = input.path();
    match reference {
        Reference::Digest(_) => unreachable!("handled above"),
        Reference::Hmac(digest) => {
            openssl_mac(&["-digest", digest, "-macopt", &hexkey], file, "HMAC")
        }
        Reference::Cmac(cipher) => {
            openssl_mac(&["-cipher", cipher, "-macopt", &hexkey], file, "CMAC")
        }
        Reference::Gmac => {
            let hexiv = format!("hexiv:{}", hex::encode(nonce));
            let options = [
                "-cipher",
                "AES-128-GCM",
                "-macopt",
                &hexkey,
                "-macopt",
                &hexiv,
            ];
            openssl_mac(&options, file, "GMAC")
        }
        Reference::Poly1305ChaCha20 => {
            // OpenSSL's ChaCha20 IV is the 32-bit little-endian block counter
            // followed by the 96-bit nonce; counter 0 gives the one-time key.
            let iv = format!("00000000{}", hex::encode(nonce));
            let otk = run(
                "openssl",
                &["enc", "-chacha20", "-K", &hex::encode(key), "-iv", &iv],
                &[0; 32],
            );
            assert_eq!(otk.len(), 32, "one-time key from openssl enc");
            let otk = format!("hexkey:{}", hex::encode(otk));
            openssl_mac(&["-macopt", &otk], file, "POLY1305")
        }
        Reference::SipHash24 => {
            openssl_mac(&["-macopt", &hexkey, "-macopt", "size:8"], file, "SIPHASH")
        }
        Reference::Blake3Keyed => run("b3sum", &["--keyed", "--raw", file], key),
    }
}

/// The key lengths to try for an algorithm: its exact length, or the
/// [`KEY_LENGTHS`] in its range plus the range's ends.
fn key_lengths(rule: KeyLength) -> Vec<usize> {
    let mut lengths = match rule {
        KeyLength::Exact(n) => vec![n],
        KeyLength::Range { min, max } => {
            let mut v: Vec<usize> = KEY_LENGTHS
                .iter()
                .copied()
                .filter(|&n| rule.accepts(n))
                .collect();
            v.extend([min, max]);
            v
        }
    };
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

#[test]
fn every_algorithm_matches_the_reference_tools() {
    require_tools();
    let mut rng = SplitMix64(0x6175_7468_7469_6d65);
    let mut lengths = FIXED_LENGTHS.to_vec();
    lengths.extend((0..RANDOM_LENGTHS).map(|_| rng.below(2001)));
    let mut cases = 0;
    for algorithm in Algorithm::ALL {
        let reference = reference_for(algorithm);
        let info = algorithm.info();
        let key_lens = key_lengths(info.key);
        // More cases than key lengths, so every key length is used; the offset
        // pairs each key length with different message lengths per algorithm.
        assert!(lengths.len() >= key_lens.len());
        let offset = rng.below(key_lens.len());
        for (i, &len) in lengths.iter().enumerate() {
            let key = rng.bytes(key_lens[(i + offset) % key_lens.len()]);
            let nonce = rng.bytes(info.nonce_len);
            let message = rng.bytes(len);
            let ours = algorithm
                .new_mac(&key)
                .expect("key length accepted")
                .compute(&nonce, &message)
                .expect("tag");
            let mut theirs = reference_tag(reference, &key, &nonce, &message);
            // RFC 2104 section 5: the truncated HMACs keep the leftmost bytes.
            if matches!(reference, Reference::Hmac(_)) {
                theirs.truncate(info.tag_len);
            }
            assert_eq!(
                hex::encode(ours.as_bytes()),
                hex::encode(&theirs),
                "{algorithm} ({reference:?}): key {} ({} bytes), nonce {}, message of {len} bytes",
                hex::encode(&key),
                key.len(),
                hex::encode(&nonce),
            );
            cases += 1;
        }
    }
    assert_eq!(cases, Algorithm::ALL.len() * lengths.len());
}

#[test]
fn key_lengths_cover_the_range_ends() {
    assert_eq!(
        key_lengths(KeyLength::Range { min: 1, max: 32 }),
        [1, 16, 20, 32]
    );
    assert_eq!(key_lengths(KeyLength::Exact(16)), [16]);
    assert_eq!(
        key_lengths(KeyLength::Range { min: 1, max: 1024 }),
        KEY_LENGTHS
    );
}
