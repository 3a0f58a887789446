//! The soak section's short mode (issue 29) end to end: the real
//! `authtime serve` with NTP, MACs, NTS-KE, NTS and Roughtime, its NTS keys in
//! a real Redis (master, replica and sentinel), steady load of every protocol and one cycle of every
//! fault in about two and a half minutes, then the report (tables, plots,
//! JSON) and a verdict that must be PASS.
//!
//! Ignored by default (`cargo test --workspace` and `./test.sh` stay short);
//! `scripts/soak.sh` (the CI short mode) runs it:
//! `cargo test -p authtime-lab --test lab_soak_smoke -- --ignored`. It starts
//! the `authtime` executable of this build (`cargo build -p authtime` first)
//! and `redis-server` from `PATH`.

use std::time::{Duration, Instant};

#[test]
#[ignore = "two and a half minutes: run by scripts/soak.sh (the CI short mode)"]
fn the_soak_short_mode_ends_with_a_pass_verdict() {
    let started = Instant::now();
    let out = std::env::temp_dir().join(format!("authtime-soak-smoke-{}", std::process::id()));
    let opts = authtime_lab::LabOptions {
        quick: true,
        only: Some(authtime_lab::SectionId::Soak),
        out: out.clone(),
        duration: None,
        xdp_protocols: None,
    };
    let sections = {
        let mut progress = authtime_lab::Progress::new(|l: &str| eprintln!("{l}"));
        authtime_lab::run(&opts, &mut progress).expect("soak section")
    };
    let elapsed = started.elapsed();
    let section = &sections[0];
    let report = std::fs::read_to_string(out.join("index.md")).expect("index.md");
    assert!(
        section.findings[0] == "Verdict: PASS",
        "{}\n\n{report}",
        section.findings[0]
    );
    let data = &section.data;
    let kinds: Vec<&str> = data["faults"]
        .as_array()
        .expect("faults")
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    for kind in [
        "sighup",
        "cert-replace",
        "malformed",
        "ke-flood",
        "many-clients",
        "redis-restart",
        "redis-failover",
    ] {
        assert!(kinds.contains(&kind), "{kind} not injected: {kinds:?}");
    }
    // The sentinel really promoted the replica, and interleaved clients
    // really went past the interleaved table.
    let detail = |kind: &str| -> String {
        data["faults"]
            .as_array()
            .expect("faults")
            .iter()
            .filter(|f| f["kind"] == kind)
            .filter_map(|f| f["detail"].as_str())
            .collect()
    };
    assert!(
        detail("redis-failover").contains("promoted after"),
        "{}",
        detail("redis-failover")
    );
    assert!(
        !detail("many-clients").contains(" 0 interleaved"),
        "{}",
        detail("many-clients")
    );
    // The faults were felt: malformed packets counted, the store seen down.
    let counters = data["counters"].as_array().expect("counters");
    let moved = |name: &str| {
        counters
            .iter()
            .any(|c| c["series"].as_str().is_some_and(|s| s.contains(name)))
    };
    assert!(moved("malformed"), "{report}");
    assert!(moved("keystore"), "{report}");
    for load in ["ntp", "ntp-mac", "nts", "roughtime"] {
        let answered: u64 = data["loads"]
            .as_array()
            .expect("loads")
            .iter()
            .filter(|c| c["load"] == load)
            .filter_map(|c| c["answered"].as_u64())
            .sum();
        assert!(answered > 100, "{load}: {answered} answers");
    }
    assert!(out.join("soak-rss.svg").is_file());
    assert!(elapsed < Duration::from_secs(240), "{elapsed:?}");
    let _ = std::fs::remove_dir_all(&out);
}
