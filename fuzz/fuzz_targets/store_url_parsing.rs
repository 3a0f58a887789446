//! Redis key-store URLs (redis://, rediss://, redis+sentinel://): any bytes give a parsed URL or an error, never a panic, never the password in an error.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_keys::fuzz_harness::store_url_parsing(data);
});
