//! Trees of the tests' own under the temporary directory, laid out as the kernel lays out its
//! files.

use std::path::PathBuf;

/// The directory `counterhal-system-TAG-PID` under the temporary directory, made afresh,
/// holding `files` (each a path under it and its text).
pub(crate) fn tree(tag: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = std::env::temp_dir().join(format!("counterhal-system-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    for (file, text) in files {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}
