//! Gives libcounterhal.so its SONAME on ELF systems: `libcounterhal.so.MAJOR`, or for a 0.x
//! version `libcounterhal.so.0.MINOR` (0.x releases break compatibility at the minor number,
//! as Cargo's versions do). scripts/install-capi installs the file as
//! `libcounterhal.so.VERSION` with the two links a loader and a linker look for.

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let mut parts = version.split('.');
    let (major, minor) = (parts.next().unwrap_or("0"), parts.next().unwrap_or("0"));
    let soversion = if major == "0" {
        format!("0.{minor}")
    } else {
        major.to_string()
    };
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(
        os.as_str(),
        "linux" | "android" | "freebsd" | "openbsd" | "netbsd" | "dragonfly"
    ) {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcounterhal.so.{soversion}");
    }
    println!("cargo:rustc-env=COUNTERHAL_SOVERSION={soversion}");
    println!("cargo:rerun-if-changed=build.rs");
}
