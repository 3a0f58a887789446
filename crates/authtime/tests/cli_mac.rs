//! `authtime mac list|tag|verify` through the real binary: outputs, exit codes
//! and the one-line errors for every kind of bad input.

mod run_authtime;

use run_authtime::{assert_usage_error, authtime, temp_file};

const CMAC_KEY: &str = "2b7e151628aed2a6abf7158809cf4f3c";
const CMAC_EXAMPLE_2_MSG: [u8; 16] = [
    0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96, 0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93, 0x17, 0x2a,
];
const CMAC_EXAMPLE_2_TAG: &str = "070a16b46b4d4144f79bdd9dd04a287c";

fn cmac_args<'a>(command: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["mac", command, "--alg", "aes128-cmac", "--key", CMAC_KEY];
    args.extend_from_slice(extra);
    args
}

#[test]
fn list_text_has_every_algorithm_and_the_partial_family_last() {
    let run = authtime(&["mac", "list"], b"");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1 + 14 + 1,
        "header, 14 algorithms, partial family"
    );
    for alg in authtime_mac::Algorithm::ALL {
        let info = alg.info();
        let row = lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(info.name))
            .unwrap_or_else(|| panic!("no row for {}", info.name));
        let cells: Vec<&str> = row.split_whitespace().collect();
        let nonce = match info.nonce_len {
            0 => "-".to_owned(),
            n => n.to_string(),
        };
        assert_eq!(cells[2], nonce, "{row}");
        assert_eq!(cells[3], info.tag_len.to_string(), "{row}");
        assert!(row.ends_with(info.summary), "{row}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("aes128-cmac ") && l.split_whitespace().nth(1) == Some("16"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("md5-legacy ") && l.split_whitespace().nth(1) == Some("1-32"))
    );
    assert!(
        lines[15].starts_with("partial:<inner>:<rate>"),
        "{}",
        lines[15]
    );
}

#[test]
fn list_json_has_stable_fields_for_every_algorithm_and_the_family() {
    let run = authtime(&["mac", "list", "--json"], b"");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("valid JSON");
    let entries = json.as_array().expect("an array");
    assert_eq!(entries.len(), 15);
    for entry in entries {
        let mut keys: Vec<&str> = entry
            .as_object()
            .expect("objects")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "key_max",
                "key_min",
                "kind",
                "name",
                "nonce_len",
                "summary",
                "tag_len"
            ]
        );
    }
    for alg in authtime_mac::Algorithm::ALL {
        let info = alg.info();
        let entry = entries
            .iter()
            .find(|e| e["name"] == info.name)
            .unwrap_or_else(|| panic!("no entry for {}", info.name));
        assert_eq!(entry["kind"], "algorithm");
        assert_eq!(entry["nonce_len"], info.nonce_len);
        assert_eq!(entry["tag_len"], info.tag_len);
        assert_eq!(entry["summary"], info.summary);
    }
    let cmac = entries
        .iter()
        .find(|e| e["name"] == "aes128-cmac")
        .expect("cmac");
    assert_eq!(
        (&cmac["key_min"], &cmac["key_max"]),
        (&16.into(), &16.into())
    );
    let hmac = entries
        .iter()
        .find(|e| e["name"] == "hmac-sha256")
        .expect("hmac");
    assert_eq!(
        (&hmac["key_min"], &hmac["key_max"]),
        (&1.into(), &1024.into())
    );
    let partial = &entries[14];
    assert_eq!(partial["name"], "partial:<inner>:<rate>");
    assert_eq!(partial["kind"], "family");
}

#[test]
fn cmac_rfc4493_example_2() {
    // RFC 4493 section 4, example 2 (Mlen = 128).
    let run = authtime(&cmac_args("tag", &[]), &CMAC_EXAMPLE_2_MSG);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, format!("{CMAC_EXAMPLE_2_TAG}\n"));
    assert_eq!(run.stderr, "");
}

#[test]
fn hmac_sha256_rfc4231_test_case_1() {
    // RFC 4231 section 4.2.
    let run = authtime(
        &[
            "mac",
            "tag",
            "--alg",
            "hmac-sha256",
            "--key",
            &"0b".repeat(20),
        ],
        b"Hi There",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7\n"
    );
}

#[test]
fn verify_accepts_the_right_tag_in_either_case() {
    for tag in [
        CMAC_EXAMPLE_2_TAG.to_owned(),
        CMAC_EXAMPLE_2_TAG.to_uppercase(),
    ] {
        let run = authtime(&cmac_args("verify", &["--tag", &tag]), &CMAC_EXAMPLE_2_MSG);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, "");
        assert!(!run.stderr.contains("authtime:"), "{run:?}");
    }
}

#[test]
fn verify_rejects_a_wrong_tag_or_message_with_exit_1() {
    let wrong_tag = "070a16b46b4d4144f79bdd9dd04a287d";
    let run = authtime(
        &cmac_args("verify", &["--tag", wrong_tag]),
        &CMAC_EXAMPLE_2_MSG,
    );
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
    assert_eq!(run.stderr, "authtime: tag does not match\n");
    let run = authtime(
        &cmac_args("verify", &["--tag", CMAC_EXAMPLE_2_TAG]),
        b"other",
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stderr, "authtime: tag does not match\n");
}

#[test]
fn file_and_stdin_give_the_same_tag() {
    let message: Vec<u8> = (0..=255u8).cycle().take(1500).collect();
    let file = temp_file("cli_mac_message.bin", &message);
    let file = file.to_str().expect("utf-8 path");
    // (algorithm, key, nonce, tag length)
    let cases: &[(&str, String, Option<&str>, usize)] = &[
        ("aes128-cmac", CMAC_KEY.into(), None, 16),
        ("hmac-sha1", "00".repeat(20), None, 20),
        (
            "aes128-gmac",
            CMAC_KEY.into(),
            Some("000000000000000000000001"),
            16,
        ),
        (
            "partial:hmac-sha256:0.25",
            "11".repeat(32),
            Some("0000000000000007"),
            32,
        ),
    ];
    for (alg, key, nonce, tag_len) in cases {
        let mut args = vec!["mac", "tag", "--alg", alg, "--key", key];
        if let Some(nonce) = nonce {
            args.extend(["--nonce", nonce]);
        }
        let from_stdin = authtime(&args, &message);
        let from_dash = authtime(&[&args[..], &["--in", "-"]].concat(), &message);
        let from_file = authtime(&[&args[..], &["--in", file]].concat(), b"ignored");
        assert_eq!(from_stdin.code, 0, "{from_stdin:?}");
        assert_eq!(from_stdin.stdout.len(), 2 * tag_len + 1, "{alg}");
        assert_eq!(from_stdin.stdout, from_file.stdout, "{alg}");
        assert_eq!(from_stdin.stdout, from_dash.stdout, "{alg}");

        let tag = from_stdin.stdout.trim_end();
        let mut verify = args.clone();
        verify[1] = "verify";
        verify.extend(["--tag", tag, "--in", file]);
        assert_eq!(authtime(&verify, b"").code, 0, "{alg}");
    }
}

#[test]
fn bad_inputs_exit_2_with_one_line_naming_the_problem() {
    let msg = &CMAC_EXAMPLE_2_MSG[..];
    let cases: &[(&[&str], &str)] = &[
        (
            &["mac", "tag", "--alg", "md4", "--key", CMAC_KEY],
            "--alg: unknown algorithm `md4`",
        ),
        (
            &["mac", "tag", "--alg", "md4\nx\u{1b}[2J", "--key", CMAC_KEY],
            r"--alg: unknown algorithm `md4\nx\u{1b}[2J`",
        ),
        (
            &["mac", "tag", "--alg", "partial:md4:0.5", "--key", CMAC_KEY],
            "unknown algorithm `md4`",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "partial:aes128-cmac",
                "--key",
                CMAC_KEY,
            ],
            "partial:<inner>:<rate>",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "partial:aes128-cmac:0",
                "--key",
                CMAC_KEY,
            ],
            "not in (0, 1]",
        ),
        (
            &["mac", "tag", "--alg", "aes128-cmac", "--key", "2b7e1516"],
            "--key has the wrong length: aes128-cmac needs a key of 16 bytes, got 4 bytes",
        ),
        (
            &["mac", "tag", "--alg", "aes256-cmac", "--key", CMAC_KEY],
            "--key has the wrong length",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "aes128-cmac",
                "--key",
                "2b7e151628aed2a6abf7158809cf4f3",
            ],
            "--key is not valid hex: it has an odd number of digits (31)",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "aes128-cmac",
                "--key",
                "2b7e151628aed2a6abf7158809cf4fXY",
            ],
            "--key is not valid hex: character 31 is not a hex digit",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "aes128-cmac",
                "--key",
                "2b7e1516 28aed2a6abf7158809cf4f3c",
            ],
            "--key is not valid hex: character 9",
        ),
        (
            &["mac", "tag", "--alg", "aes128-cmac", "--key", ""],
            "--key is empty",
        ),
        (
            &["mac", "tag", "--alg", "aes128-gmac", "--key", CMAC_KEY],
            "--nonce is missing: aes128-gmac needs a 12-byte nonce",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "poly1305-chacha20",
                "--key",
                &"00".repeat(32),
            ],
            "--nonce is missing: poly1305-chacha20",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "partial:aes128-cmac:0.5",
                "--key",
                CMAC_KEY,
            ],
            "--nonce is missing: partial:aes128-cmac:0.5 needs a 8-byte nonce",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "aes128-cmac",
                "--key",
                CMAC_KEY,
                "--nonce",
                "00000000",
            ],
            "--nonce is not accepted: aes128-cmac takes no nonce",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "aes128-gmac",
                "--key",
                CMAC_KEY,
                "--nonce",
                "0000",
            ],
            "--nonce has the wrong length: aes128-gmac needs a 12-byte nonce, got 2 bytes",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "aes128-gmac",
                "--key",
                CMAC_KEY,
                "--nonce",
                "00000000000000000000000g",
            ],
            "--nonce is not valid hex: character 24 ('g')",
        ),
        (
            &[
                "mac",
                "tag",
                "--alg",
                "aes128-gmac",
                "--key",
                CMAC_KEY,
                "--nonce",
                "0x000000000000000000000000",
            ],
            "--nonce is not valid hex: write the digits without a 0x prefix",
        ),
        (
            &[
                "mac",
                "verify",
                "--alg",
                "aes128-cmac",
                "--key",
                CMAC_KEY,
                "--tag",
                "070a16b4",
            ],
            "--tag has the wrong length: tag must be 16 bytes, got 4",
        ),
        (
            &[
                "mac",
                "verify",
                "--alg",
                "aes128-cmac",
                "--key",
                CMAC_KEY,
                "--tag",
                "070a16b46b4d4144f79bdd9dd04a287",
            ],
            "--tag is not valid hex: it has an odd number of digits (31)",
        ),
        (
            &[
                "mac",
                "verify",
                "--alg",
                "aes128-cmac",
                "--key",
                CMAC_KEY,
                "--tag",
                "070a16b4-b4d4144f79bdd9dd04a287c",
            ],
            "--tag is not valid hex: character 9 ('-')",
        ),
        (
            &[
                "mac",
                "verify",
                "--alg",
                "aes128-cmac",
                "--key",
                CMAC_KEY,
                "--tag",
                "",
                "--in",
                "/nonexistent/message",
            ],
            "--tag is empty",
        ),
    ];
    for (args, want) in cases {
        let run = authtime(args, msg);
        assert_usage_error(&run, want);
    }
}

#[test]
fn keys_are_never_echoed() {
    // 15 bytes: too short for every algorithm below but hmac-sha256.
    let secret = "5ec7e75ec7e75ec7e75ec7e75ec7e7";
    for key in [
        format!("{secret}zz"),
        format!("{secret}0"),
        format!("0x{secret}"),
        secret.to_owned(),
        format!("{secret} 00"),
    ] {
        for alg in [
            "aes128-cmac",
            "hmac-sha256",
            "partial:aes128-gmac:0.5",
            "md4",
            &key,
        ] {
            let run = authtime(&["mac", "tag", "--alg", alg, "--key", &key], b"");
            let valid = alg == "hmac-sha256" && key == secret;
            assert_eq!(run.code, if valid { 0 } else { 2 }, "{run:?}");
            assert!(!run.stderr.contains("5ec7e7"), "{run:?}");
            assert!(!run.stdout.contains("5ec7e7"), "{run:?}");
        }
    }
}

#[test]
fn unreadable_message_file_exits_2_and_names_the_file() {
    let run = authtime(
        &cmac_args("tag", &["--in", "/nonexistent/authtime-message"]),
        b"",
    );
    assert_usage_error(&run, "cannot read --in \"/nonexistent/authtime-message\": ");
    let dir = env!("CARGO_TARGET_TMPDIR");
    let run = authtime(
        &cmac_args("verify", &["--tag", CMAC_EXAMPLE_2_TAG, "--in", dir]),
        b"",
    );
    assert_usage_error(&run, "cannot read --in");
}

#[test]
fn clap_usage_errors_exit_2_without_panicking() {
    for args in [
        &["mac", "tag", "--alg", "aes128-cmac"][..],
        &["mac", "tag", "--key", CMAC_KEY],
        &["mac", "verify", "--alg", "aes128-cmac", "--key", CMAC_KEY],
        &[
            "mac",
            "tag",
            "--alg",
            "aes128-cmac",
            "--key",
            CMAC_KEY,
            "--bogus",
        ],
        &[
            "mac",
            "tag",
            "--alg",
            "aes128-cmac",
            "--key",
            CMAC_KEY,
            "--key",
            CMAC_KEY,
        ],
        &["mac", "frobnicate"],
        &["mac"],
        &[],
    ] {
        let run = authtime(args, b"");
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(!run.stderr.contains("panicked"), "{run:?}");
    }
}

#[test]
fn version_and_help_exit_0() {
    let run = authtime(&["--version"], b"");
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout,
        format!("authtime {}\n", env!("CARGO_PKG_VERSION"))
    );
    for (args, want) in [
        (&["--help"][..], "Examples:"),
        (&["mac", "--help"], "verify"),
        (&["mac", "list", "--help"], "authtime mac list --json"),
        (&["mac", "tag", "--help"], "authtime mac tag --alg"),
        (&["mac", "verify", "--help"], "authtime mac verify --alg"),
        (&["hash", "--help"], "authtime hash --alg md5"),
    ] {
        let run = authtime(args, b"");
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert!(run.stdout.contains(want), "{args:?}: {}", run.stdout);
    }
}
