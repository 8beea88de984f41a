//! A PMU's `events/<name>` files: an alias's terms (`event=0x05,umask=0xcf`) and the files
//! beside it that say how perf shows its count: `.scale` (a factor), `.unit` (`MiB`,
//! `Joules`), `.snapshot` (the count is a reading, not a sum) and `.per-pkg` (one count per
//! package).

use std::path::Path;

use counterhal_events::parse_term_list;
use counterhal_hal::{Error, Result};

use counterhal_system::PmuDevice;

use super::refused::refused;

/// The longest unit perf 6.1 reads from a `.unit` file (its `UNIT_MAX_LEN`, 31 bytes, in
/// tools/perf/util/pmu.c).
const UNIT_MOST_BYTES: usize = 31;

/// The largest scale: one that keeps every count's product finite (a 64-bit count, at most
/// 2^64, times it stays below `f64::MAX`).
const SCALE_MOST: f64 = f64::MAX / 18_446_744_073_709_551_616.0;

/// [`SCALE_MOST`] as `{:e}` writes it, written here so that the refusal does not build Rust's
/// float formatting (17 KB) into every program that reads a scale (a test holds the two equal).
const SCALE_MOST_TEXT: &str = "9.745314011399998e288";

/// One event alias of a PMU, with its companion files.
#[derive(Clone, Debug, PartialEq)]
pub struct Alias {
    /// Its name, as the file is named (`cas_count_read`).
    pub name: String,
    /// Its terms (`event=0x05,umask=0xcf`).
    pub terms: String,
    /// The factor a count is multiplied by (`<name>.scale`), where the file exists: a finite
    /// positive number no count times it overflows.
    pub scale: Option<f64>,
    /// The scale as the kernel wrote it (`2.3283064365386962890625e-10`), what a listing shows.
    pub scale_text: Option<String>,
    /// What the scaled count is in (`<name>.unit`).
    pub unit: Option<String>,
    /// Whether the count is a reading of a value rather than a sum (`<name>.snapshot` holds 1).
    pub snapshot: bool,
    /// Whether the count is the package's, to be taken from one CPU of each
    /// (`<name>.per-pkg` holds 1).
    pub per_pkg: bool,
}

impl Alias {
    /// Reads alias `name` of the PMU `pmu` (its `events/<name>` and the companions), if it
    /// exists.
    ///
    /// # Errors
    /// [`counterhal_hal::ErrorKind::InvalidInput`] for a file that breaks the system's reading
    /// rule (`counterhal_system::Refused`), terms that are no term list
    /// (`event=0x3c,umask=0x1`), a scale that is not a finite positive number (or so large a
    /// count times it overflows), and a unit longer than perf reads or with characters other
    /// than printable ones. The message names the file, never what it holds.
    pub(crate) fn read(pmu: &PmuDevice, name: &str) -> Result<Option<Alias>> {
        let dir = pmu.dir().join("events");
        let path = |suffix: &str| dir.join(format!("{name}{suffix}"));
        let Some(files) = pmu.alias(name).map_err(refused)? else {
            return Ok(None);
        };
        if !is_term_list(&files.terms) {
            return Err(bad(
                &path(""),
                "is not a list of terms (`event=0x3c,umask=0x1`: names, each with a number or \
                 none)",
            ));
        }
        let scale = match &files.scale {
            Some(scale) => Some(checked_scale(&path(".scale"), scale)?),
            None => None,
        };
        if let Some(unit) = &files.unit
            && (unit.len() > UNIT_MOST_BYTES || unit.chars().any(|c| c.is_control()))
        {
            return Err(bad(
                &path(".unit"),
                format!(
                    "is not a unit (at most {UNIT_MOST_BYTES} bytes of printable characters, \
                     as `Joules` or `MiB`)"
                ),
            ));
        }
        Ok(Some(Alias {
            terms: files.terms,
            scale,
            scale_text: files.scale,
            unit: files.unit,
            snapshot: files.snapshot,
            per_pkg: files.per_pkg,
            name: name.to_string(),
        }))
    }

    /// Whether it says how to show its count (a scale, a unit, a snapshot or per-package
    /// flag).
    pub fn shows(&self) -> bool {
        self.scale.is_some() || self.unit.is_some() || self.snapshot || self.per_pkg
    }
}

/// Whether `terms` is a term list as the kernel writes an alias: names of letters, digits,
/// `_` and `-`, each with a number or none (`event=0x3c,umask=0x1`).
fn is_term_list(terms: &str) -> bool {
    terms.chars().all(|c| c.is_ascii_graphic())
        && parse_term_list(terms).is_ok_and(|list| {
            list.iter().all(|(name, _)| {
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
            })
        })
}

/// The scale a `.scale` file at `path` holds, where it is one a count may be multiplied by.
fn checked_scale(path: &Path, text: &str) -> Result<f64> {
    let Ok(scale) = text.parse::<f64>() else {
        return Err(bad(
            path,
            "is not a number (a scale such as 2.3283064365386962890625e-10)",
        ));
    };
    let why = if !scale.is_finite() {
        "is not finite"
    } else if scale <= 0.0 {
        "is not positive"
    } else if scale > SCALE_MOST {
        "is so large that a count times it overflows"
    } else {
        return Ok(scale);
    };
    Err(bad(
        path,
        format!("{why}: a scale is a finite positive number, at most {SCALE_MOST_TEXT}"),
    ))
}

/// The refusal of an alias file at `path` whose contents no kernel writes there.
fn bad(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::invalid_input(format!("{} {why}", path.display())).with_hint(
        "the kernel writes an alias's terms, scale and unit as its PMU driver defines them",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmus::Pmu;
    use counterhal_system::PmuDevices;
    use std::fs;
    use std::path::PathBuf;

    /// A PMU directory `pmu` whose `events/` holds `files` (name, text) under the temporary
    /// directory, and the PMU.
    fn events(tag: &str, files: &[(&str, &str)]) -> (PathBuf, Pmu) {
        let dir =
            std::env::temp_dir().join(format!("counterhal-alias-{tag}-{}", std::process::id()));
        fs::create_dir_all(dir.join("pmu/events")).unwrap();
        fs::write(dir.join("pmu/type"), "9\n").unwrap();
        for (file, text) in files {
            fs::write(dir.join("pmu/events").join(file), text).unwrap();
        }
        let pmu = Pmu::named(&PmuDevices::at(&dir), "pmu").unwrap();
        (dir, pmu)
    }

    /// Oracle: Rust's own `{:e}` formatting of the bound, which the refusal spelled before.
    #[test]
    fn the_largest_scale_is_written_as_rust_writes_it() {
        assert_eq!(SCALE_MOST_TEXT, format!("{SCALE_MOST:e}"));
        assert_eq!(SCALE_MOST_TEXT.parse::<f64>(), Ok(SCALE_MOST));
    }

    #[test]
    fn companions() {
        let (dir, pmu) = events(
            "companions",
            &[
                ("energy-pkg", "event=0x02\n"),
                ("energy-pkg.scale", "2.3283064365386962890625e-10\n"),
                ("energy-pkg.unit", "Joules\n"),
                ("therm", "event=0x07"),
                ("therm.snapshot", "1\n"),
                ("llc", "event=0x01"),
                ("llc.per-pkg", "1"),
            ],
        );
        let read = |name: &str| Alias::read(pmu.device(), name).unwrap();
        let pkg = read("energy-pkg").unwrap();
        assert_eq!(pkg.terms, "event=0x02");
        assert_eq!(pkg.scale, Some(2f64.powi(-32)));
        assert_eq!(pkg.unit.as_deref(), Some("Joules"));
        assert!(!pkg.snapshot && !pkg.per_pkg && pkg.shows());
        let therm = read("therm").unwrap();
        assert!(therm.snapshot && therm.scale.is_none() && therm.shows());
        let llc = read("llc").unwrap();
        assert!(llc.per_pkg && llc.scale.is_none());
        assert!(read("absent").is_none());
        assert_eq!(pmu.alias_names(), ["energy-pkg", "llc", "therm"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Every `.scale` a count is multiplied by is finite and positive, and small enough that
    /// no count times it overflows; a bad one (perf 6.1 printed `nan`, `-1` and `1e308` as
    /// factors) is refused naming the file and what a scale is, never what the file holds;
    /// so are terms that are no term list and a unit perf would not read. Oracle: the kernel's
    /// scales, as the machine trees hold them (rapl.c's 2.3283064365386962890625e-10,
    /// uncore_snbep.c's 6.103515625e-5), each taken; perf 6.1's `UNIT_MAX_LEN` (31).
    #[test]
    fn a_scale_is_finite_and_positive_and_terms_are_terms() {
        let machines = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/machines");
        let mut kernel_scales = 0;
        for machine in fs::read_dir(&machines).unwrap().flatten() {
            let devices = PmuDevices::at(&machine.path().join("bus/event_source/devices"));
            for name in super::super::list_pmus(&devices) {
                let Some(pmu) = Pmu::named(&devices, &name) else {
                    continue;
                };
                for name in pmu.alias_names() {
                    // The system's reading of the files, raw, as the oracle of what is there.
                    let raw = pmu.device().alias(&name).ok().flatten();
                    if raw.is_none_or(|raw| raw.scale.is_none()) {
                        continue;
                    }
                    let alias = Alias::read(pmu.device(), &name);
                    let scale = alias.as_ref().ok().and_then(|a| a.as_ref()?.scale);
                    assert!(scale.is_some(), "{}/{name}: {alias:?}", pmu.dir.display());
                    kernel_scales += 1;
                }
            }
        }
        assert!(kernel_scales >= 20, "{kernel_scales} scales in the trees");

        let secret = "hunter2-secret";
        let cases = [
            ("nan", "nan", "is not finite"),
            ("inf", "inf", "is not finite"),
            ("negative", "-1", "is not positive"),
            ("zero", "0", "is not positive"),
            ("huge", "1e308", "is so large"),
            ("word", secret, "is not a number"),
        ];
        let mut files: Vec<(String, String)> = Vec::new();
        for (name, scale, _) in cases {
            files.push((name.to_string(), "event=0x1".to_string()));
            files.push((format!("{name}.scale"), format!("{scale}\n")));
        }
        files.push(("terms".into(), format!("{secret}:x")));
        files.push(("spaced".into(), "event=0x1, umask=2 x".into()));
        files.push(("unit".into(), "event=0x1".into()));
        files.push(("unit.unit".into(), "\u{1b}[31mJoules".into()));
        files.push(("longunit".into(), "event=0x1".into()));
        files.push(("longunit.unit".into(), "J".repeat(32)));
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(f, t)| (f.as_str(), t.as_str()))
            .collect();
        let (dir, pmu) = events("bad", &borrowed);
        let refusal = |name: &str| match Alias::read(pmu.device(), name) {
            Err(error) => error.to_string(),
            other => panic!("{name}: {other:?}"),
        };
        for (name, _, why) in cases {
            let message = refusal(name);
            assert!(
                message.contains(&format!("{name}.scale {why}")),
                "{name}: {message}"
            );
            assert!(message.contains("finite positive number") || why == "is not a number");
            assert!(!message.contains(secret), "{message}");
        }
        for name in ["terms", "spaced"] {
            let message = refusal(name);
            assert!(
                message.contains("is not a list of terms"),
                "{name}: {message}"
            );
            assert!(!message.contains(secret), "{message}");
        }
        for name in ["unit", "longunit"] {
            assert!(refusal(name).contains("is not a unit"), "{name}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
