//! :fuzz_reply:An NTP daemon's reply as a clock-state reading: any bytes parse or fail cleanly.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_clock::ntp_upstream::fuzz_reply(data);
});
