//! The NTS client on any reply: no panic, only authentic replies yield cookies.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_nts::fuzz_harness::client_response(data);
});
