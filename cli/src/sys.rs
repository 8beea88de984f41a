//! The command's system calls: `--log-fd N` and `--control fd:CTL,ACK`, descriptors this
//! process was given, used as they are (perf's rule) rather than reopened through
//! `/dev/fd/N`; and the locale's
//! thousands separator, which perf's counts are grouped with (`setlocale(LC_ALL, "")`, then
//! `%'` formats); and the C library's POSIX basic regular expressions (`regcomp`, `regexec`),
//! which perf matches `--for-each-cgroup` patterns with; and standard output set aside for
//! `stat record -o -`; and, on Linux, the capabilities this process is permitted made
//! effective (`capget`, `capset`).
//!
//! # Safety
//!
//! A descriptor number is borrowed only after the OS has said it is open in this process
//! (its fdinfo under procfs on Linux, `fstat` of `/dev/fd/N` elsewhere), at start-up, before any
//! other thread of this process opens or closes descriptors; it is duplicated at once, and only
//! the duplicate (owned) leaves this module. A compiled regular expression is owned by one
//! [`BasicRegex`], boxed so that it never moves after `regcomp` filled it, and freed once, on
//! drop; patterns and names reach the C library as NUL-terminated copies. `capget` and
//! `capset` read and write the two `#[repr(C)]` words of capability(7)'s version 3, whose
//! layout is pinned below.

use std::fs::File;
use std::os::fd::BorrowedFd;

use counterhal_system::System;

/// `O_ACCMODE` and `O_RDONLY`, the access bits of a descriptor's flags (every Linux
/// architecture's values).
#[cfg(target_os = "linux")]
const ACCESS_MODE: u32 = 0o3;
#[cfg(target_os = "linux")]
const READ_ONLY: u32 = 0o0;
#[cfg(target_os = "linux")]
const WRITE_ONLY: u32 = 0o1;

/// Descriptor `fd` of this process, duplicated (close-on-exec) as a file to write to;
/// `system` says how it is open.
///
/// # Errors
/// A descriptor that is not open (`is not an open descriptor`), or (where the OS says, Linux)
/// open for reading only (`is open for reading only, not for writing`).
pub fn writable_descriptor(system: &System, fd: u32) -> Result<File, String> {
    descriptor(system, fd, true)
}

/// Descriptor `fd` of this process, duplicated (close-on-exec) as a file to read from;
/// `system` says how it is open.
///
/// # Errors
/// A descriptor that is not open, or (Linux) open for writing only.
pub fn readable_descriptor(system: &System, fd: u32) -> Result<File, String> {
    descriptor(system, fd, false)
}

/// Standard output set aside for `stat record -o -`: a duplicate of it (close-on-exec) as a
/// file, standard output then made a copy of standard error, so that a command started
/// afterwards writes to standard error and the pipe gets the records alone (perf's
/// `dup2(2, 1)` for a command whose records go to a pipe).
///
/// # Errors
/// Standard output that is not open (as `system` says), or a `dup2` the OS refused.
pub fn standard_output_aside(system: &System) -> Result<File, String> {
    let kept = descriptor(system, 1, true)?;
    // SAFETY: dup2 takes two descriptor numbers and borrows no memory; descriptor 2 may be
    // closed, which the OS answers with EBADF, and 1 is replaced atomically.
    if unsafe { libc::dup2(2, 1) } < 0 {
        return Err(format!(
            "standard output cannot be set aside: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(kept)
}

/// Descriptor `fd`, duplicated, checked open for `writing` (else for reading).
fn descriptor(system: &System, fd: u32, writing: bool) -> Result<File, String> {
    let raw = i32::try_from(fd).map_err(|_| format!("{fd} is no descriptor number"))?;
    check_open_for(system, fd, writing)?;
    // SAFETY: the OS has just said descriptor `raw` is open in this process (module note), and
    // nothing closes it before the duplicate is made on the next line.
    let borrowed = unsafe { BorrowedFd::borrow_raw(raw) };
    let owned = borrowed
        .try_clone_to_owned()
        .map_err(|e| format!("descriptor {fd} cannot be used: {e}"))?;
    Ok(File::from(owned))
}

/// Whether `fd` is open, and (Linux) open for `writing` (else reading), from its fdinfo
/// ([`System::descriptor_flags`]).
#[cfg(target_os = "linux")]
fn check_open_for(system: &System, fd: u32, writing: bool) -> Result<(), String> {
    let flags = system
        .descriptor_flags(fd)
        .map_err(|_| format!("descriptor {fd} is not an open descriptor"))?
        .ok_or_else(|| format!("descriptor {fd}: its flags are unreadable"))?;
    match (writing, flags & ACCESS_MODE) {
        (true, READ_ONLY) => Err(format!(
            "descriptor {fd} is open for reading only, not for writing"
        )),
        (false, WRITE_ONLY) => Err(format!(
            "descriptor {fd} is open for writing only, not for reading"
        )),
        _ => Ok(()),
    }
}

/// Whether `fd` is open (elsewhere a descriptor open the wrong way fails at the first use).
#[cfg(not(target_os = "linux"))]
fn check_open_for(_system: &System, fd: u32, _writing: bool) -> Result<(), String> {
    std::fs::metadata(format!("/dev/fd/{fd}"))
        .map(drop)
        .map_err(|_| format!("descriptor {fd} is not an open descriptor"))
}

/// `_LINUX_CAPABILITY_VERSION_3` (include/uapi/linux/capability.h): two words of 32 bits.
#[cfg(target_os = "linux")]
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// `struct __user_cap_header_struct`.
#[cfg(target_os = "linux")]
#[repr(C)]
struct CapabilityHeader {
    version: u32,
    pid: i32,
}

/// `struct __user_cap_data_struct`: one word of each set.
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapabilityWord {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

#[cfg(target_os = "linux")]
const _: () = {
    assert!(std::mem::size_of::<CapabilityHeader>() == 8);
    assert!(std::mem::size_of::<CapabilityWord>() == 12);
};

/// Makes every capability this process is permitted effective, as a program given file
/// capabilities without the effective bit (`setcap cap_perfmon,cap_bpf=p`, the image's) must:
/// the kernel puts them in the permitted set alone. Where the effective set already holds the
/// permitted one (root, systemd's `AmbientCapabilities`, no capability at all) nothing is
/// written.
///
/// # Errors
/// The OS's refusal of `capget` or `capset` (a seccomp filter that forbids them).
#[cfg(target_os = "linux")]
pub fn raise_permitted_capabilities() -> std::io::Result<()> {
    let mut header = CapabilityHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut words = [CapabilityWord::default(); 2];
    // SAFETY: capget writes one header and two words (version 3), which both point to and
    // which live until it returns.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, words.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if words.iter().all(|w| w.effective == w.permitted) {
        return Ok(());
    }
    for word in &mut words {
        word.effective = word.permitted;
    }
    // SAFETY: capset reads the header and the two words, valid for the call; it raises no
    // capability past the permitted set.
    if unsafe { libc::syscall(libc::SYS_capset, &header, words.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The locale name `setlocale(LC_NUMERIC, "")` takes from the environment: the first of
/// `LC_ALL`, `LC_NUMERIC` and `LANG` that is set and not empty, else `C` (POSIX's order).
fn numeric_locale() -> std::ffi::OsString {
    ["LC_ALL", "LC_NUMERIC", "LANG"]
        .iter()
        .filter_map(std::env::var_os)
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| "C".into())
}

/// Whether locale `name` groups numbers as the C locale does (not at all): `C`, `POSIX`, and
/// the C locale in any encoding (`C.UTF-8`, `C.utf8`), which the C library gives the C
/// locale's numeric rules, or refuses (then the C locale stays).
fn groups_as_c(name: &std::ffi::OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let name = name.as_bytes();
    name == b"C" || name == b"POSIX" || name.starts_with(b"C.")
}

/// The thousands separator of the user's numeric locale (`LC_ALL`, `LC_NUMERIC`, `LANG`), as
/// `localeconv()` gives it after `setlocale(LC_NUMERIC, "")`: "" in the C and POSIX locales
/// (perf then prints `9306`), "," in `en_US.UTF-8` (`9,306`). Read once.
pub fn thousands_separator() -> &'static str {
    static SEPARATOR: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SEPARATOR.get_or_init(|| {
        if groups_as_c(&numeric_locale()) {
            // The C locale's answer, without loading the locale archive and alias file
            // (setlocale costs a tenth of a plain `stat`'s start-up).
            return String::new();
        }
        // SAFETY: setlocale with a valid category and a NUL-terminated empty string, at most
        // once (OnceLock), before this process reads the locale anywhere else.
        let set = unsafe { libc::setlocale(libc::LC_NUMERIC, c"".as_ptr()) };
        if set.is_null() {
            return String::new();
        }
        // SAFETY: localeconv returns a pointer to a static struct, valid until the next
        // setlocale or localeconv, and read at once.
        let conv = unsafe { libc::localeconv() };
        if conv.is_null() {
            return String::new();
        }
        // SAFETY: `conv` is a valid lconv (checked non-NULL above), read at once.
        let field = unsafe { (*conv).thousands_sep };
        if field.is_null() {
            return String::new();
        }
        // SAFETY: `thousands_sep` of a valid lconv is a NUL-terminated string.
        let separator = unsafe { std::ffi::CStr::from_ptr(field) };
        separator.to_string_lossy().into_owned()
    })
}

/// glibc's locale functions are the oracle (`nl_langinfo_l` is not in every BSD's C library).
/// A POSIX basic regular expression compiled by the C library (`regcomp` without
/// `REG_EXTENDED`, as perf compiles `--for-each-cgroup` patterns), matched anywhere in a text
/// as `regexec` matches.
pub struct BasicRegex {
    compiled: Box<libc::regex_t>,
}

impl BasicRegex {
    /// Compiles `pattern`.
    ///
    /// # Errors
    /// The C library's reason (`regerror`), or a pattern holding a NUL.
    pub fn compile(pattern: &str) -> Result<BasicRegex, String> {
        let text = std::ffi::CString::new(pattern).map_err(|_| "it holds a NUL".to_string())?;
        // SAFETY: regex_t is a plain C struct that regcomp fills; all zeros is a valid start.
        let mut compiled: Box<libc::regex_t> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `compiled` points at a regex_t that stays where it is (boxed), `text` is
        // NUL-terminated and outlives the call.
        let code = unsafe { libc::regcomp(&mut *compiled, text.as_ptr(), libc::REG_NOSUB) };
        if code == 0 {
            return Ok(BasicRegex { compiled });
        }
        let mut reason = [0u8; 256];
        // SAFETY: regerror writes at most `reason.len()` bytes, NUL-terminated, and reads
        // the regex_t only for context (it was not compiled, so it is not freed).
        unsafe { libc::regerror(code, &*compiled, reason.as_mut_ptr().cast(), reason.len()) };
        let end = reason.iter().position(|&b| b == 0).unwrap_or(reason.len());
        Err(String::from_utf8_lossy(&reason[..end]).into_owned())
    }

    /// Whether the expression matches somewhere in `text` (a text holding a NUL: never).
    pub fn is_found_in(&self, text: &str) -> bool {
        let Ok(text) = std::ffi::CString::new(text) else {
            return false;
        };
        // SAFETY: `compiled` was filled by a successful regcomp (with REG_NOSUB, so no match
        // array is written), `text` is NUL-terminated and outlives the call.
        unsafe { libc::regexec(&*self.compiled, text.as_ptr(), 0, std::ptr::null_mut(), 0) == 0 }
    }
}

impl Drop for BasicRegex {
    fn drop(&mut self) {
        // SAFETY: `compiled` was filled by a successful regcomp and is freed only here.
        unsafe { libc::regfree(&mut *self.compiled) };
    }
}

impl std::fmt::Debug for BasicRegex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BasicRegex")
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The thousands separator the C library gives locale `name` (`newlocale`, then
    /// `nl_langinfo_l(THOUSEP)`), without changing this process's locale; `None` when the
    /// locale is not installed.
    fn c_library_separator(name: &str) -> Option<String> {
        let name = std::ffi::CString::new(name).ok()?;
        // SAFETY: newlocale with a valid mask, a NUL-terminated name and no base locale.
        let locale = unsafe { libc::newlocale(libc::LC_NUMERIC_MASK, name.as_ptr(), 0 as _) };
        if locale.is_null() {
            return None;
        }
        // SAFETY: nl_langinfo_l on a valid locale returns a NUL-terminated string valid
        // until the locale is freed.
        let field = unsafe { libc::nl_langinfo_l(libc::THOUSEP, locale) };
        // SAFETY: `field` is the NUL-terminated string just returned, read before the free.
        let separator = unsafe { std::ffi::CStr::from_ptr(field) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: `locale` came from newlocale and is freed once.
        unsafe { libc::freelocale(locale) };
        Some(separator)
    }

    /// This thread's capability sets, effective and permitted (`CapEff`, `CapPrm`), as the
    /// kernel shows them (`thread-self/status` under procfs).
    fn thread_capabilities() -> (u64, u64) {
        let status = System::host().process_status("thread-self").unwrap();
        let effective = status.effective_capabilities().unwrap();
        (effective, status.permitted_capabilities().unwrap())
    }

    /// Oracle: the kernel's capability sets of this thread (`CapEff`, `CapPrm` of its
    /// status under procfs). With its effective set emptied (where it is permitted
    /// any), the call makes it the permitted set again; a second call changes nothing.
    #[test]
    fn the_permitted_capabilities_are_made_effective() {
        let permitted = thread_capabilities().1;
        let mut header = CapabilityHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let mut words = [CapabilityWord::default(); 2];
        // SAFETY: as in raise_permitted_capabilities.
        let read = unsafe { libc::syscall(libc::SYS_capget, &mut header, words.as_mut_ptr()) };
        assert_eq!(read, 0);
        for word in &mut words {
            word.effective = 0;
        }
        // SAFETY: as in raise_permitted_capabilities; lowering the effective set of this
        // test's own thread.
        let lowered = unsafe { libc::syscall(libc::SYS_capset, &header, words.as_ptr()) };
        assert_eq!(lowered, 0);
        assert_eq!(thread_capabilities().0, 0);
        raise_permitted_capabilities().unwrap();
        assert_eq!(thread_capabilities().0, permitted);
        raise_permitted_capabilities().unwrap();
        assert_eq!(thread_capabilities().0, permitted);
        assert_eq!(thread_capabilities().1, permitted);
    }

    /// Oracle: the C library's locales. Every name taken for the C locale's grouping groups
    /// as the C library says it does (no separator); a grouping locale is not taken for it.
    #[test]
    fn the_c_locales_are_known_without_loading_them() {
        for name in ["C", "POSIX", "C.UTF-8", "C.utf8"] {
            assert!(groups_as_c(name.as_ref()), "{name}");
            if let Some(separator) = c_library_separator(name) {
                assert_eq!(separator, "", "{name}");
            }
        }
        assert_eq!(c_library_separator("C").as_deref(), Some(""));
        for name in ["en_US.UTF-8", "de_DE.UTF-8", "Cy_GB", ""] {
            assert!(!groups_as_c(name.as_ref()), "{name}");
        }
    }
}
