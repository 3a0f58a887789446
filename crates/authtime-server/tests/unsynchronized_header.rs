//! authtime's unsynchronized reply carries the header fields of chronyd's,
//! byte for byte: the capture of chronyd 4.3 with no source (the same bytes
//! as `authtime-proto/tests/chrony_captures.rs`) against what authtime's
//! server writes from `Announcement::unsynchronized`.

use authtime_clock::{Announcement, UnsyncCause};
use authtime_keys::KeySet;
use authtime_proto::{NoStats, Server, ServerAction, ServerConfig};
use authtime_server::clock::state::apply;
use authtime_wire::NtpTimestamp;

/// chronyd 4.3 (no source, `-x`, Debian 12), captured on loopback on
/// 2026-11-25, answering a plain request with transmit 0x123456789abcdef0.
const CHRONY_UNSYNCHRONIZED_REPLY: [u8; 48] = [
    0xe4, 0x00, 0x00, 0xe6, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
    0xee, 0xb1, 0x76, 0x0b, 0xf8, 0xb1, 0xc1, 0x13, 0xee, 0xb1, 0x76, 0x0b, 0xf8, 0xb8, 0x55, 0xba,
];

#[test]
fn our_unsynchronized_header_is_chronys() {
    let announcement = Announcement::unsynchronized(UnsyncCause::NotYetRead);
    let server = Server::new(apply(ServerConfig::default(), &announcement));
    let mut request = [0u8; 48];
    request[0] = 0x23;
    request[40..48].copy_from_slice(&0x1234_5678_9abc_def0_u64.to_be_bytes());
    let mut out = [0u8; 128];
    let recv = NtpTimestamp::from_bits(0xeeb1_760b_f8b1_c113);
    let tx = NtpTimestamp::from_bits(0xeeb1_760b_f8b8_55ba);
    let keys = KeySet::new(&[]).expect("no keys");
    let action = server.handle(&request, recv, tx, &keys, &mut out, &mut NoStats);
    assert_eq!(action, ServerAction::Send(48));
    let chrony = &CHRONY_UNSYNCHRONIZED_REPLY;
    // Leap/version/mode and stratum.
    assert_eq!(out[..2], chrony[..2]);
    // Poll echoes the request (0 in both); precision is each host's own.
    assert_eq!(out[2], chrony[2]);
    // Root delay, root dispersion, reference id, reference time.
    assert_eq!(out[4..24], chrony[4..24]);
    // Origin, receive and transmit as given.
    assert_eq!(out[24..48], chrony[24..48]);
}
