//! The pre-parsed form of a shipped TOML file (the build script's half; `src/tree.rs` reads
//! it): the tree the `toml` crate's parser makes of the text (`toml::de::DeTable`), each value
//! with its byte span in the text, so that the library deserializes a shipped file without
//! lexing it and with the spans its messages would give.
//!
//! The encoding, little-endian: a node is a tag byte, the span's start and end (`u32` each),
//! then by tag: 0 string (a string body); 1 integer (`i64`); 2 float (`f64`); 3 boolean (one
//! byte); 4 array (`u32` count, `u32` length in bytes of what follows, the nodes); 5 table
//! (`u32` count, `u32` length in bytes of what follows, then per entry the key as a string
//! node without its tag and the value node). The root is a table node. The lengths let a
//! reader step over a value it does not need.
//!
//! A string body is where the string stands, `u32` start and end: in the text, wherever the
//! text holds its bytes as they are (a string without escapes: nearly all), else (a string with
//! escapes) in the tree's second text, `decoded`, of those strings' values, start marked with
//! [`DECODED`]. The reader slices one of two `str`s, already UTF-8, and checks nothing.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The tags, shared with `src/tree.rs`.
pub const STRING: u8 = 0;
pub const INTEGER: u8 = 1;
pub const FLOAT: u8 = 2;
pub const BOOLEAN: u8 = 3;
pub const ARRAY: u8 = 4;
pub const TABLE: u8 = 5;

/// The bit a string body's start has when the string stands in `decoded`, not in the text.
pub const DECODED: u32 = 1 << 31;

/// A text's pre-parsed form.
pub struct Encoded {
    /// The nodes.
    pub nodes: Vec<u8>,
    /// The values of the strings whose bytes the text does not hold as they are.
    pub decoded: String,
}

/// The pre-parsed form of `text`, or why it has none (a parse error, a datetime, an integer
/// beyond `i64`, a float the parser would refuse, a text of 2 GiB or more).
pub fn encode(text: &str) -> Result<Encoded, String> {
    let root = DeTable::parse(text).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(text.len());
    let mut decoded = String::new();
    let span = root.span();
    head(&mut out, TABLE, span.start, span.end)?;
    Writer {
        out: &mut out,
        text,
        decoded: &mut decoded,
    }
    .table(root.get_ref())?;
    if u32_of(text.len().max(decoded.len()))? >= DECODED {
        return Err(format!(
            "{} bytes: beyond the pre-parsed form's offsets",
            text.len()
        ));
    }
    Ok(Encoded {
        nodes: out,
        decoded,
    })
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

/// Writes nodes of `text`'s tree.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
    text: &'a str,
    decoded: &'a mut String,
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

impl Writer<'_> {
    /// A string body: where `value` stands in the text within `span` (the value's or key's
    /// span), or else in `decoded`.
    fn string(&mut self, value: &str, span: std::ops::Range<usize>) -> Result<(), String> {
        let within = self.text.get(span.clone()).and_then(|t| t.find(value));
        let (start, flag) = match within {
            Some(offset) => (span.start + offset, 0),
            None => {
                let start = match self.decoded.find(value) {
                    Some(start) => start,
                    None => {
                        self.decoded.push_str(value);
                        self.decoded.len() - value.len()
                    }
                };
                (start, DECODED)
            }
        };
        self.out
            .extend_from_slice(&(u32_of(start)? | flag).to_le_bytes());
        self.out
            .extend_from_slice(&u32_of(start + value.len())?.to_le_bytes());
        Ok(())
    }

    fn table(&mut self, table: &DeTable<'_>) -> Result<(), String> {
        let start = body_start(self.out, table.len())?;
        for (key, value) in table {
            let span = key.span();
            self.out
                .extend_from_slice(&u32_of(span.start)?.to_le_bytes());
            self.out.extend_from_slice(&u32_of(span.end)?.to_le_bytes());
            self.string(key.get_ref(), span)?;
            self.node(value)?;
        }
        body_end(self.out, start)
    }

    fn node(&mut self, value: &Spanned<DeValue<'_>>) -> Result<(), String> {
        let span = value.span();
        let (start, end) = (span.start, span.end);
        let out = &mut *self.out;
        match value.get_ref() {
            DeValue::String(text) => {
                head(out, STRING, start, end)?;
                self.string(text, span)?;
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
                    self.node(item)?;
                }
                body_end(self.out, body)?;
            }
            DeValue::Table(entries) => {
                head(out, TABLE, start, end)?;
                self.table(entries)?;
            }
        }
        Ok(())
    }
}
