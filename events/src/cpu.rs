//! Identifying a CPU: vendor, family, model, stepping.

use std::fmt;

/// A CPU vendor, from the CPUID vendor string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD`.
    Amd,
    /// Any other vendor string.
    Other(String),
}

impl Vendor {
    /// The vendor for a CPUID vendor string (`GenuineIntel`, `AuthenticAMD`) or a short name
    /// (`intel`, `amd`).
    pub fn from_cpuid(vendor: &str) -> Vendor {
        match vendor.trim() {
            "GenuineIntel" => Vendor::Intel,
            "AuthenticAMD" => Vendor::Amd,
            v if v.eq_ignore_ascii_case("intel") => Vendor::Intel,
            v if v.eq_ignore_ascii_case("amd") => Vendor::Amd,
            other => Vendor::Other(other.to_string()),
        }
    }

    /// The short lower-case name: `intel`, `amd`, or the vendor string.
    pub fn name(&self) -> &str {
        match self {
            Vendor::Intel => "intel",
            Vendor::Amd => "amd",
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

    /// perf's signature of this CPU: `GenuineIntel-6-8F-8` (family decimal, model and
    /// stepping upper-case hex).
    pub fn signature(&self) -> String {
        let vendor = match &self.vendor {
            Vendor::Intel => "GenuineIntel",
            Vendor::Amd => "AuthenticAMD",
            Vendor::Other(v) => v,
        };
        format!(
            "{vendor}-{}-{:X}-{:X}",
            self.family, self.model, self.stepping
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

impl fmt::Display for CpuIdentity {
    /// perf's mapfile spelling: `AuthenticAMD-25-1-1` style, with our vendor names.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
