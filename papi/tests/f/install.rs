//! The installed tree the Fortran tests build against: `scripts/install-papi` run once per
//! test binary into a prefix of its own in the target folder (`papi-installed-BINARY`), with
//! this test binary's profile, so that it installs the library `common::library_dir` built
//! (nothing is built twice).
//! A test file takes it with `#[path = "f/install.rs"] mod install;` beside `mod common;`.
#![allow(dead_code)] // each test binary uses its part

use std::path::{Path, PathBuf};
use std::process::Command;

/// The prefix holding `lib/` and `include/` as `scripts/install-papi` leaves them.
pub fn installed_tree() -> PathBuf {
    static TREE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    TREE.get_or_init(|| {
        // .../target/PROFILE_DIR/papi-soname: the library is built there first.
        let profile_dir = crate::common::library_dir().parent().unwrap().to_path_buf();
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            // The tests' own profile, whose folder is `debug`.
            Some("debug") => "test".to_string(),
            Some(other) => other.to_string(),
            None => panic!("no profile folder in {}", profile_dir.display()),
        };
        // One prefix per test binary, beside the library, replaced at each run.
        let binary = std::env::current_exe().unwrap();
        let binary = binary.file_stem().unwrap().to_string_lossy();
        let binary = binary.split('-').next().unwrap();
        let prefix = profile_dir.join(format!("papi-installed-{binary}"));
        let _ = std::fs::remove_dir_all(&prefix);
        let script = crate::common::manifest().join("../scripts/install-papi");
        let out = Command::new(&script)
            .arg(&prefix)
            .env("COUNTERHAL_PAPI_PROFILE", profile)
            .env("CARGO_TARGET_DIR", profile_dir.parent().unwrap())
            .output()
            .expect("scripts/install-papi runs");
        assert!(
            out.status.success(),
            "scripts/install-papi {} failed:\n{}",
            prefix.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        prefix
    })
    .clone()
}

/// The installed tree's `include/`.
pub fn include() -> PathBuf {
    installed_tree().join("include")
}

/// The installed tree's `lib/`.
pub fn lib() -> PathBuf {
    installed_tree().join("lib")
}

/// Whether `path` exists in the installed tree with the bytes of `source`.
pub fn same_file(path: &Path, source: &Path) -> bool {
    std::fs::read(path).ok() == std::fs::read(source).ok()
}
