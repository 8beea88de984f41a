//! What a backend under test offers the suite beyond the hal traits.

use counterhal_hal::{Backend, BackendTarget, Error, SampleOptions, Sampler};

/// An event a subject can make count exactly: `per_unit` events per unit of
/// [`Subject::work`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExactEvent {
    /// The event name, as [`Backend::resolve`] takes it.
    pub name: String,
    /// Events counted per unit of work.
    pub per_unit: u64,
    /// How many of them happen in user mode (the rest in kernel mode), when the subject
    /// knows: the case `user_and_kernel_modifiers_split_the_count` then checks that `:u` counts
    /// just these and `:k` just the rest.
    pub user_per_unit: Option<u64>,
}

impl ExactEvent {
    /// An exact event, its split between user and kernel mode unknown.
    pub fn new(name: impl Into<String>, per_unit: u64) -> Self {
        Self {
            name: name.into(),
            per_unit,
            user_per_unit: None,
        }
    }

    /// The same event, `user` of its `per_unit` events happening in user mode and the rest in
    /// kernel mode.
    #[must_use]
    pub fn with_user_per_unit(mut self, user: u64) -> Self {
        self.user_per_unit = Some(user.min(self.per_unit));
        self
    }
}

/// An event the restart cases put in their groups beside the exact events, so that a group
/// mixes the subject's PMUs (Linux: a software event, `task-clock`, and a hardware event where
/// there is a PMU, beside a tracepoint and a breakpoint).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompanionEvent {
    /// The event name, as [`Backend::resolve`] takes it.
    pub name: String,
    /// Whether it counts whenever its group is enabled and the calling thread runs (a clock,
    /// or instructions), so that every window of work must raise it; otherwise only its
    /// presence is tested (it leads, or follows, members of other PMUs).
    pub grows: bool,
}

impl CompanionEvent {
    /// A companion that must grow in every window.
    pub fn growing(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            grows: true,
        }
    }

    /// A companion whose count is not checked.
    pub fn present(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            grows: false,
        }
    }
}

/// A backend under test, with the means to make its counters count known amounts.
///
/// For a real device, [`work`](Subject::work) does something the hardware or kernel counts
/// exactly (calls a function under an execute breakpoint, makes a system call under a
/// tracepoint). For a model, it feeds the model events.
pub trait Subject: Sync {
    /// The backend.
    type Backend: Backend + Sync;

    /// The backend under test.
    fn backend(&self) -> &Self::Backend;

    /// A few words on the device beyond its kind, for the report (`P6, legacy ABI`).
    fn description(&self) -> String;

    /// Events [`work`](Subject::work) makes count exactly. Give at least two with different
    /// `per_unit` where possible: the group cases use them to check ordering.
    fn exact_events(&self) -> Vec<ExactEvent>;

    /// Performs `units` units of deterministic work, counted by the
    /// [`exact_events`](Subject::exact_events) of a group opened on
    /// [`target`](Subject::target) by the calling thread.
    fn work(&self, units: u64);

    /// The target the suite opens its groups on.
    fn target(&self) -> BackendTarget {
        BackendTarget::ThisThread
    }

    /// An event that occupies one counter, and how many counters it can use at once: the
    /// suite opens one more than that many and expects "no counter available" (or, where the
    /// backend multiplexes, scaled readings). `None` when there is no such limit to test.
    fn counter_event(&self) -> Option<(String, u32)> {
        None
    }

    /// An event the backend time-shares when more copies of it are opened (ungrouped) than it
    /// has counters for, and how many counters it can use at once: the case
    /// `multiplexing_time_shares_events` opens one more copy than that. By default the
    /// [`counter_event`](Subject::counter_event); a subject whose counter-limited event is not
    /// multiplexed (Linux's breakpoints hold debug registers) names a counted one.
    fn multiplexed_event(&self) -> Option<(String, u32)> {
        self.counter_event()
    }

    /// The error the backend gives when its device is missing (e.g. opened at a path that
    /// does not exist), or `None` when the backend has no device file.
    fn missing_device_error(&self) -> Option<Error> {
        None
    }

    /// Events of other PMUs than the exact events' to mix into the groups of the restart
    /// cases (`restarted_group_counts_every_window`, `reset_between_windows_counts_each_window`),
    /// each of which must open on [`target`](Subject::target). None by default.
    fn companion_events(&self) -> Vec<CompanionEvent> {
        Vec::new()
    }

    /// Whether the subject's target counts per thread, so two threads count independently.
    fn counts_per_thread(&self) -> bool {
        false
    }

    /// Opens `names` as one sampler on [`target`](Subject::target), disabled: the first
    /// samples as `options` say, the others are read with each sample. `None` where the
    /// backend cannot sample (the sampling case then skips); none by default.
    fn open_sampler(
        &self,
        names: &[&str],
        options: &SampleOptions,
    ) -> Option<Result<Box<dyn Sampler>, Error>> {
        let _ = (names, options);
        None
    }
}
