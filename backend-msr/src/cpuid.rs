//! CPUID through a seam: the instruction, Linux's `/dev/cpu/N/cpuid`, or a recorded dump.
//!
//! A recorded dump is text in the format `cpuid -r` prints (one line per leaf and subleaf:
//! `0x0000000a 0x00: eax=0x07300404 ebx=0x00000000 ecx=0x00000000 edx=0x00000603`), with `#`
//! comments. [`CpuidDump::record`] writes one from any source, so a dump of a machine can be
//! taken with this crate alone.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use counterhal_hal::{Error, ErrorKind, Result};

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

/// The leaves (and subleaves) this crate reads; [`CpuidDump::record`] captures these.
pub const LEAVES_USED: [(u32, u32); 11] = [
    (0x0, 0),
    (0x1, 0),
    (0x7, 0),
    (0xA, 0),
    (0x15, 0),
    (0x16, 0),
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
        crate::sys::cpuid(leaf, subleaf)
            .map(|[eax, ebx, ecx, edx]| CpuidResult { eax, ebx, ecx, edx })
            .ok_or_else(|| Error::unsupported("the CPUID instruction exists only on x86"))
    }

    fn describe(&self) -> String {
        "the CPUID instruction".to_string()
    }
}

/// Linux's cpuid driver: `/dev/cpu/N/cpuid`, read 16 bytes at offset `subleaf << 32 | leaf`.
/// Answers for one named CPU, wherever the caller runs.
#[derive(Debug)]
pub struct CpuidDevice {
    path: std::path::PathBuf,
    #[cfg(unix)]
    file: std::fs::File,
}

impl CpuidDevice {
    /// Opens `/dev/cpu/<cpu>/cpuid`.
    ///
    /// # Errors
    /// [`ErrorKind::DeviceMissing`] when the file does not exist (hint: `modprobe cpuid`);
    /// [`ErrorKind::PermissionDenied`] when it cannot be opened; [`ErrorKind::Unsupported`]
    /// on systems without it.
    pub fn open(cpu: u32) -> Result<CpuidDevice> {
        Self::open_path(format!("/dev/cpu/{cpu}/cpuid"))
    }

    /// Opens a cpuid device file at `path` (tests point this at a stand-in).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_path(path: impl AsRef<Path>) -> Result<CpuidDevice> {
        let path = path.as_ref().to_path_buf();
        #[cfg(unix)]
        {
            let file = std::fs::File::open(&path).map_err(|error| {
                let kind = match error.kind() {
                    std::io::ErrorKind::NotFound => ErrorKind::DeviceMissing,
                    std::io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
                    _ => ErrorKind::Other,
                };
                let mut out = Error::new(kind, format!("cannot open {}: {error}", path.display()))
                    .with_hint("load the cpuid driver (`modprobe cpuid`) and run as root");
                if let Some(errno) = error.raw_os_error() {
                    out = out.with_errno(errno);
                }
                out
            })?;
            Ok(CpuidDevice { path, file })
        }
        #[cfg(not(unix))]
        {
            Err(Error::unsupported(format!(
                "{} needs a Unix system",
                path.display()
            )))
        }
    }
}

impl CpuidSource for CpuidDevice {
    fn cpuid(&self, leaf: u32, subleaf: u32) -> Result<CpuidResult> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            let mut bytes = [0u8; 16];
            let offset = (u64::from(subleaf) << 32) | u64::from(leaf);
            self.file
                .read_exact_at(&mut bytes, offset)
                .map_err(|error| {
                    let mut out = Error::new(
                        ErrorKind::Other,
                        format!(
                            "cannot read CPUID leaf {leaf:#x}.{subleaf} from {}: {error}",
                            self.path.display()
                        ),
                    );
                    if let Some(errno) = error.raw_os_error() {
                        out = out.with_errno(errno);
                    }
                    out
                })?;
            let word = |i: usize| {
                u32::from_le_bytes([
                    bytes[4 * i],
                    bytes[4 * i + 1],
                    bytes[4 * i + 2],
                    bytes[4 * i + 3],
                ])
            };
            Ok(CpuidResult {
                eax: word(0),
                ebx: word(1),
                ecx: word(2),
                edx: word(3),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = (leaf, subleaf);
            Err(Error::unsupported("the cpuid device needs a Unix system"))
        }
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

/// The CPUID dumps shipped with this crate, by name (see [`CpuidDump::recorded`]).
///
/// `amd-zen5-firecracker` was recorded from a CPU (with [`CpuidDump::record`] and
/// [`CpuidInstruction`]); `intel-kabylake-pentium-g4600` holds the register values of a
/// published recording of a real Pentium G4600. The others were written from the documented CPUID fields of their
/// CPUs (Intel SDM, AMD PPR), not recorded: decoding them checks the decoder against the
/// documentation, not against hardware. Each file's header says which it is.
pub const RECORDED: [(&str, &str); 6] = [
    (
        "intel-kabylake-pentium-g4600",
        include_str!("../tests/data/intel-kabylake-pentium-g4600.cpuid"),
    ),
    (
        "intel-skylake",
        include_str!("../tests/data/intel-skylake.cpuid"),
    ),
    (
        "intel-core2",
        include_str!("../tests/data/intel-core2.cpuid"),
    ),
    ("amd-zen2", include_str!("../tests/data/amd-zen2.cpuid")),
    ("amd-zen4", include_str!("../tests/data/amd-zen4.cpuid")),
    (
        "amd-zen5-firecracker",
        include_str!("../tests/data/amd-zen5-firecracker.cpuid"),
    ),
];

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

    /// One of the dumps shipped with this crate: `amd-zen5-firecracker` (recorded: an EPYC
    /// family 0x1A guest whose hypervisor hides the core-counter extensions),
    /// `intel-kabylake-pentium-g4600` (recorded: arch perfmon v4, no TSX), and, written
    /// from documentation rather than recorded, `intel-skylake` (Core i7-6700, arch perfmon
    /// v4), `intel-core2` (Core 2 Duo, v2, 40-bit counters), `amd-zen2` (EPYC 7002, 6 core
    /// counters), `amd-zen4` (EPYC 9004, PerfMonV2). See [`RECORDED`].
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`] for another name (the message lists the known ones).
    pub fn recorded(name: &str) -> Result<CpuidDump> {
        let (found, text) = RECORDED
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                let known: Vec<&str> = RECORDED.iter().map(|(n, _)| *n).collect();
                Error::new(
                    ErrorKind::NotFound,
                    format!("no recorded CPUID dump named `{name}`"),
                )
                .with_hint(format!("known dumps: {}", known.join(", ")))
            })?;
        Self::parse(found, text)
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
    fn every_recorded_dump_parses() {
        for (name, _) in RECORDED {
            let dump = CpuidDump::recorded(name).unwrap();
            assert!(dump.leaves().count() >= 5, "{name}");
        }
        let error = CpuidDump::recorded("pentium-pro").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound);
        assert!(error.hint().unwrap().contains("intel-skylake"));
    }

    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    #[test]
    fn instruction_reports_a_vendor() {
        let leaf0 = CpuidInstruction.cpuid(0, 0).unwrap();
        assert!(leaf0.eax >= 1, "max basic leaf {:#x}", leaf0.eax);
    }
}
