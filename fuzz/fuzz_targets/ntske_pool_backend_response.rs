//! NTS-KE load balancer: any bytes from a pool member (Support or Fixed Key answer) are read with bounded lists and cookies, or refused cleanly.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_ntske::fuzz_harness::pool_backend_response(data);
});
