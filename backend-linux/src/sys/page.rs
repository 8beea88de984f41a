//! The self-monitoring page: `perf_event_mmap_page`, its mapping, the fields a
//! self-monitoring read copies out of it (the seam `rdpmc` computes from), and the `rdpmc` and
//! `rdtsc` instructions. See the parent module's `# Safety` note.

use std::mem::{offset_of, size_of};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{Ordering, compiler_fence};

use super::os_error::{Errno, last_errno};

/// The fields of `perf_event_mmap_page` a self-monitoring read uses, copied out of the page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageSnapshot {
    /// `index`: hardware counter + 1, or 0 when the event is not on a counter.
    pub index: u32,
    /// `offset`: added to the sign-extended counter value.
    pub offset: i64,
    /// `time_enabled` at the last update.
    pub time_enabled: u64,
    /// `time_running` at the last update.
    pub time_running: u64,
    /// `capabilities` (bit 2 `cap_user_rdpmc`, 3 `cap_user_time`, 5 `cap_user_time_short`).
    pub capabilities: u64,
    /// `pmc_width`: the counter's width in bits.
    pub pmc_width: u16,
    /// `time_shift`.
    pub time_shift: u16,
    /// `time_mult`.
    pub time_mult: u32,
    /// `time_offset`.
    pub time_offset: u64,
    /// `time_zero`.
    pub time_zero: u64,
    /// `time_cycles` (with `cap_user_time_short`).
    pub time_cycles: u64,
    /// `time_mask` (with `cap_user_time_short`).
    pub time_mask: u64,
}

impl PageSnapshot {
    fn cap(&self, bit: u32) -> bool {
        self.capabilities & (1 << bit) != 0
    }

    /// `cap_user_rdpmc`.
    pub fn user_rdpmc(&self) -> bool {
        self.cap(cap_bit::USER_RDPMC)
    }

    /// `cap_user_time`.
    pub fn user_time(&self) -> bool {
        self.cap(cap_bit::USER_TIME)
    }

    /// `cap_user_time_short`.
    pub fn user_time_short(&self) -> bool {
        self.cap(cap_bit::USER_TIME_SHORT)
    }
}

/// A page the kernel updates under a seqlock.
pub trait UserPage {
    /// The `lock` field (read before and after the other fields).
    fn lock(&self) -> u32;
    /// The other fields.
    fn snapshot(&self) -> PageSnapshot;
}

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

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
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

// SAFETY: every access through a shared reference is a volatile read of the mapped page, which
// the kernel alone writes (the self-monitoring protocol retries a read its `lock` saw
// change); reads on several threads at once read the same page and change nothing.
unsafe impl Sync for UserPageMap {}

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

/// Reads hardware counter `counter` in user space: `rdpmc` on x86-64; on aarch64 `mrs` of
/// `PMEVCNTR<counter>_EL0` (counters 0 to 30) or `PMCCNTR_EL0` (31, the cycle counter, which
/// the page's `index` 32 names); `None` elsewhere.
///
/// Only call when the event's page says `cap_user_rdpmc` and `index == counter + 1`: the
/// kernel then allows the instruction in user mode for this task (on aarch64, with
/// `kernel.perf_user_access` 1 and the event opened with `config1` bit 1).
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
    #[cfg(target_arch = "aarch64")]
    {
        arm64_counter(counter)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = counter;
        None
    }
}

/// `mrs` of the PMU counter register `counter` names (see [`rdpmc`]): each counter is a system
/// register of its own, so each is one arm of the match.
#[cfg(target_arch = "aarch64")]
#[inline]
fn arm64_counter(counter: u32) -> Option<u64> {
    macro_rules! read_counter {
        ($($n:literal)*) => {
            match counter {
                $(
                    $n => {
                        let value: u64;
                        // SAFETY: mrs reads a register and touches no memory; the caller
                        // checked that the kernel gave this task user access to the PMU's
                        // counters (PMUSERENR_EL0.ER), so the read cannot trap.
                        unsafe {
                            std::arch::asm!(
                                concat!("mrs {value}, pmevcntr", stringify!($n), "_el0"),
                                value = out(reg) value,
                                options(nomem, nostack, preserves_flags)
                            );
                        }
                        Some(value)
                    }
                )*
                31 => {
                    let value: u64;
                    // SAFETY: as above, for the cycle counter (PMUSERENR_EL0.CR).
                    unsafe {
                        std::arch::asm!("mrs {value}, pmccntr_el0", value = out(reg) value,
                            options(nomem, nostack, preserves_flags));
                    }
                    Some(value)
                }
                _ => None,
            }
        };
    }
    read_counter!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28
        29 30)
}

/// The counter the page's times are extrapolated with: the time-stamp counter on x86-64, the
/// generic timer's virtual count (`CNTVCT_EL0`, after an `isb` so it is not read early) on
/// aarch64; `None` elsewhere.
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
    #[cfg(target_arch = "aarch64")]
    {
        let value: u64;
        // SAFETY: isb and mrs of CNTVCT_EL0 (readable at EL0 under Linux) touch no memory.
        unsafe {
            std::arch::asm!("isb", "mrs {value}, cntvct_el0", value = out(reg) value,
                options(nomem, nostack, preserves_flags));
        }
        Some(value)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        None
    }
}
