//! Packets the kernel loops back with a transmit timestamp (Ethernet, VLAN, IPv4, IPv6, bare IP, UDP): any bytes give a payload inside the input or nothing, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_packet_io::fuzz_harness::looped_packet(data);
});
