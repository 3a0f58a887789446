//! Roughtime server lists and malfeasance reports: any bytes parse as an
//! ecosystem server list or fail with an error, and any bytes parse as a
//! report whose verification returns a verdict or an error, never a panic.
//! Every server a list accepts has a `host:port` UDP address.

#![no_main]

use authtime_roughtime::MalfeasanceReport;
use authtime_roughtime::ecosystem::{is_host_port, parse_ecosystem};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(servers) = parse_ecosystem(data) {
        assert!(!servers.is_empty());
        for s in &servers {
            assert!(!s.addresses.is_empty());
            assert!(s.addresses.iter().all(|a| is_host_port(a)));
        }
    }
    if let Ok(report) = MalfeasanceReport::from_json(data) {
        let _ = report.verify();
        let again = MalfeasanceReport::from_json(report.to_json().as_bytes())
            .expect("a parsed report writes back as JSON that parses");
        assert_eq!(again, report);
    }
});
