//! The pre-parsed form of a shipped TOML file (the build script's half; `src/tree.rs` reads
//! it): the tree the `toml` crate's parser makes of the text (`toml::de::DeTable`), each value
//! with its byte span in the text, so that the library deserializes a shipped file without
//! lexing it and with the spans its messages would give.
//!
//! The encoding, little-endian: a node is a tag byte, the span's start and end (`u32` each),
//! then by tag: 0 string (`u32` length, UTF-8 bytes); 1 integer (`i64`); 2 float (`f64`);
//! 3 boolean (one byte); 4 array (`u32` count, `u32` length in bytes of what follows, the
//! nodes); 5 table (`u32` count, `u32` length in bytes of what follows, then per entry the key
//! as a string node without its tag and the value node). The root is a table node. The lengths
//! let a reader step over a value it does not need.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The tags, shared with `src/tree.rs`.
pub const STRING: u8 = 0;
pub const INTEGER: u8 = 1;
pub const FLOAT: u8 = 2;
pub const BOOLEAN: u8 = 3;
pub const ARRAY: u8 = 4;
pub const TABLE: u8 = 5;

/// The pre-parsed form of `text`, or why it has none (a parse error, a datetime, an integer
/// beyond `i64`, a float the parser would refuse).
pub fn encode(text: &str) -> Result<Vec<u8>, String> {
    let root = DeTable::parse(text).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(text.len());
    let span = root.span();
    head(&mut out, TABLE, span.start, span.end)?;
    table(&mut out, root.get_ref())?;
    Ok(out)
}

fn u32_of(n: usize) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("{n} does not fit the pre-parsed form's u32"))
}

fn head(out: &mut Vec<u8>, tag: u8, start: usize, end: usize) -> Result<(), String> {
    out.push(tag);
    out.extend_from_slice(&u32_of(start)?.to_le_bytes());
    out.extend_from_slice(&u32_of(end)?.to_le_bytes());
    Ok(())
}

fn bytes(out: &mut Vec<u8>, text: &str) -> Result<(), String> {
    out.extend_from_slice(&u32_of(text.len())?.to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

/// Reserves a body's length and returns where it goes.
fn body_start(out: &mut Vec<u8>, count: usize) -> Result<usize, String> {
    out.extend_from_slice(&u32_of(count)?.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    Ok(out.len())
}

/// Writes the length of the body that began at `start`.
fn body_end(out: &mut [u8], start: usize) -> Result<(), String> {
    let length = u32_of(out.len() - start)?.to_le_bytes();
    out[start - 4..start].copy_from_slice(&length);
    Ok(())
}

fn table(out: &mut Vec<u8>, table: &DeTable<'_>) -> Result<(), String> {
    let start = body_start(out, table.len())?;
    for (key, value) in table {
        let span = key.span();
        out.extend_from_slice(&u32_of(span.start)?.to_le_bytes());
        out.extend_from_slice(&u32_of(span.end)?.to_le_bytes());
        bytes(out, key.get_ref())?;
        node(out, value)?;
    }
    body_end(out, start)
}

fn node(out: &mut Vec<u8>, value: &Spanned<DeValue<'_>>) -> Result<(), String> {
    let span = value.span();
    let (start, end) = (span.start, span.end);
    match value.get_ref() {
        DeValue::String(text) => {
            head(out, STRING, start, end)?;
            bytes(out, text)?;
        }
        DeValue::Integer(n) => {
            // As the toml crate's deserializer reads one: an i64 where it fits.
            let n = i64::from_str_radix(n.as_str(), n.radix())
                .map_err(|e| format!("integer {n} at {start}: {e} (beyond i64)"))?;
            head(out, INTEGER, start, end)?;
            out.extend_from_slice(&n.to_le_bytes());
        }
        DeValue::Float(f) => {
            let parsed: f64 = f
                .as_str()
                .parse()
                .map_err(|e| format!("float {f} at {start}: {e}"))?;
            if parsed.is_infinite() && !f.as_str().contains("inf") {
                return Err(format!("float {f} at {start} overflows"));
            }
            head(out, FLOAT, start, end)?;
            out.extend_from_slice(&parsed.to_le_bytes());
        }
        DeValue::Boolean(b) => {
            head(out, BOOLEAN, start, end)?;
            out.push(u8::from(*b));
        }
        DeValue::Datetime(_) => {
            return Err(format!(
                "a datetime at {start}: the pre-parsed form has none (no shipped file needs one)"
            ));
        }
        DeValue::Array(items) => {
            head(out, ARRAY, start, end)?;
            let body = body_start(out, items.len())?;
            for item in items.iter() {
                node(out, item)?;
            }
            body_end(out, body)?;
        }
        DeValue::Table(entries) => {
            head(out, TABLE, start, end)?;
            table(out, entries)?;
        }
    }
    Ok(())
}
