//! eBPF instructions, one constructor per opcode the XDP program uses, and
//! their encoding as the kernel reads them (`struct bpf_insn` in
//! `include/uapi/linux/bpf.h`; the instruction set is documented in the
//! kernel's `Documentation/bpf/standardization/instruction-set.rst`).
//!
//! An instruction is 8 bytes: an opcode byte, a byte holding the destination
//! and source registers (4 bits each), a signed 16-bit offset and a signed
//! 32-bit immediate, the multi-byte fields in the host's byte order. The one
//! exception used here, the 64-bit immediate load, takes two slots.
//!
//! Written by hand rather than taken from a crate: the program is thirty-odd
//! instructions, and the crates that assemble eBPF (aya, rbpf) are much
//! larger than this file.

/// An eBPF register. R0 holds return values, R1 to R5 are helper-call
/// arguments (and are clobbered by calls), R6 to R9 survive calls, R10 is
/// the read-only frame pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Reg {
    R0 = 0,
    R1 = 1,
    R2 = 2,
    R3 = 3,
    R4 = 4,
    R5 = 5,
    R6 = 6,
    R7 = 7,
}

/// Operand sizes of loads and stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Size {
    /// 1 byte (`BPF_B`).
    B,
    /// 2 bytes (`BPF_H`).
    H,
    /// 4 bytes (`BPF_W`).
    W,
    /// 8 bytes (`BPF_DW`).
    Dw,
}

impl Size {
    const fn bits(self) -> u8 {
        match self {
            Self::W => 0x00,
            Self::H => 0x08,
            Self::B => 0x10,
            Self::Dw => 0x18,
        }
    }
}

// Instruction classes (the low 3 bits of the opcode).
const CLASS_LD: u8 = 0x00;
const CLASS_LDX: u8 = 0x01;
const CLASS_ST: u8 = 0x02;
const CLASS_STX: u8 = 0x03;
const CLASS_JMP: u8 = 0x05;
const CLASS_JMP32: u8 = 0x06;
const CLASS_ALU64: u8 = 0x07;
// Source operand: the immediate (K) or the source register (X).
const SRC_K: u8 = 0x00;
const SRC_X: u8 = 0x08;
// Memory modes.
const MODE_IMM: u8 = 0x00;
const MODE_MEM: u8 = 0x60;
// ALU operations.
const ALU_ADD: u8 = 0x00;
const ALU_MOV: u8 = 0xb0;
// Jump operations.
const JMP_JA: u8 = 0x00;
const JMP_JEQ: u8 = 0x10;
const JMP_JGT: u8 = 0x20;
const JMP_JSET: u8 = 0x40;
const JMP_JNE: u8 = 0x50;
const JMP_CALL: u8 = 0x80;
const JMP_EXIT: u8 = 0x90;

/// `src_reg` of a 64-bit immediate load whose immediate is a map's file
/// descriptor: the verifier replaces it with the map's address.
pub(crate) const PSEUDO_MAP_FD: u8 = 1;

/// One instruction slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Insn {
    pub(crate) code: u8,
    pub(crate) dst: u8,
    pub(crate) src: u8,
    pub(crate) off: i16,
    pub(crate) imm: i32,
}

impl Insn {
    const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Self {
        Self {
            code,
            dst,
            src,
            off,
            imm,
        }
    }

    /// The 8 bytes the kernel reads, in this host's byte order.
    pub(crate) fn encode(self) -> [u8; 8] {
        let regs = if cfg!(target_endian = "little") {
            (self.src << 4) | (self.dst & 0x0f)
        } else {
            (self.dst << 4) | (self.src & 0x0f)
        };
        let off = self.off.to_ne_bytes();
        let imm = self.imm.to_ne_bytes();
        [
            self.code, regs, off[0], off[1], imm[0], imm[1], imm[2], imm[3],
        ]
    }

    /// Whether this is a jump whose offset a label fills in.
    pub(crate) fn is_jump(self) -> bool {
        let class = self.code & 0x07;
        (class == CLASS_JMP || class == CLASS_JMP32)
            && !matches!(self.code & 0xf0, JMP_CALL | JMP_EXIT)
    }
}

/// `dst = imm` (64-bit, the immediate sign-extended).
pub(crate) const fn mov64_imm(dst: Reg, imm: i32) -> Insn {
    Insn::new(CLASS_ALU64 | ALU_MOV | SRC_K, dst as u8, 0, 0, imm)
}

/// `dst = src` (64-bit).
pub(crate) const fn mov64_reg(dst: Reg, src: Reg) -> Insn {
    Insn::new(CLASS_ALU64 | ALU_MOV | SRC_X, dst as u8, src as u8, 0, 0)
}

/// `dst += imm` (64-bit).
pub(crate) const fn add64_imm(dst: Reg, imm: i32) -> Insn {
    Insn::new(CLASS_ALU64 | ALU_ADD | SRC_K, dst as u8, 0, 0, imm)
}

/// `dst = *(size *)(src + off)`, zero-extended.
pub(crate) const fn load(size: Size, dst: Reg, src: Reg, off: i16) -> Insn {
    Insn::new(
        CLASS_LDX | MODE_MEM | size.bits(),
        dst as u8,
        src as u8,
        off,
        0,
    )
}

/// `*(size *)(dst + off) = src`.
pub(crate) const fn store_reg(size: Size, dst: Reg, off: i16, src: Reg) -> Insn {
    Insn::new(
        CLASS_STX | MODE_MEM | size.bits(),
        dst as u8,
        src as u8,
        off,
        0,
    )
}

/// `*(size *)(dst + off) = imm`.
pub(crate) const fn store_imm(size: Size, dst: Reg, off: i16, imm: i32) -> Insn {
    Insn::new(CLASS_ST | MODE_MEM | size.bits(), dst as u8, 0, off, imm)
}

/// `dst = &map` for the map whose file descriptor is `fd`: a 64-bit
/// immediate load (two slots) with `src_reg` [`PSEUDO_MAP_FD`].
pub(crate) const fn load_map_fd(dst: Reg, fd: i32) -> [Insn; 2] {
    [
        Insn::new(
            CLASS_LD | MODE_IMM | Size::Dw.bits(),
            dst as u8,
            PSEUDO_MAP_FD,
            0,
            fd,
        ),
        Insn::new(0, 0, 0, 0, 0),
    ]
}

/// `goto +off`.
pub(crate) const fn ja(off: i16) -> Insn {
    Insn::new(CLASS_JMP | JMP_JA, 0, 0, off, 0)
}

/// `if dst == imm goto +off` (64-bit compare, the immediate sign-extended).
pub(crate) const fn jeq_imm(dst: Reg, imm: i32, off: i16) -> Insn {
    Insn::new(CLASS_JMP | JMP_JEQ | SRC_K, dst as u8, 0, off, imm)
}

/// `if dst != imm goto +off` (64-bit compare, the immediate sign-extended).
pub(crate) const fn jne_imm(dst: Reg, imm: i32, off: i16) -> Insn {
    Insn::new(CLASS_JMP | JMP_JNE | SRC_K, dst as u8, 0, off, imm)
}

/// `if (u32)dst != (u32)imm goto +off`: the 32-bit compare, for addresses
/// whose top bit would make a sign-extended 64-bit compare fail.
pub(crate) const fn jne32_imm(dst: Reg, imm: i32, off: i16) -> Insn {
    Insn::new(CLASS_JMP32 | JMP_JNE | SRC_K, dst as u8, 0, off, imm)
}

/// `if dst > src goto +off` (unsigned 64-bit): the packet bounds check.
pub(crate) const fn jgt_reg(dst: Reg, src: Reg, off: i16) -> Insn {
    Insn::new(CLASS_JMP | JMP_JGT | SRC_X, dst as u8, src as u8, off, 0)
}

/// `if dst & imm goto +off`.
pub(crate) const fn jset_imm(dst: Reg, imm: i32, off: i16) -> Insn {
    Insn::new(CLASS_JMP | JMP_JSET | SRC_K, dst as u8, 0, off, imm)
}

/// `r0 = helper(r1, ..., r5)` for the helper numbered `id` in the kernel's
/// `enum bpf_func_id`.
pub(crate) const fn call(id: i32) -> Insn {
    Insn::new(CLASS_JMP | JMP_CALL, 0, 0, 0, id)
}

/// `return r0`.
pub(crate) const fn exit() -> Insn {
    Insn::new(CLASS_JMP | JMP_EXIT, 0, 0, 0, 0)
}

#[cfg(all(test, target_endian = "little"))]
mod tests {
    use super::*;

    // Expected bytes as `llvm-objdump -d` prints them for the same
    // instructions compiled by clang (-target bpfel), and as the kernel's
    // own macros in include/linux/filter.h (BPF_MOV64_IMM, BPF_LDX_MEM,
    // BPF_LD_MAP_FD, ...) lay them out.

    #[test]
    fn mov_and_exit_encode_as_clang_emits_them() {
        assert_eq!(
            mov64_imm(Reg::R0, 2).encode(),
            [0xb7, 0x00, 0, 0, 2, 0, 0, 0]
        );
        assert_eq!(
            mov64_reg(Reg::R6, Reg::R1).encode(),
            [0xbf, 0x16, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(exit().encode(), [0x95, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn negative_immediates_and_offsets_are_twos_complement() {
        assert_eq!(
            mov64_imm(Reg::R2, -16).encode(),
            [0xb7, 0x02, 0, 0, 0xf0, 0xff, 0xff, 0xff]
        );
        assert_eq!(ja(-1).encode(), [0x05, 0, 0xff, 0xff, 0, 0, 0, 0]);
    }

    #[test]
    fn loads_and_stores_encode_size_and_registers() {
        // r2 = *(u32 *)(r1 + 0): xdp_md->data.
        assert_eq!(
            load(Size::W, Reg::R2, Reg::R1, 0).encode(),
            [0x61, 0x12, 0, 0, 0, 0, 0, 0]
        );
        // r5 = *(u16 *)(r2 + 12): the EtherType.
        assert_eq!(
            load(Size::H, Reg::R5, Reg::R2, 12).encode(),
            [0x69, 0x25, 12, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            load(Size::B, Reg::R5, Reg::R2, 23).encode(),
            [0x71, 0x25, 23, 0, 0, 0, 0, 0]
        );
        // *(u64 *)(r2 + 0) = r7.
        assert_eq!(
            store_reg(Size::Dw, Reg::R2, 0, Reg::R7).encode(),
            [0x7b, 0x72, 0, 0, 0, 0, 0, 0]
        );
        // *(u32 *)(r2 + 8) = 0x12345678.
        assert_eq!(
            store_imm(Size::W, Reg::R2, 8, 0x1234_5678).encode(),
            [0x62, 0x02, 8, 0, 0x78, 0x56, 0x34, 0x12]
        );
    }

    #[test]
    fn a_map_fd_load_takes_two_slots_with_pseudo_map_fd_as_source() {
        let [a, b] = load_map_fd(Reg::R1, 5);
        assert_eq!(a.encode(), [0x18, 0x11, 0, 0, 5, 0, 0, 0]);
        assert_eq!(b.encode(), [0; 8]);
    }

    #[test]
    fn jumps_and_calls_encode_as_clang_emits_them() {
        assert_eq!(
            jgt_reg(Reg::R4, Reg::R3, 7).encode(),
            [0x2d, 0x34, 7, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            jeq_imm(Reg::R5, 0x0008, 3).encode(),
            [0x15, 0x05, 3, 0, 8, 0, 0, 0]
        );
        assert_eq!(
            jne_imm(Reg::R5, 17, 9).encode(),
            [0x55, 0x05, 9, 0, 17, 0, 0, 0]
        );
        assert_eq!(
            jne32_imm(Reg::R5, -1, 2).encode(),
            [0x56, 0x05, 2, 0, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(
            jset_imm(Reg::R5, 0xff3f, 1).encode(),
            [0x45, 0x05, 1, 0, 0x3f, 0xff, 0, 0]
        );
        // bpf_redirect_map is helper 51.
        assert_eq!(call(51).encode(), [0x85, 0, 0, 0, 51, 0, 0, 0]);
    }

    #[test]
    fn only_branches_take_labels() {
        assert!(ja(0).is_jump());
        assert!(jne32_imm(Reg::R1, 0, 0).is_jump());
        assert!(!call(51).is_jump());
        assert!(!exit().is_jump());
        assert!(!mov64_imm(Reg::R0, 0).is_jump());
    }
}
