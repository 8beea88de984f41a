//! The shipped metric tables: each belongs to a model of the database, and every formula
//! parses (the failures are listed together).

use counterhal_events::{
    Database, SHIPPED_METRIC_FILES, expression, parse_metrics, shipped_metrics,
};

/// `shipped_metrics` reads a table's TOML alone (formulas are parsed when used): so every
/// shipped table must pass everything `parse_metrics` checks (names given once, formulas that
/// parse, finite scales, no metric reading itself through others), and read alike.
#[test]
fn every_shipped_table_passes_every_check() {
    for (name, model, text) in SHIPPED_METRIC_FILES {
        let checked = parse_metrics(name, text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Some(&checked), shipped_metrics(model).unwrap(), "{name}");
    }
}

#[test]
fn every_shipped_formula_parses() {
    let mut failures = Vec::new();
    let mut count = 0;
    for (name, _, text) in SHIPPED_METRIC_FILES {
        let table: toml::Table = toml::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        for metric in table["metric"].as_array().unwrap() {
            count += 1;
            let formula = metric["expression"].as_str().unwrap();
            if let Err(e) = expression::parse(formula) {
                failures.push(format!("{name}: {}: {e}: {formula}", metric["name"]));
            }
        }
    }
    assert!(count > 1000, "only {count} metrics shipped");
    assert!(
        failures.is_empty(),
        "{} of {count} formulas do not parse:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_shipped_table_loads_for_a_model_of_the_database() {
    let database = Database::shipped().unwrap();
    for (name, model, _) in SHIPPED_METRIC_FILES {
        let table = shipped_metrics(model)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap();
        assert_eq!(table.model, *model);
        assert!(!table.metrics.is_empty(), "{name}");
        assert!(
            database.model(model).is_some(),
            "{name}: no model `{model}` in the database"
        );
    }
    assert_eq!(shipped_metrics("no_such_model").unwrap(), None);
}

#[test]
fn the_top_down_level_one_is_there_where_the_model_has_it() {
    for model in ["skl", "spr"] {
        let table = shipped_metrics(model).unwrap().unwrap();
        let level_one: Vec<&str> = table
            .metrics
            .iter()
            .filter(|m| m.groups.iter().any(|g| g == "TopdownL1"))
            .map(|m| m.name.as_str())
            .collect();
        for share in [
            "Frontend_Bound",
            "Bad_Speculation",
            "Backend_Bound",
            "Retiring",
        ] {
            assert!(level_one.contains(&share), "{model}: {level_one:?}");
        }
    }
    let zen4 = shipped_metrics("amd64_fam19h_zen4").unwrap().unwrap();
    assert!(zen4.groups().contains(&"PipelineL1"), "{:?}", zen4.groups());
}
