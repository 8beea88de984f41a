//! The device seam: what the backend asks of `/dev/pctr`, and the real device.

use counterhal_hal::DeviceKind;

use crate::abi::{Abi, IoctlArg, PctrStCurrent, PctrStLegacy, set_request};
use crate::errno::Errno;

/// An open pctr device: the real `/dev/pctr` ([`RealDevice`]) or a model of the driver
/// ([`DriverModel`](crate::DriverModel)).
///
/// It is the driver's ioctl entry point and nothing more: the request number decides what
/// happens, exactly as in the kernel, so a model can be checked against the driver's rules.
pub trait PctrDevice: Send {
    /// Real device or model.
    fn kind(&self) -> DeviceKind;

    /// Whether it was opened for writing (sets need it).
    fn writable(&self) -> bool;

    /// `ioctl(fd, request, arg)`.
    ///
    /// # Errors
    /// The driver's `errno`: `EINVAL` for an unknown request, a counter out of range or a
    /// refused function; `EPERM` for a set on a read-only descriptor; `ENODEV` for a set on a
    /// CPU without counters; whatever else the OS says for the real device.
    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> Result<(), Errno>;
}

/// One `PCIOCRD`, whichever ABI it came from, with the unused slots zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// The functions as the CPU holds them.
    pub(crate) functions: [u32; 4],
    /// The time stamp counter.
    pub(crate) tsc: u64,
    /// The counters, as the kernel returned them.
    pub(crate) counters: [u64; 4],
    /// Idle-loop iterations (legacy ABI only; 0 otherwise).
    pub(crate) idle: u64,
}

/// Issues `PCIOCRD` of `abi` on `device`.
///
/// # Errors
/// The driver's `errno` (`EINVAL` when the kernel speaks the other ABI).
pub(crate) fn read_snapshot(device: &mut dyn PctrDevice, abi: Abi) -> Result<Snapshot, Errno> {
    match abi {
        Abi::Legacy => {
            let mut st = PctrStLegacy::default();
            device.ioctl(abi.read_request(), IoctlArg::ReadLegacy(&mut st))?;
            Ok(Snapshot {
                functions: [st.pctr_fn[0], st.pctr_fn[1], 0, 0],
                tsc: st.pctr_tsc,
                counters: [st.pctr_hwc[0], st.pctr_hwc[1], 0, 0],
                idle: st.pctr_idl,
            })
        }
        Abi::Current => {
            let mut st = PctrStCurrent::default();
            device.ioctl(abi.read_request(), IoctlArg::ReadCurrent(&mut st))?;
            Ok(Snapshot {
                functions: st.pctr_fn,
                tsc: st.pctr_tsc,
                counters: st.pctr_hwc,
                idle: 0,
            })
        }
    }
}

/// Finds the ABI the driver speaks: the current `PCIOCRD` first, then the legacy one.
///
/// # Errors
/// The `errno` of the legacy attempt when neither answers (the current one's when it failed
/// with something other than `EINVAL`).
pub fn detect_abi(device: &mut dyn PctrDevice) -> Result<Abi, Errno> {
    match read_snapshot(device, Abi::Current) {
        Ok(_) => Ok(Abi::Current),
        Err(Errno::EINVAL) => read_snapshot(device, Abi::Legacy).map(|_| Abi::Legacy),
        Err(errno) => Err(errno),
    }
}

/// Issues `PCIOCS<counter>` with `function`.
///
/// # Errors
/// The driver's `errno`; `EINVAL` without a call for a counter above 3 (no request exists).
pub fn set_function(device: &mut dyn PctrDevice, counter: u32, function: u32) -> Result<(), Errno> {
    let request = set_request(counter).ok_or(Errno::EINVAL)?;
    device.ioctl(request, IoctlArg::Function(function))
}

/// The real `/dev/pctr` (or any file opened in its place): an owned descriptor and its mode.
///
/// It compiles on every Unix so that its error paths are tested everywhere; only OpenBSD has
/// the device.
#[cfg(unix)]
#[derive(Debug)]
pub struct RealDevice {
    fd: std::os::fd::OwnedFd,
    writable: bool,
}

#[cfg(unix)]
impl RealDevice {
    /// The device's path.
    pub const PATH: &'static str = "/dev/pctr";

    /// Opens `path` read-only or read-write.
    ///
    /// # Errors
    /// The `errno` of `open(2)` (`ENOENT` when the file is missing, `EACCES` when its mode
    /// forbids the access, `ENXIO` for a minor other than 0).
    pub fn open(path: &std::path::Path, writable: bool) -> Result<RealDevice, Errno> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(writable)
            .open(path)
            .map_err(|error| Errno::from_io(&error))?;
        Ok(RealDevice {
            fd: file.into(),
            writable,
        })
    }

    /// Opens `path` read-write, or read-only when the mode forbids writing.
    ///
    /// # Errors
    /// As [`open`](Self::open), from the read-only attempt.
    pub fn open_best(path: &std::path::Path) -> Result<RealDevice, Errno> {
        match RealDevice::open(path, true) {
            Err(Errno::EACCES | Errno::EPERM) => RealDevice::open(path, false),
            other => other,
        }
    }
}

#[cfg(unix)]
impl PctrDevice for RealDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Real
    }

    fn writable(&self) -> bool {
        self.writable
    }

    fn ioctl(&mut self, request: u64, arg: IoctlArg<'_>) -> Result<(), Errno> {
        use std::os::fd::AsFd;
        crate::sys::ioctl(self.fd.as_fd(), request, arg)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn missing_device_is_enoent() {
        let error = RealDevice::open(Path::new("/nonexistent/pctr"), false).unwrap_err();
        assert_eq!(error, Errno::ENOENT);
    }

    #[cfg(not(target_os = "openbsd"))]
    #[test]
    fn a_non_pctr_file_answers_no_abi() {
        let mut device = RealDevice::open(Path::new("/dev/null"), false).expect("open /dev/null");
        assert!(!device.writable());
        let errno = detect_abi(&mut device).unwrap_err();
        // Linux answers ENOTTY for an ioctl /dev/null does not know.
        assert_eq!(errno, Errno::ENOTTY, "got {errno}");
        let errno = set_function(&mut device, 0, 0x4300c0).unwrap_err();
        assert_eq!(errno, Errno::ENOTTY, "got {errno}");
        assert_eq!(set_function(&mut device, 4, 0), Err(Errno::EINVAL));
    }
}
