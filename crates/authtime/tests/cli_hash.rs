//! `authtime hash` through the real binary: MD5 and K-way MD5 digests, bad input.

mod run_authtime;

use run_authtime::{assert_usage_error, authtime, temp_file};

#[test]
fn hash_md5_rfc1321_abc() {
    // RFC 1321 appendix A.5.
    let run = authtime(&["hash", "--alg", "md5"], b"abc");
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "900150983cd24fb0d6963f7d28e17f72\n", "")
    );
}

#[test]
fn hash_kway_equals_the_library() {
    for len in [0usize, 3, 55, 56, 64, 1000, 64 * 40 + 7] {
        let message: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        let file = temp_file(&format!("cli_hash_{len}.bin"), &message);
        for (name, k) in [("md5-kway4", 4), ("md5-kway16", 16)] {
            let want = format!("{}\n", hex::encode(authtime_mac::md5_kway(k, &message)));
            let run = authtime(&["hash", "--alg", name], &message);
            assert_eq!((run.code, &run.stdout), (0, &want), "{name} of {len} bytes");
            let run = authtime(
                &["hash", "--alg", name, "--in", file.to_str().expect("utf-8")],
                b"",
            );
            assert_eq!(run.stdout, want, "{name} of {len} bytes from a file");
        }
    }
}

#[test]
fn hash_bad_input_exits_2() {
    let run = authtime(
        &[
            "hash",
            "--alg",
            "md5",
            "--in",
            "/nonexistent/authtime-message",
        ],
        b"",
    );
    assert_usage_error(&run, "cannot read --in");
    let run = authtime(&["hash", "--alg", "sha1"], b"");
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("md5-kway16") && !run.stderr.contains("panicked"),
        "{run:?}"
    );
}
