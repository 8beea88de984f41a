//! The shipped tables (`events/data/tables/`) are what `counterhal-gen tables` writes
//! from the files under `events/data` today: a change to a data file, or to a row's layout,
//! without the tables written again fails here, with the command that writes them.

use std::path::Path;

fn data() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/data")
}

#[test]
fn the_shipped_tables_are_what_the_data_files_write() {
    let written = counterhal_gen::tables::written(&data()).unwrap_or_else(|e| panic!("{e}"));
    let shipped = counterhal_events::shipped_tables();
    assert_eq!(
        written.iter().map(|w| w.0.as_str()).collect::<Vec<_>>(),
        shipped.iter().map(|s| s.0.as_str()).collect::<Vec<_>>()
    );
    for ((name, written), (_, shipped)) in written.iter().zip(&shipped) {
        assert!(
            written == shipped,
            "events/data/tables/{name} ({} bytes) is not what the data files write ({} \
             bytes): run `cargo run -p counterhal-gen -- tables` and commit the files",
            shipped.len(),
            written.len()
        );
    }
    // The writer's output is the same bytes each time (hash maps decide no order).
    let again = counterhal_gen::tables::written(&data()).unwrap_or_else(|e| panic!("{e}"));
    assert!(again == written, "two writings of the same files differ");
}

#[test]
fn a_file_the_reader_refuses_is_an_error_naming_it() {
    let dir = std::env::temp_dir().join(format!("counterhal-gen-tables-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("shipped.list"), "broken.toml\n").unwrap();
    std::fs::write(dir.join("broken.toml"), "[cpu\nid = \"x\"\n").unwrap();
    let error = counterhal_gen::tables::written(&dir)
        .unwrap_err()
        .to_string();
    assert!(error.contains("broken.toml"), "{error}");
    let error = counterhal_gen::tables::written(&dir.join("nowhere"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("shipped.list") && error.contains("events/data"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `from`'s files and folders, copied into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let into = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &into);
        } else {
            std::fs::copy(&path, &into).unwrap();
        }
    }
}

/// libpapi's files (`events/data/papi/`) are read as the others are: one that does not read,
/// or names what the library could not read back, is an error naming the file (in a copy of
/// the data directory).
#[test]
fn a_papi_file_the_writer_refuses_is_an_error_naming_it() {
    let dir = std::env::temp_dir().join(format!("counterhal-gen-papi-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_tree(&data(), &dir);
    let refused = |file: &str, text: &str| {
        let path = dir.join("papi").join(file);
        let good = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text).unwrap();
        let error = counterhal_gen::tables::written(&dir)
            .unwrap_err()
            .to_string();
        std::fs::write(&path, good).unwrap();
        error
    };
    let error = refused("presets.toml", "presets = [ { name = \"PAPI_X\" } ]");
    assert!(error.contains("events/data/papi/presets.toml"), "{error}");
    // PAPI's long description of a preset is the HAL's, the one copy libpapi reads.
    let presets = std::fs::read_to_string(data().join("papi/presets.toml")).unwrap();
    let error = refused(
        "presets.toml",
        &presets.replace(
            "long = \"Level 1 data cache misses\"",
            "long = \"L1 misses\"",
        ),
    );
    assert!(
        error.contains("events/data/papi/presets.toml")
            && error.contains("`PAPI_L1_DCM`")
            && error.contains("\"Level 1 data cache misses\""),
        "{error}"
    );
    let perf = std::fs::read_to_string(data().join("papi/perf_natives.toml")).unwrap();
    let error = refused(
        "perf_natives.toml",
        &perf.replace("modifiers = \"software\"", "modifiers = \"nowhere\""),
    );
    assert!(
        error.contains("events/data/papi/perf_natives.toml") && error.contains("nowhere"),
        "{error}"
    );
    let uncore = std::fs::read_to_string(data().join("papi/uncore_families.toml")).unwrap();
    let error = refused(
        "uncore_families.toml",
        &format!("{uncore}\n[[models]]\nids = [\"skx\"]\nfamilies = []\n"),
    );
    assert!(
        error.contains("events/data/papi/uncore_families.toml") && error.contains("`skx` twice"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
