//! Writes a test CA and a server certificate for NTS-KE interop tests.
//!
//! `cargo run -p authtime-ntske --example gen_test_certs -- OUT_DIR [NAME...]`
//! (names default to `localhost 127.0.0.1 ::1`) writes `OUT_DIR/chain.pem` (server
//! certificate then CA), `OUT_DIR/key.pem` and `OUT_DIR/trust.pem` (the CA). chronyd as
//! a client trusts it with `ntstrustedcerts OUT_DIR/trust.pem`; as a server it uses
//! `ntsservercert OUT_DIR/chain.pem` and `ntsserverkey OUT_DIR/key.pem`.
//!
//! The same with the openssl command line:
//! ```text
//! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
//!   -subj "/CN=authtime test CA" -keyout ca.key -out trust.pem
//! openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
//!   -subj "/CN=localhost" -keyout key.pem -out server.csr
//! printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\n' > san.ext
//! openssl x509 -req -in server.csr -CA trust.pem -CAkey ca.key -CAcreateserial \
//!   -days 30 -extfile san.ext -out server.pem
//! cat server.pem trust.pem > chain.pem
//! ```

#[path = "../tests/common/certs.rs"]
#[allow(dead_code, unreachable_pub)]
mod certs;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: gen_test_certs OUT_DIR [NAME...]");
        std::process::exit(2);
    };
    let names: Vec<String> = args.collect();
    let names: Vec<&str> = if names.is_empty() {
        vec!["localhost", "127.0.0.1", "::1"]
    } else {
        names.iter().map(String::as_str).collect()
    };
    certs::ca_signed(&names).write_to(std::path::Path::new(&out));
    println!("wrote {out}/chain.pem, {out}/key.pem, {out}/trust.pem for {names:?}");
}
