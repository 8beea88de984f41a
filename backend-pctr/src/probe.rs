//! Finding the real device and the CPU behind it.

use std::sync::Arc;

#[cfg_attr(not(unix), allow(unused_imports))]
use counterhal_events::{CpuIdentity, Database, EncoderKind, Vendor};
#[cfg(doc)]
use counterhal_hal::ErrorKind;
#[cfg_attr(not(unix), allow(unused_imports))]
use counterhal_hal::{Error, Result};

#[cfg_attr(not(unix), allow(unused_imports))]
use crate::abi::Abi;
use crate::backend::PctrBackend;
#[cfg_attr(not(unix), allow(unused_imports))]
use crate::cpu::{CpuKind, read_width};
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
    /// A P5 is an Intel family 5 CPU with a model above 0 (`usep5ctr`; model 0 gets no
    /// counters), under either ABI: the i386 driver kept its P5 path when it moved to the
    /// current ABI. The i386 driver of 2023 and later sets `pctr_isintel` only when CPUID's
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
        let found = match (abi, vendor) {
            (Abi::Legacy, Vendor::Intel) if *family == 6 => Some((CpuKind::P6, 40)),
            (Abi::Current, Vendor::Amd) if *family >= 6 => Some((CpuKind::Amd, 48)),
            (Abi::Current, Vendor::Intel) if self.arch_perfmon_version >= 1 => {
                let width = if self.arch_perfmon_width == 0 {
                    40
                } else {
                    self.arch_perfmon_width
                };
                Some((CpuKind::IntelArch, width))
            }
            _ if p5 => Some((CpuKind::P5, 40)),
            _ => None,
        };
        found.ok_or_else(|| {
            Error::unsupported(format!(
                "the {abi} pctr driver drives no counters on this CPU ({})",
                self.identity
            ))
            .with_hint(
                "pctr drives the Intel P5 (model 1 or later, i386), the P6 family (legacy i386 \
                 driver), Intel with architectural perfmon and AMD family 6 or later",
            )
        })
    }
}

#[cfg(unix)]
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
    let suits = |encoder: EncoderKind| match kind {
        CpuKind::P5 => encoder == EncoderKind::P5,
        CpuKind::P6 => encoder == EncoderKind::P6,
        CpuKind::IntelArch => encoder == EncoderKind::IntelArch,
        CpuKind::Amd => encoder == EncoderKind::Amd64,
        CpuKind::TscOnly => false,
    };
    Ok(db
        .detect(&facts.identity)
        .filter(|model| suits(model.encoder))
        .map(|model| model.id.clone())
        .unwrap_or_else(|| kind.default_model_id().to_string()))
}

/// A backend over a [`DriverModel`](crate::DriverModel) of the CPU that database model `id`
/// describes, resolving names against that model: for showing what pctr would program where
/// there is no `/dev/pctr` (`counterhal encode --backend pctr --cpu p6`).
///
/// # Errors
/// [`ErrorKind::InvalidInput`] for an id the database lacks.
pub fn model_for(db: Arc<Database>, id: &str) -> Result<PctrBackend> {
    let model = counterhal_x86::named_model(&db, id)?;
    let kind = match model.encoder {
        EncoderKind::P5 => CpuKind::P5,
        EncoderKind::P6 => CpuKind::P6,
        EncoderKind::IntelArch => CpuKind::IntelArch,
        EncoderKind::Amd64 => CpuKind::Amd,
    };
    let id = model.id.clone();
    Ok(PctrBackend::with_model_as(db, kind, id).0)
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
                "on this OS use the linux or msr backend; PctrBackend::with_model runs the \
                 driver model anywhere",
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
    use crate::device::{PctrDevice, RealDevice, detect_abi};
    use crate::errno::{Operation, map_errno};

    let shown = path.display().to_string();
    let mut device =
        RealDevice::open_best(path).map_err(|e| map_errno(&Operation::Open(&shown), e))?;
    let abi =
        detect_abi(&mut device).map_err(|e| map_errno(&Operation::Read, e).context(&shown))?;
    let facts = CpuFacts::this_cpu()
        .ok_or_else(|| Error::unsupported("pctr exists only on x86 and this CPU has no CPUID"))?;
    let (kind, hardware_width) = facts.kind_under(abi)?;
    let width = read_width(kind, hardware_width, abi, cfg!(target_arch = "x86_64"));
    let cpu_id = choose_model_id(&db, cpu, &facts, kind)?;
    let tsc = match crate::sys::tsc_frequency() {
        Some(hz) => TscFrequency::new(hz, TscSource::Kernel),
        None => calibrate_tsc(&mut device, abi)?,
    };
    let device: Box<dyn PctrDevice> = Box::new(device);
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
