//! The counts' families, as the counting collector writes them: each event's count (in its
//! unit: `counterhal_event_total`, `_seconds_total`, `_joules_total`) and its group's times
//! enabled and running, per place, labelled by event, topology and cgroup.
//!
//! The families follow Prometheus' naming conventions: base units (seconds, joules) as a
//! suffix, `_total` on every counter, dimensions as labels. A count, its time enabled and its
//! time running are three counters, so that PromQL scales a multiplexed count
//! (`rate(value) * rate(enabled) / rate(running)`) and sees how long it ran; the scaled
//! estimate itself is no counter (it can go down). The two times are written only for events
//! the kernel may multiplex, unless `--times always` ([`crate::events::TimesArg`]): an event
//! that always runs while enabled has a time running equal to its time enabled, which scale
//! nothing.

use counterhal::Reading;

use super::{Aggregate, Exporter, Place};
use crate::events::{Exported, TimesArg, Unit};
use crate::text_format::{Family, Format, Kind, Label, Number, labels_into, seconds};

const EVENT: Family = Family::new(
    "counterhal_event",
    Kind::Counter,
    "Events counted (the raw count: scale by enabled / running time).",
);
const EVENT_SECONDS: Family = Family::seconds(
    "counterhal_event_seconds",
    Kind::Counter,
    "Clock events counted, in seconds (task-clock, cpu-clock).",
);
const EVENT_JOULES: Family = Family {
    name: "counterhal_event_joules",
    kind: Kind::Counter,
    unit: Some("joules"),
    help: "Energy events counted, in joules.",
};
const ENABLED: Family = Family::seconds(
    "counterhal_event_enabled_seconds",
    Kind::Counter,
    "Time the event's counter was enabled.",
);
const RUNNING: Family = Family::seconds(
    "counterhal_event_running_seconds",
    Kind::Counter,
    "Time the event's counter was on the PMU (below enabled: multiplexed).",
);

impl Exporter {
    /// Writes the counts of every place read, in `format`, into `out`: each event's family,
    /// then the groups' times.
    pub fn write_counts(&self, out: &mut Vec<u8>, format: Format) {
        let exporter = self;
        let events = &exporter.events;
        let times = exporter.times;
        let mut labels = Written::new(events, times);
        for (family, unit) in [
            (&EVENT, Unit::Count),
            (&EVENT_SECONDS, Unit::Seconds),
            (&EVENT_JOULES, Unit::Joules),
        ] {
            series(
                out,
                format,
                exporter,
                family,
                (&mut labels, Of::Event),
                |event, reading| {
                    (event.unit == unit).then(|| match unit {
                        Unit::Count => Number::Int(reading.value),
                        Unit::Seconds => seconds(reading.value),
                        Unit::Joules => Number::Float(reading.value as f64 * event.factor),
                    })
                },
            );
        }
        // A group's times once, the leader's (its members' are the same), labelled by the group.
        let leads = |event: &Exported| times.of(event) && event.leader.is_none();
        let enabled = |r: &Reading| r.time_enabled;
        let running = |r: &Reading| r.time_running;
        for (family, time) in [
            (&ENABLED, &enabled as &dyn Fn(&Reading) -> u64),
            (&RUNNING, &running),
        ] {
            series(
                out,
                format,
                exporter,
                family,
                (&mut labels, Of::Group),
                |event, r| leads(event).then(|| seconds(time(r))),
            );
        }
        counted_late(out, format, exporter);
        departed(out, format, exporter);
    }
}

/// When each departed cgroup kept as data was removed: one gauge a cgroup, with its labels,
/// so that a rule knows a job finished from its first scrape after the end, not when serve
/// lets its last counts go (`--departed-for` later).
fn departed(out: &mut Vec<u8>, format: Format, exporter: &Exporter) {
    const DEPARTED: Family = Family::new(
        "counterhal_cgroup_departed_timestamp_seconds",
        Kind::Gauge,
        "When the cgroup was removed (seconds since the epoch): its series hold its last \
         counts, kept for --departed-for after a scrape first reads them.",
    );
    let mut headed = false;
    let mut last: Option<&str> = None;
    for place in &exporter.places {
        let (Some(departure), Some(cgroup)) = (&place.departed, place.at.cgroup.as_deref()) else {
            continue;
        };
        // A cgroup's places (one a CPU with --per-cpu) follow each other: its first says.
        if last == Some(cgroup) {
            continue;
        }
        last = Some(cgroup);
        if !headed {
            DEPARTED.header(out, format);
            headed = true;
        }
        DEPARTED.sample(out, &cgroup_labels(place), Number::Float(departure.at));
    }
}

/// Whether a task may have run in each cgroup counted in the perf-event mode before its
/// counters opened: one gauge a cgroup, with its labels, where the mode and the cgroup say
/// (cgroup v2).
fn counted_late(out: &mut Vec<u8>, format: Format, exporter: &Exporter) {
    const LATE: Family = Family::new(
        "counterhal_cgroup_counted_late",
        Kind::Gauge,
        "1 where a task may have run in the cgroup before its counters opened (perf-event \
         mode): its counts may miss what it did before its _created; 0 where it stayed empty \
         and unrun until all were open.",
    );
    // Only the perf-event mode says (the BPF mode settles no moves: `None`).
    if exporter
        .cgroups
        .as_ref()
        .is_none_or(|cgroups| cgroups.moves_settled().is_some())
    {
        return;
    }
    let mut headed = false;
    let mut last: Option<&str> = None;
    for place in &exporter.places {
        let (Some(late), Some(cgroup)) = (place.late, place.at.cgroup.as_deref()) else {
            continue;
        };
        // A cgroup's places (one a CPU) follow each other: its first says for all.
        if last == Some(cgroup) {
            continue;
        }
        last = Some(cgroup);
        if !headed {
            LATE.header(out, format);
            headed = true;
        }
        LATE.sample(out, &cgroup_labels(place), Number::Int(u64::from(late)));
    }
}

/// One family's samples over every place read: `value` says what an event's reading is in
/// the family (`None`: the event is not in it). The header is written before the first.
///
/// A cgroup's places are one series per event, its readings (value, enabled, running) summed
/// over the CPUs, as `perf stat -a -G` aggregates them; with `--per-cpu`, and system-wide,
/// each CPU's is a series of its own (system-wide, summed per socket or die instead with
/// `--per-socket` or `--per-die`). A cgroup, socket or die is left out of a scrape where one
/// of its CPUs' reads failed (a sum without that CPU would go down: a counter reset to
/// PromQL). A series is written for an event counting at its place, whether or not it ran
/// (its times say so, as perf's `<not counted>` does); an event that did not open for a
/// cgroup on one of its CPUs counts nothing there, and that cgroup has no series of it (with
/// `--per-cpu`, none on that CPU), rather than a 0 that reads as counted.
fn series(
    out: &mut Vec<u8>,
    format: Format,
    exporter: &Exporter,
    family: &Family,
    (written, of): (&mut Written, Of),
    value: impl Fn(&Exported, &Reading) -> Option<Number>,
) {
    // A family no event is in (no times asked for, no energy event) is not looked for.
    let none = Reading::default();
    if !exporter.events.iter().any(|e| value(e, &none).is_some()) {
        return;
    }
    let mut headed = false;
    let Written {
        events,
        groups,
        cgroups,
    } = written;
    let events = match of {
        Of::Event => &*events,
        Of::Group => &*groups,
    };
    // A sample: the event's labels, those of `topology`, the cgroup's and the value, and in
    // OpenMetrics its `_created`: when the earliest of its places began counting.
    let mut sample = |out: &mut Vec<u8>,
                      event: &[u8],
                      topology: &[(&str, Label<'_>)],
                      cgroup: &[u8],
                      (number, created): (Number, f64)| {
        if !headed {
            family.header(out, format);
            headed = true;
        }
        let start = family.begin(out);
        out.extend_from_slice(event);
        labels_into(out, topology);
        out.extend_from_slice(cgroup);
        let end = family.end(out, start, number);
        family.created(out, format, start..end, created);
    };
    // The text format has no `_created`: not looked for there.
    let earliest = |places: &mut dyn Iterator<Item = &Place>| match format {
        Format::OpenMetrics => places.map(|p| p.created).fold(f64::INFINITY, f64::min),
        Format::Text => 0.0,
    };
    let places = &exporter.places;
    let mut at = 0;
    if exporter.aggregate != Aggregate::Cpu {
        at = places.iter().take_while(|p| p.at.cgroup.is_none()).count();
        let cpus = &places[..at];
        let key = |p: &Place| exporter.aggregate.key(&p.topology);
        for (first, place) in cpus.iter().enumerate() {
            let group = key(place);
            if cpus[..first].iter().any(|p| key(p) == group) {
                continue;
            }
            let members = || cpus[first..].iter().filter(|p| key(p) == group);
            if members().any(|p| !p.read) {
                continue;
            }
            for (column, event) in exporter.events.iter().enumerate() {
                // An event counts on the CPUs of its PMU's cpumask only (uncore: one a socket).
                let mut readings = members().filter_map(|p| {
                    let index = p.columns.iter().position(|&c| c == column)?;
                    p.readings.get(index).copied()
                });
                let Some(first) = readings.next() else {
                    continue;
                };
                let Some(number) = value(event, &readings.fold(first, add)) else {
                    continue;
                };
                let by = Some(exporter.aggregate);
                let topology = topology_labels(place, by);
                let created = earliest(&mut members());
                sample(out, events.get(column), &topology, &[], (number, created));
            }
        }
    }
    // The runs of places are the same in every family: the `n`th's labels are written once.
    let mut runs = 0;
    while at < places.len() {
        let place = &places[at];
        let summed = place.at.cgroup.is_some() && !exporter.per_cpu;
        let run = match summed {
            true => places[at..]
                .iter()
                .take_while(|p| p.at.cgroup == place.at.cgroup)
                .count(),
            false => 1,
        };
        let run = &places[at..at + run];
        at += run.len();
        runs += 1;
        if cgroups.len() < runs {
            cgroups.push(&cgroup_labels(place));
        }
        if run.iter().any(|p| !p.read) {
            continue;
        }
        let created = earliest(&mut run.iter());
        for (index, &column) in place.columns.iter().enumerate() {
            // An event that did not open for a cgroup on a CPU is not counted there: no series
            // (a sum without that CPU would read as the whole).
            if run.iter().any(|p| !p.counts(index)) {
                continue;
            }
            let event = &exporter.events[column];
            let reading = run.iter().fold(Reading::default(), |sum, p| {
                // A cgroup counts the same events on every CPU: the same columns.
                add(sum, p.readings.get(index).copied().unwrap_or_default())
            });
            let Some(number) = value(event, &reading) else {
                continue;
            };
            let by = (!summed).then_some(Aggregate::Cpu);
            let topology = match by {
                Some(by) => &topology_labels(place, Some(by))[..],
                None => &[],
            };
            sample(
                out,
                events.get(column),
                topology,
                cgroups.get(runs - 1),
                (number, created),
            );
        }
    }
}

/// `sum + one`, value, enabled and running each (saturating).
fn add(sum: Reading, one: Reading) -> Reading {
    Reading::new(
        sum.value.saturating_add(one.value),
        sum.time_enabled.saturating_add(one.time_enabled),
        sum.time_running.saturating_add(one.time_running),
    )
}

/// Whose labels a family's samples carry: each event's, or (the times) each group's.
#[derive(Clone, Copy)]
enum Of {
    Event,
    Group,
}

/// The labels of the event families' samples, written once a scrape and copied into each
/// sample, in this order: the event's (`event`, `pmu`, and `group` where its times are
/// exported) or, for the times, its group's (`group`, `pmu`), the place's topology
/// ([`topology_labels`], written at each sample), the cgroup's ([`cgroup_labels`]).
///
/// The `group` label is the name of the event leading the group an event counts in, its own
/// where it counts alone: a count and the times that scale it share it, so that PromQL joins
/// them `ignoring(event)`.
struct Written {
    /// Each event's labels, by its column.
    events: Spans,
    /// Each event's group's labels, by its column.
    groups: Spans,
    /// Each cgroup's labels, in the order of the places (empty for a CPU's).
    cgroups: Spans,
}

impl Written {
    /// The labels of `events`, `times` saying whose times are exported; the cgroups' are
    /// written as the first family meets them.
    fn new(events: &[Exported], times: TimesArg) -> Written {
        // One allocation each (`,event="",pmu="",group=""` is 25 bytes), whatever the events.
        let room: usize = events
            .iter()
            .map(|e| 2 * e.name.len() + e.pmu.len() + 25)
            .sum();
        let spans = || Spans {
            text: Vec::with_capacity(room),
            ends: Vec::with_capacity(events.len()),
        };
        let mut written = Written {
            events: spans(),
            groups: spans(),
            cgroups: Spans::default(),
        };
        for (column, event) in events.iter().enumerate() {
            let leader = &events[event.leader.unwrap_or(column)].name;
            let group = if times.of(event) { leader.as_str() } else { "" };
            let labels = [
                ("event", Label::Text(&event.name)),
                ("pmu", Label::Text(&event.pmu)),
                ("group", Label::Text(group)),
            ];
            written.events.push(&labels);
            let labels = [
                ("group", Label::Text(group)),
                ("pmu", Label::Text(&event.pmu)),
            ];
            written.groups.push(&labels);
        }
        written
    }
}

/// Sets of labels as [`labels_into`] writes them, one after the other, each found by its
/// number.
#[derive(Default)]
struct Spans {
    text: Vec<u8>,
    /// Where each set ends in `text`.
    ends: Vec<usize>,
}

impl Spans {
    /// Writes `labels` as the next set.
    fn push(&mut self, labels: &[(&str, Label<'_>)]) {
        labels_into(&mut self.text, labels);
        self.ends.push(self.text.len());
    }

    /// The `n`th set.
    fn get(&self, n: usize) -> &[u8] {
        let from = n.checked_sub(1).map_or(0, |before| self.ends[before]);
        &self.text[from..self.ends[n]]
    }

    /// How many sets there are.
    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// A place's topology as `by` has it: `cpu`, `socket` and `die` per CPU; `socket` and `die`
/// per die; `socket` per socket; none where summed over every CPU (an empty one is left out
/// when written).
fn topology_labels(place: &Place, by: Option<Aggregate>) -> [(&'static str, Label<'static>); 3] {
    let cpu = (by == Some(Aggregate::Cpu)).then_some(place.at.cpu);
    let socket = by.and(place.topology.socket);
    let die = by
        .filter(|&b| b != Aggregate::Socket)
        .and(place.topology.die);
    [
        (
            "cpu",
            cpu.map_or(Label::Text(""), |cpu| Label::Int(u64::from(cpu))),
        ),
        ("socket", per_cpu(socket)),
        ("die", per_cpu(die)),
    ]
}

/// Where a place is a cgroup's: `cgroup`, its pod's `pod_uid`, `container_id` and
/// `qos_class` with its `namespace`, `pod` and `container` names where read, and its Slurm
/// job's `slurm_job_id` or `slurm_sluid`, `slurm_step` and `slurm_task` (an empty one is left
/// out when written).
pub(super) fn cgroup_labels(place: &Place) -> [(&'static str, Label<'_>); 11] {
    let pod = place.pod.as_ref();
    let job = place.job.as_ref();
    [
        (
            "cgroup",
            Label::Text(place.at.cgroup.as_deref().unwrap_or("")),
        ),
        ("pod_uid", Label::Text(pod.map_or("", |p| &p.uid))),
        (
            "container_id",
            Label::Text(pod.map_or("", |p| &p.container_id)),
        ),
        ("qos_class", Label::Text(pod.map_or("", |p| p.qos_class))),
        ("namespace", Label::Text(pod.map_or("", |p| &p.namespace))),
        ("pod", Label::Text(pod.map_or("", |p| &p.name))),
        ("container", Label::Text(pod.map_or("", |p| &p.container))),
        ("slurm_job_id", Label::Text(job.map_or("", |j| &j.job_id))),
        ("slurm_sluid", Label::Text(job.map_or("", |j| &j.sluid))),
        ("slurm_step", Label::Text(job.map_or("", |j| &j.step))),
        ("slurm_task", Label::Text(job.map_or("", |j| &j.task))),
    ]
}

/// A number label where there is one (a CPU's socket or die), else none.
fn per_cpu<'a>(number: Option<u32>) -> Label<'a> {
    number.map_or(Label::Text(""), |n| Label::Int(u64::from(n)))
}
