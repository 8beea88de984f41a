//! The BPF programs of counters shared between sessions (`shared`), written as perf's
//! bperf_leader.bpf.c and bperf_follower.bpf.c compile (the leader's layout is perf's, so
//! that either's follower follows the other's leader), and whose counts a follower keeps
//! ([`SharedScope`]).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use counterhal_hal::{Error, Result, SharedScope};

use super::bpf_mode::failed;
use super::insn::{Asm, Label, R0, R1, R2, R3, R4, R6, R7, R8, R10, Reg};
use crate::sys::bpf as sys_bpf;

/// A `struct bpf_perf_event_value`: counter, enabled, running.
pub(super) const VALUE_BYTES: u32 = 24;

/// `BPF_FUNC_map_lookup_elem`.
pub(super) const MAP_LOOKUP_ELEM: i32 = 1;
/// `BPF_FUNC_map_update_elem`.
pub(super) const MAP_UPDATE_ELEM: i32 = 2;
/// `BPF_FUNC_map_delete_elem`.
pub(super) const MAP_DELETE_ELEM: i32 = 3;
/// `BPF_FUNC_get_smp_processor_id`.
pub(super) const GET_SMP_PROCESSOR_ID: i32 = 8;
/// `BPF_FUNC_get_current_pid_tgid`.
pub(super) const GET_CURRENT_PID_TGID: i32 = 14;
/// `BPF_FUNC_perf_event_read_value`.
pub(super) const PERF_EVENT_READ_VALUE: i32 = 55;
/// `BPF_FUNC_probe_read_kernel`.
pub(super) const PROBE_READ_KERNEL: i32 = 113;

/// The leader program (bperf_leader.bpf.c's `on_switch`): reads its CPU's event
/// (`events[cpu]`), puts the difference from the previous reading in `diff`, keeps the reading.
pub(super) fn leader_program(
    events: BorrowedFd<'_>,
    prev: BorrowedFd<'_>,
    diff: BorrowedFd<'_>,
) -> Vec<u64> {
    let mut asm = Asm::default();
    let out = asm.label();
    asm.call(GET_SMP_PROCESSOR_ID);
    asm.store32(R10, -4, R0);
    asm.mov_imm(R1, 0);
    asm.store32(R10, -8, R1);
    for (map, keep) in [(prev, R7), (diff, R8)] {
        lookup(&mut asm, map, -8, out);
        asm.mov(keep, R0);
    }
    read_value(&mut asm, events, -4, -32, out);
    keep_difference(&mut asm, -32, (R8, 0));
    returning_zero(asm, out)
}

/// The follower (bperf_follower.bpf.c's `fexit_XXX`): where `enabled` holds 1 and the task
/// (or CPU) is in `filter`, adds `diff` to its slot of `accum`.
pub(super) fn follower_program(
    scope: &SharedScope,
    enabled: BorrowedFd<'_>,
    filter: BorrowedFd<'_>,
    diff: BorrowedFd<'_>,
    accum: BorrowedFd<'_>,
) -> Vec<u64> {
    let mut asm = Asm::default();
    let out = asm.label();
    unless_enabled(&mut asm, enabled, out);
    asm.mov_imm(R1, 0);
    asm.store32(R10, -12, R1);
    filtered(&mut asm, scope, filter, out);
    for (map, key, keep) in [(diff, -12i32, R7), (accum, -4, R8)] {
        lookup(&mut asm, map, key, out);
        asm.mov(keep, R0);
    }
    for field in [0i16, 8, 16] {
        asm.load64(R1, R7, field);
        asm.load64(R2, R8, field);
        asm.add(R2, R1);
        asm.store64(R8, field, R2);
    }
    returning_zero(asm, out)
}

/// The follower's choice of the sum to add to, at `fp - 4`: slot 0 for every CPU, else the
/// slot `filter` gives the CPU, thread or process (by `fp - 8`), none (`goto out`) where it
/// gives none. `r1` holds 0 on entry.
pub(super) fn filtered(asm: &mut Asm, scope: &SharedScope, filter: BorrowedFd<'_>, out: Label) {
    match scope {
        SharedScope::AllCpus => {
            asm.store32(R10, -4, R1);
            return;
        }
        SharedScope::Cpus(_) => asm.call(GET_SMP_PROCESSOR_ID),
        SharedScope::Threads(_) => asm.call(GET_CURRENT_PID_TGID),
        SharedScope::Processes { .. } => {
            asm.call(GET_CURRENT_PID_TGID);
            asm.rsh_imm(R0, 32);
        }
    }
    asm.store32(R10, -8, R0);
    lookup(asm, filter, -8, out);
    asm.load32(R1, R0, 0);
    asm.store32(R10, -4, R1);
    // A task that has exited (marked by the exit program) is counted this last time and
    // let go, as perf's follower lets it go.
    let keep = asm.label();
    asm.load32(R1, R0, 4);
    asm.jump_if_eq(R1, 0, keep);
    asm.load_map(R1, filter);
    asm.mov(R2, R10);
    asm.add_imm(R2, -8);
    asm.call(MAP_DELETE_ELEM);
    asm.place(keep);
}

/// At `sched_process_exit` (bperf_follower.bpf.c's `on_exittask`): a followed task that
/// exits is marked (the second word of its filter value), so that the follower counts it
/// once more and lets it go. `pid` is the offset of `pid` in the kernel's `struct
/// task_struct`.
pub(super) fn exit_program(filter: BorrowedFd<'_>, pid: u32) -> Vec<u64> {
    let mut asm = Asm::default();
    let out = asm.label();
    asm.load64(R3, R1, 0);
    asm.add_imm(R3, pid as i32);
    asm.mov(R1, R10);
    asm.add_imm(R1, -8);
    asm.mov_imm(R2, 4);
    asm.call(PROBE_READ_KERNEL);
    asm.jump_if_ne(R0, 0, out);
    lookup(&mut asm, filter, -8, out);
    asm.mov_imm(R1, 1);
    asm.store32(R0, 4, R1);
    returning_zero(asm, out)
}

/// The follower where the kernel takes no program at the leader's exit: at `sched_switch`
/// (attached after the leader, so run after it), it reads its CPU's event from the leader's
/// `events` itself, takes the difference from its own previous reading (`prev`), and adds
/// it as [`follower_program`] adds `diff_readings`.
pub(super) fn own_follower_program(
    scope: &SharedScope,
    enabled: BorrowedFd<'_>,
    filter: BorrowedFd<'_>,
    events: BorrowedFd<'_>,
    prev: BorrowedFd<'_>,
    accum: BorrowedFd<'_>,
) -> Vec<u64> {
    let mut asm = Asm::default();
    let out = asm.label();
    asm.call(GET_SMP_PROCESSOR_ID);
    asm.store32(R10, -16, R0);
    asm.mov_imm(R1, 0);
    asm.store32(R10, -12, R1);
    lookup(&mut asm, prev, -12, out);
    asm.mov(R7, R0);
    read_value(&mut asm, events, -16, -40, out);
    // The differences at -64, the reading kept.
    keep_difference(&mut asm, -40, (R10, -64));
    unless_enabled(&mut asm, enabled, out);
    asm.mov_imm(R1, 0);
    filtered(&mut asm, scope, filter, out);
    lookup(&mut asm, accum, -4, out);
    for field in [0i16, 8, 16] {
        asm.load64(R1, R10, -64 + field);
        asm.load64(R2, R0, field);
        asm.add(R2, R1);
        asm.store64(R0, field, R2);
    }
    returning_zero(asm, out)
}

/// The leader's `events` map (its one perf event array), found by the ids of the maps its
/// program uses.
pub(super) fn leader_events(program: BorrowedFd<'_>) -> Result<OwnedFd> {
    let mut ids = [0u32; 8];
    let mut info = vec![0u8; 232];
    // struct bpf_prog_info: nr_map_ids at 52, map_ids at 56.
    info[52..56].copy_from_slice(&(ids.len() as u32).to_ne_bytes());
    info[56..64].copy_from_slice(&(ids.as_mut_ptr() as u64).to_ne_bytes());
    sys_bpf::obj_info(program, &mut info).map_err(failed("reading the leader program's maps"))?;
    let count = (word(&info, 52) as usize).min(ids.len());
    for &id in &ids[..count] {
        let Ok(map) = sys_bpf::fd_by_id(sys_bpf::BPF_MAP_GET_FD_BY_ID, id) else {
            continue;
        };
        let mut map_info = [0u8; 24];
        if sys_bpf::obj_info(map.as_fd(), &mut map_info).is_ok()
            && word(&map_info, 0) == sys_bpf::MAP_PERF_EVENT_ARRAY
        {
            return Ok(map);
        }
    }
    Err(Error::unsupported(
        "the leader program uses no perf event array",
    ))
}

/// At `task_newtask` (bperf_follower.bpf.c's `on_newtask`, TGID): a process started by a
/// followed one (another thread group) is followed into its parent's sum. `tgid` is the
/// offset of `tgid` in the kernel's `struct task_struct`.
pub(super) fn new_task_program(
    enabled: BorrowedFd<'_>,
    filter: BorrowedFd<'_>,
    tgid: u32,
) -> Vec<u64> {
    let mut asm = Asm::default();
    let out = asm.label();
    asm.mov(R6, R1);
    unless_enabled(&mut asm, enabled, out);
    asm.call(GET_CURRENT_PID_TGID);
    asm.rsh_imm(R0, 32);
    asm.store32(R10, -4, R0);
    // The new task's tgid, read from its task_struct (the tracepoint's first argument).
    asm.load64(R3, R6, 0);
    asm.add_imm(R3, tgid as i32);
    asm.mov(R1, R10);
    asm.add_imm(R1, -8);
    asm.mov_imm(R2, 4);
    asm.call(PROBE_READ_KERNEL);
    asm.jump_if_ne(R0, 0, out);
    asm.load32(R1, R10, -8);
    asm.load32(R2, R10, -4);
    asm.jump_if_eq_reg(R1, R2, out);
    lookup(&mut asm, filter, -4, out);
    // { accum_key: the parent's, exited: 0 }.
    asm.load32(R1, R0, 0);
    asm.store32(R10, -16, R1);
    asm.mov_imm(R1, 0);
    asm.store32(R10, -12, R1);
    asm.load_map(R1, filter);
    asm.mov(R2, R10);
    asm.add_imm(R2, -8);
    asm.mov(R3, R10);
    asm.add_imm(R3, -16);
    asm.mov_imm(R4, sys_bpf::BPF_NOEXIST as i32);
    asm.call(MAP_UPDATE_ELEM);
    returning_zero(asm, out)
}

/// A word of `bytes` at `at`.
pub(super) fn word(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap_or_default())
}

/// `R0` = the value of `map` at the key at `R10 + key_at`; on to `out` where it has none.
fn lookup(asm: &mut Asm, map: BorrowedFd<'_>, key_at: i32, out: Label) {
    asm.load_map(R1, map);
    asm.mov(R2, R10);
    asm.add_imm(R2, key_at);
    asm.call(MAP_LOOKUP_ELEM);
    asm.jump_if_eq(R0, 0, out);
}

/// The reading (value, enabled, running) of `events` at the CPU held at `R10 + cpu_at`, into
/// `R10 + value_at`; on to `out` where it cannot be read.
fn read_value(asm: &mut Asm, events: BorrowedFd<'_>, cpu_at: i16, value_at: i32, out: Label) {
    asm.load_map(R1, events);
    asm.load32(R2, R10, cpu_at);
    asm.mov(R3, R10);
    asm.add_imm(R3, value_at);
    asm.mov_imm(R4, VALUE_BYTES as i32);
    asm.call(PERF_EVENT_READ_VALUE);
    asm.jump_if_ne(R0, 0, out);
}

/// The reading at `R10 + read_at` less the one `R7` points to, into `to` (a register and an
/// offset); the reading kept at `R7`.
fn keep_difference(asm: &mut Asm, read_at: i16, to: (Reg, i16)) {
    for field in [0i16, 8, 16] {
        asm.load64(R1, R10, read_at + field);
        asm.load64(R2, R7, field);
        asm.mov(R3, R1);
        asm.sub(R3, R2);
        asm.store64(to.0, to.1 + field, R3);
        asm.store64(R7, field, R1);
    }
}

/// On to `out` where `enabled` (a one-value array) holds 0.
fn unless_enabled(asm: &mut Asm, enabled: BorrowedFd<'_>, out: Label) {
    asm.load_map_value(R1, enabled, 0);
    asm.load32(R1, R1, 0);
    asm.jump_if_eq(R1, 0, out);
}

/// The program's end at `out`: it returns 0.
fn returning_zero(mut asm: Asm, out: Label) -> Vec<u64> {
    asm.place(out);
    asm.mov_imm(R0, 0);
    asm.exit();
    asm.finish()
}
