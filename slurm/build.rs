//! The Slurm release this plugin is built for: `SLURM_VERSION_NUMBER` of
//! /usr/include/slurm/slurm_version.h (Debian's libslurm-dev; another header with
//! COUNTERHAL_SLURM_VERSION_H), which Slurm's loader compares with its own, major and minor
//! (src/common/plugin.c, `_verify_syms`). Without the header the plugin says version 0, which
//! every Slurm refuses by name ("Incompatible Slurm plugin"), and the build warns.

fn main() {
    let header = std::env::var("COUNTERHAL_SLURM_VERSION_H")
        .unwrap_or_else(|_| "/usr/include/slurm/slurm_version.h".to_string());
    println!("cargo:rerun-if-env-changed=COUNTERHAL_SLURM_VERSION_H");
    println!("cargo:rerun-if-changed={header}");
    let version = std::fs::read_to_string(&header)
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let value = line.strip_prefix("#define SLURM_VERSION_NUMBER")?.trim();
                u32::from_str_radix(value.strip_prefix("0x")?, 16).ok()
            })
        })
        .unwrap_or_else(|| {
            println!(
                "cargo:warning=no SLURM_VERSION_NUMBER in {header} (apt-get install \
                 libslurm-dev): the plugin is built for no Slurm release and Slurm refuses it"
            );
            0
        });
    println!("cargo:rustc-env=COUNTERHAL_SLURM_VERSION_NUMBER={version}");
}
