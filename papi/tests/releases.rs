//! Two PAPI releases in one process (`tests/c/mixed_release.c`): a program and a library it
//! links, built against PAPI 7.0's and 7.2's papi.h either way round, each linked to its
//! release's SONAME in the tree `scripts/install-papi` installs, as a tool built on one release
//! loads a plugin built on another. The first `PAPI_library_init` chooses the release; the
//! other caller's is `PAPI_EINVAL`, and no struct is written past its size (AddressSanitizer,
//! valgrind's memcheck, and guard bytes around a struct on the stack). The oracles: Debian
//! 12's real PAPI 7.0, which answers 7.2's version `PAPI_EINVAL` here, and sid's 7.2, which
//! answers 7.0's so (`current.rs`). `tests/c/many_inits.c` holds `PAPI_library_init` to
//! PAPI's "returns at once when initialised", with nothing lost over 1,000 calls.

use crate::install;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How the two halves are built and run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Under {
    /// Built plainly, run as they are.
    Plain,
    /// Built with AddressSanitizer.
    Address,
    /// Built plainly, run under valgrind's memcheck.
    Valgrind,
}

/// The papi.h folder of `release` (`7.0` or `7.2`) in the installed tree.
fn include(release: &str) -> PathBuf {
    match release {
        "7.2" => install::include().join("papi-7.2"),
        _ => install::include(),
    }
}

/// A scratch folder of this test process for `tag`.
fn scratch(tag: &str) -> PathBuf {
    let dir = counterhal_conformance::fixtures::temp_dir().join(format!(
        "counterhal-papi-mixed-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `cc` with `args`, failing the test with what it printed when it fails.
fn cc(args: &[String]) {
    let out = Command::new("cc")
        .args(["-std=gnu99", "-Wall", "-Wextra", "-Werror", "-g"])
        .args(args)
        .output()
        .expect("a C compiler (cc) is installed");
    assert!(
        out.status.success(),
        "cc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The program built against `program`'s papi.h and linked with `libpapi` (the folder holding
/// it, and the file name the linker takes: `libpapi.so.7.0`), and the library it links built
/// against `library`'s papi.h, linked the same way.
fn build(program: &str, library: &str, libpapi: (&Path, &str), under: Under, tag: &str) -> PathBuf {
    let dir = scratch(tag);
    let source = crate::common::manifest().join("tests/c/mixed_release.c");
    let sanitize: &[&str] = match under {
        Under::Address => &["-fsanitize=address", "-fno-omit-frame-pointer"],
        Under::Plain | Under::Valgrind => &[],
    };
    let sanitize: Vec<String> = sanitize.iter().map(|s| s.to_string()).collect();
    let (papi_dir, papi_file) = libpapi;
    let link_papi = [
        format!("-L{}", papi_dir.display()),
        format!("-l:{papi_file}"),
        format!("-Wl,-rpath,{}", papi_dir.display()),
    ];
    let library_file = dir.join("libmixed.so");
    let mut args = sanitize.clone();
    args.extend([
        "-shared".into(),
        "-fPIC".into(),
        "-DAS_LIBRARY".into(),
        format!("-I{}", include(library).display()),
        source.display().to_string(),
        "-o".into(),
        library_file.display().to_string(),
    ]);
    args.extend(link_papi.clone());
    cc(&args);
    let program_file = dir.join("mixed");
    let mut args = sanitize;
    args.extend([
        format!("-I{}", include(program).display()),
        source.display().to_string(),
        "-o".into(),
        program_file.display().to_string(),
        format!("-L{}", dir.display()),
        "-lmixed".into(),
        format!("-Wl,-rpath,{}", dir.display()),
    ]);
    args.extend(link_papi);
    cc(&args);
    program_file
}

/// Runs `program` with `order` (`program-first` or `library-first`) under `under`: what it
/// printed, after checking that it ran to its end and no checker complained.
fn run(program: &Path, order: &str, under: Under) -> String {
    let mut command = match under {
        Under::Valgrind => {
            let mut c = Command::new("valgrind");
            c.args(["--quiet", "--error-exitcode=99"]).arg(program);
            c
        }
        Under::Plain | Under::Address => Command::new(program),
    };
    command
        .arg(order)
        .env("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1");
    let out = crate::common::run_within(&mut command, std::time::Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{order} under {under:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{order} under {under:?}: {:?}\n{stdout}{stderr}",
        out.status
    );
    assert!(!stderr.contains("ERROR: AddressSanitizer"), "{stderr}");
    stdout
}

/// What the caller built on `winner` prints once its init chose the release (the other's is
/// refused), with its struct's guards intact and its second init answered at once.
fn expect_won(stdout: &str, winner: &str, loser: &str) {
    for line in [
        format!("{winner} init: ok (0)"),
        format!("{loser} init: refused (-1)"),
        format!(
            "{}: get_event_info on the stack 0, PAPI_TOT_INS, guards intact",
            who(winner)
        ),
        format!(
            "{}: get_event_info on the heap 0, PAPI_TOT_INS",
            who(winner)
        ),
        format!("{}: init again: ok", who(winner)),
    ] {
        assert!(stdout.contains(&line), "no '{line}' in:\n{stdout}");
    }
    // Read at its release's offsets (past the field 7.2 inserted): the calling thread.
    assert!(
        stdout.contains(&format!(
            "{}: component 0 default_granularity 1,",
            who(winner)
        )),
        "{stdout}"
    );
    assert!(
        !stdout.contains(&format!("{}:", who(loser))),
        "the refused caller read nothing:\n{stdout}"
    );
}

/// `program` of `program (PAPI 7.0)`.
fn who(caller: &str) -> &str {
    caller.split(' ').next().unwrap_or(caller)
}

/// Builds and runs the four cases (a 7.0 program with a 7.2 library and the reverse, each
/// caller first) under `under`, against our installed libpapi.
fn mixed_releases_under(under: Under) {
    let lib = install::lib();
    for (program, library) in [("7.0", "7.2"), ("7.2", "7.0")] {
        let tag = format!("{program}-{library}-{under:?}");
        let file = format!("libpapi.so.{program}");
        let built = build(program, library, (&lib, &file), under, &tag);
        let program_name = format!("program (PAPI {program})");
        let library_name = format!("library (PAPI {library})");
        let first = run(&built, "program-first", under);
        expect_won(&first, &program_name, &library_name);
        let second = run(&built, "library-first", under);
        expect_won(&second, &library_name, &program_name);
        let _ = std::fs::remove_dir_all(built.parent().unwrap());
    }
}

#[test]
fn two_releases_in_one_process_the_first_init_chooses() {
    mixed_releases_under(Under::Plain);
}

#[test]
fn two_releases_in_one_process_are_clean_under_address_sanitizer() {
    mixed_releases_under(Under::Address);
}

#[test]
fn two_releases_in_one_process_are_clean_under_valgrind() {
    valgrind_or_skip!();
    mixed_releases_under(Under::Valgrind);
}

/// Oracle: Debian 12's PAPI 7.0.0, which answers every version but 7.0's `PAPI_EINVAL`: a 7.0
/// program and a 7.2 library on it print the same inits as on ours, whichever calls first.
#[test]
fn real_papi_7_0_refuses_the_7_2_library_as_ours_does() {
    system_papi_or_skip!();
    let system = Path::new("/usr/lib/x86_64-linux-gnu");
    let system = if system.join("libpapi.so.7.0").exists() {
        system
    } else {
        Path::new("/usr/lib/aarch64-linux-gnu")
    };
    let theirs = build(
        "7.0",
        "7.2",
        (system, "libpapi.so.7.0"),
        Under::Plain,
        "real",
    );
    let lib = install::lib();
    let ours = build("7.0", "7.2", (&lib, "libpapi.so.7.0"), Under::Plain, "ours");
    for order in ["program-first", "library-first"] {
        let inits = |out: String| -> Vec<String> {
            out.lines()
                .filter(|l| l.contains(" init: "))
                .map(str::to_string)
                .collect()
        };
        let real = inits(run(&theirs, order, Under::Plain));
        let ours = inits(run(&ours, order, Under::Plain));
        assert_eq!(real.len(), 2, "{real:?}");
        assert!(
            real.iter()
                .any(|l| l == "library (PAPI 7.2) init: refused (-1)"),
            "{real:?}"
        );
        if order == "program-first" {
            assert_eq!(real, ours, "real PAPI 7.0 and ours, {order}");
        }
    }
    let _ = std::fs::remove_dir_all(theirs.parent().unwrap());
    let _ = std::fs::remove_dir_all(ours.parent().unwrap());
}

/// 1,000 `PAPI_library_init` calls on an initialised library, then 20 shutdowns each followed
/// by an init: every one answered with the version, and valgrind's memcheck finds nothing lost
/// (before, each call set the components up again and lost two descriptions: 89 MB over
/// 20,000 calls).
#[test]
fn a_thousand_inits_lose_nothing_under_valgrind() {
    valgrind_or_skip!();
    let dir = scratch("many-inits");
    let program = dir.join("many_inits");
    let lib = install::lib();
    cc(&[
        format!("-I{}", install::include().display()),
        crate::common::manifest()
            .join("tests/c/many_inits.c")
            .display()
            .to_string(),
        "-o".into(),
        program.display().to_string(),
        format!("-L{}", lib.display()),
        "-l:libpapi.so.7.0".into(),
        format!("-Wl,-rpath,{}", lib.display()),
    ]);
    let mut command = Command::new("valgrind");
    command
        .args([
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect",
            "--show-leak-kinds=definite,indirect",
        ])
        .arg(&program);
    let out = crate::common::run_within(&mut command, std::time::Duration::from_secs(300))
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("inits refused: 0"),
        "{out:?}"
    );
    for kind in ["definitely lost: 0 bytes", "indirectly lost: 0 bytes"] {
        assert!(
            stderr.contains(kind) || stderr.contains("All heap blocks were freed"),
            "no '{kind}':\n{stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
