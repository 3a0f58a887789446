//! Hash-chain traversal with logarithmic storage and bounded work per step.
//!
//! Written here by hand: no maintained crate traverses one-way chains with
//! pebbles (the crates named `hash-chain` are unrelated maps).
//!
//! # Positions
//!
//! Position `p` of a chain of `n` outputs holds `F^p(seed)`; the seed is the
//! primary key `K_N`, so position `p` is `K_{N-p}` and the commitment `K_0` is
//! position `n` (with `n = N`). Outputs run from position `n-1` (`K_1`) down to
//! position 0 (`K_N`): the opposite of the direction `F` computes in.
//!
//! # Method: binary pebbling with deadline-scheduled re-computation
//!
//! The scheme belongs to the family of Jakobsson's fractal traversal
//! (ePrint 2002/001): stored values ("pebbles") sit at binary positions and are
//! re-computed ahead of need, a fixed number of hashes per output.
//!
//! Take the aligned segments of length `2^(b+1)` at every level `b`. While the
//! output walks down the upper half `T` of such a segment `[s, s+2^(b+1))`, a
//! *job* of level `b` walks up from the pebble at `s`, one hash per output,
//! and drops pebbles at the positions `s + 2^b - 2^j` (`j < b`) of the lower half
//! `B`. There are `2^b` outputs in `T` and `2^b - 1` hashes to do, so the job is
//! finished when the output enters `B`, and the pebbles it left are exactly the
//! ones `B` needs (its own upper halves' bottoms, recursively). The state at
//! any position `p` is a closed formula of `p` (the private `layout`): it is what the
//! setup builds directly, what a restored state is checked against, and what
//! the stepped state is tested to equal at every position.
//!
//! Bounds, for `n <= 2^k`:
//! - hashes per output: at most one per unfinished job, at most `k - 1`
//!   (reached at position `2^k - 1`), `k/2 - 1` on average over a whole chain;
//! - stored values: the pebble at 0, one pebble per set bit of `p`, the pebbles
//!   of unfinished jobs and their cursors when not on a pebble: at most `2k`;
//! - setup: one pass of `n` hashes (to `K_0`), which [`TraversalBuilder`] can
//!   spread over time.
//!
//! Measured with [`measure_traversal`] (`examples/traversal_cost.rs`, release
//! build, counting function): peak storage `2k - 1` and at most `k - 1`
//! hashes per output for every `k` from 4 to 32, i.e. 39 keys (1.2 KiB) and
//! 19 hashes for `2^20`, 63 keys (2 KiB) and 31 hashes for `2^32`; the mean is
//! exactly `k/2 - 1` where the whole chain runs (`k <= 20`: 9.0 for `2^20`).
//! For `2^32` the whole measurement, setup pass included, takes 0.6 s.
//!
//! Schoenmakers' optimal binary pebbling halves the hashes per output
//! (`ceil(k/2)`) with `k` pebbles; this simpler schedule was chosen because its
//! state is a closed formula of the position, which makes save/restore
//! checkable and the correctness argument short.

use crate::codec::{Reader, WireError, put_u16, put_u64};
use crate::owf::{ChainValue, OneWayFunction};

/// Longest chain the traversal accepts (positions must fit below `2^63`).
pub const MAX_TRAVERSAL_LEN: u64 = 1 << 40;

const STATE_VERSION: u8 = 1;

/// Why a traversal could not be built or restored.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraversalError {
    /// A chain needs at least one output and at most [`MAX_TRAVERSAL_LEN`].
    Length(u64),
    /// A saved state could not be decoded.
    Wire(WireError),
    /// A saved state decoded but is not the state of any position.
    Inconsistent,
}

impl core::fmt::Display for TraversalError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Length(n) => write!(f, "chain length {n} out of range"),
            Self::Wire(e) => write!(f, "traversal state: {e}"),
            Self::Inconsistent => f.write_str("traversal state does not match its position"),
        }
    }
}

impl std::error::Error for TraversalError {}

impl From<WireError> for TraversalError {
    fn from(e: WireError) -> Self {
        Self::Wire(e)
    }
}

/// A job of level `b`: walks from `start` to `start + 2^b - 1`.
#[derive(Clone)]
struct Job<V> {
    level: u32,
    start: u64,
    done: u64,
    /// The cursor's value, or `None` when the cursor stands on a pebble.
    value: Option<V>,
}

fn is_spine(level: u32, done: u64) -> bool {
    done >= 1 && ((1u64 << level) - done).is_power_of_two()
}

/// Where a job stands, without values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct JobLayout {
    level: u32,
    start: u64,
    done: u64,
    owns_value: bool,
}

/// The positions stored just before position `p` is output.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    pebbles: Vec<u64>,
    jobs: Vec<JobLayout>,
}

impl Layout {
    /// Every position whose value the state holds, sorted.
    fn value_positions(&self) -> Vec<u64> {
        let mut all = self.pebbles.clone();
        all.extend(
            self.jobs
                .iter()
                .filter(|j| j.owns_value)
                .map(|j| j.start + j.done),
        );
        all.sort_unstable();
        all.dedup();
        all
    }
}

fn layout(p: u64) -> Layout {
    let mut pebbles = vec![0];
    let mut jobs = Vec::new();
    for b in 0..64u32 {
        if (p >> b) & 1 == 0 {
            continue;
        }
        let half = 1u64 << b;
        let m = p & !(half - 1);
        pebbles.push(m);
        if b == 0 {
            continue;
        }
        let s = m - half;
        let u = p - m;
        let done = half - 1 - u;
        for j in 0..b {
            let offset = half - (1u64 << j);
            if offset <= done {
                pebbles.push(s + offset);
            }
        }
        if u != 0 {
            jobs.push(JobLayout {
                level: b,
                start: s,
                done,
                owns_value: done != 0 && !is_spine(b, done),
            });
        }
    }
    pebbles.sort_unstable();
    Layout { pebbles, jobs }
}

/// Walks a one-way chain backwards: yields positions `n-1, n-2, ..., 0` of the
/// chain that `F` computes forwards from the seed, keeping `O(log n)` values and
/// doing at most `log2(n)` applications of `F` per output (see the module doc).
pub struct Traversal<F: OneWayFunction> {
    f: F,
    len: u64,
    next: Option<u64>,
    pebbles: Vec<(u64, F::Value)>,
    jobs: Vec<Job<F::Value>>,
}

impl<F: OneWayFunction + Clone> Clone for Traversal<F> {
    fn clone(&self) -> Self {
        Self {
            f: self.f.clone(),
            len: self.len,
            next: self.next,
            pebbles: self.pebbles.clone(),
            jobs: self.jobs.clone(),
        }
    }
}

impl<F: OneWayFunction> core::fmt::Debug for Traversal<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Traversal")
            .field("len", &self.len)
            .field("next", &self.next)
            .field("stored", &self.stored_values())
            .finish_non_exhaustive()
    }
}

fn find<V>(values: &[(u64, V)], pos: u64) -> Option<&V> {
    values.iter().find(|(p, _)| *p == pos).map(|(_, v)| v)
}

impl<F: OneWayFunction> Traversal<F> {
    /// Builds the traversal of the chain of `len` outputs from `seed` in one go
    /// and returns it with the commitment (position `len`, `F^len(seed)`).
    ///
    /// # Errors
    /// [`TraversalError::Length`] when `len` is 0 or above [`MAX_TRAVERSAL_LEN`].
    pub fn new(f: F, seed: F::Value, len: u64) -> Result<(Self, F::Value), TraversalError> {
        Ok(TraversalBuilder::new(f, seed, len)?.finish())
    }

    /// Number of outputs of the whole chain.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether every output has been taken.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.next.is_none()
    }

    /// Outputs still to come.
    #[must_use]
    pub fn remaining(&self) -> u64 {
        self.next.map_or(0, |p| p + 1)
    }

    /// The position the next output comes from.
    #[must_use]
    pub fn next_position(&self) -> Option<u64> {
        self.next
    }

    /// Values held right now (pebbles and job cursors).
    #[must_use]
    pub fn stored_values(&self) -> usize {
        self.pebbles.len() + self.jobs.iter().filter(|j| j.value.is_some()).count()
    }

    /// The one-way function (to read a counter, say).
    #[must_use]
    pub fn function(&self) -> &F {
        &self.f
    }

    /// Mutable access to the one-way function (to reset a counter, say).
    pub fn function_mut(&mut self) -> &mut F {
        &mut self.f
    }

    /// The next output, or `None` after position 0.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<F::Value> {
        let p = self.next?;
        let Some(idx) = self.pebbles.iter().position(|(q, _)| *q == p) else {
            unreachable!("traversal invariant: a pebble at the output position")
        };
        let (_, out) = self.pebbles.swap_remove(idx);
        self.work_one_round();
        if p == 0 {
            self.next = None;
            return Some(out);
        }
        let q = p - 1;
        self.next = Some(q);
        // Jobs start when the output enters the upper half of a segment of
        // length 2^(b+1): the low b+1 bits of q are all ones.
        for b in 1..q.trailing_ones() {
            self.jobs.push(Job {
                level: b,
                start: q & !((1u64 << (b + 1)) - 1),
                done: 0,
                value: None,
            });
        }
        Some(out)
    }

    fn work_one_round(&mut self) {
        let mut jobs = core::mem::take(&mut self.jobs);
        for job in &mut jobs {
            let cursor = job.start + job.done;
            let input = match job.value.take() {
                Some(v) => v,
                None => match find(&self.pebbles, cursor) {
                    Some(v) => v.clone(),
                    None => unreachable!("traversal invariant: a job's cursor is on a pebble"),
                },
            };
            let v = self.f.apply(&input);
            job.done += 1;
            if is_spine(job.level, job.done) {
                self.pebbles.push((job.start + job.done, v));
            } else {
                job.value = Some(v);
            }
        }
        jobs.retain(|j| j.done < (1u64 << j.level) - 1);
        self.jobs = jobs;
    }

    /// Skips `count` outputs, choosing the cheaper of stepping (up to `log2 n`
    /// hashes per output) and rebuilding the state at the target position from
    /// the values held now.
    pub fn skip(&mut self, count: u64) {
        let Some(p) = self.next else { return };
        if count == 0 {
            return;
        }
        if count > p {
            self.pebbles.clear();
            self.jobs.clear();
            self.next = None;
            return;
        }
        let target = p - count;
        let per_step = u64::from(64 - p.leading_zeros()).div_ceil(2).max(1);
        let step_cost = count.saturating_mul(per_step);
        let sources = self.sources();
        let targets = layout(target).value_positions();
        if rebuild_cost(&sources, &targets) >= step_cost {
            for _ in 0..count {
                self.next();
            }
            return;
        }
        let mut walker: Option<(u64, F::Value)> = None;
        let mut captured = Vec::with_capacity(targets.len());
        let mut src = 0;
        for &r in &targets {
            while src < sources.len() && sources[src].0 <= r {
                if walker.as_ref().is_none_or(|(w, _)| *w < sources[src].0) {
                    walker = Some((sources[src].0, sources[src].1.clone()));
                }
                src += 1;
            }
            let Some((w, v)) = walker.as_mut() else {
                unreachable!("traversal invariant: position 0 is always a source")
            };
            while *w < r {
                *v = self.f.apply(v);
                *w += 1;
            }
            captured.push((r, v.clone()));
        }
        let (pebbles, jobs) = assemble(&layout(target), &captured);
        self.pebbles = pebbles;
        self.jobs = jobs;
        self.next = Some(target);
    }

    fn sources(&self) -> Vec<(u64, F::Value)> {
        let mut all: Vec<(u64, F::Value)> = self.pebbles.clone();
        for job in &self.jobs {
            if let Some(v) = &job.value {
                all.push((job.start + job.done, v.clone()));
            }
        }
        all.sort_unstable_by_key(|(p, _)| *p);
        all
    }

    /// Builds the state at position `p` from a function that knows every value
    /// (measurement windows over the counting function use it).
    fn at_position_with(f: F, len: u64, p: u64, value_at: impl Fn(u64) -> F::Value) -> Self {
        let l = layout(p);
        let captured: Vec<(u64, F::Value)> = l
            .value_positions()
            .into_iter()
            .map(|q| (q, value_at(q)))
            .collect();
        let (pebbles, jobs) = assemble(&l, &captured);
        Self {
            f,
            len,
            next: Some(p),
            pebbles,
            jobs,
        }
    }

    fn current_layout(&self) -> Option<Layout> {
        self.next?;
        let mut pebbles: Vec<u64> = self.pebbles.iter().map(|(p, _)| *p).collect();
        pebbles.sort_unstable();
        let mut jobs: Vec<JobLayout> = self
            .jobs
            .iter()
            .map(|j| JobLayout {
                level: j.level,
                start: j.start,
                done: j.done,
                owns_value: j.value.is_some(),
            })
            .collect();
        jobs.sort_unstable_by_key(|j| j.level);
        Some(Layout { pebbles, jobs })
    }
}

impl<F: OneWayFunction> Traversal<F>
where
    F::Value: ChainValue,
{
    /// Serializes the state (positions and values; the values are secrets when
    /// the chain is a TESLA key chain: store the bytes accordingly).
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![STATE_VERSION];
        put_u64(&mut out, self.len);
        put_u64(&mut out, self.next.unwrap_or(u64::MAX));
        put_u16(&mut out, self.pebbles.len() as u16);
        let mut pebbles: Vec<&(u64, F::Value)> = self.pebbles.iter().collect();
        pebbles.sort_unstable_by_key(|(p, _)| *p);
        for (p, v) in pebbles {
            put_u64(&mut out, *p);
            v.encode(&mut out);
        }
        out.push(self.jobs.len() as u8);
        for job in &self.jobs {
            out.push(job.level as u8);
            put_u64(&mut out, job.start);
            put_u64(&mut out, job.done);
            match &job.value {
                Some(v) => {
                    out.push(1);
                    v.encode(&mut out);
                }
                None => out.push(0),
            }
        }
        out
    }

    /// Restores a state saved by [`Traversal::to_bytes`]. The positions must be
    /// exactly those of the saved position's layout; the values cannot be
    /// checked without the chain.
    ///
    /// # Errors
    /// Undecodable bytes, or a state that is not the state of its position.
    pub fn from_bytes(f: F, bytes: &[u8]) -> Result<Self, TraversalError> {
        let mut r = Reader::new(bytes);
        if r.u8("traversal version")? != STATE_VERSION {
            return Err(WireError::InvalidField("traversal version").into());
        }
        let len = r.u64("traversal length")?;
        if len == 0 || len > MAX_TRAVERSAL_LEN {
            return Err(TraversalError::Length(len));
        }
        let next = match r.u64("traversal position")? {
            u64::MAX => None,
            p if p < len => Some(p),
            _ => return Err(TraversalError::Inconsistent),
        };
        let count = r.u16("pebble count")?;
        let mut pebbles = Vec::with_capacity(usize::from(count).min(256));
        for _ in 0..count {
            let p = r.u64("pebble position")?;
            let v = F::Value::decode(r.bytes(F::Value::ENCODED_LEN, "pebble value")?)?;
            pebbles.push((p, v));
        }
        let jobs_count = r.u8("job count")?;
        let mut jobs = Vec::new();
        for _ in 0..jobs_count {
            let level = u32::from(r.u8("job level")?);
            let start = r.u64("job start")?;
            let done = r.u64("job progress")?;
            let value = if r.flag("job value flag")? {
                Some(F::Value::decode(
                    r.bytes(F::Value::ENCODED_LEN, "job value")?,
                )?)
            } else {
                None
            };
            if level == 0 || level >= 64 {
                return Err(TraversalError::Inconsistent);
            }
            jobs.push(Job {
                level,
                start,
                done,
                value,
            });
        }
        r.finish()?;
        let t = Self {
            f,
            len,
            next,
            pebbles,
            jobs,
        };
        let consistent = match t.next {
            None => t.pebbles.is_empty() && t.jobs.is_empty(),
            Some(p) => t.current_layout() == Some(layout(p)),
        };
        if consistent {
            Ok(t)
        } else {
            Err(TraversalError::Inconsistent)
        }
    }
}

fn rebuild_cost<V>(sources: &[(u64, V)], targets: &[u64]) -> u64 {
    let mut walker: Option<u64> = None;
    let mut src = 0;
    let mut cost = 0u64;
    for &r in targets {
        while src < sources.len() && sources[src].0 <= r {
            if walker.is_none_or(|w| w < sources[src].0) {
                walker = Some(sources[src].0);
            }
            src += 1;
        }
        let w = walker.unwrap_or(0);
        cost = cost.saturating_add(r - w);
        walker = Some(r);
    }
    cost
}

type State<V> = (Vec<(u64, V)>, Vec<Job<V>>);

fn assemble<V: Clone>(l: &Layout, captured: &[(u64, V)]) -> State<V> {
    let value = |pos: u64| match find(captured, pos) {
        Some(v) => v.clone(),
        None => unreachable!("traversal invariant: every layout position was captured"),
    };
    let pebbles = l.pebbles.iter().map(|&p| (p, value(p))).collect();
    let jobs = l
        .jobs
        .iter()
        .map(|j| Job {
            level: j.level,
            start: j.start,
            done: j.done,
            value: j.owns_value.then(|| value(j.start + j.done)),
        })
        .collect();
    (pebbles, jobs)
}

/// Builds a [`Traversal`] in steps: one pass up the chain from the seed that
/// keeps the values the first output position needs, then one more hash for the
/// commitment. A sender spreads [`TraversalBuilder::work`] over the intervals of
/// the previous chain so that starting a new chain costs no burst.
pub struct TraversalBuilder<F: OneWayFunction> {
    f: F,
    len: u64,
    targets: Vec<u64>,
    next_target: usize,
    walk_pos: u64,
    walk_value: F::Value,
    captured: Vec<(u64, F::Value)>,
}

impl<F: OneWayFunction> core::fmt::Debug for TraversalBuilder<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TraversalBuilder")
            .field("len", &self.len)
            .field("walk_pos", &self.walk_pos)
            .finish_non_exhaustive()
    }
}

impl<F: OneWayFunction> TraversalBuilder<F> {
    /// Starts building the chain of `len` outputs from `seed`.
    ///
    /// # Errors
    /// [`TraversalError::Length`] when `len` is 0 or above [`MAX_TRAVERSAL_LEN`].
    pub fn new(f: F, seed: F::Value, len: u64) -> Result<Self, TraversalError> {
        if len == 0 || len > MAX_TRAVERSAL_LEN {
            return Err(TraversalError::Length(len));
        }
        let mut b = Self {
            f,
            len,
            targets: layout(len - 1).value_positions(),
            next_target: 0,
            walk_pos: 0,
            walk_value: seed,
            captured: Vec::new(),
        };
        b.capture();
        Ok(b)
    }

    fn capture(&mut self) {
        while self.targets.get(self.next_target) == Some(&self.walk_pos) {
            self.captured.push((self.walk_pos, self.walk_value.clone()));
            self.next_target += 1;
        }
    }

    /// Applications of `F` still to do.
    #[must_use]
    pub fn remaining_work(&self) -> u64 {
        self.len - self.walk_pos
    }

    /// Whether the commitment has been reached.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.walk_pos == self.len
    }

    /// Applies `F` at most `budget` times; returns how many it did.
    pub fn work(&mut self, budget: u64) -> u64 {
        let mut left = budget;
        while left > 0 && self.walk_pos < self.len {
            let goal = self
                .targets
                .get(self.next_target)
                .copied()
                .unwrap_or(self.len);
            let steps = (goal - self.walk_pos).min(left);
            let mut v = self.walk_value.clone();
            for _ in 0..steps {
                v = self.f.apply(&v);
            }
            self.walk_value = v;
            self.walk_pos += steps;
            left -= steps;
            self.capture();
        }
        budget - left
    }

    /// Does the remaining work and returns the traversal, positioned at its
    /// first output, and the commitment `F^len(seed)`.
    #[must_use]
    pub fn finish(mut self) -> (Traversal<F>, F::Value) {
        self.work(u64::MAX);
        let (pebbles, jobs) = assemble(&layout(self.len - 1), &self.captured);
        let t = Traversal {
            f: self.f,
            len: self.len,
            next: Some(self.len - 1),
            pebbles,
            jobs,
        };
        (t, self.walk_value)
    }
}

impl<F: OneWayFunction> TraversalBuilder<F>
where
    F::Value: ChainValue,
{
    /// Serializes the builder's progress (a sender saves it with its state).
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![STATE_VERSION];
        put_u64(&mut out, self.len);
        put_u64(&mut out, self.walk_pos);
        self.walk_value.encode(&mut out);
        put_u16(&mut out, self.captured.len() as u16);
        for (_, v) in &self.captured {
            v.encode(&mut out);
        }
        out
    }

    /// Restores a builder saved by [`TraversalBuilder::to_bytes`].
    ///
    /// # Errors
    /// Undecodable bytes or a progress that does not fit the chain length.
    pub fn from_bytes(f: F, bytes: &[u8]) -> Result<Self, TraversalError> {
        let mut r = Reader::new(bytes);
        if r.u8("builder version")? != STATE_VERSION {
            return Err(WireError::InvalidField("builder version").into());
        }
        let len = r.u64("builder length")?;
        if len == 0 || len > MAX_TRAVERSAL_LEN {
            return Err(TraversalError::Length(len));
        }
        let walk_pos = r.u64("builder position")?;
        if walk_pos > len {
            return Err(TraversalError::Inconsistent);
        }
        let walk_value = F::Value::decode(r.bytes(F::Value::ENCODED_LEN, "builder value")?)?;
        let targets = layout(len - 1).value_positions();
        let count = usize::from(r.u16("builder captured count")?);
        let expected = targets.iter().filter(|&&t| t <= walk_pos).count();
        if count != expected {
            return Err(TraversalError::Inconsistent);
        }
        let mut captured = Vec::with_capacity(count);
        for &t in &targets[..count] {
            let v = F::Value::decode(r.bytes(F::Value::ENCODED_LEN, "builder captured")?)?;
            captured.push((t, v));
        }
        r.finish()?;
        Ok(Self {
            f,
            len,
            targets,
            next_target: count,
            walk_pos,
            walk_value,
            captured,
        })
    }
}

/// What [`measure_traversal`] found for one chain length.
#[derive(Debug, Clone, PartialEq)]
pub struct TraversalCost {
    /// `k`, for a chain of `2^k` outputs.
    pub log2_len: u32,
    /// Applications of `F` in the setup pass (the chain length: up to `K_0`).
    pub setup_evaluations: u64,
    /// Most values stored at once, over the measured positions.
    pub peak_stored: usize,
    /// Most applications of `F` for one output, over the measured outputs.
    pub max_per_step: u64,
    /// Mean applications of `F` per output, over the measured outputs.
    pub mean_per_step: f64,
    /// Outputs measured.
    pub steps_measured: u64,
    /// Measurement windows (1 when the whole chain was run).
    pub windows: usize,
    /// Whether every measured output was the right chain element.
    pub outputs_correct: bool,
}

/// Outputs measured from the start of the chain.
pub const MEASURE_HEAD: u64 = 1 << 20;
/// Outputs per extra window when the chain is longer than [`MEASURE_HEAD`].
pub const MEASURE_WINDOW: u64 = 1 << 16;

/// Measures the traversal of a chain of `2^log2_len` outputs with the
/// [`crate::owf::CountingFunction`], whose value at position `p` is `p`.
///
/// Method: the setup pass runs for real over the whole chain (2^32 counting
/// steps take well under a second in release builds). The traversal then runs
/// its first [`MEASURE_HEAD`] outputs, which include the worst position
/// `2^k - 1`; for longer chains it also runs windows of [`MEASURE_WINDOW`]
/// outputs that start at the positions `2^j - 1` (`j = 21..k`, the most set
/// bits below each power of two), at eight evenly spaced positions, and at the
/// end of the chain. Each window starts from the state the traversal has at
/// that position, built by the same layout formula the setup uses (tests check
/// that formula against the stepped state at every position of short chains).
/// Peak storage is taken before every measured output.
///
/// # Panics
/// When `log2_len` is above 40.
#[must_use]
pub fn measure_traversal(log2_len: u32) -> TraversalCost {
    use crate::owf::CountingFunction;
    assert!(log2_len <= 40, "chains up to 2^40 outputs");
    let len = 1u64 << log2_len;
    let builder =
        TraversalBuilder::new(CountingFunction::default(), 0, len).expect("length in range");
    let (mut t, commitment) = builder.finish();
    let setup_evaluations = t.function().evaluations;
    let mut acc = Accumulator {
        peak: 0,
        max: 0,
        total: 0,
        steps: 0,
        correct: commitment == len,
    };
    t.function_mut().evaluations = 0;
    acc.run(&mut t, MEASURE_HEAD.min(len));
    let mut windows = 1;
    if len > MEASURE_HEAD {
        let mut starts: Vec<u64> = (21..log2_len).map(|j| (1u64 << j) - 1).collect();
        starts.extend((1..=8).map(|i| len / 9 * i));
        starts.push(MEASURE_WINDOW - 1);
        for p in starts {
            let mut w = Traversal::at_position_with(CountingFunction::default(), len, p, |q| q);
            acc.run(&mut w, MEASURE_WINDOW.min(p + 1));
            windows += 1;
        }
    }
    TraversalCost {
        log2_len,
        setup_evaluations,
        peak_stored: acc.peak,
        max_per_step: acc.max,
        mean_per_step: acc.total as f64 / acc.steps.max(1) as f64,
        steps_measured: acc.steps,
        windows,
        outputs_correct: acc.correct,
    }
}

struct Accumulator {
    peak: usize,
    max: u64,
    total: u64,
    steps: u64,
    correct: bool,
}

impl Accumulator {
    fn run(&mut self, t: &mut Traversal<crate::owf::CountingFunction>, steps: u64) {
        for _ in 0..steps {
            self.peak = self.peak.max(t.stored_values());
            let expected = t.next_position();
            let before = t.function().evaluations;
            let out = t.next();
            let cost = t.function().evaluations - before;
            self.correct &= out.is_some() && out == expected;
            self.max = self.max.max(cost);
            self.total += cost;
            self.steps += 1;
        }
    }
}

#[cfg(test)]
mod tests;
