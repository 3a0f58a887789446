//! What the kernel tests share: two network namespaces joined by a veth
//! pair (after authtime-lab's `netns` module), a way to run code inside
//! one, the XDP state of an interface as `ip` shows it, and a tiny frame
//! builder for test frames and hand-made replies (the real one is
//! authtime-frame's).

#![allow(
    dead_code,
    unsafe_code,
    reason = "shared by several test binaries; setns and geteuid FFI"
)]

use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Why these tests cannot run here, if they cannot.
pub(crate) fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces, bpf(2), AF_XDP)".into());
    }
    match Command::new("ip")
        .args(["netns", "list"])
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "`ip netns list` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run `ip` (iproute2): {e}")),
    }
}

/// Skips the calling test (returning from it) with the reason printed.
#[macro_export]
macro_rules! skip_unless_root {
    () => {
        if let Some(why) = support::unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

/// Runs `ip ARGS`; its standard output, or its standard error as the error.
pub(crate) fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Server and client namespaces joined by a veth pair; deleted (with the
/// pair) on drop, on every path.
#[derive(Debug)]
pub(crate) struct Pair {
    pub(crate) server: String,
    pub(crate) client: String,
    /// Veth ends: in the server namespace, in the client namespace.
    pub(crate) server_if: String,
    pub(crate) client_if: String,
    pub(crate) server_v4: Ipv4Addr,
    pub(crate) client_v4: Ipv4Addr,
    pub(crate) server_v6: Ipv6Addr,
    pub(crate) client_v6: Ipv6Addr,
}

impl Pair {
    /// Namespaces `atx-TAG-srv-PID` and `atx-TAG-cli-PID`, veth `xPIDTAGs`
    /// and `xPIDTAGc` (`tag` of at most 3 bytes keeps names under 16),
    /// 10.202.0.1/24 and fd00:202::1/64 on the server end, .2 and ::2 on
    /// the client's, every link up.
    pub(crate) fn create(tag: &str) -> Result<Self, String> {
        let pid = std::process::id();
        let pair = Self {
            server: format!("atx-{tag}-srv-{pid}"),
            client: format!("atx-{tag}-cli-{pid}"),
            server_if: format!("x{pid}{tag}s"),
            client_if: format!("x{pid}{tag}c"),
            server_v4: Ipv4Addr::new(10, 202, 0, 1),
            client_v4: Ipv4Addr::new(10, 202, 0, 2),
            server_v6: "fd00:202::1".parse().map_err(|e| format!("{e}"))?,
            client_v6: "fd00:202::2".parse().map_err(|e| format!("{e}"))?,
        };
        // From here on, dropping `pair` removes whatever was made.
        ip(&["netns", "add", &pair.server])?;
        ip(&["netns", "add", &pair.client])?;
        ip(&[
            "link",
            "add",
            &pair.server_if,
            "netns",
            &pair.server,
            "type",
            "veth",
            "peer",
            "name",
            &pair.client_if,
            "netns",
            &pair.client,
        ])?;
        for (ns, dev, v4, v6) in [
            (
                &pair.server,
                &pair.server_if,
                pair.server_v4,
                pair.server_v6,
            ),
            (
                &pair.client,
                &pair.client_if,
                pair.client_v4,
                pair.client_v6,
            ),
        ] {
            ip(&["-n", ns, "addr", "add", &format!("{v4}/24"), "dev", dev])?;
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{v6}/64"),
                "dev",
                dev,
                "nodad",
            ])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        Ok(pair)
    }

    /// The XDP part of `ip -d link show` for the server's veth end: empty
    /// when no program is attached.
    pub(crate) fn server_xdp(&self) -> String {
        xdp_state(&self.server, &self.server_if)
    }

    /// Waits up to 2 s for the server end to have no XDP program; the last
    /// state seen when it still has one.
    pub(crate) fn wait_server_detached(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let state = self.server_xdp();
            if state.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(state);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end in it, and its peer.
        let _ = ip(&["netns", "del", &self.client]);
        let _ = ip(&["netns", "del", &self.server]);
    }
}

/// The lines of `ip -d link show dev DEV` in namespace `ns` that speak of
/// XDP (`xdp` / `xdpgeneric` / `prog/xdp`), joined; empty when none do.
pub(crate) fn xdp_state(ns: &str, dev: &str) -> String {
    let out = ip(&["-n", ns, "-d", "link", "show", "dev", dev]).unwrap_or_else(|e| e);
    out.lines()
        .flat_map(str::split_whitespace)
        .filter(|w| w.starts_with("xdp") || w.starts_with("prog/xdp"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `f` on a new thread inside network namespace `name` and returns its
/// result; the calling thread stays where it is.
pub(crate) fn run_in<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> T {
    let path = format!("/run/netns/{name}");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("cannot open {path}: {e}"));
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: the descriptor is a namespace file held open for the
                // call; setns changes only this thread's network namespace.
                let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(r, 0, "setns {name}: {}", std::io::Error::last_os_error());
                f()
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Enters namespace `name` on the calling thread, for good (child
/// processes that do nothing else).
pub(crate) fn enter(name: &str) {
    let path = format!("/run/netns/{name}");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("cannot open {path}: {e}"));
    // SAFETY: as in run_in.
    let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(r, 0, "setns {name}: {}", std::io::Error::last_os_error());
}

/// The Internet checksum of `data` folded onto `sum`.
fn fold(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

fn finish(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet + IPv4 + UDP frame.
pub(crate) fn udp4_frame(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: (Ipv4Addr, u16),
    dst: (Ipv4Addr, u16),
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src.0.octets());
    ip[16..20].copy_from_slice(&dst.0.octets());
    let c = finish(fold(0, &ip));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    let udp_len = (8 + payload.len()) as u16;
    let mut udp = Vec::new();
    udp.extend_from_slice(&src.1.to_be_bytes());
    udp.extend_from_slice(&dst.1.to_be_bytes());
    udp.extend_from_slice(&udp_len.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let mut pseudo = fold(0, &src.0.octets());
    pseudo = fold(pseudo, &dst.0.octets());
    pseudo += 17 + u32::from(udp_len);
    let c = match finish(fold(pseudo, &udp)) {
        0 => 0xffff,
        c => c,
    };
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&udp);
    f
}

/// An Ethernet + IPv6 + UDP frame.
pub(crate) fn udp6_frame(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: (Ipv6Addr, u16),
    dst: (Ipv6Addr, u16),
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&0x86ddu16.to_be_bytes());
    let udp_len = (8 + payload.len()) as u16;
    let mut ip = [0u8; 40];
    ip[0] = 0x60;
    ip[4..6].copy_from_slice(&udp_len.to_be_bytes());
    ip[6] = 17;
    ip[7] = 64;
    ip[8..24].copy_from_slice(&src.0.octets());
    ip[24..40].copy_from_slice(&dst.0.octets());
    f.extend_from_slice(&ip);
    let mut udp = Vec::new();
    udp.extend_from_slice(&src.1.to_be_bytes());
    udp.extend_from_slice(&dst.1.to_be_bytes());
    udp.extend_from_slice(&udp_len.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let mut pseudo = fold(0, &src.0.octets());
    pseudo = fold(pseudo, &dst.0.octets());
    pseudo += 17 + u32::from(udp_len);
    let c = match finish(fold(pseudo, &udp)) {
        0 => 0xffff,
        c => c,
    };
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&udp);
    f
}

/// A received Ethernet + IPv4/IPv6 + UDP frame, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Udp {
    pub(crate) src_mac: [u8; 6],
    pub(crate) dst_mac: [u8; 6],
    pub(crate) src: std::net::SocketAddr,
    pub(crate) dst: std::net::SocketAddr,
    pub(crate) payload: Vec<u8>,
}

/// Parses an untagged Ethernet frame of IPv4 (no options) or IPv6 (no
/// extension headers) carrying UDP, checking the IPv4 header checksum and
/// the UDP length.
pub(crate) fn parse_udp(f: &[u8]) -> Option<Udp> {
    let mac = |b: &[u8]| -> [u8; 6] { b.try_into().unwrap_or([0; 6]) };
    let (dst_mac, src_mac) = (mac(&f[0..6]), mac(&f[6..12]));
    let (src_ip, dst_ip, udp): (std::net::IpAddr, std::net::IpAddr, &[u8]) =
        match u16::from_be_bytes([f[12], f[13]]) {
            0x0800 => {
                let ip = f.get(14..34)?;
                if ip[0] != 0x45 || ip[9] != 17 || finish(fold(0, ip)) != 0 {
                    return None;
                }
                let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
                let s: [u8; 4] = ip[12..16].try_into().ok()?;
                let d: [u8; 4] = ip[16..20].try_into().ok()?;
                (s.into(), d.into(), f.get(34..14 + total)?)
            }
            0x86dd => {
                let ip = f.get(14..54)?;
                if ip[6] != 17 {
                    return None;
                }
                let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
                let s: [u8; 16] = ip[8..24].try_into().ok()?;
                let d: [u8; 16] = ip[24..40].try_into().ok()?;
                (s.into(), d.into(), f.get(54..54 + plen)?)
            }
            _ => return None,
        };
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if udp_len != udp.len() {
        return None;
    }
    Some(Udp {
        src_mac,
        dst_mac,
        src: (src_ip, u16::from_be_bytes([udp[0], udp[1]])).into(),
        dst: (dst_ip, u16::from_be_bytes([udp[2], udp[3]])).into(),
        payload: udp[8..].to_vec(),
    })
}

/// The reply to `request` with `payload`: addresses and ports swapped,
/// checksums computed.
pub(crate) fn reply_frame(request: &Udp, payload: &[u8]) -> Vec<u8> {
    match (request.dst, request.src) {
        (std::net::SocketAddr::V4(me), std::net::SocketAddr::V4(peer)) => udp4_frame(
            request.dst_mac,
            request.src_mac,
            (*me.ip(), me.port()),
            (*peer.ip(), peer.port()),
            payload,
        ),
        (std::net::SocketAddr::V6(me), std::net::SocketAddr::V6(peer)) => udp6_frame(
            request.dst_mac,
            request.src_mac,
            (*me.ip(), me.port()),
            (*peer.ip(), peer.port()),
            payload,
        ),
        _ => Vec::new(),
    }
}
