//! `authtime-lab load nts-ke` and `authtime-lab load nts` against a real
//! `authtime serve` on loopback: short runs at a low rate, every request
//! answered, none failed, and the JSON report says so.
//!
//! The server is started the way the lab starts it, from the `authtime`
//! executable of this build (target/<profile>/authtime), which this crate does
//! not build: `cargo test --workspace` does, and so does
//! `cargo build -p authtime` before `cargo test -p authtime-labtool`.

use std::process::{Command, Output, Stdio};

use authtime_lab::section_nts_server::{
    NtsServer, Scratch, make_certificates, scrape, start_authtime,
};

/// `authtime serve` with NTS-KE on free ports (one worker each, rate
/// limiting off) and a CA-signed `localhost` leaf; the CA's path.
fn nts_server(dir: &Scratch) -> (NtsServer, String) {
    let certs = make_certificates(dir).expect("authtime nts cert");
    let server = start_authtime(dir, &certs, None).expect("authtime serve");
    (server, certs.ca.display().to_string())
}

/// Runs `authtime-lab <args>` to completion.
fn authtime_lab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_authtime-lab"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run authtime-lab")
}

/// Both output streams of a run, for messages.
fn text_of(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn report(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("json written");
    serde_json::from_str(&text).expect("valid json")
}

fn count(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or(u64::MAX)
}

#[test]
fn load_nts_ke_and_nts_answer_every_request() {
    let dir = Scratch::new().expect("scratch directory");
    let (server, ca) = nts_server(&dir);
    let target = format!("localhost:{}", server.ke.port());

    let json = dir.path("ke.json");
    let out = authtime_lab(&[
        "load",
        "nts-ke",
        "--target",
        &target,
        "--ca",
        &ca,
        "--rate",
        "40",
        "--duration",
        "1",
        "--json",
        &json.display().to_string(),
    ]);
    assert!(out.status.success(), "load nts-ke: {}", text_of(&out));
    let r = report(&json);
    let step = &r["steps"][0];
    assert_eq!(count(&step["scheduled"]), 40, "{step}");
    assert_eq!(count(&step["ke_ok"]), 40, "{step}");
    assert_eq!(step["ke_error_share"].as_f64(), Some(0.0), "{step}");
    assert_eq!(count(&step["d_cke"]["count"]), 40, "{step}");
    let p50 = step["d_cke"]["p50_us"].as_f64().unwrap_or(0.0);
    let max = step["d_cke"]["max_us"].as_f64().unwrap_or(0.0);
    assert!(p50 > 0.0 && max >= p50 && max < 2e6, "{step}");

    // `--group both`: the same step with each key exchange, and the server
    // negotiated the group each offered.
    let json = dir.path("groups.json");
    let out = authtime_lab(&[
        "load",
        "nts-ke",
        "--target",
        &target,
        "--ca",
        &ca,
        "--rate",
        "20",
        "--duration",
        "0.5",
        "--group",
        "both",
        "--json",
        &json.display().to_string(),
    ]);
    assert!(
        out.status.success(),
        "load nts-ke --group both: {}",
        text_of(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("X25519MLKEM768: rate 20/s") && stdout.contains("\nX25519: rate 20/s"),
        "{stdout}"
    );
    let r = report(&json);
    let groups = r["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 2, "{r}");
    for (g, name) in groups.iter().zip(["x25519-mlkem768", "x25519"]) {
        assert_eq!(g["key_exchange"], name, "{g}");
        assert_eq!(count(&g["steps"][0]["ke_ok"]), 10, "{g}");
    }
    let metrics = scrape(server.metrics.expect("metrics")).expect("scrape");
    let negotiated = |group: &str| {
        let sample = format!("authtime_ntske_key_exchange_groups_total{{group=\"{group}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&sample)?.parse::<u64>().ok())
    };
    assert_eq!(negotiated("X25519MLKEM768"), Some(50), "{metrics}");
    assert_eq!(negotiated("X25519"), Some(10), "{metrics}");

    let json = dir.path("nts.json");
    let out = authtime_lab(&[
        "load",
        "nts",
        "--target",
        &target,
        "--ca",
        &ca,
        "--rate",
        "60",
        "--duration",
        "1",
        "--ntp-per-ke",
        "3",
        "--json",
        &json.display().to_string(),
    ]);
    assert!(out.status.success(), "load nts: {}", text_of(&out));
    let r = report(&json);
    let step = &r["steps"][0];
    assert_eq!(count(&step["scheduled"]), 60, "{step}");
    assert_eq!(count(&step["ntp_ok"]), 60, "{step}");
    assert_eq!(count(&step["ke_ok"]), 20, "{step}");
    assert_eq!(step["ntp_error_share"].as_f64(), Some(0.0), "{step}");
    assert_eq!(step["ke_error_share"].as_f64(), Some(0.0), "{step}");
    assert_eq!(count(&step["unmatched"]), 0, "{step}");
    let p50 = step["d_ntp"]["p50_us"].as_f64().unwrap_or(0.0);
    assert!(p50 > 0.0 && p50 < 1e6, "{step}");
}

#[test]
fn a_ramp_runs_one_step_per_rate() {
    let dir = Scratch::new().expect("scratch directory");
    let (server, ca) = nts_server(&dir);
    let json = dir.path("ramp.json");
    let out = authtime_lab(&[
        "load",
        "nts",
        "--target",
        &format!("localhost:{}", server.ke.port()),
        "--ca",
        &ca,
        "--ntp-per-ke",
        "0",
        "--ramp",
        "50:100:50",
        "--step-seconds",
        "0.5",
        "--json",
        &json.display().to_string(),
    ]);
    assert!(out.status.success(), "load nts ramp: {}", text_of(&out));
    let r = report(&json);
    let steps = r["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2);
    for (step, rate) in steps.iter().zip([50u64, 100]) {
        assert_eq!(count(&step["ntp_ok"]), rate / 2, "{step}");
        assert_eq!(count(&step["ke_ok"]), 0, "{step}");
    }
}

#[test]
fn a_server_limiting_the_generators_address_is_named_as_the_cause() {
    use authtime_lab::section_nts_server::start_authtime_with;
    let dir = Scratch::new().expect("scratch directory");
    let certs = make_certificates(&dir).expect("authtime nts cert");
    // The server's default per-client limits: 16 handshakes, then 0.2 a second.
    let server = start_authtime_with(&dir, &certs, None, true).expect("authtime serve");
    let target = format!("localhost:{}", server.ke.port());
    let ca = certs.ca.display().to_string();
    let out = authtime_lab(&[
        "load",
        "nts-ke",
        "--target",
        &target,
        "--ca",
        &ca,
        "--rate",
        "40",
        "--duration",
        "1",
    ]);
    assert!(out.status.success(), "{}", text_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 40 scheduled, at most the burst (16) and a few refills get through.
    assert!(stdout.contains("reset "), "{}", text_of(&out));
    assert!(stderr.contains("client-limit = false"), "{}", text_of(&out));
    let metrics = scrape(server.metrics.expect("metrics")).expect("scrape");
    assert!(
        metrics.lines().any(|l| l
            .starts_with("authtime_ntske_sessions_total{outcome=\"rate_limited\"}")
            && !l.ends_with(" 0")),
        "{metrics}"
    );
}
