//! PAPI's event names (`PAPI_TOT_INS`, `perf::TASK-CLOCK:u=1`, native names with unit masks and
//! qualifiers) through libpapi's entry points, as a PAPI program passes them: a code or a PAPI
//! error, never a crash; the codes a name gets map back to a name.
#![no_main]

use std::ffi::{CString, c_char, c_int};
use std::sync::Once;

use libfuzzer_sys::fuzz_target;

// libpapi's symbols, linked from its Rust library (the same code as libpapi.so).
use papi as _;
unsafe extern "C" {
    fn PAPI_library_init(version: c_int) -> c_int;
    fn PAPI_event_name_to_code(name: *const c_char, code: *mut c_int) -> c_int;
    fn PAPI_event_code_to_name(code: c_int, name: *mut c_char) -> c_int;
    fn PAPI_query_named_event(name: *const c_char) -> c_int;
}

fuzz_target!(|data: &[u8]| {
    static INIT: Once = Once::new();
    // SAFETY: called once, before any other call, with PAPI 7.0's version.
    INIT.call_once(|| assert_eq!(unsafe { PAPI_library_init(0x0700_0000) }, 0x0700_0000));
    let Ok(name) = CString::new(data) else { return };
    let mut code: c_int = 0;
    // SAFETY: a NUL-terminated name and a live out-pointer.
    let status = unsafe { PAPI_event_name_to_code(name.as_ptr(), &mut code) };
    assert!(status <= 0, "PAPI_event_name_to_code answered {status}");
    if status == 0 {
        let mut back = [0 as c_char; 1024];
        // SAFETY: PAPI_MAX_STR_LEN (128) or more bytes, as PAPI asks.
        let _ = unsafe { PAPI_event_code_to_name(code, back.as_mut_ptr()) };
    }
    // SAFETY: a NUL-terminated name.
    let _ = unsafe { PAPI_query_named_event(name.as_ptr()) };
});
