//! The C API as `scripts/install-capi` installs it, used as a C tool's build would use it:
//! the shared library carries its SONAME and is found through its links; pkg-config's lines
//! link a program three ways (the shared library; the archive inside a dynamic program; all
//! static with `--static` and `-static`), and each program counts. Oracles: readelf (the
//! SONAME, the NEEDED entries, a static program's missing interpreter), pkg-config itself.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{SONAME, library_dir, manifest};

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The environment `scripts/install-capi` builds in: the profile this test was built in and
/// its target folder, so that what the tests built is installed.
fn install_env() -> [(&'static str, PathBuf); 2] {
    let lib = library_dir();
    let target = lib.parent().unwrap().to_path_buf();
    let profile = if lib.ends_with("release") {
        "release"
    } else {
        // The tests' own profile, whose folder is `debug`.
        "test"
    };
    [
        ("COUNTERHAL_CAPI_PROFILE", PathBuf::from(profile)),
        ("CARGO_TARGET_DIR", target),
    ]
}

/// Installs into a fresh prefix with the profile this test was built in (reusing its build),
/// and says what the script printed.
fn install() -> (PathBuf, String) {
    let prefix = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prefix);
    let out = Command::new(manifest().join("../scripts/install-capi"))
        .arg(&prefix)
        .envs(install_env())
        .output()
        .expect("scripts/install-capi runs");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "install-capi failed:\n{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (prefix, said)
}

/// `readelf -d` of `file`: its dynamic section, or "" for a file with none.
fn dynamic(file: &Path) -> String {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(file)
        .output()
        .expect("readelf (binutils) is installed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// pkg-config's words for `args` over the installed prefix.
fn pkg_config(prefix: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .args(args)
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .expect("pkg-config is installed");
    assert!(
        out.status.success(),
        "pkg-config {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Builds tests/c/counting.c with `flags` into `name` and runs it; asserts it counted.
fn build_and_run(prefix: &Path, name: &str, flags: &[String]) -> PathBuf {
    let program = prefix.join(name);
    let out = Command::new("cc")
        .arg("-std=c99")
        .arg(manifest().join("tests/c/counting.c"))
        .arg("-o")
        .arg(&program)
        .args(flags)
        .output()
        .expect("a C compiler (cc) is installed");
    assert!(
        out.status.success(),
        "cc {flags:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&program)
        .env("LD_LIBRARY_PATH", prefix.join("lib"))
        .env(
            "COUNTERHAL_REGION_OUTPUT",
            prefix.join(format!("{name}.regions")),
        )
        .env("COUNTERHAL_REGION_EVENTS", "task-clock,page-faults")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success() && stdout.contains("all checks passed"),
        "{name}: {stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    program
}

#[test]
fn the_installed_library_links_through_pkg_config_three_ways() {
    if Command::new("pkg-config")
        .arg("--version")
        .output()
        .is_err()
    {
        skip!(
            Need::Tools,
            "pkg-config is not installed (apt-get install pkg-config)"
        );
    }
    let (prefix, said) = install();
    let lib = prefix.join("lib");
    // No loader searches a scratch prefix: the script says how a program finds the library.
    assert!(
        said.contains(&format!(
            "{} is not a directory the loader searches",
            lib.display()
        )) && said.contains("-Wl,-rpath"),
        "{said}"
    );
    let version = env!("CARGO_PKG_VERSION");
    // The file, its SONAME link and the linker's link.
    let file = lib.join(format!("libcounterhal.so.{version}"));
    assert!(file.is_file(), "{}", file.display());
    assert!(dynamic(&file).contains(&format!("Library soname: [{SONAME}]")));
    assert_eq!(
        std::fs::read_link(lib.join(SONAME)).unwrap(),
        Path::new(&format!("libcounterhal.so.{version}"))
    );
    assert_eq!(
        std::fs::read_link(lib.join("libcounterhal.so")).unwrap(),
        Path::new(SONAME)
    );

    // 1. The shared library: the program needs the SONAME.
    let mut flags = pkg_config(&prefix, &["--cflags", "--libs", "counterhal"]);
    flags.push(format!("-Wl,-rpath,{}", lib.display()));
    let shared = build_and_run(&prefix, "shared", &flags);
    assert!(dynamic(&shared).contains(&format!("Shared library: [{SONAME}]")));

    // 2. The archive inside a dynamic program: no libcounterhal at run time.
    let flags = pkg_config(&prefix, &["--cflags", "--libs", "counterhal-static"]);
    let archive = build_and_run(&prefix, "archive", &flags);
    let needed = dynamic(&archive);
    assert!(!needed.contains("libcounterhal"), "{needed}");

    // 3. All static: pkg-config --static with -static (no -lgcc_s, which has no archive).
    let mut flags = pkg_config(&prefix, &["--cflags", "--libs", "--static", "counterhal"]);
    assert!(!flags.iter().any(|f| f == "-lgcc_s"), "{flags:?}");
    flags.insert(0, "-static".to_string());
    let all_static = build_and_run(&prefix, "static", &flags);
    assert!(
        !dynamic(&all_static).contains("NEEDED"),
        "a static program needs no shared library"
    );
    let _ = std::fs::remove_dir_all(&prefix);
}

/// Installed into /usr/local, a directory Debian's loader searches
/// (/etc/ld.so.conf.d/libc.conf), as root, the library loads at once: install-capi runs
/// ldconfig, and a program built with pkg-config's lines alone (no rpath, no
/// LD_LIBRARY_PATH) counts. Before, it failed with "error while loading shared libraries:
/// libcounterhal.so.0.1: cannot open shared object file" until ldconfig ran. Run in a mount
/// namespace of its own: /usr/local a fresh tmpfs, /etc an overlay whose writes (the loader's
/// cache) go to the test's scratch; the machine's are not touched.
///
/// Oracle: Debian 12's dynamic loader and ldconfig (glibc 2.36), and pkg-config.
#[test]
fn installed_where_the_loader_searches_a_program_loads_it_at_once() {
    if !crate::c::running_as_root() {
        skip!(
            Need::Privilege,
            "installing into /usr/local (in a mount namespace) takes root"
        );
    }
    for (tool, package) in [("pkg-config", "pkg-config"), ("unshare", "util-linux")] {
        if Command::new(tool).arg("--version").output().is_err() {
            skip!(
                Need::Tools,
                "{tool} is not installed (apt-get install {package})"
            );
        }
    }
    let scratch = counterhal_conformance::fixtures::Scratch::new("install-usr-local");
    std::fs::create_dir_all(scratch.join("upper")).unwrap();
    std::fs::create_dir_all(scratch.join("work")).unwrap();
    let script = r#"
        mount -t tmpfs tmpfs /usr/local
        mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc
        "$2" /usr/local
        cc -std=c99 "$3" -o "$1/program" $(pkg-config --cflags --libs counterhal)
        "$1/program"
    "#;
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-ec",
            script,
            "sh",
        ])
        .arg(scratch.path())
        .arg(manifest().join("../scripts/install-capi"))
        .arg(manifest().join("tests/c/counting.c"))
        .envs(install_env())
        .env_remove("LD_LIBRARY_PATH")
        .env("COUNTERHAL_REGION_OUTPUT", scratch.join("regions"))
        .env("COUNTERHAL_REGION_EVENTS", "task-clock,page-faults")
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("ran ldconfig"), "{said}");
    assert!(
        out.status.success() && said.contains("all checks passed"),
        "{said}"
    );
}
