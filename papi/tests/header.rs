//! Our papi.h declares what PAPI 7.0's declares; oracle: Debian's PAPI 7.0 `papi.h`, and
//! PAPI 7.0's own utilities (src/utils of its source tree), built against ours.
//!
//! Macros are compared as the preprocessor defines them (`cc -E -dM`: every macro, those of
//! the system headers papi.h includes too); declarations by a scan of the preprocessed text
//! each header contributes: every identifier outside parentheses (types, tags, members,
//! enumerators, function names) and the name of a function pointer type, parameter names and
//! attributes left out (they are not part of the interface).

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `cc` prints for `#include <papi.h>` with `include` first on the path and `flags`.
fn preprocess(include: &Path, flags: &[&str]) -> String {
    let out = Command::new("cc")
        .args(flags)
        .arg("-I")
        .arg(include)
        .args(["-x", "c", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"#include <papi.h>\n")?;
            child.wait_with_output()
        })
        .expect("cc runs");
    assert!(
        out.status.success(),
        "cc -E failed for {}",
        include.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The macro names defined with `include`'s papi.h.
fn macros(include: &Path) -> BTreeSet<String> {
    preprocess(include, &["-E", "-dM"])
        .lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .map(|l| {
            let end = l.find(['(', ' ']).unwrap_or(l.len());
            l[..end].to_string()
        })
        .collect()
}

/// The identifiers the papi headers under `include` declare (see the module's note).
fn declarations(include: &Path) -> BTreeSet<String> {
    let mut ours = false;
    let mut text = String::new();
    for line in preprocess(include, &["-E"]).lines() {
        if let Some(marker) = line.strip_prefix("# ") {
            let file = marker.split('"').nth(1).unwrap_or("");
            ours = file.starts_with(&*include.to_string_lossy())
                && file.to_ascii_lowercase().contains("papi");
        } else if ours && !line.trim_start().starts_with("#pragma") {
            text.push_str(line);
            text.push('\n');
        }
    }
    let mut tokens: Vec<String> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_alphabetic() || c == '_' {
            let mut word = c.to_string();
            while let Some(&n) = chars
                .peek()
                .filter(|n| n.is_ascii_alphanumeric() || **n == '_')
            {
                word.push(n);
                chars.next();
            }
            tokens.push(word);
        } else if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    let mut names = BTreeSet::new();
    let mut depth = 0i32;
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].as_str();
        if t == "__attribute__" {
            // Skip the attribute's parentheses.
            let mut level = 0;
            i += 1;
            while i < tokens.len() {
                match tokens[i].as_str() {
                    "(" => level += 1,
                    ")" => {
                        level -= 1;
                        if level == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        } else if t == "(" {
            depth += 1;
        } else if t == ")" {
            depth -= 1;
        } else if t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && (depth == 0 || (i >= 2 && tokens[i - 1] == "*" && tokens[i - 2] == "("))
        {
            names.insert(t.to_string());
        }
        i += 1;
    }
    names
}

/// Every macro PAPI 7.0's papi.h defines (`SHRT_MAX` from limits.h, `PAPI_END`, ...) is
/// defined with ours, and ours defines none PAPI's does not.
#[test]
fn papi_h_defines_papis_macros() {
    system_papi_or_skip!();
    let theirs = macros(Path::new("/usr/include"));
    let ours = macros(&crate::common::manifest().join("include"));
    let missing: Vec<_> = theirs.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&theirs).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}\nextra {extra:?}"
    );
}

/// Every type, tag, member, enumerator and function PAPI 7.0's papi.h declares (the device
/// interface's enums and prototypes among them) ours declares.
#[test]
fn papi_h_declares_papis_names() {
    system_papi_or_skip!();
    let theirs = declarations(Path::new("/usr/include"));
    let ours = declarations(&crate::common::manifest().join("include"));
    assert!(theirs.len() > 500, "the scan found {} names", theirs.len());
    let missing: Vec<_> = theirs.difference(&ours).collect();
    assert!(missing.is_empty(), "ours lacks {missing:?}");
}

/// PAPI 7.0's source tree at tag papi-7-0-0-t, extracted from a git repository of PAPI
/// (`PAPI_SOURCE_GIT`) into `dir`; `None` where there is none.
fn papi_source(dir: &Path) -> Option<PathBuf> {
    let git = PathBuf::from(std::env::var_os("PAPI_SOURCE_GIT")?);
    std::fs::create_dir_all(dir).ok()?;
    let extracted = git.exists()
        && Command::new("sh")
            .arg("-c")
            .arg(format!(
                "git -C '{}' archive papi-7-0-0-t src/utils src/testlib | tar -x -C '{}'",
                git.display(),
                dir.display()
            ))
            .status()
            .is_ok_and(|s| s.success());
    extracted.then(|| dir.join("src"))
}

/// PAPI 7.0's utilities (src/utils, with src/testlib's helpers, as its Makefile builds them)
/// compile against our papi.h with no warning of a missing declaration, link with our
/// library, and run on it (`papi_version` prints PAPI 7.0.0.0).
#[test]
fn papis_utilities_build_against_ours() {
    let scratch =
        std::env::temp_dir().join(format!("counterhal-papi-header-{}", std::process::id()));
    let Some(src) = papi_source(&scratch) else {
        skip!(
            Need::Source,
            "PAPI's source tree is not at hand: set PAPI_SOURCE_GIT to a git repository of PAPI holding tag papi-7-0-0-t"
        );
    };
    let lib = crate::common::library_dir();
    let utils = src.join("utils");
    let helpers: [(&str, &[&str]); 14] = [
        ("papi_avail", &["print_header.c"]),
        ("papi_clockres", &["../testlib/clockcore.c"]),
        ("papi_command_line", &["../testlib/do_loops.c"]),
        ("papi_component_avail", &["print_header.c"]),
        ("papi_cost", &["cost_utils.c"]),
        ("papi_decode", &[]),
        ("papi_error_codes", &[]),
        ("papi_event_chooser", &["print_header.c"]),
        ("papi_hardware_avail", &["print_header.c"]),
        ("papi_mem_info", &[]),
        ("papi_multiplex_cost", &["cost_utils.c"]),
        ("papi_native_avail", &["print_header.c"]),
        ("papi_version", &[]),
        ("papi_xml_event_info", &[]),
    ];
    for (utility, extra) in helpers {
        let out = Command::new("cc")
            .current_dir(&utils)
            .args(["-std=gnu99", "-Werror=implicit-function-declaration", "-I"])
            .arg(crate::common::manifest().join("include"))
            .args(["-I", "../testlib", "-I", ".."])
            .arg(format!("{utility}.c"))
            .args(extra)
            .arg("-o")
            .arg(utility)
            .arg("-L")
            .arg(&lib)
            .args(["-l:libpapi.so.7.0", "-lm"])
            .output()
            .expect("cc runs");
        assert!(
            out.status.success(),
            "{utility} does not build against ours:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let version = crate::common::run(&utils.join("papi_version"), &[], true);
    let text = String::from_utf8_lossy(&version.stdout);
    assert!(text.contains("PAPI Version: 7.0.0.0"), "{text}");
    let hardware = crate::common::run(&utils.join("papi_hardware_avail"), &[], true);
    let text = String::from_utf8_lossy(&hardware.stdout);
    assert!(text.contains("Device Summary"), "{text}");
    let _ = std::fs::remove_dir_all(scratch);
}
