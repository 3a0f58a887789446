//! Setting up the AF_XDP data path at start (`[xdp]`, docs/xdp.md): the
//! program attached to the interface for the served ports, one AF_XDP
//! socket per receive queue registered in its map. All of it happens before
//! a worker starts and before the privilege switch; anything missing (the
//! interface, a queue, a capability, driver or kernel support) stops the
//! start with the reason, rather than serving half the queues.
//!
//! The attachment is a bpf_link that is never pinned: dropping it (at
//! shutdown, after the workers and their sockets are gone) or the death of
//! the process in any way detaches the program.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use authtime_frame::Served;
use authtime_xdp::{
    AttachMode, Attachment, BindMode, Error, Family, Interface, ProgramSpec, Xsk, XskConfig,
};

use crate::config::xdp::{FRAME_SIZE, XdpAttach, XdpEndpoints, XdpSettings, served_endpoints};

/// How long a queue whose previous socket just closed (a restart after a
/// crash) may stay busy before the start fails.
const BUSY_RETRY: Duration = Duration::from_millis(500);

/// The AF_XDP path, set up: the program attached, a socket per queue.
#[derive(Debug)]
pub(crate) struct XdpPath {
    /// Detaches the program when dropped.
    pub(crate) attachment: Attachment,
    /// One per queue, each for a worker thread.
    pub(crate) sockets: Vec<Xsk>,
    /// The endpoints answered, NTP's and Roughtime's.
    pub(crate) served: Served,
    /// The served ports that are Roughtime's (the others are NTP's).
    pub(crate) roughtime_ports: Vec<u16>,
    /// What was set up, for the start-up summary.
    pub(crate) description: String,
}

/// Attaches the program on `settings.interface` for the endpoints of
/// `listen` (the addresses the NTP sockets were bound to) and `roughtime`
/// (the `[roughtime]` listen addresses, empty without Roughtime) and opens a
/// socket on each queue.
///
/// # Errors
/// A sentence naming what is missing.
pub(crate) fn set_up(
    settings: &XdpSettings,
    listen: &[SocketAddr],
    roughtime: &[SocketAddr],
) -> Result<XdpPath, String> {
    let ifname = &settings.interface;
    let fail = |e: Error| format!("AF_XDP on {ifname}: {e}");
    let XdpEndpoints {
        served,
        ports,
        roughtime_ports,
    } = served_endpoints(listen, roughtime, settings.ports.as_deref())
        .map_err(|e| format!("AF_XDP on {ifname}: {e}"))?;
    let interface = Interface::by_name(ifname).map_err(fail)?;
    let available = interface.rx_queues().map_err(fail)?;
    let queues: Vec<u32> = match &settings.queues {
        Some(queues) => queues.clone(),
        None => (0..available).collect(),
    };
    if let Some(&queue) = queues.iter().find(|&&q| q >= available) {
        return Err(fail(Error::QueueOutOfRange {
            ifname: ifname.clone(),
            queue,
            queues: available,
        }));
    }
    let spec = ProgramSpec::udp_ports(&ports)
        .map_err(fail)?
        .ipv4(family(served.iter().filter_map(|a| match a.ip() {
            IpAddr::V4(ip) => Some(ip),
            IpAddr::V6(_) => None,
        })))
        .ipv6(family(served.iter().filter_map(|a| match a.ip() {
            IpAddr::V6(ip) => Some(ip),
            IpAddr::V4(_) => None,
        })));
    let mode = match settings.attach {
        XdpAttach::Native => AttachMode::Native,
        XdpAttach::Generic => AttachMode::Generic,
    };
    let attachment = Attachment::attach(ifname, &spec, mode).map_err(fail)?;
    let config = socket_config(settings);
    let mut sockets = Vec::with_capacity(queues.len());
    for &queue in &queues {
        let xsk = open_retrying(ifname, queue, &config).map_err(|e| match e {
            Error::MemlockLimit { .. } => format!(
                "{} (xdp.frames = {} per queue, {} queue(s): {} bytes locked in all)",
                fail(e),
                settings.frames,
                queues.len(),
                settings.umem_bytes() * queues.len() as u64
            ),
            e => fail(e),
        })?;
        attachment.register(&xsk).map_err(fail)?;
        sockets.push(xsk);
    }
    let protocols = if roughtime_ports.is_empty() {
        "NTP".to_owned()
    } else {
        format!(
            "NTP and Roughtime (port{} {roughtime_ports:?})",
            plural(roughtime_ports.len())
        )
    };
    let transmit_times = if sockets.iter().all(Xsk::tx_timestamps) {
        "kernel transmit timestamps from the completion ring (interleaved mode, measured T3)"
    } else if settings.zero_copy {
        "basic NTP replies only (no kernel transmit timestamps in zero-copy mode: no \
         interleaved mode, T3 is the bare clock reading)"
    } else {
        "basic NTP replies only (the kernel has no AF_XDP transmit metadata, Linux 6.11: no \
         interleaved mode, T3 is the bare clock reading)"
    };
    let description = format!(
        "AF_XDP on {ifname} queue{} {queues:?} ({} mode, {}), UDP port{} {ports:?}: {} \
         {protocols} answered from the frames, {transmit_times}",
        if queues.len() == 1 { "" } else { "s" },
        match mode {
            AttachMode::Native => "native",
            AttachMode::Generic => "generic",
        },
        if settings.zero_copy {
            "zero-copy"
        } else {
            "copy"
        },
        if ports.len() == 1 { "" } else { "s" },
        served
            .iter()
            .map(SocketAddr::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    );
    Ok(XdpPath {
        attachment,
        sockets,
        served: Served::new(served),
        roughtime_ports,
        description,
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Which destinations of one family the program takes: none when no
/// served address is of that family, one address when exactly one is,
/// else any (the frame layer then passes the others, which are counted).
fn family<A: PartialEq + Copy + Into<IpAddr>>(addrs: impl Iterator<Item = A>) -> Family<A> {
    let mut one: Option<A> = None;
    for a in addrs {
        if a.into().is_unspecified() {
            return Family::AnyAddress;
        }
        match one {
            Some(b) if b != a => return Family::AnyAddress,
            _ => one = Some(a),
        }
    }
    one.map_or(Family::Off, Family::Address)
}

/// The socket's sizes for `settings.frames` chunks: the fill ring holds
/// them all, the other rings half (the default for 4096 frames is the
/// crate's own).
fn socket_config(settings: &XdpSettings) -> XskConfig {
    let fill = settings.frames.next_power_of_two();
    let half = (fill / 2).max(32);
    XskConfig {
        frame_size: FRAME_SIZE,
        frame_count: settings.frames,
        fill_size: fill,
        completion_size: half,
        rx_size: half,
        tx_size: half,
        bind: if settings.zero_copy {
            BindMode::ZeroCopy
        } else {
            BindMode::Copy
        },
        need_wakeup: true,
        // Copy mode only (the crate's rule): the replies' transmit times
        // for interleaved mode and the measured T3.
        tx_timestamps: true,
    }
}

/// Opens the socket, retrying for a moment while the queue is busy: the
/// kernel frees a closed socket's queue asynchronously, so a server
/// restarted right after a crash can find it still taken.
fn open_retrying(ifname: &str, queue: u32, config: &XskConfig) -> Result<Xsk, Error> {
    let deadline = Instant::now() + BUSY_RETRY;
    loop {
        match Xsk::open(ifname, queue, config) {
            Err(Error::QueueBusy { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    #[test]
    fn one_address_per_family_is_filtered_in_the_program() {
        let one = [Ipv4Addr::new(192, 0, 2, 1)];
        assert_eq!(family(one.into_iter()), Family::Address(one[0]));
        let same = [one[0], one[0]];
        assert_eq!(family(same.into_iter()), Family::Address(one[0]));
        let two = [one[0], Ipv4Addr::new(192, 0, 2, 2)];
        assert_eq!(family(two.into_iter()), Family::AnyAddress);
        let any = [Ipv6Addr::UNSPECIFIED];
        assert_eq!(family(any.into_iter()), Family::AnyAddress);
        assert_eq!(family(std::iter::empty::<Ipv6Addr>()), Family::Off);
    }

    #[test]
    fn the_default_frames_give_the_crates_default_socket() {
        let settings = XdpSettings {
            interface: "eth0".into(),
            queues: None,
            attach: XdpAttach::Native,
            zero_copy: false,
            frames: crate::config::xdp::DEFAULT_FRAMES,
            ports: None,
        };
        assert_eq!(socket_config(&settings), XskConfig::default());
        let small = socket_config(&XdpSettings {
            frames: 100,
            ..settings
        });
        assert_eq!((small.fill_size, small.rx_size), (128, 64));
    }

    fn settings(interface: &str, queues: Option<Vec<u32>>) -> XdpSettings {
        XdpSettings {
            interface: interface.into(),
            queues,
            attach: XdpAttach::Native,
            zero_copy: false,
            frames: 64,
            ports: None,
        }
    }

    /// What is missing is named, before anything is attached (no root
    /// needed to get this far).
    #[test]
    fn a_missing_interface_or_queue_stops_the_start_with_its_name() {
        let listen = ["127.0.0.1:11123".parse().expect("addr")];
        let e = set_up(&settings("nonexistent9", None), &listen, &[]).expect_err("no interface");
        assert!(
            e.contains("AF_XDP on nonexistent9") && e.contains("no network interface"),
            "{e}"
        );
        let e = set_up(&settings("lo", Some(vec![0, 9])), &listen, &[]).expect_err("no queue 9");
        assert!(e.contains("queue 9 is out of range"), "{e}");
        let any_port = ["127.0.0.1:0".parse().expect("addr")];
        let e = set_up(&settings("lo", None), &any_port, &[]).expect_err("port 0");
        assert!(e.contains("port 0"), "{e}");
    }
}
