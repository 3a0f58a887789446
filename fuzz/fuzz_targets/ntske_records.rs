//! NTS-KE records and messages: any bytes decode or fail cleanly, decoded records encode and decode to themselves, and split reads agree with whole ones.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_ntske::fuzz_harness::records(data);
});
