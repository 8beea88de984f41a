//! A cgroup's `cgroup` label: its path below the mount, as `/proc/PID/cgroup` shows it, where
//! the path is UTF-8 (a label is); otherwise an escape of its bytes that no other path shares.

use std::borrow::Cow;
use std::path::Path;

/// The text of the cgroup path `name` (below the mount; empty: the mount), which `--cgroups`
/// patterns match and which is its label less the leading `/`: the path itself where it is UTF-8 and holds no
/// backslash before `X` and two hexadecimal digits. Otherwise each byte that is not UTF-8 is
/// written `\XHH` (upper-case hexadecimal, `\XFF`), and the backslashes the path holds right
/// before such an escape, or before `X` and two upper-case hexadecimal digits, are doubled:
/// so two paths never share a text, and systemd's own escapes (`\x2d`, a lower-case `x`) stay
/// as they are.
pub(crate) fn text(name: &Path) -> Cow<'_, str> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = name.as_os_str().as_bytes();
    if let Ok(text) = std::str::from_utf8(bytes)
        && !text.contains("\\X")
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(bytes.len() + 16);
    for chunk in bytes.utf8_chunks() {
        let invalid = chunk.invalid();
        push_doubling(&mut out, chunk.valid(), !invalid.is_empty());
        for byte in invalid {
            out.push_str(&format!("\\X{byte:02X}"));
        }
    }
    Cow::Owned(out)
}

/// Whether `rest` begins as an escape does after its backslash: `X` and two upper-case
/// hexadecimal digits.
fn escape_like(rest: &[u8]) -> bool {
    let hex = |b: &u8| matches!(b, b'0'..=b'9' | b'A'..=b'F');
    rest.first() == Some(&b'X') && rest.get(1..3).is_some_and(|h| h.iter().all(hex))
}

/// Adds `text` to `out` with each run of backslashes before what looks like an escape
/// doubled (`escape_follows`: one follows `text`).
fn push_doubling(out: &mut String, text: &str, escape_follows: bool) {
    let mut run = 0;
    for (at, c) in text.char_indices() {
        if c == '\\' {
            run += 1;
            continue;
        }
        if run > 0 {
            let times = if escape_like(&text.as_bytes()[at..]) {
                2
            } else {
                1
            };
            out.extend(std::iter::repeat_n('\\', run * times));
            run = 0;
        }
        out.push(c);
    }
    let times = if escape_follows { 2 } else { 1 };
    out.extend(std::iter::repeat_n('\\', run * times));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    /// The bytes a text stands for: the inverse of [`text`], written from its rule alone (a
    /// run of backslashes before `XHH` is halved, and where it was odd the last one with `XHH`
    /// is the byte HH).
    fn bytes_of(text: &str) -> Vec<u8> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        let mut at = 0;
        while at < b.len() {
            if b[at] != b'\\' {
                out.push(b[at]);
                at += 1;
                continue;
            }
            let run = b[at..].iter().take_while(|&&c| c == b'\\').count();
            at += run;
            if !escape_like(&b[at..]) {
                out.extend(std::iter::repeat_n(b'\\', run));
                continue;
            }
            out.extend(std::iter::repeat_n(b'\\', run / 2));
            if run % 2 == 1 {
                let hex = std::str::from_utf8(&b[at + 1..at + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                at += 3;
            }
        }
        out
    }

    /// Every path is read back from its text (so no two share one), UTF-8 paths are their
    /// own text (systemd's `\x2d` escapes included), and a text is always UTF-8.
    ///
    /// Oracle: the decoding rule, written apart from the encoder, over every path of up to
    /// four bytes from an alphabet of the bytes that matter (backslash, `X`, hexadecimal
    /// digits, `/`, and bytes that are not UTF-8 alone or begin a character).
    #[test]
    fn every_path_has_a_text_of_its_own() {
        assert_eq!(
            text(Path::new("system.slice/a.service")),
            "system.slice/a.service"
        );
        let systemd = "system.slice/systemd-fsck@dev-disk-by\\x2duuid-1.service";
        assert_eq!(text(Path::new(systemd)), systemd);
        assert_eq!(text(Path::new("a\"b\nc\\d")), "a\"b\nc\\d");
        let raw = |b: &[u8]| text(Path::new(OsStr::from_bytes(b))).into_owned();
        assert_eq!(raw(b"app/\xff"), "app/\\XFF");
        assert_eq!(raw(b"\\XFF"), "\\\\XFF");
        assert_eq!(raw(b"\\\xff"), "\\\\\\XFF");
        assert_ne!(
            raw(b"a\xfe"),
            raw(b"a\xff"),
            "two such names keep two labels"
        );
        let alphabet: &[u8] = b"\\XF0x/\xff\xc3\xa9";
        let mut texts = std::collections::HashMap::new();
        let mut path = Vec::new();
        for length in 0..=4u32 {
            for mut n in 0..alphabet.len().pow(length) {
                path.clear();
                for _ in 0..length {
                    path.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                let text = raw(&path);
                assert_eq!(bytes_of(&text), path, "{text}");
                if std::str::from_utf8(&path).is_ok_and(|p| !p.contains("\\X")) {
                    assert_eq!(text.as_bytes(), path);
                }
                if let Some(other) = texts.insert(text.clone(), path.clone()) {
                    panic!("{other:?} and {path:?} share {text}");
                }
            }
        }
    }
}
