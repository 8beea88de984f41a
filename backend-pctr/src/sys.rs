//! The only `unsafe` code of this crate: the `ioctl(2)` call and the `machdep.tscfreq`
//! sysctl. The ABI they speak (`struct pctrst`, the request numbers) is in [`crate::abi`].
//!
//! # Safety
//!
//! Every system call here passes the kernel a pointer to memory owned by the caller for the
//! whole call, of exactly the size the request number encodes. [`ioctl`] checks the request's
//! direction and length (BSD `IOC_OUT`/`IOC_IN` and `IOCPARM_LEN`) against the Rust type it was
//! given before it issues the call, so the kernel can never copy more bytes in or out than the
//! buffer holds. File descriptors are borrowed ([`BorrowedFd`]), so they are open for the whole
//! call.

#[cfg(target_os = "openbsd")]
use std::mem::size_of;
#[cfg(unix)]
use std::os::fd::BorrowedFd;

#[cfg(unix)]
use crate::abi::{
    IoctlArg, PctrStCurrent, PctrStLegacy, PctrStTransitionalAmd64, PctrStTransitionalI386,
    arg_matches,
};
#[cfg(unix)]
use crate::errno::Errno;

/// Issues `ioctl(fd, request, arg)`.
///
/// The request must encode the direction and size of `arg` (see the module's `# Safety`);
/// otherwise nothing is called and the result is `EINVAL`, as the driver answers any request
/// it does not know.
///
/// # Errors
/// The `errno` the kernel returned.
#[cfg(unix)]
pub(crate) fn ioctl(fd: BorrowedFd<'_>, request: u64, arg: IoctlArg<'_>) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;

    if !arg_matches(request, &arg) {
        return Err(Errno::EINVAL);
    }
    let mut function_word: u32 = match arg {
        IoctlArg::Function(function) => function,
        _ => 0,
    };
    let pointer: *mut libc::c_void = match arg {
        IoctlArg::ReadLegacy(st) => (st as *mut PctrStLegacy).cast(),
        IoctlArg::ReadCurrent(st) => (st as *mut PctrStCurrent).cast(),
        IoctlArg::ReadTransitionalI386(st) => (st as *mut PctrStTransitionalI386).cast(),
        IoctlArg::ReadTransitionalAmd64(st) => (st as *mut PctrStTransitionalAmd64).cast(),
        IoctlArg::Function(_) => (&mut function_word as *mut u32).cast(),
    };
    // SAFETY: `fd` is borrowed, so open for the call; `pointer` points to a live, exclusively
    // borrowed buffer (or the local `function_word`) whose size equals IOCPARM_LEN(request)
    // and whose direction matches, as `arg_matches` just checked, so the kernel copies at most
    // that many bytes in or out of it.
    let status = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, pointer) };
    if status == -1 {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return Err(Errno(errno));
    }
    Ok(())
}

#[cfg(unix)]
/// The TSC frequency in Hz from the `machdep.tscfreq` sysctl, which only OpenBSD/amd64 has
/// (`machdep.16` is something else on i386: see [`crate::cpu::tscfreq_sysctl`]); `None`
/// elsewhere or when the kernel does not export it.
pub(crate) fn tsc_frequency() -> Option<u64> {
    let _second_level = crate::cpu::tscfreq_sysctl(cfg!(target_arch = "x86_64"))?;
    cfg_if::cfg_if! {
        if #[cfg(target_os = "openbsd")] {
            let mib = [libc::CTL_MACHDEP, _second_level];
            let mut value: u64 = 0;
            let mut len: libc::size_t = size_of::<u64>();
            // SAFETY: `mib` is a live array of 2 ints; `value` is a live u64 and `len` holds
            // its size, so the kernel writes at most 8 bytes into it; no new value is set.
            let status = unsafe {
                libc::sysctl(
                    mib.as_ptr(),
                    2,
                    (&mut value as *mut u64).cast(),
                    &mut len,
                    std::ptr::null_mut(),
                    0,
                )
            };
            (status == 0 && len == size_of::<u64>() && value != 0).then_some(value)
        } else {
            None
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::abi::{PCIOCRD_CURRENT, PctrStLegacy};

    #[test]
    fn mismatched_request_is_refused_without_a_call() {
        use std::os::fd::AsFd;
        let file = std::fs::File::open("/dev/null").expect("/dev/null exists on Unix");
        let mut st = PctrStLegacy::default();
        let result = ioctl(file.as_fd(), PCIOCRD_CURRENT, IoctlArg::ReadLegacy(&mut st));
        assert_eq!(result, Err(Errno::EINVAL));
    }

    #[cfg(not(target_os = "openbsd"))]
    #[test]
    fn pctr_requests_on_a_non_pctr_file_fail() {
        use crate::abi::PctrStCurrent;
        use std::os::fd::AsFd;
        let file = std::fs::File::open("/dev/null").expect("/dev/null exists on Unix");
        let mut st = PctrStCurrent::default();
        let result = ioctl(
            file.as_fd(),
            PCIOCRD_CURRENT,
            IoctlArg::ReadCurrent(&mut st),
        );
        assert!(result.is_err(), "PCIOCRD on /dev/null succeeded");
        assert_eq!(
            st,
            PctrStCurrent::default(),
            "a failed read must not fill the buffer"
        );
    }
}
