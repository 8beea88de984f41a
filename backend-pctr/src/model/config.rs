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
/// // The i386 driver of late 2007 (pctr.c 1.23) and its 64-byte ABI drove the P6 ...
/// let p6 = ModelConfig::new(ModelCpu::P6).with_abi(Abi::TransitionalI386)?;
/// assert_eq!(p6.counters(), 2);
/// // ... and AMD, with PCIOCS2 and PCIOCS3 answering EINVAL.
/// let amd = ModelConfig::new(ModelCpu::Amd).with_abi(Abi::TransitionalI386)?;
/// assert_eq!(amd.counters(), 2);
/// // The i386 driver of 2023 on drives no P5.
/// let p5 = ModelConfig::new(ModelCpu::P5)
///     .with_abi(Abi::Current)?
///     .with_revision(Revision::I386Since2023)?;
/// assert_eq!(p5.counters(), 0);
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

/// Which revision of the current-ABI i386 driver a model follows, where they differ in what
/// they drive. (The 2007 revisions that spoke a 64-byte ABI are chosen by that ABI:
/// [`Abi::TransitionalI386`], [`Abi::TransitionalAmd64`].)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Revision {
    /// The driver usual for the configuration: the legacy i386 driver (1996-2007), the
    /// transitional ones of 2007, the current amd64 one, or the current i386 one before 2023
    /// (P5, Intel with architectural perfmon with 2 counters, AMD family 6 and later with 4).
    Usual,
    /// i386 `pctr.c` 1.31 (2023) and later: Intel counters only when CPUID's highest leaf is
    /// 0xA or more, so a P5 is not driven (sets answer `ENODEV`, reads give the TSC alone).
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
    /// did the P5 path, so either makes the kernel i386; each transitional ABI names its
    /// kernel. The 64-byte i386 ABI is the driver of `pctr.c` 1.23 (late 2007): every Intel
    /// and AMD family-6-or-later CPU driven the P6 way, with only `PCIOCS0` and `PCIOCS1`
    /// (`PCIOCS2`/`PCIOCS3` answer `EINVAL`, on AMD too). The 64-byte amd64 one is amd64
    /// `pctr.c` 1.1 (September 2007): every Intel and AMD CPU, counters read with `rdmsr`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) when no driver of
    /// `abi` drives this CPU as such (see [`CpuKind::supports_abi`]).
    pub fn with_abi(self, abi: Abi) -> HalResult<ModelConfig> {
        if !self.cpu.supports_abi(abi) {
            return Err(Error::invalid_input(format!(
                "no {abi}-ABI pctr driver drives a {} CPU's counters",
                self.cpu
            ))
            .with_hint(format!(
                "use the {} ABI for a {} model",
                self.cpu.abi(),
                self.cpu
            )));
        }
        let amd64 = match abi {
            Abi::Legacy | Abi::TransitionalI386 => false,
            Abi::TransitionalAmd64 => true,
            Abi::Current => self.amd64 && self.cpu != CpuKind::P5,
        };
        let revision = if abi == Abi::Current {
            self.revision
        } else {
            Revision::Usual
        };
        Ok(ModelConfig {
            abi,
            amd64,
            revision,
            ..self
        })
    }

    /// The same CPU under revision `revision` of the current-ABI i386 driver (the kernel
    /// becomes i386 for [`Revision::I386Since2023`]).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) for
    /// [`Revision::I386Since2023`] on a model that does not speak the current ABI.
    pub fn with_revision(self, revision: Revision) -> HalResult<ModelConfig> {
        if self.abi != Abi::Current && revision != Revision::Usual {
            return Err(Error::invalid_input(format!(
                "{revision:?} is a revision of the current-ABI i386 driver, and this {} model \
                 speaks the {} ABI",
                self.cpu, self.abi
            ))
            .with_hint("call with_abi(Abi::Current) first"));
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
    /// ([`CpuKind::counters`]), at most 2 under the transitional i386 driver (it takes
    /// `PCIOCS0` and `PCIOCS1` only), none for a P5 under [`Revision::I386Since2023`].
    pub const fn counters(&self) -> u32 {
        let kind = self.cpu.counters();
        match (self.abi, self.revision, self.cpu) {
            (Abi::TransitionalI386, _, _) if kind > 2 => 2,
            (Abi::Current, Revision::I386Since2023, CpuKind::P5) => 0,
            _ => kind,
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
    /// mask (see [`crate::read_width`]).
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

    /// `p5 model, current ABI (i386)` and so on; a driver other than the usual one of its
    /// ABI is named (`i386 pctr.c 1.23`, `amd64 pctr.c 1.1`, `i386 2023 on`).
    pub fn describe(&self) -> String {
        let kernel = match (self.abi, self.amd64, self.revision) {
            (Abi::TransitionalI386, _, _) => "i386 pctr.c 1.23",
            (Abi::TransitionalAmd64, _, _) => "amd64 pctr.c 1.1",
            (_, true, _) => "amd64",
            (_, false, Revision::Usual) => "i386",
            (_, false, Revision::I386Since2023) => "i386 2023 on",
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
