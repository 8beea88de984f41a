//! A sampling event's ring: its first page (`struct perf_event_mmap_page`) and 2^n data
//! pages mapped read-write, so that the kernel honours `data_tail` and never overwrites
//! records not yet read (a full ring loses new records instead, and says so with a
//! `PERF_RECORD_LOST`). The protocol (the kernel's `include/uapi/linux/perf_event.h`): load
//! `data_head`, then read barrier; read the records between `data_tail` and it; then a full
//! barrier and store `data_tail`. See the parent module's `# Safety` note.

use std::mem::offset_of;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::os_error::{Errno, last_errno};
use super::page::{PerfEventMmapPage, page_size};

/// A mapped ring.
#[derive(Debug)]
pub struct Ring {
    base: NonNull<u8>,
    len: usize,
    /// Where the data pages start, from `base` (`data_offset`, or one page on old kernels).
    data_offset: usize,
    /// The data pages' size in bytes (a power of two).
    data_size: usize,
}

// SAFETY: the mapping is owned by this value; the kernel writes the data pages and `data_head`,
// this value reads them and writes `data_tail` only. Moving it to another thread does not
// invalidate the mapping.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps `fd`'s ring: one page and `data_pages` data pages (a power of two).
    ///
    /// # Errors
    /// The errno from `mmap` (EINVAL for a size that is not a power of two; EPERM or ENOMEM
    /// past `perf_event_mlock_kb`).
    pub fn map(fd: BorrowedFd<'_>, data_pages: usize) -> Result<Ring, Errno> {
        if !data_pages.is_power_of_two() {
            return Err(libc::EINVAL);
        }
        let page = page_size();
        let len = page.checked_mul(data_pages + 1).ok_or(libc::EINVAL)?;
        // SAFETY: a fresh shared mapping of a perf fd; no existing memory is touched.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(last_errno());
        }
        let base = NonNull::new(ptr.cast::<u8>()).ok_or(libc::EINVAL)?;
        let mut ring = Ring {
            base,
            len,
            data_offset: page,
            data_size: len - page,
        };
        // Kernels since 4.1 say where the data is; older ones put it one page in.
        let offset = ring
            .word(offset_of!(PerfEventMmapPage, data_offset))
            .load(Ordering::Relaxed);
        let size = ring
            .word(offset_of!(PerfEventMmapPage, data_size))
            .load(Ordering::Relaxed);
        if size != 0 && offset as usize + size as usize <= len && (size as usize).is_power_of_two()
        {
            ring.data_offset = offset as usize;
            ring.data_size = size as usize;
        }
        Ok(ring)
    }

    /// The page's word at `offset` as an atomic.
    fn word(&self, offset: usize) -> &AtomicU64 {
        let word = self.base.as_ptr().wrapping_add(offset).cast::<AtomicU64>();
        // SAFETY: `offset` is the offset_of! a u64 field of the mapped first page, which is
        // page-aligned, so the pointer is valid and aligned for an AtomicU64 while `self`
        // lives; the kernel accesses these words atomically too.
        unsafe { &*word }
    }

    /// The data pages' size in bytes.
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// Where the kernel has written up to (`data_head`), with the read barrier the protocol
    /// asks before the records are read.
    pub fn head(&self) -> u64 {
        self.word(offset_of!(PerfEventMmapPage, data_head))
            .load(Ordering::Acquire)
    }

    /// Where the reader has read up to (`data_tail`).
    pub fn tail(&self) -> u64 {
        self.word(offset_of!(PerfEventMmapPage, data_tail))
            .load(Ordering::Relaxed)
    }

    /// Frees the room up to `tail` for the kernel, after the records before it were read.
    pub fn set_tail(&self, tail: u64) {
        self.word(offset_of!(PerfEventMmapPage, data_tail))
            .store(tail, Ordering::Release);
    }

    /// Copies `out.len()` bytes from ring position `position` (which wraps at the data size)
    /// into `out`. Only positions between the tail and the head may be read: the kernel does
    /// not write there.
    pub fn copy(&self, position: u64, out: &mut [u8]) {
        let size = self.data_size;
        let start = (position as usize) & (size - 1);
        let first = out.len().min(size - start);
        let data = self.base.as_ptr().wrapping_add(self.data_offset);
        let (head, rest) = out.split_at_mut(first);
        // SAFETY: `start + first <= size` bytes from `data + start` lie inside the data pages
        // of the live mapping; the caller reads between the tail and the head, which the
        // kernel does not write until the tail moves past them. `head` is `first` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(data.wrapping_add(start), head.as_mut_ptr(), first)
        };
        // SAFETY: as above, for the `rest.len() < size` bytes from the data pages' start
        // (a record that wraps the end of the ring).
        unsafe { std::ptr::copy_nonoverlapping(data, rest.as_mut_ptr(), rest.len()) };
    }
}

impl Ring {
    /// Copies `out.len()` eight-byte words from ring position `position` into `out`, as
    /// [`copy`](Ring::copy) does bytes (records are whole words: the kernel aligns them to 8).
    pub fn copy_words(&self, position: u64, out: &mut [u64]) {
        // SAFETY: a `[u64]` is valid as `len * 8` initialised bytes with no padding, and any
        // bytes are a valid `u64`; the byte slice lives no longer than the borrow of `out`.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr().cast::<u8>(),
                std::mem::size_of_val(out),
            )
        };
        self.copy(position, bytes);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by `map` with this address and length, and nothing
        // borrows it beyond `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}
