//! `authtime config check` on every file of `examples/` (as CI must) and on
//! broken files, and `authtime keygen`'s files.

mod ntp_support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;

use authtime_keys::{KeyFileFormat, KeyType, read_key_file};
use ntp_support::{TempDir, authtime, text, text_of};

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

#[test]
fn every_example_file_is_valid() {
    let mut checked = 0;
    for entry in std::fs::read_dir(examples_dir()).expect("examples/") {
        let path = entry.expect("entry").path();
        let shown = path.display().to_string();
        match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => {
                let out = authtime(&["config", "check", &shown]);
                assert!(out.status.success(), "{shown}: {}", text_of(&out));
                assert_eq!(text(&out.stdout), "ok\n", "{shown}");
            }
            Some("keys") => {
                let parsed = read_key_file(&path, None).unwrap_or_else(|e| panic!("{e}"));
                assert!(!parsed.keys.is_empty(), "{shown}");
                let text = std::fs::read_to_string(&path).expect("read");
                assert!(
                    text.contains("EXAMPLE KEYS"),
                    "{shown} must say its keys are examples"
                );
            }
            Some("pem") => {
                let text = std::fs::read_to_string(&path).expect("read");
                assert!(
                    text.starts_with("EXAMPLE ONLY"),
                    "{shown} must say it is an example"
                );
                assert!(text.contains("-----BEGIN "), "{shown} is PEM");
            }
            _ => panic!("{shown}: no check for this kind of example; add one here"),
        }
        checked += 1;
    }
    assert!(checked >= 2, "examples/authtime.toml and examples/ntp.keys");
}

#[test]
fn config_check_names_file_line_and_column_of_each_problem() {
    let dir = TempDir::new("config-check");
    let config = dir.path("bad.toml");
    std::fs::write(
        &config,
        "[ntp]\nlisten = [\"127.0.0.1:11123\", \"localhost\"]\nstratum = 0\n\
         [access]\nallow = [\"10.1.2.3/8\"]\n",
    )
    .expect("write");
    let shown = config.display().to_string();
    let out = authtime(&["config", "check", &shown]);
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    assert_eq!(
        text(&out.stdout)
            .lines()
            .map(|l| l.split(": ").next().unwrap_or_default().to_owned())
            .collect::<Vec<_>>(),
        [
            format!("{shown}:2:30"),
            format!("{shown}:3:11"),
            format!("{shown}:5:10")
        ]
    );
    assert_eq!(
        text(&out.stderr),
        format!("authtime: {shown} is not valid: 3 problems\n")
    );

    std::fs::write(&config, "[ntp]\nlisten = [\"127.0.0.1:1\"]\nworkrs = 2\n").expect("write");
    let out = authtime(&["config", "check", &shown]);
    assert_eq!(out.status.code(), Some(2));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with(&format!("{shown}:3:1: unknown field `workrs`")),
        "{stdout}"
    );

    std::fs::write(
        &config,
        "[ntp]\nlisten = [\"127.0.0.1:1\"]\nkeys = \"missing.keys\"\n",
    )
    .expect("write");
    let out = authtime(&["config", "check", &shown]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stdout).contains(":3:8: ntp.keys: "),
        "{}",
        text_of(&out)
    );
}

#[test]
fn config_check_reads_pool_token_files_and_backend_ca_files_as_the_server_would() {
    let dir = TempDir::new("config-check-pool");
    let cert = authtime(&[
        "nts",
        "cert",
        "--out-dir",
        &dir.path("").display().to_string(),
        "--prefix",
        "ke",
        "--ip",
        "127.0.0.1",
    ]);
    assert!(cert.status.success(), "{}", text_of(&cert));
    let ke = "[nts-ke]\nlisten = [\"127.0.0.1:14460\"]\ncertificate-chain = \"ke-chain.pem\"\n\
              private-key = \"ke-key.pem\"\n";
    let token = dir.path("pool.token");
    std::fs::write(&token, "a-pool-token-never-printed\n").expect("write");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).expect("chmod");

    // A member whose token file others can read: named, with its mode, never its token.
    let member = dir.path("member.toml");
    std::fs::write(
        &member,
        format!("{ke}pool-token-files = [\"pool.token\"]\n"),
    )
    .expect("write");
    let out = authtime(&["config", "check", &member.display().to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("nts-ke.pool-token-files[0]: ")
            && stdout.contains("0644")
            && stdout.contains("chmod 600"),
        "{stdout}"
    );
    assert!(!text_of(&out).contains("a-pool-token-never-printed"));

    // A load balancer: the same for its backend's token, and a CA file that is not there.
    let kelb = dir.path("kelb.toml");
    std::fs::write(
        &kelb,
        format!(
            "{ke}[nts-ke-balancer]\n[[nts-ke-balancer.backend]]\nname = \"127.0.0.1\"\n\
             address = \"127.0.0.1:14461\"\ntoken-file = \"pool.token\"\nca-file = \"missing-ca.pem\"\n"
        ),
    )
    .expect("write");
    let out = authtime(&["config", "check", &kelb.display().to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("nts-ke-balancer.backend[0].token-file: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("nts-ke-balancer.backend[0].ca-file: "),
        "{stdout}"
    );
    assert!(!text_of(&out).contains("a-pool-token-never-printed"));

    // Both fixed: ok.
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::copy(dir.path("ke-ca.pem"), dir.path("missing-ca.pem")).expect("copy");
    for config in [&member, &kelb] {
        let out = authtime(&["config", "check", &config.display().to_string()]);
        assert!(out.status.success(), "{}", text_of(&out));
        assert_eq!(text(&out.stdout), "ok\n");
    }
}

#[test]
fn keygen_writes_private_files_that_parse_and_never_overwrites() {
    let dir = TempDir::new("keygen");
    for (format, key_type, want) in [
        ("chrony", "aes128", KeyType::Aes128Cmac),
        ("chrony", "sha256", KeyType::Sha256),
        ("ntpd", "md5", KeyType::Md5),
        ("ntpd", "sha1", KeyType::Sha1),
        ("ntpd", "aes256", KeyType::Aes256Cmac),
    ] {
        let path = dir.path(&format!("{format}-{key_type}.keys"));
        let shown = path.display().to_string();
        let args = [
            "keygen",
            "--format",
            format,
            "--type",
            key_type,
            "--count",
            "3",
            "--first-id",
            "10",
            "--out",
            &shown,
        ];
        let out = authtime(&args);
        assert!(out.status.success(), "{}", text_of(&out));
        assert_eq!(text(&out.stdout), "");
        let mode = std::fs::metadata(&path).expect("file").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{shown}");
        let parsed = read_key_file(&path, None).expect("parses");
        let format_is = KeyFileFormat::from_name(format);
        assert_eq!(Some(parsed.format), format_is, "{shown}");
        let ids: Vec<u32> = parsed.keys.iter().map(|k| k.id()).collect();
        assert_eq!(ids, [10, 11, 12]);
        assert!(parsed.keys.iter().all(|k| k.key_type() == want));
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);

        let before = std::fs::read(&path).expect("read");
        let again = authtime(&args);
        assert_eq!(again.status.code(), Some(2));
        assert!(
            text(&again.stderr).contains("file exists"),
            "{}",
            text_of(&again)
        );
        assert_eq!(
            std::fs::read(&path).expect("read"),
            before,
            "not overwritten"
        );
    }
    let out = authtime(&[
        "keygen", "--format", "ntpd", "--type", "aes128", "--count", "2",
    ]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.contains(" AES128CMAC "))
            .count(),
        2,
        "{stdout}"
    );
    let bad = authtime(&["keygen", "--format", "ntpd", "--type", "md4"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("unknown key type `md4`"));
}
