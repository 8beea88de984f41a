//! The device seam: reading and writing MSRs on one logical CPU.
//!
//! [`LinuxMsrDevice`] is the real thing (`/dev/cpu/N/msr_safe` or `/dev/cpu/N/msr`);
//! [`crate::ModelDevice`] is a model of a PMU. The backend never calls a device directly: every
//! access goes through the [`crate::AllowList`] first.

use crate::cpuid::CpuidSource;
use crate::timer::{Tick, Timer};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use counterhal_hal::{DeviceKind, Error, ErrorKind, Result};

/// Whether an access reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// RDMSR.
    Read,
    /// WRMSR.
    Write,
}

impl Access {
    /// `read` or `write`.
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

/// A thread's pin, shared by every group that pinned it: the thread, the affinity to restore,
/// the CPU, and how many pins are alive.
#[cfg(target_os = "linux")]
struct ThreadPinState {
    thread: i32,
    saved: crate::sys::Affinity,
    cpu: u32,
    holders: usize,
}

/// Every pinned thread's state, by thread id: a pin can be dropped on any thread (a group
/// moved to another thread), so the state is the process's, not a thread-local.
#[cfg(target_os = "linux")]
static PINS: std::sync::Mutex<Vec<ThreadPinState>> = std::sync::Mutex::new(Vec::new());

#[cfg(target_os = "linux")]
fn pins() -> std::sync::MutexGuard<'static, Vec<ThreadPinState>> {
    PINS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The CPU a "this thread" group counts on, and what pinning it there changed.
///
/// Pins nest: the first pin of a thread binds it to the CPU it runs on; later pins (more
/// groups on the same thread) share that CPU; the thread's original affinity comes back when
/// the last pin is dropped, on whichever thread that happens (the pin names its thread).
#[derive(Debug)]
pub struct ThreadPin {
    /// The logical CPU the thread is now bound to.
    pub cpu: u32,
    /// The pinned thread's id, when this pin holds its binding.
    holds: Option<i32>,
}

impl ThreadPin {
    /// A pin that changed nothing (models: the thread "runs" on `cpu` of the model).
    pub fn unpinned(cpu: u32) -> ThreadPin {
        ThreadPin { cpu, holds: None }
    }

    /// Pins the calling thread to the CPU it runs on now (`sched_setaffinity`), or joins the
    /// thread's existing pin; dropping the last pin restores the thread's original affinity.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] off Linux; [`ErrorKind::PermissionDenied`] or
    /// [`ErrorKind::Other`] as the OS reports.
    pub fn pin_current_thread() -> Result<ThreadPin> {
        #[cfg(target_os = "linux")]
        {
            let thread = crate::sys::current_thread();
            let mut pins = pins();
            if let Some(state) = pins.iter_mut().find(|p| p.thread == thread) {
                state.holders += 1;
                return Ok(ThreadPin {
                    cpu: state.cpu,
                    holds: Some(thread),
                });
            }
            let (cpu, saved) = crate::sys::pin_current_thread().map_err(|error| {
                let errno = error.raw_os_error().unwrap_or(0);
                let kind = if errno == libc::EPERM {
                    ErrorKind::PermissionDenied
                } else {
                    ErrorKind::Other
                };
                Error::new(kind, format!("cannot pin this thread to its CPU: {error}"))
                    .with_errno(errno)
            })?;
            pins.push(ThreadPinState {
                thread,
                saved,
                cpu,
                holders: 1,
            });
            Ok(ThreadPin {
                cpu,
                holds: Some(thread),
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err(
                Error::unsupported("pinning a thread to a CPU is implemented on Linux only")
                    .with_hint("measure a CPU (BackendTarget::Cpu) instead"),
            )
        }
    }

    /// Whether this pin holds the thread's binding (dropping the last such pin changes the
    /// thread's affinity back).
    pub fn is_pinned(&self) -> bool {
        self.holds.is_some()
    }
}

impl Drop for ThreadPin {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(thread) = self.holds {
            let mut pins = pins();
            if let Some(at) = pins.iter().position(|p| p.thread == thread) {
                pins[at].holders -= 1;
                if pins[at].holders == 0 {
                    let state = pins.swap_remove(at);
                    // Nothing useful can be done with a failure while dropping.
                    let _ = crate::sys::restore_affinity(&state.saved);
                }
            }
        }
    }
}

/// Reads and writes model-specific registers of logical CPUs.
///
/// Implementations: [`LinuxMsrDevice`] (real) and [`crate::ModelDevice`] (a PMU model).
pub trait MsrDevice: Send + Sync + fmt::Debug {
    /// Real device or model.
    fn kind(&self) -> DeviceKind;

    /// What it is, for reports: `/dev/cpu/*/msr`, `model intel-v4`.
    fn describe(&self) -> String;

    /// How many logical CPUs it can address (CPUs `0..cpu_count()`).
    fn cpu_count(&self) -> u32;

    /// RDMSR `msr` on `cpu`.
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] (errno EIO) when the CPU refuses the MSR;
    /// [`ErrorKind::NotFound`] for a CPU that does not exist or is offline;
    /// [`ErrorKind::PermissionDenied`], [`ErrorKind::DeviceMissing`] as the OS reports.
    fn read(&self, cpu: u32, msr: u32) -> Result<u64>;

    /// WRMSR `value` to `msr` on `cpu`.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    fn write(&self, cpu: u32, msr: u32, value: u64) -> Result<()>;

    /// The TSC frequency when the device knows it (models); `None` for real hardware.
    fn tsc_hz(&self) -> Option<u64> {
        None
    }

    /// CPUID as `cpu` answers it, wherever the caller runs: on a hybrid chip each core type
    /// has its own PMU and event table. The real device reads Linux's cpuid driver
    /// (`/dev/cpu/N/cpuid`), a model its configuration.
    ///
    /// # Errors
    /// As [`CpuidDevice::open`](crate::CpuidDevice::open); a device without per-CPU CPUID
    /// answers [`ErrorKind::Unsupported`].
    fn cpuid_of(&self, cpu: u32) -> Result<Box<dyn CpuidSource>> {
        Err(Error::unsupported(format!(
            "{} cannot ask CPU {cpu} for its CPUID",
            self.describe()
        )))
    }

    /// Binds the calling thread to a CPU for a "this thread" group. The real device pins the
    /// thread where it runs ([`ThreadPin::pin_current_thread`]).
    ///
    /// # Errors
    /// As [`ThreadPin::pin_current_thread`].
    fn pin_this_thread(&self) -> Result<ThreadPin> {
        ThreadPin::pin_current_thread()
    }

    /// Calls `tick` every `period` until the returned [`Timer`] is dropped: the multiplexing
    /// rotation's clock. The real device runs it on a thread of its own
    /// ([`Timer::thread`]); a model on its own clock.
    ///
    /// # Errors
    /// As [`Timer::thread`].
    fn start_timer(&self, period: std::time::Duration, tick: Tick) -> Result<Timer> {
        Timer::thread("counterhal-msr-rotation", period, tick)
    }
}

/// The error for an MSR the CPU refused (#GP in RDMSR/WRMSR, EIO from the driver).
pub fn refused(cpu: u32, msr: u32, access: Access) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!(
            "the CPU refused MSR {msr:#x} ({} on CPU {cpu})",
            access.name()
        ),
    )
    .with_errno(EIO)
}

const EIO: i32 = 5;

const DRIVER_HINT: &str =
    "load the msr driver (`modprobe msr`) and run as root or with CAP_SYS_RAWIO";

/// Maps an OS error from an MSR device file onto an [`Error`]: the one documented `match`.
///
/// | errno | kind | meaning |
/// |---|---|---|
/// | EIO | Unsupported | the CPU refused the MSR (#GP) |
/// | ENOENT | DeviceMissing | no driver: hint `modprobe msr`, CAP_SYS_RAWIO |
/// | ENXIO, ENODEV | NotFound | no such CPU, or it is offline |
/// | EPERM, EACCES | PermissionDenied | needs root / CAP_SYS_RAWIO; writes may be disabled (`/sys/module/msr/parameters/allow_writes`, kernel lockdown) or not on the msr_safe allow-list |
/// | EBUSY | Busy | |
/// | short transfer | Other | |
/// | anything else | Other | |
pub fn map_io_error(
    error: &std::io::Error,
    path: &Path,
    cpu: u32,
    msr: Option<u32>,
    access: Access,
) -> Error {
    let errno = error.raw_os_error();
    let what = match msr {
        Some(msr) => format!("cannot {} MSR {msr:#x} on CPU {cpu}", access.name()),
        None => format!("cannot open {}", path.display()),
    };
    #[cfg(unix)]
    let mapped = match errno {
        Some(libc::EIO) => {
            return match msr {
                Some(msr) => refused(cpu, msr, access),
                None => Error::new(
                    ErrorKind::Unsupported,
                    format!("{what}: the CPU has no MSRs"),
                )
                .with_errno(libc::EIO),
            };
        }
        Some(libc::ENOENT) => {
            Error::new(ErrorKind::DeviceMissing, format!("{what}: {error}")).with_hint(DRIVER_HINT)
        }
        Some(libc::ENXIO) | Some(libc::ENODEV) => Error::new(
            ErrorKind::NotFound,
            format!("{what}: CPU {cpu} does not exist or is offline"),
        ),
        Some(libc::EPERM) | Some(libc::EACCES) => {
            let hint = match access {
                Access::Read => "run as root or with CAP_SYS_RAWIO",
                Access::Write => {
                    "run as root or with CAP_SYS_RAWIO; check \
                     /sys/module/msr/parameters/allow_writes and kernel lockdown (msr_safe: \
                     the register must be on its allow-list)"
                }
            };
            Error::new(ErrorKind::PermissionDenied, format!("{what}: {error}")).with_hint(hint)
        }
        Some(libc::EBUSY) => Error::new(ErrorKind::Busy, format!("{what}: {error}")),
        _ if error.kind() == std::io::ErrorKind::UnexpectedEof => Error::new(
            ErrorKind::Other,
            format!("{what}: short transfer (expected 8 bytes)"),
        ),
        _ => Error::new(ErrorKind::Other, format!("{what}: {error}")),
    };
    #[cfg(not(unix))]
    let mapped = {
        let _ = (cpu, access);
        Error::new(ErrorKind::Other, format!("{what}: {error}"))
    };
    match errno {
        Some(errno) => mapped.with_errno(errno),
        None => mapped,
    }
}

/// Which Linux driver node a [`LinuxMsrDevice`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MsrDriver {
    /// `/dev/cpu/N/msr` (the kernel's msr driver; CAP_SYS_RAWIO).
    Msr,
    /// `/dev/cpu/N/msr_safe` (LLNL msr-safe: its own allow-list, usable without root).
    MsrSafe,
}

impl MsrDriver {
    /// The file name under `/dev/cpu/N/`.
    pub fn file_name(self) -> &'static str {
        match self {
            MsrDriver::Msr => "msr",
            MsrDriver::MsrSafe => "msr_safe",
        }
    }
}

/// Linux MSR device files: `pread`/`pwrite` of 8 bytes at offset = MSR address on
/// `<root>/<cpu>/<msr or msr_safe>` (root `/dev/cpu`). Files are opened on first use and kept.
#[derive(Debug)]
pub struct LinuxMsrDevice {
    root: PathBuf,
    driver: MsrDriver,
    cpus: u32,
    files: Vec<Mutex<Option<std::fs::File>>>,
}

impl LinuxMsrDevice {
    /// Opens the real device under `/dev/cpu`, preferring `msr_safe` where present.
    ///
    /// # Errors
    /// [`ErrorKind::DeviceMissing`] with the hint to `modprobe msr` and run with
    /// CAP_SYS_RAWIO when neither file exists; [`ErrorKind::PermissionDenied`] when CPU 0's
    /// file cannot be opened; [`ErrorKind::Unsupported`] off Unix.
    pub fn open() -> Result<LinuxMsrDevice> {
        Self::open_at("/dev/cpu", None)
    }

    /// Opens the device files under `root` (`root/N/msr`), with `driver` or, when `None`, the
    /// first of msr_safe and msr that CPU 0 has. Tests point `root` at a stand-in directory.
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_at(root: impl AsRef<Path>, driver: Option<MsrDriver>) -> Result<LinuxMsrDevice> {
        let root = root.as_ref().to_path_buf();
        let driver = match driver {
            Some(driver) => driver,
            None => [MsrDriver::MsrSafe, MsrDriver::Msr]
                .into_iter()
                .find(|d| root.join("0").join(d.file_name()).exists())
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::DeviceMissing,
                        format!(
                            "no MSR device: neither {0}/0/msr nor {0}/0/msr_safe exists",
                            root.display()
                        ),
                    )
                    .with_hint(DRIVER_HINT)
                })?,
        };
        let cpus = std::fs::read_dir(&root)
            .map_err(|error| map_io_error(&error, &root, 0, None, Access::Read))?
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .max()
            .map_or(0, |max| max + 1);
        let files = (0..cpus).map(|_| Mutex::new(None)).collect();
        let device = LinuxMsrDevice {
            root,
            driver,
            cpus,
            files,
        };
        // Open CPU 0 now, so that a missing driver or privilege shows at probe time.
        device.with_file(0, None, Access::Read, |_| Ok(()))?;
        Ok(device)
    }

    /// The driver node in use.
    pub fn driver(&self) -> MsrDriver {
        self.driver
    }

    fn path(&self, cpu: u32) -> PathBuf {
        self.root
            .join(cpu.to_string())
            .join(self.driver.file_name())
    }

    fn with_file<T>(
        &self,
        cpu: u32,
        msr: Option<u32>,
        access: Access,
        body: impl FnOnce(&std::fs::File) -> std::io::Result<T>,
    ) -> Result<T> {
        let slot = self.files.get(cpu as usize).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "CPU {cpu} does not exist (this system has CPUs 0-{})",
                    self.cpus.saturating_sub(1)
                ),
            )
        })?;
        let mut slot = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let file = match &mut *slot {
            Some(file) => file,
            None => {
                let path = self.path(cpu);
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)
                    .map_err(|error| map_io_error(&error, &path, cpu, None, access))?;
                slot.insert(file)
            }
        };
        body(file).map_err(|error| map_io_error(&error, &self.path(cpu), cpu, msr, access))
    }
}

impl MsrDevice for LinuxMsrDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Real
    }

    fn describe(&self) -> String {
        format!("{}/*/{}", self.root.display(), self.driver.file_name())
    }

    fn cpu_count(&self) -> u32 {
        self.cpus
    }

    fn cpuid_of(&self, cpu: u32) -> Result<Box<dyn CpuidSource>> {
        Ok(Box::new(crate::CpuidDevice::open(cpu)?))
    }

    fn read(&self, cpu: u32, msr: u32) -> Result<u64> {
        self.with_file(cpu, Some(msr), Access::Read, |file| {
            let mut bytes = [0u8; 8];
            read_at(file, &mut bytes, u64::from(msr))?;
            Ok(u64::from_le_bytes(bytes))
        })
    }

    fn write(&self, cpu: u32, msr: u32, value: u64) -> Result<()> {
        self.with_file(cpu, Some(msr), Access::Write, |file| {
            write_at(file, &value.to_le_bytes(), u64::from(msr))
        })
    }
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, bytes: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, bytes, offset)
}

#[cfg(unix)]
fn write_at(file: &std::fs::File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    let written = std::os::unix::fs::FileExt::write_at(file, bytes, offset)?;
    if written != bytes.len() {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
    }
    Ok(())
}

#[cfg(not(unix))]
fn read_at(_file: &std::fs::File, _bytes: &mut [u8], _offset: u64) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

#[cfg(not(unix))]
fn write_at(_file: &std::fs::File, _bytes: &[u8], _offset: u64) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;
    use counterhal_conformance::fixtures::Scratch;
    use counterhal_conformance::skip::Need;

    /// A folder for a stand-in of /dev/cpu, removed when the test ends, passed or failed.
    fn scratch(name: &str) -> Scratch {
        Scratch::new(&format!("msr-{name}"))
    }

    /// The tests that stand files in for /dev/cpu leave nothing in the temporary directory,
    /// passed, failed or skipped (before, each run left `counterhal-msr-{eio,file,missing,
    /// safe}-PID` behind).
    #[test]
    fn the_stand_ins_leave_nothing() {
        let run = counterhal_conformance::fixtures::left_in_temp_dir(
            &[
                "--exact",
                "device::tests::missing_driver_is_device_missing_with_hint",
                "device::tests::pread_pwrite_at_the_msr_address",
                "device::tests::msr_safe_is_preferred",
                "device::tests::eio_is_the_cpu_refusing",
            ],
            &[],
        );
        assert!(run.output.contains("running 4 tests"), "{}", run.output);
        assert!(run.left.is_empty(), "left: {:?}\n{}", run.left, run.output);
    }

    #[test]
    fn pins_nest_and_the_last_one_restores() {
        let before = crate::sys::current_affinity().unwrap();
        if before.len() < 2 {
            counterhal_conformance::skip!(
                Need::Platform,
                "this thread may run on one CPU only ({before:?})"
            );
        }
        let first = match ThreadPin::pin_current_thread() {
            Ok(pin) => pin,
            Err(error) => counterhal_conformance::skip!(
                Need::Privilege,
                "cannot change affinity here: {error}"
            ),
        };
        let second = ThreadPin::pin_current_thread().unwrap();
        assert_eq!(first.cpu, second.cpu);
        assert!(first.is_pinned() && second.is_pinned());
        drop(first);
        // The second group still counts on that CPU: the thread stays there.
        assert_eq!(crate::sys::current_affinity().unwrap(), vec![second.cpu]);
        drop(second);
        assert_eq!(crate::sys::current_affinity().unwrap(), before);
    }

    #[test]
    fn missing_driver_is_device_missing_with_hint() {
        let dir = scratch("missing");
        std::fs::create_dir_all(dir.join("0")).unwrap();
        let error = LinuxMsrDevice::open_at(&dir, None).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::DeviceMissing);
        let hint = error.hint().unwrap();
        assert!(
            hint.contains("modprobe msr") && hint.contains("CAP_SYS_RAWIO"),
            "{hint}"
        );
        let error = LinuxMsrDevice::open_at(&dir, Some(MsrDriver::Msr)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::DeviceMissing, "{error}");
        assert_eq!(error.errno(), Some(libc::ENOENT));
    }

    /// A regular file stands in for /dev/cpu/N/msr: pread/pwrite at offset = MSR address.
    #[test]
    fn pread_pwrite_at_the_msr_address() {
        let dir = scratch("file");
        for cpu in 0..2 {
            std::fs::create_dir_all(dir.join(cpu.to_string())).unwrap();
            std::fs::File::create(dir.join(cpu.to_string()).join("msr")).unwrap();
        }
        let device = LinuxMsrDevice::open_at(&dir, None).unwrap();
        assert_eq!(device.driver(), MsrDriver::Msr);
        assert_eq!(device.cpu_count(), 2);
        device.write(1, 0x38F, 0x0000_0007_0000_000F).unwrap();
        device.write(1, 0xC001_0201, 0x1234).unwrap();
        assert_eq!(device.read(1, 0x38F).unwrap(), 0x0000_0007_0000_000F);
        assert_eq!(device.read(1, 0xC001_0201).unwrap(), 0x1234);
        let file = std::fs::File::open(dir.join("1").join("msr")).unwrap();
        let mut bytes = [0u8; 8];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, 0x38F).unwrap();
        assert_eq!(bytes, 0x0000_0007_0000_000Fu64.to_le_bytes());
        // CPU 0 untouched: reading past its end is a short transfer.
        let error = device.read(0, 0x38F).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Other);
        assert!(error.message().contains("short transfer"), "{error}");
        let error = device.read(5, 0x10).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound);
        assert!(error.message().contains("CPUs 0-1"), "{error}");
    }

    #[test]
    fn msr_safe_is_preferred() {
        let dir = scratch("safe");
        std::fs::create_dir_all(dir.join("0")).unwrap();
        std::fs::File::create(dir.join("0").join("msr")).unwrap();
        std::fs::File::create(dir.join("0").join("msr_safe")).unwrap();
        let device = LinuxMsrDevice::open_at(&dir, None).unwrap();
        assert_eq!(device.driver(), MsrDriver::MsrSafe);
        assert!(device.describe().ends_with("/*/msr_safe"));
    }

    /// `/proc/self/mem` answers EIO for an unmapped address, as the msr driver does for an
    /// MSR the CPU refuses: the mapping must say "the CPU refused MSR ...".
    #[test]
    fn eio_is_the_cpu_refusing() {
        let dir = scratch("eio");
        std::fs::create_dir_all(dir.join("0")).unwrap();
        std::os::unix::fs::symlink("/proc/self/mem", dir.join("0").join("msr")).unwrap();
        let device = match LinuxMsrDevice::open_at(&dir, Some(MsrDriver::Msr)) {
            Ok(device) => device,
            Err(error) => counterhal_conformance::skip!(
                Need::System,
                "/proc/self/mem cannot be opened here: {error}"
            ),
        };
        let error = device.read(0, 0x10).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported, "{error}");
        assert_eq!(error.errno(), Some(libc::EIO));
        assert_eq!(error.message(), "the CPU refused MSR 0x10 (read on CPU 0)");
    }

    #[test]
    fn errno_table() {
        let path = Path::new("/dev/cpu/3/msr");
        let cases = [
            (libc::ENXIO, ErrorKind::NotFound),
            (libc::ENODEV, ErrorKind::NotFound),
            (libc::EPERM, ErrorKind::PermissionDenied),
            (libc::EACCES, ErrorKind::PermissionDenied),
            (libc::EBUSY, ErrorKind::Busy),
            (libc::ENOENT, ErrorKind::DeviceMissing),
            (libc::EIO, ErrorKind::Unsupported),
            (libc::EINVAL, ErrorKind::Other),
        ];
        for (errno, kind) in cases {
            let error = std::io::Error::from_raw_os_error(errno);
            let mapped = map_io_error(&error, path, 3, Some(0x38F), Access::Write);
            assert_eq!(mapped.kind(), kind, "errno {errno}");
            assert_eq!(mapped.errno(), Some(errno));
        }
        let error = std::io::Error::from_raw_os_error(libc::EACCES);
        let mapped = map_io_error(&error, path, 3, Some(0x38F), Access::Write);
        assert!(mapped.hint().unwrap().contains("allow_writes"));
    }
}
