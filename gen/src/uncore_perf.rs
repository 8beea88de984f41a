//! What perf 6.1's own uncore tables (compiled into Debian 12's perf) give that Linux 6.12's
//! perf JSON lost, put back into the uncore tables, so that a name opens what the perf users
//! run opens:
//!
//! - the extended event select (perfmon's `ExtSel`, bit 8 of perf's `event` term, which the
//!   kernel's QPI format puts at config bit 21: `event=config:0-7,21` in
//!   arch/x86/events/intel/uncore_snbep.c): Linux 6.12's JSON has no `ExtSel` left, so
//!   Broadwell-EP's `UNC_Q_RxL_OCCUPANCY_SNP.VN1` became `event=0x19,umask=2`, where perf 6.1
//!   opens `event=0x119,umask=0x2` (config 0x200219). Where perf 6.1 gives an event of the
//!   table the same terms but an `event` whose low byte is the table's and which has bits
//!   above it, the table takes perf 6.1's `event`;
//! - the events Linux 6.12's JSON removed that perf 6.1 still lists on a PMU of the table
//!   (Linux's "Remove bad uncore events" of 2022 and later refreshes dropped those whose
//!   `Filter` perf cannot set, such as Broadwell-EP's `UNC_H_ADDR_OPC_MATCH.*`): added, named in
//!   upper case (perf lists names in lower case; names are looked up in any case), with perf
//!   6.1's terms.
//!
//! perf lists a JSON event only on a PMU the machine has, so perf runs under a tree of the
//! table's PMUs (one box each, `PMU_0`) bind-mounted over /sys/bus/event_source/devices in a
//! private mount namespace (`unshare -m`: root), with `PERF_CPUID` of the directory's CPU
//! (an example of its row of the kernel's `mapfile.csv`), and `perf list --details` prints each
//! event and its terms.

use std::path::Path;
use std::process::Command;

use crate::GenError;
use crate::uncore::{UncoreEvent, UncoreTable};

/// One event perf lists: its name (lower case), its PMU without the box number, its terms.
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    /// The name, as perf lists it.
    pub name: String,
    /// perf's PMU (`uncore_qpi`).
    pub pmu: String,
    /// The terms (`event=0x119,umask=0x2`).
    pub terms: String,
}

/// An example CPU of a `mapfile.csv` pattern (`GenuineIntel-6-(97|9A)`, `GenuineIntel-6-55-[01234]`):
/// the first of each alternation and class, with stepping 0 where the pattern names none.
pub fn example_cpuid(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '(' => {
                let group: String = chars.by_ref().take_while(|c| *c != ')').collect();
                out.push_str(group.split('|').next().unwrap_or_default());
            }
            '[' => {
                let class: String = chars.by_ref().take_while(|c| *c != ']').collect();
                // `[[:xdigit:]]`: the inner class ends at the first `]`, the outer next.
                if class.starts_with("[:") {
                    chars.next();
                    out.push('0');
                } else {
                    out.extend(class.chars().next());
                }
                if chars.peek() == Some(&'+') {
                    chars.next();
                }
            }
            c => out.push(c),
        }
    }
    if out.matches('-').count() < 3 {
        out.push_str("-0");
    }
    out
}

/// The Intel directories' CPUs in the kernel's `mapfile.csv` text: (directory, example CPU).
pub fn directory_cpuids(mapfile: &str) -> Vec<(String, String)> {
    mapfile
        .lines()
        .filter(|l| l.starts_with("GenuineIntel-"))
        .filter_map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            (fields.len() >= 4 && fields[3] == "core")
                .then(|| (fields[2].to_string(), example_cpuid(fields[0])))
        })
        .collect()
}

/// The uncore events of `perf list --details` output: an event's line (`  unc_q_...`) and,
/// below its description, `PMU_0/terms/`.
pub fn parse_listing(text: &str) -> Vec<Listed> {
    let mut out = Vec::new();
    let mut name: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if line.starts_with("  ") && !line.starts_with("   ") {
            name = trimmed.split_whitespace().next();
            continue;
        }
        let Some((pmu, rest)) = trimmed.split_once('/') else {
            continue;
        };
        let (Some(event), Some(terms)) = (name, rest.strip_suffix('/')) else {
            continue;
        };
        if pmu.contains(' ') || !pmu.ends_with("_0") {
            continue;
        }
        out.push(Listed {
            name: event.to_string(),
            pmu: pmu.trim_end_matches("_0").to_string(),
            terms: terms.to_string(),
        });
        name = None;
    }
    out
}

/// The uncore events perf at `perf` lists for the PMUs `pmus` with `PERF_CPUID` `cpuid`, under
/// a tree written in `scratch` (removed after).
///
/// # Errors
/// The tree cannot be written, or unshare, the mount or perf fails (root is needed).
pub fn listed(
    perf: &Path,
    pmus: &[&str],
    cpuid: &str,
    scratch: &Path,
) -> Result<Vec<Listed>, GenError> {
    let devices = scratch.join("devices");
    let write =
        |path: &Path, text: &str| std::fs::write(path, text).map_err(|e| GenError::io(path, &e));
    for pmu in pmus {
        let dir = devices.join(format!("{pmu}_0"));
        std::fs::create_dir_all(dir.join("format")).map_err(|e| GenError::io(&dir, &e))?;
        write(&dir.join("type"), "30\n")?;
        write(&dir.join("cpumask"), "0\n")?;
        write(&dir.join("format/event"), "config:0-7\n")?;
    }
    let script = r#"mount --bind "$1" /sys/bus/event_source/devices || exit 97
        exec "$2" list --details"#;
    let output = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(&devices)
        .arg(perf)
        .env("PERF_CPUID", cpuid)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| GenError::Data(format!("cannot run unshare: {e}")));
    _ = std::fs::remove_dir_all(scratch);
    let output = output?;
    if !output.status.success() {
        return Err(GenError::Data(format!(
            "perf list --details under a PMU tree ({}; it needs root): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(parse_listing(&String::from_utf8_lossy(&output.stdout)))
}

/// Terms as (field, value) pairs, values as numbers where they are.
fn fields(terms: &str) -> Vec<(String, Option<u64>, String)> {
    let mut out: Vec<(String, Option<u64>, String)> = terms
        .split(',')
        .map(|t| {
            let (field, value) = t.split_once('=').unwrap_or((t, "1"));
            let number = match value.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => value.parse().ok(),
            };
            (field.to_string(), number, value.to_string())
        })
        .filter(|(_, number, _)| *number != Some(0))
        .collect();
    out.sort();
    out
}

/// `terms` with its `event` term's value `event` (jevents' `llx` spelling).
fn with_event(terms: &str, event: u64) -> String {
    terms
        .split(',')
        .map(|t| match t.strip_prefix("event=") {
            Some(_) => format!("event={event:#x}"),
            None => t.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// What [`amend`] changed in a table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Amended {
    /// The events that took perf's extended event select.
    pub extended: Vec<String>,
    /// The events added.
    pub added: Vec<String>,
}

/// `table` with what perf 6.1 lists (`listed`) that Linux 6.12's JSON lost (see the module's
/// documentation); an event perf lists on another PMU than the table's of its name is left as
/// the table has it.
pub fn amend(table: &mut UncoreTable, listed: &[Listed]) -> Amended {
    let mut amended = Amended::default();
    // A name the table has on another PMU (perf 6.1 put the event elsewhere) is not lost.
    let elsewhere = |table: &UncoreTable, pmu: &str, name: &str| {
        table
            .pmus
            .iter()
            .filter(|p| p.name != pmu)
            .any(|p| p.events.iter().any(|e| e.name.eq_ignore_ascii_case(name)))
    };
    let lost: Vec<&Listed> = listed
        .iter()
        .filter(|l| !elsewhere(table, &l.pmu, &l.name))
        .collect();
    for pmu in &mut table.pmus {
        for event in lost.iter().filter(|l| l.pmu == pmu.name) {
            let theirs = fields(&event.terms);
            let event_of = |f: &[(String, Option<u64>, String)]| {
                f.iter()
                    .find(|t| t.0 == "event")
                    .and_then(|t| t.1)
                    .unwrap_or(0)
            };
            match pmu
                .events
                .iter_mut()
                .find(|e| e.name.eq_ignore_ascii_case(&event.name))
            {
                Some(ours) => {
                    let mine = fields(&ours.terms);
                    let (their_event, my_event) = (event_of(&theirs), event_of(&mine));
                    let rest = |f: &[(String, Option<u64>, String)]| {
                        f.iter()
                            .filter(|t| t.0 != "event")
                            .map(|t| (t.0.clone(), t.1))
                            .collect::<Vec<_>>()
                    };
                    if their_event > 0xff
                        && their_event & 0xff == my_event
                        && rest(&theirs) == rest(&mine)
                    {
                        ours.terms = with_event(&ours.terms, their_event);
                        amended.extended.push(ours.name.clone());
                    }
                }
                None => {
                    let name = event.name.to_ascii_uppercase();
                    amended.added.push(name.clone());
                    pmu.events.push(UncoreEvent {
                        name,
                        terms: event.terms.clone(),
                        scale_unit: None,
                        deprecated: false,
                    });
                }
            }
        }
        pmu.events.sort_by(|a, b| {
            (a.name
                .to_ascii_lowercase()
                .cmp(&b.name.to_ascii_lowercase()))
            .then_with(|| a.name.cmp(&b.name))
        });
    }
    amended.extended.sort();
    amended.added.sort();
    amended
}

/// Each table of a directory `mapfile` (the kernel's `mapfile.csv`) gives an Intel CPU for,
/// amended from what `perf` lists ([`amend`]), with a header line saying what changed.
///
/// # Errors
/// The mapfile cannot be read, or perf cannot be run under a tree ([`listed`]).
pub fn amend_tables(
    tables: &mut [UncoreTable],
    perf: &Path,
    mapfile: &Path,
) -> Result<(), GenError> {
    let text = std::fs::read_to_string(mapfile).map_err(|e| GenError::io(mapfile, &e))?;
    let cpus = directory_cpuids(&text);
    let (release, version) = crate::metric_names::perf_release(perf)?;
    for table in tables {
        let Some((_, cpuid)) = cpus.iter().find(|(d, _)| *d == table.directory) else {
            continue;
        };
        let pmus: Vec<&str> = table.pmus.iter().map(|p| p.name.as_str()).collect();
        let scratch = std::env::temp_dir().join(format!(
            "counterhal-gen-uncore-{}-{}",
            std::process::id(),
            table.directory
        ));
        let listed = listed(perf, &pmus, cpuid, &scratch)?;
        let amended = amend(table, &listed);
        if amended.extended.is_empty() && amended.added.is_empty() {
            continue;
        }
        table.notes.push(format!(
            "{release} ({version}; `PERF_CPUID={cpuid} perf list --details` under a tree of \
             these PMUs, counterhal-gen's uncore_perf.rs): {} events take its extended event \
             select, which the kernel's JSON lost; {} events it lists that the kernel's JSON no \
             longer has are added: {}",
            amended.extended.len(),
            amended.added.len(),
            if amended.added.is_empty() {
                "none".to_string()
            } else {
                amended.added.join(", ")
            }
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uncore::UncorePmu;

    #[test]
    fn mapfile_patterns_give_a_cpu_they_match() {
        assert_eq!(
            example_cpuid("GenuineIntel-6-(97|9A|B7)"),
            "GenuineIntel-6-97-0"
        );
        assert_eq!(
            example_cpuid("GenuineIntel-6-55-[01234]"),
            "GenuineIntel-6-55-0"
        );
        assert_eq!(example_cpuid("GenuineIntel-6-4F"), "GenuineIntel-6-4F-0");
        assert_eq!(example_cpuid("GenuineIntel-6-8[CD]"), "GenuineIntel-6-8C-0");
    }

    #[test]
    fn perfs_extended_select_and_lost_events_are_put_back() {
        let listing = "\nuncore interconnect:\n  unc_q_rxl_occupancy_snp.vn1\n       [RxQ. Unit: uncore_qpi]\n        uncore_qpi_0/event=0x119,umask=0x2/ \n  unc_q_other\n       [x]\n        uncore_qpi_0/event=0x5,umask=0x1/ \n  unc_h_addr_opc_match.filt\n       [y]\n        uncore_ha_0/event=0x20,umask=0x3/ \n  unc_q_other\n       [z]\n        uncore_ha_0/event=0x5,umask=0x1/ \n";
        let listed = parse_listing(listing);
        assert_eq!(listed.len(), 4);
        let event = |name: &str, terms: &str| UncoreEvent {
            name: name.into(),
            terms: terms.into(),
            scale_unit: None,
            deprecated: false,
        };
        let mut table = UncoreTable {
            directory: "broadwellx".into(),
            commit: "c".into(),
            notes: Vec::new(),
            pmus: vec![
                UncorePmu {
                    name: "uncore_ha".into(),
                    unit: "HA".into(),
                    events: vec![],
                },
                UncorePmu {
                    name: "uncore_qpi".into(),
                    unit: "QPI".into(),
                    events: vec![
                        event("UNC_Q_RxL_OCCUPANCY_SNP.VN1", "event=0x19,umask=2"),
                        event("UNC_Q_OTHER", "event=5,umask=1"),
                    ],
                },
            ],
        };
        let amended = amend(&mut table, &listed);
        assert_eq!(amended.extended, ["UNC_Q_RxL_OCCUPANCY_SNP.VN1"]);
        assert_eq!(amended.added, ["UNC_H_ADDR_OPC_MATCH.FILT"]);
        assert_eq!(table.pmus[1].events[1].terms, "event=0x119,umask=2");
        assert_eq!(table.pmus[1].events[0].terms, "event=5,umask=1");
        assert_eq!(table.pmus[0].events[0].terms, "event=0x20,umask=0x3");
    }
}
