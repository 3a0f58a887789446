//! The lab's xdp section end to end in its smoke plan: two network
//! namespaces joined by a veth pair, chronyd, `authtime serve` on sockets
//! and `authtime serve` on AF_XDP in one, the generator in the other, one
//! second of 10k CMAC requests/s per server; then the same for NTS-NTP (one
//! second of 2k requests/s) and for Roughtime (roughenough in chronyd's
//! place, one second of 2k requests/s). The figures of a smoke run mean
//! little; the full run is `authtime-lab run --only xdp`.
//!
//! roughenough 2.2 comes from the peer cache (`scripts/ensure-roughenough.sh`);
//! without it its column must say so, and the rest is still checked.
//!
//! Needs root and iproute2 (skipped, with the reason printed, otherwise),
//! and the `authtime` executable of this build (target/<profile>/authtime),
//! which this crate does not build: `cargo test --workspace` does, and so
//! does `cargo build -p authtime` before `cargo test -p authtime-lab`.
//! An `authtime` without the AF_XDP data path refuses the `[xdp]` section:
//! the test then checks that the section says so, with the daemon's message;
//! one with it must answer through AF_XDP like the other two.

use authtime_lab::Progress;
use authtime_lab::section_xdp::{Auth, Plan, Protocol, ServerKind, run_plan};
use authtime_lab::section_xdp_report::Figures;

#[test]
fn the_xdp_section_measures_every_server_or_says_why_and_cleans_up() {
    if let Some(why) = authtime_lab::netns::unavailable() {
        eprintln!("skipped: the xdp section {why}");
        return;
    }
    let started = std::time::Instant::now();
    let mut lines = Vec::new();
    let outcome = {
        let mut progress = Progress::new(|l: &str| lines.push(l.to_owned()));
        run_plan(Plan::smoke(), &mut progress)
    };
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let notes = outcome.notes.join("\n");
    assert!(!notes.contains("Skipped"), "{notes}");

    // The namespaces existed, and are gone.
    assert_eq!(outcome.namespaces.len(), 2, "{outcome:?}");
    assert!(outcome.namespaces_removed, "{notes}");
    let left = authtime_lab::netns::list();
    for name in &outcome.namespaces {
        assert!(!left.contains(name), "{name} still listed: {left:?}");
    }

    // Every server of every protocol is there, measured or with the reason
    // it was not.
    let chronyd = authtime_lab::section_ntp::chronyd_installed();
    let roughenough = authtime_lab::section_roughtime::roughenough_server().is_some();
    let listed: Vec<(Protocol, ServerKind)> = outcome
        .servers
        .iter()
        .map(|s| (s.protocol, s.server))
        .collect();
    let expected: Vec<(Protocol, ServerKind)> = Protocol::ALL
        .iter()
        .flat_map(|&p| ServerKind::ALL.map(|k| (p, k)))
        .collect();
    assert_eq!(listed, expected);
    for protocol in Protocol::ALL {
        let peer = if protocol == Protocol::Roughtime {
            roughenough
        } else {
            chronyd
        };
        assert_eq!(
            outcome.measured(protocol, ServerKind::Chronyd),
            peer,
            "{protocol:?}: {outcome:?}"
        );
        assert!(
            outcome.measured(protocol, ServerKind::Sockets),
            "{protocol:?}: {outcome:?}"
        );
    }
    let xdp = outcome
        .servers
        .iter()
        .find(|s| s.server == ServerKind::Xdp && s.protocol == Protocol::Ntp)
        .expect("listed");
    if let Some(why) = &xdp.not_available {
        // Only an authtime without the AF_XDP data path may leave the
        // column out, and the column then carries its own message. One
        // that has it must serve through it here (root, a veth in native
        // mode), as its own tests do.
        assert!(
            why.starts_with("authtime serve exited") && why.contains("unknown field `xdp`"),
            "{why}"
        );
    }
    assert!(outcome.idle_busy_per_s.is_some_and(|b| b >= 0.0));

    // One measurement per measured server and authentication.
    let measured = outcome
        .plan
        .auths
        .iter()
        .flat_map(|&a| ServerKind::ALL.map(|k| (a.protocol(), k)))
        .filter(|&(p, k)| outcome.measured(p, k))
        .count();
    assert_eq!(outcome.measurements.len(), measured, "{outcome:?}");
    assert_eq!(lines.len(), outcome.measurements.len(), "{lines:?}");
    // NTP: each answered, with CPU figures and T3 offsets.
    for m in outcome.measurements.iter().filter(|m| m.auth == Auth::Cmac) {
        assert!(m.error.is_none(), "{m:?}");
        assert_eq!(m.auth, Auth::Cmac);
        let r = m.report.as_ref().unwrap_or_else(|| panic!("{m:?}"));
        assert_eq!(r.sent, 10_000, "{m:?}");
        assert!(r.received > 9_000, "{m:?}");
        assert_eq!(r.unmatched, 0, "{m:?}");
        let f = Figures::of(m, &outcome).expect("figures");
        assert!(f.answered > 0.0, "{m:?}");
        let server = f.server_us.expect("server CPU");
        let machine = f.machine_us.expect("machine CPU");
        assert!(server > 0.0, "{m:?}");
        assert!(machine > 0.0, "{m:?}");
        // The machine's busy time includes the server's (less a tick each
        // way of rounding, 10 ms over about 9000 replies).
        assert!(machine + 2.5 > server, "{m:?}");
        assert!(f.generator_us.is_some_and(|g| g > 0.0), "{m:?}");
        assert!(f.steal.is_some_and(|s| (0.0..=1.0).contains(&s)), "{m:?}");
        let mean = f.t3_mean_us.expect("kernel receive timestamps on veth");
        let median = f.t3_median_us.expect("median");
        let p99 = f.t3_p99_us.expect("p99");
        assert!(mean.abs() < 50_000.0 && median.abs() < 50_000.0, "{m:?}");
        assert!(p99 >= median, "{m:?}");
    }

    // Interleaved NTP: after each client's first two requests every reply
    // is interleaved, from every server (chronyd, and authtime on sockets
    // and on AF_XDP, whose transmit times come from the completion ring),
    // and the offsets are the interleaved replies'.
    let interleaved: Vec<_> = outcome
        .measurements
        .iter()
        .filter(|m| m.auth == Auth::Interleaved)
        .collect();
    assert!(!interleaved.is_empty(), "{outcome:?}");
    for m in interleaved {
        assert!(m.error.is_none(), "{m:?}");
        let r = m.report.as_ref().unwrap_or_else(|| panic!("{m:?}"));
        assert!(r.interleaved, "{m:?}");
        let a = r.accuracy.as_ref().expect("accuracy");
        assert!(a.interleaved_share_after_warmup > 0.95, "{m:?}");
        let f = Figures::of(m, &outcome).expect("figures");
        let median = f.t3_median_us.expect("interleaved offsets");
        assert!((median - a.interleaved.median_us).abs() < 1e-9, "{m:?}");
    }

    // NTS-NTP and Roughtime: every measurement answered, each server's
    // replies checked (NTS) or sampled and verified (Roughtime); with the
    // AF_XDP data path, authtime on AF_XDP answered through it.
    for auth in [Auth::Nts, Auth::Roughtime] {
        let runs: Vec<_> = outcome
            .measurements
            .iter()
            .filter(|m| m.auth == auth)
            .collect();
        assert!(!runs.is_empty(), "{auth:?}: {outcome:?}");
        for m in &runs {
            assert!(m.error.is_none(), "{m:?}");
            let f = Figures::of(m, &outcome).unwrap_or_else(|| panic!("{m:?}"));
            assert!(f.answered > 0.0, "{m:?}");
            assert!(f.loss < 0.5, "{m:?}");
            assert!(f.machine_us.is_some_and(|x| x > 0.0), "{m:?}");
            match auth {
                Auth::Nts => {
                    let r = m.nts.as_ref().unwrap_or_else(|| panic!("{m:?}"));
                    assert_eq!(r.ntp_errors.bad_auth, 0, "{m:?}");
                    assert!(f.t3_median_us.is_some(), "{m:?}");
                }
                _ => {
                    let r = m.roughtime.as_ref().unwrap_or_else(|| panic!("{m:?}"));
                    assert!(r.verification.verified > 0, "{m:?}");
                    assert_eq!(r.verification.verify_failed, 0, "{m:?}");
                    assert_eq!(f.t3_median_us, None, "{m:?}");
                }
            }
        }
        if xdp.not_available.is_none() {
            assert!(
                runs.iter()
                    .any(|m| m.server == ServerKind::Xdp && m.error.is_none()),
                "{auth:?}: {outcome:?}"
            );
        }
    }

    // The report: one table per step (three columns side by side: CMAC,
    // CMAC interleaved, NTS-NTP, Roughtime), the ratios (chronyd's,
    // roughenough's), every measurement; the method says what it measured.
    let section = authtime_lab::section_xdp_report::section(&outcome, true);
    assert_eq!(section.id, "xdp");
    assert_eq!(section.tables.len(), 7, "{:?}", section.tables);
    for (table, auth) in section.tables[..4].iter().zip([
        "AES-128-CMAC,",
        "AES-128-CMAC interleaved,",
        "NTS-NTP",
        "Roughtime",
    ]) {
        assert!(table.title.starts_with(auth), "{}", table.title);
        let answered = table
            .rows
            .iter()
            .find(|r| r[0].starts_with("answered"))
            .expect("answered row");
        if xdp.not_available.is_none() {
            let xdp_answered: f64 = answered[3].parse().unwrap_or(0.0);
            assert!(xdp_answered > 0.0, "{table:?}");
        }
    }
    assert!(section.tables[3].columns[1] == "roughenough");
    let step = &section.tables[0];
    assert_eq!(step.columns.len(), 4);
    assert!(step.columns[3].contains("AF_XDP"));
    if let Some(why) = &xdp.not_available {
        assert_eq!(step.rows[0][3], format!("not available: {why}"));
    }
    assert!(
        step.rows
            .iter()
            .any(|r| r[0].contains("whole machine") && r[2] != "–"),
        "{step:?}"
    );
    assert_eq!(section.tables[6].rows.len(), outcome.measurements.len());
    assert!(section.method.contains("interleaved rows"));
    assert!(section.method.contains("NTS-KE"));
    assert!(section.method.contains("roughenough"));
    assert!(section.method.contains("veth"));
    assert!(section.method.contains("/proc/stat"));
    assert!(serde_json::to_string(&section.data).is_ok_and(|j| j.contains("idle_busy_per_s")));
}
