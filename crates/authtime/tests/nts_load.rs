//! `authtime load nts-ke` and `authtime load nts` against a real
//! `authtime serve` on loopback: short runs at a low rate, every request
//! answered, none failed, and the JSON report says so.

mod ntp_support;

use ntp_support::{Serve, TempDir, authtime, text_of};

/// A server with NTS-KE on a free port and a CA-signed `localhost` leaf; the CA's path.
fn nts_server(dir: &TempDir) -> (Serve, std::path::PathBuf) {
    let out = authtime(&[
        "nts",
        "cert",
        "--name",
        "localhost",
        "--ip",
        "127.0.0.1",
        "--out-dir",
        &dir.0.display().to_string(),
    ]);
    assert!(out.status.success(), "nts cert: {}", text_of(&out));
    let config = format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\n[rate-limit]\nenabled = false\n\
         [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"{}\"\nprivate-key = \"{}\"\n\
         [keystore]\nkind = \"embedded\"\npath = \"{}\"\n",
        dir.path("nts-chain.pem").display(),
        dir.path("nts-key.pem").display(),
        dir.path("master-keys").display()
    );
    let serve = Serve::start_named(dir, "serve", &config);
    (serve, dir.path("nts-ca.pem"))
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
    let dir = TempDir::new("nts-load");
    let (serve, ca) = nts_server(&dir);
    let ke = serve.nts_ke.expect("NTS-KE address");
    let target = format!("localhost:{}", ke.port());
    let ca = ca.display().to_string();

    let json = dir.path("ke.json");
    let out = authtime(&[
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

    let json = dir.path("nts.json");
    let out = authtime(&[
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
    let dir = TempDir::new("nts-load-ramp");
    let (serve, ca) = nts_server(&dir);
    let ke = serve.nts_ke.expect("NTS-KE address");
    let json = dir.path("ramp.json");
    let out = authtime(&[
        "load",
        "nts",
        "--target",
        &format!("localhost:{}", ke.port()),
        "--ca",
        &ca.display().to_string(),
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
