//! Tracepoints (`subsystem:name[:modifiers]`), found in the tracefs that
//! `counterhal_system::System` answers with (this module reads no file itself).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use counterhal_hal::{
    Encoding, Error, ErrorKind, EventRequest, OwnEvent, PerfAttr, ResolvedEvent, Result,
};
use counterhal_system::{System, Tracefs, TracefsState};

use crate::sys::TYPE_TRACEPOINT;

/// The tracefs a backend found mounted, and whether it tried to mount it, kept for its life
/// and its clones' (a `list` resolves thousands of tracepoints, each of which would otherwise
/// look at every root again). Kept once found and never dropped: tracefs stays mounted once
/// mounted (if it went, reading a tracepoint's id fails and the name is no tracepoint).
#[derive(Clone, Debug, Default)]
pub struct Found {
    tracefs: Arc<OnceLock<Tracefs>>,
    mount_tried: Arc<OnceLock<()>>,
}

impl Found {
    /// The tracefs found before, else `system`'s looked for now (and kept where mounted);
    /// what it is where it is not mounted (`Denied`, `Absent`).
    fn mounted(&self, system: &System) -> std::result::Result<&Tracefs, TracefsState> {
        if let Some(tracefs) = self.tracefs.get() {
            return Ok(tracefs);
        }
        match system.tracefs() {
            TracefsState::Mounted(tracefs) => Ok(self.tracefs.get_or_init(|| tracefs)),
            other => Err(other),
        }
    }

    /// As perf does: when tracefs is mounted nowhere `system` looks, the first place it looks
    /// is this machine's standard mount point ([`System::tracefs_mount_point`]), and this
    /// process is root, mounts tracefs there and leaves it mounted (tried once for this
    /// backend and its clones; a failure leaves it absent, which resolving a tracepoint then
    /// reports). Called only for a backend allowed to change the system so
    /// ([`LinuxBackend::set_mount_tracefs`]).
    ///
    /// [`LinuxBackend::set_mount_tracefs`]: crate::LinuxBackend::set_mount_tracefs
    fn mount_if_absent(&self, system: &System) {
        // Asked at each of a `list`'s thousands of names: the cheap answers first.
        if self.mount_tried.get().is_some() || crate::sys::effective_uid() != 0 {
            return;
        }
        let Some(point) = system.tracefs_mount_point() else {
            return;
        };
        self.mount_tried.get_or_init(|| {
            if system.tracefs() == TracefsState::Absent {
                let _ = crate::sys::mount_tracefs(&point);
            }
        });
    }
}

/// Refuses a filter on an event that is not a tracepoint, or one no C string can carry:
/// checked before anything opens.
///
/// # Errors
/// [`ErrorKind::InvalidInput`] naming what is wrong.
pub fn check_filter(name: &str, attr: &PerfAttr) -> Result<()> {
    let Some(filter) = &attr.filter else {
        return Ok(());
    };
    if attr.type_ != TYPE_TRACEPOINT {
        return Err(Error::invalid_input(format!(
            "`{name}` is not a tracepoint, and only tracepoints take a filter (`{filter}`)"
        ))
        .with_hint(
            "put --filter after a -e tracepoint (`-e syscalls:sys_enter_write --filter 'fd == 1'`)",
        ));
    }
    if filter.contains('\0') {
        return Err(Error::invalid_input(format!(
            "the filter of `{name}` holds a NUL byte, which the kernel's filter string cannot"
        )));
    }
    Ok(())
}

/// Sets tracepoint `fd`'s filter (`PERF_EVENT_IOC_SET_FILTER`), checked by [`check_filter`].
///
/// # Errors
/// [`ErrorKind::InvalidInput`] when the kernel refuses it (EINVAL: a field the tracepoint
/// lacks, or syntax it cannot parse), naming where its fields are listed.
pub fn set_filter(fd: std::os::fd::BorrowedFd<'_>, filter: &str) -> Result<()> {
    let text = std::ffi::CString::new(filter)
        .map_err(|_| Error::invalid_input(format!("filter `{filter}` holds a NUL byte")))?;
    crate::sys::ioctl_set_filter(fd, &text).map_err(|errno| {
        let error = if errno == libc::EINVAL {
            Error::invalid_input(format!(
                "ioctl PERF_EVENT_IOC_SET_FILTER: the kernel refused the filter `{filter}`: a field this tracepoint lacks, or syntax its event filter cannot parse"
            ))
            .with_hint("the fields are listed in /sys/kernel/tracing/events/SUBSYSTEM/EVENT/format; the syntax is the kernel's event filter (`fd == 1 && count > 64`, `comm ~ \"sh*\"`)")
        } else {
            Error::new(
                ErrorKind::Other,
                format!("ioctl PERF_EVENT_IOC_SET_FILTER failed for filter `{filter}`"),
            )
        };
        error.with_errno(errno)
    })
}

/// A tracepoint name split into its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracepointName<'a> {
    /// The subsystem (`syscalls`, `xhci-hcd`).
    pub system: &'a str,
    /// The event (`sys_enter_getpid`).
    pub event: &'a str,
    /// perf's modifier letters after a second colon (`u`, `k`...), possibly empty.
    pub modifiers: &'a str,
}

/// Splits `subsystem:event[:modifiers]`: subsystems and events are lower-case identifiers,
/// subsystems may hold `-` (`xhci-hcd`), modifiers are perf's letters (`ukhGH`).
pub fn split_tracepoint(name: &str) -> Option<TracepointName<'_>> {
    let (system, rest) = name.split_once(':')?;
    let (event, modifiers) = rest.split_once(':').unwrap_or((rest, ""));
    // Each part names a directory, so it is a file name: at most NAME_MAX (255) bytes. Every
    // byte allowed is ASCII, so the bytes are looked up in a table of what each part may
    // hold (a list resolves thousands of names).
    let only = |s: &str, class: u8| s.bytes().all(|b| NAME_BYTES[usize::from(b)] & class != 0);
    let ident = |s: &str, class: u8| !s.is_empty() && s.len() <= 255 && only(s, class);
    let valid = ident(system, SUBSYSTEM) && ident(event, EVENT) && only(modifiers, MODIFIER);
    valid.then_some(TracepointName {
        system,
        event,
        modifiers,
    })
}

/// [`NAME_BYTES`]' classes: a byte an event name may hold (`a-z`, `0-9`, `_`), one a
/// subsystem may (those and `-`), and one of perf's modifier letters (`ukhGHp`).
const EVENT: u8 = 1;
const SUBSYSTEM: u8 = 2;
const MODIFIER: u8 = 4;

/// The classes of each byte value.
const NAME_BYTES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_' {
            table[b] |= EVENT | SUBSYSTEM;
        }
        if byte == b'-' {
            table[b] |= SUBSYSTEM;
        }
        if matches!(byte, b'u' | b'k' | b'h' | b'G' | b'H' | b'p') {
            table[b] |= MODIFIER;
        }
        b += 1;
    }
    table
};

/// `subsystem:event:xyz` where the tracepoint exists but `xyz` holds letters that are not
/// perf's modifiers: an error naming them (instead of "unknown event `subsystem`").
fn bad_modifiers(system: &System, found: &Found, name: &str) -> Result<Option<PerfAttr>> {
    let mut parts = name.splitn(3, ':');
    let (Some(subsystem), Some(event), Some(modifiers)) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Ok(None);
    };
    let Some(base) = split_tracepoint(&name[..subsystem.len() + 1 + event.len()]) else {
        return Ok(None);
    };
    let Ok(tracefs) = found.mounted(system) else {
        return Ok(None);
    };
    if !tracefs.has_tracepoint(base.system, base.event) {
        return Ok(None);
    }
    Err(Error::invalid_event(format!(
        "{name}: `{modifiers}` is not a modifier of tracepoint {subsystem}:{event}"
    ))
    .with_hint("tracepoints take perf's modifiers: u, k, h, G, H (and p, ignored)"))
}

/// Whether `name` has the shape of a tracepoint ([`split_tracepoint`] accepts it).
pub fn looks_like_tracepoint(name: &str) -> bool {
    split_tracepoint(name).is_some()
}

/// Every tracepoint of `system`'s tracefs, as `subsystem:event`, by subsystem and event, with its
/// encoding as [`resolve`] gives it where its `id` was read (else a listing resolves it by
/// name, and says why it cannot); empty when tracefs is not mounted (or readable). With
/// `mount`, tracefs is mounted first where perf would ([`Found::mount_if_absent`]).
pub fn list(system: &System, found: &Found, mount: bool) -> Vec<OwnEvent> {
    if mount {
        found.mount_if_absent(system);
    }
    let Ok(tracefs) = found.mounted(system) else {
        return Vec::new();
    };
    tracefs
        .tracepoints()
        .into_iter()
        .map(|(name, id)| {
            // As `resolve` reads the name: a tracepoint, no modifier.
            let plain = split_tracepoint(&name).is_some_and(|parts| parts.modifiers.is_empty());
            let resolved = id.ok().filter(|_| plain).and_then(|text| {
                let attr = encoding(&name, &text, "", PathBuf::new).ok()?;
                let request = EventRequest::new(name.as_str(), Encoding::Perf(attr));
                Some(ResolvedEvent::single(request))
            });
            OwnEvent {
                name,
                description: "tracepoint".to_string(),
                resolved,
            }
        })
        .collect()
}

/// Resolves `subsystem:event[:modifiers]` to a tracepoint encoding (type 2, config = its id,
/// the modifiers applied to its domain), or `None` when `system`'s tracefs does not know it
/// (or is not mounted). With
/// `mount`, a name of a tracepoint's shape mounts tracefs first where perf would
/// ([`Found::mount_if_absent`]).
///
/// # Errors
/// [`ErrorKind::PermissionDenied`] when the `id` file is unreadable;
/// [`ErrorKind::InvalidEvent`] when it is malformed.
pub fn resolve(
    system: &System,
    found: &Found,
    name: &str,
    mount: bool,
) -> Result<Option<PerfAttr>> {
    let Some(parts) = split_tracepoint(name) else {
        return bad_modifiers(system, found, name);
    };
    if mount {
        found.mount_if_absent(system);
    }
    let Ok(tracefs) = found.mounted(system) else {
        return Ok(None);
    };
    // Named only where something is wrong with it (a `list` resolves thousands).
    let id_path = || tracefs.id_path(parts.system, parts.event);
    let text = match tracefs.tracepoint_id(parts.system, parts.event) {
        Ok(text) => text,
        // Only a file this user may not read is a tracepoint withheld; a name no file has
        // (missing, overlong, naming a file as a directory) is no tracepoint.
        Err(e) if e.kind() != io::ErrorKind::PermissionDenied => return Ok(None),
        Err(e) => {
            return Err(Error::new(
                ErrorKind::PermissionDenied,
                format!("{name}: cannot read {}: {e}", id_path().display()),
            )
            .with_hint(
                "tracepoint ids are readable by root (or with tracefs permissions relaxed)",
            ));
        }
    };
    encoding(name, &text, parts.modifiers, id_path).map(Some)
}

/// Tracepoint `name`'s encoding: type 2, its config the id `text` holds, `modifiers` applied.
///
/// # Errors
/// [`ErrorKind::InvalidEvent`] where `text` is no id (naming the file at `id_path`) or a
/// modifier is not one a tracepoint takes.
fn encoding(
    name: &str,
    text: &str,
    modifiers: &str,
    id_path: impl Fn() -> PathBuf,
) -> Result<PerfAttr> {
    let id: u64 = text.trim().parse().map_err(|_| {
        Error::invalid_event(format!(
            "{name}: malformed tracepoint id in {}",
            id_path().display()
        ))
    })?;
    let mut encoding = PerfAttr::new(TYPE_TRACEPOINT, id);
    encoding.pmu = Some("tracepoint".to_string());
    // `p` (precise) means nothing to a tracepoint; perf accepts and ignores it.
    let modifiers: String = modifiers.chars().filter(|c| *c != 'p').collect();
    crate::pmus::apply_modifiers(name, &modifiers, &mut encoding)?;
    Ok(encoding)
}

fn did_you_mean(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    format!("; did you mean {}?", quoted.join(", "))
}

/// The error for a tracepoint-shaped name that no tracefs knows: the nearest tracepoints of
/// the subsystem (or the nearest subsystems) when tracefs is readable, PermissionDenied when
/// it is not.
pub fn not_found(system: &System, found: &Found, name: &str) -> Error {
    match found.mounted(system) {
        Ok(tracefs) => {
            let events = tracefs.events_dir();
            let mut message = format!(
                "unknown event `{name}` (and no tracepoint of that name in {})",
                events.display()
            );
            let mut hint = format!(
                "list tracepoints with `ls {}/<subsystem>`",
                events.display()
            );
            if let Some(parts) = split_tracepoint(name) {
                let system_dir = events.join(parts.system);
                if let Some(names) = tracefs.events(parts.system) {
                    let near = counterhal_events::nearest(parts.event, names.into_iter(), 3);
                    let near: Vec<String> = near
                        .iter()
                        .map(|e| format!("{}:{e}", parts.system))
                        .collect();
                    if !near.is_empty() {
                        message += &did_you_mean(&near);
                    }
                    hint = format!("list them with `ls {}`", system_dir.display());
                } else {
                    let subsystems = tracefs.subsystems().into_iter();
                    let near = counterhal_events::nearest(parts.system, subsystems, 3);
                    if !near.is_empty() {
                        message += &format!("; no subsystem `{}`", parts.system);
                        message += &did_you_mean(&near);
                    }
                }
            }
            Error::invalid_event(message).with_hint(hint)
        }
        Err(TracefsState::Denied(root)) => denied(name, &root),
        Err(_) => Error::invalid_event(format!(
            "unknown event `{name}`; tracefs is not mounted, so tracepoints cannot be resolved"
        ))
        .with_hint(
            "mount it as root (mount -t tracefs nodev /sys/kernel/tracing), or let counterhal \
             mount it as root (the counterhal command does; a library asks with \
             Setup::mount_tracefs)",
        ),
    }
}

/// The error for a tracepoint-shaped name where tracefs at `root` is this user's to see not.
pub(crate) fn denied(name: &str, root: &Path) -> Error {
    Error::new(
        ErrorKind::PermissionDenied,
        format!(
            "`{name}` looks like a tracepoint, but {} is not readable by this user",
            root.display()
        ),
    )
    .with_errno(libc::EACCES)
    .with_hint(format!(
        "tracefs is mounted for root only (mode 0700): run as root, or let this user in \
         (e.g. `chmod o+rx {root}` and `chmod -R o+r {root}/events`, or mount it with a \
         `gid=` option); then {}",
        crate::errno::TRACEPOINT_RIGHTS,
        root = root.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_hal::Domain;

    /// Every character in each part, against the rule as written out (perf's modifiers;
    /// subsystems and events as tracefs names them).
    #[test]
    fn each_part_takes_the_characters_its_rule_names() {
        let chars = (0u8..128).map(char::from).chain(['é', 'ſ', 'K']);
        for c in chars.filter(|&c| c != ':') {
            let event_char = c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
            let subsystem_char = event_char || c == '-';
            let modifier_char = "ukhGHp".contains(c);
            assert_eq!(
                looks_like_tracepoint(&format!("s{c}:e")),
                subsystem_char,
                "{c:?}"
            );
            assert_eq!(
                looks_like_tracepoint(&format!("s:e{c}")),
                event_char,
                "{c:?}"
            );
            assert_eq!(
                looks_like_tracepoint(&format!("s:e:{c}")),
                modifier_char,
                "{c:?}"
            );
        }
    }

    #[test]
    fn shape() {
        assert!(looks_like_tracepoint("syscalls:sys_enter_getpid"));
        assert!(looks_like_tracepoint("sched:sched_switch"));
        assert!(looks_like_tracepoint("xhci-hcd:xhci_dbg_address"));
        assert_eq!(
            split_tracepoint("syscalls:sys_enter_getpid:u"),
            Some(TracepointName {
                system: "syscalls",
                event: "sys_enter_getpid",
                modifiers: "u"
            })
        );
        assert!(!looks_like_tracepoint("INST_RETIRED:u"));
        assert!(!looks_like_tracepoint("cycles"));
        assert!(!looks_like_tracepoint("a:"));
        assert!(!looks_like_tracepoint("a:b:zz"));
        assert!(!looks_like_tracepoint("a:b-c"));
        // A part longer than a file name can be names no tracepoint.
        assert!(!looks_like_tracepoint(&format!("x:{}", "a".repeat(256))));
        assert!(looks_like_tracepoint(&format!("x:{}", "a".repeat(255))));
    }

    #[test]
    fn fixture_root() {
        use std::fs;
        let dir = std::env::temp_dir().join(format!("counterhal-tracefs-{}", std::process::id()));
        let event = dir.join("events/demo/hello");
        fs::create_dir_all(&event).unwrap();
        fs::write(event.join("id"), "123\n").unwrap();
        for other in ["hallo", "help", "world"] {
            fs::create_dir_all(dir.join("events/demo").join(other)).unwrap();
        }
        let hyphen = dir.join("events/xhci-hcd/xhci_dbg_address");
        fs::create_dir_all(&hyphen).unwrap();
        fs::write(hyphen.join("id"), "77\n").unwrap();
        let system = System::host().with_tracefs(&dir);
        let found = Found::default();
        // Names no file has are no tracepoints, however they fail: overlong (ENAMETOOLONG),
        // or through a file (ENOTDIR).
        let overlong = format!("x:{}", "a".repeat(4100));
        assert_eq!(resolve(&system, &found, &overlong, false).unwrap(), None);
        assert_eq!(
            resolve(&system, &found, "demo:hello/id", false)
                .ok()
                .flatten(),
            None
        );
        let e = resolve(&system, &found, "demo:hello", false)
            .unwrap()
            .unwrap();
        assert_eq!((e.type_, e.config, e.domain), (2, 123, Domain::ALL));
        let e = resolve(&system, &found, "xhci-hcd:xhci_dbg_address", false)
            .unwrap()
            .unwrap();
        assert_eq!(e.config, 77);
        // perf's modifiers after the name: `:u` counts user mode only.
        let e = resolve(&system, &found, "demo:hello:u", false)
            .unwrap()
            .unwrap();
        assert_eq!(e.domain, Domain::DEFAULT.with_levels(Domain::USER));
        assert!(e.exclude_bits().kernel && !e.exclude_bits().user);
        let e = resolve(&system, &found, "demo:hello:k", false)
            .unwrap()
            .unwrap();
        assert!(e.exclude_bits().user && !e.exclude_bits().kernel);
        assert_eq!(
            resolve(&system, &found, "demo:absent", false).unwrap(),
            None
        );
        // A misspelling lists the nearest tracepoints of that subsystem.
        let error = not_found(&system, &found, "demo:helo");
        let text = error.to_string();
        assert!(
            text.contains("did you mean") && text.contains("`demo:hello`"),
            "{text}"
        );
        assert!(!text.contains("world"), "{text}");
        let error = not_found(&system, &found, "dmeo:hello");
        assert!(error.to_string().contains("`demo`"), "{error}");
        let none = System::host().with_tracefs("/nonexistent");
        assert!(
            not_found(&none, &Found::default(), "a:b")
                .hint()
                .unwrap()
                .contains("mount -t tracefs")
        );
        // What a backend found is kept for it (and nothing for the process): asked with
        // another system's roots, the tracefs found answers; a new backend looks again.
        assert_eq!(found.mounted(&none).unwrap().root(), dir);
        assert_eq!(Found::default().mounted(&none), Err(TracefsState::Absent));
        fs::write(event.join("id"), "x\n").unwrap();
        assert!(resolve(&system, &found, "demo:hello", false).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
