//! Runs one NTS-KE exchange and prints what was negotiated (for interop checks).
//!
//! `cargo run -p authtime-ntske --example ke_fetch -- HOST PORT [CA_FILE]`

use std::path::PathBuf;
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(host), Some(port)) = (args.first(), args.get(1).and_then(|p| p.parse().ok())) else {
        eprintln!("usage: ke_fetch HOST PORT [CA_FILE]");
        std::process::exit(2);
    };
    let ca = args.get(2).map(PathBuf::from);
    match authtime_ntske::fetch(host, port, ca.as_deref(), Duration::from_secs(5)).await {
        Ok(out) => println!(
            "aead {} key length {} cookies {} (sizes {:?}) ntp {}:{} in {:?} (handshake {:?})",
            out.aead_id,
            out.keys.c2s.len(),
            out.cookies.len(),
            out.cookies.iter().map(Vec::len).collect::<Vec<_>>(),
            out.ntp_server,
            out.ntp_port,
            out.elapsed,
            out.handshake_elapsed
        ),
        Err(e) => {
            eprintln!("NTS-KE failed: {e}");
            std::process::exit(1);
        }
    }
}
