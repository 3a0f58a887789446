//! `authtime lab`'s nts section end to end in its smoke plan: the real
//! `authtime serve` and chronyd on loopback, every experiment of the section
//! run at a few requests per second, and the report's tables filled. The
//! figures of a smoke run mean nothing; the full run is `authtime lab --only nts`.

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
    // Every ramp step of both servers, each answered in full at these rates.
    let ramps = table("ramps");
    for server in ["authtime", "chronyd"] {
        let rows: Vec<_> = ramps.rows.iter().filter(|r| r[0] == server).collect();
        assert_eq!(rows.len(), 5, "{server}: {rows:?}");
        for r in rows {
            assert_eq!(r[8], "0.00%", "{r:?}");
        }
    }
    assert_eq!(table("Knees").rows.len(), 3);
    assert_eq!(table("Capacity").rows.len(), 2);
    assert!(section.findings.iter().any(|f| f.contains("d_SNTS")));
}
