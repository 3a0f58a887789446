//! `authtime serve` configuration files: any bytes give settings or a list of problems, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_server::fuzz_harness::config_parsing(data);
});
