//! NTS-KE client core: any response bytes are accepted with bounded cookies and an offered AEAD, or refused cleanly.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_ntske::fuzz_harness::client_response(data);
});
