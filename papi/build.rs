//! Gives libpapi.so the SONAME of the PAPI it stands in for, `libpapi.so.7.0`, so that a tool
//! linked against PAPI 7.0 (Debian's `libpapi7.0`) loads it through `LD_LIBRARY_PATH`.
//! scripts/install-papi installs it under that name with the links a linker looks for, and
//! copies of it with PAPI 7.1's and 7.2's SONAMEs (`libpapi.so.7.1`, `.7.2`).

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(
        os.as_str(),
        "linux" | "android" | "freebsd" | "openbsd" | "netbsd" | "dragonfly"
    ) {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpapi.so.7.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
