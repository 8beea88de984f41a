//! The scrape handler: `/metrics` renders the counts under the exporter's lock, in the format
//! the `Accept` header asks for; `/` a page naming what is counted and what did not open;
//! `/-/healthy` and `/-/ready`, Prometheus' probe paths, a line that says so to anyone (no
//! lock, no event or cgroup named; `/-/ready` answers 503 with why while no counter counts);
//! `/records`, the departed cgroups' records that its query selects (`--records`); anything
//! else 404. It knows nothing of connections, users, headers or compression (the
//! transport's and the layer's).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::counting::Exporter;
use super::health::Health;
use super::process::Process;
use super::text_format::{Family, Format, Kind, Number};
use crate::http::message::{Handler, Request, Response};

/// The exporter's routes over its counters.
pub struct Scrape {
    /// The counters, one scrape (or one look of the follower) at a time.
    exporter: Arc<Mutex<Exporter>>,
    /// The exporter's health, exported beside the counts.
    health: Arc<Health>,
    /// The size of the last scrape (the next one's buffer starts at it).
    last_size: AtomicUsize,
    /// `--records`: the journal's directory, whose records `/records` serves.
    records: Option<PathBuf>,
}

impl Scrape {
    /// The routes over `exporter`, with its `health` and the directory of its `records`.
    pub fn new(
        exporter: Arc<Mutex<Exporter>>,
        health: Arc<Health>,
        records: Option<PathBuf>,
    ) -> Scrape {
        Scrape {
            exporter,
            health,
            last_size: AtomicUsize::new(4096),
            records,
        }
    }

    /// `/records?QUERY`: the records of the journal that the query selects, JSON lines,
    /// oldest first (read from the disk, not under the counters' lock); 404 where no
    /// journal is kept, 400 for a query that selects nothing it knows.
    fn records(&self, request: &Request<'_>) -> Response {
        let Some(dir) = &self.records else {
            return Response::text(
                404,
                "no records are kept: serve was started without --records",
            );
        };
        let query = request.target.split_once('?').map_or("", |(_, q)| q);
        let query = query.split('#').next().unwrap_or("");
        let selection = match crate::records::Selection::of_query(query) {
            Ok(selection) => selection,
            Err(why) => return Response::text(400, &why),
        };
        match crate::records::read(dir, &selection) {
            Ok(found) => {
                let body: String = found.records.iter().map(|r| r.line()).collect();
                let mut answer = Response::new(200, RECORDS_TYPE, body.into_bytes());
                answer.compressible = true;
                answer
            }
            Err(why) => Response::text(500, &why),
        }
    }

    /// The counters, locked.
    fn lock(&self) -> std::sync::MutexGuard<'_, Exporter> {
        self.exporter
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Handler for Scrape {
    fn handle(&self, request: &Request<'_>) -> Response {
        match request.path() {
            "/metrics" => {
                let format = Format::negotiate(request.header("accept"));
                let mut body = Vec::with_capacity(self.last_size.load(Relaxed));
                {
                    let mut exporter = self.lock();
                    let start = Instant::now();
                    exporter.read_all(&self.health);
                    write(&mut body, format, &exporter, &self.health, start);
                }
                self.last_size.store(body.len(), Relaxed);
                let mut answer = Response::new(200, format.content_type(), body);
                answer.compressible = true;
                answer
            }
            "/" => Response::new(200, "text/html; charset=utf-8", index(&self.lock())),
            RECORDS => self.records(request),
            // It listens only once its events are open and its configuration read, so an
            // answer is both.
            HEALTHY => Response::text(200, "counterhal serve is Healthy."),
            // Ready where a counter counts; else 503 with why (from the health's counts: no
            // lock, so that a probe never waits on a scrape).
            READY => match self.health.not_ready() {
                None => Response::text(200, "counterhal serve is Ready."),
                Some(why) => Response::text(503, &format!("counterhal serve is not Ready: {why}")),
            },
            _ => Response::text(404, "not found: try /metrics"),
        }
    }

    fn public(&self, path: &str) -> bool {
        matches!(path, HEALTHY | READY)
    }
}

/// Writes the scrape, each collector its families: the counts of every place read, then
/// (where an event is counted) the events refused, the exporter's health, the cgroups' mode
/// and the host's facts; the process's figures, and the scrape's duration measured from
/// `start`; in `format`, into `out` (cleared first).
pub(crate) fn write(
    out: &mut Vec<u8>,
    format: Format,
    exporter: &Exporter,
    health: &Health,
    start: Instant,
) {
    out.clear();
    exporter.write_counts(out, format);
    if !exporter.events.is_empty() {
        super::events::write_refused(out, format, &exporter.refused);
        health.write(out, format);
        if let Some(cgroups) = &exporter.cgroups {
            let counts = (health.cgroups_too_deep(), health.events_left_out_total());
            super::per_cgroup::write(out, format, cgroups, counts, health.started);
        }
        super::machine::write(out, format, &exporter.machine);
        if let Some(journal) = &exporter.records {
            journal.write(out, format, health.started);
        }
    }
    Process::now(&health.process).write(out, format);
    let duration = Family::seconds(
        "counterhal_scrape_duration_seconds",
        Kind::Gauge,
        "Time this scrape took to find, read and write the counters.",
    );
    let took = Number::Float(start.elapsed().as_secs_f64());
    duration.single(out, format, took, health.started);
    if format == Format::OpenMetrics {
        out.extend_from_slice(b"# EOF\n");
    }
}

/// The path of the departed cgroups' records.
const RECORDS: &str = "/records";
/// Their type: JSON lines, as NDJSON names its media type.
const RECORDS_TYPE: &str = "application/x-ndjson";

/// The liveness probe's path, as Prometheus names its own.
const HEALTHY: &str = "/-/healthy";
/// The readiness probe's path, as Prometheus names its own.
const READY: &str = "/-/ready";

/// The `/` page: what is counted, what did not open.
fn index(exporter: &Exporter) -> Vec<u8> {
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut page = String::from(
        "<!DOCTYPE html>\n<html><head><title>counterhal</title></head><body>\n\
         <h1>counterhal serve</h1>\n<p><a href=\"/metrics\">Metrics</a></p>\n",
    );
    page.push_str(&format!(
        "<p>Version {}, backend {}; {} places counted.</p>\n<h2>Events</h2>\n<ul>\n",
        env!("CARGO_PKG_VERSION"),
        exporter.backend_name(),
        exporter.places.len()
    ));
    for event in &exporter.events {
        page.push_str(&format!(
            "<li>{} ({})</li>\n",
            escape(&event.name),
            escape(&event.pmu)
        ));
    }
    page.push_str("</ul>\n");
    if let Some(cgroups) = &exporter.cgroups {
        page.push_str(&format!(
            "<h2>Cgroups</h2>\n<p>Counted in the mode {}.</p>\n",
            escape(&cgroups.mode_said())
        ));
    }
    if !exporter.refused.is_empty() {
        page.push_str("<h2>Not opened here</h2>\n<ul>\n");
        for refused in &exporter.refused {
            page.push_str(&format!(
                "<li><code>{}</code>: {}</li>\n",
                escape(&refused.name),
                escape(&refused.message)
            ));
        }
        page.push_str("</ul>\n");
    }
    if exporter.unopened > 0 {
        let reason = exporter.budget.reason(exporter.unopened);
        page.push_str(&format!(
            "<h2>Not counted</h2>\n<p>{}</p>\n",
            escape(&reason)
        ));
    }
    page.push_str("</body></html>\n");
    page.into_bytes()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use counterhal::Reading;

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
        use crate::counting::Place;
        use crate::{budget, discovery};
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
        let watch =
            discovery::Watch::new(&counterhal_system::System::host(), &[], None, 8).unwrap();
        let budget = budget::Budget::new(&counterhal_system::System::host(), 65_536, 4);
        let mut exporter = Exporter::new(
            counterhal_system::System::host(),
            backend,
            plan,
            watch,
            budget,
            None,
        );
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
        use crate::{budget, counting, discovery};
        use counterhal_conformance::skip;
        use counterhal_conformance::skip::Need;
        use std::collections::BTreeMap;

        let online = counterhal::online_cpus(&counterhal_system::System::host());
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
            let watch =
                discovery::Watch::new(&counterhal_system::System::host(), &[], None, 8).unwrap();
            let budget = budget::Budget::new(&host, 65_536, 4);
            let mut exporter = Exporter::new(system, backend, plan, watch, budget, None);
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

    /// A cgroup on 2 CPUs whose page-faults did not open for it on CPU 1 has no page-faults
    /// series (a sum without CPU 1 would read as the whole), and with `--per-cpu` one on
    /// CPU 0 alone; its task-clock, open on both, is written summed (and per CPU), and so is
    /// a cgroup's event that never ran (0 with its times 0: counting, not run).
    ///
    /// Oracle: perf 6.1's `perf stat -G` output, which prints `<not counted>` for an event
    /// open for a cgroup that never ran and `<not supported>` for one that did not open, and
    /// the rule docs/serve.md states for them.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_event_left_out_of_a_cgroup_on_a_cpu_is_not_written_as_counted() {
        use crate::counting::Place;
        use crate::{budget, discovery};
        use counterhal_conformance::skip;
        use counterhal_conformance::skip::Need;
        use std::sync::Arc;

        let events = ["task-clock", "page-faults"].map(str::to_string);
        let Ok(backend) = counterhal::open_default() else {
            skip!(Need::System, "no counter backend here");
        };
        let host = counterhal_system::System::host();
        let plan = crate::events::plan(&host, &backend, &events).unwrap();
        if plan.exported.len() != events.len() {
            skip!(
                Need::Privilege,
                "task-clock and page-faults do not open here"
            );
        }
        let watch =
            discovery::Watch::new(&counterhal_system::System::host(), &[], None, 8).unwrap();
        let mut exporter = Exporter::new(
            counterhal_system::System::host(),
            backend,
            plan,
            watch,
            budget::Budget::new(&counterhal_system::System::host(), 65_536, 4),
            None,
        );
        exporter.times = crate::events::TimesArg::Always;
        let (counted, idle): (Arc<str>, Arc<str>) = (Arc::from("/job"), Arc::from("/idle"));
        for cpu in 0..2 {
            let (kubelet, slurm) = (&exporter.kubelet, &exporter.slurm);
            let mut place = Place::of_cgroup(&counted, cpu, vec![0, 1], kubelet, slurm);
            place.readings = vec![Reading::new(500_000_000, 600_000_000, 600_000_000); 2];
            if cpu == 1 {
                place = place.leaving_out(1);
                place.readings[1] = Reading::default();
            }
            exporter.places.push(place);
            let idle = Place::of_cgroup(&idle, cpu, vec![0, 1], kubelet, slurm);
            exporter.places.push(idle);
        }
        exporter.places.sort_by(|a, b| a.at.cmp(&b.at));
        let health = Health::new("linux", &host);
        let lines = |exporter: &Exporter, event: &str, cgroup: &str| {
            let mut out = Vec::new();
            write(&mut out, Format::Text, exporter, &health, Instant::now());
            let (event, cgroup) = (format!("event=\"{event}\""), format!("cgroup=\"{cgroup}\""));
            String::from_utf8(out)
                .unwrap()
                .lines()
                .filter(|l| {
                    l.starts_with("counterhal_event_total")
                        || l.starts_with("counterhal_event_seconds_total")
                })
                .filter(|l| l.contains(&event) && l.contains(&cgroup))
                .map(str::to_string)
                .collect::<Vec<String>>()
        };
        assert_eq!(
            lines(&exporter, "page-faults", "/job"),
            Vec::<String>::new()
        );
        let clock = lines(&exporter, "task-clock", "/job");
        assert_eq!(clock.len(), 1, "{clock:?}");
        assert!(clock[0].ends_with(" 1"), "{clock:?}");
        // Counting, never run: written, 0, its times 0.
        let never_ran = lines(&exporter, "page-faults", "/idle");
        assert_eq!(never_ran.len(), 1, "{never_ran:?}");
        assert!(never_ran[0].ends_with(" 0"), "{never_ran:?}");
        exporter.per_cpu = true;
        let per_cpu = lines(&exporter, "page-faults", "/job");
        assert_eq!(per_cpu.len(), 1, "{per_cpu:?}");
        assert!(per_cpu[0].contains("cpu=\"0\""), "{per_cpu:?}");
        assert_eq!(lines(&exporter, "task-clock", "/job").len(), 2);
    }
}
