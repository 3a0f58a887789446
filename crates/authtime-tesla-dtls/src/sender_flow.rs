//! The sender's flow over DTLS: receivers accepted one after another until
//! enough arrived or the wait is over (key disclosures keep flowing to those
//! already there), then the input streamed in TESLA packets with the payload
//! framing of `authtime_tesla::stream_frame`, a key disclosure every
//! interval, and end markers for `d + 1` intervals after the input so that
//! the last keys are disclosed. Reports are [`AcceptEvent`]s; nothing is
//! printed.

use std::io;
use std::sync::mpsc::{Receiver as Channel, TryRecvError};
use std::time::{Duration, Instant};

use authtime_tesla::stream_frame::{encode_data, encode_end};

use crate::flow_error::DtlsFlowError;
use crate::{Accepted, DtlsError, TeslaDtlsServer, unix_time};

/// The sender waits at most this long for each handshake message of a
/// receiver (a lost flight is not retransmitted: the receiver starts over).
const ATTEMPT: Duration = Duration::from_secs(1);

/// What happens while receivers are accepted.
#[non_exhaustive]
#[derive(Debug)]
pub enum AcceptEvent {
    /// Receiver number `number` completed its handshake and bootstrap.
    Accepted {
        /// Sessions now, this one included.
        number: usize,
        /// The handshake's details.
        accepted: Accepted,
    },
    /// A handshake failed (the receiver may try again).
    HandshakeFailed(DtlsError),
}

/// Accepts receivers until `wanted` are there or `wait` passes; returns the
/// number of failed handshakes. Each attempt is short so that a stale or
/// broken handshake costs little.
///
/// # Errors
/// A key disclosure to the receivers already there failed, or `on_event` did.
pub fn accept_receivers(
    server: &mut TeslaDtlsServer,
    wanted: usize,
    wait: Duration,
    on_event: &mut dyn FnMut(AcceptEvent) -> io::Result<()>,
) -> Result<u32, DtlsFlowError> {
    let deadline = Instant::now() + wait;
    let mut failed_handshakes = 0u32;
    while server.sessions() < wanted {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match server.accept(&unix_time, left.min(ATTEMPT)) {
            Ok(accepted) => on_event(AcceptEvent::Accepted {
                number: server.sessions(),
                accepted,
            })
            .map_err(DtlsFlowError::Report)?,
            Err(DtlsError::Timeout) => {
                // Keep the receivers already there informed.
                if server.sessions() > 0 {
                    server
                        .disclose_key(unix_time())
                        .map_err(DtlsFlowError::Dtls)?;
                }
            }
            Err(e) => {
                failed_handshakes += 1;
                on_event(AcceptEvent::HandshakeFailed(e)).map_err(DtlsFlowError::Report)?;
            }
        }
    }
    Ok(failed_handshakes)
}

/// What [`stream_input`] sent.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StreamCounts {
    /// Data packets.
    pub data_packets: u64,
    /// Stream bytes in them.
    pub stream_bytes: u64,
    /// Key-disclosure packets.
    pub key_disclosures: u64,
    /// End-of-stream packets.
    pub end_markers: u64,
}

/// Sends the input from `chunks` at `rate` packets per second at most, key
/// disclosures every interval, and the end markers.
///
/// # Errors
/// The schedule ended, the server failed, or the input could not be read.
pub fn stream_input(
    server: &mut TeslaDtlsServer,
    rate: f64,
    chunks: &Channel<io::Result<Vec<u8>>>,
) -> Result<StreamCounts, DtlsFlowError> {
    let d = server.sender().params().disclosure_delay;
    let schedule = server.sender().params().schedule();
    let pace = Duration::from_secs_f64(1.0 / rate);
    let mut next_data_at = Instant::now();
    let mut last_interval: Option<u32> = None;
    let mut ending: Option<(u32, u64)> = None;
    let mut seq: u64 = 0;
    let mut counts = StreamCounts::default();
    let dtls = DtlsFlowError::Dtls;
    loop {
        let now = unix_time();
        let interval = schedule
            .interval_at(now)
            .ok_or(DtlsFlowError::ScheduleEnded)?;
        if last_interval != Some(interval) {
            last_interval = Some(interval);
            if let Some((end, count)) = ending {
                server.broadcast(&encode_end(count), now).map_err(dtls)?;
                counts.end_markers += 1;
                if interval >= end.saturating_add(d).saturating_add(1) {
                    return Ok(counts);
                }
            } else {
                server.disclose_key(now).map_err(dtls)?;
                counts.key_disclosures += 1;
            }
        }
        while ending.is_none() && Instant::now() >= next_data_at {
            match chunks.try_recv() {
                Ok(chunk) => {
                    let chunk = chunk.map_err(DtlsFlowError::Input)?;
                    server
                        .broadcast(&encode_data(seq, &chunk), unix_time())
                        .map_err(dtls)?;
                    seq += 1;
                    counts.data_packets += 1;
                    counts.stream_bytes += chunk.len() as u64;
                    let floor = Instant::now()
                        .checked_sub(Duration::from_secs(1))
                        .unwrap_or_else(Instant::now);
                    next_data_at = (next_data_at + pace).max(floor);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    let now = unix_time();
                    server.broadcast(&encode_end(seq), now).map_err(dtls)?;
                    counts.end_markers += 1;
                    let at = schedule.interval_at(now).unwrap_or(interval);
                    last_interval = Some(at);
                    ending = Some((at, seq));
                }
            }
        }
        std::thread::sleep(Duration::from_micros(200).min(pace));
    }
}
