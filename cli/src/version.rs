//! `counterhal version [--build-options]`: perf's `version` command, so that a script written
//! for perf (perf's own shell tests ask `perf version --build-options` what the build can do
//! before they run) reads counterhal's answer the same way.

use std::process::ExitCode;

use crate::args::Table;
use crate::args::spec::{Spec, flag};
use crate::error::CliError;

/// Arguments of `counterhal version`.
#[derive(Debug, Default)]
pub struct VersionArgs {
    /// `--build-options`.
    build_options: bool,
}

impl Table for VersionArgs {
    const NAME: &'static str = "version";
    const USAGE: &'static str = "counterhal version [--build-options]";
    const OPTIONS: &'static [Spec<VersionArgs>] =
        &[flag(None, "build-options", |a: &mut VersionArgs| {
            a.build_options = true
        })
        .says(
            "Also list what this build can do as `perf version --build-options` lists its \
        features: a name, `[ on  ]` or `[ OFF ]`, and perf's macro for it (`# HAVE_LIBPFM`)",
        )];
}

/// perf's build options that say whether a perf command or option counterhal takes works:
/// name, whether it does here, perf's macro. `--bpf-counters` alone counts through perf's
/// bperf leaders on Linux (`bpf_skeletons`); counterhal has no `--pfm-events` (`libpfm4`), no
/// `script` (`libpython`) and no call chains (`dwarf-unwind`, `libbfd`).
fn options() -> [(&'static str, bool, &'static str); 5] {
    [
        ("bpf_skeletons", cfg!(target_os = "linux"), "HAVE_BPF_SKEL"),
        ("dwarf-unwind", false, "HAVE_DWARF_UNWIND_SUPPORT"),
        ("libbfd", false, "HAVE_LIBBFD_SUPPORT"),
        ("libpfm4", false, "HAVE_LIBPFM"),
        ("libpython", false, "HAVE_LIBPYTHON_SUPPORT"),
    ]
}

/// The text `version` prints: perf's `perf version 7.2.13` line and, asked for, perf 7.2's
/// build-option lines (`tools/perf/builtin-version.c`'s `STATUS` layout: the name right-aligned
/// in 22 columns, `: [ on  ]` or `: [ OFF ]`, two spaces, `# ` and the macro).
fn text(build_options: bool) -> String {
    let mut out = format!("counterhal version {}\n", env!("CARGO_PKG_VERSION"));
    if build_options {
        for (name, on, macro_name) in options() {
            let status = if on { "on " } else { "OFF" };
            out.push_str(&format!("{name:>22}: [ {status} ]  # {macro_name}\n"));
        }
    }
    out
}

/// Prints the version (and the build options).
///
/// # Errors
/// Standard output cannot be written (exit 1).
pub fn run(args: VersionArgs) -> Result<ExitCode, CliError> {
    crate::output::emit(&text(args.build_options))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: perf 7.2.13's `perf version --build-options` (Debian sid), whose lines perf's
    /// shell tests grep (`grep HAVE_LIBPFM | grep -q OFF` in stat_all_pfm.sh): its libpfm4 and
    /// bpf_skeletons lines, byte for byte in layout.
    #[test]
    fn build_options_are_laid_out_as_perf_7_2_lays_them_out() {
        let perf = "               libpfm4: [ OFF ]  # HAVE_LIBPFM\n         bpf_skeletons: [ OFF ]  # HAVE_BPF_SKEL";
        let ours = text(true);
        assert!(ours.starts_with("counterhal version "), "{ours}");
        let line = |text: &str, name: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(&format!("{name}:")))
                .map(|l| l.replace("on ", "OFF"))
        };
        for name in ["libpfm4", "bpf_skeletons"] {
            assert_eq!(line(&ours, name), line(perf, name), "{name}");
        }
        assert!(ours.contains("HAVE_LIBPFM") && !text(false).contains("HAVE_"));
    }
}
