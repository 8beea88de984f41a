//! A PMU's `events/<name>` files: an alias's terms (`event=0x05,umask=0xcf`) and the files
//! beside it that say how perf shows its count: `.scale` (a factor), `.unit` (`MiB`,
//! `Joules`), `.snapshot` (the count is a reading, not a sum) and `.per-pkg` (one count per
//! package).

use std::fs;
use std::path::Path;

/// One event alias of a PMU, with its companion files.
#[derive(Clone, Debug, PartialEq)]
pub struct Alias {
    /// Its name, as the file is named (`cas_count_read`).
    pub name: String,
    /// Its terms (`event=0x05,umask=0xcf`).
    pub terms: String,
    /// The factor a count is multiplied by (`<name>.scale`), where the file exists and reads as
    /// a number.
    pub scale: Option<f64>,
    /// What the scaled count is in (`<name>.unit`).
    pub unit: Option<String>,
    /// Whether the count is a reading of a value rather than a sum (`<name>.snapshot` holds 1).
    pub snapshot: bool,
    /// Whether the count is the package's, to be taken from one CPU of each
    /// (`<name>.per-pkg` holds 1).
    pub per_pkg: bool,
}

impl Alias {
    /// Reads alias `name` from the `events` directory `dir`, if it exists.
    pub(crate) fn read(dir: &Path, name: &str) -> Option<Alias> {
        let text = |suffix: &str| {
            fs::read_to_string(dir.join(format!("{name}{suffix}")))
                .ok()
                .map(|t| t.trim().to_string())
        };
        let flag = |suffix: &str| text(suffix).is_some_and(|t| t == "1");
        Some(Alias {
            terms: text("")?,
            scale: text(".scale").and_then(|s| s.parse().ok()),
            unit: text(".unit").filter(|u| !u.is_empty()),
            snapshot: flag(".snapshot"),
            per_pkg: flag(".per-pkg"),
            name: name.to_string(),
        })
    }

    /// Whether it says how to show its count (a scale, a unit, a snapshot or per-package
    /// flag).
    pub fn shows(&self) -> bool {
        self.scale.is_some() || self.unit.is_some() || self.snapshot || self.per_pkg
    }
}

/// Whether `file` in an `events` directory is an alias (not a `.scale`, `.unit`, `.snapshot`
/// or `.per-pkg` companion).
pub(crate) fn is_alias_file(file: &str) -> bool {
    !file.contains('.') && !file.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn companions() {
        let dir = std::env::temp_dir().join(format!("counterhal-alias-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for (file, text) in [
            ("energy-pkg", "event=0x02\n"),
            ("energy-pkg.scale", "2.3283064365386962890625e-10\n"),
            ("energy-pkg.unit", "Joules\n"),
            ("therm", "event=0x07"),
            ("therm.snapshot", "1\n"),
            ("llc", "event=0x01"),
            ("llc.per-pkg", "1"),
            ("llc.scale", "not a number"),
        ] {
            fs::write(dir.join(file), text).unwrap();
        }
        let pkg = Alias::read(&dir, "energy-pkg").unwrap();
        assert_eq!(pkg.terms, "event=0x02");
        assert_eq!(pkg.scale, Some(2f64.powi(-32)));
        assert_eq!(pkg.unit.as_deref(), Some("Joules"));
        assert!(!pkg.snapshot && !pkg.per_pkg && pkg.shows());
        let therm = Alias::read(&dir, "therm").unwrap();
        assert!(therm.snapshot && therm.scale.is_none() && therm.shows());
        let llc = Alias::read(&dir, "llc").unwrap();
        assert!(llc.per_pkg && llc.scale.is_none());
        assert!(Alias::read(&dir, "absent").is_none());
        assert!(is_alias_file("energy-pkg") && !is_alias_file("energy-pkg.unit"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
