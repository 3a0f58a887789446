//! A bootstrapped TESLA receiver fed genuine, tampered, replayed and arbitrary datagrams: no panic, only genuine payloads released, bounded buffer.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_tesla::fuzz_harness::receiver_handle(data);
});
