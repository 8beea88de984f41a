//! The descriptions of the CPU model's native events, read at run time from the libpfm4 this
//! system has, as PAPI 7.0's perf_event component gives them (it links libpfm4 and shows its
//! text). The event data compiled into counterhal carries no prose (DESIGN.md: descriptions
//! are read from the user's system); where libpfm4 is installed (`libpfm.so.4`, which
//! Debian's PAPI depends on), its tables are.
//!
//! libpfm4 is opened with `dlopen` on first need, never linked: without it the descriptions
//! are empty, as before. The library above holds the opened interface ([`Libpfm`]) behind its
//! own lock, which serialises the calls (`pfm_initialize` and the lookups share libpfm4's
//! global tables).
//!
//! # Safety
//! The functions are called through pointers `dlsym` gave for their names, with the C
//! signatures of libpfm4's `perfmon/pfmlib.h`; the structures passed are `#[repr(C)]` mirrors
//! of its `pfm_event_info_t` and `pfm_event_attr_info_t` (version 4.x layouts, each with its
//! `size` set as libpfm4 asks; this module's test compares sizes and offsets with the
//! installed header). The strings libpfm4 returns live in its static tables and are copied at
//! once.

use std::cell::OnceCell;
use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};

/// libpfm4's `pfm_event_info_t`.
#[repr(C)]
struct EventInfo {
    name: *const c_char,
    desc: *const c_char,
    equiv: *const c_char,
    size: usize,
    code: u64,
    pmu: c_int,
    dtype: c_int,
    idx: c_int,
    nattrs: c_int,
    reserved: c_int,
    flags: c_uint,
}

/// libpfm4's `pfm_event_attr_info_t`.
#[repr(C)]
struct AttrInfo {
    name: *const c_char,
    desc: *const c_char,
    equiv: *const c_char,
    size: usize,
    code: u64,
    kind: c_int,
    idx: c_int,
    ctrl: c_int,
    flags: c_uint,
    default: u64,
}

// The layouts of libpfm4 4.x on LP64 (checked against the header by the test).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<EventInfo>() == 64);
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<AttrInfo>() == 64);

/// libpfm4's `PFM_SUCCESS`, `PFM_OS_NONE` and `PFM_ATTR_UMASK`.
const SUCCESS: c_int = 0;
const OS_NONE: c_int = 0;
const ATTR_UMASK: c_int = 1;

type Initialize = unsafe extern "C" fn() -> c_int;
type FindEvent = unsafe extern "C" fn(*const c_char) -> c_int;
type GetEventInfo = unsafe extern "C" fn(c_int, c_int, *mut EventInfo) -> c_int;
type GetAttrInfo = unsafe extern "C" fn(c_int, c_int, c_int, *mut AttrInfo) -> c_int;

/// The libpfm4 functions used, from an initialised library.
struct Api {
    find_event: FindEvent,
    event_info: GetEventInfo,
    attr_info: GetAttrInfo,
}

// SAFETY: plain function pointers into a library that stays loaded; calls are serialised
// by the lock of the value that holds the [`Libpfm`] (the library's).
unsafe impl Send for Api {}

/// libpfm4 as the library found it: opened and initialised at the first description asked
/// for, then kept (`None` where it is not installed or fails to initialise). Its holder
/// serialises the calls. (A later holder opens the same: the handle is never closed, and
/// `pfm_initialize` returns its first answer again.)
#[derive(Default)]
pub struct Libpfm(OnceCell<Option<Api>>);

fn open() -> Option<Api> {
    // SAFETY: a C string; the handle is kept for the life of the process (never closed).
    let handle =
        unsafe { libc::dlopen(c"libpfm.so.4".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return None;
    }
    let symbol = |name: &CStr| -> Option<*mut c_void> {
        // SAFETY: a live handle and a C string.
        let found = unsafe { libc::dlsym(handle, name.as_ptr()) };
        (!found.is_null()).then_some(found)
    };
    let initialize = symbol(c"pfm_initialize")?;
    let find_event = symbol(c"pfm_find_event")?;
    let event_info = symbol(c"pfm_get_event_info")?;
    let attr_info = symbol(c"pfm_get_event_attr_info")?;
    /// Each address as the function type of its name.
    macro_rules! as_fn {
        ($address:expr, $type:ty) => {{
            // SAFETY: the address is libpfm4's function of that name, whose C signature
            // (perfmon/pfmlib.h) is `$type`.
            unsafe { std::mem::transmute::<*mut c_void, $type>($address) }
        }};
    }
    let initialize = as_fn!(initialize, Initialize);
    // SAFETY: libpfm4's initialisation (it returns its first answer to any later call).
    if unsafe { initialize() } != SUCCESS {
        return None;
    }
    let api = Api {
        find_event: as_fn!(find_event, FindEvent),
        event_info: as_fn!(event_info, GetEventInfo),
        attr_info: as_fn!(attr_info, GetAttrInfo),
    };
    Some(api)
}

/// A C string of libpfm4's, copied; empty for NULL.
fn copied(text: *const c_char) -> String {
    if text.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string of libpfm4's static tables.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// libpfm4's description of event `event` of its PMU `pmu` (`icl`, `BR_INST_RETIRED`) and of
/// each of its unit masks (name, description), where the installed libpfm4 has the PMU active
/// here and the event; `None` otherwise.
pub fn describe(
    libpfm: &Libpfm,
    pmu: &str,
    event: &str,
) -> Option<(String, Vec<(String, String)>)> {
    let api = libpfm.0.get_or_init(open).as_ref()?;
    let name = CString::new(format!("{pmu}::{event}")).ok()?;
    // SAFETY: an initialised libpfm4 and a C string.
    let idx = unsafe { (api.find_event)(name.as_ptr()) };
    if idx < 0 {
        return None;
    }
    // SAFETY: all-zero is a valid value of these plain C structures.
    let mut info: EventInfo = unsafe { std::mem::zeroed() };
    info.size = std::mem::size_of::<EventInfo>();
    // SAFETY: an event index libpfm4 gave and a structure of the size it is told.
    if unsafe { (api.event_info)(idx, OS_NONE, &mut info) } != SUCCESS {
        return None;
    }
    let mut masks = Vec::new();
    for i in 0..info.nattrs {
        // SAFETY: as above.
        let mut attr: AttrInfo = unsafe { std::mem::zeroed() };
        attr.size = std::mem::size_of::<AttrInfo>();
        // SAFETY: an attribute index below the event's count and a structure of its size.
        if unsafe { (api.attr_info)(idx, i, OS_NONE, &mut attr) } == SUCCESS
            && attr.kind == ATTR_UMASK
        {
            masks.push((copied(attr.name), copied(attr.desc)));
        }
    }
    Some((copied(info.desc), masks))
}

#[cfg(test)]
mod tests {
    use super::{AttrInfo, EventInfo};
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;
    use std::mem::{offset_of, size_of};

    /// The mirrors' sizes and the offsets read are the installed header's (oracle: libpfm4's
    /// `perfmon/pfmlib.h`, through the C compiler).
    #[test]
    fn the_structures_are_libpfm4s() {
        let dir = counterhal_conformance::fixtures::Scratch::new("pfm-layout");
        let source = dir.join("layout.c");
        std::fs::write(
            &source,
            "#include <stdio.h>\n#include <stddef.h>\n#include <perfmon/pfmlib.h>\n\
             int main(void) { printf(\"%zu %zu %zu %zu %zu %zu %zu %zu\", \
             sizeof(pfm_event_info_t), offsetof(pfm_event_info_t, desc), \
             offsetof(pfm_event_info_t, size), offsetof(pfm_event_info_t, nattrs), \
             sizeof(pfm_event_attr_info_t), offsetof(pfm_event_attr_info_t, desc), \
             offsetof(pfm_event_attr_info_t, size), offsetof(pfm_event_attr_info_t, type)); }\n",
        )
        .unwrap();
        let program = dir.join("layout");
        let built = std::process::Command::new("cc")
            .arg(&source)
            .arg("-o")
            .arg(&program)
            .output();
        if !built.is_ok_and(|b| b.status.success()) {
            skip!(
                Need::Tools,
                "libpfm4's headers are not installed (apt-get install libpfm4-dev)"
            );
        }
        let out = std::process::Command::new(&program).output().unwrap();
        let theirs = String::from_utf8(out.stdout).unwrap();
        let ours = format!(
            "{} {} {} {} {} {} {} {}",
            size_of::<EventInfo>(),
            offset_of!(EventInfo, desc),
            offset_of!(EventInfo, size),
            offset_of!(EventInfo, nattrs),
            size_of::<AttrInfo>(),
            offset_of!(AttrInfo, desc),
            offset_of!(AttrInfo, size),
            offset_of!(AttrInfo, kind),
        );
        assert_eq!(ours, theirs);
    }

    /// The layout test leaves nothing in the temporary directory, passed, failed or skipped
    /// for want of libpfm4's headers (before, a skip left `counterhal-pfm-layout-PID`).
    #[test]
    fn the_layout_test_leaves_nothing() {
        let run = counterhal_conformance::fixtures::left_in_temp_dir(
            &["--exact", "sys::pfm::tests::the_structures_are_libpfm4s"],
            &[],
        );
        assert!(run.output.contains("running 1 test"), "{}", run.output);
        assert!(run.left.is_empty(), "left: {:?}\n{}", run.left, run.output);
    }

    /// A PMU or an event libpfm4 does not have gives no description, never an error (the
    /// texts themselves are compared with libpfm4's own in `tests/unit_masks.rs`).
    #[test]
    fn a_missing_pmu_or_event_has_no_description() {
        let libpfm = super::Libpfm::default();
        assert_eq!(super::describe(&libpfm, "no_such_pmu", "CYCLES"), None);
        assert_eq!(super::describe(&libpfm, "perf", "NO_SUCH_EVENT"), None);
    }
}
