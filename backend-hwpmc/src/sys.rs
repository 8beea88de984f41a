//! Every system call of the backend: `modfind(2)`, `modstat(2)` and hwpmc's dynamic system
//! call. FreeBSD only.
//!
//! # Safety
//! Each call passes pointers to values the caller borrows for the duration of the call:
//! a NUL-terminated name, a [`ModuleStat`] whose `version` says its size, and for hwpmc's
//! system call the one `#[repr(C)]` structure the operation copies in and out (its layout
//! pinned by `const` assertions in [`crate::abi`] against FreeBSD's headers). The kernel
//! copies in and out with `copyin`/`copyout` and keeps no pointer after the call returns.

use std::ffi::CString;

use crate::abi::{ModuleStat, OpArg};
use crate::errno::Errno;

// `modfind(2)` and `modstat(2)` (libc's, declared in `sys/module.h`); the `libc` crate does
// not declare them.
unsafe extern "C" {
    fn modfind(name: *const libc::c_char) -> libc::c_int;
    fn modstat(modid: libc::c_int, stat: *mut ModuleStat) -> libc::c_int;
}

fn last_errno() -> Errno {
    Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// The system call number of module `name` (`modfind`, then `modstat`'s `data.intval`), as
/// libpmc's `pmc_init` finds it.
pub(crate) fn find_syscall(name: &str) -> Result<i32, Errno> {
    let name = CString::new(name).map_err(|_| Errno::EINVAL)?;
    // SAFETY: `name` is NUL-terminated and outlives the call.
    let id = unsafe { modfind(name.as_ptr()) };
    if id < 0 {
        return Err(last_errno());
    }
    let mut stat = ModuleStat::default();
    // SAFETY: `stat` is a valid, writable `struct module_stat` whose `version` is its size.
    let rc = unsafe { modstat(id, &mut stat) };
    if rc < 0 {
        return Err(last_errno());
    }
    Ok(stat.intval())
}

/// `syscall(number, op, arg)`: one hwpmc operation.
pub(crate) fn pmc_call(number: i32, op: u32, arg: OpArg<'_>) -> Result<(), Errno> {
    let pointer: *mut libc::c_void = match arg {
        OpArg::Version(v) => std::ptr::from_mut(v).cast(),
        OpArg::CpuInfo(v) => std::ptr::from_mut(v).cast(),
        OpArg::Allocate(v) => std::ptr::from_mut(v).cast(),
        OpArg::Attach(v) => std::ptr::from_mut(v).cast(),
        OpArg::Simple(v) => std::ptr::from_mut(v).cast(),
        OpArg::Rw(v) => std::ptr::from_mut(v).cast(),
    };
    // SAFETY: `pointer` is the operation's structure, borrowed mutably for the call (see the
    // module's note); the kernel reads the op as a `register_t` and the pointer as `void *`.
    let rc = unsafe { libc::syscall(number, libc::c_long::from(op), pointer) };
    if rc < 0 { Err(last_errno()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: FreeBSD's `sys/sys/errno.h` as the `libc` crate transcribes it.
    #[test]
    fn error_numbers_are_freebsds() {
        assert_eq!(Errno::EPERM.0, libc::EPERM);
        assert_eq!(Errno::ENOENT.0, libc::ENOENT);
        assert_eq!(Errno::ESRCH.0, libc::ESRCH);
        assert_eq!(Errno::ENXIO.0, libc::ENXIO);
        assert_eq!(Errno::EBUSY.0, libc::EBUSY);
        assert_eq!(Errno::EEXIST.0, libc::EEXIST);
        assert_eq!(Errno::EINVAL.0, libc::EINVAL);
        assert_eq!(Errno::EOPNOTSUPP.0, libc::EOPNOTSUPP);
        assert_eq!(Errno::EPROGMISMATCH.0, libc::EPROGMISMATCH);
        assert_eq!(Errno::ENOSYS.0, libc::ENOSYS);
    }

    #[test]
    fn a_module_that_does_not_exist_is_enoent() {
        assert_eq!(
            find_syscall("counterhal-no-such-module"),
            Err(Errno::ENOENT)
        );
    }
}
