//! ntpd and chrony key files: any bytes give keys or an error with a line number, never a panic, never key material in an error.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_keys::fuzz_harness::parse_key_file(data);
});
