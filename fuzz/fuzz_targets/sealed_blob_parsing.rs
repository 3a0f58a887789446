//! Sealed master-key blobs from a shared store: any bytes are opened or refused, never a panic; what opens seals again to the same plaintext.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_keys::fuzz_harness::sealed_blob_parsing(data);
});
