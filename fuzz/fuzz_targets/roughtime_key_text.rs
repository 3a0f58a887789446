//! Roughtime key texts (`authtime roughtime keygen` seeds and `delegate`
//! delegations, also the daemon's key store blob): any bytes give a key or an
//! error, never a panic; a delegation that parses writes back to a text that
//! parses to the same key and window.

#![no_main]

use authtime_roughtime::delegation_file::{delegation_text, parse_delegation, parse_seed};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_seed(text);
    if let Ok(d) = parse_delegation(text) {
        let again = delegation_text(&d.long_term_public, &d.key);
        let back = parse_delegation(&again).expect("a written delegation parses");
        assert_eq!(back.key.seed(), d.key.seed());
        assert_eq!(back.key.window(), d.key.window());
    }
});
