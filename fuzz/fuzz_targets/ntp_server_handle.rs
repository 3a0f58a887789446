//! The NTP server's packet handler on any request: a reply never larger than the request, no panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_proto::fuzz_harness::server_handle(data);
});
