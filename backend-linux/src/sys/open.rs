//! `perf_event_open` itself: the system call on a process or CPU, or on a cgroup
//! (`PERF_FLAG_PID_CGROUP`), and the size protocol that lets a newer `perf_event_attr` open on
//! an older kernel (E2BIG). See the parent module's `# Safety` note.

use std::mem::offset_of;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::os_error::{Errno, last_errno};
use super::perf::{ATTR_SIZE_VER0, FLAG_FD_CLOEXEC, FLAG_PID_CGROUP, PerfEventAttr};

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
    open_raw(attr, pid, cpu, group, flags)
}

/// `perf_event_open(attr, cgroup, cpu, group_fd, flags | PID_CGROUP | FD_CLOEXEC)`: the event
/// counts on `cpu` while a task of the cgroup whose directory `cgroup` is runs there (the
/// kernel takes its own reference on the cgroup; the directory may be closed afterwards).
///
/// # Errors
/// As [`perf_event_open`]; EBADF when `cgroup` is no cgroup directory of the `perf_event`
/// hierarchy, EINVAL where the kernel lacks `CONFIG_CGROUP_PERF` or `cpu` is -1.
pub fn perf_event_open_cgroup(
    attr: &mut PerfEventAttr,
    cgroup: BorrowedFd<'_>,
    cpu: i32,
    group: Option<BorrowedFd<'_>>,
    flags: u64,
) -> Result<OwnedFd, OpenFailure> {
    open_raw(
        attr,
        cgroup.as_raw_fd(),
        cpu,
        group,
        flags | FLAG_PID_CGROUP,
    )
}

/// The system call behind [`perf_event_open`] and [`perf_event_open_cgroup`]: `pid` is a
/// process id, or a cgroup descriptor borrowed by the caller for the call when `flags` hold
/// `PERF_FLAG_PID_CGROUP`.
fn open_raw(
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
        // bytes; the kernel reads at most `size` bytes and may write back `size`; `pid` is a
        // process id or (PID_CGROUP) a descriptor the caller keeps open for the call.
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

#[cfg(test)]
mod tests {
    use super::super::perf::*;
    use super::*;

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
