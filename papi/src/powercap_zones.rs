//! The powercap class's zones as PAPI's `powercap` component lists them: each zone's events
//! (`ENERGY_UJ:ZONE0`, `NAME:ZONE0_SUBZONE1`, and the `rapl` component's names its energy
//! counters give), the files they read, and what an energy counter counts across a wrap.
//!
//! Zones are read through [`System`] by its rules for a tree that may be hostile: a link is
//! followed only where it stays inside the tree, only regular files of at most a page are
//! read (never a FIFO or a device), and a file refused so is no event.

use counterhal_system::{RaplAttribute, RaplZone, System};

/// A package zone's events: PAPI's name and the file.
const PACKAGE_EVENTS: [(&str, RaplAttribute); 10] = [
    ("ENERGY_UJ", RaplAttribute::Energy),
    ("MAX_ENERGY_RANGE_UJ", RaplAttribute::MaxEnergyRange),
    ("MAX_POWER_A_UW", RaplAttribute::MaxPower(0)),
    ("POWER_LIMIT_A_UW", RaplAttribute::PowerLimit(0)),
    ("TIME_WINDOW_A_US", RaplAttribute::TimeWindow(0)),
    ("MAX_POWER_B_UW", RaplAttribute::MaxPower(1)),
    ("POWER_LIMIT_B_UW", RaplAttribute::PowerLimit(1)),
    ("TIME_WINDOW_B", RaplAttribute::TimeWindow(1)),
    ("ENABLED", RaplAttribute::Enabled),
    ("NAME", RaplAttribute::Name),
];

/// A subzone's events (the package's but the second constraint).
const SUBZONE_EVENTS: [(&str, RaplAttribute); 7] = [
    ("ENERGY_UJ", RaplAttribute::Energy),
    ("MAX_ENERGY_RANGE_UJ", RaplAttribute::MaxEnergyRange),
    ("MAX_POWER_A_UW", RaplAttribute::MaxPower(0)),
    ("POWER_LIMIT_A_UW", RaplAttribute::PowerLimit(0)),
    ("TIME_WINDOW_A_US", RaplAttribute::TimeWindow(0)),
    ("ENABLED", RaplAttribute::Enabled),
    ("NAME", RaplAttribute::Name),
];

/// One event: its name after `powercap:::` (or `rapl:::`), its file, its description, and
/// for an energy event the value its counter wraps at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneEvent {
    /// `ENERGY_UJ:ZONE0`, `NAME:ZONE0_SUBZONE1`; for a name of PAPI's `rapl` component,
    /// `PACKAGE_ENERGY:PACKAGE0`.
    pub name: String,
    /// Whether it is a name of PAPI's `rapl` component (`rapl:::`), read from its zone's
    /// energy in nanojoules, as that component gives it; such names are not listed.
    pub rapl: bool,
    /// The zone's name (`package-0`, `core`, `dram`).
    pub zone: String,
    /// The zone whose file is read (`None`: none, an event of a test's), in the sysfs tree
    /// of `/sys` or `COUNTERHAL_SYSFS`: see the module's rules.
    pub source: Option<RaplZone>,
    /// The file read (`energy_uj`).
    pub file: RaplAttribute,
    /// The zone's name for a `NAME` event; empty for the others, as PAPI's.
    pub description: String,
    /// For an energy event, `max_energy_range_uj` of its zone (0 where unreadable).
    pub wraps_at: Option<i64>,
}

/// The number a file holds, as PAPI reads it (`atoll`: leading digits, 0 for none).
pub fn number(text: &str) -> i64 {
    let text = text.trim_start();
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse::<i64>().map_or(0, |n| sign * n)
}

/// The value of `event`'s file now (0 where it cannot be read, as PAPI's `atoll` of
/// nothing).
pub fn value(event: &ZoneEvent) -> i64 {
    let text = event
        .source
        .as_ref()
        .and_then(|zone| zone.attribute(event.file).ok()?);
    text.map_or(0, |text| number(&text))
}

/// The events of the zones in `system`'s powercap class (its sysfs is `/sys`, or
/// `COUNTERHAL_SYSFS`) for sockets `0..sockets`, in PAPI's order.
pub fn discover(system: &System, sockets: i32) -> Vec<ZoneEvent> {
    let mut events = Vec::new();
    let mut zone = |zone: RaplZone, suffix: String, table: &[(&str, RaplAttribute)]| {
        let zone_name = zone.name().unwrap_or_default();
        for (event, file) in table {
            // A file the tree's rules refuse (a link out, a FIFO, a device, too long) is no
            // event; one that exists but cannot be read (root's only) is, reading 0.
            let text = match zone.attribute(*file) {
                Err(_) => continue,
                Ok(None) if !zone.has(*file) => continue,
                Ok(text) => text.unwrap_or_default(),
            };
            let description = match *event {
                "NAME" => text,
                _ => String::new(),
            };
            let wraps_at = (*event == "ENERGY_UJ").then(|| {
                zone.attribute(RaplAttribute::MaxEnergyRange)
                    .ok()
                    .flatten()
                    .map_or(0, |text| number(&text))
            });
            events.push(ZoneEvent {
                name: format!("{event}:{suffix}"),
                rapl: false,
                zone: zone_name.clone(),
                wraps_at,
                source: Some(zone.clone()),
                file: *file,
                description,
            });
        }
    };
    for socket in 0..sockets.max(1) as u32 {
        let Some(package) = system.rapl_zone(socket, None) else {
            continue;
        };
        zone(package, format!("ZONE{socket}"), &PACKAGE_EVENTS);
        for sub in 0.. {
            let Some(dir) = system.rapl_zone(socket, Some(sub)) else {
                break;
            };
            zone(dir, format!("ZONE{socket}_SUBZONE{sub}"), &SUBZONE_EVENTS);
        }
    }
    let rapl = rapl_names(&events);
    events.extend(rapl);
    events
}

/// The names of PAPI's `rapl` component that the zones' energy counters give, in nanojoules:
/// `PACKAGE_ENERGY:PACKAGES` (a `package-S` zone), `PP0_ENERGY` (its `core` subzone),
/// `PP1_ENERGY` (`uncore`, the client chips' graphics), `DRAM_ENERGY` (`dram`).
fn rapl_names(events: &[ZoneEvent]) -> Vec<ZoneEvent> {
    let mut names = Vec::new();
    for event in events.iter().filter(|e| e.wraps_at.is_some()) {
        // ENERGY_UJ:ZONES or ENERGY_UJ:ZONES_SUBZONEC: the socket is S.
        let socket: String = event.name["ENERGY_UJ:ZONE".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let rapl = match event.zone.as_str() {
            zone if zone.starts_with("package-") => "PACKAGE_ENERGY",
            "core" => "PP0_ENERGY",
            "uncore" => "PP1_ENERGY",
            "dram" => "DRAM_ENERGY",
            _ => continue,
        };
        names.push(ZoneEvent {
            name: format!("{rapl}:PACKAGE{socket}"),
            rapl: true,
            description: String::new(),
            ..event.clone()
        });
    }
    names
}

/// What an event reads: an energy counter's microjoules since `start` (across one wrap at
/// its range; nanojoules for a `rapl` name), any other event's value.
pub fn count(event: &ZoneEvent, start: i64, current: i64) -> i64 {
    let factor = if event.rapl { 1000 } else { 1 };
    match event.wraps_at {
        Some(range) if current < start => (current + (range - start)) * factor,
        Some(_) => (current - start) * factor,
        None => current,
    }
}
