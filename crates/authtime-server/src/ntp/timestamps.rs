//! The interleaved-mode table shared by every NTP worker: a request that
//! names one of this server's receive timestamps may arrive on any worker
//! (clients change source port, and `SO_REUSEPORT` spreads ports over
//! sockets), so the transmit times live in one table, split into shards by
//! receive timestamp, each behind its own lock. A worker holds a shard's lock
//! for one lookup or update, never across a system call.

use std::sync::Mutex;

use authtime_proto::interleaved::{Inserted, SavedTx, TimestampTable, TxSource, Updated};
use authtime_wire::NtpTimestamp;

use crate::metrics::lock;

/// Shards: enough that workers rarely meet on one lock.
const SHARDS: usize = 16;

/// Transmit times of replies, by the receive timestamp each carried.
#[derive(Debug)]
pub(crate) struct SharedTimestamps {
    shards: Box<[Mutex<TimestampTable>]>,
}

impl SharedTimestamps {
    /// A table of `capacity` entries in all (each shard at least 4).
    pub(crate) fn new(capacity: usize) -> Self {
        let per_shard = capacity.div_ceil(SHARDS);
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(TimestampTable::new(per_shard)))
                .collect(),
        }
    }

    fn shard(&self, rx: NtpTimestamp) -> &Mutex<TimestampTable> {
        // Another mix than the table's own bucket hash, so that one shard's
        // entries still spread over its buckets.
        let h = rx.to_bits().wrapping_mul(0xd6e8_feb8_6659_fd93) >> 60;
        &self.shards[h as usize % SHARDS]
    }

    pub(crate) fn take(&self, rx: NtpTimestamp) -> Option<SavedTx> {
        lock(self.shard(rx)).take(rx)
    }

    pub(crate) fn insert(&self, rx: NtpTimestamp, tx: NtpTimestamp, source: TxSource) -> Inserted {
        lock(self.shard(rx)).insert(rx, tx, source)
    }

    pub(crate) fn update_tx(
        &self,
        rx: NtpTimestamp,
        tx: NtpTimestamp,
        source: TxSource,
    ) -> Updated {
        lock(self.shard(rx)).update_tx(rx, tx, source)
    }

    /// Entries waiting for a client's request (locks every shard: for
    /// scrapes, not for the data path).
    pub(crate) fn held(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    /// Entries the table holds at most.
    pub(crate) fn capacity(&self) -> usize {
        self.shards.iter().map(|s| lock(s).capacity()).sum()
    }

    /// Memory of the entries, in bytes.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.capacity() * TimestampTable::ENTRY_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_whichever_thread_saved_them() {
        let table = SharedTimestamps::new(1024);
        assert!(table.capacity() >= 1024);
        assert_eq!(
            table.memory_bytes(),
            table.capacity() * TimestampTable::ENTRY_BYTES
        );
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let table = &table;
                s.spawn(move || {
                    for i in 0..100u64 {
                        let rx = NtpTimestamp::from_bits((t << 40) + (i << 8) + 1);
                        table.insert(rx, NtpTimestamp::from_bits(i), TxSource::Daemon);
                    }
                });
            }
        });
        assert_eq!(table.held(), 400);
        let rx = NtpTimestamp::from_bits((2 << 40) + (7 << 8) + 1);
        assert_eq!(
            table.update_tx(rx, NtpTimestamp::from_bits(8), TxSource::Kernel),
            Updated::Updated
        );
        let saved = table.take(rx).expect("saved");
        assert_eq!((saved.tx.to_bits(), saved.source), (8, TxSource::Kernel));
        assert_eq!(table.held(), 399);
    }
}
