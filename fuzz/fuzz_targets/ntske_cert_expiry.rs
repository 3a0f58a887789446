//! The NTS-KE server's notAfter reader (`cert_expiry`, for the certificate
//! expiry metric): any bytes as a certificate give a time or `None`, never a
//! panic; a chain of the input's halves gives the earlier of their times.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    authtime_ntske::fuzz_harness::cert_expiry(data);
});
