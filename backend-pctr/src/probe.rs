//! Finding the real device and the CPU behind it.

use std::sync::Arc;

use counterhal_events::{CpuIdentity, Database, EncoderKind, Vendor};
#[cfg(doc)]
use counterhal_hal::ErrorKind;
use counterhal_hal::{Error, Result};

use crate::abi::Abi;
use crate::backend::PctrBackend;
use crate::cpu::{CpuKind, read_width};
use crate::device::{CounterAnswer, PctrDevice, ask_counter, identify_abi};
use crate::errno::{Operation, map_errno};
use crate::model::ModelHandle;
#[cfg_attr(not(unix), allow(unused_imports))]
use counterhal_x86::{TscFrequency, TscSource};

/// What CPUID says about this CPU, as far as pctr cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuFacts {
    /// Vendor, family, model, stepping.
    pub identity: CpuIdentity,
    /// Intel's architectural perfmon version (CPUID 0xA EAX bits 7:0), 0 when absent.
    pub arch_perfmon_version: u32,
    /// Intel's general counter width (CPUID 0xA EAX bits 23:16), 0 when absent.
    pub arch_perfmon_width: u32,
}

impl CpuFacts {
    /// This CPU's facts, from CPUID; `None` on a CPU without CPUID (not x86).
    pub fn this_cpu() -> Option<CpuFacts> {
        let cpuid = counterhal_x86::CpuidInstruction;
        let identified = counterhal_x86::identify(&cpuid).ok()?;
        let intel = identified.identity.vendor == Vendor::Intel;
        let (version, width) = if intel && identified.max_basic_leaf >= 0xa {
            let eax = counterhal_x86::CpuidSource::cpuid(&cpuid, 0xa, 0).ok()?.eax;
            (eax & 0xff, (eax >> 16) & 0xff)
        } else {
            (0, 0)
        };
        Some(CpuFacts {
            identity: identified.identity,
            arch_perfmon_version: version,
            arch_perfmon_width: width,
        })
    }

    /// The kind of CPU the driver of `abi` would drive, and its hardware counter width, as the
    /// driver decides (`usepctr`, `usep5ctr`, `usep6ctr`), in the driver's order.
    ///
    /// Under the legacy ABI the P6 family is Intel family 6; under the 64-byte i386 ABI of
    /// 2007 (`pctr.c` 1.23) every Intel (as a P6) and AMD family-6-or-later CPU; under the
    /// 64-byte amd64 one every Intel (as architectural) and AMD CPU; under the current one
    /// Intel with architectural perfmon and AMD family 6 or later.
    ///
    /// A P5 is an Intel family 5 CPU with a model above 0 (`usep5ctr`; model 0 gets no
    /// counters), under every i386 ABI: the i386 driver kept its P5 path when it moved to four
    /// slots. The i386 driver of 2023 and later sets `pctr_isintel` only when CPUID's
    /// highest leaf is 0xA or more, which no P5 has, so there a P5's sets fail with `ENODEV`
    /// (mapped to [`ErrorKind::Unsupported`] when a group is enabled).
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] when that driver drives no counters on this CPU.
    pub fn kind_under(&self, abi: Abi) -> Result<(CpuKind, u32)> {
        let CpuIdentity {
            vendor,
            family,
            model,
            ..
        } = &self.identity;
        let p5 = *vendor == Vendor::Intel && *family == 5 && *model > 0;
        let intel_width = if self.arch_perfmon_width == 0 {
            40
        } else {
            self.arch_perfmon_width
        };
        let found = match (abi, vendor) {
            (Abi::Legacy, Vendor::Intel) if *family == 6 => Some((CpuKind::P6, 40)),
            // i386 pctr.c 1.23: every Intel or AMD family-6-or-later CPU, the P6 way on Intel.
            (Abi::TransitionalI386, Vendor::Intel) if *family >= 6 => Some((CpuKind::P6, 40)),
            (Abi::TransitionalI386, Vendor::Amd) if *family >= 6 => Some((CpuKind::Amd, 48)),
            // amd64 pctr.c 1.1: every Intel and AMD CPU (with MSRs, as every amd64 CPU has).
            (Abi::TransitionalAmd64, Vendor::Intel) => Some((CpuKind::IntelArch, intel_width)),
            (Abi::TransitionalAmd64, Vendor::Amd) => Some((CpuKind::Amd, 48)),
            (Abi::Current, Vendor::Amd) if *family >= 6 => Some((CpuKind::Amd, 48)),
            (Abi::Current, Vendor::Intel) if self.arch_perfmon_version >= 1 => {
                Some((CpuKind::IntelArch, intel_width))
            }
            _ if p5 && abi != Abi::TransitionalAmd64 => Some((CpuKind::P5, 40)),
            _ => None,
        };
        found.ok_or_else(|| {
            Error::unsupported(format!(
                "the {abi} pctr driver drives no counters on this CPU ({})",
                self.identity
            ))
            .with_hint(
                "pctr drives the Intel P5 (model 1 or later, i386), the P6 family (legacy i386 \
                 driver, and the i386 one of late 2007), Intel with architectural perfmon and \
                 AMD family 6 or later",
            )
        })
    }

    /// Whether this is an Intel family-6-or-later CPU whose own CPUID reading shows no
    /// architectural perfmon: a P6, or a later CPU whose highest leaf is below 0xA (NetBurst
    /// EM64T, Core 2 with "Limit CPUID Maxval" set). Some current-ABI drivers drive its
    /// counters all the same; only the driver's answers tell.
    fn intel_without_arch_perfmon(&self) -> bool {
        self.identity.vendor == Vendor::Intel
            && self.identity.family >= 6
            && self.arch_perfmon_version == 0
    }

    /// Whether it is an Intel CPU of the Core 2 era or later (architectural perfmon, or a
    /// family-6 model from 0x0f on, or a later family): driven the P6 way by the legacy
    /// driver, but its events are not the P6's (`cycles` is 0x3c, not 0x79).
    fn newer_than_p6(&self) -> bool {
        let CpuIdentity {
            vendor,
            family,
            model,
            ..
        } = &self.identity;
        *vendor == Vendor::Intel
            && (self.arch_perfmon_version >= 1 || *family > 6 || (*family == 6 && *model >= 0x0f))
    }

    /// The kind of CPU the driver behind `device` (speaking `abi`) drives, and its hardware
    /// counter width, from CPUID ([`kind_under`]) and, where CPUID cannot settle it, from the
    /// driver's answer: for an Intel family-6-or-later CPU that CPUID shows without
    /// architectural perfmon, under the current ABI, the driver is asked whether it drives
    /// counter 0 (set to the function it holds). The amd64 driver (`pctr.c` 1.10) reads leaf
    /// 0xA without checking the highest leaf, and so drives such a CPU (NetBurst EM64T, a
    /// Core 2 with "Limit CPUID Maxval") as architectural ([`CpuKind::IntelArch`], 40-bit,
    /// the width of those CPUs); a driver that checks the leaf answers `ENODEV`.
    ///
    /// [`kind_under`]: Self::kind_under
    ///
    /// # Errors
    /// [`ErrorKind::Unsupported`] when the driver drives no counters on this CPU; the mapped
    /// driver error when the question itself fails.
    pub fn kind_driven(&self, abi: Abi, device: &mut dyn PctrDevice) -> Result<(CpuKind, u32)> {
        let refused = match self.kind_under(abi) {
            Ok(found) => return Ok(found),
            Err(error) => error,
        };
        if abi != Abi::Current || !self.intel_without_arch_perfmon() {
            return Err(refused);
        }
        let answer = ask_counter(device, abi, 0).map_err(|e| {
            map_errno(
                &Operation::Set {
                    counter: 0,
                    function: 0,
                },
                e,
            )
        })?;
        match answer {
            CounterAnswer::Driven => Ok((CpuKind::IntelArch, 40)),
            CounterAnswer::OutOfRange | CounterAnswer::NoCounters => {
                Err(Error::unsupported(format!(
                    "the {abi} pctr driver drives no counters on this CPU ({}): CPUID shows no \
                     architectural perfmon, and the driver refuses counter 0",
                    self.identity
                ))
                .with_hint(
                    "the current driver asks CPUID leaf 0xA for Intel counters; on a Core 2 or \
                 later, turn \"Limit CPUID Maxval\" off in the firmware setup",
                ))
            }
        }
    }
}

/// The database model id to resolve names against: the caller's, else the database's match
/// for this CPU when its encoder suits pctr, else the kind's default.
fn choose_model_id(
    db: &Database,
    cpu: Option<String>,
    facts: &CpuFacts,
    kind: CpuKind,
) -> Result<String> {
    if let Some(id) = cpu {
        counterhal_x86::named_model(db, &id)?;
        return Ok(id);
    }
    // A Core 2 or later driven the P6 way (the legacy driver, or the i386 one of 2007) takes
    // its own events: its model's table (a Core 2 one where the database has it, else
    // Intel's architectural events), never the P6's.
    let newer = facts.newer_than_p6();
    let suits = |encoder: EncoderKind| match kind {
        CpuKind::P5 => encoder == EncoderKind::P5,
        CpuKind::P6 if newer => encoder == EncoderKind::IntelArch,
        CpuKind::P6 => encoder == EncoderKind::P6,
        CpuKind::IntelArch => encoder == EncoderKind::IntelArch,
        CpuKind::Amd => encoder == EncoderKind::Amd64,
        CpuKind::TscOnly => false,
    };
    if kind == CpuKind::P6 && newer {
        // The database's own model of this CPU (a Core 2 table), wherever it stands in the
        // match order, before the architectural events every Intel CPU matches.
        let generic = CpuKind::IntelArch.default_model_id();
        let matching: Vec<&str> = db
            .models()
            .filter(|model| model.matches(&facts.identity) && suits(model.encoder))
            .map(|model| model.id.as_str())
            .collect();
        let chosen = matching
            .iter()
            .find(|id| !id.eq_ignore_ascii_case(generic))
            .copied()
            .unwrap_or(generic);
        return Ok(chosen.to_string());
    }
    Ok(db
        .detect(&facts.identity)
        .filter(|model| suits(model.encoder))
        .map(|model| model.id.clone())
        .unwrap_or_else(|| kind.default_model_id().to_string()))
}

/// A backend over a [`DriverModel`](crate::DriverModel) of the CPU that database model `id`
/// describes, resolving names against that model: for showing what pctr would program where
/// there is no `/dev/pctr` (`counterhal encode --backend pctr --cpu-model p6`).
///
/// # Errors
/// [`ErrorKind::InvalidInput`] for an id the database lacks.
pub fn model_for(db: Arc<Database>, id: &str) -> Result<PctrBackend> {
    model_with_handle(db, id).map(|(backend, _)| backend)
}

/// As [`model_for`], with the handle that feeds the model.
///
/// # Errors
/// As [`model_for`].
pub(crate) fn model_with_handle(db: Arc<Database>, id: &str) -> Result<(PctrBackend, ModelHandle)> {
    let model = counterhal_x86::named_model(&db, id)?;
    let kind = match model.encoder {
        EncoderKind::P5 => CpuKind::P5,
        EncoderKind::P6 => CpuKind::P6,
        EncoderKind::IntelArch => CpuKind::IntelArch,
        EncoderKind::Amd64 => CpuKind::Amd,
        EncoderKind::Armv8 => {
            return Err(Error::unsupported(format!(
                "CPU model `{id}` is an Arm core, and pctr drives x86 counters"
            )));
        }
    };
    let id = model.id.clone();
    Ok(PctrBackend::with_model_as(db, kind, id))
}

/// Opens the real `/dev/pctr` (OpenBSD only).
///
/// `cpu` names the event database's CPU model; `None` detects it.
///
/// # Errors
/// [`ErrorKind::Unsupported`] on any OS but OpenBSD, or on a CPU whose counters the driver does
/// not drive; as [`probe_path`] otherwise.
pub fn probe(db: Arc<Database>, cpu: Option<String>) -> Result<PctrBackend> {
    cfg_if::cfg_if! {
        if #[cfg(target_os = "openbsd")] {
            probe_path(db, cpu, std::path::Path::new("/dev/pctr"))
        } else {
            let _ = (db, cpu);
            Err(Error::unsupported(format!(
                "/dev/pctr is an OpenBSD device and this is {}",
                std::env::consts::OS
            ))
            .with_hint(
                "`counterhal info` lists the backends this system has; \
                 PctrBackend::with_model runs the driver model anywhere",
            ))
        }
    }
}

/// Opens `path` as a pctr device (read-write, or read-only when writing is refused), detects
/// its ABI, identifies the CPU and the TSC frequency. [`probe`] calls it with `/dev/pctr` on
/// OpenBSD; tests call it with other paths everywhere.
///
/// # Errors
/// [`ErrorKind::DeviceMissing`] when the file is missing or is not a pctr device;
/// [`ErrorKind::PermissionDenied`] when it cannot be opened even read-only;
/// [`ErrorKind::Unsupported`] off x86 or on a CPU the driver does not drive;
/// [`ErrorKind::InvalidInput`] for an unknown `cpu` model id.
#[cfg(unix)]
pub fn probe_path(
    db: Arc<Database>,
    cpu: Option<String>,
    path: &std::path::Path,
) -> Result<PctrBackend> {
    use crate::device::RealDevice;

    let shown = path.display().to_string();
    let mut device =
        RealDevice::open_best(path).map_err(|e| map_errno(&Operation::Open(&shown), e))?;
    let abi = identify_abi(&mut device).map_err(|e| e.context(&shown))?;
    let facts = CpuFacts::this_cpu()
        .ok_or_else(|| Error::unsupported("pctr exists only on x86 and this CPU has no CPUID"))?;
    let tsc = match crate::sys::tsc_frequency() {
        Some(hz) => TscFrequency::new(hz, TscSource::Kernel),
        None => calibrate_tsc(&mut device, abi)?,
    };
    let device: Box<dyn PctrDevice> = Box::new(device);
    backend_for_device(db, cpu, device, &facts, cfg!(target_arch = "x86_64"), tsc)
}

/// A backend over `device` on a CPU with `facts`, under an amd64 kernel or an i386 one: what
/// [`probe_path`] does once the device is open and the CPU identified, for any device (a
/// [`DriverModel`](crate::DriverModel) stands for a kernel revision in tests and
/// conformance). Detects the ABI, decides the kind from CPUID and the driver's answers
/// ([`CpuFacts::kind_driven`]), the width the reads carry, the database model (the caller's
/// `cpu`, else this CPU's model if it suits the kind) and the counters
/// the driver takes ([`PctrBackend::from_device`]).
///
/// # Errors
/// As [`CpuFacts::kind_driven`] and [`PctrBackend::from_device`];
/// [`ErrorKind::InvalidInput`] for an unknown `cpu` model id.
pub fn backend_for_device(
    db: Arc<Database>,
    cpu: Option<String>,
    mut device: Box<dyn PctrDevice>,
    facts: &CpuFacts,
    amd64: bool,
    tsc: TscFrequency,
) -> Result<PctrBackend> {
    let abi = identify_abi(device.as_mut())?;
    let (kind, hardware_width) = facts.kind_driven(abi, device.as_mut())?;
    let width = read_width(kind, hardware_width, abi, amd64);
    let cpu_id = choose_model_id(&db, cpu, facts, kind)?;
    PctrBackend::from_device(db, kind, Some(cpu_id), device, width, tsc)
}

/// Measures the TSC frequency against the monotonic clock over 50 ms, when the kernel does not
/// export `machdep.tscfreq`.
#[cfg(unix)]
fn calibrate_tsc(device: &mut dyn crate::device::PctrDevice, abi: Abi) -> Result<TscFrequency> {
    use crate::device::read_snapshot;
    use crate::errno::{Operation, map_errno};

    let read = || {
        read_snapshot(device, abi)
            .map(|snapshot| snapshot.tsc)
            .map_err(|e| map_errno(&Operation::Read, e))
    };
    TscFrequency::measure(read, std::time::Duration::from_millis(50))
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_conformance::skip::Need;
    use counterhal_hal::ErrorKind;

    fn facts(vendor: Vendor, family: u32, version: u32, width: u32) -> CpuFacts {
        facts_model(vendor, family, 1, version, width)
    }

    fn facts_model(vendor: Vendor, family: u32, model: u32, version: u32, width: u32) -> CpuFacts {
        CpuFacts {
            identity: CpuIdentity {
                vendor,
                family,
                model,
                stepping: 0,
            },
            arch_perfmon_version: version,
            arch_perfmon_width: width,
        }
    }

    #[test]
    fn the_driver_decides_the_kind() {
        let p5 = facts(Vendor::Intel, 5, 0, 0);
        assert_eq!(p5.kind_under(Abi::Legacy).unwrap(), (CpuKind::P5, 40));
        // The current i386 driver keeps the P5 path (PCIOCS0/1 reach the CESR code).
        assert_eq!(p5.kind_under(Abi::Current).unwrap(), (CpuKind::P5, 40));
        // usep5ctr wants a model above 0, under both drivers.
        let p5_model0 = facts_model(Vendor::Intel, 5, 0, 0, 0);
        for abi in [Abi::Legacy, Abi::Current] {
            let error = p5_model0.kind_under(abi).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Unsupported, "{abi}");
        }
        // An AMD family 5 (K5/K6) is no P5.
        assert!(facts(Vendor::Amd, 5, 0, 0).kind_under(Abi::Legacy).is_err());
        let p6 = facts(Vendor::Intel, 6, 0, 0);
        assert_eq!(p6.kind_under(Abi::Legacy).unwrap(), (CpuKind::P6, 40));
        // A P6 without architectural perfmon has no counters under the current driver.
        assert!(p6.kind_under(Abi::Current).is_err());
        let core2 = facts(Vendor::Intel, 6, 2, 40);
        assert_eq!(
            core2.kind_under(Abi::Current).unwrap(),
            (CpuKind::IntelArch, 40)
        );
        let skl = facts(Vendor::Intel, 6, 4, 48);
        assert_eq!(
            skl.kind_under(Abi::Current).unwrap(),
            (CpuKind::IntelArch, 48)
        );
        let zen = facts(Vendor::Amd, 0x19, 0, 0);
        assert_eq!(zen.kind_under(Abi::Current).unwrap(), (CpuKind::Amd, 48));
        let k5 = facts(Vendor::Amd, 5, 0, 0);
        assert!(k5.kind_under(Abi::Current).is_err());
        assert!(zen.kind_under(Abi::Legacy).is_err());
    }

    #[test]
    fn this_cpu_is_identified_on_x86() {
        let Some(facts) = CpuFacts::this_cpu() else {
            counterhal_conformance::skip!(Need::Platform, "no CPUID on this CPU");
        };
        assert!(facts.identity.family >= 5, "{:?}", facts);
    }

    #[cfg(unix)]
    #[test]
    fn unknown_model_id_is_refused() {
        let db = Database::shipped().unwrap();
        let facts = facts(Vendor::Intel, 6, 4, 48);
        let error = choose_model_id(&db, Some("no-such-cpu".into()), &facts, CpuKind::IntelArch)
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert!(error.message().contains("no-such-cpu"));
        let id = choose_model_id(&db, None, &facts, CpuKind::Amd).unwrap();
        assert!(!id.is_empty());
    }

    #[cfg(not(target_os = "openbsd"))]
    #[test]
    fn probe_off_openbsd_says_why() {
        let db = Arc::new(Database::shipped().unwrap());
        let error = probe(db, None).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        assert!(error.message().contains("OpenBSD"), "{error}");
        assert!(error.hint().is_some());
    }

    #[cfg(unix)]
    #[test]
    fn missing_device_is_device_missing() {
        let db = Arc::new(Database::shipped().unwrap());
        let path = std::path::Path::new("/nonexistent/dev/pctr");
        let error = probe_path(db, None, path).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::DeviceMissing, "{error}");
        assert_eq!(error.errno(), Some(2));
        assert!(error.message().contains("/nonexistent/dev/pctr"), "{error}");
    }

    #[cfg(all(unix, not(target_os = "openbsd")))]
    #[test]
    fn a_non_pctr_file_is_device_missing() {
        let db = Arc::new(Database::shipped().unwrap());
        let error = probe_path(db, None, std::path::Path::new("/dev/null")).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::DeviceMissing, "{error}");
        assert!(error.message().contains("not a pctr device"), "{error}");
    }
}
