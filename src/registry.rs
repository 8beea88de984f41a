//! The backends this build has: one list of the backend crates' registrations, in probe
//! order. Each crate registers itself (its `REGISTRATION`: its name, the systems where its real
//! device exists, how to make it over that device, over a model of it or over a sysfs tree);
//! a backend's line here is cfg'd by its Cargo feature alone. Adding a backend is its crate in
//! the workspace, its feature and dependency in `Cargo.toml`, its line here and its rows in
//! ARCHITECTURE.md's map (whose "Adding a backend" has the details).

use std::path::Path;
#[cfg(feature = "conformance")]
use std::sync::Arc;

use counterhal_events::Database;
use counterhal_hal::{Error, Given, Result};

use crate::chosen::AnyBackend;
use crate::context::Context;

/// One backend of this build, as the faces use it: its crate's registration (its `REGISTRATION`,
/// a `counterhal_hal::Registration`), its functions taking a [`Context`].
#[non_exhaustive]
pub struct Registration {
    /// The name the command line and reports use, its Cargo feature.
    pub name: &'static str,
    /// What it counts through, in a few words.
    pub interface: &'static str,
    /// What it reaches through that interface, in one line (README.md's table of systems).
    pub reaches: &'static str,
    /// Where it was verified on this project's machines, in one line (README.md's table).
    pub verified: &'static str,
    /// The operating systems (as `std::env::consts::OS` names them) where its real device
    /// exists. [`probe_all`] tries the backends of this OS in registry order.
    pub systems: &'static [&'static str],
    /// Makes the backend over the real device (what [`crate::probe`] calls on its systems).
    pub(crate) probe: fn(&Context) -> Result<AnyBackend>,
    /// Makes the backend over a model of its device, for the context's CPU model, where the
    /// backend has models: what it would program, shown where the device is absent.
    pub model: Option<fn(&Context) -> Result<AnyBackend>>,
    /// Makes the backend over the PMUs and tracepoints of a sysfs tree (its root, as `/sys`
    /// is: another machine's, or this one's mounted elsewhere), resolving names for the
    /// context's CPU model without opening anything, where the backend reads such a tree:
    /// what `--sysfs DIR` encodes and lists with. `None` for a backend that reads none.
    pub sysfs: Option<fn(&Context, &Path) -> AnyBackend>,
    /// The conformance suite on the real device (`Err` when the backend cannot be used here)
    /// and on every model of the device.
    #[cfg(feature = "conformance")]
    pub conformance: Conformance,
    /// The backend over a model of its device for the context's CPU model, fed the suite's
    /// steady work, where the backend has models (`counterhal stat --model`).
    #[cfg(feature = "conformance")]
    pub fed_model: Option<fn(&Context) -> Result<FedModel>>,
}

/// A backend over a model of its device with the conformance suite's steady work to feed it
/// (per 10 ns unit of the model's clock: 4 instructions, 3 of them in user mode, 1 branch, 2
/// cycles), for `counterhal stat --model`.
#[cfg(feature = "conformance")]
pub struct FedModel {
    /// The backend over the model.
    pub backend: AnyBackend,
    /// The model, in a few words (`the P6 pctr driver model, ...`).
    pub description: String,
    /// Runs that many units of work on the model.
    pub work: Box<dyn Fn(u64) + Send + Sync>,
    /// Where the work lands: what to count it on.
    pub target: counterhal_hal::BackendTarget,
}

/// A subject's backend, shared with the work that feeds its model.
#[cfg(feature = "conformance")]
struct Fed<S>(Arc<S>);

#[cfg(feature = "conformance")]
impl<S: counterhal_conformance::Subject> counterhal_hal::OpensThrough for Fed<S> {
    type Through = S::Backend;
    type Group = <S::Backend as counterhal_hal::Backend>::Group;

    fn through(&self) -> &S::Backend {
        self.0.backend()
    }
}

/// `subject` as a [`FedModel`].
#[cfg(feature = "conformance")]
fn fed<S>(subject: S) -> FedModel
where
    S: counterhal_conformance::Subject + Send + 'static,
    S::Backend: Send,
    <S::Backend as counterhal_hal::Backend>::Group: Send + Sync + 'static,
{
    let subject = Arc::new(subject);
    let feeding = Arc::clone(&subject);
    FedModel {
        description: subject.description(),
        target: subject.target(),
        work: Box::new(move |units| feeding.work(units)),
        backend: Box::new(Fed(subject)),
    }
}

/// The fed model of backend crate `$krate`: `None`, or with `models` (its conformance module
/// has `ModelSubject::for_model`) the model's.
#[cfg(feature = "conformance")]
macro_rules! fed_model {
    ($krate:ident) => {
        None
    };
    ($krate:ident, models) => {
        Some(|context: &Context| {
            let id = model_id(context, $krate::REGISTRATION.name)?;
            Ok(fed($krate::conformance::ModelSubject::for_model(
                database(context),
                &id,
            )?))
        })
    };
}

/// A backend's conformance runs.
#[cfg(feature = "conformance")]
#[derive(Clone, Copy)]
pub struct Conformance {
    /// The suite on the real device, or why the backend cannot be used here.
    pub real: fn(&Context) -> Result<counterhal_conformance::Report>,
    /// The suite on each model of the device (none for a backend without models).
    pub models: fn(&Context) -> Vec<counterhal_conformance::Report>,
}

impl Registration {
    /// Whether its real device can exist on this OS.
    pub fn runs_here(&self) -> bool {
        self.systems.contains(&OS)
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .field("interface", &self.interface)
            .field("systems", &self.systems)
            .finish_non_exhaustive()
    }
}

/// What a backend is made with in `context`.
#[allow(
    dead_code,
    reason = "every backend's line calls it; a build may have none"
)]
fn given(context: &Context) -> Given<'_, Database> {
    Given::new(
        context.database(),
        context.model(),
        context.mounts_tracefs(),
        context.system(),
    )
}

/// `backend` over a model of its device for the context's CPU model.
#[allow(
    dead_code,
    reason = "every backend's line calls it; a build may have none"
)]
fn modeled(
    backend: &counterhal_hal::Registration<Database>,
    context: &Context,
) -> Result<AnyBackend> {
    let id = model_id(context, backend.name)?;
    match backend.model {
        Some(model) => model(context.database(), &id),
        None => Err(Error::unsupported(format!(
            "the {} backend has no device model",
            backend.name
        ))),
    }
}

/// The CPU model a model backend describes: the context's, or an error naming the fix (a CPU
/// model, or the `device-models` feature in a build without it).
#[allow(
    dead_code,
    reason = "every backend's line calls it; a build may have none"
)]
fn model_id(context: &Context, backend: &str) -> Result<String> {
    if !cfg!(feature = "device-models") {
        return Err(Error::unsupported(format!(
            "the {backend} backend's device model is left out of this build: it needs \
             counterhal's `device-models` feature"
        )));
    }
    context.model().map(str::to_owned).ok_or_else(|| {
        Error::invalid_input(format!(
            "no CPU model to model the {backend} backend's device on: this CPU matches none in the event database"
        ))
        .with_hint("name one with --cpu-model (see `counterhal list` for the ids)")
    })
}

/// The context's database, for the conformance runs.
#[cfg(feature = "conformance")]
fn database(context: &Context) -> Arc<Database> {
    Arc::clone(context.database())
}

/// The conformance runs of backend crate `$krate`.
#[cfg(feature = "conformance")]
macro_rules! conformance {
    ($krate:ident) => {
        Conformance {
            real: |context| $krate::conformance::check(&given(context)),
            models: |context| $krate::conformance::check_models(database(context)),
        }
    };
}

/// Backend crate `$krate`'s registration as the faces use it; `models` marks a crate whose
/// conformance module has a `ModelSubject`.
#[allow(
    unused_macros,
    reason = "every backend's line calls it; a build may have none"
)]
macro_rules! registered {
    ($krate:ident $(, $models:ident)?) => {
        Registration {
            name: $krate::REGISTRATION.name,
            interface: $krate::REGISTRATION.interface,
            reaches: $krate::REGISTRATION.reaches,
            verified: $krate::REGISTRATION.verified,
            systems: $krate::REGISTRATION.systems,
            probe: |context| ($krate::REGISTRATION.probe)(&given(context)),
            model: match $krate::REGISTRATION.model {
                Some(_) => Some(|context| modeled(&$krate::REGISTRATION, context)),
                None => None,
            },
            sysfs: match $krate::REGISTRATION.sysfs {
                Some(_) => Some(|context, root| match $krate::REGISTRATION.sysfs {
                    Some(sysfs) => sysfs(&given(context), root),
                    None => unreachable!("registered with a reader of sysfs trees"),
                }),
                None => None,
            },
            #[cfg(feature = "conformance")]
            conformance: conformance!($krate),
            #[cfg(feature = "conformance")]
            fed_model: fed_model!($krate $(, $models)?),
        }
    };
}

/// The registry of backend crates `$krate`, each behind its feature `$feature` (its name), in
/// probe order: [`REGISTRY`] of those this build has, `LEFT_OUT` of the others' names.
macro_rules! backends {
    ($($feature:literal => $krate:ident $(, $models:ident)?;)*) => {
        /// Every backend of this build, in probe order.
        pub static REGISTRY: &[Registration] = &[$(
            #[cfg(feature = $feature)]
            registered!($krate $(, $models)?),
        )*];

        /// The backends this build's features leave out (a backend's feature is its name),
        /// so that asking for one names its feature.
        const LEFT_OUT: &[&str] = &[$(
            #[cfg(not(feature = $feature))]
            $feature,
        )*];
    };
}

backends! {
    "linux" => counterhal_linux;
    "msr" => counterhal_msr, models;
    "pctr" => counterhal_pctr, models;
    "hwpmc" => counterhal_hwpmc, models;
}

/// The backend registered as `name` (case-insensitive).
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal_hal::ErrorKind::InvalidInput) naming the backends
/// of this build.
pub fn registration(name: &str) -> Result<&'static Registration> {
    REGISTRY
        .iter()
        .find(|r| r.name.eq_ignore_ascii_case(name))
        .ok_or_else(
            || match LEFT_OUT.iter().find(|b| b.eq_ignore_ascii_case(name)) {
                Some(backend) => Error::unsupported(format!(
                    "the {backend} backend is left out of this build: it needs counterhal's \
                 `{backend}` feature"
                )),
                None => Error::invalid_input(format!("unknown backend `{name}`"))
                    .with_hint(format!("use one of: {}", names().join(", "))),
            },
        )
}

/// The names of every backend of this build, in registry order.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|r| r.name).collect()
}

/// The operating system this build targets, as printed by `counterhal info`.
pub const OS: &str = std::env::consts::OS;

/// The backends whose real device can exist on this OS, in the order they are tried.
pub fn native_backends() -> impl Iterator<Item = &'static Registration> {
    REGISTRY.iter().filter(|r| r.runs_here())
}

/// One backend's probe: the backend, or why it cannot be used here.
pub struct Probe {
    /// Which backend.
    pub registration: &'static Registration,
    /// The usable backend, or the reason it is not.
    pub result: Result<AnyBackend>,
}

/// Probes one backend on this machine's real device.
///
/// # Errors
/// [`ErrorKind::Unsupported`](counterhal_hal::ErrorKind::Unsupported) when the backend's device does not exist on this OS; otherwise
/// what the backend's probe says (device missing, permission denied, ...).
pub fn probe(registration: &Registration, context: &Context) -> Result<AnyBackend> {
    if !registration.runs_here() {
        let hint = match registration.model {
            Some(_) => "its device model runs anywhere: `counterhal check --models`",
            None => "`counterhal info` lists the backends of this system",
        };
        return Err(Error::unsupported(format!(
            "the {} backend ({}) runs on {}, not on {OS}",
            registration.name,
            registration.interface,
            registration.systems.join(", ")
        ))
        .with_hint(hint));
    }
    (registration.probe)(context)
}

/// Probes every backend of this OS, in order.
pub fn probe_all(context: &Context) -> Vec<Probe> {
    native_backends()
        .map(|registration| Probe {
            registration,
            result: probe(registration, context),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order each OS's backends are tried in: on Linux the kernel's interface before raw
    /// MSRs.
    #[test]
    fn backends_per_os() {
        let native: Vec<&str> = native_backends().map(|r| r.name).collect();
        if cfg!(target_os = "linux") {
            assert_eq!(native, ["linux", "msr"]);
        }
        if cfg!(target_os = "openbsd") {
            assert_eq!(native, ["pctr"]);
        }
        if cfg!(target_os = "freebsd") {
            assert_eq!(native, ["hwpmc"]);
        }
        assert_eq!(names(), ["linux", "msr", "pctr", "hwpmc"]);
    }

    /// A backend this build's features leave out is named with its feature when asked for;
    /// a name no build has is unknown, with this build's names.
    #[test]
    fn a_backend_left_out_names_its_feature() {
        let mut every: Vec<&str> = names()
            .into_iter()
            .chain(LEFT_OUT.iter().copied())
            .collect();
        every.sort_unstable();
        assert_eq!(every, ["hwpmc", "linux", "msr", "pctr"]);
        for backend in LEFT_OUT {
            let error = registration(backend).err().unwrap();
            assert_eq!(error.kind(), counterhal_hal::ErrorKind::Unsupported);
            let message = error.to_string();
            assert!(
                message.contains(&format!("`{backend}` feature")),
                "{message}"
            );
        }
        let error = registration("tprof").err().unwrap();
        assert_eq!(error.kind(), counterhal_hal::ErrorKind::InvalidInput);
        assert!(
            error.to_string().contains("unknown backend `tprof`"),
            "{error}"
        );
    }

    /// Names are lower-case words, each once: what the command line takes and what
    /// `tests/registry.rs` looks for.
    #[test]
    fn names_are_distinct_lower_case_words() {
        let names = names();
        for (i, name) in names.iter().enumerate() {
            assert!(
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
                "{name}"
            );
            assert!(!names[..i].contains(name), "{name} twice");
        }
    }
}
