//! The event functions (the listing, one name's query); the module note of [`super`] holds
//! for every `unsafe` block here.

use std::ffi::{c_char, c_int};

use crate::{Handle, ListedC, code};

use super::{EventInfo, guard, handle, null, room, string, write_text};

/// Lists the events whose name or description holds `pattern` (NULL or "": all) into
/// `out[0..n)`; returns how many there are (which may exceed `n`: call again with room).
///
/// # Safety
/// See the module note; `out` may be NULL when `n` is 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_list(
    ch: *mut Handle,
    pattern: *const c_char,
    out: *mut EventInfo,
    n: usize,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live handle.
        let handle = unsafe { handle(ch) }?;
        if out.is_null() && n > 0 {
            return Err(null("out"));
        }
        let pattern = match pattern.is_null() {
            true => "",
            // SAFETY: a NUL-terminated string valid for the call.
            false => unsafe { string(pattern, "pattern") }?,
        };
        let n = room::<EventInfo>(n, "the event list")?;
        let listed = handle.list(pattern);
        let slots: &mut [EventInfo] = match n.min(listed.len()) {
            0 => &mut [],
            // SAFETY: `out` is non-NULL (checked above) and valid for `n` writes, of which
            // this takes at most `n`.
            n => unsafe { std::slice::from_raw_parts_mut(out, n) },
        };
        let ptr =
            |s: &Option<std::ffi::CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        for (slot, entry) in slots.iter_mut().zip(listed.iter()) {
            let ListedC {
                section,
                name,
                description,
                encoding,
                reason,
                usable,
            } = entry;
            *slot = EventInfo {
                section: section.as_ptr(),
                name: name.as_ptr(),
                description: description.as_ptr(),
                encoding: ptr(encoding),
                reason: ptr(reason),
                usable: c_int::from(*usable),
            };
        }
        Ok(c_int::try_from(listed.len()).unwrap_or(c_int::MAX))
    })
}

/// Whether `event` counts here: `COUNTERHAL_OK`, or the code of why not (the last error
/// says why). Its encoding is written to `encoding[0..len)` (NUL-terminated) when the name
/// exists; `encoding` may be NULL when `len` is 0. An encoding that does not fit is written
/// cut and refused with `COUNTERHAL_EINVAL`, the last error naming the length it needs (as
/// `counterhal_last_error_copy` returns the whole length), never answered `COUNTERHAL_OK`.
///
/// # Safety
/// See the module note.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn counterhal_query(
    ch: *mut Handle,
    event: *const c_char,
    encoding: *mut c_char,
    len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live handle.
        let handle = unsafe { handle(ch) }?;
        // SAFETY: a NUL-terminated string valid for the call.
        let name = unsafe { string(event, "the event name") }?;
        if encoding.is_null() && len > 0 {
            return Err(null("encoding"));
        }
        let len = room::<u8>(len, "the encoding buffer")?;
        let (text, usable) = handle.query(name);
        let shown = text.as_deref().unwrap_or("");
        // SAFETY: `encoding` is non-NULL where `len` > 0 (checked above) and valid for `len`
        // writes, within `isize::MAX` bytes.
        if len > 0 && !unsafe { write_text(encoding, len, shown) } {
            return Err(crate::encoding_cut(name, shown, len));
        }
        usable.map(|()| code::OK)
    })
}
