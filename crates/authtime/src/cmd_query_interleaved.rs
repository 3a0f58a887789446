//! `authtime query --interleaved`: RFC 9769 interleaved exchanges with an
//! NTP server ([`authtime_proto::InterleavedClient`]) on one socket, with
//! kernel timestamps for T1 (the transmit timestamps of our requests, read
//! from the socket's error queue) and T4 (the receive timestamps of the
//! replies) through `authtime-packet-io`, and the clock where the kernel
//! gives none.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use authtime_keys::KeyEntry;
use authtime_packet_io::{
    Sender, Stamp, StampSource, TxStampReader, enable_timestamps, looped_packet, recv_one,
    wait_for_receive_stamps,
};
use authtime_proto::{
    ClientConfig, ClientError, InterleavedClient, InterleavedSample, REQUEST_RANDOM_LEN, Sample,
    SampleMode,
};
use authtime_server::clock;
use authtime_wire::NtpTimestamp;
use serde_json::json;

use crate::cmd_query::{
    Failure, MAX_COUNT, auth_text, connect_udp, judge, leap_name, load_keys, no_reply, pick_key,
    refused_key, reply_json, resolve, seconds, verdict, write_json,
};
use crate::{Outcome, Streams, cli::QueryArgs};

/// Datagrams read while waiting for one reply, at most: replies that are
/// not ours are ignored, but not forever.
const MAX_DATAGRAMS_PER_REPLY: usize = 1000;
/// How long to wait for the kernel to start stamping received datagrams
/// (it switches receive timestamping on in deferred work).
const RECEIVE_STAMPS_WAIT: Duration = Duration::from_secs(1);

/// What the summary says when no sample was interleaved.
pub const BASIC_ONLY: &str = "the server answered in basic mode only: it does not serve RFC \
                              9769 interleaved mode, or had no transmit timestamp to give";

/// Who took a T1 or a T4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum TimeSource {
    /// The kernel's software timestamp.
    Kernel,
    /// The network card's timestamp.
    Hardware,
    /// Our clock, read next to the system call: the kernel gave no stamp.
    Clock,
}

impl TimeSource {
    fn of(stamp: &Stamp) -> Self {
        match stamp.source {
            StampSource::Kernel => Self::Kernel,
            StampSource::Hardware => Self::Hardware,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Kernel => "kernel",
            Self::Hardware => "hardware",
            Self::Clock => "clock",
        }
    }
}

fn ntp_time(stamp: &Stamp) -> NtpTimestamp {
    clock::from_realtime(stamp.secs, stamp.nanos)
}

/// Where T1 and T4 of each request came from, by request number.
#[derive(Debug, Default)]
struct Sources {
    t1: Vec<TimeSource>,
    t4: Vec<Option<TimeSource>>,
    /// Transmit cookie to request number, to match transmit timestamps.
    by_cookie: HashMap<u64, u64>,
}

impl Sources {
    fn t1_of(&self, seq: u64) -> TimeSource {
        usize::try_from(seq)
            .ok()
            .and_then(|i| self.t1.get(i).copied())
            .unwrap_or(TimeSource::Clock)
    }

    fn t4_of(&self, seq: u64) -> TimeSource {
        usize::try_from(seq)
            .ok()
            .and_then(|i| self.t4.get(i).copied().flatten())
            .unwrap_or(TimeSource::Clock)
    }
}

/// One query's outcome: a sample and how it was measured, or a failure.
type Query = Result<(Sample, How), Failure>;

/// How a sample was measured.
#[derive(Debug, Clone, Copy)]
struct How {
    mode: SampleMode,
    request: u64,
    measured: u64,
    t1: TimeSource,
    t4: TimeSource,
}

/// The socket, the client and the kernel's timestamps.
struct Session<'k> {
    socket: UdpSocket,
    client: InterleavedClient<'k>,
    sender: Sender,
    tx_stamps: Box<TxStampReader>,
    transmit_stamps: bool,
    sources: Sources,
}

impl Session<'_> {
    /// Reads the transmit timestamps the kernel queued and gives each to
    /// the request it stamped (found by its transmit cookie).
    fn read_transmit_stamps(&mut self) {
        if !self.transmit_stamps {
            return;
        }
        let mut found: Vec<(u64, Stamp)> = Vec::new();
        let by_cookie = &self.sources.by_cookie;
        // An error reading the queue leaves T1 to the clock, as without stamps.
        let _ = self.tx_stamps.drain(&self.socket, |t| {
            let Some(udp) = looped_packet::parse(t.packet) else {
                return;
            };
            let Some(cookie) = udp
                .payload
                .get(40..48)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
            else {
                return;
            };
            if let Some(&seq) = by_cookie.get(&u64::from_be_bytes(cookie)) {
                found.push((seq, t.stamp));
            }
        });
        for (seq, stamp) in found {
            if self.client.set_send_time(seq, ntp_time(&stamp))
                && let Some(source) = usize::try_from(seq)
                    .ok()
                    .and_then(|i| self.sources.t1.get_mut(i))
            {
                *source = TimeSource::of(&stamp);
            }
        }
    }

    /// Sends the next request; `Err` when it could not be sent.
    fn send(&mut self) -> Result<u64, Failure> {
        let mut random = [0u8; REQUEST_RANDOM_LEN];
        getrandom::fill(&mut random)
            .map_err(|e| Failure::NoAnswer(format!("no random bytes: {e}")))?;
        let mut request = [0u8; 128];
        let sent = self
            .client
            .build_request(clock::now(), random, &mut request)
            .map_err(|e| Failure::NoAnswer(e.to_string()))?;
        self.sources
            .by_cookie
            .insert(sent.transmit_ts.to_bits(), sent.seq);
        self.sources.t1.push(TimeSource::Clock);
        self.sources.t4.push(None);
        // T1 by the clock right before the send, unless the kernel's
        // transmit timestamp replaces it.
        self.client.set_send_time(sent.seq, clock::now());
        self.sender
            .send(
                &self.socket,
                &request[..sent.len],
                None,
                self.transmit_stamps,
            )
            .map_err(|e| Failure::NoAnswer(format!("cannot send: {e}")))?;
        self.read_transmit_stamps();
        Ok(sent.seq)
    }

    /// Waits up to `timeout` for the reply to request `seq`.
    fn receive(&mut self, seq: u64, timeout: Duration) -> Result<InterleavedSample, Failure> {
        let deadline = Instant::now() + timeout;
        let mut ignored: Option<ClientError> = None;
        let mut reply = [0u8; 1024];
        for _ in 0..MAX_DATAGRAMS_PER_REPLY {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.socket.set_read_timeout(Some(left)).is_err() {
                break;
            }
            let got = match recv_one(&self.socket, &mut reply, true) {
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    return Err(Failure::NoAnswer(
                        "connection refused: nothing listens on that port".into(),
                    ));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let (t4, source) = match &got.stamp {
                Some(stamp) => (ntp_time(stamp), TimeSource::of(stamp)),
                None => (clock::now(), TimeSource::Clock),
            };
            if got.truncated {
                continue;
            }
            // A transmit stamp that came in late still counts for T1.
            self.read_transmit_stamps();
            let error = match self.client.process_response(&reply[..got.len], t4) {
                Ok(sample) => {
                    if let Some(slot) = usize::try_from(seq)
                        .ok()
                        .and_then(|i| self.sources.t4.get_mut(i))
                    {
                        *slot = Some(source);
                    }
                    return Ok(sample);
                }
                Err(e) => e,
            };
            if let Some(failure) = judge(error, &mut ignored) {
                return Err(failure);
            }
        }
        Err(no_reply(ignored, timeout))
    }

    /// One request and its reply.
    fn query(&mut self, key: Option<&KeyEntry>, timeout: Duration) -> Query {
        let seq = self.send()?;
        match self.receive(seq, timeout) {
            Ok(s) => Ok((
                s.sample,
                How {
                    mode: s.mode,
                    request: s.answered,
                    measured: s.measured,
                    t1: self.sources.t1_of(s.measured),
                    t4: self.sources.t4_of(s.measured),
                },
            )),
            Err(Failure::NoAnswer(reason)) => Err(key
                .and_then(|key| refused_key(&self.socket, key, &reason, timeout))
                .unwrap_or(Failure::NoAnswer(reason))),
            Err(failure) => Err(failure),
        }
    }
}

/// Checks the options that do not go with --interleaved.
fn check_options(args: &QueryArgs) -> anyhow::Result<()> {
    if args.nts {
        return Err(anyhow!(
            "--interleaved does not work with --nts: authtime's NTS client has no interleaved \
             mode; use --interleaved without --nts (with --key-file/--key-id for authentication)"
        ));
    }
    if !(2..=MAX_COUNT).contains(&args.count) {
        return Err(anyhow!(
            "--interleaved --count {}: must be 2 to {MAX_COUNT} (the first reply is always \
             basic; 4 by default)",
            args.count
        ));
    }
    Ok(())
}

/// Runs `--count` interleaved exchanges on one socket and prints a line
/// per query (or a JSON object) and a summary.
///
/// # Errors
/// Bad arguments, an unreadable key file, a key id it does not hold, a host
/// that does not resolve, a socket that cannot be opened.
pub fn query_interleaved(args: &QueryArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    check_options(args)?;
    let timeout = seconds("--timeout", args.timeout, 0.001, 60.0)?;
    let interval = seconds("--interval", args.interval, 0.0, 3600.0)?;
    let target = resolve(&args.server)?;
    let keys = load_keys(args, streams)?;
    let key = pick_key(keys.as_ref(), args.key_id)?;
    let socket = connect_udp(target)?;
    let support = enable_timestamps(&socket, true);
    if support.receive {
        // Without stamps yet, the first replies fall back to the clock (and
        // say so): no reason to stop.
        let _ = wait_for_receive_stamps(RECEIVE_STAMPS_WAIT);
    }
    let mut session = Session {
        socket,
        client: InterleavedClient::new(ClientConfig::default(), key),
        sender: Sender::new(),
        tx_stamps: TxStampReader::new(),
        transmit_stamps: support.transmit,
        sources: Sources::default(),
    };
    let mut queries = Vec::new();
    for i in 0..args.count {
        if i > 0 {
            std::thread::sleep(interval);
        }
        let query = session.query(key, timeout);
        if !args.json {
            print_line(streams, target, &query)?;
        }
        queries.push(query);
    }
    let results: Vec<Result<Sample, Failure>> = queries
        .iter()
        .map(|q| q.as_ref().map(|(s, _)| *s).map_err(Clone::clone))
        .collect();
    let outcome = verdict(target, &results);
    let summary = Summary::of(&queries, support.receive, support.transmit);
    if args.json {
        let replies = queries.iter().map(query_json).collect();
        let extra = [("interleaved", summary.json())];
        write_json(
            streams,
            &args.server,
            target,
            replies,
            &outcome,
            extra.into_iter(),
        )?;
    } else {
        writeln!(streams.stdout, "{target}: {}", summary.text())?;
    }
    Ok(outcome)
}

fn print_line(streams: &mut Streams<'_>, target: SocketAddr, query: &Query) -> anyhow::Result<()> {
    match query {
        Ok((s, how)) => {
            let of = match how.mode {
                SampleMode::Basic => String::new(),
                SampleMode::Interleaved => format!(" (exchange #{})", how.measured + 1),
            };
            writeln!(
                streams.stdout,
                "{target}: #{} {}{of}: offset {:+.9} s, delay {:.9} s, stratum {}, reference {}, \
                 leap {}, {}, T1 {}, T4 {}",
                how.request + 1,
                how.mode.name(),
                s.offset,
                s.delay,
                s.stratum,
                s.reference_id.at_stratum(s.stratum),
                leap_name(s.leap),
                auth_text(s.auth),
                how.t1.name(),
                how.t4.name(),
            )?;
        }
        Err(f) => writeln!(streams.stdout, "{target}: {}", f.reason())?,
    }
    Ok(())
}

fn query_json(query: &Query) -> serde_json::Value {
    let result = query.as_ref().map(|(s, _)| *s).map_err(Clone::clone);
    let mut value = reply_json(&result);
    if let (Ok((_, how)), Some(map)) = (query, value.as_object_mut()) {
        map.insert("mode".into(), json!(how.mode.name()));
        map.insert("request".into(), json!(how.request + 1));
        map.insert("measured_exchange".into(), json!(how.measured + 1));
        map.insert("t1_source".into(), json!(how.t1.name()));
        map.insert("t4_source".into(), json!(how.t4.name()));
    }
    value
}

/// What the run shows about the server's interleaved mode and our stamps.
struct Summary {
    samples: usize,
    interleaved: usize,
    t1_kernel: usize,
    t4_kernel: usize,
    receive_stamps: bool,
    transmit_stamps: bool,
}

impl Summary {
    fn of(queries: &[Query], receive_stamps: bool, transmit_stamps: bool) -> Self {
        let hows: Vec<&How> = queries
            .iter()
            .filter_map(|q| q.as_ref().ok().map(|(_, how)| how))
            .collect();
        let stamped = |s: TimeSource| s != TimeSource::Clock;
        Self {
            samples: hows.len(),
            interleaved: hows
                .iter()
                .filter(|h| h.mode == SampleMode::Interleaved)
                .count(),
            t1_kernel: hows.iter().filter(|h| stamped(h.t1)).count(),
            t4_kernel: hows.iter().filter(|h| stamped(h.t4)).count(),
            receive_stamps,
            transmit_stamps,
        }
    }

    fn verdict(&self) -> String {
        match (self.samples, self.interleaved) {
            (0, _) => "no samples".into(),
            (_, 0) => format!("{BASIC_ONLY}; the offsets above are basic"),
            (n, k) => format!("{k} of {n} samples interleaved"),
        }
    }

    /// Where T1 and T4 of the samples came from: `T1 from kernel transmit
    /// timestamps in 4 of them, T4 from kernel receive timestamps in 4`.
    fn stamps(&self) -> String {
        let part = |name: &str, kind: &str, of: &str, stamped: usize, supported: bool| {
            if !supported {
                return format!(
                    "{name} from the clock (the kernel gives no {kind} timestamps here)"
                );
            }
            let others = if stamped < self.samples {
                " (the clock in the others)"
            } else {
                ""
            };
            format!("{name} from kernel {kind} timestamps in {stamped}{of}{others}")
        };
        format!(
            "{}, {}",
            part(
                "T1",
                "transmit",
                " of them",
                self.t1_kernel,
                self.transmit_stamps
            ),
            part("T4", "receive", "", self.t4_kernel, self.receive_stamps)
        )
    }

    fn text(&self) -> String {
        if self.samples == 0 {
            return self.verdict();
        }
        format!("{}; {}", self.verdict(), self.stamps())
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "samples": self.samples,
            "interleaved_samples": self.interleaved,
            "basic_only": self.samples > 0 && self.interleaved == 0,
            "summary": self.verdict(),
            "t1_kernel_stamps": self.t1_kernel,
            "t4_kernel_stamps": self.t4_kernel,
            "kernel_transmit_stamps": self.transmit_stamps,
            "kernel_receive_stamps": self.receive_stamps,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn how(mode: SampleMode, t1: TimeSource) -> Query {
        let sample = Sample {
            offset: 0.0,
            delay: 0.0,
            dispersion: 0.0,
            stratum: 2,
            reference_id: authtime_wire::ReferenceId::from_ascii(*b"TEST"),
            leap: authtime_wire::LeapIndicator::NoWarning,
            precision: -20,
            root_delay: 0.0,
            root_dispersion: 0.0,
            root_distance: 0.0,
            version: 4,
            server_transmit: NtpTimestamp::ZERO,
            auth: authtime_proto::AuthStatus::Unauthenticated,
        };
        Ok((
            sample,
            How {
                mode,
                request: 0,
                measured: 0,
                t1,
                t4: TimeSource::Kernel,
            },
        ))
    }

    #[test]
    fn the_summary_says_basic_only_plainly() {
        let basic = [
            how(SampleMode::Basic, TimeSource::Kernel),
            how(SampleMode::Basic, TimeSource::Clock),
        ];
        let s = Summary::of(&basic, true, true);
        assert!(s.text().starts_with(BASIC_ONLY), "{}", s.text());
        assert!(
            s.text().contains("in 1 of them (the clock in the others)"),
            "{}",
            s.text()
        );
        assert_eq!(s.json()["basic_only"], true);
        let mixed = [
            how(SampleMode::Basic, TimeSource::Kernel),
            how(SampleMode::Interleaved, TimeSource::Kernel),
            how(SampleMode::Interleaved, TimeSource::Kernel),
        ];
        let s = Summary::of(&mixed, true, false);
        assert!(
            s.text().starts_with("2 of 3 samples interleaved"),
            "{}",
            s.text()
        );
        assert!(s.text().contains("T1 from the clock"), "{}", s.text());
        assert_eq!(s.json()["interleaved_samples"], 2);
        assert_eq!(Summary::of(&[], true, true).text(), "no samples");
    }
}
