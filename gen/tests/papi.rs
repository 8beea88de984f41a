//! The shipped preset tables are what `counterhal-gen papi` writes from PAPI's table as
//! Debian's libpapi7.0 installs it, and every one of them loads.

use std::path::Path;

use counterhal_conformance::skip::Need;
use counterhal_gen::papi;

/// Oracle: PAPI 7.0's own table (Debian libpapi7.0 7.0.0-2): regenerating from it gives the
/// shipped files byte for byte, one per model with presets, and no other file.
#[test]
fn shipped_presets_are_the_generators_output() {
    let csv = Path::new(papi::DEBIAN_PATH);
    if !csv.exists() {
        counterhal_conformance::skip!(
            Need::Tools,
            "{} is absent (Debian package libpapi7.0)",
            papi::DEBIAN_PATH
        );
    }
    let out = std::env::temp_dir().join(format!("counterhal-gen-papi-{}", std::process::id()));
    let written = papi::generate(csv, papi::DEBIAN_SOURCE, &out).expect("generates");
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
