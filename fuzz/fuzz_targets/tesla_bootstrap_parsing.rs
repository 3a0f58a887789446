//! Sync response bodies, signed blobs and fragment reassembly: no panic, exact round trip, bounded memory.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_tesla::fuzz_harness::bootstrap_parsing(data);
});
