//! What the C API's test programs share: the libraries they link, built where the tests find
//! them.
#![allow(dead_code)] // each test binary uses its part

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where libcounterhal.so and libcounterhal.a are: the profile folder above this test, where
/// `cargo build -p counterhal-capi` puts them. Cargo does not build a cdylib or staticlib for
/// the package's own tests, so they are built here first (once; later runs find them fresh).
pub fn library_dir() -> PathBuf {
    // What the tests leave in the temporary directory goes when this process exits.
    counterhal_conformance::fixtures::clean_up_at_exit();
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
            let target = dir.parent().unwrap();
            let release = dir.file_name().is_some_and(|n| n == "release");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let out = Command::new(cargo)
                .args(["build", "-p", "counterhal-capi", "--target-dir"])
                .arg(target)
                // The tests' own profile (`test`, whose folder is `debug`): the libraries share
                // what the tests built, and no second profile's artifacts fill the folder.
                .args(["--profile", if release { "release" } else { "test" }])
                .current_dir(manifest())
                .output()
                .expect("cargo runs");
            assert!(
                out.status.success(),
                "building libcounterhal failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                dir.join("libcounterhal.so").is_file() && dir.join("libcounterhal.a").is_file(),
                "libcounterhal.so and .a are in {}",
                dir.display()
            );
            soname_link(&dir);
            dir
        })
        .clone()
}

pub fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The library's SONAME (`libcounterhal.so.0.1`), which programs linked with it load.
pub const SONAME: &str = concat!("libcounterhal.so.", env!("COUNTERHAL_SOVERSION"));

/// Makes the SONAME a link to `libcounterhal.so` in `dir`, as an installation has it, so that
/// programs linked there find the library by the name they record.
fn soname_link(dir: &Path) {
    let link = dir.join(SONAME);
    if std::fs::symlink_metadata(&link).is_err() {
        match std::os::unix::fs::symlink("libcounterhal.so", &link) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => panic!("cannot link {}: {e}", link.display()),
        }
    }
}

/// `tests/c/STEM.c` built with `-Wall -Wextra -Werror` against libcounterhal.so (once per
/// test binary and stem), linked with pthreads.
pub fn c_program(stem: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(s, _)| s == stem) {
        return path.clone();
    }
    let lib = library_dir();
    let dir = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-{stem}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join(stem);
    let out = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-g", "-I"])
        .arg(manifest().join("include"))
        .arg(manifest().join(format!("tests/c/{stem}.c")))
        .arg("-o")
        .arg(&program)
        .arg(format!("-L{}", lib.display()))
        .arg("-lcounterhal")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lpthread")
        .output()
        .expect("a C compiler (cc) is installed");
    assert!(
        out.status.success(),
        "cc {stem}.c failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    built.push((stem.to_string(), program.clone()));
    program
}

/// Runs `program MODE`: its standard output when every check held (it printed `ok MODE`),
/// `None` when it said why the mode cannot run here (exit 3, the reason printed).
pub fn run_mode(program: &Path, mode: &str) -> Option<String> {
    // Modes count tracepoints, which need tracefs: the library mounts nothing unasked.
    let _ = counterhal_conformance::fixtures::tracefs_mounted();
    let out = Command::new(program).arg(mode).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) {
        eprintln!("{mode}: {}", stdout.trim());
        return None;
    }
    assert!(
        out.status.success() && stdout.contains(&format!("ok {mode}")),
        "{} {mode} failed ({}):\n{stdout}{stderr}",
        program.display(),
        out.status
    );
    Some(stdout)
}
