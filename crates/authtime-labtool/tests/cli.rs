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
        &[
            "load",
            "ntp",
            "--target",
            "127.0.0.1:9",
            "--rate",
            "1",
            "--duration",
            "1",
            "--arrivals",
            "bursty",
        ],
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
        (
            &["run", "--only", "xdp", "--protocols", "ptp", "--out", &dir],
            "authtime-lab: --protocols: `ptp`: not a protocol (ntp, nts, roughtime)",
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
        (
            &[
                "load",
                "ntp",
                "--target",
                "127.0.0.1:9",
                "--rate",
                "1",
                "--duration",
                "1",
                "--clients",
                "0",
            ],
            "authtime-lab: --clients 0: must be 1 to 65536",
        ),
        (
            &[
                "load",
                "ntp",
                "--target",
                "127.0.0.1:9",
                "--rate",
                "1e6",
                "--duration",
                "20",
                "--interleaved",
            ],
            "authtime-lab: 20000000 requests: at most 10000000 per interleaved run",
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

/// A server on loopback that answers every request in basic mode, its T3
/// read just before the send, until `stop`.
fn basic_server(socket: &std::net::UdpSocket, stop: &std::sync::atomic::AtomicBool) {
    let mut buf = [0u8; 512];
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let Ok((n, peer)) = socket.recv_from(&mut buf) else {
            continue;
        };
        if n < 48 {
            continue;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock");
        // NTP seconds and a 32-bit fraction.
        let ntp = ((now.as_secs() + 2_208_988_800) << 32)
            | ((u64::from(now.subsec_nanos()) << 32) / 1_000_000_000);
        let mut reply = [0u8; 48];
        reply[0] = 0x24; // version 4, server
        reply[1] = 1;
        reply[24..32].copy_from_slice(&buf[40..48]);
        reply[32..40].copy_from_slice(&ntp.to_be_bytes());
        reply[40..48].copy_from_slice(&ntp.to_be_bytes());
        let _ = socket.send_to(&reply, peer);
    }
}

#[test]
fn load_ntp_reports_t3_offsets_and_what_it_sent_as_json() {
    let server = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    server
        .set_read_timeout(Some(std::time::Duration::from_millis(50)))
        .expect("timeout");
    let target = server.local_addr().expect("addr").to_string();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let out = std::thread::scope(|scope| {
        scope.spawn(|| basic_server(&server, &stop));
        let out = authtime_lab(&[
            "load",
            "ntp",
            "--target",
            &target,
            "--rate",
            "400",
            "--duration",
            "0.5",
            "--arrivals",
            "poisson",
            "--interleaved",
            "--clients",
            "20",
            "--json",
        ]);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        out
    });
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    // What `load ntp --json` always printed is still there.
    for field in [
        "sent",
        "received",
        "loss",
        "latency",
        "fell_behind",
        "late_sends",
    ] {
        assert!(!json[field].is_null(), "{field}: {json}");
    }
    assert_eq!(json["arrivals"], "poisson", "{json}");
    assert_eq!(json["interleaved"], true, "{json}");
    assert_eq!(json["clients"], 20, "{json}");
    assert_eq!(json["sent"], 200, "{json}");
    // This server answers basic only: its replies are measured as such, and
    // no interleaved share is claimed. Its T3 is read before the send.
    let accuracy = &json["accuracy"];
    let basic = &accuracy["basic"];
    assert_eq!(basic["count"], json["received"], "{json}");
    assert!(basic["min_us"].as_f64().is_some_and(|x| x > 0.0), "{json}");
    assert!(
        basic["median_us"].as_f64().is_some_and(|x| x < 50_000.0),
        "{json}"
    );
    assert_eq!(accuracy["interleaved"]["count"], 0, "{json}");
    assert_eq!(accuracy["interleaved_share"], 0.0, "{json}");
}
