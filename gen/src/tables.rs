//! `counterhal-gen tables`: the shipped tables (`events/data/tables/PART.tables`), written by
//! the events crate's own writer (its `table-writer` feature) from the files under `events/data`,
//! each read and checked by the library's readers, so that the format has one reader and one
//! writer, side by side (`events/src/table.rs`).

use std::path::Path;

use crate::GenError;

/// The tables written afresh from the data directory `data` (each part's files by name), or
/// the first file that does not read or check, with the reader's message.
///
/// # Errors
/// [`GenError::Data`] naming the file and what is wrong with it.
pub fn written(data: &Path) -> Result<Vec<(String, Vec<u8>)>, GenError> {
    if !data.join("shipped.list").is_file() {
        return Err(GenError::Data(format!(
            "{}: no shipped.list here; --data names the events crate's data directory \
             (events/data)",
            data.display()
        )));
    }
    // The writer stops at the first file it refuses, with the reader's message: that message
    // becomes the error, printed once.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(|| counterhal_events::write_shipped_tables(data));
    std::panic::set_hook(hook);
    result.map_err(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the table writer stopped".to_string());
        GenError::Data(message)
    })
}

/// Writes the tables of the data directory `data` into the directory `out`, two files per part
/// (`PART.tables`, `PART.strings`), and says where.
///
/// # Errors
/// As [`written`], or [`GenError::Io`] where a file cannot be written.
pub fn write(data: &Path, out: &Path) -> Result<Vec<String>, GenError> {
    let parts = written(data)?;
    std::fs::create_dir_all(out).map_err(|e| GenError::io(out, &e))?;
    let mut paths = Vec::new();
    for (name, bytes) in parts {
        let path = out.join(name);
        std::fs::write(&path, &bytes).map_err(|e| GenError::io(&path, &e))?;
        paths.push(path.display().to_string());
    }
    Ok(paths)
}
