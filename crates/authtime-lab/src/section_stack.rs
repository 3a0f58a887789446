//! Section `stack` (seed 004, point 2): the CPU cost of moving a packet through
//! the kernel (UDP and TCP over loopback, send plus receive) against the cost of
//! its MAC, by packet size, as the post's table did for Linux 2.2 in 1999; and
//! the same without the kernel's UDP/IP stack, through AF_XDP
//! ([`crate::section_stack_xdp`]: needs root, and says why when it cannot).

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream, UdpSocket},
    time::{Duration, Instant},
};

use authtime_mac::{Algorithm, Mac};

use crate::{
    Progress,
    cpu_time::process_cpu_time,
    plot::{Plot, Series},
    rate::{Budget, measure},
    report::{Section, Table},
    section_stack_xdp::{self as xdp, Bouncer},
};

const SIZES: [usize; 7] = [10, 48, 100, 256, 512, 1000, 1500];
const MACS: [Algorithm; 4] = [
    Algorithm::HmacSha1,
    Algorithm::HmacMd5,
    Algorithm::Aes128Cmac,
    Algorithm::Blake3Keyed,
];

#[derive(Debug, Clone, serde::Serialize)]
struct StackRow {
    size: usize,
    udp_ns: f64,
    tcp_ns: f64,
    mac_ns: Vec<(String, f64)>,
    /// AF_XDP: process CPU per move, median of the runs.
    xdp_ns: Option<f64>,
    /// AF_XDP: the whole machine's busy CPU per move, median of the runs
    /// long enough to have one.
    xdp_machine_ns: Option<f64>,
    /// AF_XDP: the ksoftirqd threads' run time per move, median of the runs.
    xdp_ksoftirqd_ns: Option<f64>,
    /// AF_XDP: runs in which the bouncing frame went missing.
    xdp_lost_runs: usize,
    /// AF_XDP: moves over all runs, and of them those whose frame was not
    /// yet on the far end's RX ring when the sender's kick returned.
    xdp_moves: usize,
    xdp_waits: usize,
    /// The user-space frame work of one AF_XDP move alone (parse with
    /// checksums, reply headers with checksums), CPU ns.
    xdp_frame_ns: f64,
}

/// The AF_XDP column at one size: medians of `reps` runs.
struct XdpCell {
    process_ns: f64,
    machine_ns: Option<f64>,
    ksoftirqd_ns: Option<f64>,
    lost_runs: usize,
    moves: usize,
    waits: usize,
}

fn xdp_cell(
    bouncer: &mut Bouncer,
    size: usize,
    reps: usize,
    count: usize,
    limit: Duration,
) -> Result<XdpCell, String> {
    let runs: Vec<xdp::BounceRun> = (0..reps)
        .map(|_| bouncer.run(size, count, limit))
        .collect::<Result<_, _>>()?;
    let mut process: Vec<f64> = runs.iter().map(|r| r.process_ns).collect();
    let mut machine: Vec<f64> = runs.iter().filter_map(|r| r.machine_ns).collect();
    let mut soft: Vec<f64> = runs.iter().filter_map(|r| r.ksoftirqd_ns).collect();
    Ok(XdpCell {
        process_ns: crate::stats::median(&mut process).unwrap_or(0.0),
        machine_ns: crate::stats::median(&mut machine),
        ksoftirqd_ns: crate::stats::median(&mut soft),
        lost_runs: runs.iter().filter(|r| r.lost).count(),
        moves: runs.iter().map(|r| r.moves).sum(),
        waits: runs.iter().map(|r| r.waits).sum(),
    })
}

/// CPU nanoseconds per packet for `count` UDP datagrams sent and received over
/// loopback (both ends in this process), bounded by `limit`.
fn udp_ns(size: usize, count: usize, limit: Duration) -> Result<f64, String> {
    let rx = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let tx = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    tx.connect(rx.local_addr().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    rx.set_read_timeout(Some(Duration::from_secs(1)))
        .map_err(|e| e.to_string())?;
    let out = vec![0x42u8; size];
    let mut buf = vec![0u8; 2048];
    let (start, cpu0) = (Instant::now(), process_cpu_time());
    let mut done = 0;
    while done < count && start.elapsed() < limit {
        tx.send(&out).map_err(|e| e.to_string())?;
        rx.recv(&mut buf)
            .map_err(|e| format!("loopback UDP receive: {e}"))?;
        done += 1;
    }
    Ok((process_cpu_time() - cpu0).as_nanos() as f64 / done.max(1) as f64)
}

/// CPU nanoseconds per message for `count` messages written and read over a
/// loopback TCP connection (TCP_NODELAY), bounded by `limit`.
fn tcp_ns(size: usize, count: usize, limit: Duration) -> Result<f64, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let mut tx = TcpStream::connect(listener.local_addr().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let (mut rx, _) = listener.accept().map_err(|e| e.to_string())?;
    tx.set_nodelay(true).map_err(|e| e.to_string())?;
    rx.set_read_timeout(Some(Duration::from_secs(1)))
        .map_err(|e| e.to_string())?;
    let out = vec![0x42u8; size];
    let mut buf = vec![0u8; size];
    let (start, cpu0) = (Instant::now(), process_cpu_time());
    let mut done = 0;
    while done < count && start.elapsed() < limit {
        tx.write_all(&out).map_err(|e| e.to_string())?;
        rx.read_exact(&mut buf)
            .map_err(|e| format!("loopback TCP receive: {e}"))?;
        done += 1;
    }
    Ok((process_cpu_time() - cpu0).as_nanos() as f64 / done.max(1) as f64)
}

/// Runs the section.
///
/// # Errors
/// A message when loopback sockets cannot be used.
pub fn run(quick: bool, ghz: Option<f64>, progress: &mut Progress<'_>) -> Result<Section, String> {
    let plan = if quick { Plan::quick() } else { Plan::full() };
    run_plan(&plan, ghz, progress)
}

/// What the section measures, and how long.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Payload sizes, bytes.
    pub sizes: Vec<usize>,
    /// Packets per UDP or TCP run.
    pub count: usize,
    /// Moves per AF_XDP run.
    pub xdp_count: usize,
    /// Time limit of each run.
    pub limit: Duration,
    /// Runs per size and path (the median is reported).
    pub reps: usize,
    /// The MACs' and the frame work's budget.
    pub budget: Budget,
}

impl Plan {
    /// `--quick`.
    #[must_use]
    pub fn quick() -> Self {
        Self {
            sizes: SIZES.to_vec(),
            count: 3_000,
            xdp_count: 20_000,
            limit: Duration::from_secs(2),
            reps: 3,
            budget: Budget::QUICK,
        }
    }

    /// A full run. A move through AF_XDP takes a few µs: enough of them
    /// that a run lasts over a second, for the whole machine's figure (10 ms
    /// ticks per CPU) to mean something.
    #[must_use]
    pub fn full() -> Self {
        Self {
            sizes: SIZES.to_vec(),
            count: 30_000,
            xdp_count: 500_000,
            limit: Duration::from_secs(10),
            reps: 5,
            budget: Budget::FULL,
        }
    }
}

/// Runs the section with `plan`.
///
/// # Errors
/// A message when loopback sockets cannot be used.
pub fn run_plan(
    plan: &Plan,
    ghz: Option<f64>,
    progress: &mut Progress<'_>,
) -> Result<Section, String> {
    let (budget, count, xdp_count, limit, reps) = (
        plan.budget,
        plan.count,
        plan.xdp_count,
        plan.limit,
        plan.reps,
    );
    let (mut bouncer, mut xdp_unavailable) = match Bouncer::new() {
        Ok(b) => (Some(b), None),
        Err(why) => (None, Some(why)),
    };
    let macs: Vec<(Algorithm, Box<dyn Mac>)> = MACS
        .iter()
        .map(|&a| {
            a.new_mac(&vec![7u8; a.info().key.typical()])
                .map(|m| (a, m))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for (i, &size) in plan.sizes.iter().enumerate() {
        progress.step(
            &format!("stack UDP/TCP loopback and AF_XDP at {size} B"),
            i,
            plan.sizes.len(),
        );
        let mut udp: Vec<f64> = (0..reps)
            .map(|_| udp_ns(size, count, limit))
            .collect::<Result<_, _>>()?;
        let mut tcp: Vec<f64> = (0..reps)
            .map(|_| tcp_ns(size, count, limit))
            .collect::<Result<_, _>>()?;
        let xdp = bouncer.as_mut().and_then(|b| {
            xdp_cell(b, size, reps, xdp_count, limit)
                .map_err(|e| xdp_unavailable = Some(format!("at {size} B: {e}")))
                .ok()
        });
        if xdp.is_none() {
            // Namespaces removed now, not at the end of the section.
            bouncer = None;
        }
        let served = authtime_frame::Served::ports(&[xdp::PORT]);
        let mut frame = xdp::sample_frame(size);
        let frame_pps = measure(budget, 1, || {
            std::hint::black_box(xdp::bounce_in_place(
                std::hint::black_box(&mut frame),
                &served,
                size,
            ));
        })
        .median;
        let msg = vec![0x42u8; size];
        let mac_ns = macs
            .iter()
            .map(|(a, m)| {
                let pps = measure(budget, 1, || {
                    std::hint::black_box(m.compute(&[], std::hint::black_box(&msg)).ok());
                })
                .median;
                (a.name().to_owned(), 1e9 / pps)
            })
            .collect();
        rows.push(StackRow {
            size,
            udp_ns: crate::stats::median(&mut udp).unwrap_or(0.0),
            tcp_ns: crate::stats::median(&mut tcp).unwrap_or(0.0),
            mac_ns,
            xdp_ns: xdp.as_ref().map(|x| x.process_ns),
            xdp_machine_ns: xdp.as_ref().and_then(|x| x.machine_ns),
            xdp_ksoftirqd_ns: xdp.as_ref().and_then(|x| x.ksoftirqd_ns),
            xdp_lost_runs: xdp.as_ref().map_or(0, |x| x.lost_runs),
            xdp_moves: xdp.as_ref().map_or(0, |x| x.moves),
            xdp_waits: xdp.as_ref().map_or(0, |x| x.waits),
            xdp_frame_ns: 1e9 / frame_pps,
        });
    }
    // Namespaces removed before the report is written.
    drop(bouncer);

    let cyc = |ns: f64| ghz.map_or_else(|| format!("{ns:.0}"), |g| format!("{:.0}", ns * g));
    let (per_pkt, per_byte) = if ghz.is_some() {
        ("c/pkt", "c/B")
    } else {
        ("ns/pkt", "ns/B")
    };
    let mut table = Table::new(
        "Kernel path vs MAC, per packet (send + receive on loopback)",
        &[
            "bytes",
            &format!("UDP {per_pkt}"),
            &format!("TCP {per_pkt}"),
            &format!("TCP {per_byte}"),
            &format!("AF_XDP {per_pkt}"),
            &format!("HMAC-SHA1 {per_pkt}"),
            "HMAC-SHA1 share of UDP+MAC",
            "HMAC-SHA1 share of AF_XDP+MAC",
            "HMAC-MD5 share",
            "AES-CMAC share",
            "BLAKE3 share",
        ],
    );
    let mac = |r: &StackRow, name: &str| {
        r.mac_ns
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0.0, |(_, v)| *v)
    };
    let share = |m: f64, stack: f64| format!("{:.1}%", 100.0 * m / (m + stack));
    let dash = || "–".to_owned();
    for r in &rows {
        table.row(vec![
            r.size.to_string(),
            cyc(r.udp_ns),
            cyc(r.tcp_ns),
            format!("{:.1}", r.tcp_ns * ghz.unwrap_or(1.0) / r.size as f64),
            r.xdp_ns.map_or_else(dash, cyc),
            cyc(mac(r, "hmac-sha1")),
            share(mac(r, "hmac-sha1"), r.udp_ns),
            r.xdp_ns
                .map_or_else(dash, |x| share(mac(r, "hmac-sha1"), x)),
            share(mac(r, "hmac-md5"), r.udp_ns),
            share(mac(r, "aes128-cmac"), r.udp_ns),
            share(mac(r, "blake3-keyed"), r.udp_ns),
        ]);
    }
    table.note = format!(
        "{} (process CPU time, user + system, both ends of the loopback in this process). \
         AF_XDP: one move of the datagram through AF_XDP on a veth pair, sent and received (table below); {}. \
         Share = MAC / (kernel path + MAC): the fraction of the CPU a MAC adds to receiving and sending the packet; \
         the MD5, CMAC and BLAKE3 shares here are of UDP+MAC.",
        ghz.map_or_else(
            || format!(
                "ns = nanoseconds of CPU; the clock estimate is {}",
                crate::section_mac::UNTRUSTED_CLOCK
            ),
            |g| format!("c = cycles at the estimated clock of {g:.2} GHz"),
        ),
        xdp_unavailable.as_ref().map_or_else(
            || "measured".to_owned(),
            |why| format!("not measured ({why})")
        )
    );
    let xdp_table = rows.iter().any(|r| r.xdp_ns.is_some()).then(|| {
        let mut t = Table::new(
            "Without the kernel's UDP/IP stack: AF_XDP move vs MAC, per packet",
            &[
                "bytes",
                &format!("AF_XDP {per_pkt} (process)"),
                &format!("AF_XDP {per_pkt} (whole machine)"),
                &format!("ksoftirqd {per_pkt}"),
                &format!("of which frame parse + build {per_pkt}"),
                "HMAC-SHA1 share of AF_XDP+MAC",
                "HMAC-MD5 share",
                "AES-CMAC share",
                "BLAKE3 share",
                "runs that lost the frame",
            ],
        );
        for r in &rows {
            let Some(x) = r.xdp_ns else { continue };
            t.row(vec![
                r.size.to_string(),
                cyc(x),
                r.xdp_machine_ns.map_or_else(dash, cyc),
                r.xdp_ksoftirqd_ns.map_or_else(dash, cyc),
                cyc(r.xdp_frame_ns),
                share(mac(r, "hmac-sha1"), x),
                share(mac(r, "hmac-md5"), x),
                share(mac(r, "aes128-cmac"), x),
                share(mac(r, "blake3-keyed"), x),
                r.xdp_lost_runs.to_string(),
            ]);
        }
        t.note = format!(
            "A move: the datagram taken off one AF_XDP socket's RX ring, parsed, its headers rewritten \
             (addresses swapped, checksums computed) and sent back from the same chunk, through the veth, \
             the other end's XDP program and its copy into the other socket's UMEM. \
             Process: this process's CPU (the figure used for the shares); whole machine: all CPUs' busy time \
             over the same runs, a check that should agree with it and also holds other work on the machine \
             (\"–\": runs under {} ms, below /proc/stat's 10 ms resolution); ksoftirqd: those threads' run time \
             over the runs, softirq work the process figure would miss (should be near 0). \
             Frame parse + build: that user-space part alone, on a buffer. Share = MAC / (AF_XDP move + MAC).",
            xdp::MACHINE_MIN_WALL.as_millis()
        );
        t
    });

    let mut post = Table::new(
        "The post's figures (Pentium II, Linux 2.2.14, 1999)",
        &["what", "figure"],
    );
    for (w, f) in [
        ("TCP at 10-byte packets", "~1000 cycles/byte"),
        ("TCP at 100-byte packets", "~100 cycles/byte"),
        ("TCP at 1000-byte packets", "~15 cycles/byte"),
        ("HMAC-SHA1-96 at ~1000 bytes", "~25 cycles/byte"),
        ("HMAC-SHA1-96 vs no crypto (IP path)", "triples the CPU"),
        ("HMAC-MD5-96 vs no crypto (IP path)", "doubles the CPU"),
    ] {
        post.row(vec![w.into(), f.into()]);
    }

    let plot = Plot {
        stem: "stack-vs-mac".into(),
        title: "Kernel path vs MAC cost per packet".into(),
        x_label: "packet size (bytes)".into(),
        y_label: if ghz.is_some() {
            "cycles per packet".into()
        } else {
            "ns per packet".into()
        },
        log_x: true,
        log_y: true,
        series: {
            let g = ghz.unwrap_or(1.0);
            let mut s = vec![
                Series {
                    name: "UDP loopback send+recv".into(),
                    points: rows.iter().map(|r| (r.size as f64, r.udp_ns * g)).collect(),
                },
                Series {
                    name: "TCP loopback write+read".into(),
                    points: rows.iter().map(|r| (r.size as f64, r.tcp_ns * g)).collect(),
                },
            ];
            if rows.iter().any(|r| r.xdp_ns.is_some()) {
                s.push(Series {
                    name: "AF_XDP move on veth".into(),
                    points: rows
                        .iter()
                        .filter_map(|r| r.xdp_ns.map(|x| (r.size as f64, x * g)))
                        .collect(),
                });
            }
            for a in MACS {
                s.push(Series {
                    name: a.name().into(),
                    points: rows
                        .iter()
                        .map(|r| (r.size as f64, mac(r, a.name()) * g))
                        .collect(),
                });
            }
            s
        },
    };

    let at = |size: usize| rows.iter().find(|r| r.size == size);
    let mut findings = Vec::new();
    match (&xdp_unavailable, at(48), at(1500)) {
        (Some(why), _, _) => findings.push(format!("The AF_XDP column was not measured: {why}.")),
        (None, Some(small), Some(large)) => {
            if let (Some(xs), Some(xl)) = (small.xdp_ns, large.xdp_ns) {
                findings.push(format!(
                    "Without the kernel's UDP/IP stack (AF_XDP, copy mode on veth) a packet moved costs {} {per_pkt} at 48 bytes \
                     against {} for UDP over loopback, and HMAC-SHA1's share of it is {} at 48 bytes and {} at 1500 bytes \
                     (with UDP: {} and {}).",
                    cyc(xs),
                    cyc(small.udp_ns),
                    share(mac(small, "hmac-sha1"), xs),
                    share(mac(large, "hmac-sha1"), xl),
                    share(mac(small, "hmac-sha1"), small.udp_ns),
                    share(mac(large, "hmac-sha1"), large.udp_ns),
                ));
            }
        }
        _ => {}
    }
    let ratios: Vec<f64> = rows
        .iter()
        .filter_map(|r| Some(r.xdp_machine_ns? / r.xdp_ns?))
        .collect();
    if let (Some(lo), Some(hi)) = (
        ratios.iter().copied().reduce(f64::min),
        ratios.iter().copied().reduce(f64::max),
    ) {
        findings.push(format!(
            "The whole machine's busy CPU per AF_XDP move was {lo:.2}× to {hi:.2}× the process's: \
             near 1 when the move's kernel work all ran in the process's context and nothing else ran; \
             above, other work on the machine (or softirq work deferred to ksoftirqd) was counted too."
        ));
    }
    if let Some(most) = rows
        .iter()
        .filter_map(|r| r.xdp_ksoftirqd_ns)
        .reduce(f64::max)
    {
        findings.push(format!(
            "ksoftirqd ran at most {} {per_pkt} per AF_XDP move (median of runs, worst size): softirq work \
             the process's figure does not hold.",
            cyc(most)
        ));
    }
    let moves: usize = rows.iter().map(|r| r.xdp_moves).sum();
    if moves > 0 {
        let waits: usize = rows.iter().map(|r| r.xdp_waits).sum();
        findings.push(format!(
            "Of {moves} AF_XDP moves, {waits} found the frame not yet on the far end's RX ring when the sender's kick returned \
             (the rest were delivered within the sending thread's sendto, so its CPU time holds their receive side)."
        ));
    }
    let lost: usize = rows.iter().map(|r| r.xdp_lost_runs).sum();
    if lost > 0 {
        findings.push(format!(
            "{lost} AF_XDP runs lost the bouncing frame before their count; each is counted up to the loss."
        ));
    }
    if let (Some(small), Some(large)) = (at(48), at(1500)) {
        findings.push(format!(
            "At 48 bytes HMAC-SHA1 adds {} to the CPU of a UDP packet's trip through the kernel; at 1500 bytes {}. \
             The post's 1999 rule (HMAC-SHA1 triples the cost) no longer holds: SHA-NI and AES-NI made the MAC small next to the system calls.",
            share(mac(small, "hmac-sha1"), small.udp_ns),
            share(mac(large, "hmac-sha1"), large.udp_ns)
        ));
        if let Some(g) = ghz {
            findings.push(format!(
                "TCP over loopback costs {:.0} c/B at 10 B… {:.1} c/B at 1500 B here, against the post's ~1000 and ~15.",
                at(10).map_or(0.0, |r| r.tcp_ns * g / 10.0),
                large.tcp_ns * g / 1500.0
            ));
        }
    }
    Ok(Section {
        id: "stack".into(),
        title: "When does the MAC matter next to the network stack? (seed 004, point 2)".into(),
        seed: "004_7fc55f4e561065dc.txt, points 1 and 2: TCP cycles/byte by packet size and HMAC-SHA1-96's share".into(),
        method: format!(
            "One process sends and receives on loopback sockets (UDP datagrams; TCP with TCP_NODELAY, write then read each message); \
             {count} packets per run or {} s, whichever comes first, median of {reps} runs, CPU time of the whole process (user + system). \
             AF_XDP (root only): two network namespaces of the section's own joined by a veth pair (MTU {}), authtime-xdp's program \
             attached to both ends in native mode steering UDP port {} to an AF_XDP socket (copy mode, queue 0) on each; one datagram \
             of the size, sent from a UDP socket in one namespace, then bounces: each end takes it off its RX ring, parses it \
             (authtime-frame, checksums verified), swaps its addresses (checksums computed) and sends it back from the same chunk. \
             {xdp_count} moves per run or {} s, median of {reps} runs; CPU per move is the process's CPU time (user + system) over the \
             moves: one thread serves both sockets, and the kernel's side of a move (the transmit in copy mode, veth, the peer's XDP \
             program and its copy into the peer's UMEM) runs as softirq work inside that thread's sendto, charged to it on a kernel \
             without IRQ time accounting (CONFIG_IRQ_TIME_ACCOUNTING off, as on the lab's machine); the ksoftirqd threads' run time \
             (softirq work deferred out of that context) and the whole machine's busy CPU over the same runs are shown as checks. \
             MACs: authtime one packet at a time, median of {} runs.",
            limit.as_secs(),
            xdp::MTU,
            xdp::PORT,
            limit.as_secs(),
            budget.runs
        ),
        tables: std::iter::once(table)
            .chain(xdp_table)
            .chain(std::iter::once(post))
            .collect(),
        plots: vec![plot],
        findings,
        data: serde_json::to_value(&rows).unwrap_or_default(),
    })
}
