//! Section `stack` (seed 004, point 2): the CPU cost of moving a packet through
//! the kernel (UDP and TCP over loopback, send plus receive) against the cost of
//! its MAC, by packet size, as the post's table did for Linux 2.2 in 1999.

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
    let budget = if quick { Budget::QUICK } else { Budget::FULL };
    let (count, limit, reps) = if quick {
        (3_000, Duration::from_secs(2), 3)
    } else {
        (30_000, Duration::from_secs(10), 5)
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
    for (i, size) in SIZES.into_iter().enumerate() {
        progress.step(
            &format!("stack UDP/TCP loopback at {size} B"),
            i,
            SIZES.len(),
        );
        let mut udp: Vec<f64> = (0..reps)
            .map(|_| udp_ns(size, count, limit))
            .collect::<Result<_, _>>()?;
        let mut tcp: Vec<f64> = (0..reps)
            .map(|_| tcp_ns(size, count, limit))
            .collect::<Result<_, _>>()?;
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
        });
    }

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
            &format!("HMAC-SHA1 {per_pkt}"),
            "HMAC-SHA1 share of UDP+MAC",
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
    for r in &rows {
        table.row(vec![
            r.size.to_string(),
            cyc(r.udp_ns),
            cyc(r.tcp_ns),
            format!("{:.1}", r.tcp_ns * ghz.unwrap_or(1.0) / r.size as f64),
            cyc(mac(r, "hmac-sha1")),
            share(mac(r, "hmac-sha1"), r.udp_ns),
            share(mac(r, "hmac-md5"), r.udp_ns),
            share(mac(r, "aes128-cmac"), r.udp_ns),
            share(mac(r, "blake3-keyed"), r.udp_ns),
        ]);
    }
    table.note = format!(
        "{} (process CPU time, user + system, both ends of the loopback in this process). \
         Share = MAC / (kernel path + MAC): the fraction of the CPU a MAC adds to receiving and sending the packet.",
        ghz.map_or_else(
            || format!(
                "ns = nanoseconds of CPU; the clock estimate is {}",
                crate::section_mac::UNTRUSTED_CLOCK
            ),
            |g| format!("c = cycles at the estimated clock of {g:.2} GHz"),
        )
    );

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
             MACs: authtime one packet at a time, median of {} runs.",
            limit.as_secs(),
            if quick { 5 } else { 7 }
        ),
        tables: vec![table, post],
        plots: vec![plot],
        findings,
        data: serde_json::to_value(&rows).unwrap_or_default(),
    })
}
