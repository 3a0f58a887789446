//! The lab's accuracy section end to end in its smoke plan: two network
//! namespaces joined by a veth pair, the real `authtime serve` and chronyd in
//! one, the generator in the other, 400 requests per server and mode. The
//! figures of a smoke run mean little; the full run is
//! `authtime-lab run --only accuracy`.
//!
//! Needs root and iproute2 (skipped, with the reason printed, otherwise),
//! and the `authtime` executable of this build (target/<profile>/authtime),
//! which this crate does not build: `cargo test --workspace` does, and so
//! does `cargo build -p authtime` before `cargo test -p authtime-lab`.

use authtime_lab::Progress;
use authtime_lab::section_accuracy::{Plan, run_plan};

#[test]
fn the_accuracy_section_measures_both_servers_in_namespaces_and_cleans_up() {
    if let Some(why) = authtime_lab::netns::unavailable() {
        eprintln!("skipped: the accuracy section {why}");
        return;
    }
    let started = std::time::Instant::now();
    let mut lines = Vec::new();
    let outcome = {
        let mut progress = Progress::new(|l: &str| lines.push(l.to_owned()));
        run_plan(Plan::smoke(), &mut progress)
    };
    assert!(started.elapsed() < std::time::Duration::from_secs(120));
    let notes = outcome.notes.join("\n");
    assert!(!notes.contains("could not be measured"), "{notes}");
    assert!(!notes.contains("Skipped"), "{notes}");

    // The namespaces existed, and are gone.
    assert_eq!(outcome.namespaces.len(), 2, "{outcome:?}");
    assert!(outcome.namespaces_removed, "{notes}");
    let left = authtime_lab::netns::list();
    for name in &outcome.namespaces {
        assert!(!left.contains(name), "{name} still listed: {left:?}");
    }

    let chronyd = authtime_lab::section_ntp::chronyd_installed();
    let servers: Vec<&str> = outcome.servers.iter().map(|s| s.0).collect();
    assert_eq!(
        servers,
        if chronyd {
            vec!["authtime", "authtime (clock reading)", "chronyd"]
        } else {
            vec!["authtime", "authtime (clock reading)"]
        }
    );
    // One measurement per server and mode (the smoke plan: one rate, one
    // round, even arrivals; the clock-reading variant in basic mode only),
    // each answered and measured.
    assert_eq!(outcome.measurements.len(), 2 * servers.len() - 1);
    assert_eq!(lines.len(), outcome.measurements.len(), "{lines:?}");
    for m in &outcome.measurements {
        let r = m.report.as_ref().unwrap_or_else(|| panic!("{m:?}"));
        assert!(m.error.is_none(), "{m:?}");
        assert_eq!(r.sent, 400, "{m:?}");
        assert!(r.received >= 390, "{m:?}");
        assert_eq!(r.unmatched, 0, "{m:?}");
        let a = r
            .accuracy
            .as_ref()
            .expect("kernel receive timestamps on veth");
        let (_, offsets, _) = a.headline();
        for x in [
            offsets.mean_us,
            offsets.median_us,
            offsets.p99_us,
            offsets.stddev_us,
        ] {
            assert!(x.is_finite(), "{m:?}");
        }
        assert!(offsets.count > 0, "{m:?}");
        assert!(offsets.median_us.abs() < 50_000.0, "{m:?}");
        // A basic T3 is read before the reply leaves: never after it by
        // more than a clock step could explain.
        if !m.interleaved {
            assert_eq!(a.basic.count, r.received, "{m:?}");
            assert!(offsets.min_us > -1_000.0, "{m:?}");
        }
        assert!((0.0..=1.0).contains(&a.interleaved_share), "{m:?}");
    }
    // authtime and chronyd answer interleaved requests interleaved from each
    // client's third on (40 clients of 10 requests: 320 of 400 at most).
    let interleaving = if chronyd {
        vec!["authtime", "chronyd"]
    } else {
        vec!["authtime"]
    };
    for server in interleaving {
        let m = outcome
            .measurements
            .iter()
            .find(|m| m.server == server && m.interleaved)
            .expect("interleaved");
        let a = m
            .report
            .as_ref()
            .and_then(|r| r.accuracy.as_ref())
            .expect("measured");
        assert!(a.interleaved_share_after_warmup > 0.5, "{a:?}");
        assert!(a.interleaved.count > 150, "{a:?}");
        assert!(a.interleaved.median_us.abs() < 1_000.0, "{a:?}");
    }

    // The report: the summary and the per-measurement table, both plots.
    let section = authtime_lab::section_accuracy_report::section(&outcome, true);
    assert_eq!(section.id, "accuracy");
    assert_eq!(section.tables.len(), 2);
    assert_eq!(section.tables[0].rows.len(), 1);
    assert_eq!(section.tables[1].rows.len(), outcome.measurements.len());
    assert_eq!(section.plots.len(), 2);
    assert!(section.method.contains("veth"));
    if chronyd {
        assert!(
            section
                .findings
                .iter()
                .any(|f| f.starts_with("Interleaved requests: chronyd")),
            "{:?}",
            section.findings
        );
    }
}
