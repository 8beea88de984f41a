//! `stat --model`: counting on a backend's device model where the device is absent, fed the
//! conformance suite's steady work (its subject's `work`) on a thread of its own while the
//! command runs, so that the output shows what the backend would print: its events, its
//! errors, its multiplexing. The counts are the model's, and the note under the table says so.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use counterhal::Target as Attach;
use counterhal::registry::FedModel;
use counterhal::{Context, Error, REGISTRY, Registration};
use counterhal_hal::BackendTarget;

use super::arguments::{StatArgs, USAGE};
use super::targets::Targets;
use crate::error::CliError;

/// How often the feeding thread feeds. Each time it feeds the units of work (10 ns each, the
/// subjects' unit) that the wall clock has moved on since the last, so that the model's time
/// keeps to the wall clock's however late the thread is scheduled.
const FEED_EVERY: Duration = Duration::from_millis(1);
const UNIT_NANOS: u128 = 10;

/// Runs the measurement on `registration`'s device model for the context's CPU model.
///
/// # Errors
/// A backend without device models, or no CPU model to model (exit 2); the measurement's.
pub fn run(
    args: &StatArgs,
    registration: &'static Registration,
    context: &Context,
) -> Result<ExitCode, CliError> {
    let Some(fed_model) = registration.fed_model else {
        let with_models: Vec<&str> = REGISTRY
            .iter()
            .filter(|r| r.fed_model.is_some())
            .map(|r| r.name)
            .collect();
        return Err(CliError::usage(
            Error::invalid_input(format!(
                "--model: the {} backend has no device model",
                registration.name
            ))
            .with_hint(format!(
                "--model takes --backend {}",
                with_models.join(", ")
            )),
            USAGE,
        ));
    };
    let id = context.model().map(str::to_owned).ok_or_else(|| {
        CliError::usage(
            Error::invalid_input("--model: no CPU model to model the device on: this CPU matches none in the event database")
                .with_hint("name one with --cpu-model (see `counterhal list --models`)"),
            USAGE,
        )
    })?;
    let fed_model = fed_model(context).map_err(|e| CliError::usage(e, USAGE))?;
    fed(args, &id, &fed_model)
}

/// Counts the command on the fed model's backend, feeding the model from another thread until
/// the measurement ends. The work lands where the model says (the model of one CPU, or the
/// process a driver model counts), so that is where the events are counted; `-M` reads the
/// metrics of the database model `id`.
fn fed(args: &StatArgs, id: &str, model: &FedModel) -> Result<ExitCode, CliError> {
    let note = format!(
        "counted on the {} (a device model, not this machine), fed a steady synthetic \
         workload: per 10 ns of its clock 4 instructions (3 user, 1 kernel), 1 branch, 2 cycles",
        model.description
    );
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let start = Instant::now();
            let mut fed: u128 = 0;
            while !done.load(Ordering::Relaxed) {
                let due = start.elapsed().as_nanos() / UNIT_NANOS;
                if let Ok(units) = u64::try_from(due - fed)
                    && units > 0
                {
                    (model.work)(units);
                    fed = due;
                }
                std::thread::sleep(FEED_EVERY);
            }
        });
        let attach = match model.target {
            BackendTarget::Process { pid, .. } => Attach::thread(pid),
            BackendTarget::Cpu(cpu) => Attach::cpu(cpu),
            _ => Attach::ThisThread,
        };
        let targets = Targets::Attach(attach);
        let result = super::stat_with(args, &targets, &model.backend, Some(id), &[], Some(note));
        done.store(true, Ordering::Relaxed);
        result
    })
}
