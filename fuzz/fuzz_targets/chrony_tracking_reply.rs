//! :fuzz_tracking_reply:chronyd's command-protocol tracking reply: any bytes decode or fail cleanly, and a decoded report maps to a reading.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_clock::chrony_cmd::fuzz_tracking_reply(data);
});
