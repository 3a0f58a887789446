//! The XDP program: which frames go to the AF_XDP socket, and the receive
//! timestamp it leaves in front of them.
//!
//! In C it would read:
//!
//! ```c
//! int xdp(struct xdp_md *ctx) {
//!     parse Ethernet (no VLAN tag), then
//!       IPv4 with IHL 5, not a fragment, protocol UDP, [destination == A4], or
//!       IPv6 with next header UDP, [destination == A6];
//!     if (UDP destination port is not one of PORTS) return XDP_PASS;
//!     u64 now = bpf_ktime_get_tai_ns();
//!     if (bpf_xdp_adjust_meta(ctx, -META_LEN) == 0 && data_meta + META_LEN <= data)
//!         *(struct meta *)data_meta = { now, META_MAGIC, 0 };
//!     return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
//! }
//! ```
//!
//! Everything else (ARP, ICMP, TCP such as NTS-KE, other ports, VLAN-tagged
//! frames, IP options, fragments, IPv6 extension headers) is `XDP_PASS`: the
//! kernel's stack sees it as if no program were there. A queue with no
//! socket in the map passes too (`bpf_redirect_map`'s fallback action).
//!
//! The ports and addresses are immediates in the instructions, fixed when
//! the program is built. The map is referred to by file descriptor, which
//! the kernel turns into the map's address when it loads the program.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::Error;
use crate::insn::{self, Insn, Reg, Size};

/// The most UDP ports one program serves.
pub const MAX_PORTS: usize = 4;

/// Bytes of metadata the program writes in front of a redirected frame:
/// the `bpf_ktime_get_tai_ns()` reading (8 bytes), [`META_MAGIC`] (4 bytes)
/// and 4 zero bytes. The magic tells a real timestamp from whatever the
/// bytes before a frame held when a driver has no metadata room.
pub const META_LEN: usize = 16;

/// The 32-bit value after the timestamp in the metadata ("ATXM" in memory
/// on a little-endian host).
pub const META_MAGIC: u32 = 0x4d58_5441;

/// The license string given to the kernel. Every helper the program calls
/// (`bpf_redirect_map`, `bpf_xdp_adjust_meta`, `bpf_ktime_get_tai_ns`) is
/// open to programs of any license (none is `gpl_only` in the kernel), so
/// the program carries the crate's own license.
pub(crate) const LICENSE: &std::ffi::CStr = c"MIT OR Apache-2.0";

/// Which destination addresses of one IP family the program takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family<A> {
    /// None: every frame of this family passes to the kernel's stack.
    Off,
    /// Any destination address.
    AnyAddress,
    /// Only this destination address.
    Address(A),
}

/// What the XDP program serves: UDP ports, and per family which
/// destination addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramSpec {
    ports: Vec<u16>,
    ipv4: Family<Ipv4Addr>,
    ipv6: Family<Ipv6Addr>,
}

impl ProgramSpec {
    /// UDP to any of `ports` (1 to [`MAX_PORTS`]), any address, both IP
    /// families.
    ///
    /// # Errors
    /// [`Error::InvalidProgram`] for no ports, more than [`MAX_PORTS`], or
    /// port 0.
    pub fn udp_ports(ports: &[u16]) -> Result<Self, Error> {
        if ports.is_empty() {
            return Err(Error::InvalidProgram("no UDP port to serve"));
        }
        if ports.len() > MAX_PORTS {
            return Err(Error::InvalidProgram("more than 4 UDP ports"));
        }
        if ports.contains(&0) {
            return Err(Error::InvalidProgram("UDP port 0"));
        }
        let mut ports = ports.to_vec();
        ports.sort_unstable();
        ports.dedup();
        Ok(Self {
            ports,
            ipv4: Family::AnyAddress,
            ipv6: Family::AnyAddress,
        })
    }

    /// Which IPv4 destinations to take.
    #[must_use]
    pub fn ipv4(mut self, which: Family<Ipv4Addr>) -> Self {
        self.ipv4 = which;
        self
    }

    /// Which IPv6 destinations to take.
    #[must_use]
    pub fn ipv6(mut self, which: Family<Ipv6Addr>) -> Self {
        self.ipv6 = which;
        self
    }

    /// The served ports.
    #[must_use]
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The program's instructions, with `map_fd` as the XSKMAP.
    pub(crate) fn instructions(&self, map_fd: i32) -> Result<Vec<Insn>, Error> {
        if self.ipv4 == Family::Off && self.ipv6 == Family::Off {
            return Err(Error::InvalidProgram("both IP families are off"));
        }
        let mut a = Asm::default();
        emit_ethernet(&mut a, self);
        if self.ipv4 != Family::Off {
            emit_ipv4(&mut a, self.ipv4);
        }
        if self.ipv6 != Family::Off {
            emit_ipv6(&mut a, self.ipv6);
        }
        a.bind(Label::Ports);
        for &port in &self.ports {
            a.jump(insn::jeq_imm(Reg::R5, be16(port), 0), Label::Matched);
        }
        a.jump(insn::ja(0), Label::Pass);
        a.bind(Label::Matched);
        emit_stamp_and_redirect(&mut a, map_fd);
        a.bind(Label::Pass);
        a.emit(insn::mov64_imm(Reg::R0, XDP_PASS));
        a.emit(insn::exit());
        a.finish()
    }
}

/// `enum xdp_action` in the kernel's UAPI.
const XDP_PASS: i32 = 2;
/// Helper numbers in the kernel's `enum bpf_func_id`
/// (include/uapi/linux/bpf.h).
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const BPF_FUNC_XDP_ADJUST_META: i32 = 54;
const BPF_FUNC_KTIME_GET_TAI_NS: i32 = 208;
/// Offsets in `struct xdp_md`.
const MD_DATA: i16 = 0;
const MD_DATA_END: i16 = 4;
const MD_DATA_META: i16 = 8;
const MD_RX_QUEUE_INDEX: i16 = 16;
/// Frame layout: Ethernet header, then IPv4 (20 bytes, no options) or IPv6
/// (40 bytes), then UDP (8 bytes).
const ETH_LEN: i16 = 14;
const ETH_TYPE: i16 = 12;
const IPV4_LEN: i16 = 20;
const IPV6_LEN: i16 = 40;
const UDP_LEN: i16 = 8;
const IPPROTO_UDP: i32 = 17;

/// A big-endian 16-bit field as a 2-byte load puts it in a register on
/// this host (the program runs where it is built).
fn be16(v: u16) -> i32 {
    i32::from(u16::from_ne_bytes(v.to_be_bytes()))
}

/// A big-endian 4-byte field as a 4-byte load puts it in a register, for a
/// 32-bit compare.
fn be32(bytes: [u8; 4]) -> i32 {
    i32::from_ne_bytes(bytes)
}

/// Ctx in R6, data in R2, data_end in R3; the EtherType picks the family.
fn emit_ethernet(a: &mut Asm, spec: &ProgramSpec) {
    a.emit(insn::mov64_reg(Reg::R6, Reg::R1));
    a.emit(insn::load(Size::W, Reg::R2, Reg::R6, MD_DATA));
    a.emit(insn::load(Size::W, Reg::R3, Reg::R6, MD_DATA_END));
    a.emit(insn::mov64_reg(Reg::R4, Reg::R2));
    a.emit(insn::add64_imm(Reg::R4, ETH_LEN.into()));
    a.jump(insn::jgt_reg(Reg::R4, Reg::R3, 0), Label::Pass);
    a.emit(insn::load(Size::H, Reg::R5, Reg::R2, ETH_TYPE));
    if spec.ipv4 != Family::Off {
        a.jump(insn::jeq_imm(Reg::R5, be16(0x0800), 0), Label::Ipv4);
    }
    if spec.ipv6 != Family::Off {
        a.jump(insn::jeq_imm(Reg::R5, be16(0x86dd), 0), Label::Ipv6);
    }
    a.jump(insn::ja(0), Label::Pass);
}

/// IPv4 without options, not a fragment, UDP; the destination port in R5.
fn emit_ipv4(a: &mut Asm, which: Family<Ipv4Addr>) {
    let ip = ETH_LEN;
    a.bind(Label::Ipv4);
    a.emit(insn::mov64_reg(Reg::R4, Reg::R2));
    a.emit(insn::add64_imm(Reg::R4, (ip + IPV4_LEN + UDP_LEN).into()));
    a.jump(insn::jgt_reg(Reg::R4, Reg::R3, 0), Label::Pass);
    // Version 4, header length 5 words.
    a.emit(insn::load(Size::B, Reg::R5, Reg::R2, ip));
    a.jump(insn::jne_imm(Reg::R5, 0x45, 0), Label::Pass);
    // More-fragments flag or a fragment offset: a fragment.
    a.emit(insn::load(Size::H, Reg::R5, Reg::R2, ip + 6));
    a.jump(insn::jset_imm(Reg::R5, be16(0x3fff), 0), Label::Pass);
    a.emit(insn::load(Size::B, Reg::R5, Reg::R2, ip + 9));
    a.jump(insn::jne_imm(Reg::R5, IPPROTO_UDP, 0), Label::Pass);
    if let Family::Address(addr) = which {
        a.emit(insn::load(Size::W, Reg::R5, Reg::R2, ip + 16));
        a.jump(
            insn::jne32_imm(Reg::R5, be32(addr.octets()), 0),
            Label::Pass,
        );
    }
    a.emit(insn::load(Size::H, Reg::R5, Reg::R2, ip + IPV4_LEN + 2));
    a.jump(insn::ja(0), Label::Ports);
}

/// IPv6 whose next header is UDP; the destination port in R5.
fn emit_ipv6(a: &mut Asm, which: Family<Ipv6Addr>) {
    let ip = ETH_LEN;
    a.bind(Label::Ipv6);
    a.emit(insn::mov64_reg(Reg::R4, Reg::R2));
    a.emit(insn::add64_imm(Reg::R4, (ip + IPV6_LEN + UDP_LEN).into()));
    a.jump(insn::jgt_reg(Reg::R4, Reg::R3, 0), Label::Pass);
    a.emit(insn::load(Size::B, Reg::R5, Reg::R2, ip + 6));
    a.jump(insn::jne_imm(Reg::R5, IPPROTO_UDP, 0), Label::Pass);
    if let Family::Address(addr) = which {
        let octets = addr.octets();
        for (i, word) in (0i16..).zip(octets.chunks_exact(4)) {
            let word = [word[0], word[1], word[2], word[3]];
            a.emit(insn::load(Size::W, Reg::R5, Reg::R2, ip + 24 + 4 * i));
            a.jump(insn::jne32_imm(Reg::R5, be32(word), 0), Label::Pass);
        }
    }
    a.emit(insn::load(Size::H, Reg::R5, Reg::R2, ip + IPV6_LEN + 2));
    // Falls through to the port checks.
}

/// The timestamp (taken first, nearest the frame's arrival), the metadata,
/// and the redirect.
fn emit_stamp_and_redirect(a: &mut Asm, map_fd: i32) {
    let meta_len = META_LEN as i16;
    a.emit(insn::call(BPF_FUNC_KTIME_GET_TAI_NS));
    a.emit(insn::mov64_reg(Reg::R7, Reg::R0));
    a.emit(insn::mov64_reg(Reg::R1, Reg::R6));
    a.emit(insn::mov64_imm(Reg::R2, -i32::from(meta_len)));
    a.emit(insn::call(BPF_FUNC_XDP_ADJUST_META));
    a.jump(insn::jne_imm(Reg::R0, 0, 0), Label::Redirect);
    // The helper moved the packet pointers: load them again, and show the
    // verifier that the metadata fits before data.
    a.emit(insn::load(Size::W, Reg::R2, Reg::R6, MD_DATA_META));
    a.emit(insn::load(Size::W, Reg::R3, Reg::R6, MD_DATA));
    a.emit(insn::mov64_reg(Reg::R4, Reg::R2));
    a.emit(insn::add64_imm(Reg::R4, meta_len.into()));
    a.jump(insn::jgt_reg(Reg::R4, Reg::R3, 0), Label::Redirect);
    a.emit(insn::store_reg(Size::Dw, Reg::R2, 0, Reg::R7));
    a.emit(insn::store_imm(Size::W, Reg::R2, 8, META_MAGIC as i32));
    a.emit(insn::store_imm(Size::W, Reg::R2, 12, 0));
    a.bind(Label::Redirect);
    for slot in insn::load_map_fd(Reg::R1, map_fd) {
        a.emit(slot);
    }
    a.emit(insn::load(Size::W, Reg::R2, Reg::R6, MD_RX_QUEUE_INDEX));
    a.emit(insn::mov64_imm(Reg::R3, XDP_PASS));
    a.emit(insn::call(BPF_FUNC_REDIRECT_MAP));
    a.emit(insn::exit());
}

/// Jump targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    Ipv4,
    Ipv6,
    Ports,
    Matched,
    Redirect,
    Pass,
}

const LABELS: usize = 6;

/// Instructions with forward jumps to labels, resolved by [`Asm::finish`].
#[derive(Default)]
struct Asm {
    insns: Vec<Insn>,
    targets: [Option<usize>; LABELS],
    jumps: Vec<(usize, Label)>,
}

impl Asm {
    fn emit(&mut self, insn: Insn) {
        self.insns.push(insn);
    }

    /// Emits the branch `insn`, its offset to be that of `label`.
    fn jump(&mut self, insn: Insn, label: Label) {
        debug_assert!(insn.is_jump());
        self.jumps.push((self.insns.len(), label));
        self.insns.push(insn);
    }

    fn bind(&mut self, label: Label) {
        self.targets[label as usize] = Some(self.insns.len());
    }

    fn finish(mut self) -> Result<Vec<Insn>, Error> {
        for &(at, label) in &self.jumps {
            let target = self.targets[label as usize]
                .ok_or(Error::InvalidProgram("a jump to a label never placed"))?;
            // Offsets count from the instruction after the jump.
            let off =
                i64::try_from(target).unwrap_or(i64::MAX) - i64::try_from(at + 1).unwrap_or(0);
            self.insns[at].off =
                i16::try_from(off).map_err(|_| Error::InvalidProgram("a jump too far"))?;
        }
        Ok(self.insns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jump_targets(insns: &[Insn]) -> Vec<usize> {
        insns
            .iter()
            .enumerate()
            .filter(|(_, i)| i.is_jump())
            .map(|(at, i)| (at as i64 + 1 + i64::from(i.off)) as usize)
            .collect()
    }

    #[test]
    fn every_jump_lands_inside_the_program_and_forward() {
        let spec = ProgramSpec::udp_ports(&[123, 2002])
            .expect("spec")
            .ipv4(Family::Address(Ipv4Addr::new(192, 0, 2, 1)))
            .ipv6(Family::Address("2001:db8::1".parse().expect("v6")));
        let insns = spec.instructions(7).expect("program");
        for (at, target) in insns
            .iter()
            .enumerate()
            .filter(|(_, i)| i.is_jump())
            .map(|(at, _)| at)
            .zip(jump_targets(&insns))
        {
            assert!(
                target > at && target < insns.len(),
                "jump at {at} to {target}"
            );
        }
        // The program ends with `r0 = XDP_PASS; exit`.
        let n = insns.len();
        assert_eq!(insns[n - 2], insn::mov64_imm(Reg::R0, XDP_PASS));
        assert_eq!(insns[n - 1], insn::exit());
    }

    #[test]
    fn ports_are_immediates_in_network_order() {
        let insns = ProgramSpec::udp_ports(&[123, 4460])
            .expect("spec")
            .instructions(3)
            .expect("program");
        let port_imms: Vec<i32> = insns
            .iter()
            .filter(|i| i.code == 0x15 && i.dst == Reg::R5 as u8)
            .map(|i| i.imm)
            .collect();
        // The EtherType compares come first, then one per port.
        assert!(
            port_imms.ends_with(&[be16(123), be16(4460)]),
            "{port_imms:?}"
        );
        if cfg!(target_endian = "little") {
            assert_eq!(be16(123), 0x7b00);
            assert_eq!(be16(0x0800), 0x0008);
        }
    }

    #[test]
    fn the_map_fd_is_a_pseudo_map_load() {
        let insns = ProgramSpec::udp_ports(&[123])
            .expect("spec")
            .instructions(42)
            .expect("program");
        let at = insns
            .iter()
            .position(|i| i.code == 0x18)
            .expect("a 64-bit immediate load");
        assert_eq!((insns[at].src, insns[at].imm), (insn::PSEUDO_MAP_FD, 42));
    }

    #[test]
    fn a_family_that_is_off_emits_no_code_for_it() {
        let both = ProgramSpec::udp_ports(&[123]).expect("spec");
        let v4 = both.clone().ipv6(Family::Off);
        let n_both = both.instructions(3).expect("both").len();
        let n_v4 = v4.instructions(3).expect("v4").len();
        assert!(n_v4 < n_both);
        assert!(matches!(
            v4.ipv4(Family::Off).instructions(3),
            Err(Error::InvalidProgram(_))
        ));
    }

    #[test]
    fn bad_port_lists_are_refused() {
        assert!(ProgramSpec::udp_ports(&[]).is_err());
        assert!(ProgramSpec::udp_ports(&[1, 2, 3, 4, 5]).is_err());
        assert!(ProgramSpec::udp_ports(&[0]).is_err());
        assert_eq!(
            ProgramSpec::udp_ports(&[1, 2, 3, 4])
                .expect("4")
                .ports()
                .len(),
            4
        );
    }
}
