//! The NTS server's receive-batch path on up to eight requests at once: the same answer as one at a time, never a reply to a tampered request, no panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_nts::fuzz_harness::server_batch(data);
});
