//! What `stat` counts: every thread of a process (`-p`), every online CPU (`-a`), a CPU list
//! (`-C`), or, with none of them, the command itself.

use counterhal::hal::CpuList;
use counterhal::{Error, Target};

use super::args::{StatArgs, USAGE};
use crate::common::CliError;

/// The targets `-p`, `-a` or `-C` ask for; `None` for the command itself.
///
/// # Errors
/// A usage error for process id 0 or a CPU list that is malformed or names CPUs that are not
/// online.
pub(super) fn targets(args: &StatArgs) -> Result<Option<Vec<Target>>, CliError> {
    if let Some(pid) = args.pid {
        return process_threads(pid).map(Some);
    }
    if args.all_cpus {
        return Ok(Some(cpu_targets(&online_cpus())));
    }
    if let Some(list) = &args.cpu_list {
        return requested_cpus(list, &online_cpus())
            .map(|cpus| Some(cpu_targets(&cpus)))
            .map_err(|e| CliError::usage(e, USAGE));
    }
    Ok(None)
}

/// Every thread of process `pid` (`/proc/PID/task`), as perf's `-p` counts them; the process
/// alone where the OS has no such directory.
fn process_threads(pid: u32) -> Result<Vec<Target>, CliError> {
    if pid == 0 {
        return Err(CliError::usage(
            Error::invalid_input("process id 0 is not a process")
                .with_hint("give the id of a running process, e.g. -p $(pidof NAME)"),
            USAGE,
        ));
    }
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Ok(vec![Target::process(pid)]);
    };
    let mut threads: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    threads.sort_unstable();
    Ok(threads.into_iter().map(Target::process).collect())
}

/// Every online CPU (`/sys/devices/system/cpu/online`; not this process's affinity, which may
/// be narrower), or CPUs 0..N by the parallelism the OS reports where that file is absent.
pub(super) fn online_cpus() -> CpuList {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|text| text.parse::<CpuList>().ok())
        .filter(|list| !list.is_empty())
        .unwrap_or_else(|| {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
            CpuList::range(0, cpus.saturating_sub(1))
        })
}

/// The CPUs `-C` names, each once, every one of them online.
///
/// # Errors
/// [`ErrorKind::InvalidInput`](counterhal::ErrorKind::InvalidInput) for a malformed list, an
/// empty one, or CPUs that are not online (named, with the online ones), before any target is
/// built: `-C 0-4294967295` costs two numbers, not four billion targets.
fn requested_cpus(text: &str, online: &CpuList) -> Result<CpuList, Error> {
    let requested: CpuList = text.parse()?;
    if requested.is_empty() {
        return Err(Error::invalid_input("an empty CPU list for -C")
            .with_hint(format!("name CPUs, e.g. -C 0 or -C {online}")));
    }
    let missing = requested.difference(online);
    if !missing.is_empty() {
        return Err(Error::invalid_input(format!(
            "CPU(s) {missing} of `{text}` are not online (online: {online})"
        ))
        .with_hint(format!("count CPUs among {online}")));
    }
    Ok(requested)
}

/// One target per CPU.
fn cpu_targets(cpus: &CpuList) -> Vec<Target> {
    cpus.iter().map(Target::cpu).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal::ErrorKind;

    fn online() -> CpuList {
        "0-3".parse().unwrap()
    }

    #[test]
    fn cpu_lists_name_online_cpus_once() {
        let cpus = requested_cpus("2-3,0,2", &online()).unwrap();
        assert_eq!(
            cpu_targets(&cpus),
            [Target::cpu(0), Target::cpu(2), Target::cpu(3)]
        );
    }

    #[test]
    fn bad_lists_are_named_before_any_target_is_built() {
        for bad in ["", "a", "3-1", "1-", "0,,1"] {
            let e = requested_cpus(bad, &online()).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}");
        }
        let huge = requested_cpus("0-4294967295", &online()).unwrap_err();
        assert!(
            huge.message()
                .contains("CPU(s) 4-4294967295 of `0-4294967295` are not online (online: 0-3)"),
            "{huge}"
        );
        let one = requested_cpus("1,5", &online()).unwrap_err();
        assert!(one.message().starts_with("CPU(s) 5 "), "{one}");
    }

    #[test]
    fn process_zero_is_refused() {
        let error = process_threads(0).unwrap_err();
        assert_eq!(error.exit_code, 2);
    }

    #[test]
    fn this_machines_online_cpus_include_cpu_0() {
        assert!(online_cpus().contains(0));
    }
}
