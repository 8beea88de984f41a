//! The backend the plan is made on: the one `--backend` names, or the first of this OS that
//! works; over `--sysfs`'s tree, the one that reads a sysfs tree; with `--model`, the named
//! backend's device model ([`Modeled`]).

use counterhal::advanced::AnyBackend;
use counterhal::registry::FedModel;
use counterhal::{Context, Error, REGISTRY, Registration, Target as Attach};
use counterhal_hal::BackendTarget;

use super::targets::Targets;
use crate::error::CliError;
use crate::stat::arguments::{StatArgs, USAGE};

/// The backend `args` ask for, for `context`: over `--sysfs`'s tree (the root's PMUs, this
/// machine's mounted elsewhere, opened here), the backend that reads one (the one named, else
/// the first); otherwise the first backend of this OS that works (or the one named).
///
/// # Errors
/// A `--sysfs` root without PMUs, or a named backend that reads no sysfs tree (exit 2); as
/// [`choose`].
pub fn of(args: &StatArgs, context: &Context) -> Result<AnyBackend, CliError> {
    let Some(root) = args.sysfs.root() else {
        return choose(args.backend, context);
    };
    args.sysfs.devices()?;
    if let Some(registration) = args.backend.filter(|r| r.sysfs.is_none()) {
        let error = Error::invalid_input(format!(
            "--sysfs names a sysfs tree, which the {} backend reads no PMUs from",
            registration.name
        ))
        .with_hint("leave out --backend: the first backend that reads one is used");
        return Err(CliError::usage(error, USAGE));
    }
    let mut setup = counterhal::Setup::new()
        .context(context.clone())
        .sysfs(&root);
    if let Some(registration) = args.backend {
        setup = setup.backend(registration.name);
    }
    Ok(setup.open().map_err(CliError::failed)?.into_backend())
}

/// The backend registered as `registration`, or the first that works here.
///
/// # Errors
/// The named backend's probe error, or (none named) every backend's reason it is unusable;
/// a failure (exit 1).
pub fn choose(
    registration: Option<&'static Registration>,
    context: &Context,
) -> Result<AnyBackend, CliError> {
    if let Some(registration) = registration {
        return counterhal::probe(registration, context).map_err(CliError::failed);
    }
    let mut reasons = Vec::new();
    for probe in counterhal::probe_all(context) {
        match probe.result {
            Ok(backend) => return Ok(backend),
            Err(e) => reasons.push(format!("{}: {e}", probe.registration.name)),
        }
    }
    Err(CliError::failed(Error::unsupported(format!(
        "no usable counter backend here: {}",
        reasons.join("; ")
    ))))
}

/// `stat --model`'s backend: a backend's device model where the device is absent, which the
/// measurement feeds the conformance suite's steady work (its subject's `work`) while the
/// command runs, so that the output shows what the backend would print: its events, its
/// errors, its multiplexing. The counts are the model's, and [`Modeled::note`] says so.
pub struct Modeled {
    /// The model, its backend and its work.
    pub model: FedModel,
    /// The database model whose metrics `-M` reads.
    pub id: String,
    /// Where the work lands (the model of one CPU, or the process a driver model counts), so
    /// where the events are counted.
    pub targets: Targets,
}

impl Modeled {
    /// The device model of `registration` for the context's CPU model.
    ///
    /// # Errors
    /// A backend without device models, or no CPU model to model (exit 2); the model's own.
    pub fn of(registration: &'static Registration, context: &Context) -> Result<Modeled, CliError> {
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
        let model = fed_model(context).map_err(|e| CliError::usage(e, USAGE))?;
        let attach = match model.target {
            BackendTarget::Process { pid, .. } => Attach::thread(pid),
            BackendTarget::Cpu(cpu) => Attach::cpu(cpu),
            _ => Attach::ThisThread,
        };
        Ok(Modeled {
            model,
            id,
            targets: Targets::Attach(attach),
        })
    }

    /// What is said under the results: whose counts they are.
    pub fn note(&self) -> String {
        format!(
            "counted on the {} (a device model, not this machine), fed a steady synthetic \
             workload: per 10 ns of its clock 4 instructions (3 user, 1 kernel), 1 branch, 2 \
             cycles",
            self.model.description
        )
    }
}

/// The backend over `perf_event_open`, resolving in `db` for CPU model `model`: what the
/// tests of `stat`'s planning plan on, where it works.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn the_backend_over_perf_event_open(
    db: std::sync::Arc<counterhal_events::Database>,
    model: &str,
) -> counterhal::Result<AnyBackend> {
    let context = Context::from_parts(
        counterhal::system::System::host(),
        db,
        None,
        Some(model.to_owned()),
    );
    counterhal::probe(counterhal::registration("linux")?, &context)
}
