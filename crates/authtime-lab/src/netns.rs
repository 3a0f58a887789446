//! Two network namespaces of the lab's own, joined by a veth pair: a server
//! under test in one, a load generator in the other, so that their traffic
//! crosses a real (virtual) network device, with kernel timestamps on both
//! ends, and never leaves the pair. Made with `ip` (iproute2) and removed
//! when the [`NetnsPair`] is dropped, on every path; needs root.
//!
//! A process enters a namespace through `ip netns exec`; a thread of the lab
//! enters one with `setns(CLONE_NEWNET)` ([`run_in`]): sockets it opens, and
//! threads it starts, belong to that namespace, while the rest of the
//! process stays where it was.

#![allow(unsafe_code, reason = "setns, geteuid and SIOCETHTOOL FFI")]

use std::net::Ipv4Addr;
use std::os::fd::AsRawFd as _;
use std::process::{Command, Stdio};

/// The private network between the two ends: /24, in neither namespace's
/// view of anything else (both are empty but for loopback and the veth).
const NETWORK: [u8; 3] = [10, 200, 7];

/// Whether `ip` is in the private network the lab's namespaces use (the
/// load generators send nowhere else but loopback).
#[must_use]
pub fn in_lab_network(ip: std::net::IpAddr) -> bool {
    matches!(ip, std::net::IpAddr::V4(v4) if v4.octets()[..3] == NETWORK)
}

/// Whether this process runs as root.
#[must_use]
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Why namespaces cannot be made here, if they cannot.
#[must_use]
pub fn unavailable() -> Option<String> {
    if !is_root() {
        return Some("needs root (network namespaces and a veth pair)".into());
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

/// The names `ip netns list` shows.
#[must_use]
pub fn list() -> Vec<String> {
    Command::new("ip")
        .args(["netns", "list"])
        .stdin(Stdio::null())
        .output()
        .map(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `ip ARGS`; its standard error is the message when it fails.
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
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A server namespace and a generator namespace joined by a veth pair;
/// both are deleted (and the veth pair with them) when this is dropped.
#[derive(Debug)]
pub struct NetnsPair {
    /// The server's namespace.
    pub server: String,
    /// The generator's namespace.
    pub generator: String,
    /// The server end's addresses (one per server under test).
    pub server_addrs: Vec<Ipv4Addr>,
    /// The generator end's address.
    pub generator_addr: Ipv4Addr,
    /// The veth ends: in the server's namespace, in the generator's.
    pub veth: (String, String),
}

impl NetnsPair {
    /// Makes the namespaces `authtime-lab-TAG-srv-PID` and `...-gen-PID`,
    /// the veth pair between them, `server_addrs` addresses on the server's
    /// end (10.200.7.1, .3, .4, ...) and 10.200.7.2 on the generator's, and
    /// brings every link (loopback too) up.
    ///
    /// # Errors
    /// The first `ip` command that failed; what was made is removed.
    pub fn create(tag: &str, server_addrs: usize) -> Result<Self, String> {
        let pid = std::process::id();
        let addr = |host: u8| Ipv4Addr::new(NETWORK[0], NETWORK[1], NETWORK[2], host);
        // Interface names have at most 15 bytes.
        let pair = Self {
            server: format!("authtime-lab-{tag}-srv-{pid}"),
            generator: format!("authtime-lab-{tag}-gen-{pid}"),
            server_addrs: (0..server_addrs)
                .map(|i| addr(if i == 0 { 1 } else { 2 + i as u8 }))
                .collect(),
            generator_addr: addr(2),
            veth: (format!("atl{pid}s"), format!("atl{pid}g")),
        };
        // From here on, dropping `pair` removes whatever was made.
        ip(&["netns", "add", &pair.server])?;
        ip(&["netns", "add", &pair.generator])?;
        let (vs, vg) = (&pair.veth.0, &pair.veth.1);
        ip(&[
            "link",
            "add",
            vs,
            "netns",
            &pair.server,
            "type",
            "veth",
            "peer",
            "name",
            vg,
            "netns",
            &pair.generator,
        ])?;
        for a in &pair.server_addrs {
            ip(&[
                "-n",
                &pair.server,
                "addr",
                "add",
                &format!("{a}/24"),
                "dev",
                vs,
            ])?;
        }
        ip(&[
            "-n",
            &pair.generator,
            "addr",
            "add",
            &format!("{}/24", pair.generator_addr),
            "dev",
            vg,
        ])?;
        for (ns, dev) in [(&pair.server, vs), (&pair.generator, vg)] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        Ok(pair)
    }

    /// Sets the MTU of both veth ends (1500 by default: a 1500-byte UDP
    /// payload needs 1528).
    ///
    /// # Errors
    /// The `ip` command's message.
    pub fn set_mtu(&self, mtu: u32) -> Result<(), String> {
        let mtu = mtu.to_string();
        for (ns, dev) in [
            (&self.server, &self.veth.0),
            (&self.generator, &self.veth.1),
        ] {
            ip(&["-n", ns, "link", "set", "dev", dev, "mtu", &mtu])?;
        }
        Ok(())
    }

    /// A command that runs `program` in the server's namespace.
    #[must_use]
    pub fn server_command(&self, program: &std::path::Path) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.server]).arg(program);
        command
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end in it, and its peer.
        // Errors (a namespace never made) are of no use here.
        let _ = ip(&["netns", "del", &self.generator]);
        let _ = ip(&["netns", "del", &self.server]);
    }
}

/// Runs `f` on a new thread inside network namespace `name` (one that
/// `ip netns` made) and returns its result. Sockets `f` opens and threads it
/// starts are in that namespace; the calling thread is not.
///
/// # Errors
/// The namespace cannot be entered, or `f` panicked.
pub fn run_in<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    let path = format!("/run/netns/{name}");
    let file = std::fs::File::open(&path).map_err(|e| format!("cannot open {path}: {e}"))?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: the descriptor is a namespace file held open for the
                // call; setns changes only this thread's network namespace.
                let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                if r != 0 {
                    return Err(format!(
                        "cannot enter network namespace {name}: {}",
                        std::io::Error::last_os_error()
                    ));
                }
                Ok(f())
            })
            .join()
            .map_err(|_| format!("a thread in network namespace {name} panicked"))?
    })
}

/// `ETHTOOL_STXCSUM` of include/uapi/linux/ethtool.h.
const ETHTOOL_STXCSUM: u32 = 0x17;

/// Turns transmit checksum offload off on `dev` in the calling thread's
/// namespace (`ethtool -K DEV tx off`, without needing ethtool): the sender
/// then computes UDP checksums in software, as a NIC's peer on a real link
/// does. A veth with the offload on leaves them to "hardware" that never
/// fills them in, and an AF_XDP server, which sees the frame as sent, drops
/// them as bad (docs/xdp.md).
///
/// # Errors
/// The ioctl's error.
pub fn tx_checksum_off(dev: &str) -> Result<(), String> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    let mut value: [u32; 2] = [ETHTOOL_STXCSUM, 0];
    // SAFETY: ifreq is plain old data; all zeros is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (to, from) in request.ifr_name.iter_mut().zip(dev.bytes().take(15)) {
        *to = from as libc::c_char;
    }
    request.ifr_ifru.ifru_data = value.as_mut_ptr().cast();
    // SAFETY: SIOCETHTOOL reads the ifreq and the ethtool_value it points
    // to (command, data: two u32), both live for the call.
    let r = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCETHTOOL, &raw mut request) };
    if r != 0 {
        return Err(format!(
            "cannot turn transmit checksum offload off on {dev}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs root and iproute2; skipped (with the reason printed) otherwise.
    #[test]
    fn a_pair_carries_udp_between_its_ends_and_disappears_when_dropped() {
        if let Some(why) = unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
        let pair = NetnsPair::create("unit", 2).expect("namespaces");
        let names = list();
        assert!(names.contains(&pair.server) && names.contains(&pair.generator));
        let server = pair.server_addrs[1];
        let echoed = run_in(&pair.server, || {
            let s = std::net::UdpSocket::bind((server, 9999)).expect("bind in server ns");
            s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .expect("timeout");
            s
        })
        .expect("server side");
        // The generator's end reaches the server's second address.
        let reached = run_in(&pair.generator, || {
            let c = std::net::UdpSocket::bind("0.0.0.0:0").expect("bind in generator ns");
            c.send_to(b"hello", (server, 9999)).is_ok()
        })
        .expect("generator side");
        assert!(reached);
        // Checksums computed in software still reach the other end.
        let generator_if = pair.veth.1.clone();
        run_in(&pair.generator, || tx_checksum_off(&generator_if))
            .expect("generator side")
            .expect("offload off");
        let reached = run_in(&pair.generator, || {
            let c = std::net::UdpSocket::bind("0.0.0.0:0").expect("bind in generator ns");
            c.send_to(b"hello", (server, 9999)).is_ok()
        })
        .expect("generator side");
        assert!(reached);
        let mut buf = [0u8; 8];
        let (n, from) = echoed.recv_from(&mut buf).expect("datagram over the veth");
        assert_eq!(&buf[..n], b"hello");
        assert_eq!(from.ip(), std::net::IpAddr::V4(pair.generator_addr));
        let (n, _) = echoed.recv_from(&mut buf).expect("second datagram");
        assert_eq!(&buf[..n], b"hello");
        let (a, b) = (pair.server.clone(), pair.generator.clone());
        drop(pair);
        let names = list();
        assert!(!names.contains(&a) && !names.contains(&b), "{names:?}");
    }
}
