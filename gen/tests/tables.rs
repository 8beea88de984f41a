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
