//! NTS on a machine whose clock is wrong (RFC 8915 §8.5, issue 21): the real
//! `authtime serve` with NTS-KE (a test CA and a leaf valid for a year from
//! now) and Roughtime servers on loopback (this test's threads). The client
//! is told its local clock reads ten years ahead (`--assume-local-time`; no
//! clock is touched): NTS-KE fails on the certificate's validity without
//! Roughtime, succeeds when a quorum of Roughtime servers agree (the
//! certificate then checked against their interval), and is refused before
//! any NTS-KE when they do not (exit 5) or when one is caught lying (exit 4).

mod ntp_support;
mod roughtime_support;

use std::path::Path;
use std::process::Output;
use std::time::{SystemTime, UNIX_EPOCH};

use ntp_support::{Serve, TempDir, authtime, nts_cert, text_of};
use roughtime_support::{TestServer, entry, write_list, write_servers};
use serde_json::Value;

/// Ten years of 365 days, in seconds.
const TEN_YEARS: i64 = 315_360_000;

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// `authtime serve` with NTS-KE on loopback and its CA file.
fn nts_server(dir: &TempDir) -> (Serve, String) {
    nts_cert(dir, "nts", &[]);
    let serve = Serve::start(
        dir,
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[nts-ke]\nlisten = [\"127.0.0.1:0\"]\n\
         certificate-chain = \"nts-chain.pem\"\nprivate-key = \"nts-key.pem\"\nworkers = 1\n\
         [keystore]\npath = \"keys\"\n",
    );
    let ca = dir.path("nts-ca.pem").display().to_string();
    (serve, ca)
}

/// `authtime query --nts localhost:PORT --ca CA --json EXTRA...`.
fn query(serve: &Serve, ca: &str, extra: &[&str]) -> (Output, Value) {
    let ke = format!("localhost:{}", serve.nts_ke.expect("NTS-KE address").port());
    let mut args = vec![
        "query",
        "--nts",
        &ke,
        "--ca",
        ca,
        "--timeout",
        "3",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = authtime(&args);
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("--json output ({e}): {}", text_of(&out)));
    (out, doc)
}

fn list_path(dir: &TempDir, name: &str) -> String {
    dir.path(name).display().to_string()
}

#[test]
fn a_clock_ten_years_ahead_needs_roughtime_to_check_the_certificate() {
    let dir = TempDir::new("nts-wrong-clock");
    let (serve, ca) = nts_server(&dir);
    let wrong = format!("@{}", now() + TEN_YEARS);

    // Without Roughtime the certificate is expired at the local time.
    let (out, doc) = query(&serve, &ca, &["--assume-local-time", &wrong]);
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert_eq!(doc["replies"][0]["error"], "authentication_failed", "{doc}");
    assert_eq!(doc["nts"]["certificate_outside_validity"], true, "{doc}");
    assert_eq!(doc["nts"]["cert_time_source"], "local", "{doc}");
    assert!(
        doc["replies"][0]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("certificate expired"),
        "{doc}"
    );

    // Three honest Roughtime servers: their interval replaces the clock.
    let honest = [
        TestServer::start(1, 0),
        TestServer::start(2, 0),
        TestServer::start(3, 0),
    ];
    let list = list_path(&dir, "honest.json");
    write_servers(Path::new(&list), &honest.iter().collect::<Vec<_>>());
    let rt = ["--roughtime-servers", &list];
    let (out, doc) = query(
        &serve,
        &ca,
        &[&rt[..], &["--assume-local-time", &wrong]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    let nts = &doc["nts"];
    assert_eq!(nts["cert_time_source"], "roughtime", "{doc}");
    assert_eq!(nts["certificate_outside_validity"], false, "{doc}");
    let roughtime = &nts["cert_time"]["roughtime"];
    assert_eq!(roughtime["quorum"], 2, "{doc}");
    assert_eq!(roughtime["listed"], 3, "{doc}");
    assert_eq!(
        roughtime["servers_agreeing"],
        serde_json::json!(["rt0", "rt1", "rt2"]),
        "{doc}"
    );
    let earliest = roughtime["agreed"]["earliest"].as_i64().unwrap_or_default();
    let latest = roughtime["agreed"]["latest"].as_i64().unwrap_or_default();
    assert!(earliest <= now() && now() <= latest + 2, "{doc}");
    assert!(
        nts["cert_time"]["local_minus_roughtime_s"]
            .as_i64()
            .unwrap_or_default()
            > TEN_YEARS - 60
    );
    // The offset is reported against the clock the client believes in.
    let offset = doc["replies"][0]["offset"].as_f64().unwrap_or_default();
    assert!((offset + TEN_YEARS as f64).abs() < 60.0, "{doc}");
    let stderr = ntp_support::text(&out.stderr);
    assert!(
        stderr.contains("certificate checked against the Roughtime interval"),
        "{stderr}"
    );

    // A right clock inside the interval is used as it is; --clock-unknown
    // takes the interval all the same.
    let (out, doc) = query(&serve, &ca, &rt);
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    assert_eq!(doc["nts"]["cert_time_source"], "local", "{doc}");
    let (out, doc) = query(&serve, &ca, &[&rt[..], &["--clock-unknown"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    assert_eq!(doc["nts"]["cert_time_source"], "roughtime", "{doc}");
}

#[test]
fn roughtime_servers_that_disagree_or_stay_silent_are_refused() {
    let dir = TempDir::new("nts-wrong-clock-refused");
    let (serve, ca) = nts_server(&dir);
    let wrong = format!("@{}", now() + TEN_YEARS);
    let honest = TestServer::start(11, 0);
    let ahead = [
        TestServer::start(12, TEN_YEARS),
        TestServer::start(13, TEN_YEARS),
    ];
    let behind = TestServer::start(14, -TEN_YEARS);

    // Two of three lie consistently, ten years ahead: no common interval.
    let list = list_path(&dir, "two-liars.json");
    write_servers(Path::new(&list), &[&honest, &ahead[0], &ahead[1]]);
    let (out, doc) = query(
        &serve,
        &ca,
        &["--roughtime-servers", &list, "--assume-local-time", &wrong],
    );
    assert_eq!(out.status.code(), Some(5), "{}", text_of(&out));
    assert_eq!(doc["error"], "roughtime_disagree", "{doc}");
    assert_eq!(doc["exit_code"], 5, "{doc}");
    assert_eq!(doc["replies"], serde_json::json!([]), "{doc}");
    assert!(
        ntp_support::text(&out.stderr).contains("do not overlap"),
        "{}",
        text_of(&out)
    );

    // A server asked after another answers with an interval that ends
    // before the first one's begins: malfeasance, proven by the chain.
    let list = list_path(&dir, "behind.json");
    write_servers(Path::new(&list), &[&honest, &behind]);
    let (out, doc) = query(
        &serve,
        &ca,
        &["--roughtime-servers", &list, "--clock-unknown"],
    );
    assert_eq!(out.status.code(), Some(4), "{}", text_of(&out));
    assert_eq!(doc["error"], "roughtime_malfeasance", "{doc}");

    // One of three answers (two listed servers are silent): under the
    // default quorum of 2 it is refused; --roughtime-quorum 1 accepts it.
    let silent = |name: &str| {
        let port = ntp_support::free_udp_port();
        entry(name, &format!("127.0.0.1:{port}"), &[7u8; 32])
    };
    let list = list_path(&dir, "silent.json");
    write_list(
        Path::new(&list),
        vec![
            entry("honest", &honest.address, &honest.public_key),
            silent("silent1"),
            silent("silent2"),
        ],
    );
    let args = ["--roughtime-servers", &list, "--assume-local-time", &wrong];
    let (out, doc) = query(&serve, &ca, &args);
    assert_eq!(out.status.code(), Some(5), "{}", text_of(&out));
    assert_eq!(doc["error"], "roughtime_too_few_answers", "{doc}");
    assert_eq!(doc["nts"]["cert_time"]["roughtime"]["answered"], 1, "{doc}");
    let (out, doc) = query(
        &serve,
        &ca,
        &[&args[..], &["--roughtime-quorum", "1"]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text_of(&out));
    assert_eq!(doc["nts"]["cert_time_source"], "roughtime", "{doc}");

    // A quorum larger than the list is a usage error.
    let (out, _) = (
        authtime(&[
            "query",
            "--nts",
            "localhost:1",
            "--roughtime-servers",
            &list,
            "--roughtime-quorum",
            "4",
        ]),
        (),
    );
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
}
