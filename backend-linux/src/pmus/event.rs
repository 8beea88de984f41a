//! perf's `pmu/term=value,alias/modifiers` syntax on the PMUs of a sysfs tree, read as perf
//! 6.1 reads it (its `parse_events_add_pmu`, `perf_pmu__check_alias` and
//! `perf_pmu__config_terms`):
//!
//! - the PMU is the one of that name or `alias` file; where there is none, every PMU the name
//!   stands for as perf's wildcard reads it (`uncore_imc` and `imc` are `uncore_imc_0`,
//!   `uncore_imc_1`, ...: the name, `uncore_` dropped where the user did not write it,
//!   followed by nothing or by `_` and a digit);
//! - a bare term that is no format field but an `events/` alias (any case) is replaced by the
//!   alias's terms, and the alias's `.scale`, `.unit`, `.snapshot` and `.per-pkg` go with the
//!   event (two aliases that both set one are refused, as perf refuses them);
//! - `config`, `config1`, `config2` (and `config3`, which perf takes from 6.3) set their word
//!   first; then each format term, in order, sets its value's bits in its field without
//!   clearing the others (so `cas_count_read,umask=0x1` keeps the alias's umask, as in perf);
//!   a bare format term is 1; a value wider than its field and a term the PMU lacks are
//!   refused with perf's words.
//! - on a hybrid core PMU (`cpu_core`, `cpu_atom`: a `cpu_` name with a `cpus` file), one
//!   term that is neither a format field nor an alias, but a generic hardware or cache event's
//!   name, is that event on that PMU, as perf 6.1's `parse_events__inside_hybrid_pmu` reads
//!   it: `cpu_core/cycles/` is `PERF_TYPE_HARDWARE` (`cpu_atom/LLC-load-misses/`
//!   `PERF_TYPE_HW_CACHE`) with the PMU's type in config's upper 32 bits (the extended type),
//!   on the PMU's CPUs (`cpu_core/cpu-cycles/`, an alias, is the alias).
//!
//! - perf's own terms that set no config bits (its parse-events.l): `name=NAME` names the
//!   event in what is shown (`msr/tsc,name=foo/` counts as `foo`, in counting and sampling
//!   alike); `period=N` and `freq=N`, perf's per-event sampling period and frequency, are
//!   refused by name with that meaning: a counterhal sampler takes its rate in its options,
//!   and counting has none.
//!
//! counterhal refuses two things perf takes: the same term given twice with different values
//! (perf ORs `event=1,event=2` into 3), and `period=N`, which perf stat takes and ignores (it
//! refuses `freq=N`: "'freq' is not usable in 'perf stat'").

use counterhal_system::PmuDevices;

use counterhal_events::perf::{TYPE_HARDWARE, TYPE_HW_CACHE, cache_config, hardware_config};
use counterhal_events::{PmuTerms, parse_term_list};
pub use counterhal_hal::PmuEvent;
use counterhal_hal::{CacheEvent, Domain, Error, HardwareEvent, PerfAttr, Result};

use super::alias::Alias;
use super::format::ConfigWord;
use super::pmu::{Pmu, list_pmus};

/// Splits `pmu/terms/modifiers`; `None` when `event` is not in that form.
fn split(event: &str) -> Option<(&str, &str, &str)> {
    let (pmu, rest) = event.split_once('/')?;
    let (terms, modifiers) = rest.rsplit_once('/')?;
    (!pmu.is_empty() && !terms.contains('/')).then_some((pmu, terms, modifiers))
}

fn malformed(event: &str) -> Error {
    Error::invalid_event(format!("malformed PMU event `{event}`"))
        .with_hint("write pmu/term=value,.../ e.g. cpu/event=0xc0,umask=0x0/ or msr/tsc/")
}

/// The PMUs `name` stands for under `devices`: the one so named (or whose `alias` file says
/// so), else every PMU perf's wildcard matches; empty when none.
pub(crate) fn find_pmus(devices: &PmuDevices, name: &str) -> Vec<Pmu> {
    if let Some(pmu) = Pmu::named(devices, name) {
        return vec![pmu];
    }
    list_pmus(devices)
        .iter()
        .filter_map(|dir| Pmu::open(devices, dir).ok())
        .filter(|pmu| {
            std::iter::once(Some(pmu.name.clone()))
                .chain([pmu.alias_name()])
                .flatten()
                .any(|candidate| wildcard_matches(&candidate, name))
        })
        .collect()
}

/// perf 6.1's wildcard: `pmu` (without `uncore_` where `name` lacks it) is `name` followed by
/// nothing or by `_` and a digit (`perf_pmu__valid_suffix`).
fn wildcard_matches(pmu: &str, name: &str) -> bool {
    let pmu = match (pmu.strip_prefix("uncore_"), name.starts_with("uncore_")) {
        (Some(stripped), false) => stripped,
        _ => pmu,
    };
    match pmu.strip_prefix(name) {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix('_')
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_digit()),
        None => false,
    }
}

/// Every PMU `event` (`pmu/terms/modifiers`) opens on under `devices`, with its attr, CPUs,
/// scale and unit, as perf reads the event; `None` when `event` is not in that form or names no
/// PMU there (a tracepoint, a breakpoint, a PMU this tree lacks).
///
/// Where a wildcard matches several PMUs, each one the terms fit is opened (perf skips the
/// others); where they fit none, the first refusal is the answer.
///
/// # Errors
/// [`counterhal_hal::ErrorKind::InvalidEvent`] for a term the PMU lacks, a value wider than
/// its field, a term given twice with different values, two aliases that both set a unit,
/// scale or snapshot, an unknown modifier or a malformed string.
pub fn pmu_events(devices: &PmuDevices, event: &str) -> Option<Result<Vec<PmuEvent>>> {
    let (name, terms, modifiers) = split(event)?;
    let pmus = find_pmus(devices, name);
    if pmus.is_empty() {
        return None;
    }
    let mut events = Vec::new();
    let mut first_error = None;
    for pmu in &pmus {
        match encode_on(pmu, event, terms, modifiers) {
            Ok(opened) => events.push(opened),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    Some(match (events.is_empty(), first_error) {
        (true, Some(error)) => Err(error),
        _ => Ok(events),
    })
}

/// Parses `pmu/term[=value],.../[modifiers]` on the one PMU so named (or aliased) under
/// `devices`: its attr, CPUs, scale and unit.
///
/// # Errors
/// As [`pmu_events`], and for a PMU `devices` lacks (the message lists those present; the
/// hint names the boxes a wildcard would take).
pub fn parse_pmu_event(devices: &PmuDevices, event: &str) -> Result<PmuEvent> {
    let (name, terms, modifiers) = split(event).ok_or_else(|| malformed(event))?;
    let pmu = match Pmu::open(devices, name) {
        Ok(pmu) => pmu,
        Err(error) => {
            let boxes: Vec<String> = find_pmus(devices, name)
                .into_iter()
                .map(|p| p.name)
                .collect();
            return Err(match boxes.first() {
                Some(first) => error.with_hint(format!(
                    "perf opens `{name}` on every PMU it stands for ({}); name one: \
                     {first}/{terms}/{modifiers}",
                    boxes.join(", ")
                )),
                None => error,
            });
        }
    };
    encode_on(&pmu, event, terms, modifiers)
}

/// The terms as perf expands them: each bare term that is no format field but an alias
/// replaced by the alias's terms; the aliases that say how to show the count, in order.
fn expand(pmu: &Pmu, event: &str, terms: &str) -> Result<(PmuTerms, Vec<Alias>)> {
    let parse = |terms: &str| {
        parse_term_list(terms).map_err(|e| {
            let error = Error::from(e).context(event);
            match error.message().contains("not a number") {
                true => error.with_hint("values are decimal or 0x-prefixed hexadecimal"),
                false => error,
            }
        })
    };
    let mut expanded = Vec::new();
    let mut shown: Vec<Alias> = Vec::new();
    for (name, value) in parse(terms)? {
        let alias = match value {
            None if pmu.format(&name)?.is_none() => pmu.alias(&name)?,
            _ => None,
        };
        let Some(alias) = alias else {
            expanded.push((name, value));
            continue;
        };
        if let Some(other) = shown.iter().find(|a| {
            (a.unit.is_some() && alias.unit.is_some())
                || (a.scale.is_some() && alias.scale.is_some())
                || (a.snapshot && alias.snapshot)
        }) {
            return Err(Error::invalid_event(format!(
                "{event}: aliases `{}` and `{}` both set a unit, scale or snapshot",
                other.name, alias.name
            ))
            .with_hint("perf takes one alias that says how to show the count per event"));
        }
        expanded.extend(parse(&alias.terms)?);
        if alias.shows() {
            shown.push(alias);
        }
    }
    Ok((expanded, shown))
}

/// perf's own terms among `terms` that set no config bits (parse-events.l's `name`, `period`,
/// `freq`): the others, as written, and the event's name where `name=` gives one.
///
/// # Errors
/// [`counterhal_hal::ErrorKind::InvalidEvent`] for `period=` and `freq=` (perf's sampling
/// terms, named with their meaning), a name that is not perf's (letters, digits, `_`, `-`,
/// `.`, `:`, `*`, `?`; first a letter, `_`, `*` or `?`) and two different names.
fn perf_terms(event: &str, terms: &str) -> Result<(String, Option<String>)> {
    let mut kept = Vec::new();
    let mut name: Option<&str> = None;
    for term in terms.split(',') {
        let (key, value) = term.split_once('=').unwrap_or((term, ""));
        match key.trim().to_ascii_lowercase().as_str() {
            "name" => {
                let value = value.trim();
                if !is_perf_name(value) {
                    return Err(Error::invalid_event(format!(
                        "{event}: `name` takes perf's name of the event, not `{value}`"
                    ))
                    .with_hint(
                        "a name is letters, digits, _, -, ., :, * and ?, starting with a letter, \
                         _, * or ? (name=foo)",
                    ));
                }
                if name.is_some_and(|given| given != value) {
                    return Err(Error::invalid_event(format!(
                        "{event}: `name` given twice with different names"
                    )));
                }
                name = Some(value);
            }
            key @ ("period" | "freq") => return Err(sampling_term(event, key)),
            _ => kept.push(term),
        }
    }
    Ok((kept.join(","), name.map(str::to_string)))
}

/// Whether `name` is a name perf 6.1 takes after `name=` (its lexer's `name_minus`).
fn is_perf_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '*' | '?'))
        && chars
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '*' | '?' | '.' | ':'))
}

/// The refusal of perf's sampling term `term` (`period` or `freq`), with what perf does with it.
fn sampling_term(event: &str, term: &str) -> Error {
    let (what, in_stat, option) = match term {
        "freq" => (
            "frequency",
            "perf stat refuses it",
            "SampleOptions::frequency",
        ),
        _ => (
            "period",
            "perf stat counts as without it",
            "SampleOptions::period",
        ),
    };
    Error::invalid_event(format!(
        "{event}: `{term}` is perf's sampling {what} of this one event (perf record samples it \
         so; {in_stat}), which counterhal does not take in an event's terms"
    ))
    .with_hint(format!(
        "drop `{term}=`: counting has no sampling {what}, and a sampler takes its {what} in its \
         options ({option}; PAPI_overflow's threshold)"
    ))
}

/// The event on `pmu`.
fn encode_on(pmu: &Pmu, event: &str, terms: &str, modifiers: &str) -> Result<PmuEvent> {
    let (terms, name) = perf_terms(event, terms)?;
    let mut opened = encode_terms_on(pmu, event, &terms, modifiers)?;
    opened.name = name;
    Ok(opened)
}

/// The event of PMU terms `terms` (perf's own taken out) on `pmu`.
fn encode_terms_on(pmu: &Pmu, event: &str, terms: &str, modifiers: &str) -> Result<PmuEvent> {
    if let Some((type_, config)) = hybrid_generic(pmu, terms)? {
        let mut attr = PerfAttr::new(type_, config | u64::from(pmu.type_) << 32);
        attr.pmu = Some(pmu.name.clone());
        apply_modifiers(event, modifiers, &mut attr)?;
        return Ok(PmuEvent {
            pmu: pmu.name.clone(),
            name: None,
            cpus: pmu.cpus()?,
            scale: None,
            unit: None,
            snapshot: false,
            per_pkg: false,
            attr,
        });
    }
    let (terms, shown) = expand(pmu, event, terms)?;
    let mut attr = PerfAttr::new(pmu.type_, 0);
    attr.pmu = Some(pmu.name.clone());
    // perf's hard-coded terms first (`config_attr`), then the format fields (`perf_pmu__config`).
    for (name, value) in &terms {
        if let Some(word) = ConfigWord::from_name(name) {
            *word.slot(&mut attr) = value.unwrap_or(1);
        }
    }
    for (name, value) in &terms {
        if ConfigWord::from_name(name).is_some() {
            continue;
        }
        match pmu.format(name)? {
            Some(field) => field
                .merge(name, value.unwrap_or(1), &mut attr)
                .map_err(|e| e.context(event))?,
            None => return Err(unknown_term(pmu, event, name)),
        }
    }
    apply_modifiers(event, modifiers, &mut attr)?;
    let first = |get: fn(&Alias) -> Option<String>| shown.iter().find_map(get);
    Ok(PmuEvent {
        pmu: pmu.name.clone(),
        name: None,
        cpus: pmu.cpus()?,
        scale: shown.iter().find_map(|a| a.scale),
        unit: first(|a| a.unit.clone()),
        snapshot: shown.iter().any(|a| a.snapshot),
        per_pkg: shown.iter().any(|a| a.per_pkg),
        attr,
    })
}

/// The type and config of the generic hardware or cache event `terms` names on a hybrid core
/// PMU, where it is one term that is neither a format field nor an alias of the PMU (perf
/// 6.1's `parse_events__inside_hybrid_pmu` and `perf_pmu__hybrid_mounted`).
fn hybrid_generic(pmu: &Pmu, terms: &str) -> Result<Option<(u32, u64)>> {
    let hybrid = pmu.name.starts_with("cpu_") && pmu.lists_core_cpus();
    if !hybrid || terms.contains([',', '=']) {
        return Ok(None);
    }
    let generic = match (
        HardwareEvent::from_name(terms),
        CacheEvent::from_name(terms),
    ) {
        (Some(hardware), _) => (TYPE_HARDWARE, hardware_config(hardware)),
        (None, Some(cache)) => (TYPE_HW_CACHE, cache_config(cache)),
        (None, None) => return Ok(None),
    };
    if pmu.format(terms)?.is_some() || pmu.alias(terms)?.is_some() {
        return Ok(None);
    }
    Ok(Some(generic))
}

fn unknown_term(pmu: &Pmu, event: &str, name: &str) -> Error {
    let mut valid = pmu.format_names();
    valid.extend(["config", "config1", "config2", "config3"].map(String::from));
    let aliases = pmu.alias_names().join(", ");
    Error::invalid_event(format!(
        "{event}: unknown term `{name}` for PMU `{}`",
        pmu.name
    ))
    .with_hint(format!(
        "valid terms: {}; events: [{aliases}]",
        valid.join(",")
    ))
}

/// Applies perf's event modifier letters after the closing `/`: `u`, `k`, `h` (the privilege
/// levels counted), `G`, `H` (guest, host); `p` and `P` ask for sampling precision, which
/// counting ignores (`encode` shows it as `precise_ip`).
///
/// # Errors
/// [`counterhal_hal::ErrorKind::InvalidEvent`] for an unknown letter.
pub fn apply_modifiers(event: &str, modifiers: &str, encoding: &mut PerfAttr) -> Result<()> {
    if modifiers.is_empty() {
        return Ok(());
    }
    let mut levels = Domain::NONE;
    let mut contexts = Domain::NONE;
    for letter in modifiers.chars() {
        match letter {
            'u' => levels |= Domain::USER,
            'k' => levels |= Domain::KERNEL,
            'h' => levels |= Domain::HYPERVISOR,
            'G' => contexts |= Domain::GUEST,
            'H' => contexts |= Domain::HOST,
            'p' | 'P' => {}
            _ => {
                return Err(Error::invalid_event(format!(
                    "{event}: unknown modifier `{letter}`"
                ))
                .with_hint(
                    "modifiers are u (user), k (kernel), h (hypervisor), G (guest), H (host), \
                     p and P (sampling precision)",
                ));
            }
        }
    }
    let mut domain = encoding.domain;
    if !levels.is_empty() {
        domain = domain.with_levels(levels);
    }
    if !contexts.is_empty() {
        domain = domain
            .difference(Domain::GUEST | Domain::HOST)
            .intersection(Domain::ALL)
            | contexts;
    }
    encoding.domain = domain;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The PMUs of machine tree `name` (`spr-2s`).
    fn machine(name: &str) -> PmuDevices {
        PmuDevices::at(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/machines")
                .join(name)
                .join("bus/event_source/devices"),
        )
    }

    /// (PMU, type, config, config1, CPUs) of each PMU `event` opens on.
    fn opens(devices: &PmuDevices, event: &str) -> Vec<(String, u32, u64, u64, Vec<i32>)> {
        let mut list: Vec<_> = pmu_events(devices, event)
            .expect("a PMU event here")
            .unwrap_or_else(|e| panic!("{event}: {e}"))
            .into_iter()
            .map(|e| {
                (
                    e.pmu.clone(),
                    e.attr.type_,
                    e.attr.config,
                    e.attr.config1,
                    e.open_cpus(),
                )
            })
            .collect();
        list.sort();
        list
    }

    fn refusal(devices: &PmuDevices, event: &str) -> String {
        match pmu_events(devices, event) {
            Some(Err(error)) => error.to_string(),
            other => panic!("{event}: {other:?}"),
        }
    }

    /// Oracle: perf 6.1 on the Sapphire Rapids tree (`perf stat -vv -a -e EVENT`, by hand;
    /// tests/perf_pmus.rs runs it for every alias): the attrs and CPUs it printed.
    #[test]
    fn perf_reads_these_so() {
        let spr = machine("spr-2s");
        let both = vec![0, 56];
        assert_eq!(
            opens(&spr, "uncore_imc_1/cas_count_write/"),
            [("uncore_imc_1".into(), 13, 0xf005, 0, both.clone())]
        );
        // The wildcard: every box, not the free-running ones; `uncore_` may be left out; an
        // alias name stands for its PMU, and as a wildcard for its boxes.
        for name in ["uncore_imc", "imc", "uncore_type_6"] {
            let boxes = opens(&spr, &format!("{name}/cas_count_read/"));
            let pmus: Vec<&str> = boxes.iter().map(|b| b.0.as_str()).collect();
            assert_eq!(
                pmus,
                [
                    "uncore_imc_0",
                    "uncore_imc_1",
                    "uncore_imc_2",
                    "uncore_imc_3"
                ]
            );
            assert!(boxes.iter().all(|b| b.2 == 0xcf05 && b.4 == both), "{name}");
        }
        assert_eq!(opens(&spr, "uncore_type_6_0/event=1/")[0].0, "uncore_imc_0");
        assert_eq!(opens(&spr, "imc_free_running/dclk/").len(), 2);
        assert!(pmu_events(&spr, "uncore_im/event=1/").is_none());
        assert!(pmu_events(&spr, "syscalls:sys_enter_getpid").is_none());
        // Split fields, config1, and terms after an alias adding to it (perf ORs them).
        assert_eq!(
            opens(
                &spr,
                "uncore_cha_0/event=0x1,umask=0x123456789,filter_tid=3/"
            )[0]
            .2,
            0x0123_4567_0000_8901
        );
        assert_eq!(opens(&spr, "uncore_cha_0/filter_tid=3/")[0].3, 3);
        assert_eq!(
            opens(&spr, "uncore_imc_0/cas_count_read,umask=0x10/")[0].2,
            0xdf05
        );
        assert_eq!(
            opens(&spr, "uncore_imc_0/event=0x5,config=0x1200/")[0].2,
            0x1205
        );
        assert_eq!(
            opens(&spr, "uncore_imc_0/config=0x1200,event=0x5/")[0].2,
            0x1205
        );
        assert_eq!(opens(&spr, "uncore_imc_0/umask/")[0].2, 0x100);
        assert_eq!(opens(&spr, "msr/event=0xffffffffffffffff/")[0].2, u64::MAX);
        assert_eq!(opens(&spr, "msr/tsc/")[0].4, [-1]);

        let pkg = &pmu_events(&spr, "power/Energy-Pkg/k").unwrap().unwrap()[0];
        assert_eq!((pkg.attr.type_, pkg.attr.config), (11, 2));
        assert_eq!(pkg.scale, Some(2f64.powi(-32)));
        assert_eq!(pkg.unit.as_deref(), Some("Joules"));
        assert_eq!(pkg.attr.domain, Domain::DEFAULT.with_levels(Domain::KERNEL));
        let therm = &pmu_events(&spr, "msr/cpu_thermal_margin/")
            .unwrap()
            .unwrap()[0];
        assert!(therm.snapshot && !therm.per_pkg && therm.scale.is_none());

        let refused = [
            (
                "uncore_imc_0/bogus=1/",
                "unknown term `bogus` for PMU `uncore_imc_0`",
            ),
            (
                "uncore_imc_0/event=0x1ff/",
                "value too big for format, maximum is 255",
            ),
            ("uncore_imc/event=0x1ff/", "maximum is 255"),
            (
                "power/energy-foo/",
                "unknown term `energy-foo` for PMU `power`",
            ),
            (
                "uncore_imc_0/cas_count_read,cas_count_write/",
                "both set a unit",
            ),
            ("uncore_imc_0/event=1,event=2/", "given twice"),
            ("uncore_imc_0/event=1/q", "unknown modifier"),
        ];
        for (event, expected) in refused {
            let message = refusal(&spr, event);
            assert!(message.contains(expected), "{event}: {message}");
        }
        let error = parse_pmu_event(&spr, "uncore_imc/cas_count_read/").unwrap_err();
        assert!(
            error
                .hint()
                .unwrap()
                .contains("uncore_imc_0/cas_count_read/"),
            "{error:?}"
        );
    }

    /// Oracle: the kernel's Zen 4 formats (amd/uncore.c): the Data Fabric's event and unit
    /// mask are split fields, the L3 has one CPU per CCX.
    #[test]
    fn zen4_split_fields() {
        let zen4 = machine("zen4");
        assert_eq!(
            opens(&zen4, "amd_df/event=0x3ff,umask=0xfff/"),
            [("amd_df".into(), 12, 0x3_0f00_ffff, 0, vec![0])]
        );
        assert_eq!(
            opens(
                &zen4,
                "amd_l3/event=0x4,umask=0xff,threadmask=3,enallcores/"
            )[0]
            .2,
            0x04 | 0xff00 | (3 << 56) | (1 << 47)
        );
        assert_eq!(opens(&zen4, "amd_l3/event=1/")[0].4, [0, 8]);
        assert_eq!(opens(&zen4, "amd_umc/event=1,rdwrmask=2/").len(), 2);
        assert!(refusal(&zen4, "amd_df/event=0x4000/").contains("maximum is 16383"));
    }

    /// perf's terms that set no config bits: `name=` names every open (a wildcard's boxes, a
    /// hybrid core PMU's generic event) and changes no bit; `period=` and `freq=` are refused
    /// by name. Oracle: perf 6.1's parse-events.l (`name`, `period`, `freq` in its `<config>`
    /// terms; a name is its `name_minus`).
    #[test]
    fn perfs_own_terms() {
        let spr = machine("spr-2s");
        let named = pmu_events(&spr, "uncore_imc/cas_count_read,name=bw/")
            .unwrap()
            .unwrap();
        let plain = pmu_events(&spr, "uncore_imc/cas_count_read/")
            .unwrap()
            .unwrap();
        assert_eq!(named.len(), 4);
        for (named, plain) in named.iter().zip(&plain) {
            assert_eq!(named.name.as_deref(), Some("bw"));
            assert_eq!((&named.attr, named.scale), (&plain.attr, plain.scale));
        }
        let hybrid =
            PmuDevices::at(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sysfs-hybrid"));
        let cycles = parse_pmu_event(&hybrid, "cpu_atom/name=small-cycles,cycles/k").unwrap();
        assert_eq!(cycles.name.as_deref(), Some("small-cycles"));
        assert_eq!((cycles.attr.type_, cycles.attr.config), (0, 10 << 32));
        for (event, expected) in [
            ("msr/tsc,period=1000/", "`period` is perf's sampling period"),
            ("msr/tsc,freq=99/", "`freq` is perf's sampling frequency"),
            (
                "msr/tsc,name=1x/",
                "`name` takes perf's name of the event, not `1x`",
            ),
            ("msr/tsc,name=/", "not ``"),
            ("msr/tsc,name=a,name=b/", "`name` given twice"),
        ] {
            let message = refusal(&spr, event);
            assert!(message.contains(expected), "{event}: {message}");
        }
        assert_eq!(
            opens(&spr, "msr/tsc,name=a,name=a/"),
            opens(&spr, "msr/tsc/")
        );
    }

    #[test]
    fn modifiers() {
        let mut e = PerfAttr::new(1, 0);
        apply_modifiers("x", "k", &mut e).unwrap();
        assert_eq!(e.domain, Domain::DEFAULT.with_levels(Domain::KERNEL));
        apply_modifiers("x", "uG", &mut e).unwrap();
        assert!(e.domain.contains(Domain::USER | Domain::GUEST));
        assert!(!e.domain.intersects(Domain::KERNEL | Domain::HOST));
        let mut precise = PerfAttr::new(1, 0);
        apply_modifiers("x", "pp", &mut precise).unwrap();
        assert_eq!(precise, PerfAttr::new(1, 0));
    }

    #[test]
    fn wildcards() {
        for (pmu, name, matches) in [
            ("uncore_imc_0", "uncore_imc", true),
            ("uncore_imc_0", "imc", true),
            ("uncore_imc", "imc", true),
            ("uncore_imc_free_running_0", "uncore_imc", false),
            ("uncore_imc_free_running_0", "imc_free_running", true),
            ("uncore_imc_0", "uncore_im", false),
            ("amd_umc_1", "amd_umc", true),
            ("amd_umc_1", "umc", false),
            ("uncore_imc_0", "uncore_imc_", false),
        ] {
            assert_eq!(wildcard_matches(pmu, name), matches, "{pmu} {name}");
        }
    }
}
