//! `--per-socket`, `--per-die`, `--per-core`, `--per-node`, `--per-cluster`, `--per-cache`:
//! each CPU's counts added up by the socket, die, core, NUMA node, cluster or cache it belongs
//! to, as sysfs describes them (`/sys/devices/system/cpu/cpuN/topology`,
//! `/sys/devices/system/cpu/cpuN/cache/indexM`, `/sys/devices/system/node/nodeM/cpuN`), with
//! perf's labels (`S0`, `S0-D0`, `S0-D0-C1`, `N0`, `S0-D0-CLS1`, `S0-D0-L3-ID0`) and the
//! number of CPUs in each.

use counterhal::Error;
use counterhal_hal::Reading;
use counterhal_system::{CpuCache, System};

use super::summary::Section;
use crate::stat::arguments::switches::Aggregation;
use crate::stat::measure::results::{Counts, Place, Run, Snapshot, is_absent, not_opened_here};

/// Where one CPU sits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuPlace {
    /// Its socket (`physical_package_id`).
    pub socket: u32,
    /// Its die (`die_id`; 0 where the kernel does not tell).
    pub die: u32,
    /// Its core (`core_id`).
    pub core: u32,
    /// Its NUMA node (0 where there is none).
    pub node: u32,
    /// Its cluster (`cluster_id`; 0 where the kernel does not tell).
    pub cluster: u32,
    /// The level and id of the cache `--per-cache` adds up by, as perf 7.2 numbers them
    /// (-1 where they cannot be read).
    pub cache: (i64, i64),
}

/// perf's label of the group `cpu` belongs to, and the order groups print in (perf's
/// `aggr_cpu_id__cmp`: node, socket, die, cluster, cache level, cache, core).
fn label(by: Aggregation, cpu: CpuPlace) -> ([i64; 4], String) {
    let CpuPlace {
        socket,
        die,
        core,
        node,
        cluster,
        cache: (level, cache),
    } = cpu;
    let (s, d) = (i64::from(socket), i64::from(die));
    match by {
        Aggregation::Socket => ([s, 0, 0, 0], format!("S{socket}")),
        Aggregation::Die => ([s, d, 0, 0], format!("S{socket}-D{die}")),
        Aggregation::Core => (
            [s, d, i64::from(core), 0],
            format!("S{socket}-D{die}-C{core}"),
        ),
        Aggregation::Node => ([i64::from(node), 0, 0, 0], format!("N{node}")),
        Aggregation::Cluster => (
            [s, d, i64::from(cluster), 0],
            format!("S{socket}-D{die}-CLS{cluster}"),
        ),
        Aggregation::Cache(_) => (
            [s, d, level, cache],
            format!("S{socket}-D{die}-L{level}-ID{cache}"),
        ),
    }
}

/// The level and id of CPU `cpu`'s cache of `level` (`None`: its last level) among `caches`,
/// as perf 7.2 finds them (`cpu__get_cache_details`, builtin-stat.c): of the first four
/// (`MAX_CACHE_LVL` indices), the one of the highest level (the first such), or the last of
/// the level asked; its id the lowest CPU sharing it, the CPU itself where the list names
/// none. A level none has gets id -1; no cache, or one whose level cannot be read, gives -1
/// for both (perf's empty id).
fn cache_of(caches: &[CpuCache], cpu: u32, level: Option<u32>) -> (i64, i64) {
    let caches = &caches[..caches.len().min(4)];
    let Some(levels) = caches
        .iter()
        .map(|c| c.level)
        .collect::<Option<Vec<u32>>>()
        .filter(|l| !l.is_empty())
    else {
        return (-1, -1);
    };
    let id = |c: &CpuCache| i64::from(c.first_shared_cpu.unwrap_or(cpu));
    match level {
        None => {
            let highest = levels.iter().copied().max().unwrap_or(0);
            let at = levels.iter().position(|&l| l == highest).unwrap_or(0);
            (i64::from(highest), id(&caches[at]))
        }
        Some(level) => {
            let mut found = caches.iter().zip(&levels).filter(|(_, l)| **l == level);
            (
                i64::from(level),
                found.next_back().map_or(-1, |(c, _)| id(c)),
            )
        }
    }
}

/// Where CPU `cpu` sits, read from `system`'s sysfs, with the cache `by` adds up by (none
/// read for another aggregation).
pub fn cpu_place(system: &System, cpu: u32, by: Aggregation) -> CpuPlace {
    let topology = system.cpu_topology(cpu);
    let nodes = system.numa_nodes().last().map_or(0, |last| last + 1);
    let node = system.cpu_node(cpu, nodes).unwrap_or(0);
    let cache = match by {
        Aggregation::Cache(level) => cache_of(&system.cpu_caches(cpu), cpu, level),
        _ => (-1, -1),
    };
    CpuPlace {
        socket: topology.socket.unwrap_or(0),
        die: topology.die.unwrap_or(0),
        core: topology.core.unwrap_or(cpu),
        node,
        cluster: topology.cluster.unwrap_or(0),
        cache,
    }
}

/// Adds up `run`'s per-CPU counts (its places) by `by`, each CPU placed by `place_of`.
pub fn aggregate(run: &mut Run, by: Aggregation, place_of: &dyn Fn(u32) -> CpuPlace) {
    run.places = add_up(&run.places, by, place_of);
}

/// Adds up one interval's per-CPU counts by `by`, each CPU placed by `place_of`.
pub fn aggregate_interval(
    snapshot: &mut Snapshot,
    by: Aggregation,
    place_of: &dyn Fn(u32) -> CpuPlace,
) {
    snapshot.counts = add_up(&snapshot.counts, by, place_of);
}

/// One group being added up: its order, label, how many CPUs counted each event, and the
/// sums so far.
type Group = ([i64; 4], String, Vec<u32>, Vec<Result<Reading, Error>>);

/// The counts of `places` added up group by group, in perf's order. A CPU where an event was
/// not opened (an uncore event off its PMU's cpumask) adds nothing to it, and is not counted
/// among its CPUs.
fn add_up(places: &[Counts], by: Aggregation, place_of: &dyn Fn(u32) -> CpuPlace) -> Vec<Counts> {
    let mut groups: Vec<Group> = Vec::new();
    for counts in places {
        let Some(Place::Cpu(cpu)) = counts.place else {
            continue;
        };
        let (order, label) = label(by, place_of(cpu));
        let at = match groups.iter().position(|g| g.1 == label) {
            Some(at) => at,
            None => {
                let n = counts.readings.len();
                let unread = (0..n).map(|_| Err(not_opened_here())).collect();
                groups.push((order, label, vec![0; n], unread));
                groups.len() - 1
            }
        };
        let group = &mut groups[at];
        for ((sum, reading), added) in group.3.iter_mut().zip(&counts.readings).zip(&mut group.2) {
            if is_absent(reading) {
                continue;
            }
            *added += 1;
            match (sum.as_ref(), reading) {
                (Ok(total), Ok(more)) => {
                    *sum = Ok(Reading::new(
                        total.value.saturating_add(more.value),
                        total.time_enabled.saturating_add(more.time_enabled),
                        total.time_running.saturating_add(more.time_running),
                    ));
                }
                _ if is_absent(sum) => *sum = reading.clone(),
                _ => {}
            }
        }
    }
    groups.sort_by_key(|g| g.0);
    groups
        .into_iter()
        .map(|(_, label, cpus, readings)| Counts {
            place: Some(Place::Aggregate {
                key: by.key(),
                label,
                cpus,
            }),
            readings,
        })
        .collect()
}

/// The order of a section's lines, as `(event, place)` indices: event by event with every
/// place of the event together (perf's `-A` and `--per-thread`), but place by place with every
/// event of the place together when CPUs were added up (perf's `--per-core` and its kind).
/// A place where an event was not opened (an uncore event off its PMU's cpumask) has no line
/// for it, as in perf.
pub fn line_order(section: &Section) -> Vec<(usize, usize)> {
    let events = section.places.first().map_or(0, |p| p.events.len());
    let places = section.places.len();
    let aggregated = section
        .places
        .iter()
        .any(|p| p.place.as_ref().is_some_and(Place::is_aggregate));
    let order: Vec<(usize, usize)> = if aggregated {
        (0..places)
            .flat_map(|place| (0..events).map(move |event| (event, place)))
            .collect()
    } else {
        (0..events)
            .flat_map(|event| (0..places).map(move |place| (event, place)))
            .collect()
    };
    order
        .into_iter()
        .filter(|&(event, place)| {
            let at = &section.places[place];
            at.place.is_none() || !at.events[event].is_absent()
        })
        .collect()
}

/// The width of a `--per-core` (`--per-socket`...) label in perf's table, before the number
/// of CPUs it added up.
pub fn label_width(key: &str) -> usize {
    match key {
        // perf 7.2's `aggr_header_lens` and the space after them, for its own modes.
        "cache" => 23,
        "cluster" => 21,
        "core" => 16,
        "die" => 9,
        _ => 7,
    }
}

/// The heading of the number of CPUs added up: perf 7.2's `ctrs` for its own modes
/// (`--per-cache`, `--per-cluster`), perf 6.1's `cpus` for the others.
pub fn cpus_heading(key: &str) -> &'static str {
    match key {
        "cache" | "cluster" => "ctrs",
        _ => "cpus",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(cpu: u32, value: u64) -> Counts {
        Counts {
            place: Some(Place::Cpu(cpu)),
            readings: vec![Ok(Reading::new(value, 10, 10))],
        }
    }

    /// Four CPUs: two cores of two threads on one socket, the second core on node 1.
    fn place_of(cpu: u32) -> CpuPlace {
        CpuPlace {
            socket: 0,
            die: 0,
            core: cpu / 2,
            node: cpu / 2,
            ..CpuPlace::default()
        }
    }

    #[test]
    fn cpus_add_up_by_core_socket_and_node_with_perfs_labels() {
        let places = [cpu(3, 4), cpu(0, 1), cpu(1, 2), cpu(2, 3)];
        let cores = add_up(&places, Aggregation::Core, &place_of);
        let summary: Vec<(String, u64)> = cores
            .iter()
            .map(|c| {
                let label = c.place.as_ref().unwrap().label();
                (label, c.readings[0].as_ref().unwrap().value)
            })
            .collect();
        assert_eq!(
            summary,
            [("S0-D0-C0".to_string(), 3), ("S0-D0-C1".to_string(), 7)]
        );
        let socket = add_up(&places, Aggregation::Socket, &place_of);
        assert_eq!(socket.len(), 1);
        assert_eq!(
            socket[0].place,
            Some(Place::Aggregate {
                key: "socket",
                label: "S0".into(),
                cpus: vec![4]
            })
        );
        assert_eq!(socket[0].readings[0].as_ref().unwrap().time_running, 40);
        let nodes = add_up(&places, Aggregation::Node, &place_of);
        assert_eq!(nodes[1].place.as_ref().unwrap().label(), "N1");
        let die = add_up(&places, Aggregation::Die, &place_of);
        assert_eq!(die[0].place.as_ref().unwrap().json_field().0, "die");
    }

    /// Oracle: perf 7.2.13's `cpu__get_cache_details` and `cpu__get_cache_id_from_map`
    /// (tools/perf/builtin-stat.c) and `build_caches_for_cpu` (tools/perf/util/header.c):
    /// the first four indices; the last level the highest (its first index); a level asked,
    /// the last index of it, id -1 where there is none; the id the lowest CPU sharing the
    /// cache, the CPU itself where the list names none; no cache or an unreadable one: -1, -1.
    #[test]
    fn caches_are_chosen_and_numbered_as_perf_7_2_does() {
        let cache = |level, first| CpuCache::new(level, first);
        let caches = [
            cache(Some(1), Some(2)),
            cache(Some(1), Some(3)),
            cache(Some(3), Some(0)),
            cache(Some(2), None),
            cache(Some(4), Some(0)),
        ];
        assert_eq!(cache_of(&caches, 3, None), (3, 0));
        assert_eq!(cache_of(&caches, 3, Some(1)), (1, 3));
        assert_eq!(cache_of(&caches, 3, Some(2)), (2, 3));
        assert_eq!(cache_of(&caches, 3, Some(4)), (4, -1));
        assert_eq!(cache_of(&[], 3, None), (-1, -1));
        assert_eq!(cache_of(&[cache(None, Some(1))], 3, Some(1)), (-1, -1));
    }

    #[test]
    fn this_machine_s_cpus_are_placed_from_sysfs() {
        let root = std::path::Path::new("/sys/devices/system");
        if !root.join("cpu/cpu0/topology").exists() {
            counterhal_conformance::skip!(
                counterhal_conformance::skip::Need::System,
                "no sysfs CPU topology here"
            );
        }
        let first = cpu_place(&System::host(), 0, Aggregation::Core);
        let core_id = std::fs::read_to_string(root.join("cpu/cpu0/topology/core_id")).unwrap();
        let expected: u32 = core_id.trim().parse().unwrap();
        assert_eq!(first.core, expected);
    }
}
