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
    let dir = std::env::temp_dir().join(format!("counterhal-{stem}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let source = dir.join(format!("{stem}.c"));
    std::fs::write(&source, program)
        .map_err(|e| format!("cannot write {}: {e}", source.display()))?;
    let binary = dir.join(stem);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let output = Command::new(&cc)
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .arg("-lpfm")
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

/// Runs `binary` with libpfm4's inactive PMUs enabled, writes `lines` to it (one query each)
/// and returns its answers, one line each.
pub fn answers(binary: &Path, lines: &[String]) -> Result<Vec<String>, String> {
    let mut child = Command::new(binary)
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
