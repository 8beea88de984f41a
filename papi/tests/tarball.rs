//! The release tarball of scripts/release-tarball (the command, libcounterhal and libpapi
//! linked against glibc 2.28's symbol versions): the glibc each of its ELF files needs, and
//! the tarball unpacked where a user unpacks it and used from there.
//!
//! Oracles: binutils' readelf 2.40 (Debian 12's), which reads each file's version needs; the
//! command's own count; Debian 12's gcc and pkgconf 1.8 building a C program through the
//! tarball's pkg-config files; PAPI 7.0's `papi_avail` (Debian's papi-tools) run by the
//! tarball's `counterhal-papi`. No glibc 2.28 runs them here: Debian 10 (buster, glibc 2.28)
//! has left deb.debian.org for archive.debian.org, which CI cannot reach, so the version
//! needs are the witness (the dynamic loader refuses a file that needs a version its glibc
//! does not define, and loads one whose every version it defines).

use counterhal_conformance::fixtures::{GLIBC_FLOOR, Scratch, glibc_versions_needed};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The tarball's name, as scripts/release-tarball names it for this machine and the floor.
fn tarball_name() -> String {
    format!(
        "counterhal-{}-{}-linux-gnu-glibc{}.{}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        GLIBC_FLOOR.0,
        GLIBC_FLOOR.1
    )
}

/// The tarball unpacked into a folder of the test's own: the folder (which goes when dropped)
/// and the prefix in it; or a skip saying how to make the tarball.
macro_rules! unpacked_or_skip {
    ($what:expr) => {{
        let name = tarball_name();
        let tarball = crate::packages::dist().join(format!("{name}.tar.xz"));
        if !tarball.is_file() {
            skip!(
                Need::Tools,
                "no {} (scripts/release-tarball makes it)",
                tarball.display()
            );
        }
        let scratch = Scratch::new($what);
        let out = Command::new("tar")
            .arg("-xJf")
            .arg(&tarball)
            .arg("-C")
            .arg(scratch.path())
            .output()
            .expect("tar runs");
        assert!(out.status.success(), "tar -xJf: {}", text(&out));
        let prefix = scratch.path().join(&name);
        (scratch, prefix)
    }};
}

/// `output`'s standard streams, for a failure's message.
fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Each ELF file of the tarball (the command, libcounterhal, libpapi under its three
/// SONAMEs) needs glibc 2.28's symbol versions at most, and libc.so.6's among them.
/// Oracle: readelf's reading of each file's `.gnu.version_r`. On the build host's own link
/// (Debian 12, glibc 2.36) the command needs GLIBC_2.34 and the libraries GLIBC_2.34, and
/// this fails.
#[test]
fn every_binary_needs_glibc_2_28_at_most() {
    let (_scratch, prefix) = unpacked_or_skip!("tarball-versions");
    let version = env!("CARGO_PKG_VERSION");
    let files: Vec<PathBuf> = [
        "bin/counterhal".to_string(),
        format!("lib/libcounterhal.so.{version}"),
        "lib/counterhal-papi/libpapi.so.7.0.0.0".to_string(),
        "lib/counterhal-papi/libpapi.so.7.1.0.0".to_string(),
        "lib/counterhal-papi/libpapi.so.7.2.0.0".to_string(),
    ]
    .iter()
    .map(|file| prefix.join(file))
    .collect();
    for file in &files {
        let needed = match glibc_versions_needed(file) {
            Ok(needed) => needed,
            Err(why) if why.starts_with("readelf (binutils) could not be run") => {
                skip!(Need::Tools, "{why}")
            }
            Err(why) => panic!("{why}"),
        };
        let (newest, library) = needed.iter().max().unwrap();
        println!("{}: needs {newest} ({library}) at most", file.display());
        assert!(
            needed.iter().any(|(_, library)| library == "libc.so.6"),
            "{}: {needed:?}",
            file.display()
        );
        let past: Vec<String> = needed
            .iter()
            .filter(|(version, _)| *version > GLIBC_FLOOR)
            .map(|(version, library)| format!("{version} ({library})"))
            .collect();
        assert!(
            past.is_empty(),
            "{} needs a glibc newer than {GLIBC_FLOOR}: {}",
            file.display(),
            past.join(", ")
        );
    }
}

/// Each ELF file of the tarball unwinds with GCC's libgcc_s.so.1, as glibc's `pthread_exit`
/// and `pthread_cancel` do, and not with an unwinder of its own: its `_Unwind_Resume` is
/// libgcc_s's (undefined in the file, version GCC_3.0). Linked by zig with its own libunwind,
/// a thread that glibc unwound through the library's frames crashed (the personality
/// routine read libgcc_s's context as libunwind's). Oracle: readelf's dynamic section and
/// symbol table.
#[test]
fn every_binary_unwinds_with_libgcc_s() {
    let (_scratch, prefix) = unpacked_or_skip!("tarball-unwinder");
    let version = env!("CARGO_PKG_VERSION");
    for file in [
        "bin/counterhal".to_string(),
        format!("lib/libcounterhal.so.{version}"),
        "lib/counterhal-papi/libpapi.so.7.0.0.0".to_string(),
    ] {
        let file = prefix.join(file);
        let read = |what: &str| {
            let out = Command::new("readelf")
                .args(["-W", what])
                .arg(&file)
                .output()
                .expect("readelf runs");
            assert!(out.status.success(), "{}", text(&out));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let dynamic = read("-d");
        assert!(
            dynamic.contains("Shared library: [libgcc_s.so.1]"),
            "{}: {dynamic}",
            file.display()
        );
        let symbols = read("--dyn-syms");
        assert!(
            symbols
                .lines()
                .any(|l| l.contains(" UND _Unwind_Resume@GCC_3.0")),
            "{}: no _Unwind_Resume of libgcc_s:\n{symbols}",
            file.display()
        );
    }
}

/// The unpacked command counts here. Oracle: its own count of `true`'s task-clock.
#[test]
fn the_unpacked_command_counts() {
    let (_scratch, prefix) = unpacked_or_skip!("tarball-command");
    let out = Command::new(prefix.join("bin/counterhal"))
        .args(["stat", "-x,", "-e", "task-clock", "--", "true"])
        .output()
        .expect("the command runs");
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(",msec,task-clock,"), "{said}");
}

/// A C program finds the C API through the tarball's pkg-config file, wherever it was
/// unpacked, and counts on its libcounterhal. Oracles: gcc, pkg-config, and the program's
/// count of the pages it writes (examples/c/count.c: 16 MiB, 4096 pages).
#[test]
fn a_c_program_builds_and_counts_on_the_unpacked_library() {
    for tool in ["cc", "pkg-config"] {
        if Command::new(tool).arg("--version").output().is_err() {
            skip!(Need::Tools, "no {tool} (apt-get install gcc pkg-config)");
        }
    }
    let (scratch, prefix) = unpacked_or_skip!("tarball-capi");
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "counterhal"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .expect("pkg-config runs");
    assert!(flags.status.success(), "{}", text(&flags));
    let flags = String::from_utf8_lossy(&flags.stdout).into_owned();
    // The folders it names are the unpacked prefix's (`${pcfiledir}/../..`).
    for (flag, folder) in [("-L", "lib"), ("-I", "include")] {
        let named = flags
            .split_whitespace()
            .find_map(|word| word.strip_prefix(flag))
            .unwrap_or_else(|| panic!("no {flag} in {flags}"));
        assert_eq!(
            Path::new(named).canonicalize().unwrap(),
            prefix.join(folder).canonicalize().unwrap(),
            "{flags}"
        );
    }
    let program = scratch.path().join("count");
    let source = crate::common::manifest().join("../examples/c/count.c");
    let built = Command::new("cc")
        .arg(&source)
        .args(flags.split_whitespace())
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()))
        .arg("-o")
        .arg(&program)
        .output()
        .expect("cc runs");
    assert!(built.status.success(), "{}", text(&built));
    let out = Command::new(&program)
        .arg("page-faults")
        .output()
        .expect("the program runs");
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let faults: u64 = said
        .lines()
        .find_map(|l| l.strip_prefix("page-faults"))
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no page-faults count: {said}"));
    assert!(
        faults >= 4096,
        "{faults} faults for 4096 fresh pages: {said}"
    );
}

/// `counterhal-papi papi_avail` runs PAPI 7.0's utility on the tarball's libpapi, found
/// beside the wrapper. Oracle: papi_avail itself, which says the release it loaded.
#[test]
fn the_unpacked_wrapper_runs_papi_tools_on_the_tarballs_libpapi() {
    let papi_avail = Path::new("/usr/bin/papi_avail");
    if !papi_avail.is_file() {
        skip!(
            Need::Tools,
            "papi_avail is not installed (apt-get install papi-tools)"
        );
    }
    let (_scratch, prefix) = unpacked_or_skip!("tarball-papi");
    let wrapper = prefix.join("bin/counterhal-papi");
    let ldd = Command::new(&wrapper)
        .args(["ldd"])
        .arg(papi_avail)
        .output()
        .expect("the wrapper runs");
    let libs = text(&ldd);
    assert!(ldd.status.success(), "{libs}");
    let ours = prefix.join("lib/counterhal-papi/libpapi.so.7.0");
    assert!(
        libs.contains(&format!("libpapi.so.7.0 => {}", ours.display())),
        "{libs}"
    );
    let out = Command::new(&wrapper)
        .arg(papi_avail)
        .output()
        .expect("the wrapper runs");
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("PAPI version             : 7.0.0.0"),
        "{said}"
    );
}
