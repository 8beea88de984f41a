//! What a driver model pretends to be: the CPU, the ABI, the kernel, the driver revision
//! and the counter width, and when its sets zero a counter.

use counterhal_hal::{Error, Result as HalResult};

use crate::abi::Abi;
use crate::cpu::{CpuKind, read_width};

/// What a [`DriverModel`](crate::DriverModel) pretends to be: the CPU, the ABI its driver speaks, the kernel
/// (amd64 or i386, which decides how `rdpmc` is masked) and the hardware counter width.
///
/// [`ModelConfig::new`] gives each CPU its usual setting: the P5 and P6 on the legacy i386
/// driver, the others on the current amd64 driver, at the kind's usual width. The builder
/// methods give the other combinations the drivers have:
///
/// ```
/// use counterhal_pctr::{Abi, ModelConfig, ModelCpu, Revision};
///
/// // A P5 under today's i386 driver (four-slot struct, PCIOCS0-3).
/// let p5 = ModelConfig::new(ModelCpu::P5).with_abi(Abi::Current)?;
/// assert_eq!(p5.abi(), Abi::Current);
/// // An Intel CPU with 48-bit counters under the i386 kernel, which keeps 40 bits of rdpmc.
/// let i386 = ModelConfig::new(ModelCpu::IntelArch).i386();
/// assert_eq!((i386.hardware_width(), i386.read_width()), (48, 40));
/// // A CPU with a TSC and no counters under the legacy driver.
/// let tsc = ModelConfig::new(ModelCpu::TscOnly).with_abi(Abi::Legacy)?;
/// assert!(!tsc.is_amd64());
/// // A P6 under the current ABI is the i386 driver of late 2007 (pctr.c 1.23).
/// let p6 = ModelConfig::new(ModelCpu::P6).with_abi(Abi::Current)?;
/// assert_eq!((p6.revision(), p6.counters()), (Revision::I386Of2007, 2));
/// // AMD under that driver: PCIOCS2 and PCIOCS3 answer EINVAL.
/// let amd = ModelConfig::new(ModelCpu::Amd).with_revision(Revision::I386Of2007)?;
/// assert_eq!(amd.counters(), 2);
/// # Ok::<(), counterhal_hal::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModelConfig {
    pub(super) cpu: CpuKind,
    pub(super) abi: Abi,
    pub(super) amd64: bool,
    pub(super) hardware_width: u32,
    pub(super) revision: Revision,
}

/// Which i386 revision of the current-ABI driver a model follows, where they differ in what
/// they drive. The legacy ABI and amd64 have one behaviour each here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Revision {
    /// The driver usual for the configuration: the legacy i386 driver (1996-2007), the
    /// current amd64 one, or the current i386 one of 2008-2022 (P5, Intel with architectural
    /// perfmon with 2 counters, AMD family 6 and later with 4).
    Usual,
    /// i386 `pctr.c` 1.23 (late 2007), the first on the four-slot ABI: every Intel and AMD
    /// family-6-or-later CPU driven the P6 way with 2 counters, no CPUID leaf 0xA gate, and
    /// only `PCIOCS0`/`PCIOCS1` accepted (`PCIOCS2`/`PCIOCS3` answer `EINVAL`, on AMD too).
    I386Of2007,
    /// i386 `pctr.c` 1.31 (2023) and later: Intel counters only when CPUID's highest leaf is
    /// 0xA or more, so neither a P5 nor a P6 without architectural perfmon is driven (sets
    /// answer `ENODEV`, reads give the TSC alone).
    I386Since2023,
}

impl ModelConfig {
    /// `cpu` on its usual driver: [`CpuKind::abi`], an amd64 kernel for the current ABI
    /// (the P5 has only i386), an i386 one for the legacy ABI, and
    /// [`CpuKind::hardware_width`].
    pub const fn new(cpu: CpuKind) -> ModelConfig {
        let abi = cpu.abi();
        ModelConfig {
            cpu,
            abi,
            amd64: matches!(abi, Abi::Current) && !matches!(cpu, CpuKind::P5),
            hardware_width: cpu.hardware_width(),
            revision: Revision::Usual,
        }
    }

    /// The same CPU under the driver of `abi`. The legacy ABI existed only on i386, and so
    /// did the P5 path, so either makes the kernel i386. A P6 under the current ABI is the
    /// i386 driver of late 2007 ([`Revision::I386Of2007`]), the only one that drove it there.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) when no driver of
    /// `abi` drives this CPU as such (see [`CpuKind::supports_abi`]).
    pub fn with_abi(self, abi: Abi) -> HalResult<ModelConfig> {
        if !self.cpu.supports_abi(abi) {
            let other = match abi {
                Abi::Legacy => Abi::Current,
                Abi::Current => Abi::Legacy,
            };
            return Err(Error::invalid_input(format!(
                "no {abi}-ABI pctr driver drives a {} CPU's counters",
                self.cpu
            ))
            .with_hint(format!("use the {other} ABI for a {} model", self.cpu)));
        }
        let p6_current = self.cpu == CpuKind::P6 && abi == Abi::Current;
        let amd64 = self.amd64 && abi == Abi::Current && self.cpu != CpuKind::P5 && !p6_current;
        let revision = match (abi, p6_current) {
            (Abi::Legacy, _) => Revision::Usual,
            (Abi::Current, true) => Revision::I386Of2007,
            (Abi::Current, false) => self.revision,
        };
        Ok(ModelConfig {
            abi,
            amd64,
            revision,
            ..self
        })
    }

    /// The same CPU under i386 driver revision `revision` of the current ABI (the kernel
    /// becomes i386).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) when the model
    /// speaks the legacy ABI (these are revisions of the current one), or for
    /// [`Revision::I386Of2007`] on a P5 (that revision's P5 path is the usual one) or a CPU
    /// that revision drives with counters nowhere (Intel architectural is driven the P6 way
    /// there: use [`CpuKind::P6`]).
    pub fn with_revision(self, revision: Revision) -> HalResult<ModelConfig> {
        if self.abi != Abi::Current && revision != Revision::Usual {
            return Err(Error::invalid_input(format!(
                "{revision:?} is a revision of the current-ABI i386 driver, and this {} model \
                 speaks the {} ABI",
                self.cpu, self.abi
            ))
            .with_hint("call with_abi(Abi::Current) first"));
        }
        if revision == Revision::I386Of2007 && matches!(self.cpu, CpuKind::P5 | CpuKind::IntelArch)
        {
            return Err(Error::invalid_input(format!(
                "the i386 driver of 2007 drives a {} CPU no differently from later ones",
                self.cpu
            ))
            .with_hint("model an Intel family-6 CPU under it as ModelCpu::P6"));
        }
        if revision == Revision::Usual && self.cpu == CpuKind::P6 && self.abi == Abi::Current {
            return Err(Error::invalid_input(
                "only the i386 driver of 2007 drives a P6 under the current ABI",
            ));
        }
        let amd64 = self.amd64 && revision == Revision::Usual;
        Ok(ModelConfig {
            revision,
            amd64,
            ..self
        })
    }

    /// The driver revision it follows.
    pub const fn revision(&self) -> Revision {
        self.revision
    }

    /// How many counters the driver programs on this CPU: the kind's
    /// ([`CpuKind::counters`]), at most 2 under [`Revision::I386Of2007`], none for a P5 or
    /// P6 under [`Revision::I386Since2023`].
    pub const fn counters(&self) -> u32 {
        let kind = self.cpu.counters();
        match self.revision {
            Revision::Usual => kind,
            Revision::I386Of2007 => {
                if kind > 2 {
                    2
                } else {
                    kind
                }
            }
            Revision::I386Since2023 => match self.cpu {
                CpuKind::P5 | CpuKind::P6 => 0,
                _ => kind,
            },
        }
    }

    /// The same CPU under an i386 kernel, whose `rdpmc` keeps 40 bits and whose current driver
    /// zeroes a counter on every set.
    pub const fn i386(self) -> ModelConfig {
        ModelConfig {
            amd64: false,
            ..self
        }
    }

    /// The same CPU with `bits`-wide hardware counters (Intel's CPUID leaf 0xA reports its
    /// own width).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) for a width
    /// outside 1-64, or any width on a CPU without counters.
    pub fn with_hardware_width(self, bits: u32) -> HalResult<ModelConfig> {
        if self.cpu.counters() == 0 || !(1..=64).contains(&bits) {
            return Err(Error::invalid_input(format!(
                "a {bits}-bit counter on a {} CPU: widths are 1-64 bits, on a CPU with counters",
                self.cpu
            )));
        }
        Ok(ModelConfig {
            hardware_width: bits,
            ..self
        })
    }

    /// The CPU.
    pub const fn cpu(&self) -> CpuKind {
        self.cpu
    }

    /// The ABI the driver speaks.
    pub const fn abi(&self) -> Abi {
        self.abi
    }

    /// Whether the kernel is amd64 (else i386).
    pub const fn is_amd64(&self) -> bool {
        self.amd64
    }

    /// The hardware counter width in bits.
    pub const fn hardware_width(&self) -> u32 {
        self.hardware_width
    }

    /// The width `PCIOCRD` values carry: the hardware width cut to the kernel's `rdpmc`
    /// mask (see [`read_width`](crate::read_width)).
    pub const fn read_width(&self) -> u32 {
        read_width(self.cpu, self.hardware_width, self.abi, self.amd64)
    }

    /// When its driver zeroes a counter on a set: only when the function changes on the
    /// current amd64 driver (since 2024), on every set everywhere else (the legacy driver, the
    /// i386 one, and every P5 path).
    pub const fn default_reset_policy(&self) -> ResetPolicy {
        if self.amd64 && matches!(self.abi, Abi::Current) && !self.cpu.read_with_rdmsr() {
            ResetPolicy::WhenFunctionChanges
        } else {
            ResetPolicy::EverySet
        }
    }

    /// `p5 model, current ABI (i386)` and so on; a revision other than the usual one is
    /// named after the kernel (`i386 pctr.c 1.23`, `i386 2023 on`).
    pub fn describe(&self) -> String {
        let kernel = match (self.amd64, self.revision) {
            (true, _) => "amd64",
            (false, Revision::Usual) => "i386",
            (false, Revision::I386Of2007) => "i386 pctr.c 1.23",
            (false, Revision::I386Since2023) => "i386 2023 on",
        };
        format!("{} model, {} ABI ({kernel})", self.cpu, self.abi)
    }
}

/// When a `PCIOCSn` zeroes the counter it programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResetPolicy {
    /// Only when the new function differs from the old one (the current driver, since 2024).
    WhenFunctionChanges,
    /// On every successful set (the legacy driver, the current i386 driver, the current amd64
    /// one before 2024, and every P5 path).
    EverySet,
}
