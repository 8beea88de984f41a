//! libsde's tools interface (`sde_ti_*`), found in the process as PAPI 7.0's `sde` component
//! finds it; the two functions libsde looks for in libpapi are the C interface's
//! (`papi_sde_check_overflow_status`, `papi_sde_set_timer_for_overflow`, in the `abi` module).
//!
//! PAPI 7.0 splits software-defined events in two: libsde.so, which a library links to export
//! its counters (`papi_sde_init`, `papi_sde_register_counter`, ...) and which holds them, and
//! the `sde` component in libpapi, which reads them through eleven `sde_ti_*` functions it
//! looks up with `dlsym` in the whole process (src/components/sde/sde.c, `sde_load_sde_ti`).
//! Neither library links the other: libsde.so.1 needs libc alone (its dynamic section), and
//! looks up libpapi's two functions the same way (src/sde_lib/sde_lib.c,
//! `obtain_papi_symbols`). So Debian's libsde works beside this libpapi unchanged, and
//! `tests/sde.rs` runs PAPI's own SDE tests on the pair.
//!
//! # Safety
//! The `sde_ti_*` functions are called through pointers `dlsym` gave for their names, with
//! the C signatures of PAPI 7.0's `sde_lib_ti.h`; the strings they return are copied at once.

use std::ffi::{CStr, c_char, c_int, c_longlong, c_void};

type ReadCounter = unsafe extern "C" fn(u32, *mut c_longlong) -> c_int;
type WriteCounter = unsafe extern "C" fn(u32, c_longlong) -> c_int;
type OfCounter = unsafe extern "C" fn(u32) -> c_int;
type NameToCode = unsafe extern "C" fn(*const c_char, *mut u32) -> c_int;
type SetOverflow = unsafe extern "C" fn(u32, c_int) -> c_int;
type EventText = unsafe extern "C" fn(c_int) -> *mut c_char;
type Count = unsafe extern "C" fn() -> c_int;

/// libsde's tools interface: the functions PAPI 7.0's component calls (`sde_lib_ti.h`).
#[derive(Clone, Copy)]
pub struct Api {
    read_counter: ReadCounter,
    write_counter: WriteCounter,
    reset_counter: OfCounter,
    name_to_code: NameToCode,
    set_counter_overflow: SetOverflow,
    event_name: EventText,
    event_description: EventText,
    num_reg_events: Count,
    shutdown: Count,
}

/// The address of `name` in the process (the executable and every library loaded
/// globally), as `dlsym` on `dlopen(NULL)` finds it; `None` where no object defines it.
fn lookup(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: RTLD_DEFAULT searches the global scope; `name` is a C string.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!found.is_null()).then_some(found)
}

/// Looks libsde's interface up in the process (at `PAPI_library_init`, as PAPI's component
/// does): `None` unless every one of its functions was found (the component is then
/// disabled, "libsde API not found"). The library keeps what it found with its components.
pub fn load() -> Option<Api> {
    /// Each pointer as the function type of its name.
    macro_rules! find {
        ($name:literal, $type:ty) => {{
            let address = lookup($name)?;
            // SAFETY: `address` is the function libsde exports under this name, whose C
            // signature (sde_lib_ti.h) is `$type`.
            unsafe { std::mem::transmute::<*mut c_void, $type>(address) }
        }};
    }
    (|| {
        // Needed by PAPI 7.0's timer that polls registered counters, which ours does not
        // have; looked up all the same, as PAPI enables the component only with all eleven.
        let _: OfCounter = find!(c"sde_ti_is_simple_counter", OfCounter);
        let _: OfCounter = find!(c"sde_ti_is_counter_set_to_overflow", OfCounter);
        Some(Api {
            read_counter: find!(c"sde_ti_read_counter", ReadCounter),
            write_counter: find!(c"sde_ti_write_counter", WriteCounter),
            reset_counter: find!(c"sde_ti_reset_counter", OfCounter),
            name_to_code: find!(c"sde_ti_name_to_code", NameToCode),
            set_counter_overflow: find!(c"sde_ti_set_counter_overflow", SetOverflow),
            event_name: find!(c"sde_ti_get_event_name", EventText),
            event_description: find!(c"sde_ti_get_event_description", EventText),
            num_reg_events: find!(c"sde_ti_get_num_reg_events", Count),
            shutdown: find!(c"sde_ti_shutdown", Count),
        })
    })()
}

/// A C string libsde owns, copied (`None` for NULL).
fn owned(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: libsde returns NUL-terminated strings it keeps while the counter lives; this
    // copies at once.
    Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}

impl Api {
    /// `sde_ti_read_counter`: the counter's value (for a recorder or a counting set, the
    /// address of a buffer libsde allocated for the caller, as PAPI hands it on); an SDE
    /// code (PAPI's values) on failure.
    pub fn read(&self, id: u32) -> Result<i64, i32> {
        let mut value: c_longlong = 0;
        // SAFETY: libsde's function; `value` is valid for its write.
        match unsafe { (self.read_counter)(id, &mut value) } {
            0 => Ok(value),
            e => Err(e),
        }
    }

    /// `sde_ti_write_counter`.
    pub fn write(&self, id: u32, value: i64) -> i32 {
        // SAFETY: libsde's function, given plain values.
        unsafe { (self.write_counter)(id, value) }
    }

    /// `sde_ti_reset_counter`: the counter's current value becomes its zero.
    pub fn reset(&self, id: u32) -> i32 {
        // SAFETY: libsde's function, given a plain value.
        unsafe { (self.reset_counter)(id) }
    }

    /// `sde_ti_name_to_code` of `LIBRARY::COUNTER`: the counter's id (a placeholder's when the
    /// library has not registered it yet, as libsde answers), or an SDE code.
    pub fn name_to_code(&self, name: &CStr) -> Result<u32, i32> {
        let mut id = 0u32;
        // SAFETY: libsde's function; `name` is a C string and `id` valid for its write.
        match unsafe { (self.name_to_code)(name.as_ptr(), &mut id) } {
            0 => Ok(id),
            e => Err(e),
        }
    }

    /// `sde_ti_set_counter_overflow`: 0 when nothing more is needed (a created counter, which
    /// libsde checks at each increment, or a placeholder), above 0 when the counter must be
    /// polled, below 0 (an SDE code) on refusal.
    pub fn set_overflow(&self, id: u32, threshold: i32) -> i32 {
        // SAFETY: libsde's function, given plain values.
        unsafe { (self.set_counter_overflow)(id, threshold) }
    }

    /// `sde_ti_get_event_name`: `LIBRARY::COUNTER`, `None` for an id no counter has.
    pub fn name(&self, id: u32) -> Option<String> {
        let id = c_int::try_from(id).ok()?;
        // SAFETY: libsde's function, given a plain value; its result is copied at once.
        owned(unsafe { (self.event_name)(id) })
    }

    /// `sde_ti_get_event_description`.
    pub fn description(&self, id: u32) -> Option<String> {
        let id = c_int::try_from(id).ok()?;
        // SAFETY: libsde's function, given a plain value; its result is copied at once.
        owned(unsafe { (self.event_description)(id) })
    }

    /// `sde_ti_get_num_reg_events`: how many ids libsde has given (unregistered ones
    /// included).
    pub fn num_events(&self) -> i32 {
        // SAFETY: libsde's function, with no arguments.
        unsafe { (self.num_reg_events)() }
    }

    /// `sde_ti_shutdown`, at `PAPI_shutdown`.
    pub fn shutdown(&self) -> i32 {
        // SAFETY: libsde's function, with no arguments.
        unsafe { (self.shutdown)() }
    }
}
