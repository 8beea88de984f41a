//! Hardware breakpoints: `mem:ADDR[:rwx][/len]` (perf's `mem:ADDR[/len][:access]` order is
//! accepted too), optionally followed by perf's modifiers (`mem:ADDR:x:u`).

use counterhal_hal::{Error, PerfAttr, Result};

use crate::sys::TYPE_BREAKPOINT;

/// `HW_BREAKPOINT_R`.
pub const BP_R: u32 = 1;
/// `HW_BREAKPOINT_W`.
pub const BP_W: u32 = 2;
/// `HW_BREAKPOINT_X`.
pub const BP_X: u32 = 4;

/// The encoding of a breakpoint on `address` for `access` (`BP_*` bits) over `len` bytes:
/// type 5, `bp_type`, `bp_addr` in `config1`, `bp_len` in `config2`.
pub fn encoding(address: u64, access: u32, len: u64) -> PerfAttr {
    let mut encoding = PerfAttr::new(TYPE_BREAKPOINT, 0);
    encoding.bp_type = access;
    encoding.config1 = address;
    encoding.config2 = len;
    encoding.pmu = Some("breakpoint".to_string());
    encoding
}

/// Parses `mem:ADDR[:rwx][/len][:modifiers]`; `None` when `name` does not start with `mem:`.
///
/// The access defaults to `rw`; the length to 8 for execute (sizeof(long)) and 4 otherwise.
///
/// # Errors
/// [`counterhal_hal::ErrorKind::InvalidEvent`] for a bad address, access or length.
pub fn parse(name: &str) -> Option<Result<PerfAttr>> {
    let rest = name.strip_prefix("mem:")?;
    Some(parse_rest(name, rest))
}

fn parse_rest(name: &str, rest: &str) -> Result<PerfAttr> {
    let bad = |why: String| {
        Error::invalid_event(format!("{name}: {why}"))
            .with_hint("write mem:0xADDRESS[:r|w|rw|x][/1|2|4|8], e.g. mem:0x401000:x")
    };
    // Split off `/len` and `:access` in either order.
    let (mut head, mut len_text, mut access_text) = (rest, None, None);
    if let Some((h, tail)) = head.split_once('/') {
        head = h;
        match tail.split_once(':') {
            Some((len, access)) => {
                len_text = Some(len);
                access_text = Some(access);
            }
            None => len_text = Some(tail),
        }
    }
    if let Some((h, access)) = head.split_once(':') {
        if access_text.is_some() {
            return Err(bad("access given twice".into()));
        }
        head = h;
        access_text = Some(access);
    }
    // perf's event modifiers may follow the access: `mem:ADDR:x:u`.
    let mut modifiers = "";
    if let Some((access, mods)) = access_text.and_then(|a| a.split_once(':')) {
        access_text = Some(access);
        modifiers = mods;
    }
    let address = match head.strip_prefix("0x").or_else(|| head.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => head.parse().ok(),
    }
    .ok_or_else(|| bad(format!("`{head}` is not an address")))?;
    // `mem:ADDR` alone is read-write, as perf reads it; a `:` must be followed by an access.
    if access_text == Some("") {
        return Err(bad("nothing after `:`: an access is r, w, rw or x".into()));
    }
    if name.ends_with(':') {
        return Err(bad("nothing after the last `:`".into()));
    }
    let mut access = 0;
    for letter in access_text.unwrap_or("rw").chars() {
        let bit = match letter {
            'r' => BP_R,
            'w' => BP_W,
            'x' => BP_X,
            _ => return Err(bad(format!("unknown access `{letter}`"))),
        };
        if access & bit != 0 {
            return Err(bad(format!("access `{letter}` given twice")));
        }
        access |= bit;
    }
    if access & BP_X != 0 && access != BP_X {
        return Err(bad("execute cannot be combined with read or write".into()));
    }
    let default_len = if access == BP_X {
        std::mem::size_of::<usize>() as u64
    } else {
        4
    };
    let len = match len_text {
        Some(text) => text
            .parse()
            .map_err(|_| bad(format!("`{text}` is not a length")))?,
        None => default_len,
    };
    if !matches!(len, 1 | 2 | 4 | 8) {
        return Err(bad(format!("length {len} is not 1, 2, 4 or 8")));
    }
    if access == BP_X && len != default_len {
        return Err(bad(format!(
            "an execute breakpoint has length {default_len}"
        )));
    }
    if address % len != 0 && access != BP_X {
        return Err(bad(format!(
            "address {address:#x} is not aligned to its length {len}"
        )));
    }
    let mut encoding = encoding(address, access, len);
    crate::pmus::apply_modifiers(name, modifiers, &mut encoding)?;
    Ok(encoding)
}

#[cfg(test)]
mod modifier_tests {
    use counterhal_hal::Domain;

    #[test]
    fn modifiers_after_the_access() {
        let e = super::parse("mem:0x1000:x:u").unwrap().unwrap();
        assert_eq!((e.bp_type, e.config1), (super::BP_X, 0x1000));
        assert_eq!(e.domain, Domain::ALL.with_levels(Domain::USER));
        let e = super::parse("mem:0x1000/8:w:k").unwrap().unwrap();
        assert_eq!((e.bp_type, e.config2), (super::BP_W, 8));
        assert_eq!(e.domain, Domain::ALL.with_levels(Domain::KERNEL));
        assert!(super::parse("mem:0x1000:x:q").unwrap().is_err());
        assert_eq!(
            super::parse("mem:0x1000:x").unwrap().unwrap().domain,
            Domain::ALL
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let e = parse("mem:0x1000:x").unwrap().unwrap();
        assert_eq!(
            (e.type_, e.bp_type, e.config1, e.config2),
            (5, BP_X, 0x1000, 8)
        );
        let e = parse("mem:0x1000").unwrap().unwrap();
        assert_eq!((e.bp_type, e.config2), (BP_R | BP_W, 4));
        let e = parse("mem:4096:w/8").unwrap().unwrap();
        assert_eq!((e.bp_type, e.config1, e.config2), (BP_W, 4096, 8));
        let e = parse("mem:0x1002/2:r").unwrap().unwrap();
        assert_eq!((e.bp_type, e.config1, e.config2), (BP_R, 0x1002, 2));
        assert!(parse("cycles").is_none());
    }

    #[test]
    fn errors() {
        for (name, expected) in [
            ("mem:zz", "not an address"),
            ("mem:0x1000:q", "unknown access"),
            ("mem:0x1000:rr", "given twice"),
            ("mem:0x1000:rx", "cannot be combined"),
            ("mem:0x1000/3", "not 1, 2, 4 or 8"),
            ("mem:0x1000:x/4", "has length 8"),
            ("mem:0x1001:w/4", "not aligned"),
            ("mem:0x1000/4:r:w", "unknown modifier `w`"),
            // An empty access is no access (perf reads `mem:A` as rw and refuses `mem:A::`).
            ("mem:0x0:", "nothing after `:`"),
            ("mem:0x1000::", "nothing after `:`"),
            ("mem:0x1000:x:", "nothing after the last `:`"),
        ] {
            let error = parse(name).unwrap().unwrap_err();
            assert!(error.to_string().contains(expected), "{name}: {error}");
            assert!(error.hint().is_some());
        }
    }
}
