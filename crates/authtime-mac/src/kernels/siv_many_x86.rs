//! Many AES-SIV operations at once, each under its own key: the S2V CMAC
//! chains of all of them in lockstep, eight lanes wide, with a round-key
//! table per lane (as multi-buffer CMAC with per-lane keys is done).
//!
//! One S2V is a few short serial CMAC chains, so alone it waits on the AES
//! latency (about 4 cycles a round) with the AES units mostly idle. An NTS
//! server has independent S2Vs at hand: within one exchange the request's
//! (under its session key) and the fresh cookies' (under the master key),
//! and across a receive batch those of every request. Here every chain of
//! every operation is a lane; lanes are sorted by length so that long
//! chains run together, and each step feeds one block of up to eight lanes
//! through one loop of rounds.
//!
//! Phases: (A) the header chains and the plaintext's leading blocks of every
//! job; (B) per job, S2V's running value D from (A), and the last chain (the
//! plaintext's last 16 to 31 bytes with D, or the padded short plaintext
//! with D doubled), again all jobs in lockstep.

#![cfg(target_arch = "x86_64")]

use core::arch::x86_64::{
    __m128i, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_cmpeq_epi8, _mm_movemask_epi8,
    _mm_setzero_si128, _mm_storeu_si128, _mm_xor_si128,
};

use super::cmac_x86::{BLOCK, cmac_blocks, load_at, load16, store16};
use super::siv_x86::{PAD, Scratch, SivX86, dbl_block, short_message_block};

/// Most jobs one call takes: one lane each in the last phase.
pub(crate) const MAX_JOBS: usize = WIDE;
/// Most headers a job may have here (NTS uses two).
const MAX_HEADERS: usize = 4;
/// Lanes of one lockstep run.
const WIDE: usize = 8;

/// One S2V to compute: `headers` then `plaintext`, under `key`.
#[derive(Clone, Copy)]
pub(crate) struct Job<'a> {
    pub(crate) key: &'a SivX86,
    pub(crate) headers: &'a [&'a [u8]],
    pub(crate) plaintext: &'a [u8],
}

/// Keys a batch expands from raw bytes: only the slots used are wiped when
/// the batch ends, not all [`MAX_JOBS`].
pub(crate) struct RawSlots {
    /// The first `used` are initialized; the rest are never touched (a
    /// batch of eight would otherwise clear 16 expanded keys, 8.7 KB, per
    /// call).
    slots: [core::mem::MaybeUninit<SivX86>; MAX_JOBS],
    used: usize,
}

impl RawSlots {
    pub(crate) fn new(used: usize) -> Self {
        let used = used.min(MAX_JOBS);
        let mut slots = [const { core::mem::MaybeUninit::uninit() }; MAX_JOBS];
        for slot in &mut slots[..used] {
            slot.write(SivX86::zeroed());
        }
        Self { slots, used }
    }

    pub(crate) fn used(&mut self) -> &mut [SivX86] {
        let used = &mut self.slots[..self.used];
        // SAFETY: the first `used` slots were initialized in `new`, and
        // `MaybeUninit<T>` has the layout of `T`, so a slice of initialized
        // ones is a slice of `T` of the same length.
        unsafe { core::slice::from_raw_parts_mut(used.as_mut_ptr().cast::<SivX86>(), used.len()) }
    }

    pub(crate) fn get(&self, i: usize) -> Option<&SivX86> {
        // SAFETY: as in `used`: slots below `used` are initialized.
        self.slots[..self.used]
            .get(i)
            .map(|k| unsafe { k.assume_init_ref() })
    }
}

impl Drop for RawSlots {
    fn drop(&mut self) {
        // Wiped, not dropped: `SivX86`'s own drop would wipe it a second time.
        for k in self.used() {
            zeroize::Zeroize::zeroize(k);
        }
    }
}

/// Whether two tags are equal, in constant time (one vector compare).
#[must_use]
pub(crate) fn tags_equal(a: &[u8; BLOCK], b: &[u8; BLOCK]) -> bool {
    use subtle::ConstantTimeEq;
    // SAFETY: SSE2 is part of x86-64.
    let equal = unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(load16(a), load16(b))) };
    bool::from(equal.ct_eq(&0xffff))
}

/// A CMAC chain under its own key.
#[derive(Clone, Copy)]
struct Chain<'a> {
    key: &'a SivX86,
    msg: &'a [u8],
    blocks: usize,
    finish: bool,
    state: __m128i,
}

/// Whether [`s2v_many`] takes `jobs`: at most [`MAX_JOBS`], each with at
/// most four headers, all keys with one round count.
#[must_use]
pub(crate) fn fits(jobs: &[Job<'_>]) -> bool {
    let Some(first) = jobs.first() else {
        return true;
    };
    jobs.len() <= MAX_JOBS
        && jobs
            .iter()
            .all(|j| j.headers.len() <= MAX_HEADERS && j.key.nr == first.key.nr)
}

/// S2V of every job into `out[..jobs.len()]` (the synthetic IVs); `false`
/// (nothing computed) when [`fits`] says no.
pub(crate) fn s2v_many(jobs: &[Job<'_>], out: &mut [[u8; BLOCK]]) -> bool {
    let Some(first) = jobs.first() else {
        return true;
    };
    if !fits(jobs) || out.len() < jobs.len() {
        return false;
    }
    // SAFETY: every `SivX86` exists only on a CPU with AES-NI and SSE4.1.
    unsafe {
        if first.key.nr == 10 {
            s2v_many_nr::<10>(jobs, out);
        } else {
            s2v_many_nr::<14>(jobs, out);
        }
    }
    true
}

/// Lanes being filled for one lockstep run, with the job each came from.
struct Group<'a> {
    lanes: [Chain<'a>; WIDE],
    owner: [usize; WIDE],
    len: usize,
}

impl<'a> Group<'a> {
    fn new(key: &'a SivX86) -> Self {
        // SAFETY: SSE2 is part of x86-64.
        let zero = unsafe { _mm_setzero_si128() };
        let idle = Chain {
            key,
            msg: &[],
            blocks: 0,
            finish: false,
            state: zero,
        };
        Group {
            lanes: [idle; WIDE],
            owner: [0; WIDE],
            len: 0,
        }
    }

    fn push(&mut self, owner: usize, chain: Chain<'a>) {
        if let (Some(lane), Some(o)) = (self.lanes.get_mut(self.len), self.owner.get_mut(self.len))
        {
            *lane = chain;
            *o = owner;
            self.len += 1;
        }
    }

    /// Runs the lanes; four wide when that is enough.
    #[target_feature(enable = "aes,sse4.1")]
    fn run<const NR: usize>(&mut self) {
        if self.len == 0 {
        } else if self.len <= WIDE / 2 {
            let mut narrow = [self.lanes[0]; WIDE / 2];
            narrow.copy_from_slice(&self.lanes[..WIDE / 2]);
            run_lanes::<NR, { WIDE / 2 }>(&mut narrow);
            self.lanes[..WIDE / 2].copy_from_slice(&narrow);
        } else {
            run_lanes::<NR, WIDE>(&mut self.lanes);
        }
    }

    /// (owner, final state) of each lane that was pushed.
    fn results(&self) -> impl Iterator<Item = (usize, __m128i)> + '_ {
        self.owner
            .iter()
            .zip(&self.lanes)
            .take(self.len)
            .map(|(&o, l)| (o, l.state))
    }
}

#[target_feature(enable = "aes,sse4.1")]
fn s2v_many_nr<const NR: usize>(jobs: &[Job<'_>], out: &mut [[u8; BLOCK]]) {
    let zero = _mm_setzero_si128();
    let key0 = jobs[0].key;
    // (A) Header k of every job side by side, for each k; then every
    // plaintext's leading blocks. Empty headers take the key's CMAC("").
    let mut macs = [[zero; MAX_HEADERS]; MAX_JOBS];
    let mut prefix = [zero; MAX_JOBS];
    let most_headers = jobs.iter().map(|j| j.headers.len()).max().unwrap_or(0);
    #[allow(
        clippy::needless_range_loop,
        reason = "k indexes the headers of every job"
    )]
    for k in 0..most_headers {
        let mut group = Group::new(key0);
        for (j, job) in jobs.iter().enumerate() {
            match job.headers.get(k) {
                Some(&[]) => macs[j][k] = job.key.empty_mac,
                Some(h) => group.push(
                    j,
                    Chain {
                        key: job.key,
                        msg: h,
                        blocks: cmac_blocks(h.len()),
                        finish: true,
                        state: zero,
                    },
                ),
                None => {}
            }
        }
        group.run::<NR>();
        for (j, state) in group.results() {
            macs[j][k] = state;
        }
    }
    let mut group = Group::new(key0);
    for (j, job) in jobs.iter().enumerate() {
        let len = job.plaintext.len();
        if len >= 2 * BLOCK {
            group.push(
                j,
                Chain {
                    key: job.key,
                    msg: job.plaintext,
                    blocks: (len - BLOCK) / BLOCK,
                    finish: false,
                    state: zero,
                },
            );
        }
    }
    group.run::<NR>();
    for (j, state) in group.results() {
        prefix[j] = state;
    }

    // (B) D per job, then the last chain of every job.
    let mut tails: [Scratch<{ 2 * BLOCK }>; MAX_JOBS] =
        core::array::from_fn(|_| Scratch([0; 2 * BLOCK]));
    let mut tail_len = [0usize; MAX_JOBS];
    for (j, job) in jobs.iter().enumerate() {
        let mut d = job.key.zero_mac;
        for mac in &macs[j][..job.headers.len()] {
            d = _mm_xor_si128(dbl_block(d), *mac);
        }
        let plaintext = job.plaintext;
        let len = plaintext.len();
        let buf = &mut tails[j].0;
        if len >= BLOCK {
            // The rest (16 to 31 bytes) with D xored onto its last 16 bytes,
            // continuing the plaintext's chain.
            let rest = &plaintext[BLOCK * ((len - BLOCK) / BLOCK)..];
            buf[..rest.len()].copy_from_slice(rest);
            let at = rest.len() - BLOCK;
            // SAFETY: at + 16 = rest.len() <= 32.
            let t = unsafe { load_at(buf, at) };
            // SAFETY: as above, 16 writable bytes at `at`.
            unsafe { _mm_storeu_si128(buf.as_mut_ptr().add(at).cast(), _mm_xor_si128(t, d)) };
            tail_len[j] = rest.len();
        } else {
            // T = dbl(D) xor pad(plaintext), one whole block whose CMAC is V.
            let padded = _mm_xor_si128(short_message_block(plaintext), load16(&PAD[len]));
            let t = _mm_xor_si128(dbl_block(d), padded);
            // SAFETY: 16 writable bytes.
            unsafe { _mm_storeu_si128(buf.as_mut_ptr().cast(), t) };
            tail_len[j] = BLOCK;
            prefix[j] = zero;
        }
    }
    let mut group = Group::new(key0);
    for (j, job) in jobs.iter().enumerate() {
        group.push(
            j,
            Chain {
                key: job.key,
                msg: &tails[j].0[..tail_len[j]],
                blocks: cmac_blocks(tail_len[j]),
                finish: true,
                state: prefix[j],
            },
        );
    }
    group.run::<NR>();
    for (j, state) in group.results() {
        store16(&mut out[j], state);
    }
    for t in &mut tails[..jobs.len()] {
        t.wipe();
    }
}

/// `L` chains side by side, each under its own key: step `j` feeds block `j`
/// of every lane that has one through one loop of rounds.
#[target_feature(enable = "aes,sse4.1")]
fn run_lanes<const NR: usize, const L: usize>(lanes: &mut [Chain<'_>; L]) {
    let steps = lanes.iter().map(|l| l.blocks).max().unwrap_or(0);
    let zero = _mm_setzero_si128();
    let mut state = [zero; L];
    for (st, lane) in state.iter_mut().zip(lanes.iter()) {
        *st = lane.state;
    }
    for j in 0..steps {
        let mut s = [zero; L];
        for ((slot, lane), st) in s.iter_mut().zip(lanes.iter()).zip(state) {
            let block = if j >= lane.blocks {
                zero
            } else if lane.finish && j + 1 == lane.blocks {
                lane.key.last_block(lane.msg, lane.blocks)
            } else {
                // SAFETY: block j < blocks is a whole block inside the message
                // (a finishing lane's last block was handled above; a
                // non-finishing lane's blocks are all whole).
                _mm_xor_si128(unsafe { load_at(lane.msg, BLOCK * j) }, lane.key.mac[0])
            };
            *slot = _mm_xor_si128(st, block);
        }
        for r in 1..NR {
            for (v, lane) in s.iter_mut().zip(lanes.iter()) {
                *v = _mm_aesenc_si128(*v, lane.key.mac[r]);
            }
        }
        for ((st, lane), v) in state.iter_mut().zip(lanes.iter()).zip(s) {
            if j < lane.blocks {
                *st = _mm_aesenclast_si128(v, lane.key.mac[NR]);
            }
        }
    }
    for (lane, st) in lanes.iter_mut().zip(state) {
        lane.state = st;
    }
}
