//! `authtime roughtime query` against the real roughenough servers.
//!
//! Honest servers of both wire versions, roughenough 2.2 (version 1) and
//! 1.3.0-draft14 (0x8000000c), asked together, agree on one interval.
//!
//! A lying Roughtime server is caught, and the proof stands on its own: the
//! real roughenough 2.2 server run ten minutes ahead (`--fixed-offset 600`)
//! and an honest one, asked in that order by `authtime roughtime query`. The
//! malfeasance report it writes is checked by an independent verifier built
//! on roughenough 2.2's own client library (scripts/roughtime-report-check,
//! built once per machine by scripts/ensure-report-check.sh), which must
//! accept it and refuse it once tampered with. roughenough's own client,
//! asked the same two servers, must see the same violation.

#![allow(clippy::unwrap_used)]

#[path = "ntp_support/interop.rs"]
#[allow(dead_code, reason = "shared with the NTP interop tests")]
mod interop;
#[path = "../../authtime-roughtime/tests/roughenough_support/mod.rs"]
#[allow(dead_code, reason = "shared with the roughtime crate's interop tests")]
mod roughenough_support;
mod roughtime_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use roughenough_support::{ChildGuard, Server, TempDir, install, random, spawn_client};

/// The independent verifier, built (or found) by scripts/ensure-report-check.sh.
fn report_checker() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-report-check.sh");
        let dir = TempDir::new("ensure-report-check");
        let child = Command::new(&script)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.path("out")).unwrap())
            .stderr(std::fs::File::create(dir.path("log")).unwrap())
            .spawn()
            .unwrap();
        // A cold build takes about 3 minutes on 2 CPUs.
        let status = ChildGuard(child).wait_bounded(Duration::from_secs(15 * 60));
        let log = std::fs::read_to_string(dir.path("log")).unwrap_or_default();
        assert!(
            status.is_some_and(|s| s.success()),
            "ensure-report-check.sh failed or took too long:\n{log}"
        );
        let printed = std::fs::read_to_string(dir.path("out")).unwrap();
        let bin = printed
            .lines()
            .find_map(|l| l.strip_prefix("roughtime-report-check="))
            .unwrap_or_else(|| panic!("ensure-report-check.sh printed no path: {printed}"));
        PathBuf::from(bin)
    })
}

fn run(program: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out: Output = Command::new(program)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// An ecosystem server list (the format Roughtime deployments publish and
/// roughenough's client reads), in the order given.
fn server_list(path: &Path, servers: &[(&str, &Server)]) {
    let entries = servers
        .iter()
        .map(|(name, s)| {
            roughtime_support::entry(name, &format!("127.0.0.1:{}", s.port), &s.public_key)
        })
        .collect();
    roughtime_support::write_list(path, entries);
}

#[test]
fn roughenough_22_and_13_together_give_one_agreed_interval() {
    let server22 = Server::start_22(&random());
    let server13 = Server::start_13(&random(), 1);
    let (key22, key13) = (
        hex::encode(server22.public_key),
        hex::encode(server13.public_key),
    );
    let (addr22, addr13) = (
        format!("127.0.0.1:{}", server22.port),
        format!("127.0.0.1:{}", server13.port),
    );
    let (code, text) = run(
        Path::new(env!("CARGO_BIN_EXE_authtime")),
        &[
            "roughtime",
            "query",
            "--server",
            &addr22,
            "--public-key",
            &key22,
            "--server",
            &addr13,
            "--public-key",
            &key13,
            "--timeout-ms",
            "1000",
            "--retries",
            "5",
            "--json",
        ],
    );
    assert_eq!(code, Some(0), "{text}");
    let doc: serde_json::Value = serde_json::from_str(text.lines().next().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {text}"));
    let servers = doc["servers"].as_array().unwrap();
    let versions: Vec<&str> = servers
        .iter()
        .map(|s| s["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["1", "draft-0x8000000c"], "{text}");
    let (earliest, latest) = (
        doc["agreed"]["earliest"].as_u64().unwrap(),
        doc["agreed"]["latest"].as_u64().unwrap(),
    );
    // Each answer's interval contains the agreed one, and the host's clock
    // (the servers serve it) lies within a few seconds of it.
    for s in servers {
        let (mid, radius) = (
            s["midpoint"].as_u64().unwrap(),
            s["radius"].as_u64().unwrap(),
        );
        assert!(mid - radius <= earliest && latest <= mid + radius, "{text}");
    }
    let now = roughenough_support::now_secs();
    assert!(earliest <= now + 3 && now <= latest + 3, "{now}: {text}");
}

#[test]
fn a_server_ten_minutes_ahead_is_reported_and_roughenough_verifies_the_report() {
    let checker = report_checker();
    let liar = Server::start_22_with(&random(), &["--fixed-offset", "600"]);
    let honest = Server::start_22(&random());
    let dir = TempDir::new("lying-peer");
    let list = dir.path("servers.json");
    server_list(&list, &[("liar", &liar), ("honest", &honest)]);
    let report = dir.path("report.json");

    let (code, text) = run(
        Path::new(env!("CARGO_BIN_EXE_authtime")),
        &[
            "roughtime",
            "query",
            "--servers",
            list.to_str().unwrap(),
            "--malfeasance-report",
            report.to_str().unwrap(),
            "--timeout-ms",
            "1000",
            "--retries",
            "5",
        ],
    );
    assert_eq!(code, Some(4), "{text}");
    assert!(text.contains("agreed: none"), "{text}");
    assert!(
        text.contains("malfeasance: honest's interval ends before liar's begins"),
        "{text}"
    );

    // roughenough's library verifies both responses, the chained nonce, and
    // finds the violation.
    let (code, checked) = run(checker, &[report.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{checked}");
    assert_eq!(
        checked.matches(": verified, midpoint").count(),
        2,
        "{checked}"
    );
    assert!(
        checked.contains("malfeasance: entry 0 is not before entry 1"),
        "{checked}"
    );

    // The same report with one byte of the honest response changed does not verify.
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let mut response = STANDARD
        .decode(doc["responses"][1]["response"].as_str().unwrap())
        .unwrap();
    let last = response.len() - 1;
    response[last] ^= 1;
    doc["responses"][1]["response"] = STANDARD.encode(&response).into();
    let tampered = dir.path("tampered.json");
    std::fs::write(&tampered, doc.to_string()).unwrap();
    let (code, checked) = run(checker, &[tampered.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{checked}");
    assert!(checked.contains("entry 1"), "{checked}");

    // roughenough's own client, asked the two servers in two rounds (so the
    // liar is asked before the honest server at least once), sees it too.
    let client = spawn_client(
        &install().bin22.join("roughenough_client"),
        &[
            "-l",
            list.to_str().unwrap(),
            "-u",
            "2",
            "-r",
            "2",
            "-t",
            "2",
        ],
    )
    .finish(Duration::from_secs(30));
    let output = format!("{}{}", client.stdout, client.stderr);
    assert!(output.contains("Causality violation"), "{output}");
    interop::proven(interop::Row {
        peer: &format!("roughenough {}", install().version22),
        direction: interop::Direction::AuthtimeToPeer,
        feature: "Roughtime malfeasance",
        result: "a server 600 s ahead caught; roughenough's library verifies the report",
        test: "roughtime_query_roughenough::a_server_ten_minutes_ahead_is_reported_and_roughenough_verifies_the_report",
    });
}
