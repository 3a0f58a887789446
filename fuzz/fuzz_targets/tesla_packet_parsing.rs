//! TESLA datagrams of every kind: parse without panicking, account for every byte.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_tesla::fuzz_harness::packet_parsing(data);
});
