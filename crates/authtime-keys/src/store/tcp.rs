//! The TCP connection both network stores open for each operation: every
//! address of the host tried in turn, connect and I/O bounded by `timeout`,
//! Nagle off.

use std::io::BufReader;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::StoreError;

/// Longest blob either network store writes or accepts (the key ring is a
/// few kilobytes).
pub(super) const MAX_BULK: usize = 1 << 20;

/// Connects to `host:port`; errors name the store as `describe` says.
pub(super) fn connect(
    host: &str,
    port: u16,
    timeout: Duration,
    describe: &str,
) -> Result<BufReader<TcpStream>, StoreError> {
    let unreachable = |e: std::io::Error| StoreError::Unreachable(format!("{describe}: {e}"));
    let addrs = (host, port).to_socket_addrs().map_err(unreachable)?;
    let mut last = StoreError::Unreachable(format!("{describe}: no address"));
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => {
                stream
                    .set_read_timeout(Some(timeout))
                    .map_err(unreachable)?;
                stream
                    .set_write_timeout(Some(timeout))
                    .map_err(unreachable)?;
                let _ = stream.set_nodelay(true);
                return Ok(BufReader::new(stream));
            }
            Err(e) => last = unreachable(e),
        }
    }
    Err(last)
}
