//! The NTS server on any request: a reply never longer than the request, never a reply to a tampered one, no panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_nts::fuzz_harness::server_handle(data);
});
