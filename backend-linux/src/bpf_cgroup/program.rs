//! The counting program, as perf's `bperf_cgroup` counts (tools/perf/util/bpf_skel/
//! bperf_cgroup.bpf.c): run at every cgroup switch on a CPU, in the context of the task
//! switched out, it reads each event's counter on this CPU (`bpf_perf_event_read_value`:
//! value, time enabled, time running), takes the difference from the previous reading on this
//! CPU, and adds it to the cgroup of that task at every level of its hierarchy, from the root
//! down (`bpf_get_current_ancestor_cgroup_id`). A cgroup seen for the first time is added
//! to the map then (`BPF_NOEXIST`), so it is counted from its first run; where the map is
//! full the level is counted as lost, never silently.
//!
//! Written by [`super::insn`], checked by the kernel's verifier at every load. Helpers, each
//! available to perf event and raw tracepoint programs (kernel/trace/bpf_trace.c's
//! `bpf_tracing_func_proto`): `bpf_map_lookup_elem` (1), `bpf_map_update_elem` (2),
//! `bpf_get_smp_processor_id` (8), `bpf_perf_event_read_value` (55, Linux 4.15),
//! `bpf_get_current_ancestor_cgroup_id` (123, Linux 5.6).

use std::os::fd::BorrowedFd;

use super::insn::{Asm, Label, R0, R1, R2, R3, R4, R9, R10};

/// `BPF_FUNC_map_lookup_elem`.
const MAP_LOOKUP_ELEM: i32 = 1;
/// `BPF_FUNC_map_update_elem`.
const MAP_UPDATE_ELEM: i32 = 2;
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
/// The deepest level of the hierarchy counted (the root is level 0): a cgroup deeper than
/// this is counted in its ancestors down to this level.
pub const MAX_LEVELS: usize = 16;

/// Where the program keeps its counts: each event's value, time enabled and time running
/// (`struct bpf_perf_event_value`, 24 bytes) in each map.
pub const READING_BYTES: usize = 24;

/// The statistics map's slots (a per-CPU array of u64).
pub mod stat {
    /// Levels not counted: the cgroup map was full (or busy).
    pub const LOST: u32 = 0;
    /// Cgroups added to the map.
    pub const ADDED: u32 = 1;
    /// How many slots.
    pub const SLOTS: u32 = 2;
}

/// The maps a program works on.
#[derive(Clone, Copy)]
pub struct Maps<'m> {
    /// `BPF_MAP_TYPE_PERF_EVENT_ARRAY`: event `e` on CPU `c` at `e * stride + c`.
    pub events: BorrowedFd<'m>,
    /// `BPF_MAP_TYPE_PERCPU_ARRAY`: each event's previous reading on each CPU.
    pub previous: BorrowedFd<'m>,
    /// `BPF_MAP_TYPE_PERCPU_HASH`: by cgroup id, every event's sums on each CPU.
    pub cgroups: BorrowedFd<'m>,
    /// `BPF_MAP_TYPE_PERCPU_ARRAY`: the [`stat`] slots.
    pub stats: BorrowedFd<'m>,
}

// The frame: the reading (24 bytes), a u32 key, the cgroup id, then each event's difference.
const READING: i16 = -24;
const KEY: i16 = -32;
const CGROUP_ID: i16 = -40;

/// The frame offset of event `event`'s differences of `events`.
fn difference(events: usize, event: usize, field: usize) -> i16 {
    (i64::from(CGROUP_ID) - (READING_BYTES * (events - event)) as i64 + 8 * field as i64) as i16
}

/// The program for `events` events (at most [`MAX_EVENTS`]) whose counters on CPU `c` are
/// at `e * stride + c` of `maps.events`.
pub fn counting(maps: Maps<'_>, events: usize, stride: u32) -> Vec<u64> {
    debug_assert!((1..=MAX_EVENTS).contains(&events));
    let mut asm = Asm::default();
    asm.call(GET_SMP_PROCESSOR_ID);
    asm.mov(R9, R0);
    for event in 0..events {
        differences(&mut asm, maps, events, event, stride);
    }
    let done = asm.label();
    for level in 0..MAX_LEVELS {
        add_to_level(&mut asm, maps, events, level as i32, done);
    }
    asm.place(done);
    asm.mov_imm(R0, 0);
    asm.exit();
    asm.finish()
}

/// Reads event `event` on this CPU (`r9`) and writes its differences from the previous
/// reading into the frame, and the reading as the previous one; zero differences where it
/// cannot be read.
fn differences(asm: &mut Asm, maps: Maps<'_>, events: usize, event: usize, stride: u32) {
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
        asm.load64(R2, R0, at);
        asm.store64(R0, at, R1);
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

/// Adds the frame's differences to the cgroup of the current task at `level` (to `done`
/// where the hierarchy has no such level).
fn add_to_level(asm: &mut Asm, maps: Maps<'_>, events: usize, level: i32, done: Label) {
    let (add, added, lost, next) = (asm.label(), asm.label(), asm.label(), asm.label());
    asm.mov_imm(R1, level);
    asm.call(GET_CURRENT_ANCESTOR_CGROUP_ID);
    asm.jump_if_eq(R0, 0, done);
    asm.store64(R10, CGROUP_ID, R0);
    lookup_cgroup(asm, maps);
    asm.jump_if_ne(R0, 0, add);
    // First seen: the differences are its first sums (zero on the other CPUs).
    asm.load_map(R1, maps.cgroups);
    asm.mov(R2, R10);
    asm.add_imm(R2, i32::from(CGROUP_ID));
    asm.mov(R3, R10);
    asm.add_imm(R3, i32::from(difference(events, 0, 0)));
    asm.mov_imm(R4, crate::sys::bpf::BPF_NOEXIST as i32);
    asm.call(MAP_UPDATE_ELEM);
    asm.jump_if_eq(R0, 0, added);
    // Added by another CPU meanwhile: add to it; full (E2BIG) or busy: lost.
    asm.jump_if_ne(R0, -libc::EEXIST, lost);
    lookup_cgroup(asm, maps);
    asm.jump_if_eq(R0, 0, lost);
    asm.place(add);
    for event in 0..events {
        for field in 0..3 {
            let at = (READING_BYTES * event + 8 * field) as i16;
            asm.load64(R1, R10, difference(events, event, field));
            asm.load64(R2, R0, at);
            asm.add(R2, R1);
            asm.store64(R0, at, R2);
        }
    }
    asm.jump_always(next);
    asm.place(added);
    count(asm, maps, stat::ADDED, next);
    asm.jump_always(next);
    asm.place(lost);
    count(asm, maps, stat::LOST, next);
    asm.place(next);
}

/// `r0 = bpf_map_lookup_elem(cgroups, &cgroup_id)`.
fn lookup_cgroup(asm: &mut Asm, maps: Maps<'_>) {
    asm.load_map(R1, maps.cgroups);
    asm.mov(R2, R10);
    asm.add_imm(R2, i32::from(CGROUP_ID));
    asm.call(MAP_LOOKUP_ELEM);
}

/// Adds one to statistics slot `slot` on this CPU (to `next` where it cannot be found).
fn count(asm: &mut Asm, maps: Maps<'_>, slot: u32, next: Label) {
    asm.mov_imm(R1, slot as i32);
    asm.store32(R10, KEY, R1);
    asm.load_map(R1, maps.stats);
    asm.mov(R2, R10);
    asm.add_imm(R2, i32::from(KEY));
    asm.call(MAP_LOOKUP_ELEM);
    asm.jump_if_eq(R0, 0, next);
    asm.load64(R1, R0, 0);
    asm.add_imm(R1, 1);
    asm.store64(R0, 0, R1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_fits_the_stack_and_keeps_its_parts_apart() {
        // Oracle: the kernel's MAX_BPF_STACK (512 bytes, include/linux/filter.h).
        let lowest = difference(MAX_EVENTS, 0, 0);
        assert!(i64::from(lowest) >= -512, "{lowest}");
        // The last event's running time ends just below the cgroup id.
        assert_eq!(difference(MAX_EVENTS, MAX_EVENTS - 1, 2) + 8, CGROUP_ID);
        assert_eq!(difference(1, 0, 0), CGROUP_ID - 24);
    }
}
