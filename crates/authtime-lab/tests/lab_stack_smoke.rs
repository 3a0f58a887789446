//! The lab's stack section (seed 004) on a tiny plan: two sizes, one short
//! run each. As root the AF_XDP column must be there, positive, with its own
//! table, and its namespaces gone afterwards; without root it must say why
//! while the loopback columns are measured as ever. Nothing here assumes a
//! CPU's speed.

use std::time::Duration;

use authtime_lab::Progress;
use authtime_lab::rate::Budget;
use authtime_lab::section_stack::{Plan, run_plan};

fn tiny() -> Plan {
    Plan {
        sizes: vec![48, 1500],
        count: 200,
        xdp_count: 500,
        limit: Duration::from_secs(2),
        reps: 1,
        budget: Budget {
            per_run: Duration::from_millis(2),
            runs: 1,
        },
    }
}

#[test]
fn the_stack_section_has_an_af_xdp_column_as_root_or_says_why() {
    let mut lines = Vec::new();
    let section = {
        let mut progress = Progress::new(|l: &str| lines.push(l.to_owned()));
        run_plan(&tiny(), None, &mut progress).expect("loopback sockets")
    };
    assert_eq!(lines.len(), 2, "{lines:?}");
    let main = &section.tables[0];
    let column = main
        .columns
        .iter()
        .position(|c| c.starts_with("AF_XDP"))
        .expect("an AF_XDP column");
    let rows = section.data.as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert!(row["udp_ns"].as_f64().is_some_and(|v| v > 0.0), "{row}");
        assert!(
            row["xdp_frame_ns"].as_f64().is_some_and(|v| v > 0.0),
            "{row}"
        );
    }
    let not_measured = section
        .findings
        .iter()
        .find(|f| f.starts_with("The AF_XDP column was not measured"));

    if let Some(why) = authtime_lab::netns::unavailable() {
        eprintln!("AF_XDP column not measured here: {why}");
        let line = not_measured.expect("the reason, in the findings");
        assert!(line.contains(&why), "{line}");
        assert!(main.rows.iter().all(|r| r[column] == "–"), "{main:?}");
        assert_eq!(section.tables.len(), 2, "no AF_XDP table");
        return;
    }

    assert!(not_measured.is_none(), "{:?}", section.findings);
    for (cells, row) in main.rows.iter().zip(rows) {
        let cell: f64 = cells[column]
            .parse()
            .unwrap_or_else(|_| panic!("{cells:?}"));
        assert!(cell > 0.0, "{cells:?}");
        assert!(row["xdp_ns"].as_f64().is_some_and(|v| v > 0.0), "{row}");
        assert_eq!(row["xdp_lost_runs"].as_u64(), Some(0), "{row}");
        assert_eq!(row["xdp_moves"].as_u64(), Some(500), "{row}");
    }
    let xdp = &section.tables[1];
    assert!(xdp.title.contains("AF_XDP"), "{}", xdp.title);
    assert_eq!(xdp.rows.len(), 2);
    assert!(section.method.contains("AF_XDP"));
    // The section's namespaces are gone.
    let suffix = format!("-{}", std::process::id());
    let left = authtime_lab::netns::list();
    assert!(
        !left
            .iter()
            .any(|n| n.starts_with("authtime-lab-stk-") && n.ends_with(&suffix)),
        "{left:?}"
    );
}
