//! The events asked for, as names: `-e`'s lists (their groups, `-g`'s one group, which
//! members are in weak groups) or perf stat's default set (with `-d`'s events), each with
//! `--all-user`'s `:u` or `--all-kernel`'s `:k` where it has no modifier.

use super::tool::is_tool;
use crate::stat::arguments::StatArgs;
use crate::stat::arguments::switches::Switches;

// The events counted when `-e` is not given: perf stat's set, serve's too.
use counterhal_events::perf::STAT_DEFAULT_EVENTS as DEFAULT_EVENTS;

/// The events `-d` adds to the default set, level by level (`-d`, `-dd`, `-ddd`), as perf
/// adds them.
const DETAILED: [&[&str]; 3] = [
    &[
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "LLC-loads",
        "LLC-load-misses",
    ],
    &[
        "L1-icache-loads",
        "L1-icache-load-misses",
        "dTLB-loads",
        "dTLB-load-misses",
        "iTLB-loads",
        "iTLB-load-misses",
    ],
    &["L1-dcache-prefetches", "L1-dcache-prefetch-misses"],
];

/// The events to count and the groups among them: `-e`'s names as written (see
/// [`StatArgs::given_events`]) or perf stat's default set; with `-g` every event in one group;
/// the indices of each group's members, counted together or not at all.
pub fn requested(args: &StatArgs) -> (Vec<String>, Vec<Vec<usize>>) {
    if args.more.null {
        return (Vec::new(), Vec::new());
    }
    if args.event_names.is_empty() {
        let mut names: Vec<String> = DEFAULT_EVENTS.iter().map(|s| s.to_string()).collect();
        // Counting CPUs, perf's clock is cpu-clock (perf 6.1's `add_default_attributes`;
        // perf 7.2's Default metrics: `cpu-clock if #target_cpu else task-clock`).
        if args.all_cpus || args.cpu_list.is_some() {
            names[0] = "cpu-clock".to_string();
        }
        add_detailed(&args.more, &mut names);
        return (with_privilege_level(&args.more, names), Vec::new());
    }
    let (names, mut groups) = args.given_events();
    if args.more.group && names.len() > 1 {
        // -g: every event in one group, as `{a,b,...}` around them all.
        groups = vec![(0..names.len()).collect()];
    }
    (with_privilege_level(&args.more, names), groups)
}

/// For each event of [`requested`], whether it is a member of a weak group (`{a,b}:W`), split
/// into its events where it does not open as a group.
pub fn weak(args: &StatArgs) -> Vec<bool> {
    if args.more.null || args.event_names.is_empty() || args.more.group {
        return vec![false; requested(args).0.len()];
    }
    args.weak_given()
}

/// Adds `-d`'s events to the default set `names` (perf adds them after its own).
fn add_detailed(switches: &Switches, names: &mut Vec<String>) {
    for level in DETAILED.iter().take(usize::from(switches.detailed)) {
        names.extend(level.iter().map(|name| name.to_string()));
    }
}

/// `names` with `--all-user`'s `:u` or `--all-kernel`'s `:k` added to each event given
/// without a modifier (a PMU event `pmu/.../` takes it directly); perf's tool events and
/// events that have modifiers are left as they are.
fn with_privilege_level(switches: &Switches, names: Vec<String>) -> Vec<String> {
    let modifier = match (switches.all_user, switches.all_kernel) {
        (true, _) => "u",
        (_, true) => "k",
        _ => return names,
    };
    names
        .into_iter()
        .map(|name| {
            if is_tool(&name) || name.contains(':') {
                // A tool event, an event with its own modifiers, or a tracepoint.
                name
            } else if name.ends_with('/') {
                format!("{name}{modifier}")
            } else {
                format!("{name}:{modifier}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::arguments::parse;

    fn args(words: &[&str]) -> StatArgs {
        parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"))
    }

    #[test]
    fn event_names_are_trimmed_and_default_to_perfs_set() {
        let given = args(&[
            "-e",
            "page-faults, task-clock",
            "-e",
            "cycles",
            "--",
            "true",
        ]);
        assert_eq!(requested(&given).0, ["page-faults", "task-clock", "cycles"]);
        let default = requested(&args(&["--", "true"])).0;
        assert_eq!(default.len(), DEFAULT_EVENTS.len());
        assert_eq!(default[0], "task-clock");
    }

    fn names(words: &[&str], given: &[&str]) -> Vec<String> {
        let args = parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
        with_privilege_level(&args.more, given.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn all_user_and_all_kernel_add_a_modifier_where_there_is_none() {
        let given = [
            "page-faults",
            "cycles:k",
            "cpu/event=0x3c/",
            "sched:sched_switch",
            "duration_time",
        ];
        assert_eq!(
            names(&["--all-user", "--", "true"], &given),
            [
                "page-faults:u",
                "cycles:k",
                "cpu/event=0x3c/u",
                "sched:sched_switch",
                "duration_time"
            ]
        );
        assert_eq!(
            names(&["--all-kernel", "--", "true"], &["page-faults"]),
            ["page-faults:k"]
        );
        assert_eq!(names(&["--", "true"], &["page-faults"]), ["page-faults"]);
        assert!(parse(&["--all-user", "--all-kernel", "--", "true"]).is_err());
    }

    #[test]
    fn detailed_levels_add_perfs_events() {
        let args = parse(&["-dd", "--", "true"]).unwrap();
        let mut names = Vec::new();
        add_detailed(&args.more, &mut names);
        assert_eq!(names.len(), 10);
        assert_eq!(names[0], "L1-dcache-loads");
        assert_eq!(names[9], "iTLB-load-misses");
    }
}
