//! Received Ethernet frames for the AF_XDP path (authtime-frame): any bytes classify without a panic, and a frame that is ours gets a reply, copied or built in place, that parses back with addresses, ports and payload swapped.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_frame::fuzz_harness::parse_build(data);
});
