//! `counterhal encode`: how each event is encoded for a backend.

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;
use counterhal::hal::{Encoding, ResolvedEvent, Sign};
use counterhal::{AnyBackend, Backend, Context, Registration};
use serde_json::{Value, json};

use crate::error::CliError;
use crate::options::{DatabaseArgs, parse_backend};

const USAGE: &str = "counterhal encode [--backend B] [--cpu-model MODEL] [--json] EVENT...";

/// Arguments of `counterhal encode`.
#[derive(Args, Debug)]
pub struct EncodeArgs {
    /// The backend to encode for (linux: perf attrs; pctr and msr: event selects, P5 CESR
    /// fields), over its real device where it works here, else over a model of its device for
    /// the CPU model.
    #[arg(long, default_value = "linux", value_parser = parse_backend)]
    backend: &'static Registration,
    #[command(flatten)]
    database: DatabaseArgs,
    /// Print a JSON array instead of text.
    #[arg(long)]
    json: bool,
    /// The events, e.g. cycles:u PAPI_TOT_INS INST_RETIRED.ANY_P r00c0.
    #[arg(required = true, value_name = "EVENT")]
    events: Vec<String>,
}

/// The backend to encode with: the real one where it works here (it knows the OS's own names:
/// tracepoints, breakpoints, dynamic PMUs), else one over a model of its device.
fn backend(context: &Context, registration: &Registration) -> Result<AnyBackend, CliError> {
    let real = counterhal::probe(registration, context);
    match (real, registration.model) {
        (Ok(backend), _) => Ok(backend),
        (Err(_), Some(model)) => model(context).map_err(|e| CliError::usage(e, USAGE)),
        (Err(e), None) => Err(CliError::failed(e)),
    }
}

/// One JSON object per native term of `event`, with every field of its family.
pub fn to_json(event: &ResolvedEvent, backend: &str, cpu: Option<&str>) -> Vec<Value> {
    event
        .terms
        .iter()
        .map(|term| {
            let encoding = &term.request.encoding;
            let mut object = json!({
                "event": event.name,
                "backend": backend,
                "cpu": cpu,
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

/// Runs `counterhal encode`.
pub fn run(args: EncodeArgs) -> Result<ExitCode, CliError> {
    let mut out = String::new();
    let context = args.database.context()?;
    let backend = backend(&context, args.backend)?;
    let label = backend.label();
    let mut resolved = Vec::new();
    for name in &args.events {
        let event = backend.resolve(name).map_err(CliError::input)?;
        resolved.push(event);
    }
    let cpu = context.model.as_deref();
    // A name in the model's own spelling that libpfm4 reads otherwise says so.
    let note = |name: &str| cpu.and_then(|c| context.database.libpfm4_difference(c, name));
    if args.json {
        let array: Vec<Value> = resolved
            .iter()
            .flat_map(|e| {
                let note = note(&e.name);
                to_json(e, args.backend.name, cpu)
                    .into_iter()
                    .map(move |mut v| {
                        if let Some(note) = &note {
                            v["libpfm4_note"] = json!(note);
                        }
                        v
                    })
            })
            .collect();
        _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&array).expect("JSON of plain values")
        );
    } else {
        for event in &resolved {
            _ = write!(out, "{}", to_text(event, &label, cpu));
            if let Some(note) = note(&event.name) {
                _ = writeln!(out, "  note: {note}");
            }
        }
    }
    crate::output::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
