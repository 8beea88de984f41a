//! Options several subcommands share: the event database and CPU model (`--events`,
//! `--cpu-model`), the sysfs root (`--sysfs`), and the parser of `--backend`.

use std::path::PathBuf;
use std::sync::Arc;

use counterhal::{Context, Registration};
use counterhal_events::DESCRIPTIONS_ENV;
use counterhal_system::{PmuDevices, System};

use crate::args::spec::{Spec, path, text};
use crate::error::CliError;

/// Options shared by the commands that resolve event names ([`database_options`]).
#[derive(Debug, Clone, Default)]
pub struct DatabaseArgs {
    /// `--cpu-model`.
    pub(crate) cpu: Option<String>,
    /// `--events`.
    pub(crate) events_file: Option<PathBuf>,
    /// `--descriptions`.
    pub(crate) descriptions: Option<PathBuf>,
}

/// Arguments holding the event database's options.
pub trait Databased {
    /// The event database's options.
    fn database(&mut self) -> &mut DatabaseArgs;
}

/// `--cpu-model MODEL`.
pub const fn cpu_model<T: Databased>() -> Spec<T> {
    text(None, "cpu-model", "MODEL", |a: &mut T, v: &str| {
        a.database().cpu = Some(v.to_string());
        Ok(())
    })
    .says(
        "CPU model from the event database instead of the detected one: an id (e.g. p6, skl, \
        amd64_fam19h_zen3) or perf's signature Vendor-Family-Model[-Stepping] \
        (GenuineIntel-6-8F-8, AuthenticAMD-26-2-0), detected as this CPU would be; on a hybrid \
        chip, -atom or -core after it names the core (GenuineIntel-6-97-2-atom)",
    )
}

/// `--events FILE`.
pub const fn events_file<T: Databased>() -> Spec<T> {
    path(None, "events", "FILE", |a: &mut T, v| {
        a.database().events_file = Some(v)
    })
    .says("An events file that adds CPU models or overrides events (also COUNTERHAL_EVENTS)")
}

/// `--descriptions DIR`.
pub const fn descriptions<T: Databased>() -> Spec<T> {
    path(None, "descriptions", "DIR", |a: &mut T, v| {
        a.database().descriptions = Some(v)
    })
    .says(
        "Descriptions of the CPU model's native events and unit masks, read from perf's JSON \
        event files: the kernel's tools/perf/pmu-events/arch/x86 directory, one model's \
        directory of it, or a perfmon tree (also COUNTERHAL_DESCRIPTIONS). `list` shows them \
        and its PATTERN matches them",
    )
}

impl DatabaseArgs {
    /// The event database (with the events file) and the CPU model (named or detected).
    ///
    /// # Errors
    /// A bad events file or an unknown CPU model: bad input (exit 2) with the usage line.
    pub fn context(&self) -> Result<Context, CliError> {
        let mut context =
            Context::new(self.events_file.as_deref(), self.cpu.as_deref()).map_err(|e| {
                CliError::usage(
                    e,
                    "--cpu-model MODEL (see `counterhal list --models`) --events FILE",
                )
            })?;
        // The command mounts tracefs where it is absent, as root, as perf does.
        context.set_mount_tracefs(true);
        // A hybrid chip's signature without its core: say which core's table was taken.
        if let Some(note) = self
            .cpu
            .as_deref()
            .and_then(|id| context.database().hybrid_note(id))
        {
            crate::output::emit_to_stderr(&format!("counterhal: note: {note}\n"));
        }
        // Descriptions are read only when asked, for the model in use alone.
        let descriptions = self.descriptions.clone().or_else(|| {
            std::env::var_os(DESCRIPTIONS_ENV)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
        });
        if let (Some(dir), Some(model)) = (descriptions, context.model()) {
            let (database, _) = (**context.database())
                .clone()
                .with_descriptions(model, &dir)
                .map_err(|e| CliError::usage(e, "--descriptions DIR (perf's JSON event files)"))?;
            context.set_database(Arc::new(database));
        }
        Ok(context)
    }
}

/// The environment variable naming a sysfs root, as `--sysfs` does.
pub const SYSFS_ENV: &str = "COUNTERHAL_SYSFS";

/// Where the PMUs are read from: `/sys`, or another machine's sysfs tree ([`sysfs`]).
#[derive(Debug, Clone, Default)]
pub struct SysfsArgs {
    /// `--sysfs`.
    pub(crate) sysfs: Option<PathBuf>,
}

/// Arguments holding `--sysfs`.
pub trait Sysfsed {
    /// The sysfs root's option.
    fn sysfs(&mut self) -> &mut SysfsArgs;
}

/// `--sysfs DIR`.
pub const fn sysfs<T: Sysfsed>() -> Spec<T> {
    path(None, "sysfs", "DIR", |a: &mut T, v| {
        a.sysfs().sysfs = Some(v)
    })
    .says(
        "Read the PMUs from this sysfs root instead of /sys: DIR/bus/event_source/devices (and \
        DIR/kernel/tracing), a /sys copied or mounted here (also COUNTERHAL_SYSFS). encode and \
        list open nothing, so another machine's PMUs, aliases, cpumasks, scales and units \
        encode on this one; stat opens on this kernel, so its tree must be this machine's. The \
        CPUs of each open come from the tree's `cpumask` and `cpus` files; \
        DIR/devices/system/cpu is not read: encode and list need no other CPU list, and stat \
        counts this machine's. The tree is read as sysfs is: links are followed only where \
        they stay inside DIR, only regular files of at most 4096 bytes are read, and a scale \
        must be finite and positive; a file that breaks these rules is refused by its path, \
        never shown",
    )
}

impl SysfsArgs {
    /// The root named with `--sysfs` or `COUNTERHAL_SYSFS`, if any.
    pub fn root(&self) -> Option<PathBuf> {
        self.sysfs.clone().or_else(|| {
            std::env::var_os(SYSFS_ENV)
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
        })
    }

    /// The system the command reads: this machine's, with the PMUs of the root named, if
    /// any (the metrics' PMU facts, `#slots` and `#chas_per_socket`, are read there; the
    /// root is checked by [`SysfsArgs::devices`]).
    pub fn system(&self) -> System {
        match self.root() {
            Some(root) => System::host().with_pmus_under(root),
            None => System::host(),
        }
    }

    /// The PMUs: those of the root's `bus/event_source/devices`, or the system's.
    ///
    /// # Errors
    /// A root without that directory: bad input (exit 2).
    pub fn devices(&self) -> Result<PmuDevices, CliError> {
        let Some(root) = self.root() else {
            return Ok(System::host().pmus());
        };
        let usage = "--sysfs DIR (a sysfs root, as /sys is: DIR/bus/event_source/devices)";
        match System::pmus_under(&root) {
            Ok(Some(devices)) => Ok(devices),
            Ok(None) => Err(CliError::usage(
                counterhal::Error::invalid_input(format!(
                    "{} holds no bus/event_source/devices",
                    root.display()
                )),
                usage,
            )),
            Err(refused) => Err(CliError::usage(
                counterhal::Error::invalid_input(refused.to_string()).with_hint(
                    "name the tree it links to as the root (a link to /sys: --sysfs /sys), or \
                     copy it",
                ),
                usage,
            )),
        }
    }

    /// The backend over the root's PMUs and tracepoints, resolving for the context's model
    /// without opening anything: `backend`'s, or (none named) the first of this build that
    /// reads a sysfs tree ([`Registration::sysfs`]); `None` without a root.
    ///
    /// # Errors
    /// As [`SysfsArgs::devices`]; a named backend that reads no sysfs tree, or none in this
    /// build, is bad input (exit 2) that names the backends that read one.
    pub fn backend(
        &self,
        context: &Context,
        backend: Option<&Registration>,
        usage: &'static str,
    ) -> Option<Result<counterhal::advanced::AnyBackend, CliError>> {
        let root = self.root()?;
        if let Err(error) = self.devices() {
            return Some(Err(error));
        }
        let reader = match backend {
            Some(registration) => registration.sysfs,
            None => counterhal::REGISTRY.iter().find_map(|r| r.sysfs),
        };
        let Some(over_tree) = reader else {
            let readers: Vec<&str> = counterhal::REGISTRY
                .iter()
                .filter(|r| r.sysfs.is_some())
                .map(|r| r.name)
                .collect();
            let error = counterhal::Error::invalid_input(format!(
                "--sysfs names a sysfs tree, which {} reads no PMUs from",
                backend.map_or("this build".to_string(), |r| format!(
                    "the {} backend",
                    r.name
                ))
            ))
            .with_hint(match readers.is_empty() {
                true => "this build has no backend that reads a sysfs tree".to_string(),
                false => format!("--backend {}", readers.join(" or --backend ")),
            });
            return Some(Err(CliError::usage(error, usage)));
        };
        Some(Ok(over_tree(context, &root)))
    }
}

/// Parses `--backend NAME` into its registration; the error lists the known names.
pub fn parse_backend(name: &str) -> Result<&'static Registration, String> {
    counterhal::registration(name).map_err(|_| {
        format!(
            "unknown backend `{name}`: use {}",
            counterhal::registry::names().join(", ")
        )
    })
}
