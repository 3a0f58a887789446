//! NTS (RFC 8915) interop with the real chronyd (Debian package `chrony`,
//! 4.3, built with NTS), on loopback and ports the tests pick:
//!
//! - chronyd as an NTS client (`-Q`: measure, never touch the clock) of
//!   `authtime serve` gets authenticated samples, with a CA-signed and with a
//!   self-signed certificate made by `authtime nts cert`;
//! - `authtime query --nts` against a chronyd NTS server (`-x`) gets
//!   authenticated samples; with the wrong trust anchor it exits 1.

mod ntp_support;
use ntp_support::nts_cert;

use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use ntp_support::interop::{Direction, Row, median, proven};
use ntp_support::{
    ChildGuard, Serve, TempDir, authtime, chronyd_command, chronyd_private_lines, chronyd_version,
    free_udp_port, run_chronyd_client, text, text_of,
};

/// `authtime serve` with NTS-KE on a free port, NTP on another.
fn serve_nts(dir: &TempDir, prefix: &str) -> Serve {
    let body = format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n\
         [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"{0}-chain.pem\"\n\
         private-key = \"{0}-key.pem\"\nworkers = 1\n\
         [keystore]\npath = \"{0}-master-keys\"\n",
        prefix
    );
    let serve = Serve::start_named(dir, prefix, &body);
    assert!(
        serve.nts_ke.is_some(),
        "no NTS-KE address: {}",
        serve.log_text()
    );
    serve
}

/// Runs `chronyd -Q` as an NTS client of `serve`, trusting `trust`, for at
/// most `limit_s` seconds; returns whether it accepted a sample, and its log.
fn chronyd_nts_client(dir: &TempDir, serve: &Serve, trust: &str, limit_s: u32) -> (bool, String) {
    let ke = serve.nts_ke.expect("NTS-KE");
    let conf = dir.path(&format!("client-{trust}.conf"));
    let dump = dir.path("client-dump");
    std::fs::create_dir_all(&dump).expect("dump dir");
    std::fs::write(
        &conf,
        format!(
            "server localhost port {} nts ntsport {} iburst minpoll -4 maxpoll -4\n\
             ntstrustedcerts {}\nntsdumpdir {}\n{}",
            serve.addr.port(),
            ke.port(),
            dir.path(trust).display(),
            dump.display(),
            chronyd_private_lines(dir)
        ),
    )
    .expect("conf");
    let log_path = dir.path(&format!("client-{trust}.log"));
    let (success, log) = run_chronyd_client(&conf, &["-4"], &log_path, limit_s);
    (success && log.contains("System clock wrong by"), log)
}

#[test]
fn chronyd_syncs_over_nts_from_authtime_with_a_ca_signed_certificate() {
    let dir = TempDir::new("nts-chrony-client");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let serve = serve_nts(&dir, "nts");
    let (ok, log) = chronyd_nts_client(&dir, &serve, "nts-ca.pem", 6);
    assert!(
        ok,
        "chronyd did not accept authtime's NTS samples:\n{log}\nserver:\n{}",
        serve.log_text()
    );
    let metrics = serve.scrape();
    assert!(
        ntp_support::metric(&metrics, "authtime_ntske_sessions_total{outcome=\"ok\"}") >= 1,
        "{metrics}"
    );
    assert!(
        ntp_support::metric(&metrics, "authtime_nts_answered_total") >= 1,
        "{metrics}"
    );
    assert_eq!(
        ntp_support::metric(&metrics, "authtime_ntp_answered_total{auth=\"none\"}"),
        0,
        "chronyd sent only NTS requests, and each got an NTS reply"
    );
    // GnuTLS has no ML-KEM: chronyd's first group is what authtime's server
    // takes (rustls follows the client's order among the groups it offers).
    let groups = ntp_support::negotiated_groups(&metrics);
    assert_eq!(
        groups.len(),
        1,
        "one group for all of chronyd's handshakes: {metrics}"
    );
    assert_ne!(groups[0], "X25519MLKEM768", "{metrics}");
    let group = format!("{} (classical fallback)", groups[0]);
    let peer = chronyd_version();
    let test = "nts_chrony::chronyd_syncs_over_nts_from_authtime_with_a_ca_signed_certificate";
    for (feature, result) in [
        ("NTS-KE", "test CA and leaf"),
        ("NTS NTP", "samples accepted, no plain request"),
        ("key group", group.as_str()),
    ] {
        proven(Row {
            peer: &peer,
            direction: Direction::PeerToAuthtime,
            feature,
            result,
            test,
        });
    }
}

#[test]
fn chronyd_syncs_over_nts_from_authtime_with_a_self_signed_certificate() {
    let dir = TempDir::new("nts-chrony-self-signed");
    nts_cert(&dir, "self", &["--ip", "127.0.0.1", "--self-signed"]);
    let serve = serve_nts(&dir, "self");
    let (ok, log) = chronyd_nts_client(&dir, &serve, "self-ca.pem", 6);
    assert!(
        ok,
        "chronyd did not accept a self-signed NTS server:\n{log}"
    );
    // Our own client trusts the same self-signed certificate.
    let ke = format!("localhost:{}", serve.nts_ke.expect("ke").port());
    let ca = dir.path("self-ca.pem").display().to_string();
    let out = authtime(&["query", "--nts", &ke, "--ca", &ca]);
    assert!(out.status.success(), "{}", text_of(&out));
    proven(Row {
        peer: &chronyd_version(),
        direction: Direction::PeerToAuthtime,
        feature: "NTS-KE",
        result: "self-signed certificate",
        test: "nts_chrony::chronyd_syncs_over_nts_from_authtime_with_a_self_signed_certificate",
    });
}

#[test]
fn chronyd_gets_no_sample_when_it_does_not_trust_the_certificate() {
    let dir = TempDir::new("nts-chrony-untrusted");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    nts_cert(&dir, "other", &["--ip", "127.0.0.1"]);
    let serve = serve_nts(&dir, "nts");
    let (ok, log) = chronyd_nts_client(&dir, &serve, "other-ca.pem", 3);
    assert!(!ok, "chronyd accepted a server it must not trust:\n{log}");
    assert!(
        log.contains("TLS handshake"),
        "chronyd failed for another reason:\n{log}"
    );
    assert_eq!(serve.metric("authtime_nts_answered_total"), 0);
}

/// A chronyd NTS server on loopback that never touches the clock: (guard,
/// NTP port, NTS-KE port).
fn chronyd_nts_server(dir: &TempDir) -> (ChildGuard, u16, u16) {
    nts_cert(dir, "chrony", &["--ip", "127.0.0.1"]);
    let port = free_udp_port();
    let ke_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let conf = dir.path("server.conf");
    std::fs::write(
        &conf,
        format!(
            "port {port}\nbindaddress 127.0.0.1\nallow 127.0.0.1\nlocal stratum 8\n\
             ntsport {ke_port}\nntsserverkey {}\nntsservercert {}\nntsdumpdir {}\n{}",
            dir.path("chrony-key.pem").display(),
            dir.path("chrony-chain.pem").display(),
            dir.0.display(),
            chronyd_private_lines(dir)
        ),
    )
    .expect("conf");
    let child = chronyd_command(&conf, &["-4", "-x", "-d"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chronyd");
    let guard = ChildGuard {
        child,
        name: "chronyd -x -d (NTS)".into(),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", ke_port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "chronyd's NTS-KE does not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (guard, port, ke_port)
}

#[test]
fn authtime_query_gets_nts_samples_from_chronyd() {
    let dir = TempDir::new("nts-chrony-server");
    let (_chronyd, ntp_port, ke_port) = chronyd_nts_server(&dir);
    let ke = format!("localhost:{ke_port}");
    let ca = dir.path("chrony-ca.pem").display().to_string();
    let store = dir.path("cookies").display().to_string();
    // chronyd may need a moment before it answers NTP: retry (bounded).
    let deadline = Instant::now() + Duration::from_secs(10);
    let out = loop {
        let out = authtime(&[
            "query",
            "--nts",
            &ke,
            "--ca",
            &ca,
            "--count",
            "2",
            "--interval",
            "0.1",
            "--json",
            "--cookie-store",
            &store,
        ]);
        if out.status.success() || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(out.status.success(), "{}", text_of(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        json["address"],
        format!("127.0.0.1:{ntp_port}"),
        "chronyd announced its NTP port"
    );
    for reply in json["replies"].as_array().expect("replies") {
        assert_eq!(reply["auth"], "nts", "{reply}");
        assert_eq!(reply["stratum"], 8);
    }
    assert_eq!(json["nts"]["aead"], "AEAD_AES_SIV_CMAC_256");
    // chronyd's GnuTLS has no ML-KEM: authtime's client falls back.
    assert_eq!(json["nts"]["tls_group"], "X25519", "{json}");

    // The stored session serves the next run without NTS-KE.
    let out = authtime(&[
        "query",
        "--nts",
        &ke,
        "--ca",
        &ca,
        "--json",
        "--cookie-store",
        &store,
    ]);
    assert!(out.status.success(), "{}", text_of(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["nts"]["ke_exchanges"], 0, "{json}");
    assert_eq!(json["nts"]["session_from_cookie_store"], true);
    // The handshake as authtime's client times it, over fresh sessions.
    let times: Vec<f64> = (0..5)
        .map(|_| {
            let out = authtime(&["query", "--nts", &ke, "--ca", &ca, "--json"]);
            assert!(out.status.success(), "{}", text_of(&out));
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            json["nts"]["ke_ms"].as_f64().expect("ke_ms")
        })
        .collect();
    let handshake = format!(
        "{:.1} ms median of {} (authtime query's ke_ms)",
        median(&times),
        times.len()
    );
    let peer = chronyd_version();
    let test = "nts_chrony::authtime_query_gets_nts_samples_from_chronyd";
    for (feature, result) in [
        ("NTS-KE", "test CA and leaf"),
        ("AEAD", "AEAD_AES_SIV_CMAC_256 (15)"),
        ("NTS NTP", "authenticated samples"),
        ("cookies", "stored cookies reused without NTS-KE"),
        ("key group", "X25519 (classical fallback)"),
        ("handshake", handshake.as_str()),
    ] {
        proven(Row {
            peer: &peer,
            direction: Direction::AuthtimeToPeer,
            feature,
            result,
            test,
        });
    }
}

#[test]
fn authtime_query_refuses_chronyd_under_the_wrong_trust_anchor() {
    let dir = TempDir::new("nts-chrony-wrong-ca");
    let (_chronyd, _, ke_port) = chronyd_nts_server(&dir);
    nts_cert(&dir, "other", &["--ip", "127.0.0.1"]);
    let ke = format!("localhost:{ke_port}");
    let ca = dir.path("other-ca.pem").display().to_string();
    let out = authtime(&["query", "--nts", &ke, "--ca", &ca]);
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(text(&out.stderr).contains("NTS-KE"), "{}", text_of(&out));
}
