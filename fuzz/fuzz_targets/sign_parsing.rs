//! authtime-sign: public and secret key files, raw and tagged keys of every scheme, and
//! verify() of arbitrary signature bytes under every scheme: errors, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_sign::fuzz_harness::parse_keys_and_signatures(data);
});
