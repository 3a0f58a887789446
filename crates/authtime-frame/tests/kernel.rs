//! The frame layer against the Linux network stack, over a veth pair
//! between two fresh network namespaces A and B (made with `ip`, removed on
//! drop; needs root, skipped with the reason printed otherwise):
//!
//! - a datagram an ordinary UDP socket in A sends to B, captured in B with
//!   an AF_PACKET socket, parses as ours with the right addresses, ports,
//!   MACs and payload;
//! - a reply frame built from it and injected with the AF_PACKET socket in
//!   B reaches the UDP socket in A, with the right payload and source: the
//!   kernel accepted its lengths and checksums. A copy with its UDP checksum
//!   spoiled, injected first, must not arrive (so the kernel did check).
//!
//! The unsafe code is FFI: AF_PACKET sockets, setns, geteuid and the
//! ethtool ioctl that turns transmit checksum offload off on A's veth end
//! (otherwise A leaves UDP checksums for a NIC to finish, and a veth never
//! does, so B would capture half-done checksums).

#![allow(
    unsafe_code,
    reason = "AF_PACKET sockets, setns, geteuid and an ethtool ioctl are FFI; each block has a SAFETY comment"
)]

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use authtime_frame::{Served, Verdict, build_reply, parse};

/// Every receive waits at most this long.
const TIMEOUT: Duration = Duration::from_secs(2);
const MAC_A: [u8; 6] = [0x02, 0xa7, 0x0f, 0x00, 0x00, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0xa7, 0x0f, 0x00, 0x00, 0x0b];
const PORT_B: u16 = 4123;
/// sll_pkttype of a frame this host sent (linux/if_packet.h).
const PACKET_OUTGOING: u8 = 4;
/// linux/ethtool.h: set transmit checksum offload.
const ETHTOOL_STXCSUM: u32 = 0x17;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}`: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Namespaces A and B joined by a veth pair; deleted (with the veth) on drop.
struct Pair {
    a: String,
    b: String,
    veth_a: String,
    veth_b: String,
}

impl Pair {
    /// Addresses: 10.201.7.1 and fd00:201::1 in A, .2 and ::2 in B.
    fn create(tag: &str) -> Result<Self, String> {
        let pid = std::process::id();
        let pair = Self {
            a: format!("authtime-frame-{tag}-a-{pid}"),
            b: format!("authtime-frame-{tag}-b-{pid}"),
            // Interface names have at most 15 bytes.
            veth_a: format!("atf{tag}{pid}a"),
            veth_b: format!("atf{tag}{pid}b"),
        };
        // From here on, dropping `pair` removes whatever was made.
        ip(&["netns", "add", &pair.a])?;
        ip(&["netns", "add", &pair.b])?;
        let (mac_a, mac_b) = (mac_text(MAC_A), mac_text(MAC_B));
        ip(&[
            "link",
            "add",
            &pair.veth_a,
            "netns",
            &pair.a,
            "address",
            &mac_a,
            "type",
            "veth",
            "peer",
            "name",
            &pair.veth_b,
            "netns",
            &pair.b,
            "address",
            &mac_b,
        ])?;
        for (ns, dev, host) in [(&pair.a, &pair.veth_a, 1), (&pair.b, &pair.veth_b, 2)] {
            let v4 = format!("10.201.7.{host}/24");
            let v6 = format!("fd00:201::{host}/64");
            ip(&["-n", ns, "addr", "add", &v4, "dev", dev])?;
            ip(&["-n", ns, "addr", "add", &v6, "dev", dev, "nodad"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        Ok(pair)
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end in it, and its peer.
        let _ = ip(&["netns", "del", &self.a]);
        let _ = ip(&["netns", "del", &self.b]);
    }
}

fn mac_text(mac: [u8; 6]) -> String {
    mac.map(|b| format!("{b:02x}")).join(":")
}

/// Runs `f` on a thread inside network namespace `name`: sockets it opens
/// stay in that namespace after it returns.
fn run_in<T: Send>(name: &str, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    let file = std::fs::File::open(format!("/run/netns/{name}"))?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: the descriptor is a namespace file held open for
                // the call; setns changes this thread's network namespace only.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("thread panicked")))
    })
}

/// Turns transmit checksum offload off on `dev` (in this thread's namespace).
fn tx_checksum_off(dev: &str) -> io::Result<()> {
    let socket = UdpSocket::bind("0.0.0.0:0").or_else(|_| UdpSocket::bind("[::]:0"))?;
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
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An AF_PACKET socket on one interface: every frame in and out of it.
struct PacketSocket {
    fd: OwnedFd,
}

impl PacketSocket {
    fn open(dev: &str) -> io::Result<Self> {
        let all = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: socket has no memory preconditions; a non-negative return
        // is a descriptor we now own.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(all)) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let name = std::ffi::CString::new(dev).map_err(io::Error::other)?;
        // SAFETY: `name` is a NUL-terminated string that lives for the call.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: sockaddr_ll is plain old data; all zeros is valid.
        let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        address.sll_family = libc::AF_PACKET as u16;
        address.sll_protocol = all;
        address.sll_ifindex = index as i32;
        // SAFETY: the address is a sockaddr_ll of the size passed.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&raw const address).cast(),
                size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        let timeout = libc::timeval {
            tv_sec: TIMEOUT.as_secs() as libc::time_t,
            tv_usec: 0,
        };
        // SAFETY: SO_RCVTIMEO reads a timeval of the size passed.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&raw const timeout).cast(),
                size_of::<libc::timeval>() as u32,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { fd })
    }

    /// The next frame that arrived (not one this host sent), or an error
    /// after [`TIMEOUT`].
    fn recv_incoming(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            // SAFETY: sockaddr_ll is plain old data; all zeros is valid.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut from_len = size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: `buf` and `from` are writable for the lengths passed.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    0,
                    (&raw mut from).cast(),
                    &mut from_len,
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if from.sll_pkttype != PACKET_OUTGOING {
                return Ok(n as usize);
            }
        }
    }

    fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: `frame` is readable for its length; the socket is bound
        // to an interface, so no address is needed.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        assert_eq!(n as usize, frame.len(), "a short AF_PACKET send");
        Ok(())
    }
}

/// Sends a datagram from A to B, captures it in B, replies with a frame
/// injected in B, and checks what A receives.
fn round_trip(tag: &str, a_ip: IpAddr, b_ip: IpAddr) {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, a veth pair, AF_PACKET)");
        return;
    }
    let pair = Pair::create(tag).expect("namespaces");
    let packet = run_in(&pair.b, || PacketSocket::open(&pair.veth_b)).expect("AF_PACKET in B");
    // A listener in B, so that B's kernel takes the request quietly.
    let _listener = run_in(&pair.b, || UdpSocket::bind((b_ip, PORT_B))).expect("bind in B");
    let client = run_in(&pair.a, || {
        tx_checksum_off(&pair.veth_a)?;
        UdpSocket::bind((a_ip, 0))
    })
    .expect("UDP socket in A");
    client.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    let b = SocketAddr::new(b_ip, PORT_B);
    let served = Served::new([b]);

    // (a) A real datagram from a UDP socket parses as ours.
    let request_payload = format!("authtime-frame {tag} request").into_bytes();
    let mut buf = vec![0u8; 2048];
    let mut captured = None;
    // The first datagram may go before the link is up: up to three tries.
    'tries: for _ in 0..3 {
        client.send_to(&request_payload, b).expect("send from A");
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            let Ok(n) = packet.recv_incoming(&mut buf) else {
                continue 'tries;
            };
            if let Verdict::Ours(_) = parse(&buf[..n], &served) {
                captured = Some(buf[..n].to_vec());
                break 'tries;
            }
        }
    }
    let frame = captured.expect("the datagram from A, captured in B");
    eprintln!("captured {tag} frame: {}", hex(&frame));
    let Verdict::Ours(request) = parse(&frame, &served) else {
        unreachable!("parsed as ours above")
    };
    let client_addr = client.local_addr().expect("local address");
    assert_eq!(request.source(), client_addr);
    assert_eq!(request.destination(), b);
    assert_eq!(request.addressing().source_mac(), MAC_A);
    assert_eq!(request.addressing().destination_mac(), MAC_B);
    assert_eq!(request.addressing().hop_limit(), 64);
    assert_eq!(request.payload(), &request_payload[..]);

    // (b) A reply built here is accepted by A's kernel; a spoiled one is not.
    let reply_payload = format!("authtime-frame {tag} reply via AF_PACKET").into_bytes();
    let mut reply = vec![0u8; 1514];
    let len = build_reply(request.addressing(), &reply_payload, &mut reply).expect("reply");
    let mut spoiled = reply[..len].to_vec();
    let last = spoiled.len() - 1;
    spoiled[last] ^= 0x40;
    packet.send(&spoiled).expect("inject the spoiled reply");
    packet.send(&reply[..len]).expect("inject the reply");
    let mut got = [0u8; 1500];
    let (n, from) = client.recv_from(&mut got).expect("the reply, in A");
    assert_eq!(from, b);
    assert_eq!(&got[..n], &reply_payload[..], "the spoiled copy arrived");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn ipv4_datagram_captured_and_reply_injected_through_the_kernel() {
    round_trip(
        "4",
        Ipv4Addr::new(10, 201, 7, 1).into(),
        Ipv4Addr::new(10, 201, 7, 2).into(),
    );
}

#[test]
fn ipv6_datagram_captured_and_reply_injected_through_the_kernel() {
    let a: Ipv6Addr = "fd00:201::1".parse().expect("address");
    let b: Ipv6Addr = "fd00:201::2".parse().expect("address");
    round_trip("6", a.into(), b.into());
}
