//! The `stack` section's AF_XDP column: the CPU it takes to move one UDP
//! packet through AF_XDP, sent and received, with the kernel's UDP/IP stack
//! out of the way.
//!
//! **Setup.** Two network namespaces of the lab's own joined by a veth pair
//! ([`NetnsPair`], MTU raised to [`MTU`] so that a 1500-byte payload fits one
//! frame), authtime-xdp's program attached to both ends in native mode
//! steering UDP port [`PORT`] to an AF_XDP socket (copy mode, queue 0, 2048-
//! byte chunks) on each end. One datagram of the size is sent from an
//! ordinary UDP socket on one end (transmit checksum offload off there, so
//! that it carries a real checksum), bound to [`PORT`], to [`PORT`] at the
//! other end; from then on the frame bounces: each side takes it off its RX
//! ring, parses it (authtime-frame: headers and both checksums verified),
//! writes the reply's headers around the payload in place (addresses and
//! ports swapped, IP and UDP checksums computed) and sends it back from the
//! same chunk ([`authtime_xdp::RxFrame::send`]: one `sendto` kick). A move is
//! one such hop: one packet sent and received, as one datagram sent and
//! received is in the UDP column.
//!
//! **Why the process's CPU time is the figure.** Both sockets are served by
//! the calling thread. In copy mode the kernel transmits inside the
//! `sendto` kick, and veth hands the frame to its peer's NAPI poll, which
//! runs as a softirq on the same CPU as the kick returns (its
//! `local_bh_enable`): the peer's XDP program, the redirect and the copy into
//! the peer's UMEM all run in this thread's context, and without
//! `CONFIG_IRQ_TIME_ACCOUNTING` the kernel charges that softirq time to the
//! thread. So the process's CPU holds the whole move, and nothing else
//! does. Two checks are taken over the same window: the ksoftirqd threads'
//! run time (`/proc/PID/schedstat`, exact): softirq work the kernel
//! deferred to them would be missing from the process figure, and should be
//! near zero; and the whole machine's busy CPU ([`MachineCpu`]), which
//! should agree with the process's on an otherwise idle machine and holds
//! any other work on a shared one.
//!
//! Never sends outside the two namespaces it makes; they are removed when
//! the [`Bouncer`] is dropped. Needs root.

use std::{
    net::{SocketAddr, UdpSocket},
    time::{Duration, Instant},
};

use authtime_frame::{Served, Verdict};
use authtime_xdp::{AttachMode, Attachment, ProgramSpec, Xsk, XskConfig};

use crate::{
    cpu_time::{MachineCpu, process_cpu_time},
    netns::{self, NetnsPair},
};

/// The UDP port both ends serve (and the injecting socket's own port, so
/// that the first reply is steered like every later one).
pub const PORT: u16 = 10_124;
/// The veth MTU: a 1500-byte payload is a 1528-byte IP packet.
pub const MTU: u32 = 1600;
/// The largest payload the column measures: a 1542-byte frame, within the
/// 2048-byte chunk less the kernel's headroom.
pub const MAX_PAYLOAD: usize = 1500;
/// The shortest run whose whole-machine figure is reported: `/proc/stat`
/// counts idle time in 10 ms ticks per CPU.
pub const MACHINE_MIN_WALL: Duration = Duration::from_millis(500);
/// How long a side waits for the bouncing frame before calling it lost.
const LOST_AFTER: Duration = Duration::from_millis(200);

/// One run of bounces.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct BounceRun {
    /// Moves made (each one packet sent and received).
    pub moves: usize,
    /// This process's CPU time (user + system) per move, in ns.
    pub process_ns: f64,
    /// The ksoftirqd threads' run time per move, in ns (`None` when their
    /// `/proc/PID/schedstat` cannot be read): softirq work not charged to
    /// this process.
    pub ksoftirqd_ns: Option<f64>,
    /// The whole machine's busy CPU per move, in ns; `None` for a run
    /// shorter than [`MACHINE_MIN_WALL`].
    pub machine_ns: Option<f64>,
    /// Times the frame was not yet on the expected side's RX ring and the
    /// loop waited for it (poll): 0 when the kernel delivers each frame
    /// within the `sendto` that sent it.
    pub waits: usize,
    /// Whether the frame went missing before the run's count or time was
    /// up (the run then ends with the moves made).
    pub lost: bool,
}

/// One end: the program on its veth and its AF_XDP socket. The socket is
/// closed before the program is detached.
struct Side {
    xsk: Xsk,
    _attachment: Attachment,
}

/// Two AF_XDP sockets on the two ends of a veth pair between namespaces of
/// its own, and the socket that injects the first datagram.
pub struct Bouncer {
    // Fields drop in order: sockets and programs before the namespaces.
    sides: [Side; 2],
    inject: UdpSocket,
    to: SocketAddr,
    served: Served,
    ksoftirqd: Vec<u32>,
    pair: NetnsPair,
}

impl std::fmt::Debug for Bouncer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bouncer")
            .field("pair", &self.pair)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

fn xsk_config() -> XskConfig {
    // One frame in flight: a small UMEM is plenty.
    XskConfig {
        frame_count: 64,
        fill_size: 64,
        completion_size: 64,
        rx_size: 64,
        tx_size: 64,
        ..XskConfig::default()
    }
}

/// Attaches the program to `dev` (native mode) and opens and registers an
/// AF_XDP socket on its queue 0, in the calling thread's namespace.
fn open_side(dev: &str) -> Result<Side, String> {
    let spec = ProgramSpec::udp_ports(&[PORT]).map_err(|e| e.to_string())?;
    let attachment = Attachment::attach(dev, &spec, AttachMode::Native)
        .map_err(|e| format!("attaching the XDP program to {dev}: {e}"))?;
    let xsk = Xsk::open(dev, 0, &xsk_config())
        .map_err(|e| format!("opening an AF_XDP socket on {dev}: {e}"))?;
    attachment
        .register(&xsk)
        .map_err(|e| format!("registering the AF_XDP socket on {dev}: {e}"))?;
    Ok(Side {
        xsk,
        _attachment: attachment,
    })
}

impl Bouncer {
    /// Makes the namespaces, the veth pair, both programs and sockets.
    ///
    /// # Errors
    /// Why not (no root, no `ip netns`, a kernel without AF_XDP or native
    /// XDP on veth); whatever was made is removed.
    pub fn new() -> Result<Self, String> {
        if let Some(why) = netns::unavailable() {
            return Err(why);
        }
        let pair = NetnsPair::create("stk", 1)?;
        pair.set_mtu(MTU)?;
        let (server_dev, generator_dev) = pair.veth.clone();
        let server = netns::run_in(&pair.server, || open_side(&server_dev))??;
        let generator_addr = pair.generator_addr;
        let (generator, inject) = netns::run_in(&pair.generator, || {
            let side = open_side(&generator_dev)?;
            // The injected datagram is parsed like every later frame, so it
            // needs the checksum veth's offload would leave out.
            netns::tx_checksum_off(&generator_dev)?;
            let inject =
                UdpSocket::bind((generator_addr, PORT)).map_err(|e| format!("inject bind: {e}"))?;
            Ok::<_, String>((side, inject))
        })??;
        let to = SocketAddr::from((pair.server_addrs[0], PORT));
        Ok(Self {
            sides: [generator, server],
            inject,
            to,
            served: Served::ports(&[PORT]),
            ksoftirqd: ksoftirqd_pids(),
            pair,
        })
    }

    /// The namespaces' names (removed when the bouncer is dropped).
    #[must_use]
    pub fn namespaces(&self) -> [String; 2] {
        [self.pair.server.clone(), self.pair.generator.clone()]
    }

    /// Injects one `size`-byte datagram and bounces it until `count` moves
    /// or `limit` have passed, whichever comes first; the CPU window starts
    /// when the injected frame has reached the far end's AF_XDP socket.
    ///
    /// # Errors
    /// `size` over [`MAX_PAYLOAD`], the datagram never arrived, or a frame
    /// that is not the bounced datagram.
    pub fn run(&mut self, size: usize, count: usize, limit: Duration) -> Result<BounceRun, String> {
        if size > MAX_PAYLOAD {
            return Err(format!("{size} bytes is over the column's {MAX_PAYLOAD}"));
        }
        self.drain();
        self.inject
            .send_to(&vec![0x42u8; size], self.to)
            .map_err(|e| format!("injecting the datagram: {e}"))?;
        let mut at = 1;
        if !self.sides[at]
            .xsk
            .wait(Duration::from_secs(1))
            .unwrap_or(false)
        {
            return Err(format!(
                "the injected datagram did not reach the AF_XDP socket ({:?})",
                self.sides[at].xsk.stats()
            ));
        }
        let soft0 = run_time_ns(&self.ksoftirqd);
        let (start, cpu0, machine0) = (Instant::now(), process_cpu_time(), MachineCpu::now());
        let (mut moves, mut waits, mut lost) = (0, 0, false);
        while moves < count && start.elapsed() < limit {
            if bounce_once(&mut self.sides[at].xsk, &self.served, size)? {
                moves += 1;
                at ^= 1;
            } else {
                waits += 1;
                if !self.sides[at].xsk.wait(LOST_AFTER).unwrap_or(false) {
                    lost = true;
                    break;
                }
            }
        }
        let cpu = (process_cpu_time() - cpu0).as_nanos() as f64;
        let wall = start.elapsed().as_secs_f64();
        let soft = match (soft0, run_time_ns(&self.ksoftirqd)) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64),
            _ => None,
        };
        let machine = match (machine0, MachineCpu::now()) {
            (Some(a), Some(b)) if wall >= MACHINE_MIN_WALL.as_secs_f64() => {
                Some(b.busy_since(&a, wall) * 1e9)
            }
            _ => None,
        };
        self.drain();
        if moves == 0 {
            return Err("the bounced frame was lost before its first move".into());
        }
        Ok(BounceRun {
            moves,
            process_ns: cpu / moves as f64,
            ksoftirqd_ns: soft.map(|s| s / moves as f64),
            machine_ns: machine.map(|m| m / moves as f64),
            waits,
            lost,
        })
    }

    /// Takes whatever frames are left off both RX rings (back to the fill
    /// rings) and reclaims sent chunks, so that a run starts with none in
    /// flight.
    fn drain(&mut self) {
        for side in &mut self.sides {
            side.xsk.reclaim_completions();
            while side.xsk.recv_batch(64).count() > 0 {}
            side.xsk.reclaim_completions();
        }
    }
}

/// The ksoftirqd threads' process ids.
fn ksoftirqd_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.starts_with("ksoftirqd/"))
        })
        .collect()
}

/// The threads' total run time in ns (the first field of
/// `/proc/PID/schedstat`); `None` when there are none or one is unreadable.
fn run_time_ns(pids: &[u32]) -> Option<u64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter()
        .map(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
                .ok()?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// Takes the frame off `xsk`'s RX ring, if one is there, and sends it back
/// to where it came from, in place. False when the ring was empty.
fn bounce_once(xsk: &mut Xsk, served: &Served, size: usize) -> Result<bool, String> {
    let mut batch = xsk.recv_batch(1);
    let Some(mut frame) = batch.next() else {
        return Ok(false);
    };
    let (addressing, payload) = match authtime_frame::parse(frame.data(), served) {
        Verdict::Ours(udp) => (*udp.addressing(), udp.payload_range()),
        other => {
            return Err(format!(
                "a frame that is not the bounced datagram: {other:?}"
            ));
        }
    };
    if payload.len() != size || payload.start != authtime_frame::reply_payload_offset(&addressing) {
        return Err(format!(
            "the bounced datagram changed: payload at {payload:?}, {size} bytes expected"
        ));
    }
    let len = authtime_frame::finish_reply(&addressing, frame.buffer_mut(), size)
        .map_err(|e| e.to_string())?;
    let on_ring = frame.send(len).map_err(|e| format!("AF_XDP send: {e}"))?;
    drop(batch);
    if !on_ring {
        xsk.tx_submit().map_err(|e| format!("AF_XDP send: {e}"))?;
    }
    xsk.reclaim_completions();
    Ok(true)
}

/// A `size`-byte UDP datagram from 10.200.7.2 to 10.200.7.1, both on
/// [`PORT`], as an Ethernet frame with valid checksums: what the bounce
/// carries, for measuring its user-space frame work alone.
///
/// # Panics
/// If `size` is over [`MAX_PAYLOAD`].
#[must_use]
pub fn sample_frame(size: usize) -> Vec<u8> {
    assert!(size <= MAX_PAYLOAD, "{size} bytes");
    let mut frame = vec![0u8; 42 + size];
    frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut frame[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((28 + size) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 200, 7, 2]);
    ip[16..20].copy_from_slice(&[10, 200, 7, 1]);
    let sum = authtime_frame::checksum::internet_checksum(ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let udp = &mut frame[34..42];
    udp[..2].copy_from_slice(&PORT.to_be_bytes());
    udp[2..4].copy_from_slice(&PORT.to_be_bytes());
    udp[4..6].copy_from_slice(&((8 + size) as u16).to_be_bytes());
    // UDP checksum 0 (none, allowed over IPv4): the first bounce computes it.
    frame[42..].fill(0x42);
    assert!(bounce_in_place(&mut frame, &Served::ports(&[PORT]), size));
    frame
}

/// The user-space frame work of one move, on a buffer: parse (checksums
/// verified) and the reply's headers written around the payload in place.
/// False when the frame is not a bounceable datagram of `size` bytes.
pub fn bounce_in_place(frame: &mut [u8], served: &Served, size: usize) -> bool {
    let addressing = match authtime_frame::parse(frame, served) {
        Verdict::Ours(udp) if udp.payload().len() == size => *udp.addressing(),
        _ => return false,
    };
    authtime_frame::finish_reply(&addressing, frame, size).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_frame_bounces_in_place_and_stays_valid() {
        let served = Served::ports(&[PORT]);
        for size in [10, 48, MAX_PAYLOAD] {
            let mut frame = sample_frame(size);
            assert_eq!(frame.len(), 42 + size);
            let before = frame.clone();
            assert!(bounce_in_place(&mut frame, &served, size));
            // Addresses swapped back and forth: the same frame again, with
            // its payload untouched.
            assert!(bounce_in_place(&mut frame, &served, size));
            assert_eq!(frame, before);
            assert!(frame[42..].iter().all(|&b| b == 0x42));
            assert!(!bounce_in_place(&mut frame, &served, size + 1));
        }
    }

    /// Needs root, iproute2 and AF_XDP; skipped (with the reason printed)
    /// otherwise. Asserts nothing about the CPU's speed.
    #[test]
    fn a_datagram_bounces_through_both_af_xdp_sockets_and_the_namespaces_go() {
        if let Some(why) = netns::unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
        let mut bouncer = Bouncer::new().expect("namespaces, programs and sockets");
        let names = bouncer.namespaces();
        for size in [10, 48, MAX_PAYLOAD] {
            let run = bouncer
                .run(size, 2000, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("{size} B: {e}"));
            eprintln!("{size} B: {run:?}");
            assert_eq!(run.moves, 2000, "{size} B: {run:?}");
            assert!(!run.lost, "{size} B: {run:?}");
            assert!(run.process_ns > 0.0, "{size} B: {run:?}");
        }
        assert!(
            bouncer
                .run(MAX_PAYLOAD + 1, 1, Duration::from_secs(1))
                .is_err()
        );
        drop(bouncer);
        let left = netns::list();
        for name in names {
            assert!(!left.contains(&name), "{name} still listed: {left:?}");
        }
    }
}
