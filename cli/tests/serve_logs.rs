//! `counterhal serve`'s log: every line it writes on standard error is logfmt, as Prometheus
//! and its exporters log, opening with `time=` (RFC 3339, UTC, to the millisecond), `level=`
//! (`info`, `warn`, `error`) and `msg=`.
//!
//! Oracle: go-logfmt v0.6.1's grammar (its decoder, decode.go: a record is a line; pairs
//! are separated by bytes up to the space; a key is bytes above the space but `=` and `"`; a
//! value is such bytes or a quoted string with JSON's escapes and `\'`, unquoted as its
//! `unquoteBytes`), read strictly by [`parse`]: each key has an `=`, a key is given once, one
//! space between pairs, and a value is quoted exactly where go-logfmt's encoder quotes it
//! (`needsQuotedValueRune`), so each line is also what go-logfmt would have written.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::*;
use crate::serve::get;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The pairs of one logfmt line, in order: `Err` with where and why it is not logfmt, read
/// strictly (see the module's oracle).
pub fn parse(line: &str) -> Result<Vec<(String, String)>, String> {
    let bytes = line.as_bytes();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !pairs.is_empty() {
            if bytes[at] != b' ' {
                return Err(format!("at {at}: no space between pairs"));
            }
            at += 1;
        }
        let start = at;
        while at < bytes.len() && bytes[at] > b' ' && bytes[at] != b'=' && bytes[at] != b'"' {
            at += 1;
        }
        let key = &line[start..at];
        if key.is_empty() {
            return Err(format!("at {at}: no key"));
        }
        if bytes.get(at) != Some(&b'=') {
            return Err(format!("at {at}: the key {key} has no `=`"));
        }
        at += 1;
        let value = if bytes.get(at) == Some(&b'"') {
            let (value, end) = quoted(line, at)?;
            if !needs_quotes(&value) {
                return Err(format!(
                    "at {at}: {value:?} is quoted, which go-logfmt does not"
                ));
            }
            at = end;
            value
        } else {
            let start = at;
            while at < bytes.len() && bytes[at] > b' ' {
                if matches!(bytes[at], b'=' | b'"') || bytes[at] == 0x7f {
                    return Err(format!("at {at}: unexpected {:?}", bytes[at] as char));
                }
                at += 1;
            }
            let value = &line[start..at];
            if needs_quotes(value) {
                return Err(format!("at {start}: {value:?} is not quoted"));
            }
            value.to_string()
        };
        if pairs.iter().any(|(k, _)| k == key) {
            return Err(format!("the key {key} is given twice"));
        }
        pairs.push((key.to_string(), value));
    }
    if pairs.is_empty() {
        return Err("an empty line".to_string());
    }
    Ok(pairs)
}

/// Whether go-logfmt's encoder quotes `value` (`needsQuotedValueRune`, and `null`).
fn needs_quotes(value: &str) -> bool {
    value == "null"
        || value
            .chars()
            .any(|c| c <= ' ' || c == '=' || c == '"' || c == '\u{7f}' || c == '\u{fffd}')
}

/// The quoted string at `start` of `line` unquoted, and where it ends; its escapes those
/// go-logfmt's `unquoteBytes` takes, and no control character raw.
fn quoted(line: &str, start: usize) -> Result<(String, usize), String> {
    let mut value = String::new();
    let mut chars = line[start + 1..].char_indices();
    while let Some((offset, c)) = chars.next() {
        let at = start + 1 + offset;
        match c {
            '"' => return Ok((value, at + 1)),
            '\\' => {
                let escaped = match chars.next().map(|(_, e)| e) {
                    Some(e @ ('"' | '\\' | '/' | '\'')) => e,
                    Some('b') => '\u{8}',
                    Some('f') => '\u{c}',
                    Some('n') => '\n',
                    Some('r') => '\r',
                    Some('t') => '\t',
                    Some('u') => {
                        let hex: String = (0..4)
                            .filter_map(|_| chars.next())
                            .map(|(_, h)| h)
                            .collect();
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == 4)
                            .and_then(char::from_u32)
                            .ok_or(format!("at {at}: a bad \\u escape {hex:?}"))?
                    }
                    other => return Err(format!("at {at}: an unknown escape {other:?}")),
                };
                value.push(escaped);
            }
            c if c < ' ' || c == '\u{7f}' => {
                return Err(format!("at {at}: a raw control character {c:?}"));
            }
            c => value.push(c),
        }
    }
    Err(format!("at {start}: an unterminated quoted value"))
}

/// The value of `key` among `pairs`.
pub fn field<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Milliseconds since the epoch of an RFC 3339 time in UTC to the millisecond
/// (`2026-11-27T13:35:53.123Z`), or `None` where it has another form.
fn millis(time: &str) -> Option<u128> {
    let b = time.as_bytes();
    let form = b"dddd-dd-ddTdd:dd:dd.dddZ";
    let fits = b.len() == form.len()
        && b.iter().zip(form).all(|(c, f)| {
            if *f == b'd' {
                c.is_ascii_digit()
            } else {
                c == f
            }
        });
    if !fits {
        return None;
    }
    let n = |range: std::ops::Range<usize>| time[range].parse::<i64>().unwrap();
    let (year, month, day) = (n(0..4), n(5..7), n(8..10));
    let (hour, minute, second, milli) = (n(11..13), n(14..16), n(17..19), n(20..23));
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    // Days since the epoch (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second;
    u128::try_from(seconds * 1000 + milli).ok()
}

/// Now, in milliseconds since the epoch.
fn now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// The strict reader refuses what go-logfmt refuses or would not write, and reads what it
/// writes (go-logfmt v0.6.1's decode_test.go and encode_test.go cases).
#[test]
fn the_strict_reader_takes_go_logfmt_and_nothing_looser() {
    let read = parse(r#"a=1 b="bar baz" c="\"\\\n\u0001" d= e="null" f=\"#).unwrap();
    let values: Vec<&str> = read.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(values, ["1", "bar baz", "\"\\\n\u{1}", "", "null", "\\"]);
    for bad in [
        "a",           // a key without `=`
        "a=1  b=2",    // two spaces
        " a=1",        // a leading space
        "a=1 ",        // a trailing space
        "a=\"x",       // unterminated
        "a=b=c",       // `=` in a bare value
        "a=\"b\"c",    // bytes after a quoted value
        "a=\"x\\qy\"", // an unknown escape
        "a=\"x\ty\"",  // a raw tab
        "a=\"b\"",     // quoted where go-logfmt writes it bare
        "a=null",      // null bare, which go-logfmt quotes
        "a=1 a=2",     // a key twice
        "\"a\"=1",     // a quote in a key
        "",            // nothing
    ] {
        assert!(parse(bad).is_err(), "{bad:?} was read: {:?}", parse(bad));
    }
    assert_eq!(millis("1970-01-01T00:00:00.000Z"), Some(0));
    assert_eq!(millis("2024-02-29T23:59:59.999Z"), Some(1_709_251_199_999));
    assert_eq!(millis("2024-02-29T23:59:59Z"), None);
    assert_eq!(millis("2024-02-29T23:59:59.999+01:00"), None);
}

/// `counterhal serve` with its standard error in a file, killed when dropped.
struct Logged {
    child: Child,
    log: PathBuf,
}

impl Logged {
    /// What it has written on standard error so far.
    fn said(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
        std::fs::remove_file(&self.log).ok();
    }
}

/// Every line serve writes in a run is logfmt: its start (the address, the cgroups counted,
/// an event that does not open), scrapes, a web configuration refused on `SIGHUP` (an error)
/// and the drain on `SIGTERM`. Each opens with `time`, `level` and `msg`; the time is RFC
/// 3339 UTC to the millisecond, within the run; the levels are info, warn and error, each
/// met; the first line's `url` is where it serves.
#[test]
fn every_line_serve_writes_is_logfmt() {
    serve_or_skip!();
    let scratch = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-serve-logs-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let web = scratch.join("web.yml");
    std::fs::write(
        &web,
        "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n",
    )
    .unwrap();
    let log = scratch.join("stderr.log");
    let mut args = vec![
        "serve",
        "--listen",
        "127.0.0.1:0",
        "-e",
        "task-clock,nosuchpmu/event=0x1/",
        "--web.config.file",
        web.to_str().unwrap(),
    ];
    if counterhal::cgroups::root(&counterhal::system::System::host()).is_ok() {
        // Every top-level cgroup matched, one followed.
        args.extend(["--cgroups", "^[^/]+$", "--max-cgroups", "1"]);
    }
    let began = now();
    let child = Command::new(bin())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .expect("start counterhal serve");
    let mut served = Logged { child, log };
    let waited = Instant::now();
    let address: SocketAddr = loop {
        let said = served.said();
        let url = said.lines().next().and_then(|line| {
            let pairs = parse(line).ok()?;
            Some(field(&pairs, "url")?.to_string())
        });
        if let Some(address) = url
            .as_deref()
            .and_then(|url| url.strip_prefix("http://")?.split('/').next()?.parse().ok())
        {
            break address;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(10)
                && served.child.try_wait().ok().flatten().is_none(),
            "serve did not say where it serves: {said}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    for _ in 0..3 {
        let (status, _) = get(address, "/metrics", None);
        assert_eq!(status, Some(200));
    }
    // A configuration that does not read, then SIGHUP: an error, and serving on.
    std::fs::write(&web, "basic_auth_users:\n  prometheus: \"not a hash\"\n").unwrap();
    let signal = |name: &str| {
        counterhal_conformance::fixtures::send_signal(served.child.id() as i32, name)
            .unwrap_or_else(|e| panic!("kill {name}: {e}"));
    };
    signal("-HUP");
    let waited = Instant::now();
    while !served.said().contains("SIGHUP") && waited.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, _) = get(address, "/metrics", None);
    assert_eq!(status, Some(200), "{}", served.said());
    signal("-TERM");
    let waited = Instant::now();
    while served.child.try_wait().ok().flatten().is_none()
        && waited.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let ended = now();
    let said = served.said();
    std::fs::remove_dir_all(&scratch).ok();
    eprintln!("{said}");

    let mut levels = std::collections::BTreeSet::new();
    for line in said.lines() {
        let pairs = parse(line).unwrap_or_else(|why| panic!("not logfmt: {why}: {line}"));
        let keys: Vec<&str> = pairs.iter().take(3).map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["time", "level", "msg"], "{line}");
        let time = millis(&pairs[0].1).unwrap_or_else(|| panic!("not RFC 3339 UTC ms: {line}"));
        assert!(
            (began..=ended).contains(&time),
            "{time} is outside the run, {began} to {ended}: {line}"
        );
        let level = pairs[1].1.as_str();
        assert!(["info", "warn", "error"].contains(&level), "{line}");
        assert!(!pairs[2].1.is_empty(), "no message: {line}");
        levels.insert(level.to_string());
    }
    assert_eq!(
        levels.into_iter().collect::<Vec<_>>(),
        ["error", "info", "warn"],
        "{said}"
    );
    let lines: Vec<Vec<(String, String)>> = said.lines().filter_map(|l| parse(l).ok()).collect();
    let with = |msg: &str| lines.iter().find(|pairs| field(pairs, "msg") == Some(msg));
    let refused = with("not counted here").expect("the event that did not open");
    assert_eq!(
        field(refused, "event"),
        Some("nosuchpmu/event=0x1/"),
        "{said}"
    );
    assert_eq!(field(refused, "level"), Some("warn"), "{said}");
    let drained = with("SIGTERM: exiting").expect("the drain");
    assert_eq!(field(drained, "unfinished"), Some("0"), "{said}");
}
