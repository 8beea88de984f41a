//! The perf ABI: `perf_event_attr` and its flag bits, the read formats, the ioctl request
//! numbers, and the system calls on perf event descriptors (`perf_event_open` with the E2BIG
//! size protocol, the ioctls, reads). See the parent module's `# Safety` note.

use std::ffi::CStr;
use std::mem::{offset_of, size_of};
use std::os::fd::{AsRawFd, BorrowedFd};

use super::os_error::{Errno, last_errno};

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
/// `PERF_FORMAT_LOST` (Linux 6.0): the samples the ring could not take, read with the count.
#[cfg_attr(not(feature = "sampling"), allow(dead_code))]
pub const FORMAT_LOST: u64 = 1 << 4;

/// `PERF_ATTR_SIZE_VER0`: the first published size.
pub const ATTR_SIZE_VER0: u32 = 64;
/// `PERF_ATTR_SIZE_VER7` (adds `sig_data`).
#[cfg_attr(not(test), allow(dead_code))] // pinned against the header by the layout test
pub const ATTR_SIZE_VER7: u32 = 128;
/// `PERF_ATTR_SIZE_VER8` (adds `config3`): the size this crate speaks.
pub const ATTR_SIZE_VER8: u32 = 136;

/// `PERF_FLAG_PID_CGROUP`: `pid` is an open cgroup directory, the event counts CPU-wide while
/// that cgroup's tasks run.
pub const FLAG_PID_CGROUP: u64 = 1 << 2;
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
    pub(super) fn bytes(&self) -> [u8; ATTR_SIZE_VER8 as usize] {
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

/// How an architecture lays out ioctl request numbers (its `asm/ioctl.h`): the direction
/// values and the width of the size field, above which the direction sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IocLayout {
    /// `_IOC_NONE`.
    pub none: u64,
    /// `_IOC_WRITE`.
    pub write: u64,
    /// `_IOC_READ`.
    pub read: u64,
    /// `_IOC_SIZEBITS`.
    pub size_bits: u32,
}

impl IocLayout {
    /// asm-generic's: x86, arm64, riscv, s390, loongarch.
    pub const GENERIC: IocLayout = IocLayout {
        none: 0,
        write: 1,
        read: 2,
        size_bits: 14,
    };
    /// powerpc's (ppc64le), mips's, sparc's and alpha's: a 13-bit size and three direction
    /// bits, `_IOC_NONE` among them.
    pub const OSF: IocLayout = IocLayout {
        none: 1,
        write: 4,
        read: 2,
        size_bits: 13,
    };

    /// The layout of the architecture this is built for.
    pub const THIS: IocLayout = if cfg!(any(
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "mips",
        target_arch = "mips64",
        target_arch = "sparc",
        target_arch = "sparc64"
    )) {
        IocLayout::OSF
    } else {
        IocLayout::GENERIC
    };

    /// `_IOC(dir, type, nr, size)`.
    pub const fn ioc(self, dir: u64, kind: u8, nr: u8, size: usize) -> u64 {
        (dir << (16 + self.size_bits)) | ((size as u64) << 16) | ((kind as u64) << 8) | nr as u64
    }

    /// `_IO(type, nr)`.
    pub const fn none(self, kind: u8, nr: u8) -> u64 {
        self.ioc(self.none, kind, nr, 0)
    }

    /// `_IOW(type, nr, size)`.
    pub const fn write(self, kind: u8, nr: u8, size: usize) -> u64 {
        self.ioc(self.write, kind, nr, size)
    }

    /// `_IOR(type, nr, size)`.
    pub const fn read(self, kind: u8, nr: u8, size: usize) -> u64 {
        self.ioc(self.read, kind, nr, size)
    }
}

/// The perf ioctls' request numbers under `layout`, for a `pointer`-byte ABI, in
/// `PERF_EVENT_IOC_*` order: ENABLE, DISABLE, REFRESH, RESET, PERIOD, SET_OUTPUT,
/// SET_FILTER, ID, SET_BPF, PAUSE_OUTPUT.
pub const fn perf_ioctls(layout: IocLayout, pointer: usize) -> [u64; 10] {
    [
        layout.none(b'$', 0),
        layout.none(b'$', 1),
        layout.none(b'$', 2),
        layout.none(b'$', 3),
        layout.write(b'$', 4, 8),
        layout.none(b'$', 5),
        layout.write(b'$', 6, pointer),
        layout.read(b'$', 7, pointer),
        layout.write(b'$', 8, 4),
        layout.write(b'$', 9, 4),
    ]
}

const IOCTLS: [u64; 10] = perf_ioctls(IocLayout::THIS, size_of::<*const u8>());

/// `PERF_EVENT_IOC_ENABLE`.
pub const IOC_ENABLE: u64 = IOCTLS[0];
/// `PERF_EVENT_IOC_DISABLE`.
pub const IOC_DISABLE: u64 = IOCTLS[1];
/// `PERF_EVENT_IOC_REFRESH`.
pub const IOC_REFRESH: u64 = IOCTLS[2];
/// `PERF_EVENT_IOC_RESET`.
pub const IOC_RESET: u64 = IOCTLS[3];
/// `PERF_EVENT_IOC_PERIOD`.
pub const IOC_PERIOD: u64 = IOCTLS[4];
/// `PERF_EVENT_IOC_SET_OUTPUT`.
pub const IOC_SET_OUTPUT: u64 = IOCTLS[5];
/// `PERF_EVENT_IOC_SET_FILTER`.
pub const IOC_SET_FILTER: u64 = IOCTLS[6];
/// `PERF_EVENT_IOC_ID`.
pub const IOC_ID: u64 = IOCTLS[7];
/// `PERF_EVENT_IOC_SET_BPF`.
#[cfg_attr(not(test), allow(dead_code))] // pinned against the header by the layout test
pub const IOC_SET_BPF: u64 = IOCTLS[8];
/// `PERF_EVENT_IOC_PAUSE_OUTPUT`.
#[cfg_attr(not(test), allow(dead_code))] // pinned against the header by the layout test
pub const IOC_PAUSE_OUTPUT: u64 = IOCTLS[9];

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
/// On x86-64 the `read` system call is made inline, not through the C library's wrapper: a
/// counter read is one system call, and each function return after it costs a mispredicted
/// return (the kernel's own calls and returns overwrite the return-stack predictor), so the
/// wrapper's frame alone would add a few percent to a read.
///
/// # Errors
/// The errno.
#[inline(always)]
pub fn read_words(fd: BorrowedFd<'_>, words: &mut [u64]) -> Result<usize, Errno> {
    loop {
        match raw_read(fd, words) {
            ret if ret >= 0 => return Ok(ret as usize),
            ret if ret == -(libc::EINTR as isize) => {}
            ret => return Err((-ret) as Errno),
        }
    }
}

/// One `read(2)` of `fd` into `words`: the byte count, or minus the errno.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[inline(always)]
fn raw_read(fd: BorrowedFd<'_>, words: &mut [u64]) -> isize {
    let len = std::mem::size_of_val(words);
    let ret: isize;
    // SAFETY: the x86-64 Linux system call convention: the number in rax, the arguments in
    // rdi, rsi and rdx, the result in rax; the kernel clobbers rcx and r11 and nothing else.
    // `words` is valid for writes of `len` bytes and `fd` is open for the call.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_read as isize => ret,
            in("rdi") fd.as_raw_fd(),
            in("rsi") words.as_mut_ptr(),
            in("rdx") len,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// One `read(2)` of `fd` into `words`, through the C library: the byte count, or minus the
/// errno.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
#[inline(always)]
fn raw_read(fd: BorrowedFd<'_>, words: &mut [u64]) -> isize {
    let len = std::mem::size_of_val(words);
    // SAFETY: `words` is valid for writes of `len` bytes and `fd` is open for the call.
    let ret = unsafe { libc::read(fd.as_raw_fd(), words.as_mut_ptr().cast(), len) };
    if ret >= 0 {
        ret
    } else {
        -(last_errno() as isize)
    }
}
