//! Our papi.h declares what PAPI 7.0's declares; oracle: Debian's PAPI 7.0 `papi.h`, and
//! PAPI 7.0's own utilities (src/utils of its source tree), built against ours.
//!
//! Macros are compared as the preprocessor defines them (`cc -E -dM`: every macro, those of
//! the system headers papi.h includes too), by name and by definition; declarations by a scan
//! of the preprocessed text each header contributes: every identifier outside parentheses
//! (types, tags, members, enumerators, function names) and the name of a function pointer
//! type, parameter names and attributes left out (they are not part of the interface), and
//! every declaration token for token. With the sizes, offsets and values `tests/abi.rs`
//! compares, a program compiled against ours is the program compiled against PAPI's: PAPI's
//! own tests (`ctests/run`) are built against Debian's papi.h alone, run on both libraries,
//! and only checked to compile against ours.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::collections::{BTreeMap, BTreeSet};
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

/// The macros defined with `include`'s papi.h, each name with its definition: its parameters
/// and replacement with the blanks taken out and each parameter in parentheses taken as the
/// parameter (`((x) >> 24)` reads `(x>>24)`, as `( x>>24 )` does).
fn macros(include: &Path) -> BTreeMap<String, String> {
    preprocess(include, &["-E", "-dM"])
        .lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .map(|l| {
            let end = l.find(['(', ' ']).unwrap_or(l.len());
            let mut definition: String = l[end..].split_whitespace().collect();
            if let Some(parameters) = l[end..]
                .strip_prefix('(')
                .and_then(|p| p.split_once(')'))
                .map(|(p, _)| p)
            {
                for parameter in parameters.split(',').map(str::trim) {
                    definition = definition.replace(&format!("({parameter})"), parameter);
                }
            }
            (l[..end].to_string(), definition)
        })
        .collect()
}

/// The tokens of the preprocessed text the papi headers under `include` contribute to
/// `#include <papi.h>`: each identifier or number whole, each other character alone.
fn tokens(include: &Path) -> Vec<String> {
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
        if c.is_ascii_alphanumeric() || c == '_' {
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
    tokens
}

/// The identifiers the papi headers under `include` declare (see the module's note).
fn declarations(include: &Path) -> BTreeSet<String> {
    let tokens = tokens(include);
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
/// defined with ours, as PAPI defines it (see `macros`), and ours defines none PAPI's does not.
#[test]
fn papi_h_defines_papis_macros() {
    system_papi_or_skip!();
    let theirs = macros(Path::new("/usr/include"));
    let ours = macros(&crate::common::manifest().join("include"));
    let missing: Vec<_> = theirs.keys().filter(|m| !ours.contains_key(*m)).collect();
    let extra: Vec<_> = ours.keys().filter(|m| !theirs.contains_key(*m)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}\nextra {extra:?}"
    );
    assert!(theirs.len() > 1000, "{} macros", theirs.len());
    let differing: Vec<String> = theirs
        .iter()
        .filter(|(name, definition)| ours[*name] != **definition)
        .map(|(name, definition)| format!("{name}: PAPI's {definition}, ours {}", ours[name]))
        .collect();
    assert!(differing.is_empty(), "{}", differing.join("\n"));
}

/// The declarations the papi headers under `include` make (see `tokens`), each its tokens up
/// to its `;` outside brackets, joined by blanks, an enum's body by its enumerators' names
/// alone and an empty parameter list as `( void )`; and the enumerators.
fn declaration_texts(include: &Path) -> (Vec<String>, Vec<String>) {
    let mut texts = Vec::new();
    let mut enumerators = Vec::new();
    let mut declaration: Vec<String> = Vec::new();
    let mut depth = 0i32;
    for token in tokens(include) {
        match token.as_str() {
            "(" | "{" | "[" => depth += 1,
            ")" | "}" | "]" => depth -= 1,
            _ => {}
        }
        let end = token == ";" && depth == 0;
        declaration.push(token);
        if !end {
            continue;
        }
        texts.push(
            enumerators_only(&declaration, &mut enumerators)
                .join(" ")
                .replace("( )", "( void )"),
        );
        declaration.clear();
    }
    texts.sort();
    (texts, enumerators)
}

/// `declaration`'s tokens with the body of each enum it declares cut to the enumerators'
/// names (`enum { A = 0 , B , }` reads `enum { A B }`), which go to `enumerators` too.
fn enumerators_only(declaration: &[String], enumerators: &mut Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < declaration.len() {
        out.push(declaration[i].clone());
        if declaration[i] != "enum" {
            i += 1;
            continue;
        }
        // The tag, if any, then the body: names after `{` and after each `,` outside
        // parentheses, up to the closing `}`.
        i += 1;
        while i < declaration.len() && declaration[i] != "{" && declaration[i] != ";" {
            out.push(declaration[i].clone());
            i += 1;
        }
        if declaration.get(i).is_none_or(|t| t != "{") {
            continue;
        }
        out.push("{".to_string());
        let mut level = 0;
        let mut previous = "{";
        i += 1;
        while i < declaration.len() {
            let t = declaration[i].as_str();
            match t {
                "(" => level += 1,
                ")" => level -= 1,
                "}" if level == 0 => break,
                _ if level == 0 && (previous == "{" || previous == ",") => {
                    out.push(t.to_string());
                    enumerators.push(t.to_string());
                }
                _ => {}
            }
            previous = t;
            i += 1;
        }
    }
    out
}

/// The value of each of `enumerators` with `include`'s papi.h, one `NAME VALUE` line each, by
/// a program built against it (in `dir`) and run.
fn enumerator_values(include: &Path, enumerators: &[String], dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let mut source = String::from("#include <stdio.h>\n#include <papi.h>\nint main(void) {\n");
    for name in enumerators {
        source.push_str(&format!(
            "    printf(\"%s %lld\\n\", \"{name}\", (long long){name});\n"
        ));
    }
    source.push_str("    return 0;\n}\n");
    std::fs::write(dir.join("enumerators.c"), source).unwrap();
    let program = dir.join("enumerators");
    let built = Command::new("cc")
        .arg("-I")
        .arg(include)
        .arg(dir.join("enumerators.c"))
        .arg("-o")
        .arg(&program)
        .output()
        .expect("cc runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(&program).output().expect("the program runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Every declaration of PAPI 7.0's papi.h (structures and unions with their members' types,
/// typedefs, prototypes, enums) is ours token for token, and ours makes no other, but for
/// how an enumerator's value is written (each is compared by value) and for the two
/// prototypes PAPI declares with no parameter list (`PAPI_hl_stop()`, `PAPI_rate_stop()`),
/// which ours declares with `void`.
#[test]
fn papi_h_declares_as_papi_does() {
    system_papi_or_skip!();
    let (theirs, enumerators) = declaration_texts(Path::new("/usr/include"));
    let ours_include = crate::common::manifest().join("include");
    let (ours, _) = declaration_texts(&ours_include);
    assert!(
        theirs.len() > 100,
        "the scan found {} declarations",
        theirs.len()
    );
    let missing: Vec<_> = theirs.iter().filter(|d| !ours.contains(d)).collect();
    let extra: Vec<_> = ours.iter().filter(|d| !theirs.contains(d)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "PAPI's, not ours:\n{}\n\nours, not PAPI's:\n{}",
        missing
            .iter()
            .map(|d| d.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        extra
            .iter()
            .map(|d| d.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(enumerators.len() > 200, "{enumerators:?}");
    let scratch = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-papi-enums-{}", std::process::id()));
    let their_values = enumerator_values(Path::new("/usr/include"), &enumerators, &scratch);
    let our_values = enumerator_values(&ours_include, &enumerators, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    for (t, o) in their_values.lines().zip(our_values.lines()) {
        assert_eq!(t, o, "PAPI 7.0's enumerator vs ours");
    }
    assert_eq!(their_values.lines().count(), enumerators.len());
    assert_eq!(our_values.lines().count(), enumerators.len());
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
    let scratch = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-papi-header-{}", std::process::id()));
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
