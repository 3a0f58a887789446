//! `authtime serve` with `[xdp]`, on a veth pair between two network
//! namespaces the test makes: the server in one (started with `ip netns
//! exec`), clients in the other. Checks that plain, MAC and NTS queries are
//! answered from the AF_XDP sockets (the frame counter rises; NTS-KE over
//! TCP passes the program), that chronyd synchronizes against it, that ping
//! works while the program is attached, that malformed frames injected with
//! an AF_PACKET socket get no reply and are counted, that a SIGKILLed
//! server leaves nothing attached and a new one attaches and answers, and
//! that without `[xdp]` nothing is attached and the sockets answer; and that
//! Roughtime (`[roughtime]` next to `[xdp]`) is answered from the frames
//! too, verified by authtime's client and by roughenough's when its cached
//! build is there (scripts/ensure-roughenough.sh), a malformed request
//! refused and counted as on the sockets.
//!
//! Needs root and iproute2; skipped, with the reason printed, otherwise.
//! Namespaces `atd-TAG-srv-PID` and `atd-TAG-cli-PID` are removed on every
//! path.

#![allow(
    unsafe_code,
    reason = "setns, geteuid, a raw ICMP socket and an AF_PACKET socket through libc"
)]

mod ntp_support;
#[path = "../../authtime-roughtime/tests/roughenough_support/mod.rs"]
#[allow(dead_code, reason = "shared with the roughtime crate's interop tests")]
mod roughenough_support;

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ntp_support::{
    ChildGuard, Serve, TempDir, authtime_bin, chronyd, chronyd_private_lines, keygen, metric,
    nts_cert, text, text_of, wait_bounded,
};

const NTP_PORT: u16 = 11123;
const KE_PORT: u16 = 14460;
const ROUGHTIME_PORT: u16 = 12002;
const WAIT: Duration = Duration::from_secs(2);
const OURS: &str = "authtime_xdp_frames_total{verdict=\"ours\"}";

/// Why these tests cannot run here, if they cannot.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces, bpf(2), AF_XDP)".into());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!("`ip netns list` failed: {}", text(&out.stderr))),
        Err(e) => Some(format!("cannot run `ip` (iproute2): {e}")),
    }
}

macro_rules! skip_unless_root {
    () => {
        if let Some(why) = unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(format!("`ip {}`: {}", args.join(" "), text(&out.stderr)))
    }
}

/// Server and client namespaces joined by a veth pair, 10.203.0.1/24 and
/// fd00:203::1/64 on the server's end, .2 and ::2 on the client's; deleted
/// on drop.
struct Pair {
    server: String,
    client: String,
    server_if: String,
    client_if: String,
    server_v4: Ipv4Addr,
    client_v4: Ipv4Addr,
    server_v6: Ipv6Addr,
}

impl Pair {
    fn create(tag: &str) -> Self {
        Self::with_queues(tag, 1)
    }

    /// [`Pair::create`] with `queues` receive (and transmit) queues on
    /// each end.
    fn with_queues(tag: &str, queues: u32) -> Self {
        let queues = queues.to_string();
        let pid = std::process::id();
        let pair = Self {
            server: format!("atd-{tag}-srv-{pid}"),
            client: format!("atd-{tag}-cli-{pid}"),
            server_if: format!("d{pid}{tag}s"),
            client_if: format!("d{pid}{tag}c"),
            server_v4: Ipv4Addr::new(10, 203, 0, 1),
            client_v4: Ipv4Addr::new(10, 203, 0, 2),
            server_v6: Ipv6Addr::new(0xfd00, 0x203, 0, 0, 0, 0, 0, 1),
        };
        // From here on, dropping `pair` removes whatever was made.
        let made = (|| {
            ip(&["netns", "add", &pair.server])?;
            ip(&["netns", "add", &pair.client])?;
            ip(&[
                "link",
                "add",
                &pair.server_if,
                "netns",
                &pair.server,
                "numrxqueues",
                &queues,
                "numtxqueues",
                &queues,
                "type",
                "veth",
                "peer",
                "name",
                &pair.client_if,
                "netns",
                &pair.client,
                "numrxqueues",
                &queues,
                "numtxqueues",
                &queues,
            ])?;
            for (ns, dev, v4, v6) in [
                (
                    &pair.server,
                    &pair.server_if,
                    pair.server_v4,
                    "fd00:203::1/64",
                ),
                (
                    &pair.client,
                    &pair.client_if,
                    pair.client_v4,
                    "fd00:203::2/64",
                ),
            ] {
                ip(&["-n", ns, "addr", "add", &format!("{v4}/24"), "dev", dev])?;
                ip(&["-n", ns, "addr", "add", v6, "dev", dev, "nodad"])?;
                ip(&["-n", ns, "link", "set", "lo", "up"])?;
                ip(&["-n", ns, "link", "set", dev, "up"])?;
            }
            Ok::<(), String>(())
        })();
        made.unwrap_or_else(|e| panic!("namespaces: {e}"));
        // A veth leaves the UDP checksum of local traffic to "hardware"
        // that never computes it; the frame layer drops such frames
        // (bad_udp_checksum), as it must drop a bad checksum from the wire.
        // The client's end computes checksums in software, as a NIC's peer
        // on a real link does.
        run_in(&pair.client, || tx_checksum_off(&pair.client_if))
            .unwrap_or_else(|e| panic!("tx checksum offload off: {e}"));
        pair
    }

    /// The XDP words of `ip -d link show` for the server's end: empty when
    /// no program is attached.
    fn server_xdp(&self) -> String {
        let out = ip(&[
            "-n",
            &self.server,
            "-d",
            "link",
            "show",
            "dev",
            &self.server_if,
        ])
        .unwrap_or_else(|e| e);
        out.split_whitespace()
            .filter(|w| w.starts_with("xdp") || w.starts_with("prog/xdp"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Waits up to 2 s for the server's end to have no program.
    fn wait_detached(&self) -> Result<(), String> {
        let deadline = Instant::now() + WAIT;
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

    /// The MAC address of `dev` in namespace `ns`.
    fn mac(ns: &str, dev: &str) -> [u8; 6] {
        let out = ip(&["-n", ns, "link", "show", "dev", dev]).expect("ip link show");
        let text = out
            .split_whitespace()
            .skip_while(|w| *w != "link/ether")
            .nth(1)
            .expect("a MAC address");
        let mut mac = [0u8; 6];
        for (b, part) in mac.iter_mut().zip(text.split(':')) {
            *b = u8::from_str_radix(part, 16).expect("hex");
        }
        mac
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end in it, and its peer.
        let _ = ip(&["netns", "del", &self.client]);
        let _ = ip(&["netns", "del", &self.server]);
    }
}

/// `ETHTOOL_STXCSUM` of include/uapi/linux/ethtool.h.
const ETHTOOL_STXCSUM: u32 = 0x17;

/// Turns transmit checksum offload off on `dev` (`ethtool -K DEV tx off`,
/// in the calling thread's namespace).
fn tx_checksum_off(dev: &str) -> std::io::Result<()> {
    let socket = UdpSocket::bind("0.0.0.0:0")?;
    let mut value: [u32; 2] = [ETHTOOL_STXCSUM, 0];
    // SAFETY: ifreq is plain old data; all zeros is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (to, from) in request.ifr_name.iter_mut().zip(dev.bytes().take(15)) {
        *to = from as libc::c_char;
    }
    request.ifr_ifru.ifru_data = value.as_mut_ptr().cast();
    // SAFETY: SIOCETHTOOL reads the ifreq and the ethtool_value it points
    // to (command, data: two u32), both live for the call.
    let r = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCETHTOOL, &mut request) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `f` on a new thread inside network namespace `name`.
fn run_in<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> T {
    let path = format!("/run/netns/{name}");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("cannot open {path}: {e}"));
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: the descriptor is a namespace file held open for
                // the call; setns changes only this thread's namespace.
                let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(r, 0, "setns {name}: {}", std::io::Error::last_os_error());
                f()
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// `authtime ARGS` in the client namespace (30 s at most).
fn client_authtime(pair: &Pair, args: &[&str]) -> Output {
    let mut child = Command::new("ip")
        .args(["netns", "exec", pair.client.as_str(), authtime_bin()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start authtime");
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    if status.is_none() {
        let _ = child.kill();
    }
    child.wait_with_output().expect("output")
}

/// The server of `body` (plus the lab clock and a metrics endpoint) in
/// the server namespace.
fn serve(pair: &Pair, dir: &TempDir, name: &str, body: &str) -> Serve {
    let launcher = ["ip", "netns", "exec", pair.server.as_str()];
    let launcher: Vec<&std::ffi::OsStr> = launcher.iter().map(std::ffi::OsStr::new).collect();
    Serve::start_via(dir, name, body, &launcher)
}

/// The server's metrics, scraped from inside its namespace.
fn scrape(pair: &Pair, serve: &Serve) -> String {
    run_in(&pair.server, || ntp_support::scrape(serve.metrics))
}

/// `[ntp]` on the server's IPv4 address (and its IPv6 one with `v6`),
/// with the test's key file.
fn ntp_section(pair: &Pair, v6: bool) -> String {
    let mut listen = format!("\"{}:{NTP_PORT}\"", pair.server_v4);
    if v6 {
        listen.push_str(&format!(", \"[{}]:{NTP_PORT}\"", pair.server_v6));
    }
    format!(
        "[ntp]\nlisten = [{listen}]\nkeys = \"ntp.keys\"\nkey-format = \"chrony\"\n\
         workers = 1\n"
    )
}

fn xdp_section(pair: &Pair) -> String {
    format!("[xdp]\ninterface = \"{}\"\nframes = 256\n", pair.server_if)
}

fn plain_query(pair: &Pair) -> Output {
    client_authtime(
        pair,
        &[
            "query",
            &format!("{}:{NTP_PORT}", pair.server_v4),
            "--timeout",
            "2",
        ],
    )
}

/// One ICMP echo from the client namespace to the server, through a raw
/// socket (`ping` may be missing); whether the reply came within 2 s.
fn ping(pair: &Pair) -> bool {
    run_in(&pair.client, || {
        // SAFETY: plain socket(2), checked, owned below.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP) };
        assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
        // SAFETY: a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut echo = [8u8, 0, 0, 0, 0x12, 0x35, 0, 1, b'a', b't', b'd', b'x'];
        let sum: u32 = echo
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
        echo[2..4].copy_from_slice(&sum.to_be_bytes());
        let to = libc::sockaddr_in {
            sin_family: libc::AF_INET as u16,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(pair.server_v4.octets()),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: `echo` and `to` are live for the call, of the lengths given.
        let sent = unsafe {
            libc::sendto(
                fd.as_raw_fd(),
                echo.as_ptr().cast(),
                echo.len(),
                0,
                (&raw const to).cast(),
                size_of::<libc::sockaddr_in>() as u32,
            )
        };
        assert_eq!(sent, echo.len() as isize);
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            let mut pfd = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one live pollfd.
            if unsafe { libc::poll(&raw mut pfd, 1, 200) } <= 0 {
                continue;
            }
            let mut buf = [0u8; 256];
            // SAFETY: `buf` is live and writable for its length.
            let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            // A raw socket sees the IP header: echo reply (type 0), our id.
            if n >= 28 {
                let ihl = usize::from(buf[0] & 0x0f) * 4;
                if buf[ihl] == 0 && buf[ihl + 4..ihl + 6] == [0x12, 0x35] {
                    return true;
                }
            }
        }
        false
    })
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

/// An Ethernet + IPv4 + UDP frame with correct checksums.
fn udp4_frame(
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
    ip[6] = 0x40;
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

/// Recomputes the IPv4 header checksum of an Ethernet + IPv4 frame.
fn fix_ip_checksum(frame: &mut [u8]) {
    frame[24..26].fill(0);
    let c = finish(fold(0, &frame[14..34]));
    frame[24..26].copy_from_slice(&c.to_be_bytes());
}

/// Sends `frames` out of `dev` with an AF_PACKET socket (in the calling
/// thread's namespace).
fn inject(dev: &str, frames: &[Vec<u8>]) {
    let all = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: plain socket(2); checked and owned below.
    let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(all)) };
    assert!(raw >= 0, "AF_PACKET: {}", std::io::Error::last_os_error());
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let name = std::ffi::CString::new(dev).expect("name");
    // SAFETY: a NUL-terminated string live for the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    assert_ne!(index, 0, "no interface {dev}");
    // SAFETY: sockaddr_ll is plain old data; all zeros is valid.
    let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    address.sll_family = libc::AF_PACKET as u16;
    address.sll_protocol = all;
    address.sll_ifindex = index as i32;
    // SAFETY: a sockaddr_ll of the size passed.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&raw const address).cast(),
            size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    assert_eq!(r, 0, "bind: {}", std::io::Error::last_os_error());
    for frame in frames {
        // SAFETY: `frame` is readable for its length; the socket is bound.
        let n = unsafe { libc::send(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        assert_eq!(
            n,
            frame.len() as isize,
            "{}",
            std::io::Error::last_os_error()
        );
    }
}

/// A plain NTPv4 client request.
fn ntp_request() -> [u8; 48] {
    let mut r = [0u8; 48];
    r[0] = 0x23;
    r[40..48].copy_from_slice(&0x1234_5678_9abc_def0u64.to_be_bytes());
    r
}

/// Malformed frames to the server's NTP port from `from` get no reply and
/// are counted; a well-formed one injected the same way is answered.
fn malformed_frames_are_counted_not_answered(pair: &Pair, serve: &Serve) {
    let server_mac = Pair::mac(&pair.server, &pair.server_if);
    let client_mac = Pair::mac(&pair.client, &pair.client_if);
    let before = scrape(pair, serve);
    let client = run_in(&pair.client, || {
        let s = UdpSocket::bind((pair.client_v4, 0)).expect("bind");
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        s
    });
    let from = (pair.client_v4, client.local_addr().expect("addr").port());
    let to = (pair.server_v4, NTP_PORT);
    let good = udp4_frame(client_mac, server_mac, from, to, &ntp_request());
    let mut bad_udp_checksum = good.clone();
    bad_udp_checksum[40] ^= 0x55;
    let mut bad_ip_checksum = good.clone();
    bad_ip_checksum[24] ^= 0x55;
    let mut bad_udp_length = good.clone();
    bad_udp_length[38..40].copy_from_slice(&40u16.to_be_bytes());
    let mut fragment = good.clone();
    fragment[20] = 0x20; // more fragments, DF clear
    fix_ip_checksum(&mut fragment);
    let mut vlan = good[..12].to_vec();
    vlan.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    vlan.extend_from_slice(&good[12..]);
    let mut broadcast = good.clone();
    broadcast[..6].fill(0xff);
    // Cut inside the NTP payload: the IP and UDP lengths claim 48 bytes.
    let short = good[..14 + 20 + 8 + 20].to_vec();
    let cases = [
        ("truncated payload", short),
        ("bad UDP checksum", bad_udp_checksum),
        ("bad IP checksum", bad_ip_checksum),
        ("UDP length over the IP payload", bad_udp_length),
        ("IPv4 fragment", fragment),
        ("VLAN tag", vlan),
        ("broadcast destination MAC", broadcast),
    ];
    run_in(&pair.client, || {
        for (what, frame) in &cases {
            inject(&pair.client_if, std::slice::from_ref(frame));
            let mut buf = [0u8; 128];
            if let Ok((n, _)) = client.recv_from(&mut buf) {
                panic!("{what}: a {n}-byte reply");
            }
        }
    });
    let after = scrape(pair, serve);
    for (sample, why) in [
        (
            "authtime_xdp_frames_total{verdict=\"drop\",reason=\"short\"}",
            "truncated payload",
        ),
        (
            "authtime_xdp_frames_total{verdict=\"drop\",reason=\"bad_length\"}",
            "UDP length",
        ),
        (
            "authtime_xdp_frames_total{verdict=\"drop\",reason=\"bad_udp_checksum\"}",
            "bad UDP checksum",
        ),
        (
            "authtime_xdp_frames_total{verdict=\"drop\",reason=\"bad_ip_checksum\"}",
            "bad IP checksum",
        ),
        (
            "authtime_xdp_frames_total{verdict=\"pass\",reason=\"bad_destination\"}",
            "broadcast MAC",
        ),
    ] {
        assert_eq!(
            metric(&after, sample),
            metric(&before, sample) + 1,
            "{why}: {sample}\n{after}"
        );
    }
    // Fragments and VLAN-tagged frames are the kernel's: the program does
    // not steer them, so they are not counted.
    assert_eq!(metric(&after, OURS), metric(&before, OURS));
    // The same injection, well-formed, is answered from the frame path.
    run_in(&pair.client, || {
        inject(&pair.client_if, std::slice::from_ref(&good));
        let mut buf = [0u8; 128];
        let (n, peer) = client
            .recv_from(&mut buf)
            .expect("a reply to the well-formed injected request");
        assert_eq!(n, 48);
        assert_eq!(peer, SocketAddr::from(to));
        assert_eq!(buf[0] & 7, 4, "mode 4");
        assert_eq!(buf[24..32], ntp_request()[40..48], "origin timestamp");
    });
    assert_eq!(
        metric(&scrape(pair, serve), OURS),
        metric(&before, OURS) + 1
    );
    // With IP options (four NOPs) the program leaves the frame to the
    // kernel, whose socket on the same address answers it: not ours.
    let mut options = good[..34].to_vec();
    options.extend_from_slice(&[1, 1, 1, 1]);
    options.extend_from_slice(&good[34..]);
    options[14] = 0x46; // version 4, IHL 6
    let total = u16::from_be_bytes([options[16], options[17]]) + 4;
    options[16..18].copy_from_slice(&total.to_be_bytes());
    options[24..26].fill(0);
    let c = finish(fold(0, &options[14..38]));
    options[24..26].copy_from_slice(&c.to_be_bytes());
    let ours_before = metric(&scrape(pair, serve), OURS);
    run_in(&pair.client, || {
        inject(&pair.client_if, &[options]);
        let mut buf = [0u8; 128];
        let (n, peer) = client
            .recv_from(&mut buf)
            .expect("the kernel's socket answers the request with IP options");
        assert_eq!((n, peer), (48, SocketAddr::from(to)));
        assert_eq!(buf[24..32], ntp_request()[40..48], "origin timestamp");
    });
    assert_eq!(metric(&scrape(pair, serve), OURS), ours_before);
}

#[test]
fn ntp_mac_and_nts_are_answered_from_the_frames_and_nothing_is_left_attached() {
    skip_unless_root!();
    let pair = Pair::create("q");
    let dir = TempDir::new("xdp-serve");
    keygen(&dir, "ntp.keys", "chrony", &[("aes128", 7)]);
    nts_cert(&dir, "xdp", &["--ip", &pair.server_v4.to_string()]);
    let nts = format!(
        "[nts-ke]\nlisten = [\"{}:{KE_PORT}\"]\ncertificate-chain = \"xdp-chain.pem\"\n\
         private-key = \"xdp-key.pem\"\nworkers = 1\n[keystore]\npath = \"nts-keys\"\n",
        pair.server_v4
    );
    let config = format!("{}{nts}{}", ntp_section(&pair, true), xdp_section(&pair));
    let mut server = serve(&pair, &dir, "serve", &config);
    assert!(
        !pair.server_xdp().is_empty(),
        "no XDP program on {}: {}",
        pair.server_if,
        server.log_text()
    );
    assert!(
        server.log_text().contains("AF_XDP on"),
        "{}",
        server.log_text()
    );

    let started = Instant::now();
    let out = plain_query(&pair);
    assert!(out.status.success(), "plain: {}", text_of(&out));
    let out = client_authtime(
        &pair,
        &[
            "query",
            &format!("[{}]:{NTP_PORT}", pair.server_v6),
            "--timeout",
            "2",
        ],
    );
    assert!(out.status.success(), "plain over IPv6: {}", text_of(&out));
    let key_file = dir.path("ntp.keys").display().to_string();
    let out = client_authtime(
        &pair,
        &[
            "query",
            &format!("{}:{NTP_PORT}", pair.server_v4),
            "--key-file",
            &key_file,
            "--key-id",
            "7",
        ],
    );
    assert!(out.status.success(), "MAC: {}", text_of(&out));
    assert!(text(&out.stdout).contains("key 7"), "{}", text_of(&out));
    let ca = dir.path("xdp-ca.pem").display().to_string();
    let out = client_authtime(
        &pair,
        &[
            "query",
            "--nts",
            &format!("{}:{KE_PORT}", pair.server_v4),
            "--ca",
            &ca,
            "--timeout",
            "5",
        ],
    );
    assert!(out.status.success(), "NTS: {}", text_of(&out));
    eprintln!("three queries in {:?}", started.elapsed());
    let metrics = scrape(&pair, &server);
    assert!(metric(&metrics, OURS) >= 4, "{metrics}");
    assert_eq!(
        metric(&metrics, "authtime_ntp_answered_total{auth=\"none\"}"),
        2,
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "authtime_ntp_answered_total{auth=\"mac\"}"),
        1,
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "authtime_nts_answered_total"),
        1,
        "{metrics}"
    );
    // The program's metadata timestamps reached the worker.
    assert!(
        metric(
            &metrics,
            "authtime_ntp_receive_timestamps_total{source=\"kernel\"}"
        ) >= 4,
        "{metrics}"
    );

    assert!(ping(&pair), "no ICMP echo reply while attached");
    malformed_frames_are_counted_not_answered(&pair, &server);

    // SIGKILL: the kernel detaches the program; a new server attaches and
    // answers at once.
    server.process.child.kill().expect("SIGKILL");
    let _ = server.process.wait_for_exit(WAIT);
    pair.wait_detached()
        .unwrap_or_else(|state| panic!("still attached after SIGKILL: {state}"));
    let again = format!("{}{}", ntp_section(&pair, false), xdp_section(&pair));
    let server = serve(&pair, &dir, "again", &again);
    assert!(!pair.server_xdp().is_empty(), "{}", server.log_text());
    let out = plain_query(&pair);
    assert!(out.status.success(), "after a restart: {}", text_of(&out));
    assert_eq!(metric(&scrape(&pair, &server), OURS), 1);
    let mut server = server;
    server.process.signal("TERM");
    let status = server.process.wait_for_exit(Duration::from_secs(5));
    assert!(
        status.is_some_and(|s| s.success()),
        "SIGTERM: {status:?}\n{}",
        server.log_text()
    );
    pair.wait_detached()
        .unwrap_or_else(|state| panic!("still attached after SIGTERM: {state}"));

    // Without [xdp]: nothing attached, the socket answers.
    let server = serve(&pair, &dir, "sockets", &ntp_section(&pair, false));
    assert_eq!(pair.server_xdp(), "", "{}", server.log_text());
    let out = plain_query(&pair);
    assert!(out.status.success(), "sockets: {}", text_of(&out));
    let metrics = scrape(&pair, &server);
    assert!(!metrics.contains("authtime_xdp_frames_total"), "{metrics}");
    assert_eq!(
        metric(&metrics, "authtime_ntp_answered_total{auth=\"none\"}"),
        1
    );
}

/// chronyd (asking for interleaved mode) synchronizes from basic replies.
#[test]
fn chronyd_synchronizes_against_the_frame_path() {
    skip_unless_root!();
    let pair = Pair::create("c");
    let dir = TempDir::new("xdp-chrony");
    keygen(&dir, "ntp.keys", "chrony", &[("aes128", 7)]);
    let config = format!("{}{}", ntp_section(&pair, false), xdp_section(&pair));
    let server = serve(&pair, &dir, "serve", &config);
    let conf = dir.path("chronyd.conf");
    std::fs::write(
        &conf,
        format!(
            "server {} port {NTP_PORT} key 7 iburst minpoll -4 maxpoll -4 xleave\n\
             keyfile {}\n{}",
            pair.server_v4,
            dir.path("ntp.keys").display(),
            chronyd_private_lines(&dir)
        ),
    )
    .expect("conf");
    let log_path = dir.path("chronyd.log");
    let log = std::fs::File::create(&log_path).expect("log");
    // -Q: measure only; -x: never touch the clock; -u root: no user switch.
    let child = Command::new("ip")
        .args(["netns", "exec", pair.client.as_str()])
        .arg(chronyd())
        .args(["-x", "-u", "root", "-f"])
        .arg(&conf)
        .args(["-Q", "-t", "4"])
        .stdout(Stdio::from(log.try_clone().expect("log")))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start chronyd");
    let mut chronyd = ChildGuard {
        child,
        name: "chronyd -Q".into(),
    };
    let status = chronyd
        .wait_for_exit(Duration::from_secs(9))
        .expect("chronyd -Q ends by its own time limit");
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(
        status.success() && log.contains("System clock wrong by"),
        "chronyd did not accept the frame path's samples:\n{log}\nserver log:\n{}",
        server.log_text()
    );
    let metrics = scrape(&pair, &server);
    let answered = metric(&metrics, "authtime_ntp_answered_total{auth=\"mac\"}");
    assert!(answered >= 1, "{metrics}");
    assert!(metric(&metrics, OURS) >= answered, "{metrics}");
    // chronyd asked for interleaved mode (xleave): its requests after the
    // first name the previous reply, whose transmit time came back from the
    // completion ring (AF_XDP transmit metadata, this kernel has it: the
    // start line says so), so they get interleaved replies carrying it.
    assert!(
        server
            .log_text()
            .contains("kernel transmit timestamps from the completion ring"),
        "{}",
        server.log_text()
    );
    let interleaved = metric(&metrics, "authtime_ntp_replies_total{mode=\"interleaved\"}");
    assert!(interleaved >= 1, "{metrics}");
    assert_eq!(
        metric(&metrics, "authtime_ntp_replies_total{mode=\"basic\"}") + interleaved,
        answered,
        "{metrics}"
    );
    assert!(
        metric(
            &metrics,
            "authtime_ntp_transmit_timestamps_total{source=\"kernel\"}"
        ) >= interleaved,
        "{metrics}"
    );
    // Every stamp asked for came back on time (veth hands frames over
    // inside the kick).
    let read = metric(
        &metrics,
        "authtime_ntp_kernel_transmit_timestamps_total{result=\"read\"}",
    );
    assert!(read >= interleaved, "{metrics}");
    assert_eq!(
        metric(
            &metrics,
            "authtime_xdp_socket_events_total{queue=\"0\",event=\"tx_timestamps_late\"}"
        ),
        0,
        "{metrics}"
    );
    // The socket's counters are read once a second: wait for them.
    let handed = "authtime_xdp_socket_events_total{queue=\"0\",event=\"tx_timestamps\"}";
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let mut metrics = metrics;
    while metric(&metrics, handed) < read && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        metrics = scrape(&pair, &server);
    }
    assert_eq!(metric(&metrics, handed), read, "{metrics}");
}

#[test]
fn every_queue_gets_a_socket_and_a_worker() {
    skip_unless_root!();
    let pair = Pair::with_queues("m", 2);
    let dir = TempDir::new("xdp-queues");
    keygen(&dir, "ntp.keys", "chrony", &[("aes128", 7)]);
    let config = format!("{}{}", ntp_section(&pair, false), xdp_section(&pair));
    let server = serve(&pair, &dir, "serve", &config);
    assert!(
        server.log_text().contains("queues [0, 1]"),
        "{}",
        server.log_text()
    );
    let out = client_authtime(
        &pair,
        &[
            "query",
            &format!("{}:{NTP_PORT}", pair.server_v4),
            "--count",
            "10",
            "--interval",
            "0.01",
            "--timeout",
            "2",
        ],
    );
    assert!(out.status.success(), "{}", text_of(&out));
    let metrics = scrape(&pair, &server);
    assert_eq!(metric(&metrics, OURS), 10, "{metrics}");
    assert_eq!(
        metric(&metrics, "authtime_ntp_answered_total{auth=\"none\"}"),
        10,
        "{metrics}"
    );
    for queue in ["0", "1"] {
        assert!(
            metrics.contains(&format!(
                "authtime_xdp_socket_events_total{{queue=\"{queue}\",event=\"rx_dropped\"}}"
            )),
            "{metrics}"
        );
    }
}

/// `authtime serve` with `[xdp]` in the server namespace without the
/// capabilities `drop` (a capsh list), after the shell command `before`:
/// it must fail to start.
fn serve_without(pair: &Pair, config: &std::path::Path, drop: &str, before: &str) -> Output {
    let mut child = Command::new("ip")
        .args(["netns", "exec", pair.server.as_str(), "capsh"])
        .arg(format!("--drop={drop}"))
        .args(["--", "-c"])
        .arg(format!(
            "{before} exec {} serve --config {}",
            authtime_bin(),
            config.display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start capsh");
    let status = wait_bounded(&mut child, Duration::from_secs(10));
    if status.is_none() {
        let _ = child.kill();
    }
    child.wait_with_output().expect("output")
}

/// Without a capability the setup needs, the server does not start, says
/// which capability is missing, and leaves no program attached, even when
/// the program was attached before the step that failed.
#[test]
fn a_missing_capability_stops_the_start_and_is_named() {
    skip_unless_root!();
    if Command::new("capsh").arg("--help").output().is_err() {
        eprintln!("skipped: needs capsh (libcap2-bin)");
        return;
    }
    let pair = Pair::create("k");
    let dir = TempDir::new("xdp-caps");
    keygen(&dir, "ntp.keys", "chrony", &[("aes128", 7)]);
    let config = dir.path("serve.toml");
    std::fs::write(
        &config,
        format!(
            "{}{}{}",
            ntp_section(&pair, false),
            xdp_section(&pair),
            ntp_support::LAB_CLOCK
        ),
    )
    .expect("config");
    for (drop, before, named) in [
        ("cap_bpf,cap_net_admin,cap_sys_admin", "", "CAP_BPF"),
        ("cap_net_raw", "", "CAP_NET_RAW"),
        // 256 frames of 2048 bytes: 512 KiB, over a 64 KiB limit.
        ("cap_ipc_lock", "ulimit -l 64;", "xdp.frames = 256"),
    ] {
        let out = serve_without(&pair, &config, drop, before);
        assert!(
            !out.status.success() && text(&out.stderr).contains(named),
            "without {drop}: {}",
            text_of(&out)
        );
        eprintln!("without {drop}: {}", text(&out.stderr).trim());
        assert_eq!(pair.server_xdp(), "", "without {drop}: left attached");
    }
}

/// A Roughtime long-term key made by `authtime roughtime keygen` in `dir`
/// (`lt.key`): its public key, (base64, hex).
fn roughtime_keygen(dir: &TempDir) -> (String, String) {
    let out = Command::new(authtime_bin())
        .args(["roughtime", "keygen", "--out"])
        .arg(dir.path("lt.key"))
        .stdin(Stdio::null())
        .output()
        .expect("authtime roughtime keygen");
    assert!(out.status.success(), "keygen: {}", text_of(&out));
    let stdout = text(&out.stdout);
    let field = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{prefix} in {stdout}"))
            .trim()
            .to_owned()
    };
    (field("public key (base64): "), field("public key (hex): "))
}

/// roughenough 2.2's client, where scripts/ensure-roughenough.sh caches it;
/// `None` when that build is not there.
fn cached_roughenough_client() -> Option<std::path::PathBuf> {
    let cache = std::env::var_os("AUTHTIME_PEER_CACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| std::path::PathBuf::from(home).join(".cache/authtime-peers"))
        })?;
    let client = cache.join("roughenough-2.2/bin/roughenough_client");
    client.is_file().then_some(client)
}

/// `[roughtime]` and `[xdp]` together: the program steers the Roughtime
/// port too, and the queue's worker answers Roughtime from the frames with
/// the socket workers' logic and counters, next to NTP.
#[test]
fn roughtime_is_answered_from_the_frames() {
    skip_unless_root!();
    let pair = Pair::create("r");
    let dir = TempDir::new("xdp-roughtime");
    keygen(&dir, "ntp.keys", "chrony", &[("aes128", 7)]);
    let (b64, hex_key) = roughtime_keygen(&dir);
    let server_rt = format!("{}:{ROUGHTIME_PORT}", pair.server_v4);
    let server_rt6 = format!("[{}]:{ROUGHTIME_PORT}", pair.server_v6);
    let config = format!(
        "{}[roughtime]\nlisten = [\"{server_rt}\", \"{server_rt6}\"]\n\
         long-term-key = \"lt.key\"\nrate-limit = 0\nworkers = 1\n{}",
        ntp_section(&pair, true),
        xdp_section(&pair)
    );
    let server = serve(&pair, &dir, "serve", &config);
    assert!(
        server
            .log_text()
            .contains(&format!("NTP and Roughtime (port [{ROUGHTIME_PORT}])")),
        "{}",
        server.log_text()
    );
    let before = scrape(&pair, &server);
    let received = "authtime_roughtime_received_total";

    // authtime's client, both wire versions, and over IPv6.
    let mut answered = 0;
    for (server, version, shown) in [
        (&server_rt, "1", "version 1,"),
        (&server_rt, "draft", "version draft-0x8000000c,"),
        (&server_rt6, "1", "version 1,"),
    ] {
        let out = client_authtime(
            &pair,
            &[
                "roughtime",
                "query",
                "--server",
                server,
                "--public-key",
                &b64,
                "--version",
                version,
                "--timeout-ms",
                "1000",
                "--retries",
                "1",
            ],
        );
        assert!(
            out.status.success(),
            "roughtime {version}: {}",
            text_of(&out)
        );
        assert!(text(&out.stdout).contains(shown), "{}", text_of(&out));
        answered += 1;
    }

    // roughenough 2.2's client, when its cached build is there.
    match cached_roughenough_client() {
        Some(client) => {
            let client = client.display().to_string();
            let port = ROUGHTIME_PORT.to_string();
            let server_v4 = pair.server_v4.to_string();
            let run = roughenough_support::spawn_client(
                std::path::Path::new("ip"),
                &[
                    "netns",
                    "exec",
                    &pair.client,
                    &client,
                    "-P",
                    "1",
                    "-t",
                    "2",
                    "-f",
                    "%s",
                    "-k",
                    &hex_key,
                    &server_v4,
                    &port,
                ],
            )
            .finish(Duration::from_secs(10));
            roughenough_support::assert_22_verified(&run, 1, "roughenough over AF_XDP");
            answered += 1;
        }
        None => eprintln!(
            "roughenough's client not checked: no cached build (scripts/ensure-roughenough.sh \
             makes one)"
        ),
    }
    let after = scrape(&pair, &server);
    let requests = metric(&after, received) - metric(&before, received);
    // Every Roughtime request came in through the AF_XDP socket (a client
    // retry would add to both), and each client got its answer.
    assert!(requests >= answered, "{after}");
    assert_eq!(
        metric(&after, OURS) - metric(&before, OURS),
        requests,
        "{after}"
    );
    let responses = |m: &str| {
        metric(m, "authtime_roughtime_responses_total{version=\"1\"}")
            + metric(
                m,
                "authtime_roughtime_responses_total{version=\"0x8000000c\"}",
            )
    };
    assert!(
        responses(&after) - responses(&before) >= answered,
        "{after}"
    );
    assert!(
        metric(&after, "authtime_roughtime_signatures_total") >= answered,
        "{after}"
    );

    // Refused and counted as on the sockets: too short, and 1024 bytes that
    // are no Roughtime request. Neither gets an answer.
    let too_short = "authtime_roughtime_dropped_total{reason=\"too_short\"}";
    let malformed = "authtime_roughtime_dropped_total{reason=\"malformed\"}";
    let replies = run_in(&pair.client, || {
        let s = UdpSocket::bind((pair.client_v4, 0)).expect("bind");
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        s.send_to(&[0x55; 100], &server_rt).expect("send");
        s.send_to(&[0x55; 1024], &server_rt).expect("send");
        let mut buf = [0u8; 2048];
        (0..2).filter(|_| s.recv_from(&mut buf).is_ok()).count()
    });
    assert_eq!(replies, 0, "a refused request was answered");
    let refused = scrape(&pair, &server);
    assert_eq!(metric(&refused, too_short), metric(&after, too_short) + 1);
    assert_eq!(
        metric(&refused, malformed),
        metric(&after, malformed) + 1,
        "{refused}"
    );
    assert_eq!(metric(&refused, OURS), metric(&after, OURS) + 2);
    assert_eq!(metric(&refused, received), metric(&after, received) + 2);

    // NTP next to it, on the same queue.
    let out = plain_query(&pair);
    assert!(
        out.status.success(),
        "NTP next to Roughtime: {}",
        text_of(&out)
    );
    let last = scrape(&pair, &server);
    assert_eq!(metric(&last, OURS), metric(&refused, OURS) + 1, "{last}");
    assert_eq!(metric(&last, received), metric(&refused, received));
}

/// The capability sets (permitted, effective, ambient) of process `pid`,
/// as hexadecimal masks from its status.
fn capability_sets(pid: u32) -> Vec<(String, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| matches!(*k, "CapPrm" | "CapEff" | "CapAmb"))
        .map(|(k, v)| {
            (
                k.to_owned(),
                u64::from_str_radix(v.trim(), 16).expect("hex"),
            )
        })
        .collect()
}

/// Started as an unprivileged user given exactly the set-up's capabilities
/// as ambient ones (what the systemd drop-in of docs/xdp.md does), the
/// server sets up the path, then drops them: it serves from the frames with
/// none left, in any thread.
#[test]
fn an_unprivileged_server_drops_the_setup_capabilities() {
    skip_unless_root!();
    if Command::new("capsh").arg("--help").output().is_err() {
        eprintln!("skipped: needs capsh (libcap2-bin)");
        return;
    }
    let pair = Pair::create("u");
    let dir = TempDir::new("xdp-unprivileged");
    let caps = "cap_net_admin,cap_net_raw,cap_ipc_lock,cap_bpf";
    // No key file: the server runs as nobody, who could not read one the
    // test wrote.
    let config = format!(
        "[ntp]\nlisten = [\"{}:{NTP_PORT}\"]\nworkers = 1\n{}",
        pair.server_v4,
        xdp_section(&pair)
    );
    let launcher = [
        "ip".to_owned(),
        "netns".into(),
        "exec".into(),
        pair.server.clone(),
        "capsh".into(),
        format!("--caps={caps}+eip cap_setpcap,cap_setuid,cap_setgid+ep"),
        "--keep=1".into(),
        "--user=nobody".into(),
        format!("--addamb={caps}"),
        "--".into(),
        "-c".into(),
        "exec \"$0\" \"$@\"".into(),
    ];
    let launcher: Vec<&std::ffi::OsStr> = launcher.iter().map(std::ffi::OsStr::new).collect();
    let server = Serve::start_via(&dir, "serve", &config, &launcher);
    let log = server.log_text();
    assert!(
        log.contains("dropped CAP_NET_ADMIN, CAP_NET_RAW, CAP_IPC_LOCK, CAP_BPF after the set-up"),
        "{log}"
    );
    let pid = server.process.pid();
    let uid = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    assert!(
        uid.lines()
            .any(|l| l.starts_with("Uid:") && !l.split_whitespace().any(|id| id == "0")),
        "not running as nobody:\n{uid}"
    );
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks") {
        let tid: u32 = task
            .expect("task")
            .file_name()
            .to_string_lossy()
            .parse()
            .expect("tid");
        for (set, mask) in capability_sets(tid) {
            assert_eq!(
                mask, 0,
                "thread {tid} of the server still has {set} {mask:x}"
            );
        }
    }
    let out = plain_query(&pair);
    assert!(out.status.success(), "{}", text_of(&out));
    let metrics = scrape(&pair, &server);
    assert!(metric(&metrics, OURS) >= 1, "{metrics}");
}
