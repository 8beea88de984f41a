//! The x86 models' uncore events by name (`UNC_M_CAS_COUNT.RD`, `l3_lookup_state.all_coherent_accesses_to_l3`):
//! each one's PMU and terms as perf's own generator writes them from the kernel's perf JSON
//! (`counterhal-gen uncore`), shipped with the `x86-models` feature. A name resolves to a
//! PMU event string (`uncore_imc/event=4,umask=3/`) that the PMU's sysfs description encodes,
//! on each of its boxes and CPUs.

pub(crate) mod compiled;
// The reader of the tables runs in `counterhal-gen tables`; the library's tests read them
// again to check the shipped rows.
#[cfg(any(feature = "table-writer", all(test, feature = "x86-models")))]
pub(crate) mod file;

pub use compiled::shipped_uncore_models;

use crate::database::Database;

/// One uncore event of a CPU model: the PMU perf sends it to and the terms perf builds for it
/// (the kernel's perf JSON, through perf's `jevents.py`), with the scale and unit of its count.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct UncoreEvent {
    /// Its name as the kernel's JSON spells it (`UNC_M_CAS_COUNT.RD`; perf takes any case).
    pub name: String,
    /// perf's name for its PMU (`uncore_imc`): the PMU itself or, for boxes
    /// (`uncore_imc_0`, `uncore_imc_1`), the kind every box of which has the event.
    pub pmu: &'static str,
    /// Its terms (`event=4,umask=3`), in the PMU's `format/` names.
    pub terms: String,
    /// What perf multiplies its count by, and the unit of the product (`64`, `Bytes`).
    pub scale: Option<(f64, &'static str)>,
    /// Marked deprecated in perf's table (perf lists it only with `--deprecated`).
    pub deprecated: bool,
}

impl UncoreEvent {
    fn from_compiled(event: compiled::Event) -> UncoreEvent {
        UncoreEvent {
            name: event.name(),
            pmu: event.pmu(),
            terms: event.terms(),
            scale: event.scale(),
            deprecated: event.deprecated(),
        }
    }

    /// The event in perf's PMU syntax on PMU `pmu` (its own, or one of its boxes), with
    /// `modifiers` (`u`, `k`; empty for none): `uncore_imc/event=4,umask=3/`.
    pub fn on_pmu(&self, pmu: &str, modifiers: &str) -> String {
        format!("{pmu}/{}/{modifiers}", self.terms)
    }
}

impl Database {
    /// The uncore events named `name` (ASCII case ignored) of CPU model `model` (an id or an
    /// alias): one per PMU that has it (mostly one). Empty for a name the model's uncore table
    /// lacks, a model without one, or a build without the `x86-models` feature.
    // Inlined, a build without the tables is seen to find none where it is called, and the
    // caller's code for what it finds is left out of the binary.
    #[inline]
    pub fn uncore_events(&self, model: &str, name: &str) -> Vec<UncoreEvent> {
        if !cfg!(feature = "x86-models") {
            return Vec::new();
        }
        self.uncore_events_in_tables(model, name)
    }

    fn uncore_events_in_tables(&self, model: &str, name: &str) -> Vec<UncoreEvent> {
        let model = self.model_id(model).unwrap_or(model);
        compiled::events(model)
            .filter(|e| e.is_named(name))
            .map(UncoreEvent::from_compiled)
            .collect()
    }

    /// Every uncore event of CPU model `model` (an id or an alias), sorted by name (ASCII case
    /// ignored); empty where [`uncore_events`](Database::uncore_events) would find none.
    pub fn uncore_table(&self, model: &str) -> Vec<UncoreEvent> {
        let model = self.model_id(model).unwrap_or(model);
        compiled::events(model)
            .map(UncoreEvent::from_compiled)
            .collect()
    }
}

// The shipped uncore tables come with the x86 models.
#[cfg(all(test, feature = "x86-models"))]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_perfs_pmu_and_terms() {
        let db = Database::shipped().unwrap();
        let found = db.uncore_events("skx", "unc_m_cas_count.rd");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "UNC_M_CAS_COUNT.RD");
        assert_eq!(
            found[0].on_pmu(found[0].pmu, ""),
            "uncore_imc/event=4,umask=3/"
        );
        assert_eq!(found[0].scale, None);
        let misses = db.uncore_events("hsw_ep", "llc_misses.data_read");
        assert_eq!(misses[0].scale, Some((64.0, "Bytes")));
        assert!(db.uncore_events("skylakex", "UNC_M_CAS_COUNT.RD").len() == 1);
        assert!(db.uncore_events("skx", "UNC_M_CAS_COUNT").is_empty());
        assert!(db.uncore_events("nosuch", "UNC_M_CAS_COUNT.RD").is_empty());
        // Haswell client's socket clock is on cbox 0 alone in Linux 7.2's JSON (6.12's also
        // put it on `uncore_clock`, a PMU the kernel registers from Alder Lake on).
        let clock = db.uncore_events("hsw", "UNC_CLOCK.SOCKET");
        let pmus: Vec<&str> = clock.iter().map(|e| e.pmu).collect();
        assert_eq!(pmus, ["uncore_cbox_0"]);
        // Linux 7.2's models: Zen 6's L3 and UMC, Clearwater Forest's CHA.
        assert_eq!(
            db.uncore_events("zen6", "l3_lookup_state.all_coherent_accesses_to_l3")[0].pmu,
            "amd_l3"
        );
        assert!(!db.uncore_events("cwf", "UNC_CHA_CLOCKTICKS").is_empty());
        let zen4 = db.uncore_table("zen4");
        assert!(zen4.iter().any(|e| e.pmu == "amd_umc"));
        let names: Vec<String> = zen4.iter().map(|e| e.name.to_ascii_lowercase()).collect();
        assert!(names.windows(2).all(|w| w[0] <= w[1]));
    }

    /// Every shipped table read again by the one reader gives exactly the shipped rows' events
    /// of its model, in order.
    #[test]
    fn the_compiled_rows_are_the_tables() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/generated/uncore");
        let db = Database::shipped().unwrap();
        let mut tables = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let table = file::read(&path.display().to_string(), &text).unwrap();
            let model = crate::model_aliases::model_for_alias(&table.directory).unwrap();
            // (name, PMU, terms, scale and unit, deprecated), in the build's order.
            type Row = (String, String, String, Option<(f64, String)>, bool);
            let mut expected: Vec<Row> = table
                .pmus
                .iter()
                .flat_map(|pmu| {
                    pmu.events.iter().map(|e| {
                        // The build's split of names and terms reads back as written.
                        let (base, suffix) = file::split_name(&e.name);
                        assert_eq!(format!("{base}{suffix}"), e.name);
                        let rest = match file::split_code(&e.terms) {
                            (Some(code), "") => format!("event={}", file::llx(code.into())),
                            (Some(code), rest) => {
                                format!("event={},{rest}", file::llx(code.into()))
                            }
                            (None, rest) => rest.to_string(),
                        };
                        assert_eq!(rest, e.terms);
                        let scale = e.scale.zip(e.unit.clone());
                        let terms = e.terms.clone();
                        (e.name.clone(), pmu.name.clone(), terms, scale, e.deprecated)
                    })
                })
                .collect();
            expected.sort_by_key(|e| (e.0.to_ascii_lowercase(), e.1.clone()));
            let got: Vec<Row> = db
                .uncore_table(model)
                .into_iter()
                .map(|e| {
                    let scale = e.scale.map(|(s, u)| (s, u.to_string()));
                    (e.name, e.pmu.to_string(), e.terms, scale, e.deprecated)
                })
                .collect();
            assert!(
                got == expected,
                "{model}: the compiled rows differ from the table"
            );
            tables += 1;
        }
        assert_eq!(tables, shipped_uncore_models().len());
    }

    #[test]
    fn the_rows_are_shared_between_models() {
        let (rows, runs) = compiled::row_and_run_counts();
        let events: usize = shipped_uncore_models()
            .iter()
            .map(|m| compiled::events(m).count())
            .sum();
        assert!(rows < events, "{rows} rows for {events} events");
        assert!(runs < events / 10, "{runs} runs for {events} events");
    }
}
