//! CPUID from Linux's cpuid driver, `/dev/cpu/N/cpuid`: a [`CpuidSource`] that answers for one
//! named CPU wherever the caller runs. The instruction, recorded dumps and the decoding are the
//! x86 crate's ([`counterhal_x86::cpuid`]).

use std::path::Path;

use counterhal_hal::{Error, ErrorKind, Result};
pub use counterhal_x86::cpuid::{
    CpuidDump, CpuidInstruction, CpuidResult, CpuidSource, LEAVES_USED,
};

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
