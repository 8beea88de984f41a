//! A small BPF instruction encoder: the few forms the counting program needs (64-bit ALU with
//! an immediate or a register, loads and stores through a register, atomic adds and
//! exchanges, conditional and plain jumps to labels, a map's descriptor or the address of its
//! value loaded as a 64-bit immediate, helper calls, exit),
//! each as the kernel's `struct bpf_insn` (Documentation/bpf/standardization/
//! instruction-set.rst: an 8-bit opcode, two 4-bit registers, a 16-bit offset, a 32-bit
//! immediate). The kernel's verifier checks every program at load, whatever wrote it.

use std::os::fd::{AsRawFd, BorrowedFd};

/// A register: `R0` the return value, `R1`-`R5` arguments (clobbered by calls), `R6`-`R9`
/// kept across calls, `R10` the read-only frame pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reg(pub u8);

pub(crate) const R0: Reg = Reg(0);
pub(crate) const R1: Reg = Reg(1);
pub(crate) const R2: Reg = Reg(2);
pub(crate) const R3: Reg = Reg(3);
pub(crate) const R4: Reg = Reg(4);
pub(crate) const R6: Reg = Reg(6);
pub(crate) const R7: Reg = Reg(7);
pub(crate) const R8: Reg = Reg(8);
pub(crate) const R9: Reg = Reg(9);
pub(crate) const R10: Reg = Reg(10);

/// Opcode parts (linux/bpf_common.h, linux/bpf.h).
pub(crate) mod op {
    /// `BPF_LD`.
    pub const LD: u8 = 0x00;
    /// `BPF_LDX`.
    pub const LDX: u8 = 0x01;
    /// `BPF_STX`.
    pub const STX: u8 = 0x03;
    /// `BPF_JMP`.
    pub const JMP: u8 = 0x05;
    /// `BPF_ALU64`.
    pub const ALU64: u8 = 0x07;
    /// `BPF_W`: 32 bits.
    pub const W: u8 = 0x00;
    /// `BPF_B`: 8 bits.
    pub const B: u8 = 0x10;
    /// `BPF_DW`: 64 bits.
    pub const DW: u8 = 0x18;
    /// `BPF_IMM`.
    pub const IMM: u8 = 0x00;
    /// `BPF_MEM`.
    pub const MEM: u8 = 0x60;
    /// `BPF_ATOMIC`: a read-modify-write of memory, the operation in the immediate.
    pub const ATOMIC: u8 = 0xc0;
    /// `BPF_FETCH`: an atomic operation that also returns the old value in its source.
    pub const FETCH: i32 = 0x01;
    /// `BPF_XCHG`: an atomic exchange (with [`FETCH`]).
    pub const XCHG: i32 = 0xe0 | FETCH;
    /// `BPF_K`: the immediate is the source.
    pub const K: u8 = 0x00;
    /// `BPF_X`: the source register is.
    pub const X: u8 = 0x08;
    /// `BPF_ADD`.
    pub const ADD: u8 = 0x00;
    /// `BPF_SUB`.
    pub const SUB: u8 = 0x10;
    /// `BPF_MOV`.
    pub const MOV: u8 = 0xb0;
    /// `BPF_RSH`: a logical shift right.
    pub const RSH: u8 = 0x70;
    /// `BPF_JA`.
    pub const JA: u8 = 0x00;
    /// `BPF_JEQ`.
    pub const JEQ: u8 = 0x10;
    /// `BPF_JNE`.
    pub const JNE: u8 = 0x50;
    /// `BPF_JGE`: unsigned `>=`.
    pub const JGE: u8 = 0x30;
    /// `BPF_CALL`.
    pub const CALL: u8 = 0x80;
    /// `BPF_EXIT`.
    pub const EXIT: u8 = 0x90;
    /// `BPF_PSEUDO_MAP_FD`: a 64-bit immediate load whose immediate is a map's descriptor.
    pub const PSEUDO_MAP_FD: u8 = 1;
    /// `BPF_PSEUDO_MAP_VALUE`: a 64-bit immediate load of the address of an array map's
    /// first value (Linux 5.2), the descriptor in the first immediate, an offset in the second.
    pub const PSEUDO_MAP_VALUE: u8 = 2;
}

/// One instruction as the kernel reads it from memory (its 8 bytes, in this machine's order).
pub(crate) fn encode(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> u64 {
    // The register byte is a pair of bit fields: `dst_reg` first, which a little-endian ABI
    // lays in the low nibble and a big-endian one in the high.
    let regs = if cfg!(target_endian = "little") {
        (src.0 << 4) | (dst.0 & 0xf)
    } else {
        (dst.0 << 4) | (src.0 & 0xf)
    };
    let [o0, o1] = off.to_ne_bytes();
    let [i0, i1, i2, i3] = imm.to_ne_bytes();
    u64::from_ne_bytes([code, regs, o0, o1, i0, i1, i2, i3])
}

/// A place in the program a jump goes to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Label(usize);

/// A program being written: instructions, and jumps whose targets are placed later.
#[derive(Default)]
pub(crate) struct Asm {
    insns: Vec<u64>,
    /// Each label's instruction index, once placed.
    labels: Vec<Option<usize>>,
    /// Jumps to patch: (instruction index, opcode, dst, src, imm, label).
    jumps: Vec<(usize, u8, Reg, Reg, i32, Label)>,
}

impl Asm {
    /// A label to place later with [`Asm::place`].
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// The next instruction is `label`'s.
    pub fn place(&mut self, label: Label) {
        self.labels[label.0] = Some(self.insns.len());
    }

    fn push(&mut self, code: u8, dst: Reg, src: Reg, off: i16, imm: i32) {
        self.insns.push(encode(code, dst, src, off, imm));
    }

    /// `dst = imm` (sign-extended).
    pub fn mov_imm(&mut self, dst: Reg, imm: i32) {
        self.push(op::ALU64 | op::MOV | op::K, dst, R0, 0, imm);
    }

    /// `dst = src`.
    pub fn mov(&mut self, dst: Reg, src: Reg) {
        self.push(op::ALU64 | op::MOV | op::X, dst, src, 0, 0);
    }

    /// `dst += imm`.
    pub fn add_imm(&mut self, dst: Reg, imm: i32) {
        self.push(op::ALU64 | op::ADD | op::K, dst, R0, 0, imm);
    }

    /// `dst += src`.
    pub fn add(&mut self, dst: Reg, src: Reg) {
        self.push(op::ALU64 | op::ADD | op::X, dst, src, 0, 0);
    }

    /// `dst >>= imm` (logical).
    pub fn rsh_imm(&mut self, dst: Reg, imm: i32) {
        self.push(op::ALU64 | op::RSH | op::K, dst, R0, 0, imm);
    }

    /// `dst -= src`.
    pub fn sub(&mut self, dst: Reg, src: Reg) {
        self.push(op::ALU64 | op::SUB | op::X, dst, src, 0, 0);
    }

    /// `dst = *(u64 *)(src + off)`.
    pub fn load64(&mut self, dst: Reg, src: Reg, off: i16) {
        self.push(op::LDX | op::MEM | op::DW, dst, src, off, 0);
    }

    /// `*(u64 *)(dst + off) = src`.
    pub fn store64(&mut self, dst: Reg, off: i16, src: Reg) {
        self.push(op::STX | op::MEM | op::DW, dst, src, off, 0);
    }

    /// `*(u8 *)(dst + off) = src`.
    pub fn store8(&mut self, dst: Reg, off: i16, src: Reg) {
        self.push(op::STX | op::MEM | op::B, dst, src, off, 0);
    }

    /// `*(u32 *)(dst + off) = src`.
    pub fn store32(&mut self, dst: Reg, off: i16, src: Reg) {
        self.push(op::STX | op::MEM | op::W, dst, src, off, 0);
    }

    /// `dst = *(u32 *)(src + off)`.
    pub fn load32(&mut self, dst: Reg, src: Reg, off: i16) {
        self.push(op::LDX | op::MEM | op::W, dst, src, off, 0);
    }

    /// `dst = *(u8 *)(src + off)`.
    pub fn load8(&mut self, dst: Reg, src: Reg, off: i16) {
        self.push(op::LDX | op::MEM | op::B, dst, src, off, 0);
    }

    /// `*(u64 *)(dst + off) += src`, as one atomic instruction (`BPF_ATOMIC | BPF_ADD`).
    pub fn atomic_add64(&mut self, dst: Reg, off: i16, src: Reg) {
        self.push(
            op::STX | op::ATOMIC | op::DW,
            dst,
            src,
            off,
            i32::from(op::ADD),
        );
    }

    /// `src = xchg((u64 *)(dst + off), src)`: the old value into `src` (`BPF_XCHG`, Linux 5.12).
    pub fn exchange64(&mut self, dst: Reg, off: i16, src: Reg) {
        self.push(op::STX | op::ATOMIC | op::DW, dst, src, off, op::XCHG);
    }

    /// `dst = map` (`BPF_LD | BPF_DW | BPF_IMM` with `BPF_PSEUDO_MAP_FD`: two instructions,
    /// the kernel replaces the descriptor with the map's address at load).
    pub fn load_map(&mut self, dst: Reg, map: BorrowedFd<'_>) {
        self.push(
            op::LD | op::DW | op::IMM,
            dst,
            Reg(op::PSEUDO_MAP_FD),
            0,
            map.as_raw_fd(),
        );
        self.push(0, R0, R0, 0, 0);
    }

    /// `dst = &value(map) + offset` (`BPF_PSEUDO_MAP_VALUE`: the kernel places the address of
    /// the array map's first value at load).
    pub fn load_map_value(&mut self, dst: Reg, map: BorrowedFd<'_>, offset: i32) {
        self.push(
            op::LD | op::DW | op::IMM,
            dst,
            Reg(op::PSEUDO_MAP_VALUE),
            0,
            map.as_raw_fd(),
        );
        self.push(0, R0, R0, 0, offset);
    }

    /// `r0 = helper(r1, ..., r5)`: the kernel's helper number `helper`.
    pub fn call(&mut self, helper: i32) {
        self.push(op::JMP | op::CALL, R0, R0, 0, helper);
    }

    /// `if dst == imm goto label` (`dst` compared as 64 bits with `imm` sign-extended).
    pub fn jump_if_eq(&mut self, dst: Reg, imm: i32, label: Label) {
        self.jump(op::JEQ, dst, imm, label);
    }

    /// `if dst != imm goto label`.
    pub fn jump_if_ne(&mut self, dst: Reg, imm: i32, label: Label) {
        self.jump(op::JNE, dst, imm, label);
    }

    /// `if dst >= imm goto label` (unsigned).
    pub fn jump_if_ge(&mut self, dst: Reg, imm: i32, label: Label) {
        self.jump(op::JGE, dst, imm, label);
    }

    /// `if dst >= src goto label` (unsigned, both registers).
    pub fn jump_if_ge_reg(&mut self, dst: Reg, src: Reg, label: Label) {
        self.jumps.push((
            self.insns.len(),
            op::JMP | op::JGE | op::X,
            dst,
            src,
            0,
            label,
        ));
        self.insns.push(0);
    }

    /// `if dst == src goto label` (both registers, 64 bits).
    pub fn jump_if_eq_reg(&mut self, dst: Reg, src: Reg, label: Label) {
        self.jumps.push((
            self.insns.len(),
            op::JMP | op::JEQ | op::X,
            dst,
            src,
            0,
            label,
        ));
        self.insns.push(0);
    }

    /// `goto label`.
    pub fn jump_always(&mut self, label: Label) {
        self.jump(op::JA, R0, 0, label);
    }

    fn jump(&mut self, kind: u8, dst: Reg, imm: i32, label: Label) {
        self.jumps.push((
            self.insns.len(),
            op::JMP | kind | op::K,
            dst,
            R0,
            imm,
            label,
        ));
        self.insns.push(0);
    }

    /// `exit` (return `r0`).
    pub fn exit(&mut self) {
        self.push(op::JMP | op::EXIT, R0, R0, 0, 0);
    }

    /// The instructions, every jump pointed at its label (a jump's offset counts from the
    /// instruction after it).
    ///
    /// # Panics
    /// Never for a program whose every label is placed and within 32767 instructions of
    /// its jumps, which the program's writer guarantees (a unit test holds it to that).
    pub fn finish(mut self) -> Vec<u64> {
        for &(at, code, dst, src, imm, label) in &self.jumps {
            let target = self.labels[label.0].expect("every label is placed");
            let off = i16::try_from(target as i64 - at as i64 - 1).expect("a jump within range");
            self.insns[at] = encode(code, dst, src, off, imm);
        }
        self.insns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of an instruction in memory, as the kernel reads them.
    fn bytes(insn: u64) -> [u8; 8] {
        insn.to_ne_bytes()
    }

    #[test]
    fn instructions_are_laid_out_as_struct_bpf_insn() {
        // Oracle: the kernel's struct bpf_insn (code, dst_reg:4 src_reg:4, off, imm) on a
        // little-endian ABI, and the opcodes of linux/bpf.h (compiled against the system
        // header by `bpf_cgroup::tests::numbers_match_the_system_header`).
        if cfg!(target_endian = "little") {
            // r1 = *(u64 *)(r10 - 24): 0x79, dst 1, src 10.
            assert_eq!(
                bytes(encode(op::LDX | op::MEM | op::DW, R1, R10, -24, 0)),
                [0x79, 0xa1, 0xe8, 0xff, 0, 0, 0, 0]
            );
            // r2 += 7: 0x07.
            assert_eq!(
                bytes(encode(op::ALU64 | op::ADD | op::K, R2, R0, 0, 7)),
                [0x07, 0x02, 0, 0, 7, 0, 0, 0]
            );
        }
        let mut asm = Asm::default();
        let end = asm.label();
        asm.jump_if_eq(R0, 0, end);
        asm.mov_imm(R0, 1);
        asm.place(end);
        asm.exit();
        let program = asm.finish();
        // The jump skips one instruction: off 1.
        assert_eq!(program[0], encode(op::JMP | op::JEQ | op::K, R0, R0, 1, 0));
        assert_eq!(program.len(), 3);
    }
}
