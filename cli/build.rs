//! The start-up paths' code laid out together: release builds of `counterhal` for x86_64 Linux
//! link with `startup-order.ld`, which places the functions `stat`, `encode` and `info`
//! execute at start-up first in the text (written by `scripts/startup-order` from callgrind's
//! record of those paths). The kernel maps text 64 KiB around each first touch, so scattered
//! start-up code made 2.4 MiB of the 3.4 MiB text resident for `stat -- true`; together, 0.8 MiB.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=startup-order.ld");
    let var = |name: &str| env::var(name).unwrap_or_default();
    let script = Path::new(&var("CARGO_MANIFEST_DIR")).join("startup-order.ld");
    // The order is measured on x86_64 Linux (other targets execute other functions), and only
    // the release profile's layout is the one measured. Without the script (scripts/startup-order
    // writes it from a build without it), the linker's own order; its check then fails.
    if var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && var("PROFILE") == "release"
        && script.exists()
    {
        println!("cargo:rustc-link-arg-bin=counterhal=-T");
        println!("cargo:rustc-link-arg-bin=counterhal={}", script.display());
    }
}
