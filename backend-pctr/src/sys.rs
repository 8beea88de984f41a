//! The kernel interface: `struct pctrst` of both ABIs, the BSD ioctl request formula, and the
//! only `unsafe` code of this crate (the `ioctl(2)` call, `CPUID`, and the `machdep.tscfreq`
//! sysctl).
//!
//! # Safety
//!
//! Every system call here passes the kernel a pointer to memory owned by the caller for the
//! whole call, of exactly the size the request number encodes. [`ioctl`] checks the request's
//! direction and length (BSD `IOC_OUT`/`IOC_IN` and `IOCPARM_LEN`) against the Rust type it was
//! given before it issues the call, so the kernel can never copy more bytes in or out than the
//! buffer holds. File descriptors are borrowed ([`BorrowedFd`]), so they are open for the whole
//! call. `CPUID` has no memory effects.

use std::mem::{offset_of, size_of};

#[cfg(unix)]
use std::os::fd::BorrowedFd;

use crate::device::IoctlArg;
use crate::errno::Errno;

/// `IOCPARM_MASK`: the parameter length field (13 bits).
pub const IOCPARM_MASK: u64 = 0x1fff;
/// `IOC_VOID`: no parameters.
pub const IOC_VOID: u64 = 0x2000_0000;
/// `IOC_OUT`: the kernel copies parameters out (used by `_IOR`).
pub const IOC_OUT: u64 = 0x4000_0000;
/// `IOC_IN`: the kernel copies parameters in (used by `_IOW`).
pub const IOC_IN: u64 = 0x8000_0000;
/// `IOC_DIRMASK`: the direction bits.
pub const IOC_DIRMASK: u64 = 0xe000_0000;

/// BSD `_IOC(inout, group, num, len)` from `sys/sys/ioccom.h`. Not Linux's layout: the
/// direction sits in bits 29-31 and the length in bits 16-28.
pub const fn ioc(inout: u64, group: u8, num: u8, len: usize) -> u64 {
    inout | (((len as u64) & IOCPARM_MASK) << 16) | ((group as u64) << 8) | num as u64
}

/// BSD `_IOR(group, num, type)`: the kernel fills `len` bytes.
pub const fn ior(group: u8, num: u8, len: usize) -> u64 {
    ioc(IOC_OUT, group, num, len)
}

/// BSD `_IOW(group, num, type)`: the kernel reads `len` bytes.
pub const fn iow(group: u8, num: u8, len: usize) -> u64 {
    ioc(IOC_IN, group, num, len)
}

/// BSD `IOCPARM_LEN(request)`: the parameter length a request carries.
pub const fn iocparm_len(request: u64) -> usize {
    ((request >> 16) & IOCPARM_MASK) as usize
}

/// BSD `IOCGROUP(request)`: the request's group letter.
pub const fn ioc_group(request: u64) -> u8 {
    ((request >> 8) & 0xff) as u8
}

/// The request's number within its group.
pub const fn ioc_num(request: u64) -> u8 {
    (request & 0xff) as u8
}

/// The ioctl group of pctr: `'c'`.
pub const PCTR_GROUP: u8 = b'c';

/// `struct pctrst` of the legacy i386 ABI (1998-2007, the seed pctr(4)): two counters and an
/// idle-loop count. 40 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PctrStLegacy {
    /// `pctr_fn[2]`: the functions as programmed.
    pub pctr_fn: [u32; 2],
    /// `pctr_tsc`: the time stamp counter at the read.
    pub pctr_tsc: u64,
    /// `pctr_hwc[2]`: the hardware counters.
    pub pctr_hwc: [u64; 2],
    /// `pctr_idl`: idle-loop iterations.
    pub pctr_idl: u64,
}

/// `struct pctrst` of the current ABI (amd64 and i386 since 2007): four counter slots. 56
/// bytes, `pctr_tsc` at offset 16, `pctr_hwc` at 24.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PctrStCurrent {
    /// `pctr_fn[4]`: the functions as programmed (slots the CPU lacks read 0).
    pub pctr_fn: [u32; 4],
    /// `pctr_tsc`: the time stamp counter at the read.
    pub pctr_tsc: u64,
    /// `pctr_hwc[4]`: the hardware counters.
    pub pctr_hwc: [u64; 4],
}

const _: () = assert!(size_of::<PctrStLegacy>() == 40);
const _: () = assert!(offset_of!(PctrStLegacy, pctr_tsc) == 8);
const _: () = assert!(offset_of!(PctrStLegacy, pctr_hwc) == 16);
const _: () = assert!(offset_of!(PctrStLegacy, pctr_idl) == 32);
const _: () = assert!(size_of::<PctrStCurrent>() == 56);
const _: () = assert!(offset_of!(PctrStCurrent, pctr_tsc) == 16);
const _: () = assert!(offset_of!(PctrStCurrent, pctr_hwc) == 24);

/// `PCIOCRD` of the legacy ABI: `_IOR('c', 1, struct pctrst)` with the 40-byte struct.
pub const PCIOCRD_LEGACY: u64 = ior(PCTR_GROUP, 1, size_of::<PctrStLegacy>());
/// `PCIOCRD` of the current ABI: `_IOR('c', 1, struct pctrst)` with the 56-byte struct.
pub const PCIOCRD_CURRENT: u64 = ior(PCTR_GROUP, 1, size_of::<PctrStCurrent>());
/// `PCIOCS0`: `_IOW('c', 8, unsigned int)`, set counter 0's function.
pub const PCIOCS0: u64 = iow(PCTR_GROUP, 8, size_of::<u32>());
/// `PCIOCS1`: set counter 1's function.
pub const PCIOCS1: u64 = iow(PCTR_GROUP, 9, size_of::<u32>());
/// `PCIOCS2`: set counter 2's function (current ABI only).
pub const PCIOCS2: u64 = iow(PCTR_GROUP, 10, size_of::<u32>());
/// `PCIOCS3`: set counter 3's function (current ABI only).
pub const PCIOCS3: u64 = iow(PCTR_GROUP, 11, size_of::<u32>());

/// Whether `arg` has exactly the direction and size `request` encodes.
pub(crate) fn arg_matches(request: u64, arg: &IoctlArg<'_>) -> bool {
    let (direction, len) = match arg {
        IoctlArg::ReadLegacy(_) => (IOC_OUT, size_of::<PctrStLegacy>()),
        IoctlArg::ReadCurrent(_) => (IOC_OUT, size_of::<PctrStCurrent>()),
        IoctlArg::Function(_) => (IOC_IN, size_of::<u32>()),
    };
    request & IOC_DIRMASK == direction && iocparm_len(request) == len
}

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

/// `CPUID(leaf)` as `[eax, ebx, ecx, edx]`, on x86 CPUs; `None` elsewhere.
pub(crate) fn cpuid(leaf: u32) -> Option<[u32; 4]> {
    cfg_if::cfg_if! {
        if #[cfg(target_arch = "x86_64")] {
            // `__cpuid` is an `unsafe fn` in older compilers and safe in newer ones.
            #[allow(unused_unsafe)]
            // SAFETY: CPUID exists on every x86_64 CPU, has no memory effects, and an
            // unsupported leaf returns zeros or the highest leaf's data rather than faulting.
            let r = unsafe { std::arch::x86_64::__cpuid(leaf) };
            Some([r.eax, r.ebx, r.ecx, r.edx])
        } else if #[cfg(all(target_arch = "x86", target_feature = "sse"))] {
            // SSE implies a CPU with CPUID.
            #[allow(unused_unsafe)]
            // SAFETY: as above; CPUID exists on every CPU with SSE.
            let r = unsafe { std::arch::x86::__cpuid(leaf) };
            Some([r.eax, r.ebx, r.ecx, r.edx])
        } else {
            let _ = leaf;
            None
        }
    }
}

#[cfg(unix)]
/// The TSC frequency in Hz from the `machdep.tscfreq` sysctl (OpenBSD); `None` elsewhere or
/// when the kernel does not export it.
pub(crate) fn tsc_frequency() -> Option<u64> {
    cfg_if::cfg_if! {
        if #[cfg(target_os = "openbsd")] {
            /// `CPU_TSCFREQ` in `machine/cpu.h`.
            const CPU_TSCFREQ: libc::c_int = 16;
            let mib = [libc::CTL_MACHDEP, CPU_TSCFREQ];
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_the_headers() {
        assert_eq!(PCIOCRD_LEGACY, 0x4028_6301);
        assert_eq!(PCIOCRD_CURRENT, 0x4038_6301);
        assert_eq!(PCIOCS0, 0x8004_6308);
        assert_eq!(PCIOCS1, 0x8004_6309);
        assert_eq!(PCIOCS2, 0x8004_630a);
        assert_eq!(PCIOCS3, 0x8004_630b);
    }

    #[test]
    fn request_fields_decode() {
        assert_eq!(iocparm_len(PCIOCRD_CURRENT), 56);
        assert_eq!(iocparm_len(PCIOCRD_LEGACY), 40);
        assert_eq!(ioc_group(PCIOCS3), b'c');
        assert_eq!(ioc_num(PCIOCS3), 11);
        assert_eq!(ioc(IOC_VOID, b'c', 1, 0), 0x2000_6301);
        // The length field is 13 bits wide: larger sizes are masked, as the C macro does.
        assert_eq!(iocparm_len(ior(b'c', 1, 0x2001)), 1);
    }

    #[test]
    fn arguments_must_match_the_request_shape() {
        let mut current = PctrStCurrent::default();
        let mut legacy = PctrStLegacy::default();
        assert!(arg_matches(
            PCIOCRD_CURRENT,
            &IoctlArg::ReadCurrent(&mut current)
        ));
        assert!(!arg_matches(
            PCIOCRD_LEGACY,
            &IoctlArg::ReadCurrent(&mut current)
        ));
        assert!(arg_matches(
            PCIOCRD_LEGACY,
            &IoctlArg::ReadLegacy(&mut legacy)
        ));
        assert!(!arg_matches(PCIOCS0, &IoctlArg::ReadLegacy(&mut legacy)));
        assert!(arg_matches(PCIOCS2, &IoctlArg::Function(0)));
        assert!(!arg_matches(PCIOCRD_CURRENT, &IoctlArg::Function(0)));
    }

    #[cfg(unix)]
    #[test]
    fn mismatched_request_is_refused_without_a_call() {
        use std::os::fd::AsFd;
        let file = std::fs::File::open("/dev/null").expect("/dev/null exists on Unix");
        let mut st = PctrStLegacy::default();
        let result = ioctl(file.as_fd(), PCIOCRD_CURRENT, IoctlArg::ReadLegacy(&mut st));
        assert_eq!(result, Err(Errno::EINVAL));
    }

    #[cfg(all(unix, not(target_os = "openbsd")))]
    #[test]
    fn pctr_requests_on_a_non_pctr_file_fail() {
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

    #[test]
    fn cpuid_answers_on_x86() {
        if cfg!(any(
            target_arch = "x86_64",
            all(target_arch = "x86", target_feature = "sse")
        )) {
            let leaf0 = cpuid(0).expect("CPUID on x86");
            assert!(leaf0[0] >= 1, "CPUID leaf 0 reports max leaf {}", leaf0[0]);
        } else {
            assert_eq!(cpuid(0), None);
        }
    }
}
