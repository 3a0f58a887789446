//! Key-encryption key files (`authtime nts kek`): any bytes give a key or an error, never a panic, never the file's content in an error.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_keys::fuzz_harness::kek_file_parsing(data);
});
