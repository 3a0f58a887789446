//! The XDP program run by the kernel itself (BPF_PROG_TEST_RUN) on frames
//! made here: which it takes (metadata written) and which it passes (no
//! metadata). No interface is involved; needs root for bpf(2).

mod support;

use std::net::{Ipv4Addr, Ipv6Addr};

use authtime_xdp::{Family, LoadedProgram, META_LEN, META_MAGIC, ProgramSpec, TaiOffset};

const XDP_PASS: u32 = 2;
const A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const B: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn v4(dst: Ipv4Addr, port: u16) -> Vec<u8> {
    support::udp4_frame(
        A,
        B,
        (Ipv4Addr::new(10, 202, 0, 2), 40000),
        (dst, port),
        b"hello",
    )
}

fn v6(dst: Ipv6Addr, port: u16) -> Vec<u8> {
    support::udp6_frame(
        A,
        B,
        ("fd00:202::2".parse().expect("v6"), 40000),
        (dst, port),
        b"hello",
    )
}

/// Whether the program took `frame` (wrote its metadata), checking that it
/// never changes the frame or drops it.
fn taken(prog: &LoadedProgram, frame: &[u8]) -> bool {
    let v = prog.test_run(frame).expect("test run");
    // An empty XSKMAP slot: bpf_redirect_map falls back to XDP_PASS.
    assert_eq!(v.action, XDP_PASS);
    assert_eq!(v.frame, frame, "the program changed the frame");
    match v.meta.len() {
        0 => false,
        META_LEN => {
            let magic = u32::from_ne_bytes(v.meta[8..12].try_into().expect("4 bytes"));
            assert_eq!(magic, META_MAGIC);
            true
        }
        n => panic!("{n} bytes of metadata"),
    }
}

#[test]
fn served_udp_is_taken_and_everything_else_passes() {
    skip_unless_root!();
    let prog =
        LoadedProgram::load(&ProgramSpec::udp_ports(&[123, 4460]).expect("spec"), 1).expect("load");
    let server = Ipv4Addr::new(10, 202, 0, 1);
    let server6: Ipv6Addr = "fd00:202::1".parse().expect("v6");
    assert!(taken(&prog, &v4(server, 123)));
    assert!(taken(&prog, &v4(server, 4460)));
    assert!(taken(&prog, &v6(server6, 123)));
    assert!(!taken(&prog, &v4(server, 124)));
    assert!(!taken(&prog, &v6(server6, 53)));

    // TCP to the served port (NTS-KE's 4460 is TCP): protocol 6.
    let mut tcp = v4(server, 4460);
    tcp[14 + 9] = 6;
    assert!(!taken(&prog, &tcp));
    // A first fragment (more-fragments flag) and a later one (offset 8).
    let mut first = v4(server, 123);
    first[14 + 6] = 0x20;
    assert!(!taken(&prog, &first));
    let mut later = v4(server, 123);
    later[14 + 6] = 0x00;
    later[14 + 7] = 0x01;
    assert!(!taken(&prog, &later));
    // Don't-fragment alone is not a fragment.
    let mut df = v4(server, 123);
    df[14 + 6] = 0x40;
    assert!(taken(&prog, &df));
    // IPv4 options (IHL 6).
    let mut options = v4(server, 123);
    options[14] = 0x46;
    assert!(!taken(&prog, &options));
    // VLAN-tagged: 802.1Q in front of the IPv4 EtherType.
    let plain = v4(server, 123);
    let mut vlan = plain[..12].to_vec();
    vlan.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
    vlan.extend_from_slice(&plain[12..]);
    assert!(!taken(&prog, &vlan));
    // ARP.
    let mut arp = plain.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert!(!taken(&prog, &arp));
    // IPv6 with a hop-by-hop header first.
    let mut hbh = v6(server6, 123);
    hbh[14 + 6] = 0;
    assert!(!taken(&prog, &hbh));
    // Cut short of the UDP header, for both families.
    assert!(!taken(&prog, &plain[..14 + 20 + 7]));
    assert!(!taken(&prog, &v6(server6, 123)[..14 + 40 + 7]));
    assert!(!taken(&prog, &plain[..20]));
}

#[test]
fn an_address_filter_takes_only_that_address() {
    skip_unless_root!();
    // 200.1.2.3 has its top bit set: a 64-bit compare with a sign-extended
    // immediate would miss it.
    let mine = Ipv4Addr::new(200, 1, 2, 3);
    let mine6: Ipv6Addr = "fd00:202::1".parse().expect("v6");
    let spec = ProgramSpec::udp_ports(&[123])
        .expect("spec")
        .ipv4(Family::Address(mine))
        .ipv6(Family::Address(mine6));
    let prog = LoadedProgram::load(&spec, 1).expect("load");
    assert!(taken(&prog, &v4(mine, 123)));
    assert!(!taken(&prog, &v4(Ipv4Addr::new(200, 1, 2, 4), 123)));
    assert!(!taken(&prog, &v4(Ipv4Addr::new(10, 202, 0, 1), 123)));
    assert!(taken(&prog, &v6(mine6, 123)));
    assert!(!taken(&prog, &v6("fd00:202::3".parse().expect("v6"), 123)));
    assert!(!taken(&prog, &v6("fd01:202::1".parse().expect("v6"), 123)));
}

#[test]
fn a_family_turned_off_passes() {
    skip_unless_root!();
    let spec = ProgramSpec::udp_ports(&[123])
        .expect("spec")
        .ipv6(Family::Off);
    let prog = LoadedProgram::load(&spec, 1).expect("load");
    assert!(taken(&prog, &v4(Ipv4Addr::new(10, 202, 0, 1), 123)));
    assert!(!taken(&prog, &v6("fd00:202::1".parse().expect("v6"), 123)));
}

#[test]
fn the_metadata_holds_the_tai_time_of_the_run() {
    skip_unless_root!();
    let prog =
        LoadedProgram::load(&ProgramSpec::udp_ports(&[123]).expect("spec"), 1).expect("load");
    let before = std::time::SystemTime::now();
    let v = prog
        .test_run(&v4(Ipv4Addr::new(10, 202, 0, 1), 123))
        .expect("run");
    let after = std::time::SystemTime::now();
    let tai = u64::from_ne_bytes(v.meta[..8].try_into().expect("8 bytes"));
    let at = TaiOffset::read().expect("offset").tai_to_system_time(tai);
    assert!(
        before <= at && at <= after,
        "{before:?} <= {at:?} <= {after:?}"
    );
}
