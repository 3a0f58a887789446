//! NTS cookie opening on any bytes: no panic, no forged cookie opens.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_nts::fuzz_harness::cookie_open(data);
});
