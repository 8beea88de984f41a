//! The scrape as Prometheus reads it: the text format 0.0.4 or OpenMetrics 1.0, chosen by the
//! scraper's `Accept` header, written straight from the readings into the caller's buffer
//! (formatting numbers allocates nothing; the buffer is reused).
//!
//! The families follow Prometheus' naming conventions: base units (seconds, joules) as a
//! suffix, `_total` on every counter, dimensions as labels. A count, its time enabled and its
//! time running are three counters, so that PromQL scales a multiplexed count
//! (`rate(value) * rate(enabled) / rate(running)`) and sees how long it ran; the scaled
//! estimate itself is no counter (it can go down). The two times are written only for events
//! the kernel may multiplex, unless `--times always` ([`super::events::TimesArg`]): an event
//! that always runs while enabled has a time running equal to its time enabled, which scale
//! nothing.

use std::time::Instant;

use counterhal::Reading;

use super::counting::{Aggregate, Exporter, Place};
use super::events::{Exported, TimesArg, Unit};
use super::health::Health;
use super::per_cgroup::Cgroups;
use super::process::Process;
use super::text_format::{Family, Format, Kind, Label, Number, labels_into, seconds};

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

/// Writes the scrape: the counts of every place read, then the exporter's health (the
/// scrape's duration measured from `start`), in `format`, into `out` (cleared first).
pub fn write(
    out: &mut Vec<u8>,
    format: Format,
    exporter: &Exporter,
    health: &Health,
    start: Instant,
) {
    out.clear();
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
    if !events.is_empty() {
        write_health(out, format, exporter, health);
    }
    write_process(out, format, &Process::now(&health.process));
    let duration = Family::seconds(
        "counterhal_scrape_duration_seconds",
        Kind::Gauge,
        "Time this scrape took to find, read and write the counters.",
    );
    duration.header(out, format);
    duration.sample(out, &[], Number::Float(start.elapsed().as_secs_f64()));
    if format == Format::OpenMetrics {
        out.extend_from_slice(b"# EOF\n");
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
/// PromQL).
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
    // A sample: the event's labels, those of `topology`, the cgroup's and the value.
    let mut sample =
        |out: &mut Vec<u8>, event: &[u8], topology: &[(&str, Label<'_>)], cgroup: &[u8], number| {
            if !headed {
                family.header(out, format);
                headed = true;
            }
            let start = family.begin(out);
            out.extend_from_slice(event);
            labels_into(out, topology);
            out.extend_from_slice(cgroup);
            family.end(out, start, number);
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
                sample(out, events.get(column), &topology, &[], number);
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
        for (index, &column) in place.columns.iter().enumerate() {
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
                number,
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
fn cgroup_labels(place: &Place) -> [(&'static str, Label<'_>); 11] {
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

/// The exporter's health: failures, events that did not open and why, cgroups, requests,
/// connections closed for the bounds, and the build.
fn write_health(out: &mut Vec<u8>, format: Format, exporter: &Exporter, health: &Health) {
    let counter = |out: &mut Vec<u8>, family: Family, value: u64| {
        family.header(out, format);
        family.sample(out, &[], Number::Int(value));
    };
    counter(
        out,
        Family::new(
            "counterhal_read_errors",
            Kind::Counter,
            "Reads of a CPU's or cgroup's counters that failed.",
        ),
        health.read_errors(),
    );
    counter(
        out,
        Family::new(
            "counterhal_open_errors",
            Kind::Counter,
            "Openings of a CPU's or cgroup's counters that failed (tried again each scrape).",
        ),
        health.open_errors(),
    );
    if !exporter.refused.is_empty() {
        let failed = Family::new(
            "counterhal_event_open_failed",
            Kind::Gauge,
            "1 for each event asked for that does not open here, with the error's kind and message.",
        );
        failed.header(out, format);
        for refused in &exporter.refused {
            let labels = [
                ("event", Label::Text(&refused.name)),
                ("kind", Label::Text(&refused.kind)),
                ("reason", Label::Text(&refused.message)),
            ];
            failed.sample(out, &labels, Number::Int(1));
        }
    }
    let (matched, followed) = health.cgroups_now();
    let gauge = |out: &mut Vec<u8>, family: Family, value: u64| {
        family.header(out, format);
        family.sample(out, &[], Number::Int(value));
    };
    gauge(
        out,
        Family::new(
            "counterhal_cgroups_matched",
            Kind::Gauge,
            "Cgroups that --cgroups matched at the last scrape.",
        ),
        matched,
    );
    gauge(
        out,
        Family::new(
            "counterhal_cgroups_followed",
            Kind::Gauge,
            "Cgroups counted (at most --max-cgroups).",
        ),
        followed,
    );
    gauge(
        out,
        Family::new(
            "counterhal_places_unopened",
            Kind::Gauge,
            "Places (a CPU, or a cgroup on a CPU) not counted for lack of file descriptors \
             (RLIMIT_NOFILE; tried again each scrape).",
        ),
        health.places_unopened(),
    );
    counter(
        out,
        Family::new(
            "counterhal_cgroups_dropped",
            Kind::Counter,
            "Cgroups matched but left out for --max-cgroups, or refused by the counter for \
             want of room (each counted once while left out).",
        ),
        health.cgroups_dropped(),
    );
    counter(
        out,
        Family::new(
            "counterhal_cgroups_departed_evicted",
            Kind::Counter,
            "Removed cgroups whose last counts were let go unread: more were kept than \
             --max-cgroups between two scrapes.",
        ),
        health.departed_evicted_total(),
    );
    if let Some(cgroups) = &exporter.cgroups {
        write_cgroup_mode(out, format, cgroups, health);
    }
    let requests = Family::new(
        "counterhal_http_requests",
        Kind::Counter,
        "HTTP requests answered, by status code.",
    );
    requests.header(out, format);
    for (status, count) in health.requests() {
        requests.sample(
            out,
            &[("code", Label::Int(u64::from(status)))],
            Number::Int(count),
        );
    }
    let closed = Family::new(
        "counterhal_http_connections_closed",
        Kind::Counter,
        "Connections closed unanswered to keep the bounds, by reason.",
    );
    closed.header(out, format);
    for (why, count) in health.closed_counts() {
        closed.sample(
            out,
            &[("reason", Label::Text(why.label()))],
            Number::Int(count),
        );
    }
    // The host's facts that metric formulas read as `#` constants (`#smt_on`: fact
    // "smt_on"), those known here: the recording rules read them (serve/src/rules.rs).
    let facts = Family::new(
        "counterhal_machine_fact",
        Kind::Gauge,
        "A fact of this host that metric formulas read as a # constant (perf's names).",
    );
    facts.header(out, format);
    let machine = counterhal::metrics::Machine::new(exporter.system.clone());
    for (name, _) in counterhal::metrics::machine::KNOWN {
        if let Some(value) = counterhal::metrics::machine::constant(&machine, name) {
            let fact = name.trim_start_matches('#');
            facts.sample(out, &[("fact", Label::Text(fact))], Number::Float(value));
        }
    }
    let build = Family::new(
        "counterhal_build",
        Kind::Info,
        "The exporter's version and the backend counting.",
    );
    build.header(out, format);
    let labels = [
        ("version", Label::Text(env!("CARGO_PKG_VERSION"))),
        ("backend", Label::Text(health.backend)),
    ];
    build.sample(out, &labels, Number::Int(1));
}

/// The mode the cgroups are counted in (`counterhal_cgroup_mode`); in the BPF mode, the
/// cgroups matched too deep for it (`counterhal_cgroups_too_deep`), whether it settles a
/// task's move between cgroups (`counterhal_cgroup_moves_settled`) and the context switches
/// its program missed (`counterhal_cgroup_switches_missed_total`), and the times the kernel
/// skipped each of its programs (`counterhal_bpf_recursion_misses_total`).
fn write_cgroup_mode(out: &mut Vec<u8>, format: Format, cgroups: &Cgroups, health: &Health) {
    let mode = Family::new(
        "counterhal_cgroup_mode",
        Kind::Gauge,
        "1 for the mode the cgroups are counted in (bpf, or perf-events with the reason \
         where bpf was not taken).",
    );
    mode.header(out, format);
    let labels = [
        ("mode", Label::Text(cgroups.mode_name())),
        ("reason", Label::Text(cgroups.why_not_bpf().unwrap_or(""))),
    ];
    mode.sample(out, &labels, Number::Int(1));
    let Some(settled) = cgroups.moves_settled() else {
        return;
    };
    let too_deep = Family::new(
        "counterhal_cgroups_too_deep",
        Kind::Gauge,
        "Cgroups matched but not followed, deeper than the BPF mode follows (their tasks \
         count in their followed ancestors).",
    );
    too_deep.header(out, format);
    too_deep.sample(out, &[], Number::Int(health.cgroups_too_deep()));
    let moves = Family::new(
        "counterhal_cgroup_moves_settled",
        Kind::Gauge,
        "1 where the BPF mode counts a task that moves between cgroups while it runs in \
         each for its time there; 0 where its new cgroup is given its CPU's counts since \
         the last context switch (the reason at start).",
    );
    moves.header(out, format);
    moves.sample(out, &[], Number::Int(u64::from(settled)));
    let Some(missed) = cgroups.switches_missed() else {
        return;
    };
    let switches = Family::new(
        "counterhal_cgroup_switches_missed",
        Kind::Counter,
        "Context switches the BPF mode's program did not see (the kernel skipped its run at \
         sched_switch, its recursion_misses): the counts of the time each spans went to the \
         next task's cgroups.",
    );
    switches.header(out, format);
    switches.sample(out, &[], Number::Int(missed));
    let programs = cgroups.programs_skipped();
    if programs.is_empty() {
        return;
    }
    let skipped = Family::new(
        "counterhal_bpf_recursion_misses",
        Kind::Counter,
        "Times the kernel skipped this BPF-mode program because another BPF program was \
         running on that CPU (its recursion_misses, bpftool prog show id N): each a context \
         switch (ch_cgroup_swtch, also counterhal_cgroup_switches_missed_total), cgroup \
         removal (ch_cgroup_rmdir) or move (ch_cgroup_move) the counts miss. Rising: find \
         the other BPF programs on the node (bpftool prog show).",
    );
    skipped.header(out, format);
    for program in &programs {
        let id = program.id.to_string();
        let labels = [
            ("program", Label::Text(program.name)),
            ("id", Label::Text(&id)),
        ];
        skipped.sample(out, &labels, Number::Int(program.skipped));
    }
}

/// The exporter's process, as client_golang's process collector writes it (node_exporter's
/// `/metrics` carries it): its names, help and types, no `# UNIT` in OpenMetrics (its
/// families have none), in the order of its gathering (by name); a figure that could not be
/// read is left out.
fn write_process(out: &mut Vec<u8>, format: Format, process: &Process) {
    let families = [
        (
            Family::new(
                "process_cpu_seconds",
                Kind::Counter,
                "Total user and system CPU time spent in seconds.",
            ),
            process.cpu_seconds.map(Number::Float),
        ),
        (
            Family::new(
                "process_max_fds",
                Kind::Gauge,
                "Maximum number of open file descriptors.",
            ),
            process.max_fds.map(Number::Int),
        ),
        (
            Family::new(
                "process_open_fds",
                Kind::Gauge,
                "Number of open file descriptors.",
            ),
            process.open_fds.map(Number::Int),
        ),
        (
            Family::new(
                "process_resident_memory_bytes",
                Kind::Gauge,
                "Resident memory size in bytes.",
            ),
            process.resident_memory_bytes.map(Number::Int),
        ),
        (
            Family::new(
                "process_start_time_seconds",
                Kind::Gauge,
                "Start time of the process since unix epoch in seconds.",
            ),
            process.start_time_seconds.map(Number::Float),
        ),
        (
            Family::new(
                "process_virtual_memory_bytes",
                Kind::Gauge,
                "Virtual memory size in bytes.",
            ),
            process.virtual_memory_bytes.map(Number::Int),
        ),
        (
            Family::new(
                "process_virtual_memory_max_bytes",
                Kind::Gauge,
                "Maximum amount of virtual memory available in bytes.",
            ),
            process.virtual_memory_max_bytes.map(Number::Int),
        ),
    ];
    for (family, value) in families {
        if let Some(value) = value {
            family.header(out, format);
            family.sample(out, &[], value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_accept_header_gets_openmetrics_and_others_the_text_format() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
        // Prometheus 3.5's, which adds the text format 1.0.0 (0.0.4 is served for it).
        let prometheus_3 = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;\
                            q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;\
                            version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;\
                            q=0.3,*/*;q=0.2";
        assert_eq!(Format::negotiate(Some(prometheus_3)), Format::OpenMetrics);
        assert_eq!(
            Format::negotiate(Some(
                "text/plain;version=1.0.0;escaping=allow-utf-8,*/*;q=0.1"
            )),
            Format::Text
        );
        assert_eq!(Format::negotiate(None), Format::Text);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Text);
        assert_eq!(Format::negotiate(Some("text/plain")), Format::Text);
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text")),
            Format::OpenMetrics
        );
        // A version not served, or OpenMetrics preferred less than text.
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text; version=2.0.0")),
            Format::Text
        );
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text;q=0.2,text/plain;q=0.9")),
            Format::Text
        );
        assert_eq!(Format::negotiate(Some(";;,,q=x,=")), Format::Text);
    }

    #[test]
    fn families_are_written_as_each_format_names_them() {
        let mut text = Vec::new();
        EVENT_SECONDS.header(&mut text, Format::Text);
        let labels = [("event", Label::Text("a\\\"b\n")), ("cpu", Label::Int(3))];
        EVENT_SECONDS.sample(&mut text, &labels, Number::Float(0.5));
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "# HELP counterhal_event_seconds_total Clock events counted, in seconds (task-clock, \
             cpu-clock).\n# TYPE counterhal_event_seconds_total counter\n\
             counterhal_event_seconds_total{event=\"a\\\\\\\"b\\n\",cpu=\"3\"} 0.5\n"
        );
        let mut open = Vec::new();
        EVENT_SECONDS.header(&mut open, Format::OpenMetrics);
        let open = String::from_utf8(open).unwrap();
        assert!(
            open.contains("# TYPE counterhal_event_seconds counter\n"),
            "{open}"
        );
        assert!(
            open.contains("# UNIT counterhal_event_seconds seconds\n"),
            "{open}"
        );
    }

    /// Nanoseconds are written as the seconds a reader parses to the float nearest
    /// `ns / 1e9` (the value written before as that float's shortest form), integers as
    /// their digits.
    ///
    /// Oracle: Rust's `f64` division (correctly rounded, IEEE 754) and its `str::parse`
    /// (correctly rounded), over a range of values with and without trailing zeros.
    #[test]
    fn seconds_and_integers_read_back_as_the_numbers_written() {
        let written = |number: Number| {
            let mut out = Vec::new();
            number.write(&mut out);
            let text = String::from_utf8(out).unwrap();
            text.strip_prefix(' ')
                .and_then(|t| t.strip_suffix('\n'))
                .unwrap()
                .to_string()
        };
        let mut ns: Vec<u64> = vec![0, 1, 10, 999_999_999, 1_000_000_000, 1_500_000_000];
        ns.extend([
            3_600_000_000_123,
            (1 << 53) - 1,
            1 << 52,
            123_456_789_012_345,
        ]);
        ns.extend((0..64).map(|shift| 0x9e37_79b9_7f4a_7c15u64 >> shift));
        for ns in ns {
            let text = written(Number::Seconds(ns));
            let read: f64 = text.parse().unwrap();
            if ns < 1 << 53 {
                assert_eq!(read, ns as f64 / 1e9, "{ns} ns written {text}");
            }
            let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
            assert_eq!(whole, (ns / 1_000_000_000).to_string(), "{ns}: {text}");
            assert!(
                fraction.len() <= 9 && !fraction.ends_with('0'),
                "{ns}: {text}"
            );
            assert_eq!(written(Number::Int(ns)), ns.to_string());
        }
        assert_eq!(written(Number::Seconds(1_500_000_000)), "1.5");
        assert_eq!(written(Number::Seconds(1)), "0.000000001");
        assert_eq!(written(Number::Int(u64::MAX)), u64::MAX.to_string());
    }

    /// A node of 300 best-effort pods (the kubelet's systemd names) counting 8 software
    /// events on 2 CPUs, as the exporter holds it after a read, written
    /// `COUNTERHAL_SCRAPES` times (1 unless set; `COUNTERHAL_SCRAPE_OUT` names a file for
    /// the last): `P x E` series (no CPU's here), 8 a pod, software events carrying no times. Counted
    /// by callgrind with 0 and with N scrapes, the difference over N scrapes' series is the
    /// writer's instructions a series (docs/performance.md, "300 pods").
    ///
    /// Oracle: docs/serve.md's budget of series (`(C + P) x (E + 2M)`, M the events the
    /// kernel may multiplex: none of perf's software events, kernel/events/core.c).
    #[cfg(target_os = "linux")]
    #[test]
    fn scrape_of_300_pods_writes_8_series_a_pod() {
        use super::super::counting::Place;
        use super::super::{budget, discovery};
        use counterhal_conformance::skip;
        use counterhal_conformance::skip::Need;
        use std::sync::Arc;

        const PODS: usize = 300;
        const CPUS: u32 = 2;
        let events = [
            "cpu-clock",
            "task-clock",
            "page-faults",
            "context-switches",
            "cpu-migrations",
            "minor-faults",
            "major-faults",
            "alignment-faults",
        ]
        .map(str::to_string);
        let Ok(backend) = counterhal::open_default() else {
            skip!(Need::System, "no counter backend here");
        };
        let host = counterhal_system::System::host();
        let plan = crate::events::plan(&host, &backend, &events).unwrap();
        if plan.exported.len() != events.len() {
            skip!(
                Need::Privilege,
                "the 8 software events do not all open here"
            );
        }
        let watch = discovery::Watch::new(&[], None, 8).unwrap();
        let budget = budget::Budget::new(65_536, 4);
        let mut exporter = Exporter::new(backend, plan, watch, budget, None);
        let columns: Vec<usize> = (0..events.len()).collect();
        for pod in 0..PODS {
            let uid = format!("{pod:08x}_0000_4000_8000_{pod:012x}");
            let cgroup: Arc<str> = Arc::from(format!(
                "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid}.slice"
            ));
            for cpu in 0..CPUS {
                let (kubelet, slurm) = (&exporter.kubelet, &exporter.slurm);
                let mut place = Place::of_cgroup(&cgroup, cpu, columns.clone(), kubelet, slurm);
                for (column, reading) in place.readings.iter_mut().enumerate() {
                    let n = (pod * 1_000 + column * 10 + cpu as usize) as u64;
                    *reading =
                        Reading::new(n * 7_919_993, 3_600_000_000_123 + n, 3_600_000_000_123 + n);
                }
                exporter.places.push(place);
            }
        }
        let health = Health::new("linux", &host);
        let scrapes: usize = std::env::var("COUNTERHAL_SCRAPES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        let mut out = Vec::new();
        for _ in 0..scrapes {
            write(&mut out, Format::Text, &exporter, &health, Instant::now());
        }
        if let Some(path) = std::env::var_os("COUNTERHAL_SCRAPE_OUT") {
            std::fs::write(path, &out).unwrap();
        }
        if scrapes == 0 {
            return;
        }
        let text = String::from_utf8(out).unwrap();
        let series = text
            .lines()
            .filter(|l| l.starts_with("counterhal_event_"))
            .count();
        assert_eq!(series, PODS * events.len(), "{text}");
        let pod_uid = "pod_uid=\"0000012b-0000-4000-8000-00000000012b\"";
        assert_eq!(text.matches(pod_uid).count(), events.len(), "{text}");
    }

    /// The same readings written per CPU, `--per-socket` and `--per-die`: each socket's
    /// (die's) series is the sum of its CPUs' series, value and both times, whether the two
    /// CPUs share a socket or the first CPU's socket is numbered after the second's; each
    /// series carries its socket (and die) and no cpu.
    ///
    /// Oracle: the per-CPU series as the exporter writes them (one perf event per CPU,
    /// `cpu-clock`, with the socket and die labels of a sysfs tree written here), summed as
    /// PromQL's `sum by (socket)` and perf's `--per-socket` aggregation sum them.
    #[cfg(target_os = "linux")]
    #[test]
    fn per_socket_and_per_die_series_sum_the_per_cpu_series() {
        use super::super::{budget, counting, discovery};
        use counterhal_conformance::skip;
        use counterhal_conformance::skip::Need;
        use std::collections::BTreeMap;

        let online = counterhal::online_cpus();
        if !online.contains(0) || !online.contains(1) {
            skip!(Need::System, "CPUs 0 and 1 are not both online");
        }
        let Ok(backend) = counterhal::open_default() else {
            skip!(Need::System, "no counter backend here");
        };
        drop(backend);
        let root = std::env::temp_dir().join(format!("counterhal-sockets-{}", std::process::id()));
        // (socket, die) of CPUs 0 and 1.
        for layout in [[(0, 0), (0, 1)], [(1, 0), (0, 0)]] {
            let system = counterhal_system::System::host().with_sysfs(&root);
            for (cpu, (socket, die)) in layout.iter().enumerate() {
                let dir = root.join(format!("devices/system/cpu/cpu{cpu}/topology"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("physical_package_id"), format!("{socket}\n")).unwrap();
                std::fs::write(dir.join("die_id"), format!("{die}\n")).unwrap();
            }
            let backend = counterhal::open_default().unwrap();
            let host = counterhal_system::System::host();
            let plan = crate::events::plan(&host, &backend, &["cpu-clock".to_string()]).unwrap();
            if plan.exported.is_empty() {
                skip!(Need::Privilege, "cpu-clock does not open on every CPU here");
            }
            let watch = discovery::Watch::new(&[], None, 8).unwrap();
            let budget = budget::Budget::new(65_536, 4);
            let mut exporter = Exporter::new(backend, plan, watch, budget, None);
            exporter.system = system;
            exporter.times = crate::events::TimesArg::Always;
            let health = Health::new("linux", &host);
            exporter.follow_on(&"0-1".parse::<counterhal::CpuList>().unwrap(), &health);
            exporter.read_all(&health);
            assert!(exporter.places.iter().all(|p| p.read), "every CPU read");
            // Each sample of the families written: its labels (without event, group and pmu)
            // and value.
            let written = |exporter: &Exporter| {
                let mut out = Vec::new();
                write(&mut out, Format::Text, exporter, &health, Instant::now());
                String::from_utf8(out)
                    .unwrap()
                    .lines()
                    .filter(|l| l.starts_with("counterhal_event_"))
                    .filter_map(|l| {
                        let (name, rest) = l.split_once('{')?;
                        let (labels, value) = rest.rsplit_once("} ")?;
                        let labels: Vec<&str> = labels
                            .split(',')
                            .filter(|p| {
                                !["event=", "group=", "pmu="]
                                    .iter()
                                    .any(|l| p.starts_with(l))
                            })
                            .collect();
                        Some(((name.to_string(), labels.join(",")), value.parse().ok()?))
                    })
                    .collect::<Vec<((String, String), f64)>>()
            };
            let per_cpu = written(&exporter);
            // Value, enabled and running on each CPU.
            assert_eq!(per_cpu.len(), 6, "{per_cpu:?}");
            for (aggregate, keep) in [
                (counting::Aggregate::Socket, &["socket"][..]),
                (counting::Aggregate::Die, &["socket", "die"][..]),
            ] {
                let mut sums: BTreeMap<(String, String), f64> = BTreeMap::new();
                for ((name, labels), value) in &per_cpu {
                    let kept: Vec<&str> = labels
                        .split(',')
                        .filter(|p| keep.iter().any(|k| p.starts_with(&format!("{k}="))))
                        .collect();
                    *sums.entry((name.clone(), kept.join(","))).or_default() += value;
                }
                exporter.aggregate = aggregate;
                let summed: BTreeMap<(String, String), f64> =
                    written(&exporter).into_iter().collect();
                assert_eq!(summed.len(), sums.len(), "{aggregate:?}: {summed:?}");
                for (key, sum) in &sums {
                    let got = summed.get(key).copied();
                    // Seconds written as decimal fractions: equal to the last digit.
                    assert!(
                        got.is_some_and(|g| (g - sum).abs() <= 1e-9 * sum.max(1.0)),
                        "{aggregate:?} {layout:?} {key:?}: {got:?}, the CPUs' sum {sum}"
                    );
                }
            }
        }
        std::fs::remove_dir_all(&root).ok();
    }
}
