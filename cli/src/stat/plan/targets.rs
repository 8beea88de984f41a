//! What `counterhal stat` counts: the command it runs, or while it runs an existing process
//! with every thread (`-p`), every online CPU (`-a`) or a list of CPUs (`-C`), each an
//! [`Attach`] of the library.
//!
//! CPU lists stay [`CpuList`]s (ranges, never expanded) until they have been checked against
//! the online CPUs, so a list naming CPUs this machine lacks fails before one target is built.

use counterhal::Target as Attach;
use counterhal::metrics::Machine;
use counterhal::{Error, online_cpus};
use counterhal_hal::CpuList;
use counterhal_system::System;

use crate::stat::arguments::StatArgs;

/// What to count, as the options ask for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Targets {
    /// The command itself (the backend decides how to follow it).
    Command,
    /// The command's own process, without the processes and threads it creates (`-i`).
    CommandAlone,
    /// An existing process with every thread (`-p PID`), every online CPU (`-a`), or these
    /// CPUs, each online (`-C LIST`).
    Attach(Attach),
}

impl Targets {
    /// What `-p PID`, `-a` and `-C LIST` ask for (clap lets `-p` through alone; `-C` wins
    /// over `-a`), with a CPU list checked against the CPUs online here and the processes
    /// against `system`'s.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput): process id 0, a CPU
    /// list that does not parse or is empty, or one naming CPUs that are not online.
    pub fn from_options(
        system: &System,
        pid: Option<&str>,
        all_cpus: bool,
        cpu_list: Option<&str>,
    ) -> Result<Targets, Error> {
        if let Some(list) = pid {
            return processes(system, list);
        }
        // -C's CPUs, with or without -a (perf's `-a -C 0` counts CPU 0).
        match (cpu_list, all_cpus) {
            (Some(text), _) => {
                let cpus = parse_cpu_list(text)?;
                check_online(system, &cpus, &online_cpus(system))?;
                Ok(Targets::Attach(Attach::Cpus(cpus)))
            }
            (None, true) => Ok(Targets::Attach(Attach::AllCpus)),
            (None, false) => Ok(Targets::Command),
        }
    }
}

impl Targets {
    /// `-t TID[,TID]`: running threads (where `system`'s `/proc` tells), never 0; one thread
    /// is [`Attach::Thread`], several [`Attach::Threads`].
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput): a list that does not
    /// parse, thread id 0, or a thread not running here.
    pub fn threads(system: &System, list: &str) -> Result<Targets, Error> {
        let hint =
            "give ids of running threads, e.g. -t 1234 or -t 1234,1240 (`ls /proc/PID/task`)";
        let mut tids = Vec::new();
        for item in list.split(',').map(str::trim) {
            let tid: u32 = item.parse().map_err(|_| {
                Error::invalid_input(format!("`{item}` in -t is not a thread id")).with_hint(hint)
            })?;
            if tid == 0 {
                return Err(Error::invalid_input("thread id 0 is not a thread").with_hint(hint));
            }
            if system.process_exists(tid) == Some(false) {
                return Err(
                    Error::invalid_input(format!("no thread {tid} is running here"))
                        .with_hint(hint),
                );
            }
            if !tids.contains(&tid) {
                tids.push(tid);
            }
        }
        Ok(Targets::Attach(match tids.as_slice() {
            [tid] => Attach::Thread(*tid),
            _ => Attach::Threads(tids),
        }))
    }
}

impl Targets {
    /// `-i`: a process counted without the children its threads create from now on: its
    /// threads as they are now (from `system`'s `/proc/PID/task`), each alone; a command,
    /// its own process alone from its exec; other targets as they are.
    ///
    /// # Errors
    /// None today; the result leaves room for targets `-i` cannot apply to.
    pub fn without_children(self, system: &System) -> Result<Targets, Error> {
        match self {
            Targets::Command => Ok(Targets::CommandAlone),
            Targets::Attach(Attach::Process(pid)) => {
                Ok(Targets::Attach(threads_of(system, &[pid])))
            }
            Targets::Attach(Attach::Processes(pids)) => {
                Ok(Targets::Attach(threads_of(system, &pids)))
            }
            other => Ok(other),
        }
    }
}

/// The threads of `pids` as they are now (from `/proc/PID/task`), each alone; a process
/// without a task directory as one thread.
fn threads_of(system: &System, pids: &[u32]) -> Attach {
    let mut tids: Vec<u32> = Vec::new();
    for &pid in pids {
        let mut own: Vec<u32> = system.threads(pid).unwrap_or_default();
        if own.is_empty() {
            own.push(pid);
        }
        own.sort_unstable();
        tids.extend(own);
    }
    match tids.as_slice() {
        [tid] => Attach::Thread(*tid),
        _ => Attach::Threads(tids),
    }
}

/// `-p PID[,PID]`: running processes (where `/proc` tells), never 0; one is
/// [`Attach::Process`], several [`Attach::Processes`] (each named once).
fn processes(system: &System, list: &str) -> Result<Targets, Error> {
    let hint = "give ids of running processes, e.g. -p $(pidof NAME) or -p 1234,1240";
    let mut pids: Vec<u32> = Vec::new();
    for item in list.split(',').map(str::trim) {
        let pid: u32 = item.parse().map_err(|_| {
            Error::invalid_input(format!("`{item}` in -p is not a process id")).with_hint(hint)
        })?;
        if pid == 0 {
            return Err(Error::invalid_input("process id 0 is not a process").with_hint(hint));
        }
        if !pids.contains(&pid) {
            pids.push(pid);
        }
    }
    if let Some(gone) = pids
        .iter()
        .find(|&&pid| system.process_exists(pid) == Some(false))
    {
        return Err(
            Error::invalid_input(format!("no process {gone} is running here")).with_hint(hint),
        );
    }
    Ok(Targets::Attach(match pids.as_slice() {
        [pid] => Attach::Process(*pid),
        _ => Attach::Processes(pids),
    }))
}

/// `-C LIST`: numbers and ranges, at least one CPU; a CPU named twice is counted once. The
/// error names the item at fault, and the hint shows the form.
fn parse_cpu_list(text: &str) -> Result<CpuList, Error> {
    let hint = "write CPUs as numbers and ranges, e.g. 0 or 0,2-3";
    match text.parse::<CpuList>() {
        Ok(cpus) if cpus.is_empty() => {
            Err(Error::invalid_input("an empty CPU list for -C").with_hint(hint))
        }
        Ok(cpus) => Ok(cpus),
        Err(e) => Err(Error::invalid_input(e.message()).with_hint(hint)),
    }
}

/// Refuses a list naming CPUs that are not `online`, naming them and the online ones, after
/// perf's words for it ("No supported events found.", perf 7.2's stat.sh greps them).
fn check_online(system: &System, cpus: &CpuList, online: &CpuList) -> Result<(), Error> {
    let missing = cpus.difference(online);
    if missing.is_empty() {
        return Ok(());
    }
    let (which, are) = if missing.len() == 1 {
        ("CPU", "is")
    } else {
        ("CPUs", "are")
    };
    Err(Error::invalid_input(format!(
        "No supported events found: {which} {missing} of -C {cpus} {are} not online here \
         (online: {online})"
    ))
    .with_hint(format!(
        "name CPUs listed in {}, e.g. -C {online}",
        system.online_cpus_path().display()
    )))
}

/// What the metrics' formulas read beside the counts: the system's facts (with `--sysfs`'s
/// PMUs) and whether CPUs are counted (`-a`, `-C`), what perf's `#target_cpu` and
/// `#core_wide` tell them; threads where `-t`, `-p` or a command is counted.
pub fn metrics_facts(args: &StatArgs) -> Machine {
    let system = args.sysfs.system();
    let targets = match &args.more.tid {
        Some(_) => None,
        None => Some(Targets::from_options(
            &system,
            args.pid.as_deref(),
            args.all_cpus,
            args.cpu_list.as_deref(),
        )),
    };
    let facts = Machine::new(system);
    let Some(targets) = targets else {
        return facts;
    };
    match targets {
        Ok(Targets::Attach(Attach::AllCpus)) => facts.counting_cpus(None),
        Ok(Targets::Attach(Attach::Cpus(cpus))) => {
            facts.counting_cpus(Some(&cpus.iter().collect::<Vec<u32>>()))
        }
        _ => facts,
    }
}

#[cfg(test)]
mod tests {
    use counterhal::ErrorKind;

    use super::*;

    fn list(text: &str) -> CpuList {
        text.parse().unwrap()
    }

    #[test]
    fn cpu_lists_parse_merge_and_keep_the_hint() {
        // The CPUs online here, each a target; a list past them is refused before it is
        // expanded (four billion targets would not fit in memory).
        let online = online_cpus(&counterhal::system::System::host());
        assert_eq!(
            counterhal::advanced::backend_targets(
                &Attach::Cpus(online.clone()),
                &counterhal::system::System::host()
            )
            .unwrap(),
            online
                .iter()
                .map(counterhal_hal::BackendTarget::Cpu)
                .collect::<Vec<_>>()
        );
        let all = counterhal::advanced::backend_targets(
            &Attach::Cpus(list("0-4294967295")),
            &counterhal::system::System::host(),
        );
        assert_eq!(all.unwrap_err().kind(), ErrorKind::InvalidInput);
        // A CPU named twice is counted once; the order given does not matter.
        assert_eq!(parse_cpu_list("3,1-3, 1").unwrap().to_string(), "1-3");
        for bad in ["", " ", "a", "3-1", "1-", "0,,1", "-1", "4294967296"] {
            let e = parse_cpu_list(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}");
            assert!(e.message().contains("CPU list"), "{bad}: {e}");
            assert!(e.hint().unwrap().contains("0,2-3"), "{bad}: {e}");
        }
        // The item at fault is named.
        assert!(
            parse_cpu_list("0,2-x")
                .unwrap_err()
                .message()
                .contains("`2-x`")
        );
    }

    #[test]
    fn a_huge_list_is_refused_without_being_expanded() {
        let huge = parse_cpu_list("0-4294967295").unwrap();
        assert_eq!(huge.len(), 1 << 32);
        let e = check_online(&System::host(), &huge, &list("0-1")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(
            e.message(),
            "No supported events found: CPUs 2-4294967295 of -C 0-4294967295 are not online \
             here (online: 0-1)"
        );
        assert!(e.hint().unwrap().contains("-C 0-1"), "{e}");
    }

    #[test]
    fn online_cpus_pass_and_missing_ones_are_named() {
        let online = list("0-3,8");
        assert!(check_online(&System::host(), &list("0,2-3,8"), &online).is_ok());
        let one = check_online(&System::host(), &list("1,4"), &online).unwrap_err();
        assert!(
            one.message()
                .starts_with("No supported events found: CPU 4 of -C 1,4 is not online"),
            "{one}"
        );
        let several = check_online(&System::host(), &list("2-9"), &online).unwrap_err();
        assert!(several.message().contains(": CPUs 4-7,9 "), "{several}");
        assert!(several.message().ends_with("(online: 0-3,8)"), "{several}");
    }

    #[test]
    fn options_choose_the_targets() {
        assert_eq!(
            Targets::from_options(&System::host(), None, false, None).unwrap(),
            Targets::Command
        );
        let me = std::process::id();
        let mine = me.to_string();
        assert_eq!(
            Targets::from_options(&System::host(), Some(&mine), false, None).unwrap(),
            Targets::Attach(Attach::Process(me))
        );
        // perf's -p PID,PID: every process named, once each.
        assert_eq!(
            Targets::from_options(&System::host(), Some(&format!("{me},1,{me}")), false, None)
                .unwrap(),
            Targets::Attach(Attach::Processes(vec![me, 1]))
        );
        let word = Targets::from_options(&System::host(), Some("12,x"), false, None).unwrap_err();
        assert_eq!(word.message(), "`x` in -p is not a process id");
        // No process has id u32::MAX (pid_max is at most 2^22): named, with a hint for users.
        let gone =
            Targets::from_options(&System::host(), Some("4294967295"), false, None).unwrap_err();
        assert_eq!(gone.message(), "no process 4294967295 is running here");
        assert!(!gone.to_string().contains("Target::"), "{gone}");
        assert_eq!(
            Targets::from_options(&System::host(), None, true, None).unwrap(),
            Targets::Attach(Attach::AllCpus)
        );
        // perf's `-a -C 0` (stat.sh's `-C <cpu>` test): CPU 0.
        assert!(matches!(
            Targets::from_options(&System::host(), None, true, Some("0")).unwrap(),
            Targets::Attach(Attach::Cpus(cpus)) if cpus.iter().collect::<Vec<u32>>() == [0]
        ));
        let zero = Targets::from_options(&System::host(), Some("0"), false, None).unwrap_err();
        assert!(zero.hint().unwrap().contains("-p $(pidof NAME)"), "{zero}");
        let bad = Targets::from_options(&System::host(), None, false, Some("3-1")).unwrap_err();
        assert!(bad.message().contains("runs backwards"), "{bad}");
    }

    #[test]
    fn thread_lists_are_checked_and_kept_once() {
        let me = std::process::id();
        assert_eq!(
            Targets::threads(&System::host(), &me.to_string()).unwrap(),
            Targets::Attach(Attach::Thread(me))
        );
        assert_eq!(
            Targets::threads(&System::host(), &format!("{me}, {me},1")).unwrap(),
            Targets::Attach(Attach::Threads(vec![me, 1]))
        );
        for bad in ["0", "x", "", "4294967295"] {
            assert!(Targets::threads(&System::host(), bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn no_inherit_counts_a_process_s_threads_alone() {
        let me = std::process::id();
        let alone = Targets::Attach(Attach::Process(me))
            .without_children(&System::host())
            .unwrap();
        let Targets::Attach(attach) = alone else {
            panic!("{alone:?}");
        };
        // This test runs among the harness's threads: several, or this one.
        let tids: Vec<u32> =
            counterhal::advanced::backend_targets(&attach, &counterhal::system::System::host())
                .unwrap()
                .into_iter()
                .map(|t| match t {
                    counterhal_hal::BackendTarget::Process { pid, inherit } => {
                        assert!(!inherit, "{t:?}");
                        pid
                    }
                    other => panic!("{other:?}"),
                })
                .collect();
        assert!(tids.contains(&me), "{tids:?}");
        assert_eq!(
            Targets::Command.without_children(&System::host()).unwrap(),
            Targets::CommandAlone
        );
        assert_eq!(
            Targets::Attach(Attach::AllCpus)
                .without_children(&System::host())
                .unwrap(),
            Targets::Attach(Attach::AllCpus)
        );
    }
}
