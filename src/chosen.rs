//! What a program counts with: the [`Chosen`] backend, resolving in its
//! [`Context`], each read through its accessors.

use counterhal_hal::{Backend, DynBackend};

use crate::attach::Target;
#[cfg(all(unix, feature = "command"))]
use crate::command::CommandCount;
#[cfg(all(unix, feature = "command"))]
use crate::command::{CountedCommand, Follow};
use crate::context::Context;
use crate::group::AnyGroup;
use crate::open;
use counterhal_events::listing::{ListOptions, Listed, list_events_with};
use counterhal_hal::{Capabilities, ResolvedEvent};
use counterhal_hal::{Error, EventSet, OpenOptions, Result};

/// A backend chosen at run time, boxed (its methods are `counterhal_hal::DynBackend`'s).
pub type AnyBackend = Box<dyn DynBackend + Send + Sync>;

/// What [`Chosen::open_named_counting`] opened: the events that count here, as one set, and
/// those left out, each with why (perf's `<not supported>`).
#[non_exhaustive]
pub struct PartialSet {
    /// The events that count here, in the order named (one group where the options group
    /// them); `None` where none does.
    pub set: Option<EventSet<AnyGroup>>,
    /// Each event left out, by its index among the names, with why it cannot be counted here.
    pub left_out: Vec<(usize, Error)>,
}

/// The backend a [`Setup`](crate::Setup) opened, and why each backend tried before it was
/// passed over: what a program counts with.
///
/// [`open_named`](Chosen::open_named) opens events by name on any [`Target`];
/// [`builder`](Chosen::builder) gathers them one at a time. It is a [`Backend`] itself, whose
/// groups are [`AnyGroup`]s, and it dereferences to the boxed backend
/// ([`AnyBackend`], `counterhal::advanced::AnyBackend`).
pub struct Chosen {
    backend: AnyBackend,
    passed_over: Vec<(&'static str, Error)>,
    context: Context,
}

impl Chosen {
    /// `backend`, chosen after the backends `passed_over` (each with why it could not be
    /// used, in order), resolving names in `context`: what [`Setup::open`](crate::Setup::open)
    /// makes.
    pub(crate) fn from_parts(
        backend: AnyBackend,
        passed_over: Vec<(&'static str, Error)>,
        context: Context,
    ) -> Chosen {
        Chosen {
            backend,
            passed_over,
            context,
        }
    }

    /// The backend in use, boxed.
    pub fn backend(&self) -> &AnyBackend {
        &self.backend
    }

    /// The backend in use, no longer held by a `Chosen` (its context and the reasons the
    /// others were passed over dropped).
    pub fn into_backend(self) -> AnyBackend {
        self.backend
    }

    /// The backends tried first and the reason each could not be used, in order.
    pub fn passed_over(&self) -> &[(&'static str, Error)] {
        &self.passed_over
    }

    /// The event database and the CPU model the backend resolves names against.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The context, to change: a listing's database with descriptions added
    /// ([`Context::set_database`]; the backend resolves in the database it was opened with).
    pub fn context_mut(&mut self) -> &mut Context {
        &mut self.context
    }

    /// Resolves every name and opens them as one set on `target`, disabled: the calling
    /// thread, one thread, a whole process (every thread it has and every thread and process
    /// it creates from now on, summed), CPUs (system-wide), a control group. Each reading is
    /// one name's: a derived preset is combined from its events, and a target of several
    /// threads or CPUs is summed over them (each scaled on its own first). A command is
    /// counted from its `exec` with [`count_command`](Chosen::count_command) (Unix).
    ///
    /// # Errors
    /// As [`Backend::resolve`] (with the event named) and [`Backend::open`];
    /// [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) for a process or thread that does not exist;
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for a name given twice (as a builder refuses it).
    pub fn open_named(
        &self,
        names: &[&str],
        target: &Target,
        options: &OpenOptions,
    ) -> Result<EventSet<AnyGroup>> {
        open::refuse_duplicates(names)?;
        let events = names
            .iter()
            .map(|name| Backend::resolve(self, name))
            .collect::<Result<Vec<_>>>()?;
        open::open_on(self, self.context().system(), events, target, options)
    }

    /// Opens `names` on `target` as [`open_named`](Chosen::open_named) does, but leaves out
    /// each event that cannot be counted here, as `perf stat` prints `<not supported>` for it
    /// and counts the rest ([`PartialSet`]). Where every event opens together nothing is
    /// tried alone; else each is tried alone on `target` first.
    ///
    /// # Errors
    /// As [`open_named`](Chosen::open_named) for the names (one that means nothing is an
    /// error, not an event left out); the error of the whole where each event opens alone
    /// but not all together (more than the counters hold as one group).
    pub fn open_named_counting(
        &self,
        names: &[&str],
        target: &Target,
        options: &OpenOptions,
    ) -> Result<PartialSet> {
        open::refuse_duplicates(names)?;
        let events = names
            .iter()
            .map(|name| Backend::resolve(self, name))
            .collect::<Result<Vec<_>>>()?;
        let together = match open::open_on(
            self,
            self.context().system(),
            events.clone(),
            target,
            options,
        ) {
            Ok(set) => {
                return Ok(PartialSet {
                    set: Some(set),
                    left_out: Vec::new(),
                });
            }
            Err(e) => e,
        };
        let mut counted = Vec::new();
        let mut left_out = Vec::new();
        for (index, event) in events.into_iter().enumerate() {
            match open::open_on(
                self,
                self.context().system(),
                vec![event.clone()],
                target,
                options,
            ) {
                Ok(_) => counted.push(event),
                Err(e) => left_out.push((index, e)),
            }
        }
        let set = match (counted.is_empty(), left_out.is_empty()) {
            (true, _) => None,
            (false, true) => return Err(together),
            (false, false) => Some(open::open_on(
                self,
                self.context().system(),
                counted,
                target,
                options,
            )?),
        };
        Ok(PartialSet { set, left_out })
    }

    /// Runs `command` with the events `names` counted from its `exec` to its end, with every
    /// process and thread it creates (`perf stat -- cmd`), with the options' domain given to
    /// the events without one and, where the OS refuses counting the kernel and no domain was
    /// asked, those events counted in user space as [`open_named`](Chosen::open_named) counts
    /// them ([`CommandCount::note`] says so). With `options.grouped` the events are one set
    /// (all counted or none); without, each is opened on its own, so one this machine lacks
    /// is an error for that event alone. The command is a [`std::process::Command`] (the
    /// caller's environment, directory and standard streams) or its arguments
    /// ([`Launch::Argv`](crate::Launch::Argv), the cheaper start).
    ///
    /// The one way to count a command: to wait in steps (answering Ctrl-C between them),
    /// read it while it runs or stop it, [`launch_command`](Chosen::launch_command) holds it
    /// as an [`advanced::CountedCommand`](CountedCommand), whose own `launch` counts perf's
    /// `{a,b}` groups or the command alone.
    ///
    /// # Errors
    /// As [`Backend::resolve`] for the names, and as
    /// [`CountedCommand::launch`](CountedCommand::launch) and its `start` and
    /// `wait`; [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for a name given
    /// twice.
    #[cfg(all(unix, feature = "command"))]
    pub fn count_command(
        &self,
        names: &[&str],
        command: impl Into<counterhal_process::Launch>,
        options: &OpenOptions,
    ) -> Result<CommandCount> {
        let mut counted = self.launch_command(names, command, options)?;
        counted.start()?;
        counted.wait()
    }

    /// Starts `command` held before its `exec`, with `names` opened on it as
    /// [`count_command`](Chosen::count_command) opens them, for a caller that waits its own
    /// way: [`start`](CountedCommand::start) lets it run, then
    /// [`wait_for`](CountedCommand::wait_for) waits in steps (between which a caller answers
    /// Ctrl-C, say), [`stop`](CountedCommand::stop) ends it early, and
    /// [`wait`](CountedCommand::wait) gives the counts (with the note).
    ///
    /// # Errors
    /// As [`count_command`](Chosen::count_command), but for the command's start and end.
    #[cfg(all(unix, feature = "command"))]
    pub fn launch_command(
        &self,
        names: &[&str],
        command: impl Into<counterhal_process::Launch>,
        options: &OpenOptions,
    ) -> Result<CountedCommand<AnyGroup>> {
        open::refuse_duplicates(names)?;
        let events = names
            .iter()
            .map(|name| Backend::resolve(self, name))
            .collect::<Result<Vec<_>>>()?;
        let (events, note) = open::countable_here(self, events, options)?;
        let groups = match options.grouped && !events.is_empty() {
            true => vec![(0..events.len()).collect()],
            false => Vec::new(),
        };
        let counted =
            CountedCommand::launch(self, &events, command, options, &groups, Follow::Children)?;
        Ok(counted.noting(note))
    }

    /// Opens events already resolved ([`resolve`](Chosen::resolve)), or encoded by the caller,
    /// as one set on `target`, disabled, as [`open_named`](Chosen::open_named) opens names (the options' domain given
    /// to the events without one, user space only with a note where the OS refuses the
    /// kernel, a target of several threads or CPUs summed).
    ///
    /// # Errors
    /// As [`open_named`](Chosen::open_named), but for resolving.
    pub fn open_events(
        &self,
        events: Vec<ResolvedEvent>,
        target: &Target,
        options: &OpenOptions,
    ) -> Result<EventSet<AnyGroup>> {
        open::open_on(self, self.context().system(), events, target, options)
    }

    /// Whether the backend can count on `target` (a whole process, CPUs, a control group):
    /// each backend target it stands for is one the backend's
    /// [`capabilities`](Chosen::capabilities) take (none does for a list of CPUs that are not
    /// online).
    pub fn supports(&self, target: &Target) -> bool {
        let capabilities = self.capabilities();
        target
            .targets(self.context().system())
            .is_ok_and(|targets| targets.iter().all(|one| capabilities.supports(one)))
    }

    /// What `name` is here, as a backend resolves it: its native events and their encodings.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidEvent`](crate::ErrorKind::InvalidEvent) for a name that means nothing here (with the nearest
    /// names); [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) for an event this backend cannot program.
    pub fn resolve(&self, name: &str) -> Result<ResolvedEvent> {
        self.backend.dyn_resolve(name)
    }

    /// The events whose name contains `pattern` (every event: `""`), as `counterhal list`
    /// lists them: the generalized events, the presets, the CPU model's native events with
    /// their unit masks and the backend's own, each saying whether it counts here and, where
    /// it does not, why.
    pub fn list(&self, pattern: &str, options: ListOptions) -> Vec<Listed> {
        let context = self.context();
        list_events_with(
            context.database(),
            context.model(),
            Ok(self.backend()),
            pattern,
            options,
        )
    }

    /// The backend's name, its [`Registration::name`](crate::Registration::name).
    pub fn name(&self) -> &'static str {
        self.backend.dyn_name()
    }

    /// The backend's name, with `(model)` after it where it drives a model of its device.
    pub fn label(&self) -> String {
        counterhal_hal::BackendExt::label(self)
    }

    /// What the backend can do: targets, domains, multiplexing, sampling.
    pub fn capabilities(&self) -> &Capabilities {
        self.backend.dyn_capabilities()
    }

    /// The CPU model names resolve against: the one [`Setup::cpu_model`](crate::Setup::cpu_model)
    /// named, else the one that matched this machine; `None` when none did.
    pub fn cpu_model(&self) -> Option<&str> {
        self.context.model()
    }
}

/// The chosen backend, opening groups of [`AnyGroup`] (the backend's group, boxed): a
/// [`Backend`] through the boxed backend it holds.
impl counterhal_hal::OpensThrough for Chosen {
    type Through = AnyBackend;
    type Group = AnyGroup;

    fn through(&self) -> &AnyBackend {
        &self.backend
    }
}
