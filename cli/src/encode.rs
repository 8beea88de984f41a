//! `counterhal encode`: how each event is encoded for a backend.

mod pmu;

use counterhal_hal::BackendExt;
use std::fmt::Write as _;
use std::process::ExitCode;

use counterhal::advanced::AnyBackend;
use counterhal::{Context, Registration};
use counterhal_events::ParsedEvent;
use counterhal_hal::Backend;
use counterhal_hal::{Accepts, Domain, Encoding, Family, ResolvedEvent, Sign};
use serde_json::{Value, json};

use crate::args::spec::{Spec, flag, push, text};
use crate::args::{Table, Words};
use crate::error::CliError;
use crate::options::{
    DatabaseArgs, Databased, SysfsArgs, Sysfsed, cpu_model, descriptions, events_file,
    parse_backend, sysfs,
};

const USAGE: &str = "counterhal encode [--backend B] [--cpu-model MODEL] [--sysfs DIR] [--json] \
     [-M METRIC[,METRIC]] EVENT...";

/// Arguments of `counterhal encode`.
#[derive(Debug)]
pub struct EncodeArgs {
    /// `--backend` (the registry's first by default).
    backend: &'static Registration,
    /// `--cpu-model`, `--events`, `--descriptions`.
    database: DatabaseArgs,
    /// `--sysfs`.
    sysfs: SysfsArgs,
    /// `--json`.
    json: bool,
    /// `-M`: the metrics, one a value.
    metrics: Vec<String>,
    /// The events.
    events: Vec<String>,
}

impl Default for EncodeArgs {
    fn default() -> EncodeArgs {
        EncodeArgs {
            backend: &counterhal::REGISTRY[0],
            database: DatabaseArgs::default(),
            sysfs: SysfsArgs::default(),
            json: false,
            metrics: Vec::new(),
            events: Vec::new(),
        }
    }
}

impl Databased for EncodeArgs {
    fn database(&mut self) -> &mut DatabaseArgs {
        &mut self.database
    }
}

impl Sysfsed for EncodeArgs {
    fn sysfs(&mut self) -> &mut SysfsArgs {
        &mut self.sysfs
    }
}

impl Table for EncodeArgs {
    const NAME: &'static str = "encode";
    const USAGE: &'static str = USAGE;
    const OPTIONS: &'static [Spec<EncodeArgs>] = &[
        text(None, "backend", "BACKEND", |a: &mut EncodeArgs, v| {
            a.backend = parse_backend(v)?;
            Ok(())
        })
        .says(
            "The backend to encode for, in its own terms (a perf attr for Linux's; event \
            selects or P5 CESR fields for one that programs x86 counters itself; `counterhal \
            info` lists them), over its real device where it works here, else over a model of \
            its device for the CPU model (default: the first `counterhal info` lists)",
        ),
        cpu_model(),
        events_file(),
        descriptions(),
        sysfs(),
        flag(None, "json", |a: &mut EncodeArgs| a.json = true).says(
            "Print a JSON array instead of text: an object per attr opened (a PMU event's per \
            PMU and per CPU of its cpumask, with `pmu`, `cpu`, `scale` and `unit`; an event on \
            a hybrid chip's core PMU per CPU of that PMU's `cpus`; `cpu` -1 where it opens on \
            any CPU), or with `error`",
        ),
        text(
            Some('M'),
            "metrics",
            "METRIC[,METRIC]",
            |a: &mut EncodeArgs, v| {
                v.split(',')
                    .try_for_each(|metric| push(&mut a.metrics, metric))
            },
        )
        .repeated()
        .says(
            "Every event these metrics (or metric groups) read, as `stat -M` names them, \
            encoded as the events are; each JSON object also names its `metric`",
        ),
    ];
    const WORDS: Words = Words::Some(
        "EVENT",
        "The events, e.g. cycles:u PAPI_TOT_INS INST_RETIRED.ANY_P r00c0 power/energy-pkg/ \
        uncore_imc/cas_count_read/ UNC_M_CAS_COUNT.RD",
    );

    fn word(&mut self, word: std::ffi::OsString) -> Result<(), String> {
        let event = word
            .into_string()
            .map_err(|word| format!("an event named in text, not {word:?}"))?;
        self.events.push(event);
        Ok(())
    }

    fn check(&self, given: &dyn Fn(&str) -> bool) -> Result<(), (String, String)> {
        match self.events.is_empty() && !given("metrics") {
            true => Err((
                "encode needs an EVENT (or -M METRIC)".to_string(),
                "e.g. counterhal encode cycles:u".to_string(),
            )),
            false => Ok(()),
        }
    }
}

/// What encodes each event, and what it has written so far: the text or JSON, the
/// refusals.
struct Encoder<'a> {
    json: bool,
    backend_name: &'static str,
    context: &'a Context,
    backend: AnyBackend,
    /// Whether the backend reads sysfs PMUs (`--sysfs DIR`'s, or this machine's).
    reads_pmus: bool,
    label: String,
    out: String,
    failed: String,
    array: Vec<Value>,
}

/// The backend to encode with: the linux backend over the `--sysfs` tree where one is named;
/// else the real one where it works here (it knows the OS's own names: tracepoints,
/// breakpoints, dynamic PMUs), else one over a model of its device.
fn backend(
    context: &Context,
    registration: &Registration,
    sysfs: &SysfsArgs,
) -> Result<AnyBackend, CliError> {
    if let Some(over_tree) = sysfs.backend(context, Some(registration), USAGE) {
        return over_tree;
    }
    let real = counterhal::probe(registration, context);
    match (real, registration.model) {
        (Ok(backend), _) => Ok(backend),
        (Err(_), Some(model)) => model(context).map_err(|e| CliError::usage(e, USAGE)),
        (Err(e), None) => Err(CliError::failed(e)),
    }
}

/// One JSON object per native term of `event`, with every field of its family: `cpu_model`
/// is the CPU model, `cpu` -1 (any CPU: the encoding opens wherever it counts; a PMU event's
/// objects, [`pmu::to_json`], and a term's on a PMU with its own CPUs, have the CPU of each
/// open in `cpu`).
pub fn to_json(event: &ResolvedEvent, backend: &str, cpu: Option<&str>) -> Vec<Value> {
    event
        .terms
        .iter()
        .map(|term| {
            let encoding = &term.request.encoding;
            let mut object = json!({
                "event": event.name,
                "backend": backend,
                "cpu": -1,
                "cpu_model": cpu,
                "family": encoding.family().name(),
                "text": encoding.to_string(),
            });
            if event.is_derived() {
                object["native"] = json!(term.request.name);
                object["sign"] = json!(if term.sign == Sign::Minus { "-" } else { "+" });
                object["factor"] = json!(term.factor);
            }
            let fields = match encoding {
                Encoding::Perf(perf) => {
                    let bits = perf.exclude_bits();
                    json!({
                        "type": perf.type_,
                        "config": perf.config,
                        "config1": perf.config1,
                        "config2": perf.config2,
                        "bp_type": perf.bp_type,
                        "pmu": perf.pmu,
                        "exclude_user": bits.user,
                        "exclude_kernel": bits.kernel,
                        "exclude_hv": bits.hv,
                        "exclude_idle": bits.idle,
                        "exclude_host": bits.host,
                        "exclude_guest": bits.guest,
                    })
                }
                Encoding::Evtsel(evtsel) => json!({
                    "evtsel": evtsel.register_value(),
                    "event_select": evtsel.event_select(),
                    "counters": evtsel.counters.iter().collect::<Vec<_>>(),
                    "fixed": evtsel.fixed,
                    "extra_msr": evtsel.extra.map(|e| e.msr),
                    "extra_value": evtsel.extra.map(|e| e.value),
                }),
                Encoding::P5Cesr(cesr) => json!({
                    "cesr": cesr.field(),
                    "counters": cesr.counters.iter().collect::<Vec<_>>(),
                }),
                other => json!({ "text": other.to_string() }),
            };
            if let (Value::Object(object), Value::Object(fields)) = (&mut object, fields) {
                object.extend(fields);
            }
            object
        })
        .collect()
}

/// One line per native term of `event`.
pub fn to_text(event: &ResolvedEvent, backend: &str, cpu: Option<&str>) -> String {
    let cpu = cpu.unwrap_or("generic");
    let mut out = String::new();
    let derived = event.is_derived() || event.terms.iter().any(|t| t.factor != 1);
    for term in &event.terms {
        let factor = match term.factor {
            1 => String::new(),
            factor => format!("{factor} * "),
        };
        let sign = match (derived, term.sign) {
            (false, _) => String::new(),
            (true, Sign::Plus) => format!("  + {factor}{}: ", term.request.name),
            (true, Sign::Minus) => format!("  - {factor}{}: ", term.request.name),
        };
        _ = writeln!(out, "{sign}{}", term.request.encoding);
    }
    if derived {
        format!(
            "{} [{backend}, {cpu}]: derived from {} events\n{out}",
            event.name,
            event.terms.len()
        )
    } else {
        format!("{} [{backend}, {cpu}]: {out}", event.name)
    }
}

/// The sampling precision `name` asks for (`:p` 1, `:pp` 2, `:ppp` and `:P` 3): perf's
/// `precise_ip`. Counting ignores it (it moves where samples are taken), so no family encoding
/// carries it; encode shows it beside the encoding.
fn precise_ip(name: &str) -> Option<u8> {
    match counterhal_events::parse_event(name).ok()? {
        // `:pp` after a name may be a unit mask until the name resolves: a part made of
        // modifier letters alone is read as modifiers, as the resolver reads it.
        ParsedEvent::Named(spec) => spec.modifiers.precise.or_else(|| {
            let modifiers = |part: &&String| part.chars().all(|c| "ukhpPGHSDIW".contains(c));
            let levels = spec.unit_masks.iter().filter(modifiers);
            let precise: u8 = levels
                .flat_map(|part| part.chars())
                .map(|c| match c {
                    'p' => 1,
                    'P' => 3,
                    _ => 0,
                })
                .sum();
            (precise > 0).then_some(precise.min(3))
        }),
        ParsedEvent::Raw { modifiers, .. } | ParsedEvent::PmuTerms { modifiers, .. } => {
            modifiers.precise
        }
    }
}

/// `cpu/terms/MODIFIERS` as the raw event `rCONFIG:MODIFIERS` it is on x86, read with the CPU
/// model's event format (`event`, `umask`, `cmask`, `edge`, `inv`, ...), for a backend that
/// finds no `cpu` PMU here (a virtual machine without one, or another CPU's model named with
/// `--cpu-model`): perf's `cpu` PMU is the raw type, its formats the event select's bits.
fn as_raw(context: &Context, name: &str) -> Option<String> {
    let (pmu, rest) = name.split_once('/')?;
    let (_, modifiers) = rest.rsplit_once('/')?;
    if pmu != "cpu" {
        return None;
    }
    let accepts = Accepts::new(&[Family::Evtsel], Domain::ALL, Domain::ALL);
    let resolved = context
        .database()
        .resolve(context.model(), name, &accepts)
        .ok()?;
    match resolved.terms.as_slice() {
        [term] => match &term.request.encoding {
            Encoding::Evtsel(evtsel) => {
                let select = evtsel.event_select();
                Some(match modifiers {
                    "" => format!("r{select:x}"),
                    modifiers => format!("r{select:x}:{modifiers}"),
                })
            }
            _ => None,
        },
        _ => None,
    }
}

/// `name` resolved on `backend`; a `cpu/terms/` event the backend finds no PMU for is resolved
/// as the raw event it stands for on the CPU model, with a note saying so.
fn resolve(
    backend: &AnyBackend,
    context: &Context,
    name: &str,
) -> Result<(ResolvedEvent, Option<String>), counterhal::Error> {
    match backend.resolve(name) {
        Ok(event) => Ok((event, None)),
        Err(error) => match as_raw(context, name).map(|raw| (backend.resolve(&raw), raw)) {
            Some((Ok(mut event), raw)) => {
                event.name = name.to_string();
                let note = format!("{error}; encoded from the CPU model's event format as `{raw}`");
                Ok((event, Some(note)))
            }
            _ => Err(error),
        },
    }
}

/// Runs `counterhal encode`: every event that encodes is printed, each that does not is
/// reported on standard error (and, with `--json`, as an object with its `error`); the status
/// is 2 when any failed. With `-M`, every event the metrics read, each under its metric.
pub fn run(args: EncodeArgs) -> Result<ExitCode, CliError> {
    let context = args.database.context()?;
    let backend = backend(&context, args.backend, &args.sysfs)?;
    // perf's PMU syntax on a backend that programs perf's attrs: every PMU and CPU it opens
    // on, from the tree.
    let reads_pmus = backend.dyn_capabilities().sysfs_pmus();
    if reads_pmus {
        // A root without PMUs is refused before anything is encoded.
        args.sysfs.devices()?;
    }
    let machine = counterhal::metrics::Machine::new(args.sysfs.system());
    let metrics = counterhal::metrics::chosen(&args.metrics, context.model())
        .map_err(|e| CliError::usage(e, USAGE))?;
    let mut encoder = Encoder {
        json: args.json,
        backend_name: args.backend.name,
        label: backend.label(),
        context: &context,
        backend,
        reads_pmus,
        out: String::new(),
        failed: String::new(),
        array: Vec::new(),
    };
    for name in &args.events {
        encoder.one(name, None);
    }
    for metric in metrics {
        if !encoder.json {
            _ = writeln!(encoder.out, "{} = {}", metric.name, metric.expression());
        }
        for name in counterhal::metrics::events_needed(&machine, &[metric]) {
            encoder.one(&name, Some(metric.name));
        }
    }
    let Encoder {
        mut out,
        failed,
        array,
        ..
    } = encoder;
    if args.json {
        _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&array).expect("JSON of plain values")
        );
    }
    crate::output::emit(&out)?;
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    crate::output::emit_to_stderr(&failed);
    Ok(ExitCode::from(2))
}

impl Encoder<'_> {
    /// Encodes event `name` (read by `metric`, where one reads it) into the output.
    fn one(&mut self, name: &str, metric: Option<&str>) {
        let context = self.context;
        let cpu = context.model();
        // A name in the model's own spelling that libpfm4 reads otherwise says so.
        let note = |name: &str| cpu.and_then(|c| context.database().libpfm4_difference(c, name));
        let for_metric = |mut value: Value| {
            if let Some(metric) = metric {
                value["metric"] = json!(metric);
            }
            value
        };
        let refused = |this: &mut Self, error: String| {
            _ = writeln!(this.failed, "counterhal: {error}");
            this.array
                .push(for_metric(json!({ "event": name, "error": error })));
        };
        // An uncore event of the model by name, a core one in the core PMU's terms, or
        // perf's PMU syntax.
        let topology = self.backend.dyn_extensions().topology;
        let pmu_events = (self.reads_pmus)
            .then_some(topology)
            .flatten()
            .and_then(|topology| topology.opens(name));
        if let Some(result) = pmu_events {
            match result {
                Ok(events) if self.json => {
                    let precise = precise_ip(name);
                    for mut value in pmu::to_json(name, &events, self.backend_name, cpu) {
                        if let Some(precise) = precise {
                            value["precise_ip"] = json!(precise);
                        }
                        self.array.push(for_metric(value));
                    }
                }
                Ok(events) => {
                    let text = pmu::to_text(name, &events, &self.label, cpu);
                    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
                    match precise_ip(name) {
                        Some(precise) => {
                            _ = writeln!(
                                self.out,
                                "{first} precise_ip={precise} (sampling precision: counting ignores it)"
                            )
                        }
                        None => _ = writeln!(self.out, "{first}"),
                    }
                    _ = write!(self.out, "{rest}");
                }
                // The PMU's refusals name the event already.
                Err(error) if error.message().starts_with(name) => refused(self, error.to_string()),
                Err(error) => refused(self, format!("{name}: {error}")),
            }
            return;
        }
        let (event, fallback) = match resolve(&self.backend, context, name) {
            Ok(resolved) => resolved,
            Err(error) => return refused(self, format!("{name}: {error}")),
        };
        let precise = precise_ip(name);
        // A native event's description, where a description source was named.
        let description = cpu.and_then(|c| context.database().description(c, name));
        let notes: Vec<String> = note(&event.name).into_iter().chain(fallback).collect();
        // A term of a PMU with its own CPUs (an Intel hybrid core PMU's `cpus`) opens on each
        // of them, system-wide, as perf -a opens it.
        let cpus: Vec<Option<Vec<u32>>> = event
            .terms
            .iter()
            .map(|term| self.backend.system_wide_cpus(&term.request))
            .collect();
        if self.json {
            let objects = to_json(&event, self.backend_name, cpu)
                .into_iter()
                .zip(&cpus);
            let per_cpu = objects.flat_map(|(value, cpus)| match cpus {
                Some(cpus) => cpus
                    .iter()
                    .map(|&n| {
                        let mut value = value.clone();
                        value["cpu"] = json!(n);
                        value
                    })
                    .collect(),
                None => vec![value],
            });
            for mut value in per_cpu.collect::<Vec<_>>() {
                if let Some(note) = note(&event.name) {
                    value["libpfm4_note"] = json!(note);
                }
                if let Some(precise) = precise {
                    value["precise_ip"] = json!(precise);
                }
                if let Some(description) = description {
                    value["description"] = json!(description);
                }
                self.array.push(for_metric(value));
            }
            return;
        }
        let text = to_text(&event, &self.label, cpu);
        let out = &mut self.out;
        match precise {
            // One line: the sampling precision after the encoding.
            Some(precise) if text.lines().count() == 1 => {
                _ = writeln!(
                    out,
                    "{} precise_ip={precise} (sampling precision: counting ignores it)",
                    text.trim_end()
                )
            }
            Some(precise) => {
                _ = write!(out, "{text}");
                _ = writeln!(
                    out,
                    "  precise_ip={precise} (sampling precision: counting ignores it)"
                );
            }
            None => _ = write!(out, "{text}"),
        }
        for (term, cpus) in event.terms.iter().zip(&cpus) {
            if let Some(cpus) = cpus {
                _ = writeln!(
                    out,
                    "  CPUs of {}: {} (its PMU's cpus: one open on each, system-wide)",
                    term.request.name,
                    counterhal_hal::CpuList::from_cpus(cpus.iter().copied())
                );
            }
        }
        if let Some(description) = description {
            _ = writeln!(out, "  description: {description}");
        }
        for note in notes {
            _ = writeln!(out, "  note: {note}");
        }
    }
}
