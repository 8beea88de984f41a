//! The C API's string entry points (`counterhal_open`'s backend, `counterhal_query` and
//! `counterhal_set_add`'s event names, region names) with any bytes: a code, never a crash or
//! a hang. Counting on this thread's software and hardware events where the machine has them.
#![no_main]

use std::ffi::{CString, c_char, c_int, c_void};

use libfuzzer_sys::fuzz_target;

// The C API's symbols, linked from its Rust library (the same code as libcounterhal.so).
use capi as _;
unsafe extern "C" {
    fn counterhal_open(out: *mut *mut c_void, backend: *const c_char) -> c_int;
    fn counterhal_close(handle: *mut c_void);
    fn counterhal_query(
        handle: *mut c_void,
        event: *const c_char,
        encoding: *mut c_char,
        len: usize,
    ) -> c_int;
    fn counterhal_set_create(handle: *mut c_void, out: *mut *mut c_void) -> c_int;
    fn counterhal_set_add(set: *mut c_void, event: *const c_char) -> c_int;
    fn counterhal_set_destroy(set: *mut c_void);
    fn counterhal_region_begin(name: *const c_char) -> c_int;
    fn counterhal_region_end(name: *const c_char) -> c_int;
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = CString::new(rest) else { return };
    // SAFETY: each call gets NUL-terminated strings, live out-pointers and buffers of the
    // length it is told; every handle and set made here is closed here.
    unsafe {
        let mut handle = std::ptr::null_mut();
        match first % 4 {
            0 => {
                if counterhal_open(&mut handle, text.as_ptr()) == 0 {
                    counterhal_close(handle);
                }
            }
            1 | 2 => {
                if counterhal_open(&mut handle, std::ptr::null()) != 0 {
                    return;
                }
                let mut encoding = [0 as c_char; 64];
                let len = usize::from(first >> 2) % encoding.len();
                let _ = counterhal_query(handle, text.as_ptr(), encoding.as_mut_ptr(), len);
                let mut set = std::ptr::null_mut();
                if first % 4 == 2 && counterhal_set_create(handle, &mut set) == 0 {
                    let _ = counterhal_set_add(set, text.as_ptr());
                    let _ = counterhal_set_add(set, text.as_ptr());
                    counterhal_set_destroy(set);
                }
                counterhal_close(handle);
            }
            _ => {
                if counterhal_region_begin(text.as_ptr()) == 0 {
                    let _ = counterhal_region_end(text.as_ptr());
                }
            }
        }
    }
});
