//! The accuracy of the transmit timestamp (T3) a server puts in its replies,
//! as the NTP load generator measures it: the kernel's receive timestamp of
//! a reply at the generator minus the T3 it carries. Generator and server
//! read one clock (one machine), so the difference is exactly how early the
//! T3 was, plus the time the reply took from the server's send call to the
//! generator's network stack (a veth crossing: about 0.1 to 0.3 µs).
//! Positive: T3 early (read before the reply left), as it always is.
//!
//! **Basic mode.** Each request carries a unique transmit timestamp (a
//! cookie: run id and sequence number), origin and receive zero; the reply's
//! origin names the request, and its offset is its own receive time minus
//! its own T3.
//!
//! **Interleaved mode** (RFC 9769, client side, as chrony's client does it).
//! A logical client's request carries as origin the server's receive
//! timestamp (T2) of that client's previous reply, as receive a second
//! cookie and as transmit the first. A server that kept the transmit time of
//! the reply that carried that T2 answers interleaved: its reply's origin is
//! the request's receive cookie and its T3 is when that previous reply left.
//! The offset is then the previous reply's kernel receive time minus this
//! reply's T3, and the server's response time is that previous exchange's
//! actual transmit time minus its T2 (the origin the generator sent). A reply
//! whose origin is the transmit cookie is a basic reply, measured as in basic
//! mode. The first request of a client has origin 0 and cannot be answered
//! interleaved; chronyd keeps a transmit time only for requests that look
//! interleaved, so its first interleaved reply answers a client's third
//! request. The share of interleaved replies is therefore given over all
//! replies and over those to each client's third and later requests.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use authtime_packet_io::Stamp;
use authtime_wire::{Header, NtpTimestamp};
use serde::Serialize;

/// A client's first requests that cannot be answered interleaved.
pub const WARMUP: u64 = 2;
/// Bit of a cookie's low half that marks the receive-field cookie.
const RECEIVE_BIT: u64 = 1 << 31;
/// Sequence numbers must stay below the receive bit.
pub const MAX_SEQ: u64 = RECEIVE_BIT - 1;

/// The transmit-field cookie of request `seq`.
#[must_use]
pub fn transmit_cookie(run_id: u32, seq: u64) -> NtpTimestamp {
    NtpTimestamp::from_bits((u64::from(run_id) << 32) | (seq & MAX_SEQ))
}

/// The receive-field cookie of request `seq` (interleaved requests only).
#[must_use]
pub fn receive_cookie(run_id: u32, seq: u64) -> NtpTimestamp {
    NtpTimestamp::from_bits((u64::from(run_id) << 32) | RECEIVE_BIT | (seq & MAX_SEQ))
}

/// How a reply answered its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    /// Its origin is the request's transmit cookie.
    Basic,
    /// Its origin is the request's receive cookie (RFC 9769).
    Interleaved,
}

/// The request a reply's origin names, if it is one of this run's cookies.
#[must_use]
pub fn match_origin(run_id: u32, origin: NtpTimestamp) -> Option<(u64, ReplyKind)> {
    let bits = origin.to_bits();
    if (bits >> 32) as u32 != run_id {
        return None;
    }
    let low = bits & 0xffff_ffff;
    let kind = if low & RECEIVE_BIT == 0 {
        ReplyKind::Basic
    } else {
        ReplyKind::Interleaved
    };
    Some((low & MAX_SEQ, kind))
}

/// What a logical client knows of its last reply.
#[derive(Debug, Clone, Copy, Default)]
struct ClientState {
    /// Sequence number + 1 of the last reply recorded (0: none yet).
    seq: u64,
    /// That reply's receive timestamp (T2), as sent back as origin.
    t2: u64,
    /// Its kernel receive time at the generator, Unix ns (0: unknown).
    rx_ns: i64,
}

/// The interleaved-mode state: per logical client its last reply, per
/// request the origin it carried and the receive time of the reply that
/// origin came from.
pub struct Interleave {
    clients: Vec<Mutex<ClientState>>,
    origin: Vec<AtomicU64>,
    previous_rx: Vec<AtomicI64>,
}

impl Interleave {
    /// State for `clients` logical clients and `requests` requests.
    #[must_use]
    pub fn new(clients: usize, requests: usize) -> Self {
        Self {
            clients: (0..clients)
                .map(|_| Mutex::new(ClientState::default()))
                .collect(),
            origin: (0..requests).map(|_| AtomicU64::new(0)).collect(),
            previous_rx: (0..requests).map(|_| AtomicI64::new(0)).collect(),
        }
    }

    fn client(&self, seq: u64) -> Option<&Mutex<ClientState>> {
        self.clients
            .get((seq % self.clients.len().max(1) as u64) as usize)
    }

    /// The origin request `seq` carries (the T2 of its client's last reply,
    /// 0 for none), remembered with that reply's receive time.
    pub fn origin_for(&self, seq: u64) -> NtpTimestamp {
        let Some(client) = self.client(seq) else {
            return NtpTimestamp::ZERO;
        };
        let last = *client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let (Some(o), Some(p)) = (
            self.origin.get(seq as usize),
            self.previous_rx.get(seq as usize),
        ) {
            o.store(last.t2, Ordering::Relaxed);
            p.store(last.rx_ns, Ordering::Relaxed);
        }
        NtpTimestamp::from_bits(last.t2)
    }

    /// Records the reply to request `seq` as its client's last, unless a
    /// later one of that client is recorded already.
    pub fn record_reply(&self, seq: u64, t2: NtpTimestamp, rx_ns: Option<i64>) {
        let Some(client) = self.client(seq) else {
            return;
        };
        let mut state = client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seq + 1 > state.seq {
            *state = ClientState {
                seq: seq + 1,
                t2: t2.to_bits(),
                rx_ns: rx_ns.unwrap_or(0),
            };
        }
    }

    /// The origin request `seq` carried and the receive time of the reply it
    /// came from (`None` when unknown).
    fn previous(&self, seq: u64) -> (NtpTimestamp, Option<i64>) {
        let origin = self
            .origin
            .get(seq as usize)
            .map_or(0, |o| o.load(Ordering::Relaxed));
        let rx = self
            .previous_rx
            .get(seq as usize)
            .map_or(0, |p| p.load(Ordering::Relaxed));
        (NtpTimestamp::from_bits(origin), (rx != 0).then_some(rx))
    }
}

/// What one receiver measured. Offsets and response times are kept in ns,
/// saturated to ±2.1 s (beyond that a figure means a broken clock, not an
/// early timestamp).
#[derive(Debug, Default)]
pub struct Samples {
    basic_offsets: Vec<i32>,
    interleaved_offsets: Vec<i32>,
    basic_response: Vec<i32>,
    interleaved_response: Vec<i32>,
    /// Time replies without a kernel receive timestamp.
    unstamped: u64,
    /// Interleaved replies whose previous reply's receive time is unknown.
    interleaved_unmeasured: u64,
    /// Replies to a client's third and later requests, and how many of
    /// those were interleaved.
    eligible: u64,
    eligible_interleaved: u64,
}

fn saturate(ns: i128) -> i32 {
    ns.clamp(i128::from(i32::MIN), i128::from(i32::MAX)) as i32
}

fn unix_ns(ts: NtpTimestamp, near_secs: i64) -> i128 {
    ts.to_unix_near(near_secs).as_nanos()
}

impl Samples {
    /// Adds the time reply `header` to request `seq`, received at `stamp`.
    /// `interleave` is the run's state in interleaved mode, `clients` the
    /// number of logical clients.
    pub fn add(
        &mut self,
        seq: u64,
        kind: ReplyKind,
        header: &Header,
        stamp: Option<Stamp>,
        interleave: Option<&Interleave>,
        clients: usize,
    ) {
        let rx_ns = stamp.map(|s| s.unix_nanos());
        if let Some(state) = interleave {
            state.record_reply(seq, header.receive_ts, rx_ns.map(saturate_i64));
            if seq / clients.max(1) as u64 >= WARMUP {
                self.eligible += 1;
                self.eligible_interleaved += u64::from(kind == ReplyKind::Interleaved);
            }
        }
        let (Some(stamp), Some(rx_ns)) = (stamp, rx_ns) else {
            self.unstamped += 1;
            return;
        };
        let t3 = unix_ns(header.transmit_ts, stamp.secs);
        match kind {
            ReplyKind::Basic => {
                self.basic_offsets.push(saturate(rx_ns - t3));
                let t2 = unix_ns(header.receive_ts, stamp.secs);
                self.basic_response.push(saturate(t3 - t2));
            }
            ReplyKind::Interleaved => {
                let Some((origin, Some(previous_rx))) = interleave.map(|s| s.previous(seq)) else {
                    self.interleaved_unmeasured += 1;
                    return;
                };
                self.interleaved_offsets
                    .push(saturate(i128::from(previous_rx) - t3));
                let previous_t2 = unix_ns(origin, stamp.secs);
                self.interleaved_response.push(saturate(t3 - previous_t2));
            }
        }
    }
}

fn saturate_i64(ns: i128) -> i64 {
    ns.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Offsets of one kind of reply, in µs.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct OffsetStats {
    /// Replies measured.
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub median_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Standard deviation (of the population measured): a few replies the
    /// scheduler held back (tens of µs) weigh on it.
    pub stddev_us: f64,
    /// Interquartile range (75th − 25th percentile): the spread of the bulk
    /// of the replies, unmoved by a few outliers.
    pub iqr_us: f64,
    /// Smallest.
    pub min_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl OffsetStats {
    /// The statistics of offsets in ns.
    pub(crate) fn of(mut ns: Vec<i32>) -> Self {
        if ns.is_empty() {
            return Self::default();
        }
        ns.sort_unstable();
        let n = ns.len() as f64;
        let mean = ns.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
        let var = ns
            .iter()
            .map(|&x| (f64::from(x) - mean).powi(2))
            .sum::<f64>()
            / n;
        Self {
            count: ns.len() as u64,
            mean_us: mean / 1e3,
            median_us: percentile(&ns, 0.5),
            p99_us: percentile(&ns, 0.99),
            stddev_us: var.sqrt() / 1e3,
            iqr_us: percentile(&ns, 0.75) - percentile(&ns, 0.25),
            min_us: f64::from(ns[0]) / 1e3,
            max_us: f64::from(ns[ns.len() - 1]) / 1e3,
        }
    }
}

/// Percentile `p` of sorted nanoseconds, in µs (nearest rank).
fn percentile(sorted: &[i32], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted
        .get(i.min(sorted.len().saturating_sub(1)))
        .map_or(0.0, |&x| f64::from(x) / 1e3)
}

/// The server's response time (T3 − T2) of one kind of reply, in µs.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ResponseStats {
    /// Exchanges measured.
    pub count: u64,
    /// Median.
    pub median_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
}

impl ResponseStats {
    fn of(mut ns: Vec<i32>) -> Self {
        ns.sort_unstable();
        Self {
            count: ns.len() as u64,
            median_us: percentile(&ns, 0.5),
            p99_us: percentile(&ns, 0.99),
        }
    }
}

/// The T3 accuracy of a run.
#[derive(Debug, Clone, Serialize)]
pub struct T3Accuracy {
    /// Time replies that came with a kernel receive timestamp.
    pub stamped: u64,
    /// Time replies without one (not measured).
    pub unstamped: u64,
    /// Basic replies: own receive time − own T3.
    pub basic: OffsetStats,
    /// Interleaved replies: the previous reply's receive time − this T3.
    pub interleaved: OffsetStats,
    /// Interleaved replies whose previous reply had no receive time.
    pub interleaved_unmeasured: u64,
    /// Interleaved replies ÷ time replies.
    pub interleaved_share: f64,
    /// The same among replies to each client's third and later requests
    /// (the first two cannot be interleaved by chronyd); 0 in basic mode.
    pub interleaved_share_after_warmup: f64,
    /// T3 − T2 of basic replies: T3 as the server wrote it before sending.
    pub response_basic: ResponseStats,
    /// Interleaved replies: this T3 (when the previous reply left, by the
    /// kernel's clock) − the previous reply's T2.
    pub response_interleaved: ResponseStats,
}

impl T3Accuracy {
    /// Merges what the receivers measured.
    #[must_use]
    pub fn from_samples(samples: Vec<Samples>) -> Self {
        let mut all = Samples::default();
        for s in samples {
            all.basic_offsets.extend(s.basic_offsets);
            all.interleaved_offsets.extend(s.interleaved_offsets);
            all.basic_response.extend(s.basic_response);
            all.interleaved_response.extend(s.interleaved_response);
            all.unstamped += s.unstamped;
            all.interleaved_unmeasured += s.interleaved_unmeasured;
            all.eligible += s.eligible;
            all.eligible_interleaved += s.eligible_interleaved;
        }
        let basic = all.basic_offsets.len() as u64;
        let interleaved = all.interleaved_offsets.len() as u64 + all.interleaved_unmeasured;
        let share = |part: u64, whole: u64| {
            if whole == 0 {
                0.0
            } else {
                part as f64 / whole as f64
            }
        };
        Self {
            stamped: basic + interleaved,
            unstamped: all.unstamped,
            basic: OffsetStats::of(all.basic_offsets),
            interleaved: OffsetStats::of(all.interleaved_offsets),
            interleaved_unmeasured: all.interleaved_unmeasured,
            interleaved_share: share(interleaved, basic + interleaved),
            interleaved_share_after_warmup: share(all.eligible_interleaved, all.eligible),
            response_basic: ResponseStats::of(all.basic_response),
            response_interleaved: ResponseStats::of(all.interleaved_response),
        }
    }

    /// The offsets that describe the run: the interleaved replies' when
    /// there are any, else the basic ones.
    #[must_use]
    pub fn headline(&self) -> (ReplyKind, &OffsetStats, &ResponseStats) {
        if self.interleaved.count > 0 {
            (
                ReplyKind::Interleaved,
                &self.interleaved,
                &self.response_interleaved,
            )
        } else {
            (ReplyKind::Basic, &self.basic, &self.response_basic)
        }
    }
}

#[cfg(test)]
mod tests {
    use authtime_packet_io::StampSource;
    use authtime_wire::Mode;

    use super::*;

    const NOW_SECS: i64 = 1_790_000_000;

    fn stamp(ns_after: u32) -> Stamp {
        Stamp {
            secs: NOW_SECS,
            nanos: ns_after,
            source: StampSource::Kernel,
        }
    }

    fn ts(ns_after: u32) -> NtpTimestamp {
        NtpTimestamp::from_unix(NOW_SECS, ns_after)
    }

    fn reply(t2: u32, t3: u32) -> Header {
        let mut h = Header::new(Mode::Server);
        h.receive_ts = ts(t2);
        h.transmit_ts = ts(t3);
        h
    }

    #[test]
    fn cookies_name_their_request_and_field() {
        let run = 0xdead_beef;
        for seq in [0, 1, 12_345, MAX_SEQ] {
            assert_eq!(
                match_origin(run, transmit_cookie(run, seq)),
                Some((seq, ReplyKind::Basic))
            );
            assert_eq!(
                match_origin(run, receive_cookie(run, seq)),
                Some((seq, ReplyKind::Interleaved))
            );
            assert_ne!(transmit_cookie(run, seq), receive_cookie(run, seq));
        }
        assert_eq!(match_origin(run, transmit_cookie(run + 1, 5)), None);
        assert_eq!(match_origin(run, NtpTimestamp::ZERO), None);
    }

    #[test]
    fn basic_offsets_are_own_receive_time_minus_own_t3() {
        let mut s = Samples::default();
        // T2 at 1 000 ns, T3 at 21 000, received at 23 500: 2.5 µs early, 20 µs to answer.
        s.add(
            0,
            ReplyKind::Basic,
            &reply(1_000, 21_000),
            Some(stamp(23_500)),
            None,
            1,
        );
        s.add(1, ReplyKind::Basic, &reply(1_000, 21_000), None, None, 1);
        let a = T3Accuracy::from_samples(vec![s]);
        assert_eq!((a.stamped, a.unstamped), (1, 1));
        assert!((a.basic.mean_us - 2.5).abs() < 0.01, "{a:?}");
        assert!((a.response_basic.median_us - 20.0).abs() < 0.01, "{a:?}");
        assert_eq!(a.interleaved.count, 0);
        assert_eq!(a.headline().0, ReplyKind::Basic);
    }

    #[test]
    fn interleaved_offsets_use_the_previous_reply_of_the_same_client() {
        // Two clients; requests 0, 2, 4 are client 0's, 1, 3, 5 client 1's.
        let state = Interleave::new(2, 6);
        let mut s = Samples::default();
        assert_eq!(state.origin_for(0), NtpTimestamp::ZERO);
        assert_eq!(state.origin_for(1), NtpTimestamp::ZERO);
        s.add(
            0,
            ReplyKind::Basic,
            &reply(100, 300),
            Some(stamp(400)),
            Some(&state),
            2,
        );
        s.add(
            1,
            ReplyKind::Basic,
            &reply(150, 350),
            Some(stamp(450)),
            Some(&state),
            2,
        );
        assert_eq!(state.origin_for(2), ts(100));
        assert_eq!(state.origin_for(3), ts(150));
        s.add(
            2,
            ReplyKind::Basic,
            &reply(1_000, 1_100),
            Some(stamp(1_250)),
            Some(&state),
            2,
        );
        assert_eq!(state.origin_for(4), ts(1_000));
        // Request 4 (client 0's third) is answered interleaved: its T3 is when
        // reply 2 left, 1 230 ns; reply 2 arrived at 1 250: 0.02 µs. The
        // previous exchange took 1 230 − 1 000 ns.
        s.add(
            4,
            ReplyKind::Interleaved,
            &reply(2_000, 1_230),
            Some(stamp(2_300)),
            Some(&state),
            2,
        );
        let a = T3Accuracy::from_samples(vec![s]);
        assert_eq!(a.interleaved.count, 1);
        assert!((a.interleaved.mean_us - 0.02).abs() < 0.002, "{a:?}");
        assert!(
            (a.response_interleaved.median_us - 0.23).abs() < 0.002,
            "{a:?}"
        );
        assert_eq!(a.basic.count, 3);
        assert!((a.interleaved_share - 0.25).abs() < 1e-9);
        // Only request 4 is past its client's warm-up, and it was interleaved.
        assert!((a.interleaved_share_after_warmup - 1.0).abs() < 1e-9);
        assert_eq!(a.headline().0, ReplyKind::Interleaved);
    }

    #[test]
    fn an_older_reply_does_not_replace_a_newer_one() {
        let state = Interleave::new(1, 4);
        state.record_reply(2, ts(2_000), Some(5));
        state.record_reply(1, ts(1_000), Some(4));
        assert_eq!(state.origin_for(3), ts(2_000));
        assert_eq!(state.previous(3), (ts(2_000), Some(5)));
    }

    #[test]
    fn statistics_of_known_offsets() {
        let st = OffsetStats::of(vec![1_000, 2_000, 3_000, 4_000, 100_000]);
        assert_eq!(st.count, 5);
        assert!((st.mean_us - 22.0).abs() < 1e-9);
        assert!((st.median_us - 3.0).abs() < 1e-9);
        assert!((st.p99_us - 100.0).abs() < 1e-9);
        assert!((st.min_us - 1.0).abs() < 1e-9 && (st.max_us - 100.0).abs() < 1e-9);
        assert!((st.stddev_us - 39.013).abs() < 0.001, "{}", st.stddev_us);
        let empty = OffsetStats::of(vec![]);
        assert_eq!(empty.count, 0);
        assert!(empty.mean_us.is_finite());
    }
}
