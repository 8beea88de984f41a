//! `-G NAME[,NAME...]` and `--for-each-cgroup NAME[,NAME...]`: events counted only while the
//! tasks of a control group run, as perf counts them (CPU-wide, so with `-a` or `-C`).
//!
//! perf's rules, kept here: `-G` comes after the events it applies to; its names (of every
//! `-G`, in order, an empty name standing for no cgroup) go to the events one by one, the n-th
//! name to the n-th event, and a first `-G` with a single name goes to every event given
//! before it. `--for-each-cgroup` counts every event once per cgroup, cgroup after cgroup
//! (names, or patterns: [`cgroup_pattern`]).
//! Names are found where perf finds them ([`counterhal::cgroups::find`]).

use std::path::Path;
use std::sync::Arc;

use counterhal::Error;

use super::cgroup_pattern;
use crate::stat::arguments::StatArgs;

/// Event names, the groups among them (indices) and the cgroup of each event.
type WithCgroups = (Vec<String>, Vec<Vec<usize>>, Vec<Option<String>>);

/// Whether `-G` or `--for-each-cgroup` was given (perf then prints a cgroup column).
pub fn in_use(args: &StatArgs) -> bool {
    !args.more.cgroups.is_empty() || !args.more.for_each_cgroup.is_empty()
}

/// The events to count with the cgroup of each: `names` and `groups` as planned, each with
/// `-G`'s cgroup, or every one repeated per cgroup of `--for-each-cgroup`.
///
/// # Errors
/// As [`assign`] and [`cgroup_pattern::matching`]; where no cgroup mount is found for a
/// pattern, as [`counterhal::cgroups::root`].
pub fn of_events(
    args: &StatArgs,
    names: Vec<String>,
    groups: Vec<Vec<usize>>,
) -> Result<WithCgroups, Error> {
    let more = &args.more;
    if !more.for_each_cgroup.is_empty() {
        let list = more.for_each_cgroup.join(",");
        let cgroups = if counterhal::cgroups::is_pattern(&list) {
            let system = args.sysfs.system();
            cgroup_pattern::matching(&system, &counterhal::cgroups::root(&system)?, &list)?
        } else {
            // An empty name is the root, as perf takes it.
            list.split(',')
                .map(|name| if name.is_empty() { "/" } else { name }.to_string())
                .collect()
        };
        return Ok(for_each(&names, &groups, &cgroups));
    }
    let cgroups = assign(names.len(), &more.cgroups, &more.events_before_cgroups)?;
    Ok((names, groups, cgroups))
}

/// The cgroup of each event, as perf's `-G` assigns them: `cgroups` are the values of each
/// `-G` (each split at its commas), `events_before` how many events had been given before
/// each of them (`None`: all of them).
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput): a `-G` before any event,
/// or more names than events given before them.
pub fn assign(
    events: usize,
    cgroups: &[String],
    events_before: &[Option<usize>],
) -> Result<Vec<Option<String>>, Error> {
    let hint = "give each event's cgroup in -e's order after the events, e.g. \
                -e task-clock,page-faults -G web,db (an empty name: no cgroup)";
    let mut assigned: Vec<Option<String>> = vec![None; events];
    let mut given = 0;
    for (at, list) in cgroups.iter().enumerate() {
        let before = events_before.get(at).copied().flatten().unwrap_or(events);
        if before == 0 {
            return Err(Error::invalid_input(
                "-G comes before any event: events must be \
                 defined before cgroups (perf's rule)",
            )
            .with_hint(hint));
        }
        for name in list.split(',') {
            // perf counts an empty name without checking it against the events.
            if given >= before && !name.is_empty() {
                return Err(Error::invalid_input(format!(
                    "-G names more cgroups than the {before} events given before it"
                ))
                .with_hint(hint));
            }
            if !name.is_empty() {
                assigned[given] = Some(name.to_string());
            }
            given += 1;
        }
        if given == 1 {
            // One cgroup for the events given so far, as perf spreads a single -G name.
            let first = assigned[0].clone();
            for slot in &mut assigned[1..before] {
                slot.clone_from(&first);
            }
        }
    }
    Ok(assigned)
}

/// `--for-each-cgroup`: `names` and `groups` (indices into them) repeated once per cgroup
/// of `cgroups`, with the cgroup of each copy.
pub fn for_each(names: &[String], groups: &[Vec<usize>], cgroups: &[String]) -> WithCgroups {
    let mut all_names = Vec::new();
    let mut all_groups = Vec::new();
    let mut of = Vec::new();
    for cgroup in cgroups {
        let offset = all_names.len();
        all_names.extend(names.iter().cloned());
        of.extend(names.iter().map(|_| Some(cgroup.to_string())));
        all_groups.extend(
            groups
                .iter()
                .map(|group| group.iter().map(|i| i + offset).collect::<Vec<_>>()),
        );
    }
    (all_names, all_groups, of)
}

/// Each distinct cgroup name's directory, found once ([`counterhal::cgroups::find`]), for
/// every event (`None`: no cgroup).
///
/// # Errors
/// As [`counterhal::cgroups::find`]: the first name that is no cgroup here, naming the path
/// tried.
pub fn directories(
    system: &counterhal::system::System,
    assigned: &[Option<String>],
) -> Result<Vec<Option<Arc<Path>>>, Error> {
    let mut found: Vec<(&str, Arc<Path>)> = Vec::new();
    assigned
        .iter()
        .map(|name| {
            let Some(name) = name.as_deref() else {
                return Ok(None);
            };
            if let Some((_, path)) = found.iter().find(|(n, _)| *n == name) {
                return Ok(Some(Arc::clone(path)));
            }
            // The root, as a pattern names it.
            let lookup = if name.is_empty() { "/" } else { name };
            let path: Arc<Path> = Arc::from(counterhal::cgroups::find(system, lookup)?);
            found.push((name, Arc::clone(&path)));
            Ok(Some(path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[Option<String>]) -> Vec<&str> {
        list.iter().map(|n| n.as_deref().unwrap_or("")).collect()
    }

    #[test]
    fn names_go_to_the_events_one_by_one_as_perf_gives_them() {
        let g = |lists: &[&str]| lists.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // One name: every event given before it.
        assert_eq!(names(&assign(3, &g(&["web"]), &[]).unwrap()), ["web"; 3]);
        // Several: the n-th to the n-th event; the rest have none; an empty name skips one.
        assert_eq!(
            names(&assign(3, &g(&["web,db"]), &[]).unwrap()),
            ["web", "db", ""]
        );
        assert_eq!(
            names(&assign(3, &g(&["web,,db"]), &[]).unwrap()),
            ["web", "", "db"]
        );
        // perf's `-e cycles -G web -e cycles`: the second event was given after -G.
        assert_eq!(
            names(&assign(2, &g(&["web"]), &[Some(1)]).unwrap()),
            ["web", ""]
        );
        // Two -G go on where the first stopped.
        assert_eq!(
            names(&assign(2, &g(&["web", "db"]), &[Some(1), Some(2)]).unwrap()),
            ["web", "db"]
        );
        // More names than events before them, or -G before any event: refused.
        assert!(assign(1, &g(&["web,db"]), &[]).is_err());
        // A trailing empty name is counted, not checked, as perf's parse_cgroups does.
        assert_eq!(names(&assign(1, &g(&["web,"]), &[]).unwrap()), ["web"]);
        let early = assign(1, &g(&["web"]), &[Some(0)]).unwrap_err();
        assert!(early.message().contains("before any event"), "{early}");
    }

    #[test]
    fn for_each_repeats_events_and_groups_per_cgroup() {
        let events = vec!["a".to_string(), "b".to_string()];
        let cgroups = ["x".to_string(), "y".to_string()];
        let (names, groups, of) = for_each(&events, &[vec![0, 1]], &cgroups);
        assert_eq!(names, ["a", "b", "a", "b"]);
        assert_eq!(groups, [vec![0, 1], vec![2, 3]]);
        assert_eq!(super::tests::names(&of), ["x", "x", "y", "y"]);
    }
}
