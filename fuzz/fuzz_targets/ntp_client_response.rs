//! The NTP client's response processing on any reply: a sample or an error, no panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_proto::fuzz_harness::client_process_response(data);
});
