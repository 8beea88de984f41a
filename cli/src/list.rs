//! `counterhal list`: the events available here, each marked usable or not, and each native
//! event's code with its unit masks and the fields of their encodings.

use counterhal_hal::BackendExt;
use std::fmt::Write as _;
use std::process::ExitCode;

use counterhal::Registration;
use counterhal::advanced::AnyBackend;
use counterhal_events::UncoreEvent;
use counterhal_events::listing::{ListOptions, Listed, ListedUnitMask, Section, list_events_with};
use counterhal_hal::GeneralizedEvent;
use serde_json::json;

use crate::args::spec::{Spec, flag, path, text};
use crate::args::{Table, Words};
use crate::error::CliError;
use crate::options::{
    DatabaseArgs, Databased, SysfsArgs, Sysfsed, cpu_model, descriptions, events_file,
    parse_backend, sysfs,
};
use crate::stat::plan::runnable::offered;
use counterhal::metrics::MetricDef;

mod metrics;
mod pager;
mod perf_layout;
mod uncore;

/// Arguments of `counterhal list`.
#[derive(Debug, Default)]
pub struct ListArgs {
    /// `--backend`.
    backend: Option<&'static Registration>,
    /// `--cpu-model`, `--events`, `--descriptions`.
    database: DatabaseArgs,
    /// `--sysfs`.
    sysfs: SysfsArgs,
    /// `--json`.
    json: bool,
    /// `-j`: perf 7.2's JSON.
    perf_json: bool,
    /// `--raw-dump`.
    raw_dump: bool,
    /// `-v`: taken as perf's.
    verbose: bool,
    /// `-o`.
    output: Option<std::path::PathBuf>,
    /// `--models`.
    models: bool,
    /// `--metrics`.
    metrics: bool,
    /// `--details`.
    details: bool,
    /// `--markdown`.
    markdown: bool,
    /// The pattern.
    pattern: Option<String>,
}

impl Databased for ListArgs {
    fn database(&mut self) -> &mut DatabaseArgs {
        &mut self.database
    }
}

impl Sysfsed for ListArgs {
    fn sysfs(&mut self) -> &mut SysfsArgs {
        &mut self.sysfs
    }
}

impl Table for ListArgs {
    const NAME: &'static str = "list";
    const USAGE: &'static str = "counterhal list [--sysfs DIR] [PATTERN]";
    const OPTIONS: &'static [Spec<ListArgs>] = &[
        text(None, "backend", "BACKEND", |a: &mut ListArgs, v| {
            a.backend = Some(parse_backend(v)?);
            Ok(())
        })
        .says("The backend whose events to list (default: the first that works here)"),
        cpu_model(),
        events_file(),
        descriptions(),
        sysfs(),
        flag(None, "json", |a: &mut ListArgs| a.json = true)
            .says("Print a JSON array instead of text"),
        flag(Some('j'), "perf-json", |a: &mut ListArgs| {
            a.perf_json = true
        })
        .says(
            "perf 7.2's JSON array (`perf list -j`: its keys, `EventName`, `MetricName`, ...) \
            instead of text",
        ),
        flag(None, "raw-dump", |a: &mut ListArgs| a.raw_dump = true)
            .alias("raw")
            .says(
                "The names alone, each followed by a space, as `perf list --raw-dump` prints them; \
            PATTERN may be one of perf's words: hw, sw, cache, tracepoint, pmu, metrics, \
            metricgroups",
            ),
        flag(Some('v'), "verbose", |a: &mut ListArgs| a.verbose = true).says(
            "Accepted as perf's `-v` (`--verbose`): the list already names each box of a PMU \
            (`uncore_imc_0/cas_count_read/`), as perf 6.1 does and perf 7.2 does with `-v`",
        ),
        path(Some('o'), "output", "FILE", |a: &mut ListArgs, v| {
            a.output = Some(v)
        })
        .says("Write the list to FILE instead of standard output (perf list's -o)"),
        flag(None, "models", |a: &mut ListArgs| a.models = true).says(
            "List the CPU models of the event database (id, vendor, name, perf's signatures, \
            counters, number of events) instead of events",
        ),
        flag(None, "metrics", |a: &mut ListArgs| a.metrics = true).says(
            "List the metrics `stat -M` takes instead of events: the CPU model's (from the \
            event database) and the portable ones, with groups, formula and unit, and the \
            groups",
        ),
        flag(None, "details", |a: &mut ListArgs| a.details = true)
            .says("With --metrics: each metric's formula under its name (perf list's --details)"),
        flag(None, "markdown", |a: &mut ListArgs| a.markdown = true)
            .says("With --models: a Markdown table (the one events/README.md shows)"),
    ];
    const CONFLICTS: &'static [(&'static str, &'static [&'static str])] = &[
        ("perf-json", &["json", "models", "metrics"]),
        ("raw-dump", &["json", "models", "metrics", "perf-json"]),
        ("metrics", &["models"]),
        ("markdown", &["json"]),
    ];
    const REQUIRES: &'static [(&'static str, &'static str, &'static str)] =
        &[("markdown", "models", "--models --markdown")];
    const WORDS: Words = Words::One(
        "PATTERN",
        "Only events (metrics) whose name or description contains this (case-insensitive); a \
        native event's unit masks whose name (`EVENT.UNIT_MASK`) or description contains it \
        are listed under their event",
    );

    fn word(&mut self, word: std::ffi::OsString) -> Result<(), String> {
        if let Some(pattern) = &self.pattern {
            return Err(format!(
                "one PATTERN is taken (`{pattern}` given), not `{}`",
                word.to_string_lossy()
            ));
        }
        let pattern = word
            .into_string()
            .map_err(|word| format!("a PATTERN in text, not {word:?}"))?;
        self.pattern = Some(pattern);
        Ok(())
    }
}

/// A native event's lines: its name, fields, flags and description, then one line per unit
/// mask, indented, with the mask's fields and flags (`default`, `precise`, `deprecated`), and
/// under a name libpfm4 reads otherwise (`note`: the name as listed, `EVENT` or `EVENT.MASK`,
/// to libpfm4's difference) a note saying so.
fn native_lines(
    out: &mut String,
    mark: &str,
    entry: &Listed,
    fields: &str,
    note: &dyn Fn(&str) -> Option<String>,
) {
    out.push_str("  ");
    out.push_str(mark);
    out.push(' ');
    padded(out, &entry.name, 40);
    out.push(' ');
    out.push_str(fields);
    flags(
        out,
        &[
            (entry.precise, "precise"),
            (entry.section == Section::Deprecated, "deprecated"),
        ],
    );
    about(out, &entry.description);
    if entry.unit_masks.is_empty()
        && let Some(note) = note(&entry.name)
    {
        _ = writeln!(out, "      note: {note}");
    }
    for mask in &entry.unit_masks {
        out.push_str("      ");
        padded(out, &mask.name, 38);
        out.push(' ');
        out.push_str(&mask.fields);
        flags(
            out,
            &[
                (mask.default, "default"),
                (mask.precise, "precise"),
                (mask.deprecated, "deprecated"),
            ],
        );
        about(out, &mask.description);
        if let Some(note) = note(&mask.name) {
            _ = writeln!(out, "        note: {note}");
        }
    }
}

/// The names of the flags set in `set`, in parentheses after a space (` (precise,
/// deprecated)`); nothing where none is.
fn flags(out: &mut String, set: &[(bool, &str)]) {
    let mut names = set.iter().filter(|(on, _)| *on).map(|(_, name)| *name);
    if let Some(first) = names.next() {
        out.push_str(" (");
        out.push_str(first);
        for name in names {
            out.push_str(", ");
            out.push_str(name);
        }
        out.push(')');
    }
}

/// `text` left-aligned in `width` characters, as `{:<width}` writes it (written by hand: a
/// listing writes thousands).
fn padded(out: &mut String, text: &str, width: usize) {
    const SPACES: &str = "                                                  ";
    out.push_str(text);
    let len = match text.is_ascii() {
        true => text.len(),
        false => text.chars().count(),
    };
    let mut pad = width.saturating_sub(len);
    while pad > 0 {
        let chunk = pad.min(SPACES.len());
        out.push_str(&SPACES[..chunk]);
        pad -= chunk;
    }
}

/// A line's end: two spaces and `description` where there is one, and the newline.
fn about(out: &mut String, description: &str) {
    if !description.is_empty() {
        out.push_str("  ");
        out.push_str(description);
    }
    out.push('\n');
}

/// perf's tool events (`stat` fills them in from how the command ended, on any backend) and
/// the breakpoint form `stat` takes on the Linux backend, as `list` shows them after the
/// software events: (section, name, what it is).
pub const TOOL_AND_BREAKPOINT: &[(&str, &str, &str)] = &[
    (
        "tool",
        "duration_time",
        "wall-clock time of the run, in ns (perf tool event)",
    ),
    (
        "tool",
        "user_time",
        "the command's user CPU time, in ns (perf tool event)",
    ),
    (
        "tool",
        "system_time",
        "the command's system CPU time, in ns (perf tool event)",
    ),
    (
        "breakpoint",
        "mem:ADDR[/LEN][:rwx]",
        "hardware breakpoint: accesses of LEN bytes (1, 2, 4, 8) at ADDR, read, write or execute (mem:0x401000:x)",
    ),
];

/// The entries of [`TOOL_AND_BREAKPOINT`] whose name or description holds `pattern` (any
/// case), breakpoints only where `breakpoints` (the Linux backend lists).
fn extra_entries(
    pattern: &str,
    breakpoints: bool,
) -> impl Iterator<Item = &'static (&'static str, &'static str, &'static str)> {
    let lower = pattern.to_ascii_lowercase();
    TOOL_AND_BREAKPOINT
        .iter()
        .filter(move |(section, name, about)| {
            (breakpoints || *section != "breakpoint")
                && (name.to_ascii_lowercase().contains(&lower)
                    || about.to_ascii_lowercase().contains(&lower))
        })
}

/// The tool and breakpoint sections of the text listing ([`extra_entries`]); `count` grows
/// by the lines written.
fn extra_sections(out: &mut String, pattern: &str, breakpoints: bool, count: &mut usize) {
    let mut heading = "";
    for &(section, name, about) in extra_entries(pattern, breakpoints) {
        if heading != section {
            heading = section;
            _ = writeln!(out, "\n{section}:");
        }
        _ = writeln!(out, "  * {name:<40} {about}");
        *count += 1;
    }
}

/// `entries` with perf's aliases of the hardware and software events (`cs`), and the events
/// whose alias alone holds `pattern` added (each listed by its canonical name with `listed`).
fn with_aliases(
    mut entries: Vec<Listed>,
    pattern: &str,
    listed: &dyn Fn(&str) -> Vec<Listed>,
) -> Vec<Listed> {
    let lower = pattern.to_ascii_lowercase();
    let aliases = |name: &str| -> &'static [&'static str] {
        match GeneralizedEvent::from_name(name) {
            Some(GeneralizedEvent::Hardware(event)) => event.aliases(),
            Some(GeneralizedEvent::Software(event)) => event.aliases(),
            _ => &[],
        }
    };
    if !pattern.is_empty() {
        let generalized = GeneralizedEvent::all().filter(|g| {
            matches!(
                g,
                GeneralizedEvent::Hardware(_) | GeneralizedEvent::Software(_)
            )
        });
        for event in generalized {
            let name = event.name();
            let alias_matches = aliases(&name)
                .iter()
                .any(|a| a.to_ascii_lowercase().contains(&lower));
            if alias_matches && !entries.iter().any(|e| e.name == name) {
                entries.extend(listed(&name).into_iter().filter(|e| e.name == name));
            }
        }
        entries.sort_by_key(|e| e.section);
    }
    for entry in &mut entries {
        if matches!(entry.section, Section::Hardware | Section::Software) {
            entry.aliases = aliases(&entry.name).iter().map(|a| a.to_string()).collect();
        }
    }
    entries
}

/// A unit mask in `--json`: `encoding` as its event's (the backend's, or null), and the rest.
fn unit_mask_json(mask: &ListedUnitMask, note: Option<String>) -> serde_json::Value {
    json!({
        "libpfm4_note": note,
        "name": mask.name,
        "description": mask.description,
        "fields": mask.fields,
        "encoding": mask.encoding,
        "reason": mask.reason,
        "default": mask.default,
        "precise": mask.precise,
        "deprecated": mask.deprecated,
    })
}

/// ` (no mapping on MODEL)` after a preset or generalized event the model does not map.
struct Unmapped<'a>(Option<&'a str>);

impl std::fmt::Display for Unmapped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(model) => write!(f, " (no mapping on {model})"),
            None => Ok(()),
        }
    }
}

/// Runs `counterhal list`.
pub fn run(args: ListArgs) -> Result<ExitCode, CliError> {
    let context = args.database.context()?;
    if args.models && args.markdown {
        crate::output::emit(&crate::models::markdown(context.database().models()))?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.models {
        crate::output::emit(&crate::models::render(
            context.database().models(),
            args.json,
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    // `--sysfs DIR`: the linux backend over that tree, which opens nothing.
    let usage = "counterhal list [--sysfs DIR] [PATTERN]";
    let over_tree = match args.sysfs.backend(&context, args.backend, usage) {
        Some(backend) => Some(backend?),
        None => None,
    };
    let (backend, unusable) = listing_backend(&context, over_tree, args.backend);
    // perf's words after --raw-dump choose what is dumped; any other word is a pattern.
    let dump = args
        .raw_dump
        .then(|| perf_layout::Dump::of(args.pattern.as_deref()));
    let pattern = match dump {
        Some(Some(_)) => "",
        _ => args.pattern.as_deref().unwrap_or(""),
    };
    if args.metrics {
        let model = context.model();
        // Each metric's events are resolved on the backend `stat` would use.
        let resolve = |event: &str| {
            backend
                .as_ref()
                .and_then(|b| crate::stat::plan::runnable::unknown_here(b, event))
        };
        let system = args.sysfs.system();
        pager::emit(&metrics::metrics(
            &system,
            model,
            pattern,
            args.json,
            args.details,
            &resolve,
        )?)?;
        return Ok(ExitCode::SUCCESS);
    }
    // The text shows no encoding (but an event's in place of a description it lacks): only
    // --json has them written.
    let options = ListOptions::new().with_encodings(args.json || args.perf_json);
    let listed = |pattern: &str| match &backend {
        Some(backend) => list_events_with(
            context.database(),
            context.model(),
            Ok(backend),
            pattern,
            options,
        ),
        None => list_events_with::<AnyBackend>(
            context.database(),
            context.model(),
            Err("the backend cannot be used here"),
            pattern,
            options,
        ),
    };
    // Breakpoints (`mem:`) and uncore PMUs are those of a backend that reads sysfs PMUs.
    let breakpoints = backend
        .as_ref()
        .is_some_and(|b| b.dyn_capabilities().sysfs_pmus());
    if breakpoints {
        // A root without PMUs is refused before anything is listed.
        args.sysfs.devices()?;
    }
    let pmus = backend
        .as_ref()
        .filter(|_| breakpoints)
        .and_then(|b| b.dyn_extensions().topology);
    let listing = Listing {
        entries: with_aliases(listed(pattern), pattern, &listed),
        uncore: uncore::listed(context.database(), context.model(), pmus, pattern),
        pattern,
        breakpoints,
        model: context.model(),
    };
    // Names in the model's own spelling that libpfm4 reads otherwise.
    let note = |name: &str| -> Option<String> {
        let model = context.model()?;
        context.database().libpfm4_difference(model, name)
    };
    if args.raw_dump || args.perf_json {
        let resolve = |event: &str| {
            backend
                .as_ref()
                .and_then(|b| crate::stat::plan::runnable::unknown_here(b, event))
        };
        let (offered, _) = offered(&args.sysfs.system().into(), context.model(), &resolve)
            .map_err(CliError::failed)?;
        let lower = pattern.to_ascii_lowercase();
        let metrics: Vec<&MetricDef> = offered
            .into_iter()
            .map(|(m, _)| m)
            .filter(|m| {
                std::iter::once(m.name)
                    .chain(m.groups.iter().copied())
                    .any(|n| n.to_ascii_lowercase().contains(&lower))
            })
            .collect();
        let extra: Vec<_> = extra_entries(pattern, breakpoints).copied().collect();
        let events = perf_layout::events(&listing.entries, &extra, &listing.uncore);
        let text = match dump {
            Some(which) => perf_layout::raw_dump(
                which.unwrap_or(perf_layout::Dump::Everything),
                &events,
                &metrics,
            ),
            None => perf_layout::json(&events, &metrics),
        };
        return write_list(args.output.as_deref(), &text);
    }
    if args.json {
        let label = backend.as_ref().map(|b| b.label());
        return write_list(
            args.output.as_deref(),
            &listing.json(label.as_deref(), &note),
        );
    }
    let label = match (&backend, &unusable) {
        (Some(backend), _) => backend.label(),
        (None, Some(reason)) => format!("no usable backend ({reason})"),
        (None, None) => "no backend".to_string(),
    };
    match args.output.as_deref() {
        Some(path) => write_list(Some(path), &listing.text(&label, &note)),
        None => {
            pager::emit(&listing.text(&label, &note))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Writes the list to `path` (`-o`), or to standard output.
///
/// # Errors
/// A file that cannot be written (exit 1, naming it).
fn write_list(path: Option<&std::path::Path>, text: &str) -> Result<ExitCode, CliError> {
    match path {
        Some(path) => std::fs::write(path, text).map_err(|e| {
            CliError::failed(counterhal::Error::new(
                counterhal::ErrorKind::Other,
                format!("-o {}: {e}", path.display()),
            ))
        })?,
        None => crate::output::emit(text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The backend whose events are listed: the one over `--sysfs`'s tree, the one `--backend`
/// names or the first that works here. A backend that cannot be used here still has events
/// to list, all marked unusable, with the reason (the second value) in the header.
fn listing_backend(
    context: &counterhal::Context,
    over_tree: Option<AnyBackend>,
    named: Option<&'static Registration>,
) -> (Option<AnyBackend>, Option<String>) {
    match (over_tree, named) {
        (Some(backend), _) => (Some(backend), None),
        (None, Some(registration)) => match counterhal::probe(registration, context) {
            Ok(backend) => (Some(backend), None),
            Err(e) => (None, Some(format!("{}: {e}", registration.name))),
        },
        (None, None) => {
            let first = counterhal::probe_all(context)
                .into_iter()
                .find_map(|p| p.result.ok());
            let reason = first
                .is_none()
                .then(|| "no usable backend here".to_string());
            (first, reason)
        }
    }
}

/// The events `list` shows, found.
struct Listing<'a> {
    /// The backend's and the database's, sorted by section.
    entries: Vec<Listed>,
    /// The model's uncore events, by PMU, each PMU with whether this machine has it.
    uncore: Vec<(&'static str, bool, Vec<UncoreEvent>)>,
    pattern: &'a str,
    /// Whether breakpoints (`mem:`) are listed: the Linux backend's.
    breakpoints: bool,
    /// The CPU model of the database.
    model: Option<&'a str>,
}

impl Listing<'_> {
    /// `--json`'s array; `backend` the label of the backend listed, `note` what libpfm4 reads
    /// otherwise in a name.
    fn json(&self, backend: Option<&str>, note: &dyn Fn(&str) -> Option<String>) -> String {
        let entries = self.entries.iter().map(|e| {
            json!({
                "section": e.section.name(),
                "name": e.name,
                "description": e.description,
                "encoding": e.encoding,
                "backend": backend,
                "usable": e.usable,
                "reason": e.reason,
                "precise": e.precise,
                "aliases": e.aliases,
                "fields": e.fields,
                "libpfm4_note": e
                    .fields
                    .as_ref()
                    .filter(|_| e.unit_masks.is_empty())
                    .and_then(|_| note(&e.name)),
                "umasks": e
                    .unit_masks
                    .iter()
                    .map(|m| unit_mask_json(m, note(&m.name)))
                    .collect::<Vec<_>>(),
            })
        });
        let extra = extra_entries(self.pattern, self.breakpoints).map(|(section, name, about)| {
            json!({
                "section": section,
                "name": name,
                "description": about,
                "encoding": null,
                "backend": backend,
                "usable": true,
                "reason": null,
                "precise": false,
                "aliases": [],
                "fields": null,
                "libpfm4_note": null,
                "umasks": [],
            })
        });
        let uncore = uncore::json(&self.uncore, backend);
        let array: Vec<_> = entries.chain(extra).chain(uncore).collect();
        let mut out = serde_json::to_string_pretty(&array).expect("JSON of plain values");
        out.push('\n');
        out
    }

    /// The text: a header naming the backend (`label`) and model, a section after another,
    /// the uncore PMUs' events, and a line of counts.
    fn text(&self, label: &str, note: &dyn Fn(&str) -> Option<String>) -> String {
        let (entries, pattern, breakpoints) = (&self.entries, self.pattern, self.breakpoints);
        let mut out = String::new();
        let model = self.model.unwrap_or("no database model");
        _ = writeln!(
            out,
            "events for {label}, CPU model {model} (* = usable here)"
        );
        let mut section = None;
        let mut extra = 0;
        for (index, entry) in entries.iter().enumerate() {
            if section != Some(entry.section) {
                section = Some(entry.section);
                _ = writeln!(out, "\n{}:", entry.section.name());
            }
            let mark = if entry.usable { "*" } else { " " };
            match &entry.fields {
                Some(fields) => native_lines(&mut out, mark, entry, fields, note),
                None => entry_line(&mut out, mark, entry, model),
            }
            if entry.section == Section::Software
                && entries
                    .get(index + 1)
                    .is_none_or(|e| e.section != Section::Software)
            {
                extra_sections(&mut out, pattern, breakpoints, &mut extra);
            }
        }
        if !entries.iter().any(|e| e.section == Section::Software) {
            extra_sections(&mut out, pattern, breakpoints, &mut extra);
        }
        // The uncore events, after the others; counted with the sections written beside them.
        let uncore_count = uncore::text(&mut out, &self.uncore);
        let uncore_usable: usize = self
            .uncore
            .iter()
            .filter(|(_, here, _)| *here)
            .map(|(_, _, events)| events.len())
            .sum();
        let usable = entries.iter().filter(|e| e.usable).count() + extra + uncore_usable;
        let extra = extra + uncore_count;
        let masks: usize = entries.iter().map(|e| e.unit_masks.len()).sum();
        _ = writeln!(
            out,
            "\n{} events listed ({masks} unit masks), {usable} usable here{}",
            entries.len() + extra,
            match pattern {
                "" => "; `counterhal list PATTERN` lists those whose name or description holds it",
                _ => "",
            }
        );
        out
    }
}

/// The line of an event that is not a native one (generalized, software, preset, ...): its
/// name and aliases, and what it is in words or by its encoding; `model` names the CPU model
/// where a preset or generalized event has no mapping.
fn entry_line(out: &mut String, mark: &str, entry: &Listed, model: &str) {
    let about = match (entry.description.is_empty(), &entry.encoding) {
        (true, Some(encoding)) => encoding.as_str(),
        _ => entry.description.as_str(),
    };
    let precise = if entry.precise { " (precise)" } else { "" };
    // A preset or generalized event the model does not map says so, as --json's reason.
    let unmapped = matches!(
        (entry.resolves, entry.section),
        (false, Section::Hardware | Section::Cache | Section::Preset)
    );
    let unmapped = Unmapped(unmapped.then_some(model));
    out.push_str("  ");
    out.push_str(mark);
    out.push(' ');
    if entry.aliases.is_empty() {
        padded(out, &entry.name, 40);
    } else {
        let name = format!("{} OR {}", entry.name, entry.aliases.join(" OR "));
        padded(out, &name, 40);
    }
    _ = writeln!(out, " {about}{precise}{unmapped}");
}
