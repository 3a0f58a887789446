//! The whole kernel side on a veth pair between two namespaces: the program
//! attached to the server's end, an AF_XDP socket on its queue, a client
//! with an ordinary UDP socket in the other namespace. Needs root and
//! iproute2; skipped (with the reason printed) otherwise.

mod support;

use std::io::BufRead as _;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, SystemTime};

use authtime_xdp::{AttachMode, Attachment, Error, ProgramSpec, StampSource, Xsk, XskConfig};
use support::Pair;

const PORT: u16 = 10123;
const WAIT: Duration = Duration::from_secs(2);

fn small_config() -> XskConfig {
    XskConfig {
        frame_count: 64,
        fill_size: 64,
        completion_size: 64,
        rx_size: 64,
        tx_size: 64,
        ..XskConfig::default()
    }
}

/// The program on the server's end serving PORT, and a socket on queue 0
/// registered in its map.
fn serve(pair: &Pair, mode: AttachMode) -> (Attachment, Xsk) {
    support::run_in(&pair.server, || {
        let spec = ProgramSpec::udp_ports(&[PORT]).expect("spec");
        let att = Attachment::attach(&pair.server_if, &spec, mode)
            .unwrap_or_else(|e| panic!("attach: {e}"));
        let xsk =
            Xsk::open(&pair.server_if, 0, &small_config()).unwrap_or_else(|e| panic!("xsk: {e}"));
        att.register(&xsk)
            .unwrap_or_else(|e| panic!("register: {e}"));
        (att, xsk)
    })
}

fn client_socket(pair: &Pair, v6: bool) -> UdpSocket {
    support::run_in(&pair.client, || {
        let ip: IpAddr = if v6 {
            pair.client_v6.into()
        } else {
            pair.client_v4.into()
        };
        let s = UdpSocket::bind((ip, 0)).expect("client bind");
        s.set_read_timeout(Some(WAIT)).expect("timeout");
        s
    })
}

/// One request from the client through the XSK and a hand-built reply back
/// through the TX ring; returns where the receive time came from.
fn round_trip(pair: &Pair, mode: AttachMode, v6: bool) -> StampSource {
    let (_att, mut xsk) = serve(pair, mode);
    let client = client_socket(pair, v6);
    let server: SocketAddr = if v6 {
        (pair.server_v6, PORT).into()
    } else {
        (pair.server_v4, PORT).into()
    };
    let sent_at = SystemTime::now();
    client
        .send_to(b"authtime-xdp request", server)
        .expect("send");

    assert!(
        xsk.wait(WAIT).expect("poll"),
        "no frame reached the AF_XDP socket: {:?}",
        xsk.stats()
    );
    let mut source = None;
    let mut batch = xsk.recv_batch(16);
    let mut frame = batch.next().expect("a frame");
    let request = support::parse_udp(frame.data()).expect("an Ethernet/IP/UDP frame");
    assert_eq!(request.dst, server);
    assert_eq!(request.src, client.local_addr().expect("client addr"));
    assert_eq!(request.payload, b"authtime-xdp request");
    let stamp = frame.stamp();
    let age = stamp.time.duration_since(sent_at);
    match stamp.source {
        StampSource::XdpMetadata => {
            // Both namespaces share one clock: the program stamped the frame
            // after the client's send and well within the test's time.
            let age = age.unwrap_or_else(|e| panic!("stamped {:?} before the send", e.duration()));
            assert!(
                age < Duration::from_millis(100),
                "stamped {age:?} after the send"
            );
            assert!(frame.tai_ns().is_some());
        }
        StampSource::UserSpace => {
            assert!(age.as_ref().is_ok_and(|a| *a < WAIT), "{age:?}");
        }
    }
    source.get_or_insert(stamp.source);
    let reply = support::reply_frame(&request, b"authtime-xdp reply");
    frame.buffer_mut()[..reply.len()].copy_from_slice(&reply);
    frame.reply(reply.len());
    assert!(batch.next().is_none(), "one frame only");
    drop(batch);
    assert_eq!(xsk.tx_submit().expect("submit"), 1);

    let mut buf = [0u8; 64];
    let (n, from) = client
        .recv_from(&mut buf)
        .expect("the reply through the TX ring");
    assert_eq!(&buf[..n], b"authtime-xdp reply");
    assert_eq!(from, server);

    // The chunk comes back from the completion ring to the fill ring.
    let deadline = std::time::Instant::now() + WAIT;
    while xsk.chunk_census().3 > 0 && std::time::Instant::now() < deadline {
        xsk.reclaim_completions();
        std::thread::sleep(Duration::from_millis(5));
    }
    let (free, fill, lent, sending) = xsk.chunk_census();
    assert_eq!((lent, sending), (0, 0));
    assert_eq!(free + fill, 64);
    source.unwrap_or(StampSource::UserSpace)
}

#[test]
fn udp4_round_trip_native_mode() {
    skip_unless_root!();
    let pair = Pair::create("n4").expect("namespaces");
    let source = round_trip(&pair, AttachMode::Native, false);
    eprintln!("native (driver) mode on veth, copy mode socket: receive time from {source:?}");
    assert_eq!(source, StampSource::XdpMetadata);
}

#[test]
fn udp6_round_trip_native_mode() {
    skip_unless_root!();
    let pair = Pair::create("n6").expect("namespaces");
    let source = round_trip(&pair, AttachMode::Native, true);
    assert_eq!(source, StampSource::XdpMetadata);
}

#[test]
fn udp4_round_trip_generic_mode() {
    skip_unless_root!();
    let pair = Pair::create("g4").expect("namespaces");
    let source = round_trip(&pair, AttachMode::Generic, false);
    eprintln!("generic (skb) mode on veth, copy mode socket: receive time from {source:?}");
    assert_eq!(source, StampSource::XdpMetadata);
}

/// Sends one ICMP echo request from the client namespace to the server and
/// waits up to WAIT for the reply (a raw socket: `ping` may be missing).
#[allow(unsafe_code, reason = "a raw ICMP socket through libc")]
fn ping(pair: &Pair) -> bool {
    support::run_in(&pair.client, || {
        // SAFETY: plain socket(2), checked, closed below.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP) };
        assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
        let mut echo = [8u8, 0, 0, 0, 0x12, 0x34, 0, 1, b'a', b't', b'x', b'd'];
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
                fd,
                echo.as_ptr().cast(),
                echo.len(),
                0,
                (&raw const to).cast(),
                size_of::<libc::sockaddr_in>() as u32,
            )
        };
        assert_eq!(sent, echo.len() as isize);
        let deadline = std::time::Instant::now() + WAIT;
        let mut got = false;
        while !got && std::time::Instant::now() < deadline {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one live pollfd.
            if unsafe { libc::poll(&raw mut pfd, 1, 200) } <= 0 {
                continue;
            }
            let mut buf = [0u8; 256];
            // SAFETY: `buf` is live and writable for its length.
            let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            // A raw socket sees the IP header: echo reply (type 0) with our id.
            if n >= 28 {
                let ihl = usize::from(buf[0] & 0x0f) * 4;
                got = buf[ihl] == 0 && buf[ihl + 4..ihl + 6] == [0x12, 0x34];
            }
        }
        // SAFETY: closing the socket made above, once.
        unsafe { libc::close(fd) };
        got
    })
}

#[test]
fn everything_else_still_reaches_the_kernel_stack() {
    skip_unless_root!();
    let pair = Pair::create("ps").expect("namespaces");
    let (_att, mut xsk) = serve(&pair, AttachMode::Native);

    // ARP (to resolve the server) and ICMP pass.
    assert!(ping(&pair), "no ICMP echo reply while attached");

    // TCP (NTS-KE is TCP) passes, even to the served port number.
    let listener = support::run_in(&pair.server, || {
        std::net::TcpListener::bind((pair.server_v4, PORT)).expect("listen")
    });
    let connected = support::run_in(&pair.client, || {
        std::net::TcpStream::connect_timeout(&(pair.server_v4, PORT).into(), WAIT)
    });
    assert!(connected.is_ok(), "TCP connect: {connected:?}");
    listener.set_nonblocking(false).expect("blocking");
    let (_conn, peer) = listener.accept().expect("accept");
    assert_eq!(peer.ip(), IpAddr::from(pair.client_v4));

    // UDP to another port reaches an ordinary socket, over both families.
    let client4 = client_socket(&pair, false);
    let client6 = client_socket(&pair, true);
    for (client, server_ip) in [
        (&client4, IpAddr::from(pair.server_v4)),
        (&client6, IpAddr::from(pair.server_v6)),
    ] {
        let other = support::run_in(&pair.server, || {
            let s = UdpSocket::bind((server_ip, PORT + 1)).expect("bind other port");
            s.set_read_timeout(Some(WAIT)).expect("timeout");
            s
        });
        client
            .send_to(b"not for xdp", (server_ip, PORT + 1))
            .expect("send");
        let mut buf = [0u8; 32];
        let (n, _) = other.recv_from(&mut buf).expect("UDP to another port");
        assert_eq!(&buf[..n], b"not for xdp");
    }
    // And none of it went to the AF_XDP socket.
    assert_eq!(xsk.recv_batch(16).count(), 0);
}

/// `RxFrame::send` puts a reply on the wire while the other frames of its
/// batch are still lent out, and the bookkeeping follows its chunk back to
/// the fill ring.
#[test]
fn a_frame_sent_at_once_leaves_before_its_batch_ends() {
    skip_unless_root!();
    let pair = Pair::create("sn").expect("namespaces");
    let (_att, mut xsk) = serve(&pair, AttachMode::Native);
    let client = client_socket(&pair, false);
    let server: SocketAddr = (pair.server_v4, PORT).into();
    for text in [&b"first"[..], b"second"] {
        client.send_to(text, server).expect("send");
    }
    // Both frames in one batch: veth delivers within milliseconds.
    std::thread::sleep(Duration::from_millis(200));
    assert!(xsk.wait(WAIT).expect("poll"), "no frame");
    let mut batch = xsk.recv_batch(16);
    let mut frames: Vec<_> = batch.by_ref().collect();
    assert_eq!(frames.len(), 2, "both requests in one batch");
    drop(batch);
    let second = frames.pop().expect("second");
    let mut first = frames.pop().expect("first");
    let request = support::parse_udp(first.data()).expect("a UDP frame");
    let reply = support::reply_frame(&request, b"sent at once");
    first.buffer_mut()[..reply.len()].copy_from_slice(&reply);
    assert!(first.send(reply.len()).expect("kick"), "on the TX ring");
    // The second frame is still lent out: the reply left without a
    // tx_submit.
    let mut buf = [0u8; 64];
    let (n, _) = client.recv_from(&mut buf).expect("the reply, at once");
    assert_eq!(&buf[..n], b"sent at once");
    drop(second);
    drop(frames);
    // The sent chunk is booked as being sent at the next call, which reads
    // its completion after.
    let deadline = std::time::Instant::now() + WAIT;
    xsk.reclaim_completions();
    while xsk.chunk_census().3 > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
        xsk.reclaim_completions();
    }
    let (free, fill, lent, sending) = xsk.chunk_census();
    assert_eq!((lent, sending), (0, 0));
    assert_eq!(free + fill, 64);
    assert_eq!(xsk.stats().expect("stats").refused_descs, 0);
}

#[test]
fn dropping_the_attachment_detaches_the_program() {
    skip_unless_root!();
    let pair = Pair::create("dd").expect("namespaces");
    let (att, xsk) = serve(&pair, AttachMode::Native);
    let state = pair.server_xdp();
    assert!(state.contains("xdp"), "attached: {state:?}");
    drop(xsk);
    drop(att);
    pair.wait_server_detached()
        .unwrap_or_else(|s| panic!("still attached after drop: {s}"));
    // UDP to the served port now reaches an ordinary socket.
    let server = support::run_in(&pair.server, || {
        let s = UdpSocket::bind((pair.server_v4, PORT)).expect("bind");
        s.set_read_timeout(Some(WAIT)).expect("timeout");
        s
    });
    client_socket(&pair, false)
        .send_to(b"after", (pair.server_v4, PORT))
        .expect("send");
    let mut buf = [0u8; 16];
    let (n, _) = server
        .recv_from(&mut buf)
        .expect("no black hole after detach");
    assert_eq!(&buf[..n], b"after");
}

#[test]
fn a_second_attachment_is_refused_with_the_way_out() {
    skip_unless_root!();
    let pair = Pair::create("2a").expect("namespaces");
    let (_att, _xsk) = serve(&pair, AttachMode::Native);
    let again = support::run_in(&pair.server, || {
        Attachment::attach(
            &pair.server_if,
            &ProgramSpec::udp_ports(&[PORT]).expect("spec"),
            AttachMode::Native,
        )
    });
    match again {
        Err(e @ Error::AlreadyAttached { .. }) => {
            assert!(
                e.to_string()
                    .contains(&format!("ip link set dev {} xdp off", pair.server_if)),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_name_what_is_missing() {
    skip_unless_root!();
    let pair = Pair::create("er").expect("namespaces");
    support::run_in(&pair.server, || {
        let e = Xsk::open(&pair.server_if, 7, &small_config()).expect_err("queue 7");
        assert!(
            matches!(
                e,
                Error::QueueOutOfRange {
                    queue: 7,
                    queues: 1,
                    ..
                }
            ),
            "{e}"
        );
        let e = Xsk::open("nonexistent9", 0, &small_config()).expect_err("no such interface");
        assert!(matches!(e, Error::NoSuchInterface { .. }), "{e}");
        // veth has no zero-copy AF_XDP.
        let zc = XskConfig {
            bind: authtime_xdp::BindMode::ZeroCopy,
            ..small_config()
        };
        let e = Xsk::open(&pair.server_if, 0, &zc).expect_err("zero-copy on veth");
        assert!(matches!(e, Error::NoZeroCopy { .. }), "{e}");
        assert!(e.to_string().contains("copy mode instead"), "{e}");
        // The namespace's loopback has no native XDP; generic mode works
        // on any interface.
        let spec = ProgramSpec::udp_ports(&[PORT]).expect("spec");
        let e = Attachment::attach("lo", &spec, AttachMode::Native).expect_err("lo is not native");
        assert!(matches!(e, Error::NoNativeXdp { .. }), "{e}");
        assert!(e.to_string().contains("generic (skb) mode"), "{e}");
        let generic = Attachment::attach("lo", &spec, AttachMode::Generic);
        assert!(generic.is_ok(), "{generic:?}");
    });
}

/// The child side of the SIGKILL test: attach in the namespace and the
/// interface named by AUTHTIME_XDP_CHILD, say so, and wait to be killed.
#[test]
fn sigkill_child() {
    let Ok(what) = std::env::var("AUTHTIME_XDP_CHILD") else {
        return;
    };
    let (ns, ifname) = what.split_once(',').expect("NS,IF");
    support::enter(ns);
    let _att = Attachment::attach(
        ifname,
        &ProgramSpec::udp_ports(&[PORT]).expect("spec"),
        AttachMode::Native,
    )
    .unwrap_or_else(|e| panic!("child attach: {e}"));
    println!("attached");
    std::thread::sleep(Duration::from_secs(30));
}

#[test]
fn a_killed_process_leaves_no_program_behind() {
    skip_unless_root!();
    let pair = Pair::create("kl").expect("namespaces");
    let exe = std::env::current_exe().expect("test binary");
    let mut child = std::process::Command::new(exe)
        .args([
            "sigkill_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            "AUTHTIME_XDP_CHILD",
            format!("{},{}", pair.server, pair.server_if),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn the child");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            // libtest may print "test NAME ... " on the same line first.
            if line.trim_end().ends_with("attached") {
                let _ = tx.send(());
            }
        }
    });
    // Process start, not a network receive: allow for a slow machine.
    let attached = rx.recv_timeout(Duration::from_secs(10));
    if attached.is_err() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the child never attached");
    }
    let state = pair.server_xdp();
    assert!(
        state.contains("xdp"),
        "the child's program is attached: {state:?}"
    );

    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    pair.wait_server_detached()
        .unwrap_or_else(|s| panic!("a program is still attached after SIGKILL: {s}"));

    // And the port can be served again at once.
    let (_att, _xsk) = serve(&pair, AttachMode::Native);
}

/// The child side of the foreign-program test: load the program and pin it
/// at AUTHTIME_XDP_PIN_CHILD (on a bpffs the parent's shell mounted).
#[test]
fn pin_child() {
    let Ok(path) = std::env::var("AUTHTIME_XDP_PIN_CHILD") else {
        return;
    };
    let prog =
        authtime_xdp::LoadedProgram::load(&ProgramSpec::udp_ports(&[PORT]).expect("spec"), 1)
            .unwrap_or_else(|e| panic!("load: {e}"));
    prog.pin(std::path::Path::new(&path))
        .unwrap_or_else(|e| panic!("pin: {e}"));
}

/// A program attached with netlink (as `ip link set dev X xdp obj ...`
/// does) outlives the process that attached it, and blocks ours until it
/// is removed the way the error says.
#[test]
fn a_netlink_attached_program_is_reported_and_removable() {
    skip_unless_root!();
    let pair = Pair::create("nl").expect("namespaces");
    let dir = std::env::temp_dir().join(format!("atx-bpffs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mount point");
    let exe = std::env::current_exe().expect("test binary");
    let prog = dir.join("prog");
    // A private mount namespace: the bpffs mount (and the pin) vanish with
    // the shell; the netlink attachment keeps the program alive.
    let script = format!(
        "mount -t bpf bpf {dir} && {exe} pin_child --exact --test-threads=1 >/dev/null && ip -n {ns} link set dev {ifname} xdp pinned {prog}",
        dir = dir.display(),
        exe = exe.display(),
        ns = pair.server,
        ifname = pair.server_if,
        prog = prog.display(),
    );
    let status = std::process::Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .env("AUTHTIME_XDP_PIN_CHILD", &prog)
        .status();
    let _ = std::fs::remove_dir(&dir);
    match status {
        Ok(s) if s.success() => {}
        other => {
            eprintln!("skipped: cannot attach a program with `ip link ... xdp pinned`: {other:?}");
            return;
        }
    }
    let state = pair.server_xdp();
    assert!(
        state.contains("xdp"),
        "the netlink program outlived its loader: {state:?}"
    );

    let spec = ProgramSpec::udp_ports(&[PORT]).expect("spec");
    let refused = support::run_in(&pair.server, || {
        Attachment::attach(&pair.server_if, &spec, AttachMode::Native)
    });
    let e = refused.expect_err("the hook is taken");
    assert!(matches!(e, Error::AlreadyAttached { .. }), "{e}");
    let fix = format!("ip link set dev {} xdp off", pair.server_if);
    assert!(e.to_string().contains(&fix), "{e}");

    support::ip(&[
        "-n",
        &pair.server,
        "link",
        "set",
        "dev",
        &pair.server_if,
        "xdp",
        "off",
    ])
    .expect("xdp off");
    pair.wait_server_detached()
        .unwrap_or_else(|s| panic!("still attached: {s}"));
    let attached = support::run_in(&pair.server, || {
        Attachment::attach(&pair.server_if, &spec, AttachMode::Native)
    });
    assert!(attached.is_ok(), "{attached:?}");
}

/// Ten bursts of 32 requests through a 64-chunk UMEM with 64-entry rings:
/// every request answered once from its own chunk, every chunk back on the
/// fill ring at the end (ring slots reused five times over).
#[test]
fn bursts_are_answered_and_no_chunk_is_lost_or_doubled() {
    skip_unless_root!();
    let pair = Pair::create("bu").expect("namespaces");
    let (_att, mut xsk) = serve(&pair, AttachMode::Native);
    let client = client_socket(&pair, false);
    let server: SocketAddr = (pair.server_v4, PORT).into();
    for burst in 0..10u32 {
        for i in 0..32u32 {
            client
                .send_to(&(burst * 100 + i).to_be_bytes(), server)
                .expect("send");
        }
        let mut answered = 0;
        let deadline = std::time::Instant::now() + WAIT;
        while answered < 32 && std::time::Instant::now() < deadline {
            xsk.wait(Duration::from_millis(200)).expect("poll");
            let mut addrs = std::collections::HashSet::new();
            for mut frame in xsk.recv_batch(64) {
                assert!(
                    addrs.insert(frame.umem_addr()),
                    "a chunk lent out twice in one batch"
                );
                let req = support::parse_udp(frame.data()).expect("request");
                let mut payload = req.payload.clone();
                payload.reverse();
                let reply = support::reply_frame(&req, &payload);
                frame.buffer_mut()[..reply.len()].copy_from_slice(&reply);
                frame.reply(reply.len());
                answered += 1;
            }
            xsk.tx_submit().expect("submit");
            xsk.reclaim_completions();
        }
        assert_eq!(answered, 32, "burst {burst}: {:?}", xsk.stats());
        let mut seen = std::collections::HashSet::new();
        for _ in 0..32 {
            let mut buf = [0u8; 8];
            let (n, _) = client.recv_from(&mut buf).expect("a reply");
            assert_eq!(n, 4);
            let mut b = [buf[0], buf[1], buf[2], buf[3]];
            b.reverse();
            let v = u32::from_be_bytes(b);
            assert_eq!(v / 100, burst);
            assert!(seen.insert(v), "reply {v} twice");
        }
    }
    let deadline = std::time::Instant::now() + WAIT;
    while xsk.chunk_census().3 > 0 && std::time::Instant::now() < deadline {
        xsk.reclaim_completions();
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(xsk.chunk_census(), (0, 64, 0, 0));
    let stats = xsk.stats().expect("stats");
    assert_eq!(
        (
            stats.refused_descs,
            stats.rx_invalid_descs,
            stats.tx_invalid_descs
        ),
        (0, 0, 0)
    );
}

/// Linux's version as (major, minor), from uname(2)'s release.
fn kernel_version() -> Option<(u32, u32)> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let mut parts = release.trim().split(['.', '-']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// A reply sent with a timestamp request comes back from the completion
/// ring with the time the kernel handed it to veth: after the send began,
/// before the kick returned.
#[test]
fn a_stamped_frame_comes_back_with_its_hand_over_time() {
    skip_unless_root!();
    let pair = Pair::create("ts").expect("namespaces");
    let (_att, mut xsk) = serve(&pair, AttachMode::Native);
    if !xsk.tx_timestamps() {
        // Transmit metadata came with Linux 6.11 (XDP_UMEM_TX_METADATA_LEN).
        assert!(
            kernel_version().is_some_and(|v| v < (6, 11)),
            "no transmit metadata on Linux {:?}",
            kernel_version()
        );
        eprintln!("skipped: the kernel has no AF_XDP transmit metadata");
        return;
    }
    let client = client_socket(&pair, false);
    let server: SocketAddr = (pair.server_v4, PORT).into();
    let mut times = Vec::new();
    for text in [&b"one"[..], b"two", b"three"] {
        client.send_to(text, server).expect("send");
        assert!(xsk.wait(WAIT).expect("poll"), "no frame");
        let mut batch = xsk.recv_batch(16);
        let mut frame = batch.next().expect("a frame");
        assert!(frame.can_stamp());
        let request = support::parse_udp(frame.data()).expect("a UDP frame");
        let reply = support::reply_frame(&request, text);
        frame.buffer_mut()[..reply.len()].copy_from_slice(&reply);
        let before = SystemTime::now();
        assert!(frame.send_stamped(reply.len()).expect("kick"), "stamped");
        let after = SystemTime::now();
        drop(batch);
        let mut buf = [0u8; 16];
        let (n, _) = client.recv_from(&mut buf).expect("the reply");
        assert_eq!(&buf[..n], text);
        let mut completed = Vec::new();
        let deadline = std::time::Instant::now() + WAIT;
        while completed.is_empty() && std::time::Instant::now() < deadline {
            xsk.reclaim_completions_with(|c| completed.push((c.frame.to_vec(), c.sent)));
            std::thread::sleep(Duration::from_millis(1));
        }
        let [(sent_frame, sent)] = completed.as_slice() else {
            panic!(
                "{} completions with a time: {:?}",
                completed.len(),
                xsk.stats()
            );
        };
        assert_eq!(sent_frame, &reply, "the frame as sent");
        // TAI converted back to real time: within the send, give or take
        // the rounding of the TAI offset's reading (none: whole seconds).
        assert!(
            *sent >= before && *sent <= after,
            "handed over at {sent:?}, sent between {before:?} and {after:?}"
        );
        times.push(*sent);
    }
    assert!(times.windows(2).all(|w| w[0] < w[1]));
    let stats = xsk.stats().expect("stats");
    assert_eq!(
        (
            stats.tx_timestamps,
            stats.tx_timestamps_late,
            stats.tx_timestamps_missing
        ),
        (3, 0, 0)
    );
    // A frame sent without a request is not handed back.
    client.send_to(b"plain", server).expect("send");
    assert!(xsk.wait(WAIT).expect("poll"), "no frame");
    let mut batch = xsk.recv_batch(16);
    let mut frame = batch.next().expect("a frame");
    let request = support::parse_udp(frame.data()).expect("a UDP frame");
    let reply = support::reply_frame(&request, b"plain");
    frame.buffer_mut()[..reply.len()].copy_from_slice(&reply);
    assert!(frame.send(reply.len()).expect("kick"));
    drop(batch);
    let mut buf = [0u8; 16];
    client.recv_from(&mut buf).expect("the reply");
    // The first call books the chunk as being sent, then reads completions.
    let mut handed = 0;
    xsk.reclaim_completions_with(|_| handed += 1);
    let deadline = std::time::Instant::now() + WAIT;
    while xsk.chunk_census().3 > 0 && std::time::Instant::now() < deadline {
        xsk.reclaim_completions_with(|_| handed += 1);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(handed, 0);
    assert_eq!(xsk.chunk_census(), (0, 64, 0, 0));
}
