//! `authtime serve` as an NTS server, seen as a user sees it: certificates
//! replaced under a running server (SIGHUP), the server-side timing
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
    nts_cert(&dir, "old", &[]);
    nts_cert(&dir, "new", &[]);
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
