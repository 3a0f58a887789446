//! The interleaved NTP client (RFC 9769) driven through requests, replies
//! and late send times: samples or errors, no panic, its invariants kept.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = authtime_proto::fuzz_harness::client_interleaved(data);
});
