//! Transmit timestamps the kernel returns for replies: each is matched to
//! its reply by the reply itself (the copy of the packet that comes back
//! with the stamp), so nothing is kept per reply in between.
//!
//! - A reply whose receive timestamp has a transmit time saved in the
//!   interleaved table gets the kernel's time instead of the daemon's
//!   reading (when plausible).
//! - A basic reply (its transmit timestamp is after its receive timestamp;
//!   an interleaved reply carries the earlier transmit time of another reply)
//!   gives one sample of the error of the T3 it served: kernel time − T3.

use authtime_packet_io::{TxStamp, looped_packet};
use authtime_proto::interleaved::{TxSource, Updated};
use authtime_wire::NtpTimestamp;

use super::timestamps::SharedTimestamps;
use crate::clock;
use crate::metrics::served_time::ServedTimeCounters;

/// Mode 4 (server) in the first byte of an NTP header.
const MODE_SERVER: u8 = 4;

/// Handles one transmit timestamp read from the error queue; returns the
/// reply's receive timestamp and the error of the T3 it served (kernel time
/// − T3, nanoseconds) when the stamp is of a basic reply.
pub(crate) fn process(
    stamp: &TxStamp<'_>,
    table: Option<&SharedTimestamps>,
    counters: &mut ServedTimeCounters,
) -> Option<(NtpTimestamp, i64)> {
    counters.kernel_tx_read += 1;
    let udp = looped_packet::parse(stamp.packet)?;
    let header = udp.payload.get(..48)?;
    if header[0] & 0x07 != MODE_SERVER {
        return None;
    }
    let field = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&header[at..at + 8]);
        NtpTimestamp::from_bits(u64::from_be_bytes(b))
    };
    let (t2, t3) = (field(32), field(40));
    let sent = clock::from_realtime(stamp.stamp.secs, stamp.stamp.nanos);
    let source = match stamp.stamp.source {
        authtime_packet_io::StampSource::Kernel => TxSource::Kernel,
        authtime_packet_io::StampSource::Hardware => TxSource::Hardware,
    };
    if let Some(table) = table
        && table.update_tx(t2, sent, source) == Updated::Implausible
    {
        counters.kernel_tx_implausible += 1;
    }
    if t3.duration_since(t2).as_nanos() < 0 {
        return None;
    }
    let error = i64::try_from(sent.duration_since(t3).as_nanos()).unwrap_or(i64::MAX);
    counters.t3_error.record(error);
    Some((t2, error))
}

#[cfg(test)]
mod tests {
    use authtime_packet_io::{Stamp, StampSource};

    use super::*;

    /// An Ethernet/IPv4/UDP frame carrying an NTP reply with `t2` and `t3`.
    fn looped(mode: u8, t2: NtpTimestamp, t3: NtpTimestamp) -> Vec<u8> {
        let mut ntp = [0u8; 48];
        ntp[0] = 0x20 | mode;
        ntp[32..40].copy_from_slice(&t2.to_bits().to_be_bytes());
        ntp[40..48].copy_from_slice(&t3.to_bits().to_be_bytes());
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 76, 0, 0, 0x40, 0, 64, 17, 0, 0]);
        f.extend_from_slice(&[127, 0, 0, 1, 127, 0, 0, 1, 0, 123, 0x9c, 0x40, 0, 56, 0, 0]);
        f.extend_from_slice(&ntp);
        f
    }

    fn stamp_at(packet: &[u8], unix_ns: u64) -> TxStamp<'_> {
        TxStamp {
            stamp: Stamp {
                secs: (unix_ns / 1_000_000_000) as i64,
                nanos: (unix_ns % 1_000_000_000) as u32,
                source: StampSource::Kernel,
            },
            packet,
            id: 0,
        }
    }

    const T0: u64 = 1_700_000_000_000_000_000;

    fn ntp(unix_ns: u64) -> NtpTimestamp {
        clock::from_realtime(
            (unix_ns / 1_000_000_000) as i64,
            (unix_ns % 1_000_000_000) as u32,
        )
    }

    #[test]
    fn a_basic_reply_gives_an_error_sample_and_upgrades_its_entry() {
        let table = SharedTimestamps::new(64);
        let t2 = NtpTimestamp::from_bits(ntp(T0).to_bits() | 1);
        let t3 = ntp(T0 + 5_000);
        table.insert(t2, t3, TxSource::Daemon);
        let frame = looped(4, t2, t3);
        let mut c = ServedTimeCounters::default();
        process(&stamp_at(&frame, T0 + 6_500), Some(&table), &mut c);
        assert_eq!((c.kernel_tx_read, c.t3_error.count), (1, 1));
        // 1.5 µs early, to the nanosecond.
        assert!(
            (c.t3_error.sum_ns - 1_500).abs() <= 1,
            "{}",
            c.t3_error.sum_ns
        );
        let saved = table.take(t2).expect("entry");
        assert_eq!(saved.source, TxSource::Kernel);
        assert_eq!(saved.tx, ntp(T0 + 6_500));
    }

    #[test]
    fn interleaved_replies_and_other_packets_give_no_error_sample() {
        let mut c = ServedTimeCounters::default();
        // An interleaved reply: its T3 is an earlier reply's, before its T2.
        let frame = looped(4, ntp(T0 + 10_000), ntp(T0));
        process(&stamp_at(&frame, T0 + 12_000), None, &mut c);
        // A client packet, and bytes that are no packet.
        let client = looped(3, ntp(T0), ntp(T0 + 1));
        process(&stamp_at(&client, T0 + 12_000), None, &mut c);
        process(&stamp_at(&[1, 2, 3], T0), None, &mut c);
        assert_eq!((c.kernel_tx_read, c.t3_error.count), (3, 0));
    }

    #[test]
    fn an_implausible_kernel_time_is_counted_and_ignored() {
        let table = SharedTimestamps::new(64);
        let t2 = NtpTimestamp::from_bits(ntp(T0).to_bits() | 1);
        let t3 = ntp(T0 + 5_000);
        table.insert(t2, t3, TxSource::Daemon);
        let frame = looped(4, t2, t3);
        let mut c = ServedTimeCounters::default();
        // Two seconds later: another packet's stamp, or a step.
        process(&stamp_at(&frame, T0 + 2_000_000_000), Some(&table), &mut c);
        assert_eq!(c.kernel_tx_implausible, 1);
        assert_eq!(table.take(t2).map(|s| s.source), Some(TxSource::Daemon));
    }
}
