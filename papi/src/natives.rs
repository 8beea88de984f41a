//! Native and preset events by name and code: PAPI's names turned into codes and back, the
//! native table filled as names are looked up or enumerated (`PAPI_enum_cmp_event`), and what
//! `PAPI_query_event` and `PAPI_get_event_info` answer.

use crate::codes::{EBUF, EINVAL, ENOCMP, ENOEVNT, ENOINIT, ENOTPRESET, EPERM, OK};
use crate::info::{self, EventInfo, set_str};
use crate::libpfm4::HypervisorLevel;
use crate::library::{Library, with};
use crate::names::{self, Code, Native};
use crate::perf_natives::Placement;
use crate::presets::{preset, presets};
use crate::release::{Modifier, Release};

/// `PAPI_event_name_to_code`.
pub fn name_to_code(name: &str) -> Result<i32, i32> {
    if let Some(index) = names::preset_index(name) {
        // A preset has its code whether or not it counts here (PAPI's presets round-trip).
        if crate::unlocked::init_state() == 0 {
            return Err(ENOINIT);
        }
        return Ok(names::preset_code(index));
    }
    with(|library| native_code_of(library, name))
}

fn native_code_of(library: &mut Library, name: &str) -> Result<i32, i32> {
    if let Some(rest) = crate::sde::strip(name) {
        return crate::sde::code_of(library, rest);
    }
    if let Some(rest) = crate::powercap::strip(name) {
        return crate::powercap::code_of(library, rest);
    }
    if let Some(code) = crate::uncore::code_of(library, name) {
        return code;
    }
    if library.component.disabled != 0 {
        return Err(ENOEVNT);
    }
    // Each spelling is its own code, as PAPI 7.0's table holds names as given (`strcmp`):
    // `perf::page-faults` is named back as written.
    if let Some(i) = library.natives.iter().position(|n| n.name == name) {
        return Ok(names::native_code(i));
    }
    if refused(name, &library.hypervisor) {
        return Err(ENOEVNT);
    }
    // libpfm4's perf_event PMU, read as libpfm4 reads it (unit masks, qualifiers).
    let (backend_name, placement) = match crate::perf_natives::read(name, &library.hypervisor) {
        Some(read) => {
            let read = read?;
            (read.backend_name, read.placement)
        }
        None => (names::backend_name(name), Default::default()),
    };
    match library.chosen.backend().dyn_resolve(&backend_name) {
        Ok(_) => Ok(register(library, name, backend_name, placement)),
        Err(e) => Err(unresolved(&e)),
    }
}

/// PAPI's answer for a name the backend could not resolve: `PAPI_EPERM` where reading what
/// the event is was denied (a tracepoint's id in a tracefs only root may read, which perf
/// reports as "No permissions to read /sys/kernel/tracing/events/..."), so that the caller
/// learns to ask for the privilege rather than that the event does not exist; else
/// `PAPI_ENOEVNT`.
fn unresolved(error: &facade::Error) -> i32 {
    match error.kind() {
        facade::ErrorKind::PermissionDenied => EPERM,
        _ => ENOEVNT,
    }
}

/// Names that get no code though the backend might read them, because PAPI 7.0 gives them
/// none and refuses to add them (so a code from `PAPI_event_name_to_code` always names an
/// event `PAPI_add_event` takes where it counts): a `PAPI_` name (any case) that is no preset
/// (`PAPI_TOT_INS:u`, `papi_tot_ins`: no component of PAPI's claims it, though the backend
/// reads presets in any case), a `perf::` name that is not
/// libpfm4's (an event of another spelling, `perf::PAGE-FAULTS\t`), any name with blanks or
/// control characters, and a `pmu::` prefix spelled otherwise than PAPI spells it
/// (`PERF::PAGE-FAULTS`).
fn refused(name: &str, hypervisor: &HypervisorLevel) -> bool {
    name.get(..5)
        .is_some_and(|p| p.eq_ignore_ascii_case("PAPI_"))
        || crate::perf_natives::strip_perf(name).is_some()
            && crate::perf_natives::read(name, hypervisor).is_none()
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
        || name
            .split_once("::")
            .is_some_and(|(pmu, _)| pmu != "perf" && pmu.eq_ignore_ascii_case("perf"))
}

/// The code of native `name`, added to the table (with its description) if new.
fn register(
    library: &mut Library,
    name: &str,
    backend_name: String,
    placement: crate::perf_natives::Placement,
) -> i32 {
    if let Some(i) = library.natives.iter().position(|n| n.name == name) {
        return names::native_code(i);
    }
    library.natives.push(Native {
        name: name.to_string(),
        backend_name,
        description: names::describe(&library.chosen, &library.libpfm, &library.hypervisor, name),
        placement,
        sde: None,
        powercap: None,
        uncore: false,
    });
    names::native_code(library.natives.len() - 1)
}

/// `PAPI_NTV_ENUM_UMASKS` from native `i`: from the event, its first unit mask; from an event
/// with a unit mask, the next one (`EVENT:UMASK`, as libpfm4 names them for PAPI's perf_event
/// component); `PAPI_ENOEVNT` past the last or for an event without unit masks.
fn next_unit_mask(library: &mut Library, i: usize) -> Result<i32, i32> {
    let name = library.natives.get(i).ok_or(ENOEVNT)?.name.clone();
    if let Some(code) = next_perf_qualifier(library, &name) {
        return code;
    }
    let (_, masks) = names::model_event(&library.chosen, &library.libpfm, &name).ok_or(ENOEVNT)?;
    let (event, current) = names::split_unit_mask(&name);
    let next = match current {
        None => 0,
        Some(u) => {
            masks
                .iter()
                .position(|(m, _)| m.eq_ignore_ascii_case(u))
                .ok_or(ENOEVNT)?
                + 1
        }
    };
    let (mask, _) = masks.get(next).ok_or(ENOEVNT)?;
    let full = format!("{event}:{mask}");
    Ok(register_as_named(library, &full))
}

/// Registers `name` with the backend name and placement it reads as.
fn register_as_named(library: &mut Library, name: &str) -> i32 {
    let (backend_name, placement) = match crate::perf_natives::read(name, &library.hypervisor) {
        Some(Ok(read)) => (read.backend_name, read.placement),
        _ => (names::backend_name(name), Default::default()),
    };
    register(library, name, backend_name, placement)
}

/// `PAPI_NTV_ENUM_UMASKS` on a `perf::` event of libpfm4's table: its unit masks, then its
/// qualifiers as `name=0`, as PAPI 7.0's perf_event component enumerates them (papi_native_avail
/// prints them under the event). `None` for a name outside the table.
fn next_perf_qualifier(library: &mut Library, name: &str) -> Option<Result<i32, i32>> {
    let (event, after) = crate::perf_natives::event_of(name)?;
    let current = after.map(|rest| rest.rsplit(':').next().unwrap_or(rest));
    let parts: Vec<String> = event
        .unit_masks()
        .map(|(m, _)| m.to_string())
        .chain(
            crate::perf_natives::qualifiers(&event, &library.hypervisor)
                .map(|(m, _)| format!("{m}=0")),
        )
        .collect();
    let next = match current {
        None => 0,
        Some(c) => match parts.iter().position(|p| p.eq_ignore_ascii_case(c)) {
            Some(at) => at + 1,
            None => return Some(Err(ENOEVNT)),
        },
    };
    let Some(part) = parts.get(next) else {
        return Some(Err(ENOEVNT));
    };
    let full = format!("{}:{part}", event.name());
    Some(Ok(register_as_named(library, &full)))
}

/// `PAPI_event_code_to_name`.
pub fn code_to_name(code: i32) -> Result<String, i32> {
    match names::decode(code) {
        Some(Code::Preset(i)) => preset(i).map(|p| p.name().to_string()).ok_or(ENOEVNT),
        Some(Code::Native(i)) => with(|library| {
            library
                .natives
                .get(i)
                .map(|n| n.name.clone())
                .ok_or(ENOEVNT)
        }),
        // A preset code past PAPI 7.0's table.
        None if is_preset_code(code) => Err(ENOTPRESET),
        None => Err(ENOEVNT),
    }
}

/// PAPI's `PAPI_MAX_STR_LEN`: the room `PAPI_event_code_to_name` writes into.
const NAME_ROOM: usize = 128;

/// What `PAPI_event_code_to_name` writes of `name`, event `code`'s, into its
/// `PAPI_MAX_STR_LEN` (128) bytes, as PAPI 7.0's perf_event component measures a native name
/// (`_pe_libpfm4_ntv_code_to_name`): an event name that does not fit with its NUL is
/// `PAPI_EBUF` with nothing written; one with unit masks or qualifiers is `PAPI_EBUF` with the
/// event's name alone written unless the event's name, 8 bytes and the qualifiers fit. Presets
/// and the `sde` component's names are whole.
pub fn fitted(code: i32, name: &str) -> Result<&str, (i32, Option<&str>)> {
    if !matches!(names::decode(code), Some(Code::Native(_)))
        || crate::sde::strip(name).is_some()
        || crate::powercap::strip(name).is_some()
    {
        return Ok(name);
    }
    let (event, masks) = names::split_unit_mask(name);
    if event.len() >= NAME_ROOM {
        return Err((EBUF, None));
    }
    match masks {
        Some(masks) if !masks.is_empty() && event.len() + 8 + masks.len() >= NAME_ROOM => {
            Err((EBUF, Some(event)))
        }
        _ => Ok(name),
    }
}

/// PAPI 7.0's room for presets (`PAPI_MAX_PRESET_EVENTS`): a preset code below it but past
/// the table is an empty slot (`PAPI_ENOEVNT` from `PAPI_get_event_info` and
/// `PAPI_query_event`), one from it on is no preset at all (`PAPI_ENOTPRESET`), as the
/// side-by-side test shows PAPI 7.0 answering.
pub(crate) const MAX_PRESET_EVENTS: u32 = 128;

/// The answer of `PAPI_get_event_info` and `PAPI_query_event` for a preset code past the
/// table.
fn empty_preset_slot(code: i32) -> i32 {
    if (code as u32 & !names::PRESET_MASK) < MAX_PRESET_EVENTS {
        ENOEVNT
    } else {
        ENOTPRESET
    }
}

/// Whether `code` has the preset bit alone.
fn is_preset_code(code: i32) -> bool {
    let code = code as u32;
    code & names::PRESET_MASK != 0 && code & names::NATIVE_MASK == 0
}

/// The backend name of event `code`.
/// Where native `code` must run (presets: anywhere).
pub(crate) fn placement_of(library: &Library, code: i32) -> Placement {
    match names::decode(code) {
        Some(Code::Native(i)) => library
            .natives
            .get(i)
            .map(|n| n.placement)
            .unwrap_or_default(),
        _ => Placement::default(),
    }
}

pub(crate) fn backend_name_of(library: &mut Library, code: i32) -> Result<String, i32> {
    match names::decode(code) {
        Some(Code::Preset(i)) => Ok(preset_backend_name(library, i)),
        Some(Code::Native(i)) => library
            .natives
            .get(i)
            .map(|n| n.backend_name.clone())
            .ok_or(ENOEVNT),
        None if is_preset_code(code) => Err(ENOTPRESET),
        // Neither a preset nor a native code.
        None => Err(EINVAL),
    }
}

/// The name the backend is asked for preset `index`: the preset's own, or, where the backend
/// resolves it to nothing and its perf twin ([`crate::presets::perf_twin`]) counts here, the
/// twin. Decided once.
pub(crate) fn preset_backend_name(library: &mut Library, index: usize) -> String {
    if let Some(name) = library.preset_names.get(&index) {
        return name.clone();
    }
    // Every index a code decodes to is a preset's.
    let preset = preset(index).map_or("", |p| p.name());
    let backend = library.chosen.backend();
    let name = match crate::presets::perf_twin(preset) {
        Some(twin)
            if backend.dyn_resolve(preset).is_err() && facade::query(backend, twin).usable() =>
        {
            twin
        }
        _ => preset,
    };
    library.preset_names.insert(index, name.to_string());
    name.to_string()
}

fn preset_usable(library: &mut Library, index: usize) -> bool {
    if library.component.disabled != 0 {
        return false;
    }
    if let Some(&usable) = library.preset_usable.get(&index) {
        return usable;
    }
    let name = preset_backend_name(library, index);
    let usable = facade::query(library.chosen.backend(), &name).usable();
    library.preset_usable.insert(index, usable);
    usable
}

/// `PAPI_query_event`: `PAPI_OK` when the event can be counted here. As PAPI 7.0's (papi.c),
/// a preset that does not count and an empty preset slot are `PAPI_ENOEVNT` by a plain
/// `return`, which leaves the error `PAPI_perror` prints as it was; its other answers are
/// kept for it (`papi_return`): a preset code past PAPI's room `PAPI_ENOTPRESET`, a native code
/// past the table `PAPI_ENOCMP` (no component has it, as `PAPI_add_event` answers), any other
/// code `PAPI_ENOEVNT` (tests/c/errors.c).
pub fn query_event(code: i32) -> i32 {
    let result = with(|library| match names::decode(code) {
        Some(Code::Preset(i)) => Ok(if preset_usable(library, i) {
            OK
        } else {
            ENOEVNT
        }),
        Some(Code::Native(i)) if i < library.natives.len() => Ok(OK),
        Some(Code::Native(_)) => Err(ENOCMP),
        None if is_preset_code(code) => match empty_preset_slot(code) {
            ENOEVNT => Ok(ENOEVNT),
            past => Err(past),
        },
        _ => Err(ENOEVNT),
    });
    result.unwrap_or_else(|e| e)
}

/// The user-defined bit of an event code (`PAPI_UE_MASK`).
const USER_DEFINED_MASK: u32 = 0x2000_0000;

/// `PAPI_get_event_info`.
pub fn event_info(code: i32) -> Result<Box<EventInfo>, i32> {
    with(|library| {
        let mut info = Box::new(info::empty_event(code as u32));
        match names::decode(code) {
            Some(Code::Preset(i)) => {
                let preset = preset(i).ok_or(ENOEVNT)?;
                set_str(&mut info.symbol, preset.name());
                set_str(&mut info.long_descr, preset.long_description());
                set_str(&mut info.short_descr, preset.short_description());
                set_str(&mut info.derived, "NOT_DERIVED");
                info.event_type = preset.categories();
                let name = preset_backend_name(library, i);
                if preset_usable(library, i)
                    && let Ok(resolved) = library.chosen.backend().dyn_resolve(&name)
                {
                    let terms = &resolved.terms;
                    info.count = terms.len().min(info::INFO_TERMS) as u32;
                    let derived = if terms.iter().any(|t| t.factor != 1) {
                        "DERIVED_POSTFIX"
                    } else if terms.iter().any(|t| t.sign == counterhal_hal::Sign::Minus) {
                        "DERIVED_SUB"
                    } else if terms.len() > 1 {
                        "DERIVED_ADD"
                    } else {
                        "NOT_DERIVED"
                    };
                    set_str(&mut info.derived, derived);
                    for (k, term) in terms.iter().take(info::INFO_TERMS).enumerate() {
                        set_str(&mut info.name[k], &term.request.name);
                        let native = native_code_of(library, &term.request.name).unwrap_or(0);
                        info.code[k] = native as u32;
                    }
                }
            }
            Some(Code::Native(i)) => {
                // A code past the table names no component (PAPI 7.0: `PAPI_ENOCMP`).
                let native = library.natives.get(i).ok_or(ENOCMP)?;
                set_str(&mut info.symbol, &native.name);
                set_str(&mut info.long_descr, &native.description);
                if native.sde.is_some() {
                    crate::sde::describe(library.components.sde, native, &mut info);
                }
                if native.powercap.is_some() {
                    crate::powercap::describe(&mut info);
                }
                if native.uncore {
                    crate::uncore::describe(&mut info);
                }
            }
            None if is_preset_code(code) => return Err(empty_preset_slot(code)),
            // PAPI 7.0: a code of no kind (neither preset, native nor user-defined) is
            // `PAPI_ENOTPRESET`, as for code 0, which a tool asks about when a name had none.
            None if code as u32 & USER_DEFINED_MASK == 0 => return Err(ENOTPRESET),
            None => return Err(ENOEVNT),
        }
        Ok(info)
    })
}

/// `PAPI_enum_cmp_event` (and `PAPI_enum_event` for component 0): the next code after
/// `code` under `modifier`, or `None` at the end.
pub fn enumerate(code: i32, modifier: i32, cidx: i32) -> Result<i32, i32> {
    if cidx == crate::sde::CIDX {
        return with(|library| crate::sde::enumerate(library, code, modifier));
    }
    if cidx == crate::powercap::CIDX {
        return with(|library| crate::powercap::enumerate(library, code, modifier));
    }
    if cidx == crate::uncore::CIDX {
        return with(|library| crate::uncore::enumerate(library, code, modifier));
    }
    if cidx != 0 {
        return Err(ENOCMP);
    }
    // The end of a list is answered by a plain `return` in PAPI 7.0 (papi.c), which leaves the
    // error PAPI_perror prints as it was: it is the inner result, not kept; a code that is
    // neither a preset nor a native event is kept (`papi_return`).
    let walked = with(|library| match names::decode(code) {
        Some(Code::Preset(i)) => {
            // PAPI_ENUM_FIRST and PAPI_ENUM_EVENTS walk every preset; a modifier with the bit
            // of PAPI_PRESET_ENUM_AVAIL (2) those that count here, as PAPI 7.0 tests it
            // (`modifier & PAPI_PRESET_ENUM_AVAIL`); the categories, none we classify: all.
            let first = modifier == 1;
            if first {
                return Ok(Ok(names::preset_code(0)));
            }
            for next in i + 1..presets().len() {
                if modifier & 2 == 0 || preset_usable(library, next) {
                    return Ok(Ok(names::preset_code(next)));
                }
            }
            Ok(Err(ENOEVNT))
        }
        // PAPI 7.0's PAPI_enum_cmp_event answers PAPI_EINVAL for whatever a component's
        // native enumeration refuses, the end of the list included (papi.c), and for a code
        // that is neither a preset nor a native event.
        Some(Code::Native(i)) => Ok(next_native(library, i, modifier).map_err(|_| EINVAL)),
        None => Err(EINVAL),
    });
    walked.and_then(|next| next)
}

/// How `PAPI_enum_event` or `PAPI_enum_cmp_event` was called.
#[derive(Clone, Copy, Debug)]
pub struct Walk {
    /// The release the program speaks.
    pub release: Release,
    /// The component (0 for `PAPI_enum_event`).
    pub cidx: i32,
    /// Whether it is `PAPI_enum_event`.
    pub enum_event: bool,
    /// Whether the component is disabled.
    pub disabled: bool,
}

/// `PAPI_enum_event` and `PAPI_enum_cmp_event` as `walk` says: 7.0's and 7.1's as
/// [`enumerate`]; 7.2's with its modifiers' numbers, which [`Release::modifier`] reads, as
/// PAPI 7.2's papi.c answers: `PAPI_enum_event` takes the walks of events, presets and unit
/// masks alone (`PAPI_EINVAL` for another modifier), and the walk of every preset or those
/// that count ends with `PAPI_EINVAL`.
pub fn enumerate_in(walk: Walk, code: i32, modifier: i32) -> Result<i32, i32> {
    let Walk {
        release,
        cidx,
        enum_event,
        disabled,
    } = walk;
    if !release.is_7_2() {
        return enumerate(code, modifier, cidx);
    }
    let modifier = release.modifier(modifier);
    // EVENTS, FIRST, PRESET_ENUM_AVAIL, NTV_ENUM_UMASKS, NTV_ENUM_UMASK_COMBOS and 7.2's three.
    let taken = !matches!(modifier, Modifier::Classic(m) if ![0, 1, 2, 15, 16].contains(&m));
    if enum_event && !taken {
        return Err(EINVAL);
    }
    match (names::decode(code), modifier) {
        (Some(Code::Preset(_)), _) if disabled => Err(ENOCMP),
        (Some(Code::Preset(i)), _) => presets_7_2(i, modifier, cidx, enum_event),
        (_, Modifier::Classic(m)) => enumerate(code, m, cidx),
        // A native code with a walk of presets: the component knows no such walk.
        _ => Err(EINVAL),
    }
}

/// The preset after preset `i` under 7.2's `modifier`, on component `cidx`: the CPU's presets
/// are the library's; PAPI 7.2 numbers the presets of its other components after the CPU's
/// 128 slots, and ours have none (the first is past the CPU's, the next none). The ends of
/// the walks are plain `return`s in PAPI 7.2
/// (not kept for `PAPI_perror`); a modifier that walks no presets is kept (`papi_return`).
fn presets_7_2(i: usize, modifier: Modifier, cidx: i32, enum_event: bool) -> Result<i32, i32> {
    if cidx != 0 {
        if !(0..crate::devices::COMPONENTS).contains(&cidx) {
            return Err(ENOCMP);
        }
        return match modifier {
            Modifier::Classic(1) => Ok(names::preset_code(PRESET_SLOTS)),
            Modifier::Classic(0 | 2) => Err(EINVAL),
            _ => Err(crate::library::fail(EINVAL)),
        };
    }
    let walked = with(|library| {
        let mut next = |available: bool| {
            (i + 1..presets().len()).find(|&n| !available || preset_usable(library, n))
        };
        Ok(match modifier {
            Modifier::Classic(1) => Ok(names::preset_code(0)),
            Modifier::Classic(m @ (0 | 2)) => next(m == 2).map(names::preset_code).ok_or(EINVAL),
            Modifier::CpuPresets { available } if enum_event => {
                next(available).map(names::preset_code).ok_or(ENOEVNT)
            }
            Modifier::FirstComponentPreset if enum_event => Err(ENOEVNT),
            _ => return Err(EINVAL),
        })
    });
    walked.and_then(|next| next)
}

/// PAPI's room for the CPU's presets (`PAPI_MAX_PRESET_EVENTS`).
const PRESET_SLOTS: usize = 128;

/// The native event after native `i` under `modifier`, as the perf_event component walks
/// them: `PAPI_NTV_ENUM_UMASKS` (15) the unit masks of the CPU model's events; the other
/// native modifiers (combinations, EAR, groups) none.
fn next_native(library: &mut Library, i: usize, modifier: i32) -> Result<i32, i32> {
    if modifier == 15 {
        return next_unit_mask(library, i);
    }
    if modifier > 15 {
        return Err(ENOEVNT);
    }
    if modifier == 1 {
        return if library.listed > 0 {
            Ok(names::native_code(0))
        } else {
            Err(ENOEVNT)
        };
    }
    if i + 1 < library.listed {
        Ok(names::native_code(i + 1))
    } else {
        Err(ENOEVNT)
    }
}
