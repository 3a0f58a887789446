//! :fuzz_parse:leap-seconds.list files: any bytes parse or fail with a line number, and a parsed list answers every question at any time.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_clock::leap_list::fuzz_parse(data);
});
