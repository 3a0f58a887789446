//! The `authtime-lab` binary's contract: help with examples, exit code 2 and
//! one `authtime-lab: ` line for bad usage and bad input, and a short
//! `bench mac` whose JSON has the rows asked for.

use std::process::{Command, Output, Stdio};

fn authtime_lab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_authtime-lab"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run authtime-lab")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_the_three_commands_with_examples() {
    let out = authtime_lab(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for needle in [
        "run",
        "bench",
        "load",
        "authtime-lab run --quick --out lab-out",
        "Exit codes: 0 success, 2",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
    for (args, example) in [
        (
            &["run", "--help"][..],
            "authtime-lab run --only mac --out lab-out",
        ),
        (
            &["bench", "mac", "--help"],
            "authtime-lab bench mac --size 48",
        ),
        (&["load", "ntp", "--help"], "authtime-lab load ntp --target"),
        (
            &["load", "nts-ke", "--help"],
            "authtime-lab load nts-ke --target",
        ),
        (&["load", "nts", "--help"], "authtime-lab load nts --target"),
    ] {
        let out = authtime_lab(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(text(&out.stdout).contains(example), "{args:?}");
    }
}

#[test]
fn bad_usage_and_bad_input_exit_2_with_one_line() {
    // clap's own usage errors.
    for args in [
        &["lab"][..],
        &["run", "--quick"],
        &["load", "nts", "--target", "a:1"],
    ] {
        let out = authtime_lab(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    // The commands' own checks, before anything is measured or sent.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("authtime-lab-cli");
    let dir = dir.display().to_string();
    for (args, message) in [
        (
            &["run", "--only", "nope", "--out", &dir][..],
            "authtime-lab: unknown lab section `nope`",
        ),
        (&["bench", "mac", "--size", "0"], "authtime-lab: --size 0:"),
        (&["bench", "mac", "--alg", "md4"], "authtime-lab: --alg:"),
        (
            &[
                "load",
                "ntp",
                "--target",
                "localhost",
                "--rate",
                "1",
                "--duration",
                "1",
            ],
            "authtime-lab: --target: `localhost` is not an address with a port",
        ),
        (
            &[
                "load",
                "ntp",
                "--target",
                "127.0.0.1:9",
                "--rate",
                "1",
                "--duration",
                "0",
            ],
            "authtime-lab: --duration 0:",
        ),
        (
            &["load", "nts-ke", "--target", "localhost", "--rate", "1"],
            "authtime-lab: --target localhost: expected HOST:PORT",
        ),
    ] {
        let out = authtime_lab(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with(message), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(
        !std::path::Path::new(&dir).exists(),
        "no report for a bad section"
    );
}

#[test]
fn bench_mac_prints_json_for_the_sizes_and_algorithms_asked() {
    let out = authtime_lab(&[
        "bench",
        "mac",
        "--size",
        "48",
        "--alg",
        "siphash24",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = json["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{json}");
    assert_eq!(rows[0]["algorithm"], "siphash24", "{json}");
    assert_eq!(rows[0]["size"], 48, "{json}");
    assert!(
        rows[0]["single"].as_f64().is_some_and(|r| r > 0.0),
        "{json}"
    );
    assert!(json["isa"].is_string(), "{json}");
}
