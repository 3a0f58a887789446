//! NTP packets (RFC 5905 header, RFC 7822 extension fields, MAC trailer): decode never panics, and decode -> encode -> decode is stable.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_wire::fuzz_harness::packet_roundtrip(data);
});
