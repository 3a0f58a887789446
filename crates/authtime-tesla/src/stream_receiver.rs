//! The TESLA stream receiver driver, after the bootstrap
//! ([`crate::stream_bootstrap`]): datagrams of the group through the
//! [`Receiver`], the authenticated payloads written in stream order by a
//! [`StreamWriter`], until the stream ends, the group falls silent or the
//! clock bound fails. Reports are [`RecvReport`] values; nothing is printed.

use std::fmt;
use std::io::Write;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use crate::multicast::wall_clock;
use crate::stream_bootstrap::{Bootstrapped, MAX_DATAGRAM};
use crate::stream_frame::StreamWriter;
use crate::{Receiver, Stats, Status, Time};

/// Why receiving stopped early.
#[non_exhaustive]
#[derive(Debug)]
pub enum RecvError {
    /// The stream could not be written.
    Output(std::io::Error),
    /// The group socket refused its read timeout.
    GroupSocket(std::io::Error),
    /// The status handler failed.
    Report(std::io::Error),
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Output(e) => write!(f, "writing the stream: {e}"),
            Self::GroupSocket(e) => write!(f, "group socket: {e}"),
            Self::Report(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RecvError {}

/// The receiver's and the writer's counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvReport {
    /// The TESLA receiver's counters.
    pub stats: Stats,
    /// Stream bytes written.
    pub written_bytes: u64,
    /// Payloads written.
    pub written_payloads: u64,
    /// Payloads lost for good.
    pub missing: u64,
    /// Payloads too late to be written in order.
    pub late: u64,
    /// Authenticated payloads without valid framing.
    pub unframed: u64,
    /// Whether the end marker was seen.
    pub ended: bool,
    /// Whether a genuine key arrived before the clock bound allows (the
    /// bound is wrong; everything is refused from then on).
    pub clock_bound_violated: bool,
    /// Packets dropped before the bootstrap for lack of room.
    pub early_overflow: u64,
    /// Packets received before the bootstrap and found unsafe after it.
    pub early_unsafe: u64,
}

impl RecvReport {
    /// Packets rejected as forged or broken.
    #[must_use]
    pub fn failed(&self) -> u64 {
        let s = &self.stats;
        s.malformed
            + s.bad_mac
            + s.bad_keys
            + s.keys_too_far
            + s.keys_unreachable
            + s.future_interval
            + s.future_keys
            + s.clock_violations
            + s.refused
    }

    /// Packets too late to be safe, not counting those sent before the
    /// receiver could judge them.
    #[must_use]
    pub fn unsafe_dropped(&self) -> u64 {
        self.stats.unsafe_dropped.saturating_sub(self.early_unsafe)
    }
}

/// How [`StreamReceiver::receive`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvEnd {
    /// The end marker arrived, or the clock bound failed.
    Finished,
    /// No packet for the idle time.
    Idle,
}

/// A bootstrapped receiver writing one stream.
#[derive(Debug)]
pub struct StreamReceiver {
    receiver: Receiver,
    writer: StreamWriter,
    early_overflow: u64,
    early_unsafe: u64,
}

impl StreamReceiver {
    /// A receiver from `boot`, with `seed` for its buffer's eviction choices
    /// (fresh random bytes: an attacker may have seen the sync request's
    /// nonce); the packets kept during the bootstrap are handled first,
    /// writing to `out` what they authenticate.
    ///
    /// # Errors
    /// `out` failed.
    pub fn new(
        boot: Bootstrapped,
        seed: &[u8; 32],
        out: &mut dyn Write,
    ) -> Result<Self, RecvError> {
        let mut this = Self {
            receiver: boot.receiver.with_eviction_seed(seed),
            writer: StreamWriter::default(),
            early_overflow: boot.early_overflow,
            early_unsafe: 0,
        };
        for (datagram, arrived) in &boot.early {
            this.handle(datagram, *arrived, out)?;
        }
        // Packets sent before the receiver could judge them (key disclosures
        // of intervals already over, mostly) are not the stream's fault.
        this.early_unsafe = this.receiver.stats().unsafe_dropped;
        Ok(this)
    }

    /// The TESLA receiver (its parameters).
    #[must_use]
    pub fn receiver(&self) -> &Receiver {
        &self.receiver
    }

    /// Handles one datagram that arrived at `now`.
    ///
    /// # Errors
    /// `out` failed.
    pub fn handle(
        &mut self,
        datagram: &[u8],
        now: Time,
        out: &mut dyn Write,
    ) -> Result<(), RecvError> {
        if let Status::Authenticated { released, .. } = self.receiver.handle(datagram, now) {
            self.writer
                .deliver(released, out)
                .map_err(RecvError::Output)?;
        }
        Ok(())
    }

    /// Receives from `socket` until the stream ends, the clock bound fails,
    /// or nothing arrives for `idle_exit`; `on_status` gets a report every
    /// `status_every` (never when zero).
    ///
    /// # Errors
    /// The socket, `out` or `on_status` failed.
    pub fn receive(
        &mut self,
        socket: &UdpSocket,
        out: &mut dyn Write,
        idle_exit: Duration,
        status_every: Duration,
        on_status: &mut dyn FnMut(&RecvReport) -> std::io::Result<()>,
    ) -> Result<RecvEnd, RecvError> {
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .map_err(RecvError::GroupSocket)?;
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let mut last_packet = Instant::now();
        let mut last_status = Instant::now();
        while !self.writer.ended && !self.receiver.is_refused() {
            match socket.recv(&mut buf) {
                Ok(n) => {
                    last_packet = Instant::now();
                    self.handle(&buf[..n], wall_clock(), out)?;
                }
                Err(_) if last_packet.elapsed() >= idle_exit => return Ok(RecvEnd::Idle),
                Err(_) => {}
            }
            if !status_every.is_zero() && last_status.elapsed() >= status_every {
                last_status = Instant::now();
                on_status(&self.report()).map_err(RecvError::Report)?;
            }
        }
        Ok(RecvEnd::Finished)
    }

    /// The counters now.
    #[must_use]
    pub fn report(&self) -> RecvReport {
        let w = &self.writer;
        RecvReport {
            stats: self.receiver.stats(),
            written_bytes: w.written_bytes,
            written_payloads: w.written_payloads,
            missing: w.missing,
            late: w.late,
            unframed: w.unframed,
            ended: w.ended,
            clock_bound_violated: self.receiver.is_refused(),
            early_overflow: self.early_overflow,
            early_unsafe: self.early_unsafe,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_unsafe_before_the_bootstrap_are_not_the_streams_fault() {
        let report = RecvReport {
            stats: Stats {
                unsafe_dropped: 5,
                bad_mac: 2,
                malformed: 1,
                ..Stats::default()
            },
            written_bytes: 0,
            written_payloads: 0,
            missing: 0,
            late: 0,
            unframed: 0,
            ended: false,
            clock_bound_violated: false,
            early_overflow: 0,
            early_unsafe: 3,
        };
        assert_eq!(report.unsafe_dropped(), 2);
        assert_eq!(report.failed(), 3);
    }
}
