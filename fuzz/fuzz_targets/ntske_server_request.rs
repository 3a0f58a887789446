//! NTS-KE server core: any request bytes give a well-formed response message (negotiation or Error record), never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_ntske::fuzz_harness::server_request(data);
});
