//! Just enough of C to read libpfm4's event tables: comments stripped, `static const TYPE
//! NAME[]={ { .field = value, ... }, ... };` arrays split into entries of fields.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::GenError;

/// One `{ .field = value, ... }` initialiser: field name -> value text (strings unquoted).
pub type Fields = BTreeMap<String, String>;

/// `text` without `/* */` and `//` comments (string literals kept as they are).
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The arrays of element type `ty` in `text`: name -> entries, in file order.
pub fn arrays(text: &str, ty: &str) -> Result<BTreeMap<String, Vec<Fields>>, String> {
    let mut out = BTreeMap::new();
    let needle = format!("{ty} ");
    let mut rest = text;
    while let Some(at) = rest.find(&needle) {
        rest = &rest[at + needle.len()..];
        let Some(bracket) = rest.find('[') else { break };
        let name = rest[..bracket].trim().to_string();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let open = rest
            .find('{')
            .ok_or_else(|| format!("array `{name}`: no `{{`"))?;
        let (body, after) =
            balanced(&rest[open..]).ok_or_else(|| format!("array `{name}`: unbalanced braces"))?;
        let mut entries = Vec::new();
        for item in split_top(body, ',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let inner = item
                .strip_prefix('{')
                .and_then(|i| i.strip_suffix('}'))
                .ok_or_else(|| {
                    format!("array `{name}`: an entry is not `{{ ... }}`: {item:.60}")
                })?;
            entries.push(fields(inner).map_err(|why| format!("array `{name}`: {why}"))?);
        }
        out.insert(name, entries);
        rest = after;
    }
    Ok(out)
}

/// The initialisers of single (not array) variables of type `ty` in `text`
/// (`pfmlib_pmu_t intel_snb_support={ .name = "snb", ... };`), each as its fields; parts that
/// are not `.field = value` (a macro call such as `PFMLIB_ENCODE_PERF(...)`) and preprocessor
/// lines are left out.
///
/// # Errors
/// Unbalanced braces.
pub fn structs(text: &str, ty: &str) -> Result<Vec<Fields>, String> {
    let mut out = Vec::new();
    let needle = format!("{ty} ");
    let mut rest = text;
    while let Some(at) = rest.find(&needle) {
        rest = &rest[at + needle.len()..];
        let Some(open) = rest.find(['{', ';', '[']) else {
            break;
        };
        if !rest[open..].starts_with('{') || !rest[..open].contains('=') {
            continue;
        }
        let (body, after) =
            balanced(&rest[open..]).ok_or_else(|| format!("`{ty}`: unbalanced braces"))?;
        let body: String = body
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        let mut fields = Fields::new();
        for part in split_top(&body, ',') {
            let part = part.trim();
            if !part.starts_with('.') {
                continue;
            }
            if let Ok(one) = self::fields(part) {
                fields.extend(one);
            }
        }
        out.push(fields);
        rest = after;
    }
    Ok(out)
}

/// The text inside the braces `text` starts with, and what follows the closing brace.
fn balanced(text: &str) -> Option<(&str, &str)> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some((&text[1..i], &text[i + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` split at `sep` outside strings, braces and parentheses.
fn split_top(text: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut in_string, mut escaped, mut start) = (0i32, false, false, 0);
    for (i, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '(' => depth += 1,
            '}' | ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// `.a = 1, .b = "x", ...` as fields; adjacent string literals are joined.
fn fields(text: &str) -> Result<Fields, String> {
    let mut out = Fields::new();
    for part in split_top(text, ',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (key, value) = part
            .strip_prefix('.')
            .and_then(|p| p.split_once('='))
            .ok_or_else(|| format!("`{part:.60}` is not `.field = value`"))?;
        let value = value.trim();
        let value = if value.starts_with('"') {
            value
                .split('"')
                .skip(1)
                .step_by(2)
                .collect::<Vec<_>>()
                .concat()
        } else {
            value.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        out.insert(key.trim().to_string(), value);
    }
    Ok(out)
}

/// A C integer literal (`0x1f`, `12`), if `text` is one.
pub fn integer(text: &str) -> Option<u64> {
    // C's suffixes (`0x200000003ull`) say the type, not the value.
    let t = text.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// The flags a field ORs together (`.flags = INTEL_X86_NCOMBO | INTEL_X86_DFL`), each trimmed;
/// `0` and an absent field give none.
pub fn flags(fields: &Fields, key: &str) -> Vec<String> {
    fields
        .get(key)
        .map(|f| {
            f.split('|')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty() && s != "0")
                .collect()
        })
        .unwrap_or_default()
}

/// One libpfm4 event table: the entries of one array and every unit-mask array of its header.
pub struct Table {
    /// The event entries, in the header's order.
    pub entries: Vec<Fields>,
    /// The unit-mask arrays by name.
    pub umasks: BTreeMap<String, Vec<Fields>>,
    /// The header it was read from.
    pub path: PathBuf,
}

impl Table {
    /// An error about this table's data, naming its header.
    pub fn error(&self, why: String) -> GenError {
        GenError::Data(format!("{}: {why}", self.path.display()))
    }
}

/// Reads array `array` of `entry_type` entries, and the `umask_type` arrays they name, from
/// libpfm4's header `file` under `root` (`lib/events/FILE`).
///
/// # Errors
/// The file cannot be read, its arrays do not parse, or it has no array `array`.
pub fn read_table(
    root: &Path,
    file: &str,
    entry_type: &str,
    umask_type: &str,
    array: &str,
) -> Result<Table, GenError> {
    let path = root.join("lib/events").join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
    let text = strip_comments(&text);
    let bad = |why: String| GenError::Data(format!("{}: {why}", path.display()));
    let umasks = arrays(&text, umask_type).map_err(bad)?;
    let mut entries = arrays(&text, entry_type).map_err(bad)?;
    let entries = entries
        .remove(array)
        .ok_or_else(|| bad(format!("no array `{array}`")))?;
    Ok(Table {
        entries,
        umasks,
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_of_initialisers_are_read() {
        let text = strip_comments(
            r#"/* head, with { braces } */
static const amd64_umask_t um[]={
  { .uname = "A", .udesc = "one, \"two\" {x}", // note
    .ucode = 0x1, .uflags = AMD64_FL_DFL | AMD64_FL_NCOMBO, },
  { .uname = "B",
    .ucode = 0x2 },
};"#,
        );
        let arrays = arrays(&text, "amd64_umask_t").unwrap();
        let um = &arrays["um"];
        assert_eq!(um.len(), 2);
        assert_eq!(um[0]["uname"], "A");
        assert_eq!(um[0]["uflags"], "AMD64_FL_DFL | AMD64_FL_NCOMBO");
        assert_eq!(integer(&um[1]["ucode"]), Some(2));
        assert!(arrays_fail(
            "static const amd64_umask_t bad[]={ { .x 1 } };"
        ));
        assert!(arrays_fail(
            "static const amd64_umask_t bad[]={ { .x = 1 };"
        ));
    }

    fn arrays_fail(text: &str) -> bool {
        arrays(text, "amd64_umask_t").is_err()
    }

    #[test]
    fn integers_are_hex_or_decimal() {
        assert_eq!(integer("0x1C0"), Some(0x1c0));
        assert_eq!(integer(" 12 "), Some(12));
        assert_eq!(integer("0x200000003ull"), Some(0x2_0000_0003));
        assert_eq!(integer("AMD64_FL_DFL"), None);
    }
}
