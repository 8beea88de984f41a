//! Identifying a CPU: vendor, family, model, stepping.

use std::fmt;

/// A CPU vendor, from the CPUID vendor string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD`.
    Amd,
    /// An Arm-architecture CPU, by the implementer code of its MIDR (`0x41` Arm, `0xc0` Ampere,
    /// `0x46` Fujitsu, `0x4e` NVIDIA, ...).
    Arm(u8),
    /// Any other vendor string.
    Other(String),
}

/// The Arm implementer codes (MIDR bits 31:24) and their names, as the kernel's
/// `arch/arm64/include/asm/cputype.h` names them (`ARM_CPU_IMP_ARM` 0x41, ...).
const ARM_IMPLEMENTERS: [(u8, &str); 11] = [
    (0x41, "arm"),
    (0x42, "broadcom"),
    (0x43, "cavium"),
    (0x46, "fujitsu"),
    (0x48, "hisilicon"),
    (0x4e, "nvidia"),
    (0x50, "apm"),
    (0x51, "qualcomm"),
    (0x61, "apple"),
    (0x6d, "microsoft"),
    (0xc0, "ampere"),
];

impl Vendor {
    /// The vendor for a CPUID vendor string (`GenuineIntel`, `AuthenticAMD`) or a short name
    /// (`intel`, `amd`, or an Arm implementer's name: `arm`, `ampere`, `fujitsu`, ...).
    pub fn from_cpuid(vendor: &str) -> Vendor {
        match vendor.trim() {
            "GenuineIntel" => Vendor::Intel,
            "AuthenticAMD" => Vendor::Amd,
            v if v.eq_ignore_ascii_case("intel") => Vendor::Intel,
            v if v.eq_ignore_ascii_case("amd") => Vendor::Amd,
            other => match ARM_IMPLEMENTERS
                .iter()
                .find(|(_, name)| name.eq_ignore_ascii_case(other))
            {
                Some(&(code, _)) => Vendor::Arm(code),
                None => Vendor::Other(other.to_string()),
            },
        }
    }

    /// The short lower-case name: `intel`, `amd`, an Arm implementer's name (as the kernel's
    /// `cputype.h` names the codes; `arm-implementer` for a code it does not name), or the
    /// vendor string.
    pub fn name(&self) -> &str {
        match self {
            Vendor::Intel => "intel",
            Vendor::Amd => "amd",
            Vendor::Arm(implementer) => ARM_IMPLEMENTERS
                .iter()
                .find(|(code, _)| code == implementer)
                .map_or("arm-implementer", |(_, name)| name),
            Vendor::Other(other) => other,
        }
    }
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What identifies a CPU model: vendor, display family, display model and stepping (as Linux
/// prints them in /proc/cpuinfo, extended fields already folded in).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CpuIdentity {
    /// The vendor.
    pub vendor: Vendor,
    /// The display family (e.g. 6 for Intel Core, 0x19 for AMD Zen 3/4).
    pub family: u32,
    /// The display model.
    pub model: u32,
    /// The stepping.
    pub stepping: u32,
}

impl CpuIdentity {
    /// Parses perf's CPU signature `Vendor-Family-Model[-Stepping]`: the CPUID vendor string,
    /// the family in decimal, model and stepping in hex (`GenuineIntel-6-8F-8`,
    /// `AuthenticAMD-26-2-0`). Without a stepping, stepping 0 is taken. `None` if `text` is
    /// not such a signature.
    pub fn from_signature(text: &str) -> Option<CpuIdentity> {
        let mut parts = text.trim().split('-');
        let vendor = match parts.next()? {
            "GenuineIntel" => Vendor::Intel,
            "AuthenticAMD" => Vendor::Amd,
            _ => return None,
        };
        let family = parts.next()?.parse().ok()?;
        let model = u32::from_str_radix(parts.next()?, 16).ok()?;
        let stepping = match parts.next() {
            Some(s) => u32::from_str_radix(s, 16).ok()?,
            None => 0,
        };
        if parts.next().is_some() {
            return None;
        }
        Some(CpuIdentity {
            vendor,
            family,
            model,
            stepping,
        })
    }

    /// Parses perf's signature optionally followed by the core of a hybrid chip:
    /// `GenuineIntel-6-97-2-atom`, `GenuineIntel-6-C5-2-core`, or leaf 0x1A's EAX in hex
    /// (`GenuineIntel-6-C5-2-0x20000002`, the low-power Atom cores of Arrow Lake H). `None` if
    /// `text` is not such a signature.
    ///
    /// On Arm, a MIDR value in hex (`0x410fd0c0`, or perf's 16-digit arm64 CPU id
    /// `0x00000000410fd0c0`) is the CPU it identifies ([`CpuIdentity::from_midr`]).
    pub fn from_signature_with_core(text: &str) -> Option<(CpuIdentity, Option<HybridCore>)> {
        let text = text.trim();
        if let Some(cpu) = CpuIdentity::from_midr_text(text) {
            return Some((cpu, None));
        }
        if let Some(cpu) = CpuIdentity::from_signature(text) {
            return Some((cpu, None));
        }
        let (signature, core) = text.rsplit_once('-')?;
        let core = HybridCore::from_name(core)?;
        Some((CpuIdentity::from_signature(signature)?, Some(core)))
    }

    /// perf's signature of this CPU: `GenuineIntel-6-8F-8` (family decimal, model and
    /// stepping upper-case hex).
    /// On Arm, perf's arm64 CPU id: the MIDR as 16 hex digits (`0x00000000414fd0c1`).
    pub fn signature(&self) -> String {
        let vendor = match &self.vendor {
            Vendor::Intel => "GenuineIntel",
            Vendor::Amd => "AuthenticAMD",
            Vendor::Arm(_) => return format!("{:#018x}", self.midr().unwrap_or(0)),
            Vendor::Other(v) => v,
        };
        format!(
            "{vendor}-{}-{:X}-{:X}",
            self.family, self.model, self.stepping
        )
    }

    /// An Arm CPU from its Main ID Register (`MIDR_EL1`, as
    /// `/sys/devices/system/cpu/cpuN/regs/identification/midr_el1` shows it): implementer
    /// (bits 31:24) as the vendor, architecture (19:16) as the family, part number (15:4) as the
    /// model, and variant (23:20) and revision (3:0) as the stepping, `variant << 4 | revision`.
    /// `None` for an implementer code of 0 (a MIDR that was not read) or bits above 31.
    pub fn from_midr(midr: u64) -> Option<CpuIdentity> {
        let implementer = u8::try_from(midr >> 24).ok().filter(|code| *code != 0)?;
        let field = |shift: u32, bits: u32| ((midr >> shift) & ((1 << bits) - 1)) as u32;
        Some(CpuIdentity {
            vendor: Vendor::Arm(implementer),
            family: field(16, 4),
            model: field(4, 12),
            stepping: field(20, 4) << 4 | field(0, 4),
        })
    }

    /// An Arm CPU from a MIDR written in hex with its `0x` (as sysfs's `midr_el1` and perf's
    /// arm64 CPU id write it); `None` for any other text (see [`CpuIdentity::from_midr`]).
    pub fn from_midr_text(text: &str) -> Option<CpuIdentity> {
        let hex = text
            .trim()
            .strip_prefix("0x")
            .or_else(|| text.trim().strip_prefix("0X"))?;
        if hex.is_empty() || hex.len() > 16 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        CpuIdentity::from_midr(u64::from_str_radix(hex, 16).ok()?)
    }

    /// The MIDR an Arm identity stands for (see [`CpuIdentity::from_midr`]); `None` for others.
    pub fn midr(&self) -> Option<u64> {
        let Vendor::Arm(implementer) = self.vendor else {
            return None;
        };
        Some(
            u64::from(implementer) << 24
                | u64::from(self.stepping >> 4 & 0xf) << 20
                | u64::from(self.family & 0xf) << 16
                | u64::from(self.model & 0xfff) << 4
                | u64::from(self.stepping & 0xf),
        )
    }

    /// Parses the first processor's `vendor_id`, `cpu family`, `model` and `stepping` from
    /// the text of `/proc/cpuinfo`. Returns `None` when any is missing.
    pub fn from_proc_cpuinfo(text: &str) -> Option<CpuIdentity> {
        let mut vendor = None;
        let mut family = None;
        let mut model = None;
        let mut stepping = None;
        for line in text.lines() {
            if line.trim().is_empty() && vendor.is_some() {
                break;
            }
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key.trim() {
                "vendor_id" => vendor = Some(Vendor::from_cpuid(value)),
                "cpu family" => family = value.parse().ok(),
                "model" => model = value.parse().ok(),
                "stepping" => stepping = value.parse().ok(),
                _ => {}
            }
        }
        Some(CpuIdentity {
            vendor: vendor?,
            family: family?,
            model: model?,
            stepping: stepping?,
        })
    }
}

/// Which kind of core of a hybrid chip a thread runs on: CPUID leaf 0x1A EAX, the core type in
/// bits 31:24 (0x20 Atom, 0x40 Core) and the native model id in bits 23:0 (which tells Arrow
/// Lake's low-power Crestmont cores, 0x2, from its Skymont cores, 0x3). Intel's perfmon mapfile
/// gives both for each hybrid core table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HybridCore {
    /// The core type: [`HybridCore::ATOM`], [`HybridCore::CORE`] or another value.
    pub core_type: u8,
    /// The native model id; `None` when not known (a core type named alone).
    pub native_model: Option<u32>,
}

impl HybridCore {
    /// The core type of an Atom (efficient) core.
    pub const ATOM: u8 = 0x20;
    /// The core type of a Core (performance) core.
    pub const CORE: u8 = 0x40;

    /// The core that CPUID leaf 0x1A's `eax` describes; `None` when it names none (a CPU that
    /// is not hybrid answers zeros).
    pub fn from_leaf_1a(eax: u32) -> Option<HybridCore> {
        let core_type = u8::try_from(eax >> 24).ok().filter(|&t| t != 0)?;
        Some(HybridCore {
            core_type,
            native_model: Some(eax & 0x00ff_ffff),
        })
    }

    /// A core named as `--cpu-model` signatures end: `atom`, `core`, or leaf 0x1A's EAX in hex
    /// (`0x20000002`: core type and native model id). `None` for anything else.
    pub fn from_name(name: &str) -> Option<HybridCore> {
        let name = name.trim();
        if name.eq_ignore_ascii_case("atom") {
            return Some(HybridCore {
                core_type: Self::ATOM,
                native_model: None,
            });
        }
        if name.eq_ignore_ascii_case("core") {
            return Some(HybridCore {
                core_type: Self::CORE,
                native_model: None,
            });
        }
        let hex = name
            .strip_prefix("0x")
            .or_else(|| name.strip_prefix("0X"))?;
        Self::from_leaf_1a(u32::from_str_radix(hex, 16).ok()?)
    }

    /// The core type's name: `atom`, `core`, or its value in hex.
    pub fn type_name(&self) -> String {
        match self.core_type {
            Self::ATOM => "atom".to_string(),
            Self::CORE => "core".to_string(),
            other => format!("{other:#04x}"),
        }
    }

    /// Whether a model for `core_type` (and `native_model`, when the model names one) serves
    /// this core.
    pub fn served_by(&self, core_type: u8, native_model: Option<u32>) -> bool {
        self.core_type == core_type
            && match (self.native_model, native_model) {
                (Some(mine), Some(theirs)) => mine == theirs,
                _ => true,
            }
    }
}

impl fmt::Display for HybridCore {
    /// `atom`, `core`, or the type in hex, with the native model id when known.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.type_name())?;
        match self.native_model {
            Some(native) => write!(f, " (native model {native:#x})"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for CpuIdentity {
    /// perf's mapfile spelling: `AuthenticAMD-25-1-1` style, with our vendor names.
    /// Arm: `arm part 0xd0c r4p1 (MIDR 0x414fd0c1)`, the kernel's `rNpN` for variant and
    /// revision.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(midr) = self.midr() {
            return write!(
                f,
                "{} part {:#x} r{}p{} (MIDR {midr:#010x})",
                self.vendor,
                self.model,
                self.stepping >> 4,
                self.stepping & 0xf
            );
        }
        write!(
            f,
            "{} family {:#x} model {:#x} stepping {}",
            self.vendor, self.family, self.model, self.stepping
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: the Neoverse N1 that QEMU's `-cpu neoverse-n1` emulates reports MIDR
    /// 0x414fd0c1 (Arm, r4p1, part 0xd0c), which the kernel's `cputype.h` names
    /// `ARM_CPU_PART_NEOVERSE_N1` 0xD0C under `ARM_CPU_IMP_ARM` 0x41; perf's arm64 CPU id
    /// prints it as `0x00000000414fd0c1`.
    #[test]
    fn arm_cpus_from_their_midr() {
        let n1 = CpuIdentity::from_midr(0x0000_0000_414f_d0c1).unwrap();
        assert_eq!(n1.vendor, Vendor::Arm(0x41));
        assert_eq!((n1.family, n1.model, n1.stepping), (0xf, 0xd0c, 0x41));
        assert_eq!(n1.midr(), Some(0x414f_d0c1));
        assert_eq!(n1.to_string(), "arm part 0xd0c r4p1 (MIDR 0x414fd0c1)");
        assert_eq!(n1.signature(), "0x00000000414fd0c1");
        let ampere = CpuIdentity::from_midr(0xc00f_ac31).unwrap();
        assert_eq!(ampere.vendor.name(), "ampere");
        assert_eq!(CpuIdentity::from_midr(0), None);
        // As `--cpu-model` and sysfs write it.
        assert_eq!(CpuIdentity::from_midr_text("0x414fd0c1"), Some(n1.clone()));
        assert_eq!(
            CpuIdentity::from_signature_with_core("0x00000000414fd0c1"),
            Some((n1.clone(), None))
        );
        for bad in [
            "414fd0c1",
            "0x",
            "0xg",
            "0x100414fd0c1",
            "0x00000000000000000414fd0c1",
        ] {
            assert_eq!(CpuIdentity::from_midr_text(bad), None, "{bad}");
        }
        // The implementers' names read back.
        assert_eq!(Vendor::from_cpuid("ampere"), Vendor::Arm(0xc0));
        assert_eq!(Vendor::from_cpuid("arm"), Vendor::Arm(0x41));
        assert_eq!(CpuIdentity::from_midr(1 << 40 | 0x414f_d0c1), None);
        // An x86 identity has no MIDR.
        let intel = CpuIdentity::from_signature("GenuineIntel-6-8F-8").unwrap();
        assert_eq!(intel.midr(), None);
    }

    #[test]
    fn hybrid_cores_from_cpuid_and_names() {
        // Alder Lake: a Gracemont core answers 0x20000001, a Golden Cove core 0x40000001.
        let atom = HybridCore::from_leaf_1a(0x2000_0001).unwrap();
        assert_eq!((atom.core_type, atom.native_model), (0x20, Some(1)));
        assert_eq!(atom.type_name(), "atom");
        let core = HybridCore::from_leaf_1a(0x4000_0001).unwrap();
        assert_eq!(core.type_name(), "core");
        assert_eq!(core.to_string(), "core (native model 0x1)");
        // A CPU that is not hybrid answers zeros.
        assert_eq!(HybridCore::from_leaf_1a(0), None);
        assert_eq!(HybridCore::from_leaf_1a(0x0000_0003), None);
        // Arrow Lake H's low-power Crestmont (native model 2) is not its Skymont (3).
        let lp = HybridCore::from_name("0x20000002").unwrap();
        assert!(lp.served_by(0x20, Some(2)));
        assert!(!lp.served_by(0x20, Some(3)));
        assert!(lp.served_by(0x20, None));
        assert!(!lp.served_by(0x40, Some(2)));
        // A core type named alone is served by any native model of that type.
        let named = HybridCore::from_name("ATOM").unwrap();
        assert_eq!(named.native_model, None);
        assert!(named.served_by(0x20, Some(3)));
        for bad in ["", "big", "0x", "0xg", "20000002", "0x00000001"] {
            assert_eq!(HybridCore::from_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn signatures_with_a_core() {
        let (cpu, core) =
            CpuIdentity::from_signature_with_core("GenuineIntel-6-97-2-atom").unwrap();
        assert_eq!((cpu.family, cpu.model, cpu.stepping), (6, 0x97, 2));
        assert_eq!(core.map(|c| c.core_type), Some(HybridCore::ATOM));
        let (cpu, core) = CpuIdentity::from_signature_with_core("GenuineIntel-6-97-2").unwrap();
        assert_eq!((cpu.model, core), (0x97, None));
        let (_, core) =
            CpuIdentity::from_signature_with_core("GenuineIntel-6-C5-2-0x20000002").unwrap();
        assert_eq!(core.and_then(|c| c.native_model), Some(2));
        // Without a stepping the core still parses (stepping 0).
        let (cpu, core) = CpuIdentity::from_signature_with_core("GenuineIntel-6-AA-core").unwrap();
        assert_eq!((cpu.model, cpu.stepping), (0xaa, 0));
        assert_eq!(core.map(|c| c.core_type), Some(HybridCore::CORE));
        for bad in [
            "GenuineIntel-6-97-2-big",
            "GenuineIntel-atom",
            "atom",
            "GenuineIntel-6-97-2-1-atom",
        ] {
            assert_eq!(CpuIdentity::from_signature_with_core(bad), None, "{bad}");
        }
    }

    #[test]
    fn parses_cpuinfo() {
        let text = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n\
                    model name\t: AMD EPYC\nstepping\t: 1\n\nprocessor\t: 1\nvendor_id\t: X\n";
        let cpu = CpuIdentity::from_proc_cpuinfo(text).unwrap();
        assert_eq!(
            cpu,
            CpuIdentity {
                vendor: Vendor::Amd,
                family: 26,
                model: 2,
                stepping: 1
            }
        );
        assert_eq!(
            CpuIdentity::from_proc_cpuinfo("vendor_id: GenuineIntel\n"),
            None
        );
    }
}
