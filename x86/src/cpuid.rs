//! CPUID through a seam: the instruction, a recorded dump, or any other source a backend
//! brings (the MSR backend reads Linux's `/dev/cpu/N/cpuid`).
//!
//! A recorded dump is text in the format `cpuid -r` prints (one line per leaf and subleaf:
//! `0x0000000a 0x00: eax=0x07300404 ebx=0x00000000 ecx=0x00000000 edx=0x00000603`), with `#`
//! comments. [`CpuidDump::record`] writes one from any source, so a dump of a machine can be
//! taken with this crate alone.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use counterhal_hal::{Error, ErrorKind, Result};

#[cfg(target_arch = "x86")]
use core::arch::x86 as arch;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64 as arch;

/// The first block on x86 and x86-64 (where `__cpuid_count` is a safe function), the second
/// elsewhere.
macro_rules! cfg_if_x86 {
    ({ $($x86:tt)* } { $($other:tt)* }) => {{
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        { $($x86)* }
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        { $($other)* }
    }};
}

/// The four registers one CPUID leaf returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuidResult {
    /// EAX.
    pub eax: u32,
    /// EBX.
    pub ebx: u32,
    /// ECX.
    pub ecx: u32,
    /// EDX.
    pub edx: u32,
}

impl CpuidResult {
    /// A result from its four registers.
    pub const fn new(eax: u32, ebx: u32, ecx: u32, edx: u32) -> Self {
        Self { eax, ebx, ecx, edx }
    }
}

/// Where CPUID answers come from.
pub trait CpuidSource: fmt::Debug {
    /// The registers of `leaf` (EAX input) and `subleaf` (ECX input).
    ///
    /// # Errors
    /// [`ErrorKind::DeviceMissing`] or [`ErrorKind::PermissionDenied`] for a device that cannot
    /// be read; [`ErrorKind::Unsupported`] where CPUID does not exist.
    fn cpuid(&self, leaf: u32, subleaf: u32) -> Result<CpuidResult>;

    /// Where the answers come from, for reports: `instruction`, `/dev/cpu/0/cpuid`, `dump ...`.
    fn describe(&self) -> String;
}

/// The leaves (and subleaves) counterhal reads; [`CpuidDump::record`] captures these.
pub const LEAVES_USED: [(u32, u32); 14] = [
    (0x0, 0),
    (0x1, 0),
    (0x7, 0),
    (0x7, 1),
    (0xA, 0),
    (0x15, 0),
    (0x16, 0),
    (0x1A, 0),
    (0x23, 0),
    (0x8000_0000, 0),
    (0x8000_0001, 0),
    (0x8000_0007, 0),
    (0x8000_0008, 0),
    (0x8000_0022, 0),
];

/// The CPUID instruction, executed on whichever CPU the calling thread runs on.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuidInstruction;

impl CpuidSource for CpuidInstruction {
    fn cpuid(&self, leaf: u32, subleaf: u32) -> Result<CpuidResult> {
        cfg_if_x86! {
            {
                let r = arch::__cpuid_count(leaf, subleaf);
                Ok(CpuidResult::new(r.eax, r.ebx, r.ecx, r.edx))
            }
            {
                let _ = (leaf, subleaf);
                Err(Error::unsupported("the CPUID instruction exists only on x86"))
            }
        }
    }

    fn describe(&self) -> String {
        "the CPUID instruction".to_string()
    }
}

/// A recorded set of CPUID answers for one CPU.
///
/// A leaf that is not in the dump reads as zeros, which is what a CPU answers for a leaf above
/// its maximum (strictly, Intel CPUs repeat their highest basic leaf; zeros are the safe
/// reading, and the decoder checks the maximum leaves first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuidDump {
    name: String,
    leaves: BTreeMap<(u32, u32), CpuidResult>,
}

impl CpuidDump {
    /// An empty dump called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            leaves: BTreeMap::new(),
        }
    }

    /// The dump's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets one leaf.
    pub fn insert(&mut self, leaf: u32, subleaf: u32, result: CpuidResult) {
        self.leaves.insert((leaf, subleaf), result);
    }

    /// The recorded leaves, in order.
    pub fn leaves(&self) -> impl Iterator<Item = ((u32, u32), CpuidResult)> + '_ {
        self.leaves.iter().map(|(k, v)| (*k, *v))
    }

    /// Reads a dump file.
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`] when the file cannot be read; [`ErrorKind::InvalidInput`] for
    /// a malformed line (the message names file and line).
    pub fn from_file(path: impl AsRef<Path>) -> Result<CpuidDump> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| {
            Error::new(
                ErrorKind::NotFound,
                format!("cannot read {}: {error}", path.display()),
            )
        })?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parses dump text (`cpuid -r` format; only the first `CPU n:` block is used).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`] naming the line and what was expected.
    pub fn parse(name: &str, text: &str) -> Result<CpuidDump> {
        let mut dump = CpuidDump::new(name);
        let mut seen_cpu_header = false;
        for (number, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if line.starts_with("CPU") {
                if seen_cpu_header {
                    break;
                }
                seen_cpu_header = true;
                continue;
            }
            let bad = |what: &str| {
                Error::invalid_input(format!("{name}:{}: {what} in `{line}`", number + 1))
                    .with_hint("expected `0xLEAF 0xSUB: eax=0x... ebx=0x... ecx=0x... edx=0x...`")
            };
            let mut words = line.split_whitespace();
            let leaf = words
                .next()
                .and_then(parse_hex)
                .ok_or_else(|| bad("bad leaf"))?;
            let subleaf = words
                .next()
                .and_then(|w| w.strip_suffix(':'))
                .and_then(parse_hex)
                .ok_or_else(|| bad("bad subleaf (written `0xN:`)"))?;
            let mut registers = [None; 4];
            for word in words {
                let (register, value) = word.split_once('=').ok_or_else(|| bad("bad register"))?;
                let slot = match register {
                    "eax" => 0,
                    "ebx" => 1,
                    "ecx" => 2,
                    "edx" => 3,
                    _ => return Err(bad("unknown register")),
                };
                registers[slot] = Some(parse_hex(value).ok_or_else(|| bad("bad value"))?);
            }
            let [Some(eax), Some(ebx), Some(ecx), Some(edx)] = registers else {
                return Err(bad("missing register"));
            };
            dump.insert(leaf, subleaf, CpuidResult { eax, ebx, ecx, edx });
        }
        if dump.leaves.is_empty() {
            return Err(Error::invalid_input(format!(
                "{name}: the dump has no leaves"
            )));
        }
        Ok(dump)
    }

    /// Records the leaves this crate uses ([`LEAVES_USED`]) from `source`.
    ///
    /// # Errors
    /// As [`CpuidSource::cpuid`].
    pub fn record(name: impl Into<String>, source: &dyn CpuidSource) -> Result<CpuidDump> {
        let mut dump = CpuidDump::new(name);
        for (leaf, subleaf) in LEAVES_USED {
            dump.insert(leaf, subleaf, source.cpuid(leaf, subleaf)?);
        }
        Ok(dump)
    }

    /// The dump as text that [`parse`](Self::parse) reads back.
    pub fn to_text(&self) -> String {
        let mut text = format!("# CPUID dump: {}\n", self.name);
        for ((leaf, subleaf), r) in &self.leaves {
            text.push_str(&format!(
                "   {leaf:#010x} {subleaf:#04x}: eax={:#010x} ebx={:#010x} ecx={:#010x} edx={:#010x}\n",
                r.eax, r.ebx, r.ecx, r.edx
            ));
        }
        text
    }
}

impl CpuidSource for CpuidDump {
    fn cpuid(&self, leaf: u32, subleaf: u32) -> Result<CpuidResult> {
        Ok(self
            .leaves
            .get(&(leaf, subleaf))
            .copied()
            .unwrap_or_default())
    }

    fn describe(&self) -> String {
        format!("recorded dump {}", self.name)
    }
}

fn parse_hex(text: &str) -> Option<u32> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    u32::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print_round_trip() {
        let text = "CPU 0:\n   0x0000000a 0x00: eax=0x07300404 ebx=0x00000000 ecx=0x00000000 \
                    edx=0x00000603\n# comment\nCPU 1:\n   0x0000000a 0x00: eax=0x1 ebx=0x0 ecx=0x0 edx=0x0\n";
        let dump = CpuidDump::parse("t", text).unwrap();
        assert_eq!(
            dump.cpuid(0xA, 0).unwrap(),
            CpuidResult::new(0x0730_0404, 0, 0, 0x603)
        );
        assert_eq!(dump.cpuid(0xB, 0).unwrap(), CpuidResult::default());
        let again = CpuidDump::parse("t", &dump.to_text()).unwrap();
        assert_eq!(
            again.leaves().collect::<Vec<_>>(),
            dump.leaves().collect::<Vec<_>>()
        );
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let error = CpuidDump::parse("f", "0x1 0x0: eax=0x1 ebx=zz ecx=0 edx=0").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert!(error.message().starts_with("f:1: bad value"), "{error}");
        let error = CpuidDump::parse("f", "\n0x1 0x0 eax=1 ebx=0 ecx=0 edx=0").unwrap_err();
        assert!(error.message().starts_with("f:2: bad subleaf"), "{error}");
        let error = CpuidDump::parse("f", "0x1 0x0: eax=1 ebx=0 ecx=0").unwrap_err();
        assert!(error.message().contains("missing register"), "{error}");
        assert_eq!(
            CpuidDump::parse("f", "# nothing\n").unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }

    #[test]
    fn a_missing_dump_file_is_not_found() {
        let error = CpuidDump::from_file("/nonexistent/cpu.cpuid").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound);
        assert!(
            error.message().contains("/nonexistent/cpu.cpuid"),
            "{error}"
        );
    }

    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    #[test]
    fn instruction_reports_a_vendor() {
        let leaf0 = CpuidInstruction.cpuid(0, 0).unwrap();
        assert!(leaf0.eax >= 1, "max basic leaf {:#x}", leaf0.eax);
    }
}
