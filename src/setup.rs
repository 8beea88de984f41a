//! The one way to start: a [`Setup`] names every choice (the events file, the CPU model, the
//! backend, a sysfs tree, or a context already made) and opens the [`Chosen`] backend;
//! [`open_default`] is its shorthand with every choice left to the library.

use std::path::{Path, PathBuf};

use crate::chosen::Chosen;
use crate::context::Context;
use crate::registry::{self, OS, probe, probe_all, registration};
use counterhal_hal::{Error, Result};

/// Opens the first backend that works here, with the shipped database (plus
/// `COUNTERHAL_EVENTS`) and the detected CPU model: `Setup::new().open()`, the shorthand for a
/// [`Setup`] with every choice left to the library.
///
/// # Errors
/// As [`Setup::open`]: [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) when this
/// build has no backend for this OS; when none works, the first backend's kind with every
/// backend's reason in the message.
pub fn open_default() -> Result<Chosen> {
    Setup::new().open()
}

/// What [`Setup::open`] opens counters with: the event database (with a user's events file),
/// the CPU model names resolve against, and the backend (over its device, or over a sysfs
/// tree); each left unset is chosen as [`open_default`] chooses it. The one way to start:
/// every option of the library's start is a method here.
///
/// ```no_run
/// use counterhal::prelude::*;
///
/// // Names resolve against Skylake's tables, whatever this machine is (as `--cpu-model skl`).
/// let skylake = Setup::new().cpu_model("skl").backend("linux").open()?;
/// assert_eq!(skylake.cpu_model(), Some("skl"));
/// // perf's signature of a CPU works too: detected as that CPU would be.
/// let spr = Setup::new().cpu_model("GenuineIntel-6-8F-8").open()?;
/// // A user's events file beside the shipped database.
/// let mine = Setup::new().events_file("my-events.toml").open()?;
/// # Ok::<(), counterhal::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Setup {
    events_file: Option<PathBuf>,
    cpu_model: Option<String>,
    backend: Option<String>,
    sysfs: Option<PathBuf>,
    context: Option<Context>,
    mount_tracefs: bool,
}

impl Setup {
    /// Everything chosen as [`open_default`] chooses it.
    pub fn new() -> Setup {
        Setup::default()
    }

    /// Reads `path`, a TOML events file that adds CPU models or overrides events, beside the
    /// shipped database (and `COUNTERHAL_EVENTS`), as `--events FILE`.
    pub fn events_file(mut self, path: impl AsRef<Path>) -> Setup {
        self.events_file = Some(path.as_ref().to_path_buf());
        self
    }

    /// Resolves names against the CPU model `model` instead of this machine's, as
    /// `--cpu-model`: a database id (`skl`, `amd64_fam19h_zen3`, `p6`) or perf's signature
    /// `Vendor-Family-Model[-Stepping]` (`GenuineIntel-6-8F-8`), detected as that CPU would be
    /// (`-atom` or `-core` after a hybrid chip's names its core).
    pub fn cpu_model(mut self, model: &str) -> Setup {
        self.cpu_model = Some(model.to_owned());
        self
    }

    /// Uses the backend `name` (a [`Registration::name`](crate::Registration::name) of the
    /// [`REGISTRY`](crate::REGISTRY)) and no other, instead of the first that works here.
    pub fn backend(mut self, name: &str) -> Setup {
        self.backend = Some(name.to_owned());
        self
    }

    /// Opens the backend over the PMUs and tracepoints of the sysfs tree under `root` (as
    /// `/sys` is: another machine's, or this one's mounted elsewhere), as `--sysfs DIR`: names
    /// resolve and encode for that machine, without its device (nothing counts). The backend
    /// is the one [`backend`](Setup::backend) names, else the first of this build that reads a
    /// sysfs tree ([`Registration::sysfs`](crate::Registration::sysfs)).
    pub fn sysfs(mut self, root: impl AsRef<Path>) -> Setup {
        self.sysfs = Some(root.as_ref().to_path_buf());
        self
    }

    /// Lets the backend mount tracefs to resolve a tracepoint (`syscalls:sys_enter_getpid`):
    /// on Linux, where tracefs is mounted nowhere (neither `/sys/kernel/tracing` nor
    /// `/sys/kernel/debug/tracing`) and this process is root, it is mounted at
    /// `/sys/kernel/tracing` and left mounted, as perf and the `counterhal` command do. Off
    /// by default: a library changes no system unasked, and a tracepoint is then an unknown
    /// event (the error says tracefs is not mounted) until someone mounts it.
    pub fn mount_tracefs(mut self, mount: bool) -> Setup {
        self.mount_tracefs = mount;
        self
    }

    /// Resolves in `context`, a database and CPU model already loaded ([`Context::new`], with
    /// a listing's descriptions added, say), instead of loading them: what a face that made
    /// its context for other work opens its backend with. It stands for
    /// [`events_file`](Setup::events_file) and [`cpu_model`](Setup::cpu_model), which are
    /// not given with it.
    pub fn context(mut self, context: Context) -> Setup {
        self.context = Some(context);
        self
    }

    /// Loads the database, picks the CPU model and opens the backend.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for a malformed events
    /// file, an unknown CPU model (the message lists the known ids), an unknown backend name
    /// (the hint lists them), a [`context`](Setup::context) given with an events file or a CPU
    /// model, or a [`sysfs`](Setup::sysfs) tree no backend of this build reads (the hint names
    /// those that do); [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) when this
    /// build has no backend for this OS; when none works, the first backend's kind with every
    /// backend's reason in the message; as the named backend's probe.
    pub fn open(self) -> Result<Chosen> {
        let mut context = match self.context {
            Some(_) if self.events_file.is_some() || self.cpu_model.is_some() => {
                return Err(Error::invalid_input(
                    "a Setup was given a context and also an events file or a CPU model",
                )
                .with_hint(
                    "give the events file and CPU model to Context::new, or leave the context out",
                ));
            }
            Some(context) => context,
            None => Context::new(self.events_file.as_deref(), self.cpu_model.as_deref())?,
        };
        if self.mount_tracefs {
            context.set_mount_tracefs(true);
        }
        let named = self.backend.as_deref().map(registration).transpose()?;
        if let Some(root) = &self.sysfs {
            let reader = match named {
                Some(registration) => registration.sysfs,
                None => registry::REGISTRY.iter().find_map(|r| r.sysfs),
            };
            let Some(over_tree) = reader else {
                return Err(no_sysfs_reader(named.map(|r| r.name), root));
            };
            let backend = over_tree(&context, root);
            return Ok(Chosen::from_parts(backend, Vec::new(), context));
        }
        if let Some(registration) = named {
            let backend = probe(registration, &context)?;
            return Ok(Chosen::from_parts(backend, Vec::new(), context));
        }
        first_that_works(context)
    }
}

/// The first backend of this OS that works, with why each before it was passed over.
fn first_that_works(context: Context) -> Result<Chosen> {
    let mut passed_over = Vec::new();
    for probe in probe_all(&context) {
        match probe.result {
            Ok(backend) => return Ok(Chosen::from_parts(backend, passed_over, context)),
            Err(e) => passed_over.push((probe.registration.name, e)),
        }
    }
    match passed_over.first() {
        None => Err(Error::unsupported(format!(
            "this build of counterhal has no backend for {OS}"
        ))
        .with_hint(
            "supported: Linux (perf_event_open, MSRs), OpenBSD (/dev/pctr), FreeBSD (hwpmc)",
        )),
        Some((_, first)) => {
            let reasons: Vec<String> = passed_over
                .iter()
                .map(|(name, e)| format!("{name}: {e}"))
                .collect();
            Err(Error::new(
                first.kind(),
                format!("no usable counter backend: {}", reasons.join("; ")),
            ))
        }
    }
}

/// The error of a sysfs tree at `root` that the backend `named` (or, `None`, this build)
/// reads no PMUs from.
fn no_sysfs_reader(named: Option<&str>, root: &Path) -> Error {
    let who = named.map_or("this build".to_string(), |name| {
        format!("the {name} backend")
    });
    let readers: Vec<&str> = registry::REGISTRY
        .iter()
        .filter(|r| r.sysfs.is_some())
        .map(|r| r.name)
        .collect();
    Error::invalid_input(format!(
        "Setup::sysfs names a sysfs tree ({}), which {who} reads no PMUs from",
        root.display()
    ))
    .with_hint(match readers.is_empty() {
        true => "this build has no backend that reads a sysfs tree".to_string(),
        false => format!(
            "name a backend that reads one with Setup::backend: {}",
            readers.join(", ")
        ),
    })
}
