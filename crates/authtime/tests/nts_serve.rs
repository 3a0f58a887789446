//! `authtime serve` as an NTS server, seen as a user sees it: certificates
//! replaced under a running server (SIGHUP) and their expiry exported, the server-side timing
//! histograms, and `authtime config check` on broken NTS settings.

mod ntp_support;
use ntp_support::nts_cert;

use std::time::{Duration, Instant};

use ntp_support::{Serve, TempDir, authtime, text, text_of};

fn query(serve: &Serve, ca: &std::path::Path) -> std::process::Output {
    let ke = format!("localhost:{}", serve.nts_ke.expect("ke").port());
    authtime(&[
        "query",
        "--nts",
        &ke,
        "--ca",
        &ca.display().to_string(),
        // Room for a busy machine; an answered query takes milliseconds.
        "--timeout",
        "5",
    ])
}

#[test]
fn a_new_certificate_is_served_after_sighup_without_a_restart() {
    let dir = TempDir::new("nts-sighup");
    nts_cert(&dir, "old", &["--days", "10"]);
    nts_cert(&dir, "new", &["--days", "40"]);
    for (from, to) in [("old-chain.pem", "chain.pem"), ("old-key.pem", "key.pem")] {
        std::fs::copy(dir.path(from), dir.path(to)).expect("copy");
    }
    let serve = Serve::start(
        &dir,
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[nts-ke]\nlisten = [\"127.0.0.1:0\"]\n\
         certificate-chain = \"chain.pem\"\nprivate-key = \"key.pem\"\nworkers = 1\n\
         certificate-check-interval = 0\n[keystore]\npath = \"keys\"\n",
    );
    assert!(query(&serve, &dir.path("old-ca.pem")).status.success());
    assert_eq!(
        query(&serve, &dir.path("new-ca.pem")).status.code(),
        Some(1)
    );
    // The expiry exported is the certificate's, and follows the reload.
    let days_left = || {
        let expiry = serve.metric("authtime_ntske_certificate_expiry_timestamp_seconds");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs();
        (expiry.saturating_sub(now) as f64 / 86_400.0).round() as u64
    };
    assert_eq!(days_left(), 10, "{}", serve.scrape());

    for (from, to) in [("new-chain.pem", "chain.pem"), ("new-key.pem", "key.pem")] {
        std::fs::copy(dir.path(from), dir.path(to)).expect("copy");
    }
    serve.process.signal("HUP");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let out = query(&serve, &dir.path("new-ca.pem"));
        if out.status.success() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "new certificate not served: {}",
            text_of(&out)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        query(&serve, &dir.path("old-ca.pem")).status.code(),
        Some(1)
    );
    assert!(
        serve.log_text().contains("NTS-KE certificate reloaded"),
        "{}",
        serve.log_text()
    );
    assert_eq!(days_left(), 40, "{}", serve.scrape());

    // A broken certificate file keeps the one in use.
    std::fs::write(dir.path("chain.pem"), "not a certificate").expect("write");
    serve.process.signal("HUP");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !serve.log_text().contains("keeping the old one") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        serve.log_text().contains("keeping the old one"),
        "{}",
        serve.log_text()
    );
    assert!(query(&serve, &dir.path("new-ca.pem")).status.success());
    assert_eq!(days_left(), 40, "the failed reload keeps the old expiry");

    // Every protected reply was timed.
    let metrics = serve.scrape();
    let answered = ntp_support::metric(&metrics, "authtime_nts_answered_total");
    assert!(answered >= 3, "{metrics}");
    assert_eq!(
        ntp_support::metric(&metrics, "authtime_nts_response_seconds_count"),
        answered
    );
    assert!(ntp_support::metric(&metrics, "authtime_ntske_response_seconds_count") >= 3);
}

/// `authtime query --nts` against `authtime serve`: both offer the hybrid
/// post-quantum group first, so it is the one negotiated; the client shows
/// it (text and JSON) and the server counts it.
#[test]
fn client_and_server_negotiate_x25519mlkem768_and_both_show_it() {
    let dir = TempDir::new("nts-pq");
    nts_cert(&dir, "pq", &[]);
    let serve = Serve::start(
        &dir,
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[nts-ke]\nlisten = [\"127.0.0.1:0\"]\n\
         certificate-chain = \"pq-chain.pem\"\nprivate-key = \"pq-key.pem\"\nworkers = 1\n\
         [keystore]\npath = \"keys\"\n",
    );
    let ke = format!("localhost:{}", serve.nts_ke.expect("ke").port());
    let ca = dir.path("pq-ca.pem").display().to_string();
    let args = ["query", "--nts", &ke, "--ca", &ca, "--timeout", "5"];
    let out = authtime(&[&args[..], &["--json"]].concat());
    assert!(out.status.success(), "{}", text_of(&out));
    let json: serde_json::Value = serde_json::from_str(&text(&out.stdout)).expect("JSON");
    assert_eq!(json["nts"]["tls_group"], "X25519MLKEM768", "{json}");

    let out = authtime(&args);
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(
        text(&out.stderr).contains("TLS key exchange X25519MLKEM768"),
        "{}",
        text_of(&out)
    );

    let group = |g: &str| format!("authtime_ntske_key_exchange_groups_total{{group=\"{g}\"}}");
    assert_eq!(serve.wait_metric(&group("X25519MLKEM768"), 2), 2);
    assert_eq!(serve.metric(&group("X25519")), 0);
    assert_eq!(
        serve.metric("authtime_ntske_sessions_total{outcome=\"ok\"}"),
        2
    );
}

#[test]
fn config_check_reports_a_missing_certificate_with_its_line() {
    let dir = TempDir::new("nts-config-check");
    let config = dir.path("nts.toml");
    std::fs::write(
        &config,
        "[nts-ke]\nlisten = [\"127.0.0.1:14460\"]\ncertificate-chain = \"missing.pem\"\n\
         private-key = \"missing-key.pem\"\n",
    )
    .expect("write");
    let out = authtime(&["config", "check", &config.display().to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    let shown = text(&out.stdout);
    assert!(
        shown.contains(":3:") && shown.contains("nts-ke.certificate-chain"),
        "{shown}"
    );

    std::fs::write(&config, "[keystore]\nkind = \"redis\"\n").expect("write");
    let out = authtime(&["config", "check", &config.display().to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stdout).contains("keystore.url"),
        "{}",
        text_of(&out)
    );
}
