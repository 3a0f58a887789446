//! Roughtime packets: any bytes parse as a message, a request, a server batch
//! and a response to verify, or fail cleanly; a message that parses encodes
//! back to the same bytes.

#![no_main]

use authtime_roughtime::message::{self, Message};
use authtime_roughtime::{BatchTime, OnlineKey, parse_request, respond_batch, verify_response};
use libfuzzer_sys::fuzz_target;

// roughenough's captured 0x8000000c exchange (see the crate's testdata/README.md):
// the fuzzed bytes stand in for its response.
const REQUEST: &[u8] =
    include_bytes!("../../crates/authtime-roughtime/testdata/roughenough-rfc-request.071039e5");
const LONG_TERM_KEY: [u8; 32] = [
    0x01, 0x6e, 0x6e, 0x02, 0x84, 0xd2, 0x4c, 0x37, 0xc6, 0xe4, 0xd7, 0xd8, 0xd5, 0xb4, 0xe1, 0xd3,
    0xc1, 0x94, 0x9c, 0xea, 0xa5, 0x45, 0xbf, 0x87, 0x56, 0x16, 0xc9, 0xdc, 0xe0, 0xc9, 0xbe, 0xc1,
];

fuzz_target!(|data: &[u8]| {
    let body = message::unframe(data).unwrap_or(data);
    if let Ok(msg) = Message::parse(body) {
        let again = message::encode(msg.entries()).expect("a parsed message encodes");
        assert_eq!(again, body);
    }
    let _ = parse_request(data);
    let _ = verify_response(REQUEST, data, &LONG_TERM_KEY);
    let _ = verify_response(data, data, &LONG_TERM_KEY);

    let long_term = authtime_roughtime::SigningKey::from_bytes(&[1; 32]);
    let online = authtime_roughtime::SigningKey::from_bytes(&[2; 32]);
    let key = OnlineKey::delegate(&long_term, online, 0, u64::MAX).expect("valid window");
    let time = BatchTime {
        midpoint: 1,
        radius: 1,
    };
    let srv = authtime_roughtime::request::srv_value(&long_term.verifying_key().to_bytes());
    if let Ok(out) = respond_batch(&[data, REQUEST], time, &key, &srv) {
        for (request, response) in [data, REQUEST].iter().zip(out) {
            if let Ok(response) = response {
                assert!(response.len() <= request.len());
                let public = long_term.verifying_key().to_bytes();
                verify_response(request, &response, &public).expect("own responses verify");
            }
        }
    }
});
