//! Keygen/sign/verify medians per scheme on a 113-byte message (the sync response size).
//! Ignored by default; run with
//! `cargo test -p authtime-sign --release --test timings -- --ignored --nocapture`.

use authtime_sign::{Scheme, measure_timings};

#[test]
#[ignore = "timing report, run on demand"]
fn report_timings() {
    let message = [0x42u8; 113];
    println!("| scheme | pk B | sig B | sk B | keygen | sign | verify |");
    println!("|---|---|---|---|---|---|---|");
    for scheme in Scheme::ALL {
        let runs = match scheme {
            Scheme::SlhDsaSha2_128s | Scheme::Lms => 5,
            _ => 21,
        };
        let t = measure_timings(scheme, &message, runs);
        let s = scheme.sizes();
        println!(
            "| {scheme} | {} | {} | {} | {:?} | {:?} | {:?} | (median of {runs})",
            s.public_key, s.signature, s.secret_key, t.keygen, t.sign, t.verify
        );
    }
}
