//! What the server knows about the time it served: replies by mode, where
//! their timestamps came from (as chrony 4.4's `serverstats` counts them),
//! interleaved-mode fallbacks, and the measured error of its basic-mode
//! transmit timestamps (kernel transmit time − T3, on a sample of replies).

use authtime_packet_io::StampSource;
use authtime_proto::interleaved::TxSource;

use super::{LatencyHistogram, label};

/// Index of a timestamp source in the per-source arrays.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// Read by the daemon from the system clock.
    Daemon = 0,
    /// Taken by the kernel.
    Kernel = 1,
    /// Taken by the network card.
    Hardware = 2,
}

impl Source {
    const ALL: [Self; 3] = [Self::Daemon, Self::Kernel, Self::Hardware];

    fn name(self) -> &'static str {
        match self {
            Self::Daemon => "daemon",
            Self::Kernel => "kernel",
            Self::Hardware => "hardware",
        }
    }
}

impl From<StampSource> for Source {
    fn from(s: StampSource) -> Self {
        match s {
            StampSource::Kernel => Self::Kernel,
            StampSource::Hardware => Self::Hardware,
        }
    }
}

impl From<TxSource> for Source {
    fn from(s: TxSource) -> Self {
        match s {
            TxSource::Daemon => Self::Daemon,
            TxSource::Kernel => Self::Kernel,
            TxSource::Hardware => Self::Hardware,
        }
    }
}

/// Why an interleaved request got a basic reply.
#[derive(Debug, Clone, Copy)]
pub enum Fallback {
    /// No transmit time saved under the receive timestamp it names: never
    /// saved, answered already, or evicted from a full table.
    NotFound = 0,
    /// Only the daemon's clock reading was saved: the kernel's transmit
    /// timestamp had not been read (or never came).
    NoKernelTimestamp = 1,
}

/// A histogram of signed times (the error of a transmit timestamp can be
/// either way), bounds in nanoseconds, fixed in size.
#[derive(Debug, Clone, Copy, Default)]
pub struct SignedHistogram {
    /// Counts per bucket (not cumulative); the last is above every bound.
    pub buckets: [u64; SIGNED_BOUNDS_NS.len() + 1],
    /// Sum of all values, nanoseconds.
    pub sum_ns: i64,
    /// Values recorded.
    pub count: u64,
}

/// Upper bounds of [`SignedHistogram`]'s buckets, in nanoseconds.
pub const SIGNED_BOUNDS_NS: [i64; 21] = [
    -1_000_000,
    -100_000,
    -10_000,
    -1_000,
    -500,
    -200,
    -100,
    0,
    100,
    200,
    500,
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

impl SignedHistogram {
    /// Records one value.
    pub fn record(&mut self, ns: i64) {
        let i = SIGNED_BOUNDS_NS
            .iter()
            .position(|&b| ns <= b)
            .unwrap_or(SIGNED_BOUNDS_NS.len());
        self.buckets[i] += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.count += 1;
    }

    fn merge(&mut self, o: &Self) {
        for (a, b) in self.buckets.iter_mut().zip(o.buckets) {
            *a += b;
        }
        self.sum_ns = self.sum_ns.saturating_add(o.sum_ns);
        self.count += o.count;
    }

    /// Appends this histogram as a Prometheus histogram in seconds.
    pub fn render(&self, out: &mut String, name: &str, help: &str) {
        let buckets = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, n)| (SIGNED_BOUNDS_NS.get(i).map(|&b| b as f64 / 1e9), *n));
        super::render_histogram(
            out,
            name,
            help,
            buckets,
            self.sum_ns as f64 / 1e9,
            self.count,
        );
    }
}

/// One worker's counts of the time it served.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServedTimeCounters {
    /// Time replies sent in basic mode.
    pub basic: u64,
    /// Time replies sent in interleaved mode.
    pub interleaved: u64,
    /// Requests by source of their receive timestamp.
    pub rx_source: [u64; 3],
    /// Time replies by source of the transmit timestamp they carry.
    pub tx_source: [u64; 3],
    /// Interleaved requests answered in basic mode, by [`Fallback`].
    pub fallbacks: [u64; 2],
    /// Transmit times saved over an unanswered one (the table was full).
    pub evicted: u64,
    /// Transmit timestamps asked of the kernel.
    pub kernel_tx_requested: u64,
    /// Transmit timestamps read back from the kernel.
    pub kernel_tx_read: u64,
    /// Kernel transmit timestamps refused as implausible for the reply.
    pub kernel_tx_implausible: u64,
    /// Datagrams the kernel dropped for want of receive buffer space.
    pub kernel_drops: u64,
    /// Kernel transmit time − T3 of sampled basic replies.
    pub t3_error: SignedHistogram,
    /// T3 − T2 of basic replies: queueing plus the server's work.
    pub reply_delay: LatencyHistogram,
}

impl ServedTimeCounters {
    pub(crate) fn merge(&mut self, o: &Self) {
        self.basic += o.basic;
        self.interleaved += o.interleaved;
        for i in 0..3 {
            self.rx_source[i] += o.rx_source[i];
            self.tx_source[i] += o.tx_source[i];
        }
        for i in 0..2 {
            self.fallbacks[i] += o.fallbacks[i];
        }
        self.evicted += o.evicted;
        self.kernel_tx_requested += o.kernel_tx_requested;
        self.kernel_tx_read += o.kernel_tx_read;
        self.kernel_tx_implausible += o.kernel_tx_implausible;
        self.kernel_drops += o.kernel_drops;
        self.t3_error.merge(&o.t3_error);
        self.reply_delay.merge(&o.reply_delay);
    }

    /// Appends the families.
    pub(crate) fn render(&self, out: &mut String) {
        let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, u64)]| {
            super::write_family(out, name, kind, help, samples);
        };
        family(
            "authtime_ntp_replies_total",
            "counter",
            "Time replies (not Kiss-o'-Death), by mode: basic, or interleaved (RFC 9769).",
            &[
                (label("mode", "basic"), self.basic),
                (label("mode", "interleaved"), self.interleaved),
            ],
        );
        let by_source = |counts: &[u64; 3]| -> Vec<(String, u64)> {
            Source::ALL
                .iter()
                .map(|s| (label("source", s.name()), counts[*s as usize]))
                .collect()
        };
        family(
            "authtime_ntp_receive_timestamps_total",
            "counter",
            "Requests by source of their receive timestamp (daemon: the clock read after the \
             receive, when the kernel gave none).",
            &by_source(&self.rx_source),
        );
        family(
            "authtime_ntp_transmit_timestamps_total",
            "counter",
            "Time replies by source of the transmit timestamp they carry (daemon: the clock \
             read just before the reply was sent; kernel or hardware: an interleaved reply).",
            &by_source(&self.tx_source),
        );
        family(
            "authtime_ntp_interleaved_fallbacks_total",
            "counter",
            "Interleaved requests answered in basic mode, by reason.",
            &[
                (
                    label("reason", "not_found"),
                    self.fallbacks[Fallback::NotFound as usize],
                ),
                (
                    label("reason", "no_kernel_timestamp"),
                    self.fallbacks[Fallback::NoKernelTimestamp as usize],
                ),
            ],
        );
        family(
            "authtime_ntp_interleaved_evictions_total",
            "counter",
            "Saved transmit times overwritten before a client asked for them (the table was \
             full: raise ntp.interleaved-table-size).",
            &[(String::new(), self.evicted)],
        );
        family(
            "authtime_ntp_kernel_transmit_timestamps_total",
            "counter",
            "Transmit timestamps of replies: asked of the kernel, read back, and read back but \
             refused as implausible. Asked minus read is what the kernel dropped (its error \
             queue shares the socket's receive buffer, full under overload).",
            &[
                (label("result", "requested"), self.kernel_tx_requested),
                (label("result", "read"), self.kernel_tx_read),
                (label("result", "implausible"), self.kernel_tx_implausible),
            ],
        );
        family(
            "authtime_ntp_kernel_receive_drops_total",
            "counter",
            "Datagrams the kernel dropped on the NTP sockets for want of receive buffer space \
             (ntp.receive-buffer).",
            &[(String::new(), self.kernel_drops)],
        );
        self.t3_error.render(
            out,
            "authtime_ntp_transmit_timestamp_error_seconds",
            "Kernel transmit time minus the transmit timestamp (T3) served, for a sample of basic \
             replies (ntp.accuracy-sample): how early the T3 served was.",
        );
        self.reply_delay.render(
            out,
            "authtime_ntp_reply_delay_seconds",
            "Transmit minus receive timestamp (T3 - T2) of basic replies: the request's wait in \
             the socket plus the server's work.",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_values_land_in_their_buckets() {
        let mut h = SignedHistogram::default();
        for v in [-2_000_000, -150, 0, 1, 1_500, 1_000_000_000] {
            h.record(v);
        }
        assert_eq!(h.count, 6);
        assert_eq!(h.sum_ns, -2_000_000 - 150 + 1 + 1_500 + 1_000_000_000);
        let mut out = String::new();
        h.render(&mut out, "x", "help");
        for line in [
            "x_bucket{le=\"-0.001\"} 1",
            "x_bucket{le=\"-0.0000001\"} 2",
            "x_bucket{le=\"0\"} 3",
            "x_bucket{le=\"0.0000001\"} 4",
            "x_bucket{le=\"0.000002\"} 5",
            "x_bucket{le=\"+Inf\"} 6",
            "x_count 6",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing in\n{out}");
        }
    }
}
