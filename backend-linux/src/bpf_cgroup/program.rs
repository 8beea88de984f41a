//! The counting program, as perf's `bperf_cgroup` counts (tools/perf/util/bpf_skel/
//! bperf_cgroup.bpf.c): run at every context switch on a CPU, in the context of the task
//! switched out, it reads each event's counter on this CPU (`bpf_perf_event_read_value`:
//! value, time enabled, time running), takes the difference from the previous reading on this
//! CPU, and adds it to each followed cgroup among the ancestors of that task's cgroup (itself
//! included), from the root down (`bpf_get_current_ancestor_cgroup_id`). User space puts the
//! followed cgroups in the map, by id; the program only looks them up, so a cgroup nobody
//! follows takes no room (perf's `cgrp_idx` map). It visits no level deeper than the deepest
//! followed one, which user space keeps in the levels map: a task in a deep cgroup costs the
//! levels followed, not its depth.
//!
//! It runs at the raw tracepoint `sched_switch` (`trace_sched_switch` in `__schedule`,
//! kernel/sched/core.c), at every context switch, before the switch: in the context of the
//! task switched out, reading the counts of the time that task ran. A raw tracepoint's
//! program is skipped only while the same program already runs on that CPU (its own
//! `prog->active`, `__bpf_trace_run` in kernel/trace/bpf_trace.c), which a switch cannot
//! be; a perf-event program, as perf's at `cgroup-switches`, is skipped while any BPF user
//! holds the CPU's `bpf_prog_active` (`bpf_overflow_handler`, kernel/events/core.c), which
//! every map system call does (`bpf_disable_instrumentation`, include/linux/bpf.h): beside
//! other BPF agents its counts went to the wrong cgroups, or to none. A skip the kernel
//! counts all the same is the program's `recursion_misses`.
//!
//! Written by [`super::insn`], checked by the kernel's verifier at every load: the levels are
//! a bounded loop (Linux 5.3), which the verifier walks [`MAX_LEVELS`] times. Helpers, each
//! available to perf event, raw tracepoint and tracing programs (kernel/trace/bpf_trace.c's
//! `bpf_tracing_func_proto`): `bpf_map_lookup_elem` (1), `bpf_get_smp_processor_id` (8),
//! `bpf_perf_event_read_value` (55, Linux 4.15), `bpf_get_current_ancestor_cgroup_id` (123,
//! Linux 5.6).

use std::os::fd::BorrowedFd;

use super::insn::{Asm, Label, R0, R1, R2, R3, R4, R6, R7, R8, R9, R10};

/// `BPF_FUNC_map_lookup_elem`.
const MAP_LOOKUP_ELEM: i32 = 1;
/// `BPF_FUNC_map_update_elem`.
const MAP_UPDATE_ELEM: i32 = 2;
/// `BPF_NOEXIST`: an update that makes an element only where there is none.
const NOEXIST: i32 = 1;
/// An adopting parent's entry (one byte): the levels below it the program adopts; its
/// adopted children adopt one level fewer, and none where that is 0. This value adopts every
/// level below.
pub const EVERY_LEVEL: u8 = u8::MAX;
/// `BPF_FUNC_get_smp_processor_id`.
const GET_SMP_PROCESSOR_ID: i32 = 8;
/// `BPF_FUNC_perf_event_read_value`.
const PERF_EVENT_READ_VALUE: i32 = 55;
/// `BPF_FUNC_get_current_ancestor_cgroup_id`.
const GET_CURRENT_ANCESTOR_CGROUP_ID: i32 = 123;

/// The helpers the program calls, by their `BPF_FUNC_` names (pinned against the system
/// header by a test).
#[cfg_attr(not(test), allow(dead_code))]
pub const HELPERS: [(&str, i32); 5] = [
    ("map_lookup_elem", MAP_LOOKUP_ELEM),
    ("map_update_elem", MAP_UPDATE_ELEM),
    ("get_smp_processor_id", GET_SMP_PROCESSOR_ID),
    ("perf_event_read_value", PERF_EVENT_READ_VALUE),
    (
        "get_current_ancestor_cgroup_id",
        GET_CURRENT_ANCESTOR_CGROUP_ID,
    ),
];

/// The most events one program counts: their differences live on its 512-byte stack.
pub const MAX_EVENTS: usize = 16;
/// The levels of the hierarchy counted, the root (level 0) included: a cgroup at level
/// `MAX_LEVELS` or deeper cannot be followed (its ancestors count its tasks).
pub const MAX_LEVELS: usize = 64;

/// Where the program keeps its counts: each event's value, time enabled and time running
/// (`struct bpf_perf_event_value`, 24 bytes) in each map.
pub const READING_BYTES: usize = 24;

/// Where a copy of the program runs: how it touches its maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// At each context switch (the raw tracepoint `sched_switch`), in the scheduler with
    /// interrupts off: plain loads and stores.
    Switch,
    /// On a CPU by `BPF_PROG_TEST_RUN` before a read (in an interrupt, or with preemption off
    /// on the caller's CPU): plain loads and stores.
    Read,
    /// At `cgroup_migrate`, in a task's context, which the others can interrupt on its CPU:
    /// each previous reading exchanged and each sum added by one atomic instruction (the sums
    /// stay whole: a difference taken across an interruption may be negative, and the next
    /// one makes it up).
    Move,
}

/// The maps a program works on.
#[derive(Clone, Copy)]
pub struct Maps<'m> {
    /// `BPF_MAP_TYPE_PERF_EVENT_ARRAY`: event `e` on CPU `c` at `e * stride + c`.
    pub events: BorrowedFd<'m>,
    /// `BPF_MAP_TYPE_PERCPU_ARRAY`: each event's previous reading on each CPU.
    pub previous: BorrowedFd<'m>,
    /// `BPF_MAP_TYPE_PERCPU_HASH`: by cgroup id, every event's sums on each CPU, for the
    /// followed cgroups.
    pub cgroups: BorrowedFd<'m>,
    /// `BPF_MAP_TYPE_ARRAY` of one u32: the levels to visit (the deepest followed level plus
    /// one, or an adopting parent's plus two; 0 where nothing is followed).
    pub levels: BorrowedFd<'m>,
    /// `BPF_MAP_TYPE_HASH` by cgroup id: the parents whose new children the program follows
    /// itself, from their first switch (user space puts only cgroups only root may make
    /// children in).
    pub adopting: BorrowedFd<'m>,
    /// `BPF_MAP_TYPE_HASH` by cgroup id: the children of adopting parents user space let go
    /// (they match no pattern), which the program must not follow again.
    pub refused: BorrowedFd<'m>,
    /// `BPF_MAP_TYPE_ARRAY` of one value of the cgroups map's size, all zeroes: what an
    /// adopted cgroup's sums start from.
    pub zeros: BorrowedFd<'m>,
}

// The frame: the reading (24 bytes), a u32 key, the cgroup id, its parent's id (the level
// above's), then each event's difference.
const READING: i16 = -24;
const KEY: i16 = -32;
const CGROUP_ID: i16 = -40;
const PARENT_ID: i16 = -48;

/// The frame offset of event `event`'s differences of `events`.
fn difference(events: usize, event: usize, field: usize) -> i16 {
    (i64::from(PARENT_ID) - (READING_BYTES * (events - event)) as i64 + 8 * field as i64) as i16
}

/// The program for `events` events (at most [`MAX_EVENTS`]) whose counters on CPU `c` are
/// at `e * stride + c` of `maps.events`, run as `run` says.
pub fn counting(maps: Maps<'_>, events: usize, stride: u32, run: Run) -> Vec<u64> {
    debug_assert!((1..=MAX_EVENTS).contains(&events));
    let access = match run {
        Run::Move => Access::Atomic,
        Run::Switch | Run::Read => Access::Plain,
    };
    let mut asm = Asm::default();
    asm.call(GET_SMP_PROCESSOR_ID);
    asm.mov(R9, R0);
    for event in 0..events {
        differences(&mut asm, maps, events, event, stride, access);
    }
    let (level, next, done) = (asm.label(), asm.label(), asm.label());
    // r7: the levels to visit; r8: the level (both kept across calls).
    asm.load_map_value(R1, maps.levels, 0);
    asm.load32(R7, R1, 0);
    asm.mov_imm(R8, 0);
    asm.mov_imm(R1, 0);
    asm.store64(R10, PARENT_ID, R1);
    asm.place(level);
    asm.jump_if_ge(R8, MAX_LEVELS as i32, done);
    asm.jump_if_ge_reg(R8, R7, done);
    asm.mov(R1, R8);
    asm.call(GET_CURRENT_ANCESTOR_CGROUP_ID);
    // No such level: the task's cgroup is shallower.
    asm.jump_if_eq(R0, 0, done);
    asm.store64(R10, CGROUP_ID, R0);
    lookup_cgroup(&mut asm, maps);
    let counted = asm.label();
    asm.jump_if_ne(R0, 0, counted);
    // Not followed: followed from now on where its parent adopts its children.
    adopt(&mut asm, maps, next);
    asm.place(counted);
    add_differences(&mut asm, events, access);
    asm.place(next);
    asm.load64(R1, R10, CGROUP_ID);
    asm.store64(R10, PARENT_ID, R1);
    asm.add_imm(R8, 1);
    asm.jump_always(level);
    asm.place(done);
    asm.mov_imm(R0, 0);
    asm.exit();
    asm.finish()
}

/// How the program touches its maps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Plain,
    Atomic,
}

/// Reads event `event` on this CPU (`r9`) and writes its differences from the previous
/// reading into the frame, and the reading as the previous one; zero differences where it
/// cannot be read.
fn differences(
    asm: &mut Asm,
    maps: Maps<'_>,
    events: usize,
    event: usize,
    stride: u32,
    access: Access,
) {
    let unread = asm.label();
    let next = asm.label();
    asm.load_map(R1, maps.events);
    asm.mov(R2, R9);
    asm.add_imm(R2, (event as u32 * stride) as i32);
    asm.mov(R3, R10);
    asm.add_imm(R3, i32::from(READING));
    asm.mov_imm(R4, READING_BYTES as i32);
    asm.call(PERF_EVENT_READ_VALUE);
    asm.jump_if_ne(R0, 0, unread);
    asm.mov_imm(R1, event as i32);
    asm.store32(R10, KEY, R1);
    asm.load_map(R1, maps.previous);
    asm.mov(R2, R10);
    asm.add_imm(R2, i32::from(KEY));
    asm.call(MAP_LOOKUP_ELEM);
    asm.jump_if_eq(R0, 0, unread);
    for field in 0..3 {
        let at = 8 * field as i16;
        asm.load64(R1, R10, READING + at);
        match access {
            Access::Plain => {
                asm.load64(R2, R0, at);
                asm.store64(R0, at, R1);
            }
            Access::Atomic => {
                asm.mov(R2, R1);
                asm.exchange64(R0, at, R2);
            }
        }
        asm.sub(R1, R2);
        asm.store64(R10, difference(events, event, field), R1);
    }
    asm.jump_always(next);
    asm.place(unread);
    asm.mov_imm(R1, 0);
    for field in 0..3 {
        asm.store64(R10, difference(events, event, field), R1);
    }
    asm.place(next);
}

/// Adds the frame's differences to the sums `r0` points to (a followed cgroup's, this CPU's).
fn add_differences(asm: &mut Asm, events: usize, access: Access) {
    for event in 0..events {
        for field in 0..3 {
            let at = (READING_BYTES * event + 8 * field) as i16;
            asm.load64(R1, R10, difference(events, event, field));
            match access {
                Access::Plain => {
                    asm.load64(R2, R0, at);
                    asm.add(R2, R1);
                    asm.store64(R0, at, R2);
                }
                Access::Atomic => asm.atomic_add64(R0, at, R1),
            }
        }
    }
}

/// The program that counts removals of cgroups (at the tracepoint `cgroup:cgroup_rmdir`): one
/// more in the u64 `removals` holds (a one-value `BPF_MAP_TYPE_ARRAY`), by an atomic add.
pub fn counting_removals(removals: BorrowedFd<'_>) -> Vec<u64> {
    let mut asm = Asm::default();
    asm.load_map_value(R1, removals, 0);
    asm.mov_imm(R2, 1);
    asm.atomic_add64(R1, 0, R2);
    asm.mov_imm(R0, 0);
    asm.exit();
    asm.finish()
}

/// Where the cgroup at `CGROUP_ID` is not refused and its parent (`PARENT_ID`) adopts its
/// children, puts it in the cgroups map, its sums zero (`BPF_NOEXIST`: one put there
/// meanwhile stays), and leaves `r0` pointing at its sums; else jumps to `skip`. Where the
/// parent adopts more than one level, the child adopts its own children, one level fewer
/// ([`EVERY_LEVEL`] stays): a task placed levels below a cgroup made a moment before
/// (slurmstepd's `job_N/step_0/user/task_T`) is counted at each level from its first switch,
/// the levels visited from the root down. The maps' capacity bounds what is adopted: an
/// update into a full map fails, and the cgroup is not counted (or adopts nothing).
fn adopt(asm: &mut Asm, maps: Maps<'_>, skip: Label) {
    asm.load_map(R1, maps.refused);
    asm.mov(R2, R10);
    asm.add_imm(R2, i32::from(CGROUP_ID));
    asm.call(MAP_LOOKUP_ELEM);
    asm.jump_if_ne(R0, 0, skip);
    asm.load_map(R1, maps.adopting);
    asm.mov(R2, R10);
    asm.add_imm(R2, i32::from(PARENT_ID));
    asm.call(MAP_LOOKUP_ELEM);
    asm.jump_if_eq(R0, 0, skip);
    // r6: the parent's entry, its levels.
    asm.mov(R6, R0);
    asm.load_map(R1, maps.cgroups);
    asm.mov(R2, R10);
    asm.add_imm(R2, i32::from(CGROUP_ID));
    asm.load_map_value(R3, maps.zeros, 0);
    asm.mov_imm(R4, NOEXIST);
    asm.call(MAP_UPDATE_ELEM);
    // The child's own entry: the parent's levels less one (none at 0), every level kept.
    let (counted, fewer, keep) = (asm.label(), asm.label(), asm.label());
    asm.load8(R1, R6, 0);
    asm.jump_if_ge(R1, i32::from(EVERY_LEVEL), keep);
    asm.jump_if_ge(R1, 2, fewer);
    asm.jump_always(counted);
    asm.place(fewer);
    asm.add_imm(R1, -1);
    asm.place(keep);
    asm.store8(R10, KEY, R1);
    asm.load_map(R1, maps.adopting);
    asm.mov(R2, R10);
    asm.add_imm(R2, i32::from(CGROUP_ID));
    asm.mov(R3, R10);
    asm.add_imm(R3, i32::from(KEY));
    asm.mov_imm(R4, NOEXIST);
    asm.call(MAP_UPDATE_ELEM);
    asm.place(counted);
    lookup_cgroup(asm, maps);
    asm.jump_if_eq(R0, 0, skip);
}

/// `r0 = bpf_map_lookup_elem(cgroups, &cgroup_id)`.
fn lookup_cgroup(asm: &mut Asm, maps: Maps<'_>) {
    asm.load_map(R1, maps.cgroups);
    asm.mov(R2, R10);
    asm.add_imm(R2, i32::from(CGROUP_ID));
    asm.call(MAP_LOOKUP_ELEM);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_fits_the_stack_and_keeps_its_parts_apart() {
        // Oracle: the kernel's MAX_BPF_STACK (512 bytes, include/linux/filter.h).
        let lowest = difference(MAX_EVENTS, 0, 0);
        assert!(i64::from(lowest) >= -512, "{lowest}");
        // The last event's running time ends just below the parent's id.
        assert_eq!(difference(MAX_EVENTS, MAX_EVENTS - 1, 2) + 8, PARENT_ID);
        assert_eq!(difference(1, 0, 0), PARENT_ID - 24);
    }
}
