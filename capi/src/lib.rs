//! counterhal's C API: `libcounterhal.so` and `libcounterhal.a`, declared in
//! `capi/include/counterhal.h`. See capi/README.md for the functions, the error codes and
//! the thread-safety rules.
//!
//! This module holds what the C functions do, on Rust values; [`sys`] turns the C pointers
//! into those values and back (the crate's one module with `unsafe` code), and catches every
//! panic so none crosses into C.

#![deny(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use counterhal_events::listing::Section;
use counterhal_hal::Reading;
use facade::{Chosen, Error, ErrorKind};

mod metrics;
mod sampler;
mod set;
#[allow(unsafe_code)] // the one module with unsafe code (see its `# Safety` note)
mod sys;

pub use metrics::{MetricValueC, MetricsC};
pub use sampler::{SampleC, SamplerC, field};
pub use set::{Set, SetCell, domain, follow, option, place, target};
pub(crate) use set::{read_failure, read_published};

/// The library's version, `MAJOR * 10000 + MINOR * 100 + PATCH`, from the package's.
pub const VERSION_NUMBER: i32 = version_number(env!("CARGO_PKG_VERSION"));

/// The library's version as C text.
pub const VERSION_TEXT: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
) {
    Ok(text) => text,
    Err(_) => panic!("the package version has no NUL"),
};

/// `MAJOR.MINOR.PATCH` as one number, at compile time.
const fn version_number(text: &str) -> i32 {
    let bytes = text.as_bytes();
    let (mut parts, mut part, mut i) = ([0i32; 3], 0, 0);
    while i < bytes.len() && part < 3 {
        match bytes[i] {
            b'.' => part += 1,
            b'0'..=b'9' => parts[part] = parts[part] * 10 + (bytes[i] - b'0') as i32,
            _ => break,
        }
        i += 1;
    }
    parts[0] * 10000 + parts[1] * 100 + parts[2]
}

/// The C error codes: 0 is success, each error kind has its own negative code. Stable: a
/// code keeps its number and meaning in every release.
pub mod code {
    /// Success.
    pub const OK: i32 = 0;
    /// A NULL pointer, a string that is not UTF-8, a buffer shorter than the set, an unknown
    /// target kind or a malformed CPU list (and `ErrorKind::InvalidInput`).
    pub const INVALID_ARGUMENT: i32 = -1;
    /// An unknown event name or a bad modifier.
    pub const INVALID_EVENT: i32 = -2;
    /// This machine, OS or backend cannot do it (no such PMU, a target it cannot attach to).
    pub const UNSUPPORTED: i32 = -3;
    /// The OS refused for lack of privilege (`perf_event_paranoid`, capabilities, modes).
    pub const PERMISSION_DENIED: i32 = -4;
    /// More events, or more constrained events, than free counters.
    pub const NO_COUNTER: i32 = -5;
    /// The device or driver the backend needs is missing.
    pub const DEVICE_MISSING: i32 = -6;
    /// The counters are in use.
    pub const BUSY: i32 = -7;
    /// The process, thread or CPU does not exist.
    pub const NOT_FOUND: i32 = -8;
    /// A read carried no values (a pinned group in error state).
    pub const NOT_COUNTED: i32 = -9;
    /// A limit of this process was reached (open files).
    pub const LIMIT_REACHED: i32 = -10;
    /// The set is in the wrong state for the call (adding to a running set, reading a set
    /// that was never started, starting a running one).
    pub const STATE: i32 = -11;
    /// counterhal failed inside (a caught panic): a bug to report.
    pub const INTERNAL: i32 = -12;
    /// Anything else; the last error's message says what.
    pub const OTHER: i32 = -13;

    /// Every code with its name in the header and its meaning (`counterhal_strerror`), in
    /// order (the header's list is checked against this by a test).
    pub const ALL: [(i32, &str, &std::ffi::CStr); 14] = [
        (OK, "COUNTERHAL_OK", c"success"),
        (INVALID_ARGUMENT, "COUNTERHAL_EINVAL", c"invalid argument"),
        (INVALID_EVENT, "COUNTERHAL_EEVENT", c"invalid event"),
        (UNSUPPORTED, "COUNTERHAL_ENOSUPP", c"not supported here"),
        (PERMISSION_DENIED, "COUNTERHAL_EPERM", c"permission denied"),
        (NO_COUNTER, "COUNTERHAL_ECNTR", c"no counter available"),
        (DEVICE_MISSING, "COUNTERHAL_ENODEV", c"device missing"),
        (BUSY, "COUNTERHAL_EBUSY", c"counters busy"),
        (
            NOT_FOUND,
            "COUNTERHAL_ENOENT",
            c"no such process, thread or CPU",
        ),
        (NOT_COUNTED, "COUNTERHAL_ENOCOUNT", c"not counted"),
        (LIMIT_REACHED, "COUNTERHAL_ELIMIT", c"limit reached"),
        (STATE, "COUNTERHAL_ESTATE", c"wrong state for this call"),
        (INTERNAL, "COUNTERHAL_EINTERNAL", c"internal error"),
        (OTHER, "COUNTERHAL_EOTHER", c"other error"),
    ];
}

/// The C code for an error kind.
pub fn code_of(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::InvalidInput => code::INVALID_ARGUMENT,
        ErrorKind::InvalidEvent => code::INVALID_EVENT,
        ErrorKind::Unsupported => code::UNSUPPORTED,
        ErrorKind::PermissionDenied => code::PERMISSION_DENIED,
        ErrorKind::NoCounterAvailable => code::NO_COUNTER,
        ErrorKind::DeviceMissing => code::DEVICE_MISSING,
        ErrorKind::Busy => code::BUSY,
        ErrorKind::NotFound => code::NOT_FOUND,
        ErrorKind::NotCounted => code::NOT_COUNTED,
        ErrorKind::LimitReached => code::LIMIT_REACHED,
        _ => code::OTHER,
    }
}

/// What a C call failed with: its code, and the message for `counterhal_last_error`.
#[derive(Debug)]
pub struct Failure {
    /// The negative code returned.
    pub code: i32,
    /// The message with its hint.
    pub message: String,
}

impl From<Error> for Failure {
    /// The error's text as `Display` gives it: what happened, the OS error, and `; hint: ...`
    /// once.
    fn from(error: Error) -> Failure {
        Failure {
            code: code_of(error.kind()),
            message: error.to_string(),
        }
    }
}

impl From<(i32, &'static str)> for Failure {
    /// A failure of a code and a static message.
    fn from((code, message): (i32, &'static str)) -> Failure {
        Failure::new(code, message)
    }
}

impl Failure {
    /// A failure of `code` with `message`.
    pub fn new(code: i32, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }
}

/// What a C call returns: a value, or a failure.
pub type CResult<T> = std::result::Result<T, Failure>;

/// The room for a last error's message, its NUL included: a longer message is cut (at a
/// character, ending in `...`).
pub const LAST_ERROR_ROOM: usize = 2048;

thread_local! {
    /// This thread's last failure, NUL-terminated, for `counterhal_last_error`. A fixed
    /// buffer without a destructor: it lives as long as the thread, through its thread-local
    /// and `pthread_key` destructors, and recording a message allocates nothing (so a call
    /// refused inside a signal handler can record why).
    // Const already: clippy's missing_const_for_thread_local misreads thread_local!'s expansion
    // on targets that keep thread locals in emulated TLS (OpenBSD), and the allow says so.
    #[allow(clippy::missing_const_for_thread_local)]
    static LAST_ERROR: RefCell<[u8; LAST_ERROR_ROOM]> = const { RefCell::new([0; LAST_ERROR_ROOM]) };
    /// Whether this thread is inside a C call: a call made while it is (from a signal
    /// handler that interrupted one) is refused before it touches anything. No destructor.
    #[allow(clippy::missing_const_for_thread_local)]
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
}

/// Records `message` as this thread's last error (cut to [`LAST_ERROR_ROOM`], NULs as
/// spaces). Allocates nothing; skipped when the buffer is being written already (a signal
/// handler interrupting the write).
fn record(message: &str) {
    LAST_ERROR.with(|last| {
        let Ok(mut buffer) = last.try_borrow_mut() else {
            return;
        };
        // What fits whole, at a character; with `...` after it when the rest does not fit.
        let cut = message.len() > LAST_ERROR_ROOM - 1;
        let mut kept = match cut {
            true => LAST_ERROR_ROOM - 4,
            false => message.len(),
        };
        while !message.is_char_boundary(kept) {
            kept -= 1;
        }
        buffer[..kept].copy_from_slice(&message.as_bytes()[..kept]);
        for byte in &mut buffer[..kept] {
            if *byte == 0 {
                *byte = b' ';
            }
        }
        let end = match cut {
            true => {
                buffer[kept..kept + 3].copy_from_slice(b"...");
                kept + 3
            }
            false => kept,
        };
        buffer[end] = 0;
    });
}

/// The refusal of a buffer of `len` bytes too short for `event`'s encoding `text`
/// (`counterhal_query`): the length it needs, its NUL included.
fn encoding_cut(event: &str, text: &str, len: usize) -> Failure {
    Failure::new(
        code::INVALID_ARGUMENT,
        format!(
            "the encoding buffer holds {len} bytes; `{event}`'s encoding `{text}` needs {} with \
             its NUL (it was written cut): pass a buffer of at least that many",
            text.len() + 1
        ),
    )
}

/// Records `failure` as this thread's last error and returns its code.
fn fail(failure: Failure) -> i32 {
    record(&failure.message);
    failure.code
}

/// The message of a call refused because it was made inside another (a signal handler).
const REENTERED: &str = "a counterhal function was called from a signal handler that interrupted \
                         another counterhal call on this thread: counterhal's functions are not \
                         async-signal-safe (hint: call counterhal outside signal handlers, or \
                         retry once the handler has returned)";

/// Runs `f` as this thread's C call: refused with `COUNTERHAL_EBUSY` (recorded, nothing
/// allocated) when the thread is inside a C call already, which only a signal handler can
/// make happen.
#[inline]
fn one_call_at_a_time(f: impl FnOnce() -> i32) -> i32 {
    if IN_CALL.with(|inside| inside.replace(true)) {
        record(REENTERED);
        return code::BUSY;
    }
    let result = f();
    IN_CALL.with(|inside| inside.set(false));
    result
}

/// This thread's last error message, without its NUL, into `out` (cut to fit, with a NUL
/// when `out` is not empty); its whole length.
fn copy_last_error(out: &mut [u8]) -> usize {
    LAST_ERROR.with(|last| {
        let Ok(buffer) = last.try_borrow() else {
            if let Some(first) = out.first_mut() {
                *first = 0;
            }
            return 0;
        };
        let length = buffer.iter().position(|b| *b == 0).unwrap_or(0);
        if let Some(room) = out.len().checked_sub(1) {
            let kept = length.min(room);
            out[..kept].copy_from_slice(&buffer[..kept]);
            out[kept] = 0;
        }
        length
    })
}

/// Where this thread's last error is, NUL-terminated: valid as long as the thread.
fn last_error_pointer() -> *const u8 {
    LAST_ERROR.with(|last| last.as_ptr().cast::<u8>().cast_const())
}

/// A C string kept for as long as the value holding it: the text, or "" where it had a NUL.
fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', " ")).unwrap_or_default()
}

/// What `counterhal_t` points at.
pub struct Handle {
    pub(crate) inner: Arc<Inner>,
    listing: Mutex<Vec<ListedC>>,
    /// The process it was opened in, as a count of forks ([`sys`] refuses it in a child).
    generation: u64,
}

/// The backend and its names, shared with every set made from it (a set outlives a closed
/// handle safely).
pub(crate) struct Inner {
    chosen: Chosen,
    label: CString,
    model: Option<CString>,
}

/// One listed event as C reads it.
pub struct ListedC {
    section: CString,
    name: CString,
    description: CString,
    encoding: Option<CString>,
    reason: Option<CString>,
    usable: bool,
}

/// What `counterhal_open_with` chooses, as Rust values: each `None` chosen as
/// `counterhal_open(.., NULL)` chooses it.
#[derive(Clone, Debug, Default)]
pub struct Choice<'a> {
    /// The backend's name, one the registry has (`counterhal info` lists them); `None`: the
    /// first usable.
    pub backend: Option<&'a str>,
    /// The CPU model names resolve against (a database id, or perf's signature
    /// `Vendor-Family-Model[-Stepping]`); `None`: this machine's.
    pub cpu_model: Option<&'a str>,
    /// A TOML events file read beside the shipped database.
    pub events_file: Option<&'a std::path::Path>,
}

impl Handle {
    /// The backend `choice` names (its real device), or the first that works here, with the
    /// CPU model and events file it names ([`facade::Setup`]), in the process of fork count
    /// `generation`.
    pub fn open(choice: &Choice<'_>, generation: u64) -> CResult<Handle> {
        let mut setup = facade::Setup::new();
        if let Some(backend) = choice.backend {
            setup = setup.backend(backend);
        }
        if let Some(model) = choice.cpu_model {
            setup = setup.cpu_model(model);
        }
        if let Some(file) = choice.events_file {
            setup = setup.events_file(file);
        }
        let mut chosen = setup.open()?;
        with_descriptions(chosen.context_mut())?;
        let label = c_string(&chosen.label());
        let model = chosen.cpu_model().map(c_string);
        Ok(Handle {
            inner: Arc::new(Inner {
                chosen,
                label,
                model,
            }),
            listing: Mutex::new(Vec::new()),
            generation,
        })
    }

    /// Lists the events whose name or description holds `pattern`; keeps them for C.
    fn list(&self, pattern: &str) -> std::sync::MutexGuard<'_, Vec<ListedC>> {
        let chosen = &self.inner.chosen;
        let context = chosen.context();
        let listed = counterhal_events::listing::list_events(
            context.database(),
            context.model(),
            Ok(chosen.backend()),
            pattern,
        );
        let mut kept = self.listing.lock().unwrap_or_else(|e| e.into_inner());
        // Each native event's unit masks follow it, as section "umask" (`EVENT.UNIT_MASK`).
        *kept = listed
            .into_iter()
            .flat_map(|l| {
                let event = ListedC {
                    section: c_string(section_name(l.section)),
                    name: c_string(&l.name),
                    description: c_string(&l.description),
                    encoding: l.encoding.as_deref().map(c_string),
                    reason: l.reason.as_deref().map(c_string),
                    usable: l.usable,
                };
                let usable = l.usable;
                let masks = l.unit_masks.into_iter().map(move |u| ListedC {
                    section: c_string("umask"),
                    name: c_string(&u.name),
                    description: c_string(&u.description),
                    usable: usable && u.encoding.is_some(),
                    encoding: u.encoding.as_deref().map(c_string),
                    reason: u.reason.as_deref().map(c_string),
                });
                std::iter::once(event).chain(masks)
            })
            .collect();
        kept
    }

    /// Whether `event` counts here: `Ok(encoding)` when it does, else why not (with the
    /// encoding when the name exists).
    fn query(&self, event: &str) -> (Option<String>, CResult<()>) {
        let query = facade::query(self.inner.chosen.backend(), event);
        let encoding = query
            .event
            .as_ref()
            .ok()
            .map(counterhal_events::listing::encoding_text);
        let usable = query.countable.map(drop).map_err(Failure::from);
        (encoding, usable)
    }
}

/// The model's event descriptions from the directory `COUNTERHAL_DESCRIPTIONS` names (perf's
/// JSON event files), when it names one: what `counterhal_list` gives as `description`. The
/// listing reads `context`'s database; the backend's copy, used to resolve, needs none.
fn with_descriptions(context: &mut facade::Context) -> CResult<()> {
    let Some(dir) = std::env::var_os(counterhal_events::DESCRIPTIONS_ENV).filter(|d| !d.is_empty())
    else {
        return Ok(());
    };
    if let Some(model) = context.model() {
        let (database, _) = (**context.database())
            .clone()
            .with_descriptions(model, std::path::Path::new(&dir))?;
        context.set_database(std::sync::Arc::new(database));
    }
    Ok(())
}

/// A section's name.
fn section_name(section: Section) -> &'static str {
    section.name()
}

/// The estimate a reading implies: its value scaled by time enabled over time running; 0
/// when it never ran.
pub fn scaled(reading: &Reading) -> u64 {
    reading.scaled().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/include/counterhal.h");
        std::fs::read_to_string(path).unwrap()
    }

    /// The functions the header declares: the identifier before the first `(` of each
    /// prototype line.
    fn declared(header: &str) -> Vec<String> {
        let mut names: Vec<String> = header
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim_start().starts_with('/') && l.contains('('))
            .filter(|l| !l.starts_with(' ') && !l.starts_with("typedef"))
            .filter_map(|l| {
                let before = &l[..l.find('(')?];
                let name = before.rsplit([' ', '*']).next()?;
                name.starts_with("counterhal_").then(|| name.to_string())
            })
            .collect();
        names.sort();
        names
    }

    /// The functions the library exports: each `#[unsafe(no_mangle)]` `extern "C" fn` of
    /// `sys` and its modules (a C function it only hands to the C library, such as a fork handler, is not).
    fn exported() -> Vec<String> {
        let source = [
            include_str!("sys/mod.rs"),
            include_str!("sys/events.rs"),
            include_str!("sys/metrics.rs"),
            include_str!("sys/open.rs"),
            include_str!("sys/regions.rs"),
            include_str!("sys/sets.rs"),
            include_str!("sys/samplers.rs"),
        ]
        .join("\n");
        let lines: Vec<&str> = source.lines().collect();
        let mut names: Vec<String> = lines
            .windows(2)
            .filter(|pair| pair[0].trim() == "#[unsafe(no_mangle)]")
            .filter_map(|pair| pair[1].split("extern \"C\" fn ").nth(1))
            .filter_map(|rest| rest.split('(').next())
            .map(str::to_string)
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_header_declares_exactly_what_the_library_exports() {
        let declared = declared(&header());
        assert_eq!(declared, exported());
        for name in [
            "counterhal_open",
            "counterhal_close",
            "counterhal_set_create",
            "counterhal_set_add",
            "counterhal_set_start",
            "counterhal_set_read",
            "counterhal_set_stop",
            "counterhal_set_reset",
            "counterhal_set_destroy",
            "counterhal_scaled",
            "counterhal_strerror",
            "counterhal_last_error",
        ] {
            assert!(declared.iter().any(|d| d == name), "{name} missing");
        }
    }

    /// The README's table names every function the header declares, and every option and
    /// domain constant (whole or as `_SUFFIX` after its family's first).
    #[test]
    fn the_readme_names_every_function_and_option() {
        let readme = include_str!("../README.md");
        for name in declared(&header()) {
            assert!(
                readme.contains(&format!("`{name}`")),
                "README.md does not name {name}"
            );
        }
        for line in header().lines() {
            let Some(name) = line
                .strip_prefix("#define ")
                .and_then(|rest| rest.split_whitespace().next())
            else {
                continue;
            };
            let Some(suffix) = ["COUNTERHAL_OPTION", "COUNTERHAL_DOMAIN"]
                .iter()
                .find_map(|family| name.strip_prefix(family))
            else {
                continue;
            };
            assert!(
                readme.contains(&format!("`{name}`")) || readme.contains(&format!("`{suffix}`")),
                "README.md does not name {name}"
            );
        }
    }

    #[test]
    fn the_header_s_error_codes_are_the_library_s() {
        let header = header();
        for (value, name, meaning) in code::ALL {
            let define = header
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("{name} is not defined in the header"));
            let number: String = define[format!("#define {name} ").len()..]
                .chars()
                .take_while(|c| !c.is_whitespace())
                .filter(|c| *c != '(' && *c != ')')
                .collect();
            assert_eq!(number.parse::<i32>().unwrap(), value, "{define}");
            assert!(!meaning.to_bytes().is_empty());
        }
        let defined = header
            .lines()
            .filter(|l| {
                l.starts_with("#define COUNTERHAL_E") || l.starts_with("#define COUNTERHAL_OK")
            })
            .count();
        assert_eq!(
            defined,
            code::ALL.len(),
            "the header defines codes the library lacks"
        );
        // Codes are distinct, 0 then -1, -2, ... without gaps.
        for (i, (value, ..)) in code::ALL.iter().enumerate() {
            assert_eq!(*value, -(i as i32));
        }
    }

    #[test]
    fn a_long_last_error_is_cut_at_a_character_with_dots() {
        for message in ["é".repeat(3000), "x".repeat(5000), "a\0b".to_string()] {
            record(&message);
            let mut copy = vec![0u8; LAST_ERROR_ROOM + 10];
            let length = copy_last_error(&mut copy);
            let text = std::str::from_utf8(&copy[..length]).expect("whole characters");
            assert!(length < LAST_ERROR_ROOM);
            match message.len() < LAST_ERROR_ROOM {
                true => assert_eq!(text, message.replace('\0', " ")),
                false => assert!(text.ends_with("...") && length >= LAST_ERROR_ROOM - 5),
            }
            let mut tiny = [0xffu8; 3];
            assert_eq!(copy_last_error(&mut tiny), length);
            assert_eq!(tiny[2], 0);
            assert_eq!(copy_last_error(&mut []), length);
        }
    }

    #[test]
    fn a_failure_states_its_hint_once() {
        let error = Error::invalid_input("bad CPU list").with_hint("name CPUs among 0-1");
        let failure = Failure::from(error);
        assert_eq!(failure.message, "bad CPU list; hint: name CPUs among 0-1");
    }

    #[test]
    fn every_error_kind_has_its_own_code() {
        let kinds = [
            ErrorKind::InvalidInput,
            ErrorKind::InvalidEvent,
            ErrorKind::Unsupported,
            ErrorKind::PermissionDenied,
            ErrorKind::NoCounterAvailable,
            ErrorKind::DeviceMissing,
            ErrorKind::Busy,
            ErrorKind::NotFound,
            ErrorKind::NotCounted,
            ErrorKind::LimitReached,
            ErrorKind::Other,
        ];
        let mut codes: Vec<i32> = kinds.iter().map(|k| code_of(*k)).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), kinds.len());
        assert!(codes.iter().all(|c| *c < 0));
    }

    #[test]
    fn the_header_s_options_and_domains_are_the_library_s() {
        let header = header();
        for (name, value) in [
            ("COUNTERHAL_OPTION_GROUPED", option::GROUPED),
            ("COUNTERHAL_OPTION_PINNED", option::PINNED),
            ("COUNTERHAL_OPTION_INHERIT", option::INHERIT),
            ("COUNTERHAL_OPTION_EXCLUSIVE", option::EXCLUSIVE),
            ("COUNTERHAL_OPTION_DOMAIN", option::DOMAIN),
            ("COUNTERHAL_OPTION_STRICT_DOMAIN", option::STRICT_DOMAIN),
            ("COUNTERHAL_DOMAIN_USER", domain::USER),
            ("COUNTERHAL_DOMAIN_KERNEL", domain::KERNEL),
            ("COUNTERHAL_DOMAIN_HYPERVISOR", domain::HYPERVISOR),
        ] {
            assert!(
                header.contains(&format!("#define {name} {value} ")),
                "{name} is not {value} in the header"
            );
        }
        let defined = |prefix: &str| {
            header
                .lines()
                .filter(|l| l.starts_with(&format!("#define {prefix}")))
                .count()
        };
        assert_eq!(
            defined("COUNTERHAL_OPTION_"),
            6,
            "an option the library lacks"
        );
        assert_eq!(
            defined("COUNTERHAL_DOMAIN_"),
            3,
            "a domain the library lacks"
        );
    }

    #[test]
    fn the_header_s_targets_are_the_library_s() {
        let header = header();
        for (name, value) in [
            ("COUNTERHAL_TARGET_THIS_THREAD", target::THIS_THREAD),
            ("COUNTERHAL_TARGET_THREAD", target::THREAD),
            ("COUNTERHAL_TARGET_PROCESS", target::PROCESS),
            ("COUNTERHAL_TARGET_ALL_CPUS", target::ALL_CPUS),
            ("COUNTERHAL_TARGET_CPUS", target::CPUS),
        ] {
            assert!(
                header.contains(&format!("#define {name} {value} ")),
                "{name} is not {value} in the header"
            );
        }
    }
}
