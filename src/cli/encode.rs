//! `counterhal encode`: how each event is encoded for a backend.

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;
use counterhal::hal::{Encoding, PerfEncoding, ResolvedEvent, Sign};
use counterhal::{BackendKind, Context, Error};
use serde_json::{Value, json};

use super::{CliError, DatabaseArgs, parse_backend};

/// Arguments of `counterhal encode`.
#[derive(Args, Debug)]
pub struct EncodeArgs {
    /// The backend to encode for: linux (perf attr), pctr (function word), msr (EVTSEL).
    #[arg(long, default_value = "linux", value_parser = parse_backend)]
    backend: BackendKind,
    #[command(flatten)]
    database: DatabaseArgs,
    /// Print a JSON array instead of text.
    #[arg(long)]
    json: bool,
    /// The events, e.g. cycles:u PAPI_TOT_INS INST_RETIRED.ANY_P r00c0.
    #[arg(required = true, value_name = "EVENT")]
    events: Vec<String>,
}

/// Resolves `name` for `kind`: through the live Linux backend when it probes (it knows
/// tracepoints, breakpoints and dynamic PMUs), else through the database.
fn resolve(context: &Context, kind: BackendKind, name: &str) -> Result<ResolvedEvent, Error> {
    if kind == BackendKind::Linux
        && let Ok(backend) = counterhal::probe(kind, context)
    {
        return backend.resolve(name);
    }
    context
        .database
        .resolve(context.model.as_deref(), name, kind)
}

/// The exclude bits exactly as the Linux backend programs them.
fn exclude_bits(perf: &PerfEncoding) -> Value {
    let bits = counterhal::linux::exclude_bits(perf);
    json!({
        "exclude_user": bits.user,
        "exclude_kernel": bits.kernel,
        "exclude_hv": bits.hv,
        "exclude_idle": bits.idle,
        "exclude_host": bits.host,
        "exclude_guest": bits.guest,
    })
}

/// One JSON object per native term of `event`.
pub fn to_json(event: &ResolvedEvent, cpu: Option<&str>) -> Vec<Value> {
    event
        .terms
        .iter()
        .map(|term| {
            // Every object has every field; those that do not apply to its backend are null.
            let mut object = json!({
                "event": event.name,
                "backend": term.request.encoding.backend().name(),
                "cpu": cpu,
                "type": null,
                "config": null,
                "config1": null,
                "config2": null,
                "function": null,
                "evtsel": null,
                "counters": null,
                "fixed": null,
            });
            if event.is_derived() {
                object["native"] = json!(term.request.name);
                object["sign"] = json!(if term.sign == Sign::Minus { "-" } else { "+" });
            }
            match &term.request.encoding {
                Encoding::Perf(perf) => {
                    object["type"] = json!(perf.type_);
                    object["config"] = json!(perf.config);
                    object["config1"] = json!(perf.config1);
                    object["config2"] = json!(perf.config2);
                    if perf.bp_type != 0 {
                        object["bp_type"] = json!(perf.bp_type);
                    }
                    if let Some(pmu) = &perf.pmu {
                        object["pmu"] = json!(pmu);
                    }
                    if let Value::Object(bits) = exclude_bits(perf) {
                        object.as_object_mut().expect("object").extend(bits);
                    }
                }
                Encoding::Pctr(pctr) => {
                    object["function"] = json!(pctr.function);
                    object["counters"] = json!(pctr.counters.iter().collect::<Vec<_>>());
                }
                Encoding::Msr(msr) => {
                    object["evtsel"] = json!(msr.evtsel);
                    object["counters"] = json!(msr.counters.iter().collect::<Vec<_>>());
                    object["fixed"] = json!(msr.fixed);
                }
            }
            object
        })
        .collect()
}

/// One line per native term of `event`.
pub fn to_text(event: &ResolvedEvent, cpu: Option<&str>) -> String {
    let cpu = cpu.unwrap_or("generic");
    let mut out = String::new();
    for term in &event.terms {
        let sign = match (event.is_derived(), term.sign) {
            (false, _) => String::new(),
            (true, Sign::Plus) => format!("  + {}: ", term.request.name),
            (true, Sign::Minus) => format!("  - {}: ", term.request.name),
        };
        let line = match &term.request.encoding {
            Encoding::Perf(p) => {
                let bits = counterhal::linux::exclude_bits(p);
                let excluded: Vec<&str> = bits
                    .names()
                    .map(|n| n.trim_start_matches("exclude_"))
                    .collect();
                format!(
                    "type={} config={:#x} config1={:#x} config2={:#x}{} exclude={}",
                    p.type_,
                    p.config,
                    p.config1,
                    p.config2,
                    if p.bp_type != 0 {
                        format!(" bp_type={}", p.bp_type)
                    } else {
                        String::new()
                    },
                    if excluded.is_empty() {
                        "none".to_string()
                    } else {
                        excluded.join(",")
                    }
                )
            }
            Encoding::Pctr(p) => {
                format!("function={:#010x} counters={}", p.function, p.counters)
            }
            Encoding::Msr(m) => match m.fixed {
                // Only the fixed counter can count it: no general-purpose alternative to show.
                Some(fixed) if m.counters.is_empty() => format!(
                    "fixed counter {fixed} only (USR={} OS={})",
                    m.evtsel >> 16 & 1,
                    m.evtsel >> 17 & 1,
                ),
                Some(fixed) => format!(
                    "fixed counter {fixed} (USR={} OS={}) or evtsel={:#x} counters={}",
                    m.evtsel >> 16 & 1,
                    m.evtsel >> 17 & 1,
                    m.evtsel,
                    m.counters
                ),
                None => format!("evtsel={:#x} counters={}", m.evtsel, m.counters),
            },
        };
        out.push_str(&format!("{}{}\n", sign, line));
    }
    if event.is_derived() {
        format!(
            "{} [{}, {cpu}]: derived from {} events\n{out}",
            event.name,
            event
                .terms
                .first()
                .map_or("?", |t| t.request.encoding.backend().name()),
            event.terms.len()
        )
    } else {
        format!(
            "{} [{}, {cpu}]: {out}",
            event.name,
            event
                .terms
                .first()
                .map_or("?", |t| t.request.encoding.backend().name())
        )
    }
}

/// Runs `counterhal encode`.
pub fn run(args: EncodeArgs) -> Result<ExitCode, CliError> {
    let mut out = String::new();
    let context = args.database.context()?;
    if args.backend != BackendKind::Linux && context.model.is_none() {
        let known: Vec<&str> = context.database.models().map(|m| m.id.as_str()).collect();
        return Err(CliError::usage(
            Error::invalid_input(format!(
                "no CPU model for {}: this CPU matches none in the event database",
                args.backend
            ))
            .with_hint(format!("name one with --cpu: {}", known.join(", "))),
            "counterhal encode --backend pctr|msr --cpu MODEL EVENT...",
        ));
    }
    let mut resolved = Vec::new();
    for name in &args.events {
        let event = resolve(&context, args.backend, name).map_err(CliError::input)?;
        resolved.push(event);
    }
    let cpu = context.model.as_deref();
    if args.json {
        let array: Vec<Value> = resolved.iter().flat_map(|e| to_json(e, cpu)).collect();
        _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&array).expect("JSON of plain values")
        );
    } else {
        for event in &resolved {
            _ = write!(out, "{}", to_text(event, cpu));
        }
    }
    super::output::emit(&out);
    Ok(ExitCode::SUCCESS)
}
