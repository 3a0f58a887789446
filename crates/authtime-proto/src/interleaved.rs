//! Server state for interleaved mode (RFC 9769 section 2): the transmit time
//! of each reply that may be asked for, keyed by the receive timestamp that
//! reply carried.
//!
//! A client in interleaved mode sends, as the origin of its next request,
//! the receive timestamp of the server's last reply to it; the server answers
//! with the transmit time of that reply, which it could only learn after the
//! reply left (from the kernel or the network card). The key is the receive
//! timestamp alone, not the client's address or port: clients change source
//! port between requests, and the request may reach another worker.
//!
//! [`TimestampTable`] holds a fixed number of entries
//! ([`TimestampTable::ENTRY_BYTES`] each, allocated once), in buckets of
//! four: a new entry takes a free slot of its bucket, else one already
//! answered, else the oldest. An entry answers once ([`TimestampTable::take`]),
//! as chrony does, so that a replayed request gets a basic reply. A receive
//! timestamp saved twice (two requests stamped in the same quarter
//! nanosecond) is disabled rather than answered with the wrong transmit
//! time. Sans-IO: timestamps in, timestamps out.

use authtime_wire::NtpTimestamp;

/// Who took a transmit time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxSource {
    /// The server read its clock just before sending.
    Daemon,
    /// The kernel, when the driver took the packet.
    Kernel,
    /// The network card.
    Hardware,
}

impl TxSource {
    /// The label used in metrics: `daemon`, `kernel` or `hardware`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Daemon => "daemon",
            Self::Kernel => "kernel",
            Self::Hardware => "hardware",
        }
    }
}

/// A transmit time saved for an interleaved request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavedTx {
    /// When the reply left.
    pub tx: NtpTimestamp,
    /// Who took that time.
    pub source: TxSource,
}

/// What [`TimestampTable::insert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// Saved in a free slot, or over an entry already answered.
    Saved,
    /// Saved over the oldest entry of its bucket, still unanswered: that
    /// client's next request will get a basic reply.
    Evicted,
    /// The receive timestamp was already there: both are disabled.
    Duplicate,
}

/// What [`TimestampTable::update_tx`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Updated {
    /// The better transmit time replaced the one saved.
    Updated,
    /// No entry for that receive timestamp (not saved, answered or evicted).
    NotFound,
    /// Refused: before the time saved, or more than [`MAX_TX_DELAY_NS`]
    /// after it (a clock step, or a stamp of another packet).
    Implausible,
}

/// Longest accepted delay between the time saved when a reply was sent and
/// the kernel's or card's transmit time of it (chrony's `MAX_TX_DELAY`).
pub const MAX_TX_DELAY_NS: u64 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Empty,
    Live,
    Answered,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    rx: u64,
    tx: u64,
    source: TxSource,
    state: State,
}

const EMPTY: Entry = Entry {
    rx: 0,
    tx: 0,
    source: TxSource::Daemon,
    state: State::Empty,
};

/// Entries per bucket.
const WAYS: usize = 4;

/// Transmit times by receive timestamp, in bounded memory.
#[derive(Debug, Clone)]
pub struct TimestampTable {
    entries: Box<[Entry]>,
    bucket_bits: u32,
    live: usize,
}

impl TimestampTable {
    /// Memory per entry, in bytes.
    pub const ENTRY_BYTES: usize = size_of::<Entry>();

    /// A table of at least `capacity` entries (rounded up to a power of two,
    /// at least 4), allocated now.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        let buckets = capacity.div_ceil(WAYS).max(1).next_power_of_two();
        Self {
            entries: vec![EMPTY; buckets * WAYS].into_boxed_slice(),
            bucket_bits: buckets.trailing_zeros(),
            live: 0,
        }
    }

    /// Entries the table holds at most.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Entries saved and not yet answered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no entry is waiting to be answered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Memory of the entries, in bytes.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.entries.len() * Self::ENTRY_BYTES
    }

    fn bucket(&self, rx: u64) -> std::ops::Range<usize> {
        // Fibonacci hashing: the low bits of a timestamp vary most, the
        // high bits of the product mix all of them.
        let h = rx.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let b = if self.bucket_bits == 0 {
            0
        } else {
            (h >> (64 - self.bucket_bits)) as usize
        };
        b * WAYS..(b + 1) * WAYS
    }

    fn find(&self, rx: u64) -> Option<usize> {
        self.bucket(rx)
            .find(|&i| self.entries[i].state != State::Empty && self.entries[i].rx == rx)
    }

    /// The transmit time saved for the reply that carried `rx`, once: the
    /// entry is then answered, and a second request naming it gets `None`.
    pub fn take(&mut self, rx: NtpTimestamp) -> Option<SavedTx> {
        let i = self.find(rx.to_bits())?;
        let e = &mut self.entries[i];
        if e.state != State::Live {
            return None;
        }
        e.state = State::Answered;
        self.live -= 1;
        Some(SavedTx {
            tx: NtpTimestamp::from_bits(e.tx),
            source: e.source,
        })
    }

    /// Saves `tx` as the transmit time of the reply that carried `rx`.
    pub fn insert(&mut self, rx: NtpTimestamp, tx: NtpTimestamp, source: TxSource) -> Inserted {
        let rx = rx.to_bits();
        if let Some(i) = self.find(rx) {
            if self.entries[i].state == State::Live {
                self.live -= 1;
            }
            self.entries[i].state = State::Answered;
            return Inserted::Duplicate;
        }
        let bucket = self.bucket(rx);
        let free = bucket
            .clone()
            .find(|&i| self.entries[i].state == State::Empty)
            .or_else(|| {
                bucket
                    .clone()
                    .find(|&i| self.entries[i].state == State::Answered)
            });
        let (slot, outcome) = match free {
            Some(i) => (i, Inserted::Saved),
            None => {
                // The oldest: the longest ago before `rx`, era-safe.
                let oldest = bucket
                    .max_by_key(|&i| rx.wrapping_sub(self.entries[i].rx))
                    .unwrap_or(0);
                self.live -= 1;
                (oldest, Inserted::Evicted)
            }
        };
        self.entries[slot] = Entry {
            rx,
            tx: tx.to_bits(),
            source,
            state: State::Live,
        };
        self.live += 1;
        outcome
    }

    /// Replaces the transmit time saved for `rx` with a better one (the
    /// kernel's or the card's), if it is plausible: at most
    /// [`MAX_TX_DELAY_NS`] after the time saved, and not before it.
    pub fn update_tx(&mut self, rx: NtpTimestamp, tx: NtpTimestamp, source: TxSource) -> Updated {
        let Some(i) = self.find(rx.to_bits()) else {
            return Updated::NotFound;
        };
        let e = &mut self.entries[i];
        if e.state != State::Live {
            return Updated::NotFound;
        }
        let delay = tx.duration_since(NtpTimestamp::from_bits(e.tx)).as_nanos();
        if !(0..=i128::from(MAX_TX_DELAY_NS)).contains(&delay) {
            return Updated::Implausible;
        }
        e.tx = tx.to_bits();
        e.source = source;
        Updated::Updated
    }

    /// Forgets every entry (after the clock was stepped, say).
    pub fn clear(&mut self) {
        self.entries.fill(EMPTY);
        self.live = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(bits: u64) -> NtpTimestamp {
        NtpTimestamp::from_bits(bits)
    }

    #[test]
    fn a_saved_time_is_answered_once() {
        let mut t = TimestampTable::new(16);
        assert_eq!(
            t.insert(ts(0x1001), ts(0x2000), TxSource::Daemon),
            Inserted::Saved
        );
        assert_eq!(t.len(), 1);
        let saved = t.take(ts(0x1001)).expect("saved");
        assert_eq!((saved.tx, saved.source), (ts(0x2000), TxSource::Daemon));
        assert_eq!(t.take(ts(0x1001)), None, "one answer per entry");
        assert_eq!(t.take(ts(0x1003)), None);
        assert!(t.is_empty());
    }

    #[test]
    fn kernel_times_replace_daemon_times_when_plausible() {
        let mut t = TimestampTable::new(16);
        let daemon = NtpTimestamp::from_unix(1_700_000_000, 1_000);
        t.insert(ts(0x1001), daemon, TxSource::Daemon);
        let before = NtpTimestamp::from_unix(1_700_000_000, 500);
        let late = NtpTimestamp::from_unix(1_700_000_002, 0);
        let kernel = NtpTimestamp::from_unix(1_700_000_000, 3_000);
        assert_eq!(
            t.update_tx(ts(0x1001), before, TxSource::Kernel),
            Updated::Implausible
        );
        assert_eq!(
            t.update_tx(ts(0x1001), late, TxSource::Kernel),
            Updated::Implausible
        );
        assert_eq!(
            t.update_tx(ts(0x1003), kernel, TxSource::Kernel),
            Updated::NotFound
        );
        assert_eq!(
            t.update_tx(ts(0x1001), kernel, TxSource::Kernel),
            Updated::Updated
        );
        let saved = t.take(ts(0x1001)).expect("saved");
        assert_eq!((saved.tx, saved.source), (kernel, TxSource::Kernel));
        assert_eq!(
            t.update_tx(ts(0x1001), kernel, TxSource::Kernel),
            Updated::NotFound
        );
    }

    #[test]
    fn a_duplicate_receive_timestamp_is_disabled() {
        let mut t = TimestampTable::new(16);
        t.insert(ts(0x1001), ts(0x2000), TxSource::Daemon);
        assert_eq!(
            t.insert(ts(0x1001), ts(0x2002), TxSource::Daemon),
            Inserted::Duplicate
        );
        assert_eq!(t.take(ts(0x1001)), None);
        assert!(t.is_empty());
    }

    #[test]
    fn the_table_is_bounded_and_evicts_the_oldest() {
        let mut t = TimestampTable::new(64);
        assert_eq!(t.capacity(), 64);
        assert_eq!(t.memory_bytes(), 64 * TimestampTable::ENTRY_BYTES);
        let mut evicted = 0;
        for i in 0..10_000u64 {
            let rx = (1 << 40) + i * 0x1_0000 + 1;
            if t.insert(ts(rx), ts(rx + 10), TxSource::Daemon) == Inserted::Evicted {
                evicted += 1;
            }
            assert!(t.len() <= t.capacity());
        }
        assert_eq!(t.len(), 64);
        assert_eq!(evicted, 10_000 - 64);
        // The newest entries of each bucket survive: the last insert is there.
        let last = (1 << 40) + 9_999 * 0x1_0000 + 1;
        assert_eq!(t.take(ts(last)).map(|s| s.tx), Some(ts(last + 10)));
        t.clear();
        assert!(t.is_empty());
    }

    #[test]
    fn answered_entries_are_reused_before_live_ones_are_evicted() {
        let mut t = TimestampTable::new(4);
        for rx in [1u64, 3, 5, 7] {
            assert_eq!(t.insert(ts(rx), ts(rx), TxSource::Daemon), Inserted::Saved);
        }
        assert!(t.take(ts(5)).is_some());
        assert_eq!(t.insert(ts(9), ts(9), TxSource::Daemon), Inserted::Saved);
        assert_eq!(
            t.insert(ts(11), ts(11), TxSource::Daemon),
            Inserted::Evicted
        );
        // The oldest (1) went.
        assert_eq!(t.take(ts(1)), None);
        assert!(t.take(ts(3)).is_some());
    }

    #[test]
    fn tiny_and_zero_capacities_still_work() {
        let mut t = TimestampTable::new(0);
        assert_eq!(t.capacity(), 4);
        t.insert(ts(1), ts(2), TxSource::Kernel);
        assert_eq!(t.take(ts(1)).map(|s| s.source), Some(TxSource::Kernel));
    }
}
