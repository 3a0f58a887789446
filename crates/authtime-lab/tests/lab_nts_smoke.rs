//! The lab's nts section end to end in its smoke plan: the real
//! `authtime serve` and chronyd on loopback, every experiment of the section
//! run at a few requests per second (the reconnect flood for about a second
//! per server, the key exchange groups for a fraction of one), and the
//! report's tables filled. The
//! figures of a smoke run mean nothing; the full run is
//! `authtime-lab run --only nts`.
//!
//! The section starts the `authtime` executable of this build (target/<profile>/
//! authtime), which this crate does not build: `cargo test --workspace` does,
//! and so does `cargo build -p authtime` before `cargo test -p authtime-lab`.

use authtime_lab::Progress;
use authtime_lab::section_nts::{Plan, run_plan};

#[test]
fn the_nts_section_runs_end_to_end_against_authtime_and_chronyd() {
    let started = std::time::Instant::now();
    let mut lines = Vec::new();
    let section = {
        let mut progress = Progress::new(|l: &str| lines.push(l.to_owned()));
        run_plan(Plan::smoke(), true, &mut progress).expect("section")
    };
    assert!(started.elapsed() < std::time::Duration::from_secs(120));
    assert_eq!(lines.len(), 8, "{lines:?}");
    let text = section.findings.join("\n");
    assert!(!text.contains("could not be measured"), "{text}");
    assert!(!text.contains("measurements stopped"), "{text}");

    let table = |title: &str| {
        section
            .tables
            .iter()
            .find(|t| t.title.contains(title))
            .unwrap_or_else(|| panic!("no table {title}"))
    };
    // Table II: six measures, both servers answered every client-side one.
    let t2 = table("Table II");
    assert_eq!(t2.rows.len(), 6);
    for row in &t2.rows[..3] {
        for cell in &row[2..4] {
            assert!(cell.contains("p95"), "{row:?}");
        }
    }
    // authtime's server-side times come from its metrics.
    for row in &t2.rows[3..] {
        assert!(row[2].contains("µs") && row[2].contains("n "), "{row:?}");
        assert_eq!(row[3], "not observable");
    }
    // Every ramp of both servers ran at least its first step (a ramp stops
    // early after a step whose generator fell behind, which a busy machine
    // may cause), and every step the generator kept up with was answered in
    // full at these rates.
    let ramps = table("ramps");
    for server in ["authtime", "chronyd"] {
        let rows: Vec<_> = ramps.rows.iter().filter(|r| r[0] == server).collect();
        for kind in ["nts-ke", "nts-3", "nts-ntp"] {
            assert!(
                rows.iter().any(|r| r[2] == kind),
                "{server} {kind}: {rows:?}"
            );
        }
        assert!(rows.len() <= 5, "{server}: {rows:?}");
        for r in rows {
            if !r[11].contains("fell behind") {
                assert_eq!(r[8], "0.00%", "{r:?}");
            }
        }
    }
    // No step of any ramp got a wrong answer, on schedule or not: failed TLS,
    // refused key exchanges, NAKs, replies failing authentication, kisses.
    let runs = section.data["runs"].as_array().expect("runs");
    for step in runs
        .iter()
        .flat_map(|r| r["ramps"].as_array().expect("ramps"))
        .flat_map(|r| r["steps"].as_array().expect("steps"))
    {
        for errors in ["ke_errors", "ntp_errors"] {
            for class in ["tls", "ke_refused", "nak", "bad_auth", "kiss"] {
                assert_eq!(step["load"][errors][class], 0, "{errors}.{class}: {step}");
            }
        }
    }
    assert_eq!(table("Knees").rows.len(), 3);
    assert_eq!(table("Capacity").rows.len(), 2);
    assert!(section.findings.iter().any(|f| f.contains("d_SNTS")));

    // The key exchange groups side by side on authtime: a row per group, and
    // the server negotiated the group each client offered.
    assert!(!text.contains("groups not measured"), "{text}");
    assert_eq!(table("key exchange groups").rows.len(), 2);
    let groups = section.data["groups"].as_array().expect("group runs");
    for (g, offer) in groups.iter().zip(["x25519-mlkem768", "x25519"]) {
        assert_eq!(g["offer"], offer, "{g}");
        let ok = g["ok"].as_u64().unwrap_or(0);
        assert!(ok > 0 && g["negotiated"].as_u64() >= Some(ok), "{g}");
    }

    // The reconnect flood ran against both servers, and authtime's metrics
    // show it refusing the flooder.
    assert!(!text.contains("flood not measured"), "{text}");
    assert_eq!(table("reconnect flood").rows.len(), 2);
    let floods = section.data["flood"].as_array().expect("flood runs");
    let authtime = floods
        .iter()
        .find(|f| f["server"] == "authtime")
        .expect("authtime flood run");
    let refused = &authtime["refused_by_server"];
    assert!(
        refused[0].as_u64().unwrap_or(0) + refused[1].as_u64().unwrap_or(0) > 0,
        "{authtime}"
    );
}
