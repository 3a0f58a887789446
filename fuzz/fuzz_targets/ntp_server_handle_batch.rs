//! The batched server handler gives the same answers as the one-packet handler.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_proto::fuzz_harness::server_handle_batch(data);
});
