//! NTS-KE server core as an NTS pool member: any request bytes give a well-formed response, Keep Alive only for an authenticated pool request, and a non-member's exact bytes to anyone without the token; never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_ntske::fuzz_harness::pool_member_request(data);
});
