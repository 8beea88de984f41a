//! The shipped preset tables are what `counterhal-gen papi` writes from PAPI 7.2's table as
//! Debian sid's libpapi7.2 installs it (in the current-releases lab's root), and every one of
//! them loads.

use std::path::{Path, PathBuf};

use counterhal_conformance::skip::Need;
use counterhal_gen::papi;

/// Oracle: PAPI 7.2's own table (Debian sid's libpapi7.2 7.2.0-2+b2, in the sid root that
/// `scripts/current-lab` makes under `COUNTERHAL_CURRENT_LAB`, by default
/// /var/cache/counterhal-lab): regenerating from it gives the shipped files byte for byte, one
/// per model with presets, and no other file.
#[test]
fn shipped_presets_are_the_generators_output() {
    let lab = std::env::var_os("COUNTERHAL_CURRENT_LAB")
        .map_or_else(|| PathBuf::from("/var/cache/counterhal-lab"), PathBuf::from);
    let csv = lab
        .join("sid")
        .join(papi::DEBIAN_PATH.trim_start_matches('/'));
    if !csv.exists() {
        counterhal_conformance::skip!(
            Need::Tools,
            "{} is absent (scripts/current-lab installs libpapi-dev in the sid root)",
            csv.display()
        );
    }
    // A folder of its own (tables.rs copies the data tree into `counterhal-gen-papi-PID`).
    let out = std::env::temp_dir().join(format!("counterhal-gen-presets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let written = papi::generate(&csv, papi::DEBIAN_SOURCE, &out).expect("generates");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/data/generated/presets");
    let mut names: Vec<String> = std::fs::read_dir(&shipped)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut generated: Vec<String> = written
        .iter()
        .map(|p| {
            Path::new(p)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    generated.sort();
    assert_eq!(
        names, generated,
        "the shipped preset files are the generated ones"
    );
    for name in &names {
        let ours = std::fs::read_to_string(shipped.join(name)).unwrap();
        let fresh = std::fs::read_to_string(out.join(name)).unwrap();
        assert_eq!(ours, fresh, "{name} differs from the generator's output");
    }
    std::fs::remove_dir_all(&out).ok();
    assert!(names.len() >= 40, "{} models", names.len());
}
