//! NTS-KE load balancer: any client request is refused cleanly or sent to a backend that is not denied and shares the chosen AEAD.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_ntske::fuzz_harness::balancer_request(data);
});
