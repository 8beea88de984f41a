//! perf's tool events: `duration_time` (the run's wall time), `user_time` and `system_time`
//! (the command's user and system CPU time), all in nanoseconds. No counter counts them: they
//! are planned as events ([`Planned::Tool`]) so that they keep their place among the others,
//! and filled in from how the command ended once it has.

use counterhal::Error;
use counterhal::hal::Reading;

use super::results::{Planned, Run};

/// One of perf's tool events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// `duration_time`: the run's wall time.
    Duration,
    /// `user_time`: the command's user CPU time.
    User,
    /// `system_time`: the command's system CPU time.
    System,
}

impl Tool {
    /// The tool event `name` stands for (perf's name, or perf's `tool/NAME/` form).
    pub fn named(name: &str) -> Option<Tool> {
        let name = name
            .strip_prefix("tool/")
            .and_then(|rest| rest.strip_suffix('/'))
            .unwrap_or(name);
        match name {
            "duration_time" => Some(Tool::Duration),
            "user_time" => Some(Tool::User),
            "system_time" => Some(Tool::System),
            _ => None,
        }
    }

    /// perf's name.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Duration => "duration_time",
            Tool::User => "user_time",
            Tool::System => "system_time",
        }
    }
}

/// Whether `name` (an event as printed) is a tool event, whose value is nanoseconds.
pub fn is_tool(name: &str) -> bool {
    Tool::named(name).is_some()
}

/// A reading of `ns` nanoseconds, running all along (0 reads as `<not counted>`, as perf
/// prints a tool event that measured nothing).
fn reading(ns: u64) -> Reading {
    Reading::new(ns, ns, ns)
}

/// Fills in the tool events of `run` (each event of `events` planned as one): their values
/// for the whole run and `duration_time` at each interval; the CPU times are not counted per
/// interval, CPU or thread (perf prints them `<not counted>` there too) and are not supported
/// without a command.
pub fn fill(run: &mut Run, events: &[Planned]) {
    let end = &run.end;
    let whole = |tool: Tool| -> Result<Reading, Error> {
        let ns = match tool {
            Tool::Duration => Some(end.elapsed_ns),
            Tool::User => end.user_ns,
            Tool::System => end.sys_ns,
        };
        ns.map(reading).ok_or_else(|| {
            Error::unsupported(format!(
                "{}: no command was run to take its CPU time",
                tool.name()
            ))
        })
    };
    for (i, planned) in events.iter().enumerate() {
        let Planned::Tool(tool) = *planned else {
            continue;
        };
        if let Some(result) = run.events.get_mut(i) {
            result.outcome = whole(tool);
        }
        for snapshot in &mut run.snapshots {
            let at = snapshot.at_ns;
            for counts in &mut snapshot.counts {
                if let Some(slot) = counts.readings.get_mut(i) {
                    *slot = match tool {
                        Tool::Duration => Ok(reading(at)),
                        // Known once the command ends, not per interval.
                        _ => Ok(Reading::default()),
                    };
                }
            }
        }
        for counts in &mut run.places {
            if let Some(slot) = counts.readings.get_mut(i) {
                *slot = Ok(Reading::default());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::results::{CommandEnd, Counts, EventResult, Snapshot};
    use super::*;

    fn run(user_ns: Option<u64>) -> Run {
        let result = |name: &str| EventResult {
            name: name.to_string(),
            backend: "test".to_string(),
            outcome: Ok(Reading::default()),
        };
        Run {
            events: vec![
                result("page-faults"),
                result("duration_time"),
                result("user_time"),
                result("system_time"),
            ],
            end: CommandEnd {
                exit_code: 0,
                exit_description: String::new(),
                elapsed_ns: 5_000,
                user_ns,
                sys_ns: user_ns.map(|_| 0),
                note: None,
            },
            places: Vec::new(),
            snapshots: vec![Snapshot {
                at_ns: 2_000,
                counts: vec![Counts {
                    place: None,
                    readings: vec![Ok(Reading::new(7, 1, 1)); 4],
                }],
            }],
        }
    }

    fn planned() -> Vec<Planned> {
        let counted = Planned::Unsupported {
            name: "page-faults".into(),
            error: Error::unsupported("kept"),
        };
        vec![
            counted,
            Planned::Tool(Tool::Duration),
            Planned::Tool(Tool::User),
            Planned::Tool(Tool::System),
        ]
    }

    #[test]
    fn names_are_perfs() {
        assert_eq!(Tool::named("duration_time"), Some(Tool::Duration));
        assert_eq!(Tool::named("tool/user_time/"), Some(Tool::User));
        assert_eq!(Tool::named("system_time"), Some(Tool::System));
        assert_eq!(Tool::named("duration_time:u"), None);
        assert!(!is_tool("task-clock"));
        for tool in [Tool::Duration, Tool::User, Tool::System] {
            assert_eq!(Tool::named(tool.name()), Some(tool));
        }
    }

    #[test]
    fn the_end_fills_the_tool_events_and_leaves_the_others() {
        let mut with_command = run(Some(3_000));
        fill(&mut with_command, &planned());
        let value = |r: &Result<Reading, Error>| r.as_ref().ok().and_then(Reading::scaled);
        let values: Vec<Option<u64>> = with_command
            .events
            .iter()
            .map(|e| value(&e.outcome))
            .collect();
        // page-faults untouched (a zero reading never ran), system time 0 is `<not counted>`.
        assert_eq!(values, [None, Some(5_000), Some(3_000), None]);
        let interval = &with_command.snapshots[0].counts[0].readings;
        assert_eq!(
            value(&interval[0]),
            Some(7),
            "counted events are the counters'"
        );
        assert_eq!(value(&interval[1]), Some(2_000), "the duration so far");
        assert_eq!((value(&interval[2]), value(&interval[3])), (None, None));
        assert!(interval[2].is_ok(), "not counted, as perf prints it");

        let mut timer = run(None);
        fill(&mut timer, &planned());
        assert_eq!(value(&timer.events[1].outcome), Some(5_000));
        let why = timer.events[2].outcome.as_ref().unwrap_err();
        assert!(why.message().contains("no command"), "{why}");
    }
}
