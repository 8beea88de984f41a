//! perf's tool events: `duration_time` (the run's wall time), `user_time` and `system_time`
//! (the command's user and system CPU time), all in nanoseconds. No counter counts them: they
//! are planned as events so that they keep their place among the others, and filled in from
//! how the command ended once it has (the measurement does that).

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
