//! The kernel interface: `perf_event_attr`, the mmap page, the ioctls, and the few system calls
//! the backend makes. Everything `unsafe` in this crate is in this module.
//!
//! # Safety
//!
//! The invariants every `unsafe` block here relies on:
//! - [`PerfEventAttr`] and [`PerfEventMmapPage`] are `#[repr(C)]` copies of the kernel's structs
//!   whose sizes and offsets are pinned by `const` assertions below and checked against the
//!   system header by a test; the kernel only reads `attr.size` bytes and writes back `size`.
//! - File descriptors are passed in as [`BorrowedFd`] (open for the duration of the call) and
//!   returned as [`OwnedFd`] (owned by exactly one value, closed on drop); no raw fd escapes.
//! - A [`UserPageMap`] owns its mapping from `mmap` to `munmap` and is only read through
//!   volatile loads, because the kernel updates the page concurrently.
//! - After `fork` the child calls only async-signal-safe functions (`close`, `read`, `write`,
//!   `execv`, `_exit`) on data prepared before the fork.

use std::ffi::{CStr, CString};
use std::mem::{offset_of, size_of};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{Ordering, compiler_fence};

use crate::rdpmc::{PageSnapshot, UserPage};

/// An OS error number (`errno`).
pub type Errno = i32;

// The `PERF_TYPE_*` values live with the generic encodings in the event database; the layout
// test pins them against the system header through these names.
pub use counterhal_events::perf::{
    TYPE_BREAKPOINT, TYPE_HARDWARE, TYPE_HW_CACHE, TYPE_RAW, TYPE_SOFTWARE, TYPE_TRACEPOINT,
};

/// `PERF_FORMAT_TOTAL_TIME_ENABLED`.
pub const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
/// `PERF_FORMAT_TOTAL_TIME_RUNNING`.
pub const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
/// `PERF_FORMAT_ID`.
pub const FORMAT_ID: u64 = 1 << 2;
/// `PERF_FORMAT_GROUP`.
pub const FORMAT_GROUP: u64 = 1 << 3;
/// `PERF_FORMAT_LOST`.
#[cfg_attr(not(test), allow(dead_code))] // pinned against the header by the layout test
pub const FORMAT_LOST: u64 = 1 << 4;

/// `PERF_ATTR_SIZE_VER0`: the first published size.
pub const ATTR_SIZE_VER0: u32 = 64;
/// `PERF_ATTR_SIZE_VER7` (adds `sig_data`).
#[cfg_attr(not(test), allow(dead_code))] // pinned against the header by the layout test
pub const ATTR_SIZE_VER7: u32 = 128;
/// `PERF_ATTR_SIZE_VER8` (adds `config3`): the size this crate speaks.
pub const ATTR_SIZE_VER8: u32 = 136;

/// `PERF_FLAG_FD_CLOEXEC`: the new fd is close-on-exec.
pub const FLAG_FD_CLOEXEC: u64 = 1 << 3;
/// `PERF_IOC_FLAG_GROUP`: an ioctl on a leader applies to its whole group.
pub const IOC_FLAG_GROUP: u64 = 1 << 0;

/// Bit positions of the `perf_event_attr` flag word (offset 40), in header order. The backend
/// sets a few; all are pinned so that a wrong position cannot hide.
#[cfg_attr(not(test), allow(dead_code))] // pinned against the header by the layout test
pub mod attr_bit {
    /// Starts disabled.
    pub const DISABLED: u32 = 0;
    /// Children inherit the counter.
    pub const INHERIT: u32 = 1;
    /// Must always be on the PMU.
    pub const PINNED: u32 = 2;
    /// The only group on the PMU.
    pub const EXCLUSIVE: u32 = 3;
    /// Does not count user mode.
    pub const EXCLUDE_USER: u32 = 4;
    /// Does not count kernel mode.
    pub const EXCLUDE_KERNEL: u32 = 5;
    /// Does not count the hypervisor.
    pub const EXCLUDE_HV: u32 = 6;
    /// Does not count when idle.
    pub const EXCLUDE_IDLE: u32 = 7;
    /// Records mmap events.
    pub const MMAP: u32 = 8;
    /// Records comm events.
    pub const COMM: u32 = 9;
    /// `sample_freq`, not `sample_period`.
    pub const FREQ: u32 = 10;
    /// Per-task counts on inherit.
    pub const INHERIT_STAT: u32 = 11;
    /// The next exec enables the counter.
    pub const ENABLE_ON_EXEC: u32 = 12;
    /// Records fork/exit.
    pub const TASK: u32 = 13;
    /// `wakeup_watermark`, not `wakeup_events`.
    pub const WATERMARK: u32 = 14;
    /// Skid constraint (two bits: 15 and 16).
    pub const PRECISE_IP: u32 = 15;
    /// Records non-exec mmap data.
    pub const MMAP_DATA: u32 = 17;
    /// `sample_type` applies to all records.
    pub const SAMPLE_ID_ALL: u32 = 18;
    /// Does not count in the host.
    pub const EXCLUDE_HOST: u32 = 19;
    /// Does not count in guests.
    pub const EXCLUDE_GUEST: u32 = 20;
    /// Excludes kernel call chains.
    pub const EXCLUDE_CALLCHAIN_KERNEL: u32 = 21;
    /// Excludes user call chains.
    pub const EXCLUDE_CALLCHAIN_USER: u32 = 22;
    /// Records mmap2 events.
    pub const MMAP2: u32 = 23;
    /// Flags comm events due to exec.
    pub const COMM_EXEC: u32 = 24;
    /// Uses `clockid` for times.
    pub const USE_CLOCKID: u32 = 25;
    /// Records context switches.
    pub const CONTEXT_SWITCH: u32 = 26;
    /// Writes the ring buffer backwards.
    pub const WRITE_BACKWARD: u32 = 27;
    /// Records namespaces.
    pub const NAMESPACES: u32 = 28;
    /// Records ksymbol events.
    pub const KSYMBOL: u32 = 29;
    /// Records bpf events.
    pub const BPF_EVENT: u32 = 30;
    /// AUX records instead of events.
    pub const AUX_OUTPUT: u32 = 31;
    /// Records cgroup events.
    pub const CGROUP: u32 = 32;
    /// Records text poke events.
    pub const TEXT_POKE: u32 = 33;
    /// Build ids in mmap2 events.
    pub const BUILD_ID: u32 = 34;
    /// Inherits only to threads.
    pub const INHERIT_THREAD: u32 = 35;
    /// Removed from the task on exec.
    pub const REMOVE_ON_EXEC: u32 = 36;
    /// Sends SIGTRAP on overflow.
    pub const SIGTRAP: u32 = 37;

    /// Every single-bit flag with its header name (for the layout test).
    pub const ALL: [(&str, u32); 37] = [
        ("disabled", DISABLED),
        ("inherit", INHERIT),
        ("pinned", PINNED),
        ("exclusive", EXCLUSIVE),
        ("exclude_user", EXCLUDE_USER),
        ("exclude_kernel", EXCLUDE_KERNEL),
        ("exclude_hv", EXCLUDE_HV),
        ("exclude_idle", EXCLUDE_IDLE),
        ("mmap", MMAP),
        ("comm", COMM),
        ("freq", FREQ),
        ("inherit_stat", INHERIT_STAT),
        ("enable_on_exec", ENABLE_ON_EXEC),
        ("task", TASK),
        ("watermark", WATERMARK),
        ("mmap_data", MMAP_DATA),
        ("sample_id_all", SAMPLE_ID_ALL),
        ("exclude_host", EXCLUDE_HOST),
        ("exclude_guest", EXCLUDE_GUEST),
        ("exclude_callchain_kernel", EXCLUDE_CALLCHAIN_KERNEL),
        ("exclude_callchain_user", EXCLUDE_CALLCHAIN_USER),
        ("mmap2", MMAP2),
        ("comm_exec", COMM_EXEC),
        ("use_clockid", USE_CLOCKID),
        ("context_switch", CONTEXT_SWITCH),
        ("write_backward", WRITE_BACKWARD),
        ("namespaces", NAMESPACES),
        ("ksymbol", KSYMBOL),
        ("bpf_event", BPF_EVENT),
        ("aux_output", AUX_OUTPUT),
        ("cgroup", CGROUP),
        ("text_poke", TEXT_POKE),
        ("build_id", BUILD_ID),
        ("inherit_thread", INHERIT_THREAD),
        ("remove_on_exec", REMOVE_ON_EXEC),
        ("sigtrap", SIGTRAP),
        ("precise_ip", PRECISE_IP),
    ];
}

/// The kernel's `struct perf_event_attr` at `PERF_ATTR_SIZE_VER8` (136 bytes). Unions are
/// represented by one field named after their first member; the flag bit-field is one word
/// addressed through [`attr_bit`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfEventAttr {
    /// `type`: the PMU.
    pub type_: u32,
    /// `size`: of this struct, as the caller knows it.
    pub size: u32,
    /// `config`.
    pub config: u64,
    /// `sample_period` / `sample_freq`.
    pub sample_period: u64,
    /// `sample_type`.
    pub sample_type: u64,
    /// `read_format`.
    pub read_format: u64,
    /// The bit-field word (`disabled` ... `sigtrap`).
    pub flags: u64,
    /// `wakeup_events` / `wakeup_watermark`.
    pub wakeup_events: u32,
    /// `bp_type`.
    pub bp_type: u32,
    /// `bp_addr` / `kprobe_func` / `uprobe_path` / `config1`.
    pub config1: u64,
    /// `bp_len` / `kprobe_addr` / `probe_offset` / `config2`.
    pub config2: u64,
    /// `branch_sample_type`.
    pub branch_sample_type: u64,
    /// `sample_regs_user`.
    pub sample_regs_user: u64,
    /// `sample_stack_user`.
    pub sample_stack_user: u32,
    /// `clockid`.
    pub clockid: i32,
    /// `sample_regs_intr`.
    pub sample_regs_intr: u64,
    /// `aux_watermark`.
    pub aux_watermark: u32,
    /// `sample_max_stack`.
    pub sample_max_stack: u16,
    /// `__reserved_2`.
    pub reserved_2: u16,
    /// `aux_sample_size`.
    pub aux_sample_size: u32,
    /// `aux_action` bits / `__reserved_3`.
    pub reserved_3: u32,
    /// `sig_data`.
    pub sig_data: u64,
    /// `config3` (VER8).
    pub config3: u64,
}

impl PerfEventAttr {
    /// Sets or clears flag bit `bit` (an [`attr_bit`] constant).
    pub fn set_flag(&mut self, bit: u32, on: bool) {
        if on {
            self.flags |= 1 << bit;
        } else {
            self.flags &= !(1 << bit);
        }
    }

    /// Whether flag bit `bit` is set.
    pub fn flag(&self, bit: u32) -> bool {
        self.flags & (1 << bit) != 0
    }

    /// The struct as bytes (for checking what lies beyond a size the kernel knows).
    fn bytes(&self) -> [u8; ATTR_SIZE_VER8 as usize] {
        let mut out = [0u8; ATTR_SIZE_VER8 as usize];
        let words: [u64; 17] = [
            u64::from(self.type_) | (u64::from(self.size) << 32),
            self.config,
            self.sample_period,
            self.sample_type,
            self.read_format,
            self.flags,
            u64::from(self.wakeup_events) | (u64::from(self.bp_type) << 32),
            self.config1,
            self.config2,
            self.branch_sample_type,
            self.sample_regs_user,
            u64::from(self.sample_stack_user) | (u64::from(self.clockid as u32) << 32),
            self.sample_regs_intr,
            u64::from(self.aux_watermark)
                | (u64::from(self.sample_max_stack) << 32)
                | (u64::from(self.reserved_2) << 48),
            u64::from(self.aux_sample_size) | (u64::from(self.reserved_3) << 32),
            self.sig_data,
            self.config3,
        ];
        for (chunk, word) in out.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        out
    }
}

const _: () = {
    assert!(size_of::<PerfEventAttr>() == ATTR_SIZE_VER8 as usize);
    assert!(offset_of!(PerfEventAttr, type_) == 0);
    assert!(offset_of!(PerfEventAttr, size) == 4);
    assert!(offset_of!(PerfEventAttr, config) == 8);
    assert!(offset_of!(PerfEventAttr, sample_period) == 16);
    assert!(offset_of!(PerfEventAttr, sample_type) == 24);
    assert!(offset_of!(PerfEventAttr, read_format) == 32);
    assert!(offset_of!(PerfEventAttr, flags) == 40);
    assert!(offset_of!(PerfEventAttr, wakeup_events) == 48);
    assert!(offset_of!(PerfEventAttr, bp_type) == 52);
    assert!(offset_of!(PerfEventAttr, config1) == 56);
    assert!(offset_of!(PerfEventAttr, config2) == 64);
    assert!(offset_of!(PerfEventAttr, branch_sample_type) == 72);
    assert!(offset_of!(PerfEventAttr, sample_regs_user) == 80);
    assert!(offset_of!(PerfEventAttr, sample_stack_user) == 88);
    assert!(offset_of!(PerfEventAttr, clockid) == 92);
    assert!(offset_of!(PerfEventAttr, sample_regs_intr) == 96);
    assert!(offset_of!(PerfEventAttr, aux_watermark) == 104);
    assert!(offset_of!(PerfEventAttr, sample_max_stack) == 108);
    assert!(offset_of!(PerfEventAttr, reserved_2) == 110);
    assert!(offset_of!(PerfEventAttr, aux_sample_size) == 112);
    assert!(offset_of!(PerfEventAttr, reserved_3) == 116);
    assert!(offset_of!(PerfEventAttr, sig_data) == 120);
    assert!(offset_of!(PerfEventAttr, config3) == 128);
};

/// Bit positions of the mmap page's `capabilities` word.
#[cfg_attr(not(test), allow(dead_code))] // pinned against the header by the layout test
pub mod cap_bit {
    /// `cap_bit0` (always 0, deprecated).
    pub const BIT0: u32 = 0;
    /// `cap_bit0_is_deprecated` (always 1).
    pub const BIT0_IS_DEPRECATED: u32 = 1;
    /// `cap_user_rdpmc`: the counter may be read with `rdpmc`.
    pub const USER_RDPMC: u32 = 2;
    /// `cap_user_time`: `time_shift/mult/offset` are valid.
    pub const USER_TIME: u32 = 3;
    /// `cap_user_time_zero`: `time_zero` is valid.
    pub const USER_TIME_ZERO: u32 = 4;
    /// `cap_user_time_short`: `time_cycles/mask` are valid.
    pub const USER_TIME_SHORT: u32 = 5;
}

/// The kernel's `struct perf_event_mmap_page` (the first page of an event's mapping).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PerfEventMmapPage {
    /// `version`.
    pub version: u32,
    /// `compat_version`.
    pub compat_version: u32,
    /// `lock`: the seqlock.
    pub lock: u32,
    /// `index`: hardware counter + 1, or 0.
    pub index: u32,
    /// `offset`: added to the counter's value.
    pub offset: i64,
    /// `time_enabled`.
    pub time_enabled: u64,
    /// `time_running`.
    pub time_running: u64,
    /// `capabilities` (see [`cap_bit`]).
    pub capabilities: u64,
    /// `pmc_width`.
    pub pmc_width: u16,
    /// `time_shift`.
    pub time_shift: u16,
    /// `time_mult`.
    pub time_mult: u32,
    /// `time_offset`.
    pub time_offset: u64,
    /// `time_zero`.
    pub time_zero: u64,
    /// `size`.
    pub size: u32,
    /// `__reserved_1`.
    pub reserved_1: u32,
    /// `time_cycles`.
    pub time_cycles: u64,
    /// `time_mask`.
    pub time_mask: u64,
    /// `__reserved` (aligns to 1 KiB).
    pub reserved: [u8; 116 * 8],
    /// `data_head`.
    pub data_head: u64,
    /// `data_tail`.
    pub data_tail: u64,
    /// `data_offset`.
    pub data_offset: u64,
    /// `data_size`.
    pub data_size: u64,
    /// `aux_head`.
    pub aux_head: u64,
    /// `aux_tail`.
    pub aux_tail: u64,
    /// `aux_offset`.
    pub aux_offset: u64,
    /// `aux_size`.
    pub aux_size: u64,
}

impl Default for PerfEventMmapPage {
    fn default() -> Self {
        Self {
            version: 0,
            compat_version: 0,
            lock: 0,
            index: 0,
            offset: 0,
            time_enabled: 0,
            time_running: 0,
            capabilities: 0,
            pmc_width: 0,
            time_shift: 0,
            time_mult: 0,
            time_offset: 0,
            time_zero: 0,
            size: 0,
            reserved_1: 0,
            time_cycles: 0,
            time_mask: 0,
            reserved: [0; 116 * 8],
            data_head: 0,
            data_tail: 0,
            data_offset: 0,
            data_size: 0,
            aux_head: 0,
            aux_tail: 0,
            aux_offset: 0,
            aux_size: 0,
        }
    }
}

impl PerfEventMmapPage {
    /// The fields the self-monitoring read uses (a plain copy; for page images in tests).
    #[cfg(test)]
    pub fn snapshot(&self) -> PageSnapshot {
        PageSnapshot {
            index: self.index,
            offset: self.offset,
            time_enabled: self.time_enabled,
            time_running: self.time_running,
            capabilities: self.capabilities,
            pmc_width: self.pmc_width,
            time_shift: self.time_shift,
            time_mult: self.time_mult,
            time_offset: self.time_offset,
            time_zero: self.time_zero,
            time_cycles: self.time_cycles,
            time_mask: self.time_mask,
        }
    }
}

const _: () = {
    assert!(size_of::<PerfEventMmapPage>() == 1088);
    assert!(offset_of!(PerfEventMmapPage, lock) == 8);
    assert!(offset_of!(PerfEventMmapPage, index) == 12);
    assert!(offset_of!(PerfEventMmapPage, offset) == 16);
    assert!(offset_of!(PerfEventMmapPage, time_enabled) == 24);
    assert!(offset_of!(PerfEventMmapPage, time_running) == 32);
    assert!(offset_of!(PerfEventMmapPage, capabilities) == 40);
    assert!(offset_of!(PerfEventMmapPage, pmc_width) == 48);
    assert!(offset_of!(PerfEventMmapPage, time_shift) == 50);
    assert!(offset_of!(PerfEventMmapPage, time_mult) == 52);
    assert!(offset_of!(PerfEventMmapPage, time_offset) == 56);
    assert!(offset_of!(PerfEventMmapPage, time_zero) == 64);
    assert!(offset_of!(PerfEventMmapPage, size) == 72);
    assert!(offset_of!(PerfEventMmapPage, time_cycles) == 80);
    assert!(offset_of!(PerfEventMmapPage, time_mask) == 88);
    assert!(offset_of!(PerfEventMmapPage, data_head) == 1024);
    assert!(offset_of!(PerfEventMmapPage, aux_size) == 1080);
};

/// `_IOC(dir, type, nr, size)` as asm-generic defines it (x86, arm64, riscv).
const fn ioc(dir: u64, kind: u8, nr: u8, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | ((kind as u64) << 8) | nr as u64
}
const IOC_NONE: u64 = 0;
const IOC_WRITE: u64 = 1;
const IOC_READ: u64 = 2;

/// `PERF_EVENT_IOC_ENABLE`.
pub const IOC_ENABLE: u64 = ioc(IOC_NONE, b'$', 0, 0);
/// `PERF_EVENT_IOC_DISABLE`.
pub const IOC_DISABLE: u64 = ioc(IOC_NONE, b'$', 1, 0);
/// `PERF_EVENT_IOC_REFRESH`.
pub const IOC_REFRESH: u64 = ioc(IOC_NONE, b'$', 2, 0);
/// `PERF_EVENT_IOC_RESET`.
pub const IOC_RESET: u64 = ioc(IOC_NONE, b'$', 3, 0);
/// `PERF_EVENT_IOC_PERIOD`.
pub const IOC_PERIOD: u64 = ioc(IOC_WRITE, b'$', 4, size_of::<u64>());
/// `PERF_EVENT_IOC_SET_OUTPUT`.
pub const IOC_SET_OUTPUT: u64 = ioc(IOC_NONE, b'$', 5, 0);
/// `PERF_EVENT_IOC_SET_FILTER`.
pub const IOC_SET_FILTER: u64 = ioc(IOC_WRITE, b'$', 6, size_of::<*const u8>());
/// `PERF_EVENT_IOC_ID`.
pub const IOC_ID: u64 = ioc(IOC_READ, b'$', 7, size_of::<*mut u64>());
/// `PERF_EVENT_IOC_SET_BPF`.
#[cfg_attr(not(test), allow(dead_code))] // pinned against the header by the layout test
pub const IOC_SET_BPF: u64 = ioc(IOC_WRITE, b'$', 8, size_of::<u32>());
/// `PERF_EVENT_IOC_PAUSE_OUTPUT`.
#[cfg_attr(not(test), allow(dead_code))] // pinned against the header by the layout test
pub const IOC_PAUSE_OUTPUT: u64 = ioc(IOC_WRITE, b'$', 9, size_of::<u32>());

fn last_errno() -> Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Why `perf_event_open` failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFailure {
    /// The errno of the last attempt.
    pub errno: Errno,
    /// For E2BIG: the attr size the kernel wrote back (the size it knows), when it wrote one.
    pub kernel_size: Option<u32>,
    /// For E2BIG: the first attr field beyond `kernel_size` that is set (so cannot be dropped).
    pub field: Option<&'static str>,
}

impl OpenFailure {
    fn errno(errno: Errno) -> OpenFailure {
        OpenFailure {
            errno,
            kernel_size: None,
            field: None,
        }
    }
}

/// The attr fields that can lie beyond an older kernel's size: (name, offset, length).
const LATE_FIELDS: [(&str, usize, usize); 13] = [
    ("config2", offset_of!(PerfEventAttr, config2), 8),
    (
        "branch_sample_type",
        offset_of!(PerfEventAttr, branch_sample_type),
        8,
    ),
    (
        "sample_regs_user",
        offset_of!(PerfEventAttr, sample_regs_user),
        8,
    ),
    (
        "sample_stack_user",
        offset_of!(PerfEventAttr, sample_stack_user),
        4,
    ),
    ("clockid", offset_of!(PerfEventAttr, clockid), 4),
    (
        "sample_regs_intr",
        offset_of!(PerfEventAttr, sample_regs_intr),
        8,
    ),
    ("aux_watermark", offset_of!(PerfEventAttr, aux_watermark), 4),
    (
        "sample_max_stack",
        offset_of!(PerfEventAttr, sample_max_stack),
        2,
    ),
    ("__reserved_2", offset_of!(PerfEventAttr, reserved_2), 2),
    (
        "aux_sample_size",
        offset_of!(PerfEventAttr, aux_sample_size),
        4,
    ),
    ("aux_action", offset_of!(PerfEventAttr, reserved_3), 4),
    ("sig_data", offset_of!(PerfEventAttr, sig_data), 8),
    ("config3", offset_of!(PerfEventAttr, config3), 8),
];

impl PerfEventAttr {
    /// The first field at or beyond byte `size` that holds a nonzero byte, by header name.
    pub fn first_set_field_beyond(&self, size: u32) -> Option<&'static str> {
        let bytes = self.bytes();
        let size = size as usize;
        LATE_FIELDS.iter().find_map(|&(name, offset, len)| {
            let from = offset.max(size);
            let to = offset + len;
            (from < to && bytes[from..to].iter().any(|b| *b != 0)).then_some(name)
        })
    }
}

/// The E2BIG protocol around one `perf_event_open` call, with the system call injected.
///
/// `call` makes the system call with `attr` (EINTR is retried). When it fails with E2BIG the
/// kernel has written the size it knows into `attr.size`: if that size is smaller than ours and
/// every byte beyond it is zero, the call is retried once with that size; otherwise the failure
/// carries the written-back size and the first field beyond it that is set. `attr.size` is left
/// at the size of the last attempt that succeeded, or restored to the caller's on failure.
///
/// # Errors
/// The errno of the last attempt, with the kernel's size and the offending field for E2BIG.
pub fn open_retrying_e2big<T>(
    attr: &mut PerfEventAttr,
    mut call: impl FnMut(&mut PerfEventAttr) -> Result<T, Errno>,
) -> Result<T, OpenFailure> {
    let asked = attr.size;
    let mut retried = false;
    loop {
        let tried = attr.size;
        let errno = match call(attr) {
            Ok(value) => return Ok(value),
            Err(libc::EINTR) => {
                attr.size = tried;
                continue;
            }
            Err(errno) => errno,
        };
        let written = attr.size;
        attr.size = asked;
        if errno != libc::E2BIG {
            return Err(OpenFailure::errno(errno));
        }
        let kernel_size = (written != tried).then_some(written);
        match kernel_size {
            Some(size) if !retried && (ATTR_SIZE_VER0..tried).contains(&size) => {
                if let Some(field) = attr.first_set_field_beyond(size) {
                    return Err(OpenFailure {
                        errno,
                        kernel_size,
                        field: Some(field),
                    });
                }
                retried = true;
                attr.size = size;
            }
            _ => {
                return Err(OpenFailure {
                    errno,
                    kernel_size,
                    field: kernel_size.and_then(|size| attr.first_set_field_beyond(size)),
                });
            }
        }
    }
}

/// `perf_event_open(attr, pid, cpu, group_fd, flags | FD_CLOEXEC)`, with the E2BIG protocol
/// of [`open_retrying_e2big`].
///
/// # Errors
/// The kernel's errno, with the written-back size for E2BIG.
pub fn perf_event_open(
    attr: &mut PerfEventAttr,
    pid: i32,
    cpu: i32,
    group: Option<BorrowedFd<'_>>,
    flags: u64,
) -> Result<OwnedFd, OpenFailure> {
    let group_fd = group.map_or(-1, |fd| fd.as_raw_fd());
    open_retrying_e2big(attr, |attr| {
        let attr_ptr: *mut PerfEventAttr = attr;
        // SAFETY: `attr_ptr` points to a live, initialised PerfEventAttr of `attr.size` <= 136
        // bytes; the kernel reads at most `size` bytes and may write back `size`.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                attr_ptr,
                pid,
                cpu,
                group_fd,
                (flags | FLAG_FD_CLOEXEC) as libc::c_ulong,
            )
        };
        if ret < 0 {
            return Err(last_errno());
        }
        // SAFETY: the kernel just returned `ret` as a new descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(ret as i32) })
    })
}

/// `ioctl(fd, request, arg)` for the perf ioctls that take an integer argument.
///
/// # Errors
/// The errno.
pub fn ioctl_int(fd: BorrowedFd<'_>, request: u64, arg: u64) -> Result<(), Errno> {
    // SAFETY: `fd` is open for the call; the requests passed here take an integer (or none).
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg as libc::c_ulong) };
    if ret < 0 { Err(last_errno()) } else { Ok(()) }
}

/// `PERF_EVENT_IOC_PERIOD`: a new sampling period.
///
/// # Errors
/// The errno.
pub fn ioctl_period(fd: BorrowedFd<'_>, period: u64) -> Result<(), Errno> {
    let ptr: *const u64 = &period;
    // SAFETY: PERIOD reads one u64 through the pointer, which is valid for the call.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_PERIOD as _, ptr) };
    if ret < 0 { Err(last_errno()) } else { Ok(()) }
}

/// `PERF_EVENT_IOC_ID`: the event's unique id (as it appears in group reads).
///
/// # Errors
/// The errno.
pub fn ioctl_id(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    let mut id: u64 = 0;
    let ptr: *mut u64 = &mut id;
    // SAFETY: ID writes one u64 through the pointer, which is valid for the call.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_ID as _, ptr) };
    if ret < 0 { Err(last_errno()) } else { Ok(id) }
}

/// `PERF_EVENT_IOC_SET_OUTPUT`: redirect sample output to `target` (None: stop).
///
/// # Errors
/// The errno.
pub fn ioctl_set_output(fd: BorrowedFd<'_>, target: Option<BorrowedFd<'_>>) -> Result<(), Errno> {
    let arg = target.map_or(-1, |t| t.as_raw_fd());
    // SAFETY: SET_OUTPUT takes an fd number (or -1) by value; both fds are open for the call.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_SET_OUTPUT as _, arg as libc::c_long) };
    if ret < 0 { Err(last_errno()) } else { Ok(()) }
}

/// `PERF_EVENT_IOC_SET_FILTER`: a tracepoint filter expression.
///
/// # Errors
/// The errno.
pub fn ioctl_set_filter(fd: BorrowedFd<'_>, filter: &CStr) -> Result<(), Errno> {
    // SAFETY: SET_FILTER reads a NUL-terminated string, which `filter` is for the call.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_SET_FILTER as _, filter.as_ptr()) };
    if ret < 0 { Err(last_errno()) } else { Ok(()) }
}

/// `read(fd, words)`: returns the number of bytes read (EINTR retried).
///
/// # Errors
/// The errno.
#[inline]
pub fn read_words(fd: BorrowedFd<'_>, words: &mut [u64]) -> Result<usize, Errno> {
    loop {
        let len = std::mem::size_of_val(words);
        // SAFETY: `words` is valid for writes of `len` bytes and `fd` is open for the call.
        let ret = unsafe { libc::read(fd.as_raw_fd(), words.as_mut_ptr().cast(), len) };
        if ret >= 0 {
            return Ok(ret as usize);
        }
        let errno = last_errno();
        if errno != libc::EINTR {
            return Err(errno);
        }
    }
}

/// One bare `read(2)` of `fd` into `words`, returning what the system call returned (bytes, or
/// -1). No retry, no mapping: the baseline benchmarks compare the backend's reads against.
#[inline]
pub fn raw_read(fd: BorrowedFd<'_>, words: &mut [u64]) -> isize {
    let len = std::mem::size_of_val(words);
    // SAFETY: `words` is valid for writes of `len` bytes and `fd` is open for the call.
    unsafe { libc::read(fd.as_raw_fd(), words.as_mut_ptr().cast(), len) }
}

/// One bare `ioctl(fd, request, arg)` for the perf requests that take an integer (ENABLE,
/// DISABLE, RESET, REFRESH), returning what the system call returned. The baseline the
/// benchmarks compare against.
#[inline]
pub fn raw_ioctl(fd: BorrowedFd<'_>, request: u64, arg: u64) -> i32 {
    debug_assert!(matches!(
        request,
        IOC_ENABLE | IOC_DISABLE | IOC_RESET | IOC_REFRESH
    ));
    // SAFETY: `fd` is open for the call; the requests allowed here take an integer argument.
    unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg as libc::c_ulong) }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
}

/// How many CPUs the system may have (`_SC_NPROCESSORS_CONF`).
pub fn configured_cpus() -> u32 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    if n > 0 { n as u32 } else { 1 }
}

/// The effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and has no preconditions.
    unsafe { libc::geteuid() }
}

/// The soft and hard `RLIMIT_NOFILE`.
pub fn fd_limit() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let ptr: *mut libc::rlimit = &mut limit;
    // SAFETY: getrlimit writes one rlimit through a valid pointer.
    let ret = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, ptr) };
    (ret == 0).then_some((limit.rlim_cur, limit.rlim_max))
}

/// One event's first page mapped read-only: the self-monitoring page.
#[derive(Debug)]
pub struct UserPageMap {
    page: NonNull<PerfEventMmapPage>,
    len: usize,
}

// SAFETY: the mapping is owned by this value and only read (volatile) through it; the kernel is
// the only writer. Moving it to another thread does not invalidate the mapping.
unsafe impl Send for UserPageMap {}

impl UserPageMap {
    /// Maps the first page of `fd` read-only and prefaults it.
    ///
    /// # Errors
    /// The errno from `mmap`.
    pub fn map(fd: BorrowedFd<'_>) -> Result<UserPageMap, Errno> {
        let len = page_size();
        // SAFETY: a fresh shared read-only mapping of a perf fd; no existing memory is touched.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(last_errno());
        }
        let page = NonNull::new(ptr.cast::<PerfEventMmapPage>()).ok_or(libc::EINVAL)?;
        Ok(UserPageMap { page, len })
    }

    fn field<T: Copy>(&self, offset: usize) -> T {
        let ptr = self
            .page
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(offset)
            .cast::<T>();
        // SAFETY: `offset` is the offset_of! a field of type T in the mapped page, so `ptr` is
        // valid for reads while `self` lives and aligned (the page starts page-aligned).
        unsafe { ptr.read_volatile() }
    }
}

impl UserPage for UserPageMap {
    fn lock(&self) -> u32 {
        let lock = self.field(offset_of!(PerfEventMmapPage, lock));
        compiler_fence(Ordering::SeqCst);
        lock
    }

    fn snapshot(&self) -> PageSnapshot {
        compiler_fence(Ordering::SeqCst);
        let snapshot = PageSnapshot {
            index: self.field(offset_of!(PerfEventMmapPage, index)),
            offset: self.field(offset_of!(PerfEventMmapPage, offset)),
            time_enabled: self.field(offset_of!(PerfEventMmapPage, time_enabled)),
            time_running: self.field(offset_of!(PerfEventMmapPage, time_running)),
            capabilities: self.field(offset_of!(PerfEventMmapPage, capabilities)),
            pmc_width: self.field(offset_of!(PerfEventMmapPage, pmc_width)),
            time_shift: self.field(offset_of!(PerfEventMmapPage, time_shift)),
            time_mult: self.field(offset_of!(PerfEventMmapPage, time_mult)),
            time_offset: self.field(offset_of!(PerfEventMmapPage, time_offset)),
            time_zero: self.field(offset_of!(PerfEventMmapPage, time_zero)),
            time_cycles: self.field(offset_of!(PerfEventMmapPage, time_cycles)),
            time_mask: self.field(offset_of!(PerfEventMmapPage, time_mask)),
        };
        compiler_fence(Ordering::SeqCst);
        snapshot
    }
}

impl Drop for UserPageMap {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by `map` with this address and length, and nothing
        // borrows it beyond `self`.
        unsafe {
            libc::munmap(self.page.as_ptr().cast(), self.len);
        }
    }
}

/// Reads hardware counter `counter` with `rdpmc` (x86-64 only; `None` elsewhere).
///
/// Only call when the event's page says `cap_user_rdpmc` and `index == counter + 1`: the
/// kernel then allows the instruction in user mode for this task.
#[inline]
pub fn rdpmc(counter: u32) -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        let low: u32;
        let high: u32;
        // SAFETY: rdpmc reads a register and touches no memory; the caller checked that the
        // kernel enabled user-mode rdpmc for this counter (else it would fault, not corrupt).
        unsafe {
            std::arch::asm!("rdpmc", in("ecx") counter, out("eax") low, out("edx") high,
                options(nomem, nostack, preserves_flags));
        }
        Some(u64::from(low) | (u64::from(high) << 32))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = counter;
        None
    }
}

/// The time-stamp counter (x86-64), for extrapolating times from the page.
#[inline]
pub fn timestamp_counter() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        let low: u32;
        let high: u32;
        // SAFETY: rdtsc reads a register and touches no memory.
        unsafe {
            std::arch::asm!("rdtsc", out("eax") low, out("edx") high,
                options(nomem, nostack, preserves_flags));
        }
        Some(u64::from(low) | (u64::from(high) << 32))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// A child created by [`fork_waiting`]: stopped before `exec` until released.
#[derive(Debug)]
pub struct ForkedChild {
    /// Its process id.
    pub pid: i32,
    /// Writing one byte here lets it exec; closing it without writing makes it exit 127.
    pub release: OwnedFd,
    /// Reads EOF when the exec succeeded, or the child's errno (4 bytes) when it failed.
    pub exec_status: OwnedFd,
}

fn pipe_cloexec() -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two fds into the valid 2-element array.
    let ret = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if ret < 0 {
        return Err(last_errno());
    }
    // SAFETY: the kernel just created fds[0]; nothing else owns it.
    let read = unsafe { OwnedFd::from_raw_fd(fds[0]) };
    // SAFETY: the kernel just created fds[1]; nothing else owns it.
    let write = unsafe { OwnedFd::from_raw_fd(fds[1]) };
    Ok((read, write))
}

/// Forks a child that waits on a pipe, then `execv(program, argv)` (environment inherited).
///
/// # Errors
/// The errno of `pipe2` or `fork`.
pub fn fork_waiting(program: &CStr, argv: &[CString]) -> Result<ForkedChild, Errno> {
    let (release_read, release_write) = pipe_cloexec()?;
    let (status_read, status_write) = pipe_cloexec()?;
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    let release_read_fd = release_read.as_raw_fd();
    let release_write_fd = release_write.as_raw_fd();
    let status_read_fd = status_read.as_raw_fd();
    let status_write_fd = status_write.as_raw_fd();

    // SAFETY: the child runs only async-signal-safe calls on memory prepared above.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(last_errno());
    }
    if pid == 0 {
        child_after_fork(
            release_read_fd,
            release_write_fd,
            status_read_fd,
            status_write_fd,
            program,
            &pointers,
        );
    }
    drop(release_read);
    drop(status_write);
    Ok(ForkedChild {
        pid,
        release: release_write,
        exec_status: status_read,
    })
}

/// The child's side: wait for the release byte, exec, report exec's errno. Never returns.
fn child_after_fork(
    release_read: i32,
    release_write: i32,
    status_read: i32,
    status_write: i32,
    program: &CStr,
    argv: &[*const libc::c_char],
) -> ! {
    // SAFETY: closing the parent's pipe ends in the child, which owns its copies.
    unsafe { libc::close(release_write) };
    // SAFETY: as above.
    unsafe { libc::close(status_read) };
    let mut byte = 0u8;
    let got = loop {
        let ptr: *mut u8 = &mut byte;
        // SAFETY: reads at most one byte into a live local.
        let n = unsafe { libc::read(release_read, ptr.cast(), 1) };
        // Reading errno allocates nothing and is async-signal-safe.
        if n < 0 && last_errno() == libc::EINTR {
            continue;
        }
        break n;
    };
    if got == 1 {
        // SAFETY: `program` and `argv` (NULL-terminated) were built before the fork and stay
        // valid; execv only returns on failure.
        unsafe { libc::execv(program.as_ptr(), argv.as_ptr()) };
        let errno = last_errno();
        let bytes = errno.to_ne_bytes();
        // SAFETY: writes 4 bytes from a live local to a pipe the child owns.
        unsafe { libc::write(status_write, bytes.as_ptr().cast(), bytes.len()) };
    }
    // SAFETY: _exit is async-signal-safe and ends the child without running atexit handlers.
    unsafe { libc::_exit(127) }
}

/// `wait4(pid)`: the raw wait status and the child's user and system time in microseconds.
///
/// # Errors
/// The errno.
pub fn wait4(pid: i32) -> Result<(i32, u64, u64), Errno> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let status_ptr: *mut i32 = &mut status;
        let usage_ptr: *mut libc::rusage = &mut usage;
        // SAFETY: both pointers are valid for writes for the call.
        let ret = unsafe { libc::wait4(pid, status_ptr, 0, usage_ptr) };
        if ret >= 0 {
            break;
        }
        let errno = last_errno();
        if errno != libc::EINTR {
            return Err(errno);
        }
    }
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok((status, micros(usage.ru_utime), micros(usage.ru_stime)))
}

/// While alive, this process ignores SIGINT and SIGQUIT; dropping it restores what was there.
///
/// `perf stat -- cmd` does this: the user's Ctrl-C reaches the measured command (already
/// running with its own dispositions), and the counts can still be read and printed.
pub struct IgnoreInterrupts {
    saved: Vec<(libc::c_int, libc::sigaction)>,
}

impl IgnoreInterrupts {
    /// Starts ignoring SIGINT and SIGQUIT (a signal whose disposition cannot be read is left
    /// alone).
    pub fn start() -> IgnoreInterrupts {
        let mut saved = Vec::new();
        for signal in [libc::SIGINT, libc::SIGQUIT] {
            // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
            let mut ignore: libc::sigaction = unsafe { std::mem::zeroed() };
            ignore.sa_sigaction = libc::SIG_IGN;
            // SAFETY: as above.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: both pointers are valid for the call; SIG_IGN needs no handler code.
            if unsafe { libc::sigaction(signal, &ignore, &mut old) } == 0 {
                saved.push((signal, old));
            }
        }
        IgnoreInterrupts { saved }
    }
}

impl Drop for IgnoreInterrupts {
    fn drop(&mut self) {
        for (signal, old) in &self.saved {
            // SAFETY: `old` is the disposition sigaction reported for this signal.
            unsafe { libc::sigaction(*signal, old, std::ptr::null_mut()) };
        }
    }
}

/// Sends SIGKILL to `pid` (errors ignored: the child may be gone already).
pub fn kill(pid: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Writes `bytes` to `fd`.
///
/// # Errors
/// The errno.
pub fn write_all(fd: BorrowedFd<'_>, bytes: &[u8]) -> Result<(), Errno> {
    // SAFETY: `bytes` is valid for reads of its length; `fd` is open for the call.
    let ret = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    if ret < 0 { Err(last_errno()) } else { Ok(()) }
}

/// Reads up to `buf.len()` bytes from `fd` (EINTR retried).
///
/// # Errors
/// The errno.
pub fn read_bytes(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    loop {
        // SAFETY: `buf` is valid for writes of its length; `fd` is open for the call.
        let ret = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if ret >= 0 {
            return Ok(ret as usize);
        }
        let errno = last_errno();
        if errno != libc::EINTR {
            return Err(errno);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers() {
        assert_eq!(IOC_ENABLE, 0x2400);
        assert_eq!(IOC_DISABLE, 0x2401);
        assert_eq!(IOC_REFRESH, 0x2402);
        assert_eq!(IOC_RESET, 0x2403);
        assert_eq!(IOC_PERIOD, 0x4008_2404);
        assert_eq!(IOC_SET_OUTPUT, 0x2405);
        assert_eq!(IOC_SET_FILTER, 0x4008_2406);
        assert_eq!(IOC_ID, 0x8008_2407);
        assert_eq!(IOC_SET_BPF, 0x4004_2408);
        assert_eq!(IOC_PAUSE_OUTPUT, 0x4004_2409);
    }

    /// Compiles a C program against the system's `linux/perf_event.h` and compares its size,
    /// offsets, bit positions and ioctl numbers with ours.
    #[test]
    fn layout_matches_the_system_header() {
        if !std::path::Path::new("/usr/include/linux/perf_event.h").exists() {
            eprintln!("skipped: /usr/include/linux/perf_event.h is not installed");
            return;
        }
        let dir = std::env::temp_dir().join(format!("counterhal-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = String::from(
            "#include <stdio.h>\n#include <stddef.h>\n#include <string.h>\n#include <stdint.h>\n\
             #include <linux/perf_event.h>\n\
             static int bit(const void *p) { uint64_t w; memcpy(&w, p, 8); \
             for (int i = 0; i < 64; i++) if (w >> i & 1) return i; return -1; }\n\
             int main(void) { struct perf_event_attr a; struct perf_event_mmap_page m;\n\
             (void)m;\n\
             printf(\"attr_size %zu\\n\", sizeof a);\n\
             #ifdef PERF_ATTR_SIZE_VER8\nprintf(\"ver8 %d\\n\", PERF_ATTR_SIZE_VER8);\n\
             printf(\"attr.config3 %zu\\n\", offsetof(struct perf_event_attr, config3));\n#endif\n\
             printf(\"ver7 %d\\n\", PERF_ATTR_SIZE_VER7);\n\
             printf(\"page_size %zu\\n\", sizeof m);\n",
        );
        let attr_fields = [
            ("type", offset_of!(PerfEventAttr, type_)),
            ("size", offset_of!(PerfEventAttr, size)),
            ("config", offset_of!(PerfEventAttr, config)),
            ("sample_period", offset_of!(PerfEventAttr, sample_period)),
            ("sample_freq", offset_of!(PerfEventAttr, sample_period)),
            ("sample_type", offset_of!(PerfEventAttr, sample_type)),
            ("read_format", offset_of!(PerfEventAttr, read_format)),
            ("wakeup_events", offset_of!(PerfEventAttr, wakeup_events)),
            ("wakeup_watermark", offset_of!(PerfEventAttr, wakeup_events)),
            ("bp_type", offset_of!(PerfEventAttr, bp_type)),
            ("bp_addr", offset_of!(PerfEventAttr, config1)),
            ("config1", offset_of!(PerfEventAttr, config1)),
            ("bp_len", offset_of!(PerfEventAttr, config2)),
            ("config2", offset_of!(PerfEventAttr, config2)),
            (
                "branch_sample_type",
                offset_of!(PerfEventAttr, branch_sample_type),
            ),
            (
                "sample_regs_user",
                offset_of!(PerfEventAttr, sample_regs_user),
            ),
            (
                "sample_stack_user",
                offset_of!(PerfEventAttr, sample_stack_user),
            ),
            ("clockid", offset_of!(PerfEventAttr, clockid)),
            (
                "sample_regs_intr",
                offset_of!(PerfEventAttr, sample_regs_intr),
            ),
            ("aux_watermark", offset_of!(PerfEventAttr, aux_watermark)),
            (
                "sample_max_stack",
                offset_of!(PerfEventAttr, sample_max_stack),
            ),
            (
                "aux_sample_size",
                offset_of!(PerfEventAttr, aux_sample_size),
            ),
            ("sig_data", offset_of!(PerfEventAttr, sig_data)),
        ];
        let mut expected = std::collections::BTreeMap::new();
        for (name, offset) in attr_fields {
            c += &format!(
                "printf(\"attr.{name} %zu\\n\", offsetof(struct perf_event_attr, {name}));\n"
            );
            expected.insert(format!("attr.{name}"), offset as i64);
        }
        for (name, position) in attr_bit::ALL {
            c += &format!(
                "memset(&a, 0, sizeof a); a.{name} = 1; \
                 printf(\"bit.{name} %d\\n\", bit((char *)&a + 40));\n"
            );
            expected.insert(format!("bit.{name}"), i64::from(position));
        }
        let page_fields = [
            ("version", offset_of!(PerfEventMmapPage, version)),
            (
                "compat_version",
                offset_of!(PerfEventMmapPage, compat_version),
            ),
            ("lock", offset_of!(PerfEventMmapPage, lock)),
            ("index", offset_of!(PerfEventMmapPage, index)),
            ("offset", offset_of!(PerfEventMmapPage, offset)),
            ("time_enabled", offset_of!(PerfEventMmapPage, time_enabled)),
            ("time_running", offset_of!(PerfEventMmapPage, time_running)),
            ("capabilities", offset_of!(PerfEventMmapPage, capabilities)),
            ("pmc_width", offset_of!(PerfEventMmapPage, pmc_width)),
            ("time_shift", offset_of!(PerfEventMmapPage, time_shift)),
            ("time_mult", offset_of!(PerfEventMmapPage, time_mult)),
            ("time_offset", offset_of!(PerfEventMmapPage, time_offset)),
            ("time_zero", offset_of!(PerfEventMmapPage, time_zero)),
            ("size", offset_of!(PerfEventMmapPage, size)),
            ("time_cycles", offset_of!(PerfEventMmapPage, time_cycles)),
            ("time_mask", offset_of!(PerfEventMmapPage, time_mask)),
            ("data_head", offset_of!(PerfEventMmapPage, data_head)),
            ("data_tail", offset_of!(PerfEventMmapPage, data_tail)),
            ("data_offset", offset_of!(PerfEventMmapPage, data_offset)),
            ("data_size", offset_of!(PerfEventMmapPage, data_size)),
            ("aux_head", offset_of!(PerfEventMmapPage, aux_head)),
            ("aux_tail", offset_of!(PerfEventMmapPage, aux_tail)),
            ("aux_offset", offset_of!(PerfEventMmapPage, aux_offset)),
            ("aux_size", offset_of!(PerfEventMmapPage, aux_size)),
        ];
        for (name, offset) in page_fields {
            c += &format!(
                "printf(\"page.{name} %zu\\n\", offsetof(struct perf_event_mmap_page, {name}));\n"
            );
            expected.insert(format!("page.{name}"), offset as i64);
        }
        for (name, position) in [
            ("cap_bit0", cap_bit::BIT0),
            ("cap_bit0_is_deprecated", cap_bit::BIT0_IS_DEPRECATED),
            ("cap_user_rdpmc", cap_bit::USER_RDPMC),
            ("cap_user_time", cap_bit::USER_TIME),
            ("cap_user_time_zero", cap_bit::USER_TIME_ZERO),
            ("cap_user_time_short", cap_bit::USER_TIME_SHORT),
        ] {
            c += &format!(
                "memset(&m, 0, sizeof m); m.{name} = 1; \
                 printf(\"cap.{name} %d\\n\", bit(&m.capabilities));\n"
            );
            expected.insert(format!("cap.{name}"), i64::from(position));
        }
        for (name, value) in [
            ("PERF_EVENT_IOC_ENABLE", IOC_ENABLE),
            ("PERF_EVENT_IOC_DISABLE", IOC_DISABLE),
            ("PERF_EVENT_IOC_REFRESH", IOC_REFRESH),
            ("PERF_EVENT_IOC_RESET", IOC_RESET),
            ("PERF_EVENT_IOC_PERIOD", IOC_PERIOD),
            ("PERF_EVENT_IOC_SET_OUTPUT", IOC_SET_OUTPUT),
            ("PERF_EVENT_IOC_SET_FILTER", IOC_SET_FILTER),
            ("PERF_EVENT_IOC_ID", IOC_ID),
            ("PERF_EVENT_IOC_SET_BPF", IOC_SET_BPF),
            ("PERF_EVENT_IOC_PAUSE_OUTPUT", IOC_PAUSE_OUTPUT),
            ("PERF_IOC_FLAG_GROUP", IOC_FLAG_GROUP),
            ("PERF_FLAG_FD_CLOEXEC", FLAG_FD_CLOEXEC),
            ("PERF_FORMAT_TOTAL_TIME_ENABLED", FORMAT_TOTAL_TIME_ENABLED),
            ("PERF_FORMAT_TOTAL_TIME_RUNNING", FORMAT_TOTAL_TIME_RUNNING),
            ("PERF_FORMAT_ID", FORMAT_ID),
            ("PERF_FORMAT_GROUP", FORMAT_GROUP),
            ("PERF_FORMAT_LOST", FORMAT_LOST),
            ("PERF_TYPE_HARDWARE", u64::from(TYPE_HARDWARE)),
            ("PERF_TYPE_SOFTWARE", u64::from(TYPE_SOFTWARE)),
            ("PERF_TYPE_TRACEPOINT", u64::from(TYPE_TRACEPOINT)),
            ("PERF_TYPE_HW_CACHE", u64::from(TYPE_HW_CACHE)),
            ("PERF_TYPE_RAW", u64::from(TYPE_RAW)),
            ("PERF_TYPE_BREAKPOINT", u64::from(TYPE_BREAKPOINT)),
        ] {
            c += &format!("printf(\"const.{name} %lld\\n\", (long long)({name}));\n");
            expected.insert(format!("const.{name}"), value as i64);
        }
        c += "return 0; }\n";
        let source = dir.join("layout.c");
        let binary = dir.join("layout");
        std::fs::write(&source, c).unwrap();
        let compiled = std::process::Command::new("cc")
            .arg("-o")
            .arg(&binary)
            .arg(&source)
            .output();
        let compiled = match compiled {
            Ok(out) => out,
            Err(e) => {
                eprintln!("skipped: no C compiler (`cc`): {e}");
                return;
            }
        };
        assert!(
            compiled.status.success(),
            "{}",
            String::from_utf8_lossy(&compiled.stderr)
        );
        let output = std::process::Command::new(&binary).output().unwrap();
        let text = String::from_utf8(output.stdout).unwrap();
        let mut seen = std::collections::BTreeMap::new();
        for line in text.lines() {
            let (name, value) = line.split_once(' ').unwrap();
            seen.insert(name.to_string(), value.parse::<i64>().unwrap());
        }
        for (name, value) in &expected {
            assert_eq!(seen.get(name), Some(value), "{name}");
        }
        assert_eq!(seen["page_size"], size_of::<PerfEventMmapPage>() as i64);
        assert_eq!(seen["ver7"], i64::from(ATTR_SIZE_VER7));
        match seen.get("ver8") {
            // The header knows VER8: all of ours must match it.
            Some(ver8) => {
                assert_eq!(*ver8, i64::from(ATTR_SIZE_VER8));
                assert_eq!(
                    seen["attr.config3"],
                    offset_of!(PerfEventAttr, config3) as i64
                );
            }
            // An older header: ours is exactly its struct plus config3.
            None => {
                assert_eq!(seen["attr_size"], i64::from(ATTR_SIZE_VER7));
                assert_eq!(offset_of!(PerfEventAttr, config3) as i64, seen["attr_size"]);
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A fake kernel that knows `known` bytes: E2BIG (writing back its size) for a larger attr.
    fn fake_kernel(
        known: u32,
        calls: &mut Vec<u32>,
    ) -> impl FnMut(&mut PerfEventAttr) -> Result<u32, Errno> + '_ {
        move |attr| {
            calls.push(attr.size);
            // An older kernel that refuses any size larger than its own.
            if attr.size > known {
                attr.size = known;
                return Err(libc::E2BIG);
            }
            Ok(attr.size)
        }
    }

    #[test]
    fn e2big_retries_with_the_written_back_size_when_the_rest_is_zero() {
        let mut attr = PerfEventAttr {
            size: ATTR_SIZE_VER8,
            config: 1,
            ..Default::default()
        };
        let mut calls = Vec::new();
        let size = open_retrying_e2big(&mut attr, fake_kernel(ATTR_SIZE_VER7, &mut calls));
        assert_eq!(size, Ok(ATTR_SIZE_VER7));
        assert_eq!(calls, [ATTR_SIZE_VER8, ATTR_SIZE_VER7]);
    }

    #[test]
    fn e2big_names_the_field_and_the_kernel_size_when_the_rest_is_set() {
        let mut attr = PerfEventAttr {
            size: ATTR_SIZE_VER8,
            config3: 0x10,
            ..Default::default()
        };
        let mut calls = Vec::new();
        let failure =
            open_retrying_e2big(&mut attr, fake_kernel(ATTR_SIZE_VER7, &mut calls)).unwrap_err();
        assert_eq!(
            failure,
            OpenFailure {
                errno: libc::E2BIG,
                kernel_size: Some(ATTR_SIZE_VER7),
                field: Some("config3"),
            }
        );
        assert_eq!(calls, [ATTR_SIZE_VER8], "no retry that would drop config3");
        assert_eq!(attr.size, ATTR_SIZE_VER8, "the caller's size is restored");

        // A kernel of VER5 (112 bytes) and sig_data set: sig_data is named.
        let mut attr = PerfEventAttr {
            size: ATTR_SIZE_VER8,
            sig_data: 7,
            ..Default::default()
        };
        let mut calls = Vec::new();
        let failure = open_retrying_e2big(&mut attr, fake_kernel(112, &mut calls)).unwrap_err();
        assert_eq!(
            (failure.kernel_size, failure.field),
            (Some(112), Some("sig_data"))
        );
    }

    #[test]
    fn e2big_without_a_smaller_size_and_other_errors_pass_through() {
        let mut attr = PerfEventAttr {
            size: ATTR_SIZE_VER8,
            ..Default::default()
        };
        let failure = open_retrying_e2big(&mut attr, |_| Err::<(), _>(libc::E2BIG)).unwrap_err();
        assert_eq!(failure, OpenFailure::errno(libc::E2BIG));
        let failure = open_retrying_e2big(&mut attr, |_| Err::<(), _>(libc::EINVAL)).unwrap_err();
        assert_eq!(failure.errno, libc::EINVAL);
        // EINTR is retried.
        let mut interrupted = true;
        let done = open_retrying_e2big(&mut attr, |_| {
            if std::mem::take(&mut interrupted) {
                Err(libc::EINTR)
            } else {
                Ok(5)
            }
        });
        assert_eq!(done, Ok(5));
    }

    #[test]
    fn first_set_field_beyond() {
        let mut attr = PerfEventAttr {
            size: ATTR_SIZE_VER8,
            ..Default::default()
        };
        assert_eq!(attr.first_set_field_beyond(ATTR_SIZE_VER0), None);
        attr.config3 = 1;
        assert_eq!(attr.first_set_field_beyond(ATTR_SIZE_VER7), Some("config3"));
        assert_eq!(attr.first_set_field_beyond(ATTR_SIZE_VER8), None);
        attr.clockid = -1;
        assert_eq!(attr.first_set_field_beyond(ATTR_SIZE_VER0), Some("clockid"));
        attr.set_flag(attr_bit::INHERIT, true);
        assert!(attr.flag(attr_bit::INHERIT));
        assert_eq!(attr.flags, 2);
    }
}
