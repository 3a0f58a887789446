//! `authtime query --interleaved` (RFC 9769) against real servers on
//! loopback and high ports:
//!
//! - chronyd (`-x`: never touches the clock; `local stratum 8`), which serves
//!   interleaved mode: the later samples are interleaved, with kernel
//!   timestamps for T1 and T4, plain and under an AES-128 key; a key the
//!   server does not hold is refused as in basic mode.
//! - `authtime serve`, whose interleaved mode gives the same.
//! - ntpd-rs 1.9, which answers in basic mode only: the output says so and
//!   keeps the basic samples.
//! - Options that do not go with --interleaved: one-line errors.
//!
//! Each peer runs with its own files in a temporary directory and is killed
//! when its test ends.

mod ntp_support;

use ntp_support::interop::{Direction, Row, proven};
use ntp_support::ntpd_rs::{NtpdRs, free_port_on, install};
use ntp_support::{
    Serve, TempDir, authtime, chronyd_server, chronyd_version, keygen, text, text_of,
    wait_for_answers, write_private,
};
use serde_json::Value;

/// What `authtime query --interleaved` prints when no sample was interleaved
/// (`authtime::cmd_query_interleaved::BASIC_ONLY`).
const BASIC_ONLY: &str = "the server answered in basic mode only: it does not serve RFC 9769 \
                          interleaved mode, or had no transmit timestamp to give";

/// `authtime query TARGET --interleaved --json EXTRA...`, which must exit 0.
fn query_json(target: &str, extra: &[&str]) -> Value {
    let mut args = vec!["query", target, "--interleaved", "--json"];
    args.extend_from_slice(extra);
    let out = authtime(&args);
    assert!(out.status.success(), "{}", text_of(&out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The replies of a JSON answer, each a sample with kernel T1 and T4 and
/// an offset and delay a loopback exchange can have (same clock, with room
/// for a busy machine).
fn samples(json: &Value) -> Vec<&Value> {
    let replies: Vec<&Value> = json["replies"]
        .as_array()
        .expect("replies")
        .iter()
        .collect();
    for (i, reply) in replies.iter().enumerate() {
        assert_eq!(reply["ok"], true, "{json}");
        assert_eq!(reply["request"], i + 1, "{reply}");
        assert_eq!(reply["t1_source"], "kernel", "{reply}");
        assert_eq!(reply["t4_source"], "kernel", "{reply}");
        let offset = reply["offset"].as_f64().expect("offset");
        let delay = reply["delay"].as_f64().expect("delay");
        assert!(
            offset.abs() < 0.01 && (0.0..0.5).contains(&delay),
            "{reply}"
        );
    }
    replies
}

/// chronyd (and `authtime serve`) answer the first request (nothing to
/// echo) and the second (they take transmit timestamps only of replies to
/// interleaved requests) in basic mode, later ones interleaved: the last two
/// at least.
fn assert_interleaved_later(json: &Value, count: usize) {
    let replies = samples(json);
    assert_eq!(replies.len(), count, "{json}");
    assert_eq!(replies[0]["mode"], "basic", "{json}");
    for reply in &replies[count - 2..] {
        assert_eq!(reply["mode"], "interleaved", "{json}");
        // The sample of the exchange before, with chronyd's kernel T3.
        assert_eq!(
            reply["measured_exchange"].as_u64(),
            reply["request"].as_u64().map(|r| r - 1),
            "{reply}"
        );
    }
    let interleaved = replies
        .iter()
        .filter(|r| r["mode"] == "interleaved")
        .count();
    assert_eq!(json["interleaved"]["interleaved_samples"], interleaved);
    assert_eq!(json["interleaved"]["basic_only"], false, "{json}");
    assert_eq!(json["interleaved"]["t1_kernel_stamps"], count, "{json}");
    assert_eq!(json["interleaved"]["t4_kernel_stamps"], count, "{json}");
    assert_eq!(json["exit_code"], 0);
}

#[test]
fn chronyd_gives_interleaved_samples_plain_and_with_an_aes128_key() {
    let dir = TempDir::new("interleaved-chrony");
    let key_file = keygen(&dir, "chrony.keys", "chrony", &[("aes128", 3)]);
    let (_chronyd, target) = chronyd_server(&dir, &key_file);

    let plain = query_json(&target, &["--count", "5", "--interval", "0.2"]);
    assert_interleaved_later(&plain, 5);
    for reply in samples(&plain) {
        assert_eq!(reply["auth"], "none", "{reply}");
        assert_eq!(reply["stratum"], 8, "{reply}");
    }

    let key_path = key_file.to_string_lossy().into_owned();
    let keyed = query_json(
        &target,
        &[
            "--count",
            "5",
            "--interval",
            "0.2",
            "--key-file",
            &key_path,
            "--key-id",
            "3",
        ],
    );
    assert_interleaved_later(&keyed, 5);
    for reply in samples(&keyed) {
        assert_eq!(reply["auth"], "symmetric-key", "{reply}");
        assert_eq!(reply["key_id"], 3, "{reply}");
    }

    // The text form: one line per sample with its mode and sources, and
    // the count of interleaved samples. --count defaults to 4.
    let out = authtime(&["query", &target, "--interleaved", "--interval", "0.2"]);
    assert!(out.status.success(), "{}", text_of(&out));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    assert!(lines[0].contains(": #1 basic: offset "), "{stdout}");
    assert!(
        lines[3].contains(": #4 interleaved (exchange #3): offset "),
        "{stdout}"
    );
    assert!(
        lines[3].ends_with("not authenticated, T1 kernel, T4 kernel"),
        "{stdout}"
    );
    assert!(
        lines[4].contains("samples interleaved; T1 from kernel transmit timestamps in 4 of them"),
        "{stdout}"
    );

    proven(Row {
        peer: &chronyd_version(),
        direction: Direction::AuthtimeToPeer,
        feature: "interleaved",
        result: "RFC 9769 samples from the third reply on, kernel T1 and T4; plain and AES128 (CMAC)",
        test: "query_interleaved::chronyd_gives_interleaved_samples_plain_and_with_an_aes128_key",
    });
}

#[test]
fn authtime_serve_gives_interleaved_samples_too() {
    let dir = TempDir::new("interleaved-serve");
    let key_file = keygen(&dir, "serve.keys", "chrony", &[("aes128", 3)]);
    let serve = Serve::start(
        &dir,
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nkeys = \"{}\"\nkey-format = \"chrony\"\n",
            key_file.display()
        ),
    );
    let target = serve.addr.to_string();
    let key_path = key_file.to_string_lossy().into_owned();
    for extra in [&[][..], &["--key-file", &key_path, "--key-id", "3"][..]] {
        let mut args = vec!["--count", "5", "--interval", "0.2"];
        args.extend_from_slice(extra);
        let json = query_json(&target, &args);
        assert_interleaved_later(&json, 5);
    }
}

#[test]
fn chronyd_refuses_a_wrong_key_in_interleaved_mode_too() {
    let dir = TempDir::new("interleaved-chrony-wrong");
    let key_file = keygen(&dir, "chrony.keys", "chrony", &[("aes128", 3)]);
    let (_chronyd, target) = chronyd_server(&dir, &key_file);
    // Key 3 with other bytes: chronyd drops the requests; the plain probe
    // shows that the server is there, so the key is what it refuses.
    let wrong = dir.path("wrong.keys");
    write_private(&wrong, "3 AES128 HEX:000102030405060708090A0B0C0D0E0F\n");
    let wrong_path = wrong.to_string_lossy().into_owned();
    let out = authtime(&[
        "query",
        &target,
        "--interleaved",
        "--count",
        "2",
        "--interval",
        "0",
        "--timeout",
        "0.5",
        "--key-file",
        &wrong_path,
        "--key-id",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(
        text(&out.stderr).contains("does not accept key 3"),
        "{}",
        text_of(&out)
    );
    assert!(
        text(&out.stdout).ends_with(": no samples\n"),
        "{}",
        text_of(&out)
    );
}

#[test]
fn a_basic_only_server_is_named_as_such_and_its_samples_kept() {
    let dir = TempDir::new("interleaved-ntpd-rs");
    let port = free_port_on("127.0.0.1");
    let ntpd_rs = NtpdRs::start(
        &dir,
        "ntpd-rs-server",
        &format!(
            "[synchronization]\nlocal-stratum = 1\n\
             [[server]]\nlisten = \"127.0.0.1:{port}\"\n"
        ),
    );
    let target = format!("127.0.0.1:{port}");
    wait_for_answers(&target, || ntpd_rs.log_text());

    let json = query_json(&target, &["--count", "4", "--interval", "0.1"]);
    let replies = samples(&json);
    assert_eq!(replies.len(), 4, "{json}");
    for reply in replies {
        assert_eq!(reply["mode"], "basic", "{reply}");
        assert_eq!(reply["measured_exchange"], reply["request"], "{reply}");
        assert_eq!(reply["stratum"], 1, "{reply}");
    }
    assert_eq!(json["interleaved"]["basic_only"], true, "{json}");
    assert_eq!(json["interleaved"]["interleaved_samples"], 0, "{json}");
    assert_eq!(json["exit_code"], 0, "every request got a valid reply");

    let out = authtime(&["query", &target, "--interleaved", "--interval", "0.1"]);
    assert!(out.status.success(), "{}", text_of(&out));
    let stdout = text(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!(
            "{target}: {BASIC_ONLY}; the offsets above are basic; T1 from kernel transmit \
             timestamps in 4 of them, T4 from kernel receive timestamps in 4"
        ),
        "{stdout}"
    );
    assert_eq!(stdout.matches(" basic: offset ").count(), 4, "{stdout}");

    proven(Row {
        peer: &install().peer(),
        direction: Direction::AuthtimeToPeer,
        feature: "interleaved",
        result: "basic replies only (no RFC 9769), reported as such; basic samples kept",
        test: "query_interleaved::a_basic_only_server_is_named_as_such_and_its_samples_kept",
    });
}

#[test]
fn options_that_do_not_go_with_interleaved_are_one_line_errors() {
    for (args, wanted) in [
        (
            &["--nts"][..],
            "authtime: --interleaved does not work with --nts:",
        ),
        (
            &["--count", "1"][..],
            "authtime: --interleaved --count 1: must be 2 to 1000",
        ),
        (
            &["--count", "1001"][..],
            "authtime: --interleaved --count 1001: must be 2 to 1000",
        ),
        (
            &["--interval=-1"][..],
            "authtime: --interval -1: must be 0 to 3600 seconds",
        ),
    ] {
        let mut all = vec!["query", "127.0.0.1:9", "--interleaved"];
        all.extend_from_slice(args);
        let out = authtime(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text_of(&out));
        let stderr = text(&out.stderr);
        assert!(stderr.starts_with(wanted), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
