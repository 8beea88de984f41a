//! What a count is in, through the C API (`counterhal_set_event_unit`), against perf 6.1 on
//! the same PMU. The kernel gives an event alias's unit and scale in sysfs
//! (`events/NAME.unit`, `events/NAME.scale`: Documentation/ABI/testing/
//! sysfs-bus-event_source-devices-events), and perf prints the count times the scale in the
//! unit. A `power` PMU is made here as RAPL's driver (arch/x86/events/rapl.c) writes it, with
//! RAPL's scale for energy-pkg (2^-32 J) and an IMC's for a cas-read alias (2^-14 MiB, 64
//! bytes a count: uncore_snbep.c's cas_count_read), its type the msr PMU's and its events the
//! tsc, so that both count on any x86 machine; it is mounted over
//! /sys/bus/event_source/devices in a private mount namespace (`unshare -m`) beside this
//! machine's PMUs, and the C program and perf each count there.

use std::path::{Path, PathBuf};
use std::process::Command;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

use crate::common::c_program;

/// RAPL's energy unit on most Intel models (rapl.c: 2^-32 J, written `2.3283064365386962890625e-10`).
const JOULES_SCALE: &str = "2.3283064365386962890625e-10";
/// An IMC's CAS count in MiB (64 bytes a count: `6.103515625e-5`).
const MIB_SCALE: &str = "6.103515625e-5";

/// A devices directory holding this machine's PMUs and the made `power` PMU.
fn tree(msr_type: &str) -> PathBuf {
    let real = Path::new("/sys/bus/event_source/devices");
    let devices = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-units-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&devices);
    std::fs::create_dir_all(&devices).unwrap();
    for pmu in std::fs::read_dir(real).unwrap().flatten() {
        // The made `power` PMU takes the place of a real one (a kernel with RAPL's).
        if pmu.file_name() == "power" {
            continue;
        }
        let target = std::fs::read_link(pmu.path()).unwrap_or_else(|_| pmu.path());
        let target = real.join(target);
        std::os::unix::fs::symlink(target, devices.join(pmu.file_name())).unwrap();
    }
    let power = devices.join("power");
    for (file, text) in [
        ("type", msr_type),
        ("cpumask", "0\n"),
        ("format/event", "config:0-7\n"),
        ("events/energy-pkg", "event=0x00\n"),
        ("events/energy-pkg.unit", "Joules\n"),
        ("events/energy-pkg.scale", &format!("{JOULES_SCALE}\n")),
        ("events/cas-read", "event=0x00\n"),
        ("events/cas-read.unit", "MiB\n"),
        ("events/cas-read.scale", &format!("{MIB_SCALE}\n")),
    ] {
        let path = power.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    devices
}

/// Runs `command...` with `devices` mounted over the system's PMU directory.
fn mounted(devices: &Path, command: &[&str]) -> std::process::Output {
    Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount --bind "$1" /sys/bus/event_source/devices || exit 97; shift; exec "$@""#)
        .arg("sh")
        .arg(devices)
        .args(command)
        .env("LC_ALL", "C")
        .output()
        .expect("unshare (util-linux) runs")
}

#[test]
fn an_aliass_unit_and_scale_are_perfs() {
    let Ok(msr) = std::fs::read_to_string("/sys/bus/event_source/devices/msr/type") else {
        skip!(
            Need::System,
            "no msr PMU here to lend the made PMU its type"
        );
    };
    if !crate::c::running_as_root() {
        skip!(Need::Privilege, "mounting a PMU tree needs root");
    }
    if Command::new("perf").arg("version").output().is_err() {
        skip!(
            Need::Tools,
            "perf is not installed (apt-get install linux-perf)"
        );
    }
    let devices = tree(&msr);
    let program = c_program("units");
    let ours = mounted(&devices, &[program.to_str().unwrap()]);
    let ours_text = String::from_utf8_lossy(&ours.stdout).into_owned();
    assert!(
        ours.status.success(),
        "{ours_text}{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    // NAME UNIT SCALE COUNT SCALED
    let rows: Vec<Vec<&str>> = ours_text.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(rows.len(), 3, "{ours_text}");
    let expected = [
        ("power/energy-pkg/", "Joules", JOULES_SCALE),
        ("power/cas-read/", "MiB", MIB_SCALE),
        ("task-clock", "-", "1"),
    ];
    for (row, (name, unit, scale)) in rows.iter().zip(expected) {
        assert_eq!((row[0], row[1]), (name, unit), "{ours_text}");
        let scale: f64 = scale.parse().unwrap();
        assert_eq!(row[2].parse::<f64>().unwrap(), scale, "{ours_text}");
        let count: u64 = row[3].parse().unwrap();
        assert!(count > 0, "{name} counted nothing: {ours_text}");
        assert_eq!(row[4].parse::<f64>().unwrap(), count as f64 * scale);
    }

    // perf under the same tree: the unit it prints for each alias, and a scaled value that is
    // a whole number of counts times the same scale.
    let perf = mounted(
        &devices,
        &[
            "perf",
            "stat",
            "-a",
            "-x",
            ",",
            "-e",
            "power/energy-pkg/,power/cas-read/",
            "sleep",
            "0.02",
        ],
    );
    let perf_text = String::from_utf8_lossy(&perf.stderr).into_owned();
    assert!(perf.status.success(), "{perf_text}");
    println!("ours:\n{ours_text}perf 6.1:\n{perf_text}");
    for ((name, unit, scale), row) in expected[..2].iter().zip(&rows) {
        let line = perf_text
            .lines()
            .find(|l| l.split(',').nth(2) == Some(name))
            .unwrap_or_else(|| panic!("perf printed no {name}: {perf_text}"));
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields[1], *unit, "perf's unit for {name}: {line}");
        // perf's count is its scaled value over the same scale: the tsc over about the same
        // 20 ms as ours (perf's command takes a little longer; it prints two decimals).
        let perf_counts = fields[0].parse::<f64>().unwrap() / scale.parse::<f64>().unwrap();
        let ours_counts: f64 = row[3].parse().unwrap();
        let ratio = perf_counts / ours_counts;
        assert!(
            (0.4..5.0).contains(&ratio),
            "{name}: perf's {line} is {perf_counts} counts, ours {ours_counts}"
        );
    }
    let _ = std::fs::remove_dir_all(&devices);
}
