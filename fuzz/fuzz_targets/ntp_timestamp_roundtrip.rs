//! NTP timestamps: era-aware conversions to and from Unix time round-trip.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_wire::fuzz_harness::timestamp_roundtrip(data);
});
