//! What the C API's test programs share: the libraries they link, built where the tests find
//! them.
#![allow(dead_code)] // each test binary uses its part

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where libcounterhal.so and libcounterhal.a are: the profile folder above this test, where
/// `cargo build -p counterhal-capi` puts them. Cargo does not build a cdylib or staticlib for
/// the package's own tests, so they are built here first (once; later runs find them fresh).
pub fn library_dir() -> PathBuf {
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
                .args(release.then_some("--release"))
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
