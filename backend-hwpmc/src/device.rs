//! The device seam: what the backend asks of hwpmc(4) (its one system call and a clock), the
//! version handshake, and the real system call on FreeBSD.

use std::time::Duration;

use counterhal_hal::{DeviceKind, Result as HalResult};
use counterhal_x86::{Tick, Timer};

pub use crate::abi::OpArg;
use crate::abi::{PmcOpGetCpuInfo, PmcOpPmcRw, PmcOpSimple, Version, op};
use crate::errno::Errno;

/// hwpmc's system call as the backend uses it: the real one (`RealDevice`, FreeBSD only)
/// or a [`ModelDevice`](crate::ModelDevice).
pub trait HwpmcDevice: Send {
    /// Real device or model.
    fn kind(&self) -> DeviceKind;

    /// `syscall(pmc_syscall, op, arg)`.
    ///
    /// # Errors
    /// The kernel's error number (see [`Errno`]).
    fn call(&mut self, op: u32, arg: OpArg<'_>) -> Result<(), Errno>;

    /// The calling process's id.
    fn pid(&self) -> u32;

    /// The library's clock, in nanoseconds: hwpmc keeps no time enabled or running, so the
    /// backend keeps them on this clock.
    fn now_ns(&self) -> u64;

    /// Calls `tick` every `period` until the returned [`Timer`] is dropped: the clock of a
    /// multiplexed set's turns (a thread named `counterhal-hwpmc-rotation` on the real
    /// device; the model's clock on a model).
    ///
    /// # Errors
    /// As [`Timer::thread`].
    fn start_timer(&self, period: Duration, tick: Tick) -> HalResult<Timer> {
        Timer::thread("counterhal-hwpmc-rotation", period, tick)
    }
}

/// The version handshake as libpmc's `pmc_init` does it (`lib/libpmc/libpmc.c`), for both
/// majors this backend speaks: GETMODULEVERSION with V10; a V9 module refuses a newer caller
/// with EPROGMISMATCH (`hwpmc_mod.c`), so then again with V9.0. Returns the module's version.
///
/// # Errors
/// The kernel's error number; EPROGMISMATCH when the module's major is neither 9 nor 10.
pub fn handshake(device: &mut dyn HwpmcDevice) -> Result<Version, Errno> {
    let mut version = Version::V10.0;
    match device.call(op::GETMODULEVERSION, OpArg::Version(&mut version)) {
        Ok(()) => {}
        Err(Errno::EPROGMISMATCH) => {
            version = 0x0900_0000;
            device.call(op::GETMODULEVERSION, OpArg::Version(&mut version))?;
        }
        Err(errno) => return Err(errno),
    }
    let module = Version(version);
    match module.major() {
        9 | 10 => Ok(module),
        _ => Err(Errno::EPROGMISMATCH),
    }
}

/// GETCPUINFO.
///
/// # Errors
/// The kernel's error number.
pub fn cpu_info(device: &mut dyn HwpmcDevice) -> Result<PmcOpGetCpuInfo, Errno> {
    let mut info = PmcOpGetCpuInfo::default();
    device.call(op::GETCPUINFO, OpArg::CpuInfo(&mut info))?;
    Ok(info)
}

/// PMCSTART, PMCSTOP or PMCRELEASE (`op`) of `pmcid`.
pub(crate) fn simple(
    device: &mut dyn HwpmcDevice,
    op_number: u32,
    pmcid: u32,
) -> Result<(), Errno> {
    let mut arg = PmcOpSimple { pmcid };
    device.call(op_number, OpArg::Simple(&mut arg))
}

/// PMCRW: reads `pmcid`'s count, writing `new` first when given (only while stopped).
pub(crate) fn read_write(
    device: &mut dyn HwpmcDevice,
    pmcid: u32,
    new: Option<u64>,
) -> Result<u64, Errno> {
    let mut rw = PmcOpPmcRw {
        flags: crate::abi::flag::OLDVALUE
            | if new.is_some() {
                crate::abi::flag::NEWVALUE
            } else {
                0
            },
        pmcid,
        value: new.unwrap_or(0),
    };
    device.call(op::PMCRW, OpArg::Rw(&mut rw))?;
    Ok(rw.value)
}

/// The real hwpmc(4) system call, found through `modfind("hwpmc")` and `modstat` as libpmc
/// finds it.
#[cfg(target_os = "freebsd")]
#[derive(Debug)]
pub struct RealDevice {
    syscall: i32,
    start: std::time::Instant,
}

#[cfg(target_os = "freebsd")]
impl RealDevice {
    /// Finds the module's system call.
    ///
    /// # Errors
    /// ENOENT when the module is not loaded; the error of `modstat`.
    pub fn open() -> Result<RealDevice, Errno> {
        let syscall = crate::sys::find_syscall(crate::abi::MODULE_NAME)?;
        Ok(RealDevice {
            syscall,
            start: std::time::Instant::now(),
        })
    }

    /// The system call's number.
    pub fn syscall_number(&self) -> i32 {
        self.syscall
    }
}

#[cfg(target_os = "freebsd")]
impl HwpmcDevice for RealDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Real
    }

    fn call(&mut self, op_number: u32, arg: OpArg<'_>) -> Result<(), Errno> {
        crate::sys::pmc_call(self.syscall, op_number, arg)
    }

    fn pid(&self) -> u32 {
        std::process::id()
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelConfig, ModelHandle};

    /// Oracle: GETMODULEVERSION in `hwpmc_mod.c` (refuses a newer major.minor with
    /// EPROGMISMATCH, returns `PMC_VERSION`), V10 = 0x0A000000 (`kenrap/freebsd-src`
    /// `sys/sys/pmc.h`), V9.3 = 0x09030000 (`opnsense/src`).
    #[test]
    fn the_handshake_finds_v9_and_v10() {
        let v10 = ModelHandle::new(ModelConfig::intel());
        assert_eq!(handshake(&mut v10.device()), Ok(Version::V10));
        let v9 = ModelHandle::new(ModelConfig::intel().with_version(Version::V9));
        assert_eq!(handshake(&mut v9.device()), Ok(Version::V9));
        let calls: Vec<_> = v9.calls();
        assert_eq!(
            calls,
            [
                (op::GETMODULEVERSION, Err(Errno::EPROGMISMATCH)),
                (op::GETMODULEVERSION, Ok(()))
            ]
        );
        let v8 = ModelHandle::new(ModelConfig::intel().with_version(Version(0x0800_0000)));
        assert_eq!(handshake(&mut v8.device()), Err(Errno::EPROGMISMATCH));
        let v11 = ModelHandle::new(ModelConfig::intel().with_version(Version(0x0B00_0000)));
        assert_eq!(handshake(&mut v11.device()), Err(Errno::EPROGMISMATCH));
    }
}
