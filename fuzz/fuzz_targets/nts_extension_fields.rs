//! NTS extension-field parsing (packet view, authenticator, encrypted fields): no panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_nts::fuzz_harness::extension_fields(data);
});
