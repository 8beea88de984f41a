//! What each event the exporter was asked for is: resolved once, tried once on one CPU (an
//! event that does not open there is reported with its reason, never counted), with the
//! labels and unit it is exported with: its PMU as sysfs names it, seconds for the software
//! clocks (counted in nanoseconds), joules for an energy alias (its `.scale` and `.unit`),
//! and, for a PMU with a `cpumask` (uncore boxes, energy), the CPUs it counts on.

use crate::text_format::{Family, Format, Kind, Label, Number};
use counterhal::{Chosen, Error, ErrorKind, Group, OpenOptions};
use counterhal_hal::{BackendTarget, CpuList};
use counterhal_hal::{Encoding, ResolvedEvent};
use counterhal_system::{PerfAccess, PmuDevices, System};

/// `perf_event_attr.type` of the software events; their configs 0 and 1 are the clocks.
const PERF_TYPE_SOFTWARE: u32 = 1;
/// `perf_event_attr.type` of raw core events: the core PMU's type in sysfs.
const PERF_TYPE_RAW: u32 = 4;

/// The base unit an event's value is exported in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A count: `counterhal_event_total`.
    Count,
    /// Seconds (the software clocks, counted in nanoseconds): `counterhal_event_seconds_total`.
    Seconds,
    /// Joules (an energy alias): `counterhal_event_joules_total`.
    Joules,
}

/// `--times`: for which events the times enabled and running are exported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimesArg {
    /// For the events the kernel may multiplex (those of the core PMU and the uncore boxes),
    /// not for software events, tracepoints, `msr` and energy (`power`) events, which run
    /// whenever enabled.
    #[default]
    Multiplexed,
    /// For every event.
    Always,
}

impl TimesArg {
    /// Whether `event`'s times are exported.
    pub fn of(self, event: &Exported) -> bool {
        self == TimesArg::Always || event.may_multiplex
    }
}

/// An event that opens here, and how it is exported.
#[derive(Debug)]
pub struct Exported {
    /// The name as given (the `event` label).
    pub name: String,
    /// The PMU it counts on, as sysfs names it (the `pmu` label).
    pub pmu: String,
    /// The unit of its metric.
    pub unit: Unit,
    /// What one count is in that unit (1e-9 for nanoseconds; an alias's `.scale`).
    pub factor: f64,
    /// The CPUs its PMU counts on (its `cpumask`); `None` for every CPU.
    pub cpus: Option<CpuList>,
    /// Whether the kernel may multiplex it (its time running below its time enabled): every
    /// PMU but those of the kernel's software context, `msr` and `power` ([`may_multiplex`]).
    pub may_multiplex: bool,
    /// What the backend opens.
    pub resolved: ResolvedEvent,
    /// The leader of the group it counts in, where another event leads it (an index into the
    /// plan's events): its times are the leader's, exported once for the group. `None` where
    /// it leads a group or counts alone.
    pub leader: Option<usize>,
}

/// An event that was asked for but does not open here, and why.
#[derive(Debug)]
pub struct Refused {
    /// The name as given.
    pub name: String,
    /// The error's kind, as a label value (`permission_denied`, `not_found`, ...).
    pub kind: String,
    /// The error's message, without the event's name (the `event` label and the lines that
    /// say it carry the name once).
    pub message: String,
    /// The backend's hint, for an event refused for lack of privilege.
    pub hint: Option<String>,
}

/// Writes `counterhal_event_open_failed`, 1 for each of `refused` with its error's kind and
/// message, in `format` into `out` (nothing where none was refused).
pub fn write_refused(out: &mut Vec<u8>, format: Format, refused: &[Refused]) {
    if refused.is_empty() {
        return;
    }
    let failed = Family::new(
        "counterhal_event_open_failed",
        Kind::Gauge,
        "1 for each event asked for that does not open here, with the error's kind and message.",
    );
    failed.header(out, format);
    for refused in refused {
        let labels = [
            ("event", Label::Text(&refused.name)),
            ("kind", Label::Text(&refused.kind)),
            ("reason", Label::Text(&refused.message)),
        ];
        failed.sample(out, &labels, Number::Int(1));
    }
}

/// The events asked for: those exported, those refused, and the groups they count in.
#[derive(Debug, Default)]
pub struct Plan {
    /// The events that opened, in the order given.
    pub exported: Vec<Exported>,
    /// The events that did not open, in the order given.
    pub refused: Vec<Refused>,
    /// The events counted as one group on every CPU and in every cgroup (indices into
    /// `exported`, the leader first), as [`group`] finds them.
    pub groups: Vec<Vec<usize>>,
    /// The PMUs whose events count alone though they could be grouped, with why.
    pub ungrouped: Vec<String>,
}

/// Resolves every name and tries each alone on its first CPU. A name in PMU syntax
/// (`power/energy-pkg/`, `uncore_imc/cas_count_read/`) whose PMU this host lacks is refused
/// (not found here), not bad input: one list of events serves a fleet whose hosts differ.
///
/// # Errors
/// [`ErrorKind::InvalidEvent`] (bad input) for a name no database or backend knows;
/// [`ErrorKind::InvalidInput`] for a name given twice.
pub fn plan(system: &System, backend: &Chosen, names: &[String]) -> Result<Plan, Error> {
    let mut plan = Plan::default();
    let devices = system.pmus();
    let online = counterhal::online_cpus(system);
    for (at, name) in names.iter().enumerate() {
        if names[..at].contains(name) {
            return Err(Error::invalid_input(format!(
                "event `{name}` is given twice"
            )));
        }
        if let Some(pmu) = absent_pmu(name, &devices) {
            plan.refused.push(Refused {
                name: name.clone(),
                kind: kind_label(ErrorKind::NotFound),
                message: format!(
                    "no PMU `{pmu}` on this host (in {})",
                    devices.path().display()
                ),
                hint: None,
            });
            continue;
        }
        let resolved = match backend.resolve(name) {
            Ok(resolved) => resolved,
            Err(e) if e.kind() == ErrorKind::InvalidEvent => {
                return Err(e.context(format_args!("-e {name}")));
            }
            Err(e) => {
                plan.refused.push(refused(name, &e));
                continue;
            }
        };
        let (pmu, cpus) = pmu_of(&resolved, &devices);
        let (unit, factor) = unit_of(&resolved);
        let first = cpus.as_ref().unwrap_or(&online).first().unwrap_or(0);
        let tried = counterhal_hal::open_set(
            backend,
            vec![resolved.clone()],
            &BackendTarget::Cpu(first),
            &OpenOptions::default(),
        );
        match tried {
            Ok(_) => plan.exported.push(Exported {
                name: name.clone(),
                may_multiplex: may_multiplex(&pmu),
                pmu,
                unit,
                factor,
                cpus,
                resolved,
                leader: None,
            }),
            Err(e) => plan.refused.push(refused(name, &e)),
        }
    }
    group(backend, &mut plan, online.first().unwrap_or(0));
    Ok(plan)
}

/// The groups among `columns` (indices into `events`), each as positions in `columns`, the
/// leader first: an event that leads others, with those of them in `columns`.
pub fn groups_among(events: &[Exported], columns: &[usize]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (at, &event) in columns.iter().enumerate() {
        let Some(leader) = events[event].leader else {
            continue;
        };
        let Some(leads) = columns.iter().position(|&c| c == leader) else {
            continue;
        };
        match groups.iter_mut().find(|g| g[0] == leads) {
            Some(group) => group.push(at),
            None => groups.push(vec![leads, at]),
        }
    }
    groups
}

/// How long a group tried on one CPU is given to go on the PMU: several of the kernel's
/// turns (`perf_event_mux_interval_ms`, 4 ms unless set), in which a group that can go on
/// at all has gone on.
const GROUP_TRIAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Groups each PMU's events that may be multiplexed and count on every CPU alone (one term),
/// where it has two or more, in the order given (the first leads): a group is scheduled onto
/// the PMU as one, so its events share their times enabled and running, which are exported
/// once for it (a pod's series: its counts and two times, not two times an event). Each
/// group is tried on `cpu` first, as perf's weak groups (`{...}:W`) are: where it does not
/// open (more events than the PMU has counters: x86's `validate_group` refuses it) or opens
/// but is not on the PMU after [`GROUP_TRIAL`] (counters taken by pinned events, such as the
/// NMI watchdog's cycles), its events count alone, each time-shared with its own times, and
/// [`Plan::ungrouped`] says why.
fn group(backend: &Chosen, plan: &mut Plan, cpu: u32) {
    let groupable =
        |e: &Exported| e.may_multiplex && e.cpus.is_none() && e.resolved.terms.len() == 1;
    let mut pmus: Vec<&str> = Vec::new();
    for event in plan.exported.iter().filter(|e| groupable(e)) {
        if !pmus.contains(&event.pmu.as_str()) {
            pmus.push(&event.pmu);
        }
    }
    let mut groups = Vec::new();
    let mut ungrouped = Vec::new();
    for pmu in pmus {
        let members: Vec<usize> = (0..plan.exported.len())
            .filter(|&i| groupable(&plan.exported[i]) && plan.exported[i].pmu == pmu)
            .collect();
        if members.len() < 2 {
            continue;
        }
        let events = members
            .iter()
            .map(|&i| plan.exported[i].resolved.clone())
            .collect();
        let target = BackendTarget::Cpu(cpu);
        let tried = counterhal_hal::open_set(backend, events, &target, &OpenOptions::grouped())
            .and_then(|mut set| {
                set.enable()?;
                std::thread::sleep(GROUP_TRIAL);
                let mut readings = vec![counterhal::Reading::default(); members.len()];
                set.read(&mut readings)?;
                Ok(readings[0])
            });
        let names = || {
            let names: Vec<&str> = members
                .iter()
                .map(|&i| plan.exported[i].name.as_str())
                .collect();
            names.join(",")
        };
        match tried {
            Ok(reading) if reading.time_running > 0 => groups.push(members),
            Ok(reading) => ungrouped.push(format!(
                "{{{}}} on {pmu}: the group was not on the PMU in its first {} ms on CPU {cpu} \
                 (enabled {} ns, running 0: its counters are taken, the NMI watchdog's cycles \
                 among them where kernel.nmi_watchdog is 1); its events count alone",
                names(),
                GROUP_TRIAL.as_millis(),
                reading.time_enabled,
            )),
            Err(e) => ungrouped.push(format!(
                "{{{}}} on {pmu}: the group does not open on CPU {cpu} ({e}); its events count \
                 alone",
                names()
            )),
        }
    }
    for members in &groups {
        for &member in &members[1..] {
            plan.exported[member].leader = Some(members[0]);
        }
    }
    plan.groups = groups;
    plan.ungrouped = ungrouped;
}

/// The PMU of `name` in PMU syntax (`pmu/terms/`), where `devices` has neither it nor any of
/// its numbered boxes (`uncore_imc` matches `uncore_imc_0`, as perf matches it).
fn absent_pmu<'a>(name: &'a str, devices: &PmuDevices) -> Option<&'a str> {
    let (pmu, rest) = name.split_once('/')?;
    let named = !pmu.is_empty()
        && rest.contains('/')
        && pmu
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    let present = devices.names();
    if !named || present.iter().any(|dir| dir == pmu) {
        return None;
    }
    let boxes = present.iter().any(|dir| {
        dir.strip_prefix(pmu)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|n| !n.is_empty())
    });
    (!boxes).then_some(pmu)
}

/// `name`'s refusal for `error`. The backend's message begins with the name where it opened
/// it by name (`instructions: perf_event_open: ...`); that prefix is left out.
pub(crate) fn refused(name: &str, error: &Error) -> Refused {
    let message = error.message();
    let message = message
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(message);
    let for_privilege = error.kind() == ErrorKind::PermissionDenied;
    Refused {
        name: name.to_string(),
        kind: kind_label(error.kind()),
        message: message.to_string(),
        hint: for_privilege.then(|| error.hint().unwrap_or(PRIVILEGE).to_string()),
    }
}

/// What counting every CPU takes, where the backend gave no hint of its own.
const PRIVILEGE: &str = "counting every CPU takes CAP_PERFMON (or root) or \
kernel.perf_event_paranoid 0 or lower";

/// The hint for an exporter none of whose events opened: the first refusal's for lack of
/// privilege, where this process lacks what counting every CPU takes on `system`
/// ([`PerfAccess::Cpu`]: CAP_PERFMON, CAP_SYS_ADMIN, or `kernel.perf_event_paranoid` 0 or
/// lower, the kernel's `perf_allow_cpu`); none where no event was refused for privilege, or
/// where this process holds it (root refused by a security module, say, is given no remedy
/// it already has).
pub fn privilege_hint<'a>(system: &System, refused: &'a [Refused]) -> Option<&'a str> {
    let hint = refused.iter().find_map(|r| r.hint.as_deref())?;
    let may = system.perf_permissions().allows(PerfAccess::Cpu);
    (may != Some(true)).then_some(hint)
}

/// An error kind as a label value: its name in snake case (`PermissionDenied` is
/// `permission_denied`).
pub fn kind_label(kind: ErrorKind) -> String {
    let mut label = String::new();
    for (at, c) in format!("{kind:?}").chars().enumerate() {
        if c.is_ascii_uppercase() {
            if at > 0 {
                label.push('_');
            }
            label.push(c.to_ascii_lowercase());
        } else {
            label.push(c);
        }
    }
    label
}

/// The PMU an event counts on, named as sysfs names it (`software`, `cpu`, `power`), and the
/// CPUs of its `cpumask` where it has one; the backend's name for an event that is no perf
/// attr.
fn pmu_of(event: &ResolvedEvent, devices: &PmuDevices) -> (String, Option<CpuList>) {
    let Some(Encoding::Perf(attr)) = event.terms.first().map(|t| &t.request.encoding) else {
        return ("cpu".to_string(), None);
    };
    let name = attr.pmu.clone().or_else(|| {
        // Generic hardware and cache events count on the core PMU, whose type is raw's
        // (a hybrid core's type is in the config's high half).
        let type_ = match attr.type_ {
            0 | 3 if attr.config >> 32 != 0 => (attr.config >> 32) as u32,
            0 | 3 => PERF_TYPE_RAW,
            other => other,
        };
        pmu_named_by_type(devices, type_)
    });
    let name = name.unwrap_or_else(|| {
        match attr.type_ {
            PERF_TYPE_SOFTWARE => "software",
            2 => "tracepoint",
            5 => "breakpoint",
            _ => "cpu",
        }
        .to_string()
    });
    let device = devices.device(&name).ok().flatten();
    let cpus = device
        .and_then(|device| device.cpumask().ok().flatten())
        .map(CpuList::from_cpus)
        .filter(|cpus| !cpus.is_empty());
    (name, cpus)
}

/// The PMUs the kernel schedules in its software context (`.task_ctx_nr = perf_sw_context`
/// in kernel/events/core.c: the software events and their clocks, tracepoints, kprobes and
/// uprobes), as [`pmu_of`] names them.
const SOFTWARE_CONTEXT: [&str; 4] = ["software", "tracepoint", "kprobe", "uprobe"];

/// The PMUs of the kernel's x86 drivers whose `add` never fails, as sysfs names them: `msr`
/// (arch/x86/events/msr.c, in the software context) and `power`, the energy counters
/// (arch/x86/events/rapl.c, and AMD's arch/x86/events/amd/power.c, each with a context of
/// its own: `perf_invalid_context`).
const ALWAYS_ADDED: [&str; 2] = ["msr", "power"];

/// Whether an event of `pmu` may be multiplexed. The kernel multiplexes an event only where
/// its PMU refused it (`pmu->add` failed in `merge_sched_in`, which marks the PMU's context
/// for rotation) or where an earlier group of its PMU was refused (`can_add_hw`, one per
/// PMU since Linux 6.2). An event of the software context is marked `PERF_EV_CAP_SOFTWARE`
/// at its opening (`perf_event_alloc`), and a group of such events always goes on
/// (`group_can_go_on`); the `msr` and energy PMUs read a free-running register, and their
/// `add` returns 0 whatever is counting. So each of the exporter's events of these PMUs (a
/// group of its own) runs whenever it is enabled: its time running is its time enabled. The
/// core PMU's and the uncore boxes' `add` fail when their counters are taken
/// (`x86_pmu_add`, `uncore_pmu_event_add`): those may be multiplexed.
pub fn may_multiplex(pmu: &str) -> bool {
    !SOFTWARE_CONTEXT.contains(&pmu) && !ALWAYS_ADDED.contains(&pmu)
}

/// The PMU of `pmus` whose `type` file holds `type_`.
fn pmu_named_by_type(pmus: &PmuDevices, type_: u32) -> Option<String> {
    pmus.names().into_iter().find(|name| {
        let device = pmus.device(name).ok().flatten();
        device.is_some_and(|device| device.type_() == type_)
    })
}

/// The unit an event is exported in and what one count is in it: seconds for the software
/// clocks, joules for an event whose PMU gives its count in Joules (a `pmu/alias/` with a
/// sysfs `.unit`: [`ResolvedEvent::unit`], times its `.scale`).
fn unit_of(event: &ResolvedEvent) -> (Unit, f64) {
    if let [term] = event.terms.as_slice()
        && let Encoding::Perf(attr) = &term.request.encoding
        && attr.type_ == PERF_TYPE_SOFTWARE
        && attr.config <= 1
    {
        return (Unit::Seconds, 1e-9);
    }
    match &event.unit {
        Some(unit) if unit.name == "Joules" => (Unit::Joules, unit.scale),
        _ => (Unit::Count, 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn error_kinds_are_snake_case_labels() {
        assert_eq!(kind_label(ErrorKind::PermissionDenied), "permission_denied");
        assert_eq!(kind_label(ErrorKind::NotFound), "not_found");
    }

    /// A PMU is present by its name or its numbered boxes (the Sapphire Rapids tree has
    /// `uncore_imc_0`... and `power`, no `amd_df`); a name not in PMU syntax is left to the
    /// resolver.
    #[test]
    fn absent_pmus_are_found_by_name_and_boxes() {
        let devices = PmuDevices::at(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../backend-linux/tests/data/machines/spr-2s/bus/event_source/devices"),
        );
        assert_eq!(absent_pmu("power/energy-pkg/", &devices), None);
        assert_eq!(absent_pmu("uncore_imc/cas_count_read/", &devices), None);
        assert_eq!(absent_pmu("amd_df/event=0x7/", &devices), Some("amd_df"));
        assert_eq!(
            absent_pmu("uncore_im/event=1/", &devices),
            Some("uncore_im")
        );
        assert_eq!(absent_pmu("task-clock", &devices), None);
        assert_eq!(absent_pmu("UNC_M_CAS_COUNT.RD", &devices), None);
        assert_eq!(absent_pmu("a/b", &devices), None);
    }

    /// Oracle: the Sapphire Rapids sysfs tree of backend-linux's tests (the power PMU's
    /// energy-pkg alias: Joules, 2^-32 J per count, CPUs 0 and 56).
    #[cfg(target_os = "linux")]
    #[test]
    fn energy_aliases_are_joules_on_their_pmus_cpus() {
        let devices = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../backend-linux/tests/data/machines/spr-2s/bus/event_source/devices");
        let root = devices.ancestors().nth(3).unwrap();
        let backend = counterhal::Setup::new()
            .cpu_model("spr")
            .sysfs(root)
            .open()
            .unwrap();
        let event = backend.resolve("power/energy-pkg/").unwrap();
        let (unit, factor) = unit_of(&event);
        assert_eq!((unit, factor), (Unit::Joules, 2f64.powi(-32)));
        let (pmu, cpus) = pmu_of(&event, &PmuDevices::at(&devices));
        assert_eq!(pmu, "power");
        assert_eq!(cpus.unwrap().to_string(), "0,56");
        let clock = ResolvedEvent::single(counterhal_hal::EventRequest::new(
            "task-clock",
            Encoding::Perf(counterhal_hal::PerfAttr::new(PERF_TYPE_SOFTWARE, 1)),
        ));
        assert_eq!(unit_of(&clock), (Unit::Seconds, 1e-9));
        assert_eq!(pmu_of(&clock, &PmuDevices::at(&devices)).0, "software");
    }

    /// The events of the kernel's software context (the software events with their clocks,
    /// tracepoints) never multiplex; those of the core PMU and an uncore box may.
    ///
    /// Oracle: Linux 7.2's kernel/events/core.c (`perf_swevent`, `perf_cpu_clock`,
    /// `perf_task_clock`, `perf_tracepoint`, `perf_kprobe` and `perf_uprobe` are the PMUs of
    /// `.task_ctx_nr = perf_sw_context`; `group_can_go_on` puts a group of their events on
    /// always), and the Sapphire Rapids sysfs tree of backend-linux's tests for the PMUs'
    /// names.
    #[cfg(target_os = "linux")]
    #[test]
    fn software_events_and_tracepoints_never_multiplex() {
        multiplex_on_spr(&[
            ("cycles", true),
            ("INST_RETIRED.ANY_P", true),
            ("uncore_imc_0/cas_count_read/", true),
            ("task-clock", false),
            ("cpu-clock", false),
            ("page-faults", false),
            ("context-switches", false),
        ]);
        for pmu in ["tracepoint", "kprobe", "uprobe"] {
            assert!(!may_multiplex(pmu), "{pmu}");
        }
    }

    /// Energy (`power`) and `msr` events never multiplex, so their times are not exported
    /// by default; an uncore box's may, as the core PMU's.
    ///
    /// Oracle: Linux 7.2's x86 drivers. arch/x86/events/rapl.c registers `power` with
    /// `.task_ctx_nr = perf_invalid_context` (a context of its own, before Linux 6.2 too,
    /// `find_pmu_context`) and `rapl_pmu_event_add` returns 0 always (it reads a free-running
    /// MSR), as AMD's `pmu_event_add` (arch/x86/events/amd/power.c) does; arch/x86/events/
    /// msr.c registers `msr` with `.task_ctx_nr = perf_sw_context` (`PERF_EV_CAP_SOFTWARE`:
    /// `group_can_go_on` puts it on always) and `msr_event_add` returns 0 always. Only an
    /// `add` that fails leaves an event inactive for the multiplexer (`merge_sched_in`,
    /// kernel/events/core.c), and `uncore_pmu_event_add` (arch/x86/events/intel/uncore.c)
    /// fails past the box's counters (`uncore_collect_events`: `-EINVAL`). The PMUs' names
    /// are the Sapphire Rapids sysfs tree's of backend-linux's tests.
    #[cfg(target_os = "linux")]
    #[test]
    fn energy_and_msr_events_never_multiplex_and_uncore_may() {
        multiplex_on_spr(&[
            ("power/energy-pkg/", false),
            ("power/energy-ram/", false),
            ("msr/tsc/", false),
            ("msr/aperf/", false),
            ("uncore_imc_0/cas_count_read/", true),
            ("uncore_cha_0/event=0x1/", true),
        ]);
    }

    /// Each event of `cases`, resolved on the Sapphire Rapids tree of backend-linux's tests,
    /// may be multiplexed on its PMU as its case says.
    #[cfg(target_os = "linux")]
    fn multiplex_on_spr(cases: &[(&str, bool)]) {
        let devices = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../backend-linux/tests/data/machines/spr-2s/bus/event_source/devices");
        let root = devices.ancestors().nth(3).unwrap();
        let backend = counterhal::Setup::new()
            .cpu_model("spr")
            .sysfs(root)
            .open()
            .unwrap();
        for &(name, multiplexed) in cases {
            let event = backend.resolve(name).unwrap();
            let (pmu, _) = pmu_of(&event, &PmuDevices::at(&devices));
            assert_eq!(may_multiplex(&pmu), multiplexed, "{name} on {pmu}");
        }
    }
}
