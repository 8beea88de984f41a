//! The time-stamp counter as a clock: its frequency, where the frequency came from, and ticks
//! to nanoseconds.

use std::time::{Duration, Instant};

use counterhal_hal::{Error, Result};

use counterhal_events::Vendor;

use crate::cpuid::CpuidSource;
use crate::signature::vendor;

/// Where a TSC frequency came from.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TscSource {
    /// A device model's constant.
    Model,
    /// The operating system's figure (OpenBSD's `machdep.tscfreq`).
    Kernel,
    /// CPUID leaf 0x15: crystal frequency x EBX / EAX (exact).
    Cpuid15,
    /// CPUID leaf 0x16: the base frequency in MHz (the TSC runs at it on Intel CPUs that lack
    /// a complete leaf 0x15; exact to 1 MHz).
    Cpuid16,
    /// Measured: TSC ticks over a monotonic-clock interval (about 1e-4 relative).
    Measured,
    /// The nominal frequency in the CPU's model name (`... CPU @ 2.40GHz`), as perf reads it
    /// from `/proc/cpuinfo` where CPUID leaf 0x15 does not say.
    ModelName,
}

/// The TSC frequency and where it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TscFrequency {
    /// Ticks per second.
    pub hz: u64,
    /// How it was found.
    pub source: TscSource,
}

impl TscFrequency {
    /// `hz` ticks per second, from `source`.
    pub const fn new(hz: u64, source: TscSource) -> Self {
        Self { hz, source }
    }

    /// `ticks` in nanoseconds (128-bit arithmetic, rounding down, saturating; 0 at 0 Hz).
    pub fn nanos(&self, ticks: u64) -> u64 {
        if self.hz == 0 {
            return 0;
        }
        let nanos = u128::from(ticks) * 1_000_000_000 / u128::from(self.hz);
        u64::try_from(nanos).unwrap_or(u64::MAX)
    }

    /// `nanos` in ticks (128-bit arithmetic, rounding down, saturating).
    pub fn ticks(&self, nanos: u64) -> u64 {
        let ticks = u128::from(nanos) * u128::from(self.hz) / 1_000_000_000;
        u64::try_from(ticks).unwrap_or(u64::MAX)
    }

    /// The frequency CPUID gives, when it does: leaf 0x15 (exact), else leaf 0x16's base
    /// frequency. `max_basic_leaf` is CPUID.0:EAX. AMD CPUs answer neither.
    ///
    /// # Errors
    /// The source's errors.
    pub fn from_cpuid(cpuid: &dyn CpuidSource, max_basic_leaf: u32) -> Result<Option<Self>> {
        if max_basic_leaf >= 0x15 {
            let t = cpuid.cpuid(0x15, 0)?;
            if t.eax != 0 && t.ebx != 0 && t.ecx != 0 {
                let hz = u64::from(t.ecx) * u64::from(t.ebx) / u64::from(t.eax);
                return Ok(Some(Self::new(hz, TscSource::Cpuid15)));
            }
        }
        if max_basic_leaf >= 0x16 {
            let mhz = cpuid.cpuid(0x16, 0)?.eax & 0xFFFF;
            if mhz != 0 {
                return Ok(Some(Self::new(
                    u64::from(mhz) * 1_000_000,
                    TscSource::Cpuid16,
                )));
            }
        }
        Ok(None)
    }

    /// The TSC frequency as perf derives `#system_tsc_freq` (`arch_get_tsc_freq`,
    /// tools/perf/arch/x86/util/tsc.c): on Intel CPUs only, CPUID leaf 0x15 when the CPU has it
    /// complete (crystal x EBX / EAX), else the frequency in the model name (`cpuinfo`, the
    /// text of `/proc/cpuinfo`, when there is one). `None` where perf has none (its 0: other
    /// vendors, no leaf 0x15 and no frequency in the name).
    ///
    /// # Errors
    /// The source's errors.
    pub fn as_perf_derives(cpuid: &dyn CpuidSource, cpuinfo: Option<&str>) -> Result<Option<Self>> {
        let leaf0 = cpuid.cpuid(0, 0)?;
        if vendor(leaf0) != Vendor::Intel {
            return Ok(None);
        }
        if leaf0.eax >= 0x15 {
            let t = cpuid.cpuid(0x15, 0)?;
            if t.eax != 0 && t.ebx != 0 && t.ecx != 0 {
                let hz = u64::from(t.ecx) * u64::from(t.ebx) / u64::from(t.eax);
                return Ok(Some(Self::new(hz, TscSource::Cpuid15)));
            }
        }
        Ok(cpuinfo
            .and_then(model_name_hz)
            .map(|hz| Self::new(hz, TscSource::ModelName)))
    }

    /// Measures the frequency: two reads of the TSC (`read`) `interval` apart on the monotonic
    /// clock.
    ///
    /// # Errors
    /// `read`'s errors; [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported)
    /// when the TSC does not advance, so times cannot be measured.
    pub fn measure(mut read: impl FnMut() -> Result<u64>, interval: Duration) -> Result<Self> {
        let start = Instant::now();
        let first = read()?;
        std::thread::sleep(interval);
        let second = read()?;
        let elapsed = start.elapsed().as_nanos().max(1);
        let hz = u128::from(second.wrapping_sub(first)) * 1_000_000_000 / elapsed;
        let hz = u64::try_from(hz).unwrap_or(u64::MAX);
        if hz == 0 {
            return Err(Error::unsupported(
                "the TSC does not advance, so times cannot be measured",
            ));
        }
        Ok(Self::new(hz, TscSource::Measured))
    }
}

/// The frequency perf's `cpuinfo_tsc_freq` reads: the first `model name` line holding
/// ` @ ` followed by a number and `GHz` (`sscanf(pos, " @ %lfGHz")`), in Hz.
fn model_name_hz(cpuinfo: &str) -> Option<u64> {
    cpuinfo
        .lines()
        .filter(|line| line.starts_with("model name"))
        .find_map(|line| {
            let at = line.get(11..)?.split_once(" @ ")?.1.trim_start();
            let number_end = at
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(at.len());
            let (number, rest) = at.split_at(number_end);
            let ghz: f64 = number.parse().ok()?;
            (rest.starts_with("GHz") && ghz > 0.0).then(|| (ghz * 1e9).round() as u64)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuid::{CpuidDump, CpuidResult};
    use counterhal_hal::ErrorKind;

    #[test]
    fn conversions_do_not_overflow() {
        let tsc = TscFrequency::new(3_000_000_000, TscSource::Model);
        assert_eq!(tsc.nanos(3_000), 1_000);
        assert_eq!(tsc.ticks(1_000), 3_000);
        assert_eq!(tsc.nanos(u64::MAX), 6_148_914_691_236_517_205);
        assert_eq!(TscFrequency::new(0, TscSource::Measured).nanos(5), 0);
    }

    #[test]
    fn cpuid_leaves_0x15_then_0x16() {
        let mut dump = CpuidDump::new("t");
        // 24 MHz crystal x 250 / 2 = 3 GHz.
        dump.insert(0x15, 0, CpuidResult::new(2, 250, 24_000_000, 0));
        dump.insert(0x16, 0, CpuidResult::new(3_600, 0, 0, 0));
        let exact = TscFrequency::from_cpuid(&dump, 0x16).unwrap().unwrap();
        assert_eq!(exact, TscFrequency::new(3_000_000_000, TscSource::Cpuid15));
        dump.insert(0x15, 0, CpuidResult::new(2, 250, 0, 0));
        let base = TscFrequency::from_cpuid(&dump, 0x16).unwrap().unwrap();
        assert_eq!(base, TscFrequency::new(3_600_000_000, TscSource::Cpuid16));
        assert_eq!(TscFrequency::from_cpuid(&dump, 0xD).unwrap(), None);
    }

    fn intel(max_leaf: u32) -> CpuidDump {
        let mut dump = CpuidDump::new("intel");
        // "GenuineIntel" in EBX, EDX, ECX.
        dump.insert(
            0,
            0,
            CpuidResult::new(max_leaf, 0x756e_6547, 0x6c65_746e, 0x4965_6e69),
        );
        dump
    }

    /// Oracle: perf's `arch_get_tsc_freq` and `cpuinfo_tsc_freq`
    /// (tools/perf/arch/x86/util/tsc.c, Linux 6.12): Intel only; leaf 0x15 when EAX, EBX and
    /// ECX are all set; else `model name ... @ X.YZGHz`; else 0 (here `None`). Leaf 0x16 is
    /// not perf's.
    #[test]
    fn perf_derives_leaf_0x15_then_the_model_name() {
        let name = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6154 CPU @ 3.00GHz\n";
        let mut dump = intel(0x16);
        dump.insert(0x15, 0, CpuidResult::new(2, 250, 24_000_000, 0));
        let exact = TscFrequency::as_perf_derives(&dump, Some(name)).unwrap();
        assert_eq!(
            exact,
            Some(TscFrequency::new(3_000_000_000, TscSource::Cpuid15))
        );
        // Leaf 0x15 without the crystal: the model name, not leaf 0x16.
        dump.insert(0x15, 0, CpuidResult::new(2, 250, 0, 0));
        dump.insert(0x16, 0, CpuidResult::new(3_600, 0, 0, 0));
        let named = TscFrequency::as_perf_derives(&dump, Some(name)).unwrap();
        assert_eq!(
            named,
            Some(TscFrequency::new(3_000_000_000, TscSource::ModelName))
        );
        assert_eq!(TscFrequency::as_perf_derives(&dump, None).unwrap(), None);
        let vm = "model name\t: Intel(R) Xeon(R) Processor\n";
        assert_eq!(
            TscFrequency::as_perf_derives(&dump, Some(vm)).unwrap(),
            None
        );
        // Below leaf 0x15: the model name.
        let old = TscFrequency::as_perf_derives(&intel(0xD), Some(name)).unwrap();
        assert_eq!(old.map(|t| t.source), Some(TscSource::ModelName));
        // Not Intel: none, whatever the name says.
        let mut amd = CpuidDump::new("amd");
        amd.insert(
            0,
            0,
            CpuidResult::new(0x10, 0x6874_7541, 0x444d_4163, 0x6974_6e65),
        );
        assert_eq!(
            TscFrequency::as_perf_derives(&amd, Some(name)).unwrap(),
            None
        );
        assert_eq!(
            model_name_hz("model name\t: X @ 2.4GHz"),
            Some(2_400_000_000)
        );
        assert_eq!(model_name_hz("model name\t: X @ 2.4MHz"), None);
    }

    #[test]
    fn measuring_a_clock_that_stands_still_is_unsupported() {
        let error = TscFrequency::measure(|| Ok(7), Duration::from_millis(1)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        let mut ticks = 0u64;
        let advancing = TscFrequency::measure(
            || {
                ticks += 1_000_000;
                Ok(ticks)
            },
            Duration::from_millis(1),
        )
        .unwrap();
        assert_eq!(advancing.source, TscSource::Measured);
        assert!(advancing.hz > 0);
    }
}
