//! The small C programs the libpfm4 cross-checks compile against the installed libpfm4, and
//! the pipe that feeds them queries.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Reads `PMU::EVENT...` strings, one a line, and answers libpfm4's encoding of each
/// (`pfm_get_os_event_encoding`, user and kernel levels): `OK 0xCODE` (the first code) or
/// `ERR code`.
pub const ENCODE: &str = r#"
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    char line[1024];
    if (pfm_initialize() != PFM_SUCCESS) { printf("INIT-FAILED\n"); return 1; }
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        pfm_pmu_encode_arg_t arg;
        memset(&arg, 0, sizeof arg);
        arg.size = sizeof arg;
        int ret = pfm_get_os_event_encoding(line, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg);
        if (ret != PFM_SUCCESS) { printf("ERR %d\n", ret); continue; }
        printf("OK 0x%llx\n", (unsigned long long)arg.codes[0]);
        free(arg.codes);
    }
    return 0;
}
"#;

/// Compiles `program` (C, linked with `-lpfm`) as `stem` in a directory of this process; an
/// error says why (no compiler, no libpfm4-dev), for the test to skip with.
pub fn build(program: &str, stem: &str) -> Result<PathBuf, String> {
    build_for(None, program, stem)
}

/// The version of libpfm4 Debian sid ships (libpfm4's head), the lab's oracle.
pub const HEAD_VERSION: &str = "4.13.0+git106-g3e4031b";

/// The lab's Debian sid root (`COUNTERHAL_CURRENT_LAB`, by default /var/cache/counterhal-lab,
/// made by `scripts/current-lab`) holding libpfm4's head, [`HEAD_VERSION`]: its top
/// directory, or why there is none (for the test to skip with).
pub fn head_root() -> Result<PathBuf, String> {
    let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB")
        .map_or_else(|| PathBuf::from("/var/cache/counterhal-lab"), PathBuf::from);
    let root = lab.join("sid");
    for needed in [
        "lib64/ld-linux-x86-64.so.2",
        "usr/lib/x86_64-linux-gnu/libpfm.so.4",
        "usr/include/perfmon/pfmlib.h",
    ] {
        if !root.join(needed).is_file() {
            return Err(format!(
                "no {} (scripts/current-lab makes the Debian sid root with libpfm4-dev)",
                root.join(needed).display()
            ));
        }
    }
    let status = std::fs::read_to_string(root.join("var/lib/dpkg/status")).unwrap_or_default();
    let version = status
        .split("\n\n")
        .find(|p| {
            p.lines()
                .any(|l| l.starts_with("Package: libpfm4") && !l.contains("-dev"))
        })
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("Version: ")))
        .unwrap_or("unknown");
    if !version.starts_with(HEAD_VERSION) {
        return Err(format!(
            "the lab's libpfm4 is {version}, not {HEAD_VERSION} (the head the tables are from)"
        ));
    }
    Ok(root)
}

/// Compiles `program` as `stem` in a directory of this process, against the installed
/// libpfm4 (`root` None: linked with `-lpfm`) or the one of the Debian root `root` (its
/// `perfmon/` headers alone, this machine's C library's; linked with its `libpfm.so.4`, whose
/// newer C library symbols that root's loader resolves: see [`command`]); an error says why
/// (no compiler, no libpfm4-dev), for the test to skip with.
pub fn build_for(root: Option<&Path>, program: &str, stem: &str) -> Result<PathBuf, String> {
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-{stem}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let source = dir.join(format!("{stem}.c"));
    std::fs::write(&source, program)
        .map_err(|e| format!("cannot write {}: {e}", source.display()))?;
    let binary = dir.join(stem);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let mut compile = Command::new(&cc);
    compile.arg("-o").arg(&binary).arg(&source);
    match root {
        None => {
            compile.arg("-lpfm");
        }
        Some(root) => {
            // The root's perfmon headers alone: its C library's would not mix with ours.
            let include = dir.join("include");
            std::fs::create_dir_all(&include)
                .map_err(|e| format!("cannot create {}: {e}", include.display()))?;
            let headers = include.join("perfmon");
            let from = root.join("usr/include/perfmon");
            std::fs::create_dir_all(&headers)
                .map_err(|e| format!("cannot create {}: {e}", headers.display()))?;
            let files = std::fs::read_dir(&from)
                .map_err(|e| format!("cannot read {}: {e}", from.display()))?;
            for file in files.flatten() {
                std::fs::copy(file.path(), headers.join(file.file_name()))
                    .map_err(|e| format!("cannot copy {}: {e}", file.path().display()))?;
            }
            compile
                .arg("-I")
                .arg(&include)
                .arg("-Wl,--allow-shlib-undefined")
                .arg(root.join("usr/lib/x86_64-linux-gnu/libpfm.so.4"));
        }
    }
    let output = compile
        .output()
        .map_err(|e| format!("cannot run the C compiler `{cc}`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`{cc} ... -lpfm` failed (is libpfm4-dev installed?): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(binary)
}

/// The command running `binary` built by [`build_for`]: itself, or for a root, by the root's
/// loader on the root's libraries (its libpfm4 and C library), neither chroot nor privilege.
pub fn command(root: Option<&Path>, binary: &Path) -> Command {
    let Some(root) = root else {
        return Command::new(binary);
    };
    let mut command = Command::new(root.join("lib64/ld-linux-x86-64.so.2"));
    command
        .arg("--library-path")
        .arg(format!(
            "{0}/lib/x86_64-linux-gnu:{0}/usr/lib/x86_64-linux-gnu",
            root.display()
        ))
        .arg(binary);
    command
}

/// Runs `binary` with libpfm4's inactive PMUs enabled, writes `lines` to it (one query each)
/// and returns its answers, one line each.
pub fn answers(binary: &Path, lines: &[String]) -> Result<Vec<String>, String> {
    answers_in(None, binary, lines)
}

/// [`answers`] of `binary` built by [`build_for`] for `root` (run as [`command`] runs it).
pub fn answers_in(
    root: Option<&Path>,
    binary: &Path,
    lines: &[String],
) -> Result<Vec<String>, String> {
    let mut child = command(root, binary)
        .env("LIBPFM_ENCODE_INACTIVE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run the libpfm4 helper: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let input = lines.join("\n") + "\n";
    // Written from a thread while the answers are read: thousands of queries fill both pipes.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    writer
        .join()
        .map_err(|_| "the writer thread panicked".to_string())?
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    if text.starts_with("INIT-FAILED") {
        return Err("pfm_initialize failed".to_string());
    }
    Ok(text.lines().map(str::to_string).collect())
}
