//! Slurm's SPANK interface (slurm/spank.h of Slurm 22.05): the functions slurmstepd, srun,
//! sbatch and salloc export to a plugin, and the items and contexts it names by number.
//!
//! # Safety
//! The functions are Slurm's, resolved when Slurm loads the plugin; each takes the handle
//! Slurm passed to the callback that calls it, valid for that call. `spank_get_item` is
//! variadic: each item is read into the one type spank.h names beside it.

use std::ffi::{CStr, CString, c_char, c_int};

/// A SPANK handle (`spank_t`), as Slurm passes it to a callback.
pub type Handle = *mut libc::c_void;

/// A SPANK option callback (`spank_opt_cb_f`).
pub type OptionCallback = extern "C" fn(c_int, *const c_char, c_int) -> c_int;

/// `struct spank_option`.
#[repr(C)]
pub struct SpankOption {
    name: *const c_char,
    arginfo: *const c_char,
    usage: *const c_char,
    has_arg: c_int,
    val: c_int,
    cb: Option<OptionCallback>,
}

/// spank.h's `enum spank_item`, the members this plugin reads.
#[derive(Clone, Copy)]
#[repr(i32)]
pub enum Item {
    /// `S_JOB_UID` (uid_t *).
    JobUid = 0,
    /// `S_JOB_ID` (uint32_t *).
    JobId = 2,
    /// `S_JOB_STEPID` (uint32_t *).
    JobStepId = 3,
    /// `S_JOB_NNODES` (uint32_t *): in srun, the step's nodes.
    JobNodes = 4,
    /// `S_JOB_LOCAL_TASK_COUNT` (uint32_t *).
    LocalTaskCount = 6,
    /// `S_JOB_ARGV` (int *, char ***).
    JobArgv = 9,
    /// `S_TASK_ID` (int *).
    TaskId = 11,
    /// `S_TASK_PID` (pid_t *).
    TaskPid = 14,
}

/// spank.h's `enum spank_context`: where the plugin is loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// `S_CTX_LOCAL`: srun.
    Local,
    /// `S_CTX_REMOTE`: slurmstepd.
    Remote,
    /// `S_CTX_ALLOCATOR`: sbatch or salloc.
    Allocator,
    /// slurmd, a prolog or epilog, or an error.
    Other,
}

unsafe extern "C" {
    fn spank_option_register(spank: Handle, option: *mut SpankOption) -> c_int;
    fn spank_get_item(spank: Handle, item: c_int, ...) -> c_int;
    fn spank_context() -> c_int;
    fn spank_getenv(spank: Handle, var: *const c_char, buf: *mut c_char, len: c_int) -> c_int;
}

/// The numbers of slurm_errno.h: `ESPANK_SUCCESS`.
pub const SUCCESS: c_int = 0;

/// spank.h's `S_CTX_LOCAL`, `S_CTX_REMOTE` and `S_CTX_ALLOCATOR`.
const CTX_LOCAL: c_int = 1;
const CTX_REMOTE: c_int = 2;
const CTX_ALLOCATOR: c_int = 3;

/// Where the plugin runs now.
pub fn context() -> Context {
    // SAFETY: spank_context takes nothing and reads Slurm's own state.
    match unsafe { spank_context() } {
        CTX_LOCAL => Context::Local,
        CTX_REMOTE => Context::Remote,
        CTX_ALLOCATOR => Context::Allocator,
        _ => Context::Other,
    }
}

/// Registers the option `--NAME[=ARGINFO]` (an optional argument where `arginfo` is given:
/// spank.h's `has_arg` 2), its value given to `callback`; its strings and table live as long
/// as the process, as Slurm keeps them.
pub fn register_option(
    spank: Handle,
    name: &str,
    arginfo: Option<&str>,
    usage: &str,
    callback: OptionCallback,
) -> c_int {
    let leak = |text: &str| CString::new(text).unwrap_or_default().into_raw() as *const c_char;
    let option = Box::leak(Box::new(SpankOption {
        name: leak(name),
        arginfo: arginfo.map_or(std::ptr::null(), leak),
        usage: leak(usage),
        has_arg: if arginfo.is_some() { 2 } else { 0 },
        val: 0,
        cb: Some(callback),
    }));
    // SAFETY: `spank` is the handle of this slurm_spank_init call; `option` and its strings
    // are leaked, so they outlive every use Slurm makes of them.
    unsafe { spank_option_register(spank, option) }
}

/// A `uint32_t`, `int` or `pid_t` item (S_JOB_ID, S_JOB_STEPID, S_JOB_LOCAL_TASK_COUNT,
/// S_JOB_UID, S_TASK_ID, S_TASK_PID), or None where Slurm has none here.
pub fn number(spank: Handle, item: Item) -> Option<u32> {
    // Each of these items is 32 bits wide (uint32_t, int, pid_t, uid_t).
    let mut value: u32 = 0;
    // SAFETY: the item is one spank.h gives as a pointer to a 32-bit integer, and `value` is
    // one; `spank` is the calling callback's handle.
    let rc = unsafe { spank_get_item(spank, item as c_int, &mut value as *mut u32) };
    (rc == SUCCESS).then_some(value)
}

/// The variable `name` of the job's environment (in slurmstepd: `spank_getenv`), or None
/// where it has none (or one longer than 4 KiB).
pub fn getenv(spank: Handle, name: &str) -> Option<String> {
    let name = CString::new(name).ok()?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: `name` is a NUL-terminated string and `buf` holds `len` bytes, which Slurm
    // fills with a NUL-terminated string (strlcpy) where it succeeds.
    let rc = unsafe {
        spank_getenv(
            spank,
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len() as c_int,
        )
    };
    (rc == SUCCESS)
        .then(|| CStr::from_bytes_until_nul(&buf).ok())
        .flatten()
        .map(|value| value.to_string_lossy().into_owned())
}

/// Sets the variable `name` to `value` in this process's environment (in srun, which passes
/// its environment to the step: `spank_setenv` works in slurmstepd alone); or why not.
pub fn setenv_here(name: &str, value: &str) -> Result<(), String> {
    let (name, value) = CString::new(name)
        .ok()
        .zip(CString::new(value).ok())
        .ok_or("a NUL in the variable")?;
    // SAFETY: two NUL-terminated strings; srun calls the plugin from its main thread while
    // it reads its options, before its threads that read the environment start.
    match unsafe { libc::setenv(name.as_ptr(), value.as_ptr(), 1) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error().to_string()),
    }
}

/// The step's command line (S_JOB_ARGV); empty where Slurm has none.
pub fn argv(spank: Handle) -> Vec<String> {
    let mut argc: c_int = 0;
    let mut argv: *mut *mut c_char = std::ptr::null_mut();
    // SAFETY: S_JOB_ARGV is (int *, char ***), and these are an int and a char ** to fill.
    let rc = unsafe {
        spank_get_item(
            spank,
            Item::JobArgv as c_int,
            &mut argc as *mut c_int,
            &mut argv as *mut *mut *mut c_char,
        )
    };
    if rc != SUCCESS || argv.is_null() {
        return Vec::new();
    }
    let argc = usize::try_from(argc).unwrap_or(0);
    // SAFETY: Slurm's argv holds argc pointers, alive for this callback.
    let words = unsafe { std::slice::from_raw_parts(argv, argc) };
    words
        .iter()
        .map_while(|&word| {
            // SAFETY: a NUL-terminated string of Slurm's, or NULL (checked).
            (!word.is_null()).then(|| unsafe { CStr::from_ptr(word) }.to_string_lossy().into())
        })
        .collect()
}

/// The plugin's arguments in plugstack.conf (`argc`, `argv` of a callback), as strings.
///
/// # Safety
/// `argv` holds `argc` NUL-terminated strings (or is NULL), as Slurm passes them.
unsafe fn arguments(argc: c_int, argv: *const *const c_char) -> Vec<String> {
    if argv.is_null() {
        return Vec::new();
    }
    let argc = usize::try_from(argc).unwrap_or(0);
    // SAFETY: the caller's promise: argc pointers.
    let words = unsafe { std::slice::from_raw_parts(argv, argc) };
    words
        .iter()
        .filter(|word| !word.is_null())
        .map(|&word| {
            // SAFETY: a NUL-terminated string (not NULL: filtered).
            unsafe { CStr::from_ptr(word) }.to_string_lossy().into()
        })
        .collect()
}

/// An option callback's argument: None where the option was given without one.
///
/// # Safety
/// `optarg` is NULL or a NUL-terminated string alive for the call.
unsafe fn optarg(optarg: *const c_char) -> Option<String> {
    // SAFETY: the caller's promise.
    (!optarg.is_null()).then(|| unsafe { CStr::from_ptr(optarg) }.to_string_lossy().into())
}

// The plugin's symbols, as spank.h's SPANK_PLUGIN(counterhal, 1) declares them.

/// The plugin's name (`SPANK_PLUGIN`'s `plugin_name`): its options' prefix in the job's
/// environment (`_SLURM_SPANK_OPTION_counterhal_counters`).
#[unsafe(no_mangle)]
#[allow(non_upper_case_globals)]
pub static plugin_name: [u8; 11] = *b"counterhal\0";

/// The plugin's kind (`plugin_type`).
#[unsafe(no_mangle)]
#[allow(non_upper_case_globals)]
pub static plugin_type: [u8; 6] = *b"spank\0";

/// The Slurm release it was built for (`SLURM_VERSION_NUMBER`), which Slurm's loader holds
/// to its own major and minor.
#[unsafe(no_mangle)]
#[allow(non_upper_case_globals)]
pub static plugin_version: u32 = parse_version(env!("COUNTERHAL_SLURM_VERSION_NUMBER"));

/// The SPANK interface's version (`spank_plugin_version`).
#[unsafe(no_mangle)]
#[allow(non_upper_case_globals)]
pub static spank_plugin_version: u32 = 1;

/// A decimal number of build.rs's, at compile time.
const fn parse_version(text: &str) -> u32 {
    let bytes = text.as_bytes();
    let mut value = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

// The callbacks Slurm calls, each handing safe values to the plugin (src/lib.rs).

/// `slurm_spank_init`, everywhere the plugin is loaded.
///
/// # Safety
/// Called by Slurm with its handle and the plugin's plugstack.conf arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_init(
    spank: Handle,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: Slurm's argc and argv.
    let arguments = unsafe { arguments(argc, argv) };
    crate::init(spank, &arguments)
}

/// `slurm_spank_init_post_opt`, everywhere, once the options were read.
///
/// # Safety
/// Called by Slurm with its handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_init_post_opt(
    _spank: Handle,
    _argc: c_int,
    _argv: *const *const c_char,
) -> c_int {
    crate::init_post_opt()
}

/// `slurm_spank_local_user_init`, in srun once the step was made.
///
/// # Safety
/// Called by Slurm with its handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_local_user_init(
    spank: Handle,
    _argc: c_int,
    _argv: *const *const c_char,
) -> c_int {
    crate::local_user_init(spank)
}

/// `slurm_spank_task_post_fork`, in slurmstepd.
///
/// # Safety
/// Called by Slurm with its handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_task_post_fork(
    spank: Handle,
    _argc: c_int,
    _argv: *const *const c_char,
) -> c_int {
    crate::task_post_fork(spank)
}

/// `slurm_spank_task_exit`, in slurmstepd.
///
/// # Safety
/// Called by Slurm with its handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_task_exit(
    spank: Handle,
    _argc: c_int,
    _argv: *const *const c_char,
) -> c_int {
    crate::task_exit(spank)
}

/// `slurm_spank_exit`, last, everywhere.
///
/// # Safety
/// Called by Slurm with its handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn slurm_spank_exit(
    _spank: Handle,
    _argc: c_int,
    _argv: *const *const c_char,
) -> c_int {
    crate::exit()
}

/// `--counters[=EVENTS]`'s callback.
pub extern "C" fn counters_option(_val: c_int, optarg: *const c_char, _remote: c_int) -> c_int {
    // SAFETY: Slurm's option argument, NULL or a string alive for this call.
    crate::counters_given(unsafe { self::optarg(optarg) })
}

/// `--counters-field-separator=SEP`'s callback.
pub extern "C" fn separator_option(_val: c_int, optarg: *const c_char, _remote: c_int) -> c_int {
    // SAFETY: as counters_option's.
    crate::separator_given(unsafe { self::optarg(optarg) })
}

/// `--counters-json`'s callback.
pub extern "C" fn json_option(_val: c_int, _optarg: *const c_char, _remote: c_int) -> c_int {
    crate::json_given()
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_conformance::skip;
    use counterhal_conformance::skip::Need;

    /// Done when: the items, contexts and option table this module names by number are
    /// spank.h's, as a C compiler reads the header.
    ///
    /// Oracle: Slurm 22.05's slurm/spank.h (Debian 12's libslurm-dev), compiled by the
    /// system's C compiler.
    #[test]
    fn the_items_contexts_and_option_table_are_spank_hs() {
        let header = std::path::Path::new("/usr/include/slurm/spank.h");
        if !header.is_file() {
            skip!(
                Need::Tools,
                "no slurm/spank.h (apt-get install libslurm-dev)"
            );
        }
        let dir = counterhal_conformance::fixtures::temp_dir()
            .join(format!("counterhal-spank-h-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = dir.join("items.c");
        std::fs::write(
            &source,
            "#include <stddef.h>\n#include <stdio.h>\n#include <slurm/spank.h>\n\
             int main(void) {\n\
             printf(\"%d %d %d %d %d %d %d %d\\n\", S_JOB_UID, S_JOB_ID, S_JOB_STEPID, S_JOB_NNODES,\n\
             S_JOB_LOCAL_TASK_COUNT, S_JOB_ARGV, S_TASK_ID, S_TASK_PID);\n\
             printf(\"%d %d %d %d\\n\", S_CTX_LOCAL, S_CTX_REMOTE, S_CTX_ALLOCATOR, ESPANK_SUCCESS);\n\
             printf(\"%zu %zu %zu\\n\", sizeof(struct spank_option),\n\
             offsetof(struct spank_option, has_arg), offsetof(struct spank_option, cb));\n\
             return 0; }\n",
        )
        .unwrap();
        let program = dir.join("items");
        match std::process::Command::new("cc")
            .arg("-o")
            .arg(&program)
            .arg(&source)
            .status()
        {
            Ok(status) => assert!(status.success(), "spank.h does not compile here"),
            Err(e) => skip!(Need::Tools, "no C compiler ({e}; apt-get install gcc)"),
        }
        let out = std::process::Command::new(&program).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        let ours = format!(
            "{} {} {} {} {} {} {} {}\n{} {} {} {}\n{} {} {}\n",
            Item::JobUid as i32,
            Item::JobId as i32,
            Item::JobStepId as i32,
            Item::JobNodes as i32,
            Item::LocalTaskCount as i32,
            Item::JobArgv as i32,
            Item::TaskId as i32,
            Item::TaskPid as i32,
            CTX_LOCAL,
            CTX_REMOTE,
            CTX_ALLOCATOR,
            SUCCESS,
            std::mem::size_of::<SpankOption>(),
            std::mem::offset_of!(SpankOption, has_arg),
            std::mem::offset_of!(SpankOption, cb),
        );
        assert_eq!(said, ours, "spank.h's numbers, then ours");
        std::fs::remove_dir_all(&dir).ok();
    }
}
