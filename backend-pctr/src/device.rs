//! The device seam: what the backend asks of `/dev/pctr`, and the real device.

use counterhal_hal::{DeviceKind, Result as HalResult};
use counterhal_x86::{Tick, Timer};

use crate::abi::{
    Abi, IoctlArg, PctrStCurrent, PctrStLegacy, PctrStTransitionalAmd64, PctrStTransitionalI386,
    set_request,
};
use crate::errno::{Errno, Operation, map_errno};

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

    /// Calls `tick` every `period` until the returned [`Timer`] is dropped: the clock of a
    /// multiplexed set's turns. The real device: a thread of the library's own
    /// ([`Timer::thread`], named `counterhal-pctr-rotation`), which needs nothing from the
    /// counted thread; a model: the model's clock.
    ///
    /// # Errors
    /// As [`Timer::thread`].
    fn start_timer(&self, period: std::time::Duration, tick: Tick) -> HalResult<Timer> {
        Timer::thread("counterhal-pctr-rotation", period, tick)
    }
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
        Abi::TransitionalI386 => {
            let mut st = PctrStTransitionalI386::default();
            device.ioctl(abi.read_request(), IoctlArg::ReadTransitionalI386(&mut st))?;
            Ok(Snapshot {
                functions: st.pctr_fn,
                tsc: st.pctr_tsc,
                counters: st.pctr_hwc,
                idle: st.pctr_idl,
            })
        }
        Abi::TransitionalAmd64 => {
            let mut st = PctrStTransitionalAmd64::default();
            device.ioctl(abi.read_request(), IoctlArg::ReadTransitionalAmd64(&mut st))?;
            Ok(Snapshot {
                functions: st.pctr_fn,
                tsc: st.pctr_tsc,
                counters: st.pctr_hwc,
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

/// Finds the ABI the driver speaks: the current `PCIOCRD` first, then the legacy one, then
/// the 64-byte one of 2007 in this build's layout (amd64's on x86-64, i386's elsewhere) and
/// the other one's (a real kernel takes either, as the request number is the same; a model
/// takes only its own).
///
/// # Errors
/// The `errno` of the last attempt when none answers (an earlier one's when it failed with
/// something other than `EINVAL`).
pub fn detect_abi(device: &mut dyn PctrDevice) -> Result<Abi, Errno> {
    let (native, other) = if cfg!(target_arch = "x86_64") {
        (Abi::TransitionalAmd64, Abi::TransitionalI386)
    } else {
        (Abi::TransitionalI386, Abi::TransitionalAmd64)
    };
    let mut last = Errno::EINVAL;
    for abi in [Abi::Current, Abi::Legacy, native, other] {
        match read_snapshot(device, abi) {
            Ok(_) => return Ok(abi),
            Err(Errno::EINVAL) => last = Errno::EINVAL,
            Err(errno) => return Err(errno),
        }
    }
    Err(last)
}

/// [`detect_abi`], with the driver's refusal as an [`Error`](counterhal_hal::Error).
///
/// # Errors
/// As [`map_errno`] maps the last read's `errno` ([`ErrorKind::DeviceMissing`] for a file
/// that is not a pctr device, [`ErrorKind::Unsupported`] for one that understands no
/// `PCIOCRD`).
///
/// [`ErrorKind::DeviceMissing`]: counterhal_hal::ErrorKind::DeviceMissing
/// [`ErrorKind::Unsupported`]: counterhal_hal::ErrorKind::Unsupported
pub(crate) fn identify_abi(device: &mut dyn PctrDevice) -> HalResult<Abi> {
    detect_abi(device).map_err(|errno| map_errno(&Operation::Read, errno))
}

/// What the driver answers about one counter when asked to set it to the function it holds
/// already: whether it drives the counter, without changing what it counts (an older driver
/// zeroes the counter on every set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CounterAnswer {
    /// The set was taken (or refused only for want of write access, which the driver checks
    /// after it has counters and the index): the driver drives this counter.
    Driven,
    /// `EINVAL`: the driver has counters but not this one.
    OutOfRange,
    /// `ENODEV`: the driver drives no counters on this CPU.
    NoCounters,
}

/// Asks the driver speaking `abi` whether it drives `counter` (see [`CounterAnswer`]).
///
/// # Errors
/// Any other `errno` of the read or the set.
pub(crate) fn ask_counter(
    device: &mut dyn PctrDevice,
    abi: Abi,
    counter: u32,
) -> Result<CounterAnswer, Errno> {
    let held = read_snapshot(device, abi)?
        .functions
        .get(counter as usize)
        .copied()
        .unwrap_or(0);
    match set_function(device, counter, held) {
        Ok(()) | Err(Errno::EPERM) => Ok(CounterAnswer::Driven),
        Err(Errno::EINVAL) => Ok(CounterAnswer::OutOfRange),
        Err(Errno::ENODEV) => Ok(CounterAnswer::NoCounters),
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

#[cfg(test)]
mod answers {
    use super::*;
    use crate::abi::{PCIOCRD_CURRENT, PCIOCRD_LEGACY};
    use crate::model::{ModelConfig, ModelCpu, ModelHandle};
    use counterhal_hal::ErrorKind;

    /// A device that understands no `PCIOCRD`.
    struct Deaf;

    impl PctrDevice for Deaf {
        fn kind(&self) -> DeviceKind {
            DeviceKind::Model
        }
        fn writable(&self) -> bool {
            true
        }
        fn ioctl(&mut self, _: u64, _: IoctlArg<'_>) -> Result<(), Errno> {
            Err(Errno::EINVAL)
        }
    }

    #[test]
    fn every_abi_is_recognised_and_a_deaf_device_is_refused() {
        for abi in [
            Abi::Legacy,
            Abi::TransitionalI386,
            Abi::TransitionalAmd64,
            Abi::Current,
        ] {
            let config = ModelConfig::new(ModelCpu::TscOnly).with_abi(abi).unwrap();
            let model = ModelHandle::with_config(config);
            model.advance_idle(3);
            let mut device = model.open(false);
            assert_eq!(detect_abi(&mut device), Ok(abi));
            let snapshot = read_snapshot(&mut device, abi).unwrap();
            assert_ne!(snapshot.tsc, 0, "{abi}");
            let idle = if abi == Abi::Current { 0 } else { 3 };
            assert_eq!(snapshot.idle, idle, "{abi}");
        }
        let error = identify_abi(&mut Deaf).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
        assert_eq!(error.errno(), Some(Errno::EINVAL.0));
        assert_eq!(Abi::Legacy.read_request(), PCIOCRD_LEGACY);
        assert_eq!(Abi::Current.read_request(), PCIOCRD_CURRENT);
    }

    #[test]
    fn asking_a_counter_tells_the_revisions_apart() {
        let amd = ModelHandle::new(ModelCpu::Amd);
        let mut device = amd.open(true);
        assert_eq!(
            ask_counter(&mut device, Abi::Current, 2),
            Ok(CounterAnswer::Driven)
        );
        let of_2007 = ModelConfig::new(ModelCpu::Amd)
            .with_abi(Abi::TransitionalI386)
            .unwrap();
        let mut device = ModelHandle::with_config(of_2007).open(true);
        assert_eq!(
            ask_counter(&mut device, Abi::TransitionalI386, 2),
            Ok(CounterAnswer::OutOfRange)
        );
        // Read-only: the driver checks the index before write access.
        let mut device = ModelHandle::with_config(of_2007).open(false);
        assert_eq!(
            ask_counter(&mut device, Abi::TransitionalI386, 1),
            Ok(CounterAnswer::Driven)
        );
        let tsc_only = ModelHandle::new(ModelCpu::TscOnly);
        assert_eq!(
            ask_counter(&mut tsc_only.open(true), Abi::Current, 0),
            Ok(CounterAnswer::NoCounters)
        );
        // Asking leaves the function as it was.
        amd.set_counter(0, 5);
        let mut device = amd.open(true);
        set_function(&mut device, 0, 0x4300c0).unwrap();
        ask_counter(&mut device, Abi::Current, 0).unwrap();
        assert_eq!(amd.function(0), 0x4300c0);
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
