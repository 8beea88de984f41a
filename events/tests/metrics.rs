//! The shipped metric tables: each belongs to a model of the database, and every formula
//! parses (the failures are listed together).

use counterhal_events::{
    Database, expression, parse_metrics, shipped_metric_models, shipped_metrics,
};

/// Each model with shipped metrics, with its table's file name and text as shipped in the
/// source tree (`counterhal-gen tables` wrote that file into the shipped tables).
fn shipped_files() -> Vec<(String, &'static str, String)> {
    shipped_metric_models()
        .into_iter()
        .map(|model| {
            let name = format!("data/generated/metrics/{model}.toml");
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&name);
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, model, text)
        })
        .collect()
}

/// Every shipped table passes everything `parse_metrics` checks (names given once, formulas
/// that parse, finite scales, no metric reading itself through others), and its shipped
/// form is what `parse_metrics` reads of its file.
#[test]
fn every_shipped_table_passes_every_check() {
    for (name, model, text) in shipped_files() {
        let checked = parse_metrics(&name, &text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Some(&checked), shipped_metrics(model).unwrap(), "{name}");
    }
}

#[test]
fn every_shipped_formula_parses() {
    let mut failures = Vec::new();
    let mut count = 0;
    for (name, _, text) in shipped_files() {
        let table: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
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
    for (name, model, _) in shipped_files() {
        let table = shipped_metrics(model)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap();
        assert_eq!(table.model, model);
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
            .map(|m| &*m.name)
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
