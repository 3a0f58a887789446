//! The lab's roughtime section end to end in its smoke plan: the cost by
//! batch size at a few milliseconds per size, then two short rounds each
//! against authtime's side and roughenough 2.2's server on loopback, every
//! fourth response verified. Asserts that the section runs, that its
//! numbers are well formed and that every sampled response verified; never
//! a speed. The full run is `authtime-lab run --only roughtime`.
//!
//! roughenough 2.2 comes from `scripts/ensure-roughenough.sh` (built once
//! per machine into the peer cache; `test.sh` runs it too). authtime's side
//! is the daemon when the `authtime` executable of this build takes a
//! `[roughtime]` section, else the lab's own loop, and the report says which.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use authtime_lab::{
    Progress,
    section_roughtime::{BATCH_SIZES, Plan, run_plan},
};

/// Runs `scripts/ensure-roughenough.sh` (a no-op when the cache holds the build).
fn ensure_roughenough() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-roughenough.sh");
    let mut child = Command::new(&script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    let deadline = Instant::now() + Duration::from_secs(15 * 60);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            assert!(status.success(), "ensure-roughenough.sh failed: {status}");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ensure-roughenough.sh did not finish within 15 minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn number(cell: &str) -> f64 {
    let digits: String = cell
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let value: f64 = digits
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {cell}"));
    if cell[digits.len()..].starts_with('k') {
        value * 1000.0
    } else {
        value
    }
}

#[test]
fn the_roughtime_section_runs_against_roughenough() {
    ensure_roughenough();
    let started = Instant::now();
    let section = run_plan(Plan::smoke(), &mut Progress::silent()).expect("section");
    assert!(started.elapsed() < Duration::from_secs(120));
    let data = &section.data;
    eprintln!(
        "authtime's side: {} ({})",
        data["authtime_server"], data["daemon_note"]
    );
    // The lab's own loop stands in only with the reason written down.
    let lab_loop = data["authtime_server"]
        .as_str()
        .is_some_and(|s| s.contains("NOT the daemon"));
    assert_eq!(lab_loop, !data["daemon_note"].is_null(), "{data}");
    assert!(
        data["comparison_error"].is_null(),
        "{}",
        data["comparison_error"]
    );

    // Cost by batch size: a row per size, positive costs, the batch of one is 1.
    let batch = &section.tables[0];
    assert_eq!(batch.rows.len(), BATCH_SIZES.len());
    for row in &batch.rows {
        for cell in &row[1..] {
            assert!(number(cell) > 0.0, "{row:?}");
        }
    }
    assert_eq!(batch.rows[0][2], "1.000");
    assert_eq!(batch.rows[0][4], "1.000");

    // Both servers, two rounds each, alternating; every sampled response verified.
    let rounds = data["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 4, "{rounds:?}");
    let servers: Vec<&str> = rounds
        .iter()
        .map(|r| r["server"].as_str().expect("server"))
        .collect();
    assert_eq!(
        servers,
        ["authtime", "roughenough", "roughenough", "authtime"]
    );
    for r in rounds {
        let load = &r["load"];
        assert!(load["received"].as_u64() > Some(0), "{r}");
        assert!(load["verified"].as_u64() > Some(0), "{r}");
        assert_eq!(load["verify_failed"], 0, "{r}");
        assert_eq!(load["request_bytes"], 1036, "{r}");
        assert!(load["response_bytes_max"].as_u64() <= Some(1036), "{r}");
        assert!(load["responses_per_s"].as_f64().is_some_and(f64::is_finite));
        // Both answer version 1 to a request offering both.
        assert_eq!(load["versions_seen"][0][0], 1, "{r}");
        // The daemon's metrics give its requests per signature.
        if r["server"] == "authtime" && !lab_loop {
            assert!(r["mean_batch"].as_f64().is_some_and(|b| b >= 1.0), "{r}");
        }
    }
    let servers_table = &section.tables[1];
    assert_eq!(servers_table.rows.len(), 2);
    let failed = servers_table
        .columns
        .iter()
        .position(|c| c == "failed verification")
        .expect("column");
    for row in &servers_table.rows {
        assert!(number(&row[1]) > 0.0, "{row:?}");
        assert_eq!(row[failed], "0", "{row:?}");
    }
    let ratio = &section.tables[2];
    assert!(ratio.rows[0][1].contains('×'), "{:?}", ratio.rows);
    assert!(section.method.contains("CPU 0"));
}
