//! `--metric-only`: the metrics alone, one column each, as perf prints them: a heading of
//! their units, then one row per stretch (the whole run, each interval) and place, in the
//! table, `-x` and `-j`.

use std::fmt::Write as _;

use super::default_metrics::{default_metric, generic_metric, rate_factor};
use super::metrics::{Beside, Style};
use super::separated::interval_time;
use super::summary::{PlaceSummary, Section, Summary};
use super::thresholds;
use super::topology::{cpus_heading, label_width};
use crate::stat::measure::results::Place;
use crate::stat::report::{MetricWords, Report};
use counterhal::metrics::Machine;
use counterhal::metrics::{MetricDef, Threshold, classify, evaluate};

/// The width of a column of the table (perf's).
const COLUMN: usize = 20;

/// One metric of a row: its unit and its value as the table writes it and as `-x`/`-j` do
/// (`None`: not counted).
struct Cell {
    unit: String,
    table: String,
    digits: Option<String>,
    /// How the value stands against its metric's threshold (the table's colour).
    threshold: Option<Threshold>,
}

/// Makes every row's rates use the unit of the first row's column (a column has one unit in
/// its heading; perf picks a prefix per value, so rows may differ).
fn same_units(rows: &mut [(&Section, &PlaceSummary, Vec<Cell>)]) {
    let Some((_, _, first)) = rows.first() else {
        return;
    };
    let heads: Vec<String> = first.iter().map(|c| c.unit.clone()).collect();
    for (_, _, cells) in rows.iter_mut() {
        for (cell, head) in cells.iter_mut().zip(&heads) {
            let (Some(to), Some(from)) = (rate_factor(head), rate_factor(&cell.unit)) else {
                continue;
            };
            if let Some(value) = cell.digits.as_ref().and_then(|d| d.parse::<f64>().ok()) {
                let value = value * from / to;
                cell.digits = Some(format!("{value:.3}"));
                cell.table = format!("{value:.3}");
                cell.unit = head.clone();
            }
        }
    }
}

/// The metrics of one place in one stretch: each event's metric column (in `words`), then
/// each `-M` metric, its number as perf 7.2's `generic_metric` prints it (`nan` in the table
/// where its events did not count; `-x` leaves it empty, as perf does).
fn cells(
    system: &Machine,
    place: &PlaceSummary,
    length_ns: u64,
    metrics: &[&'static MetricDef],
    words: MetricWords,
) -> Vec<Cell> {
    let beside = Beside::new(&place.events);
    let mut cells: Vec<Cell> = (0..place.events.len())
        .filter_map(|index| Some((index, beside.metric(index, length_ns)?)))
        .filter_map(|(index, m)| match words {
            // perf 7.2's default metric: its words heading the column, its digits.
            MetricWords::Perf72Defaults => {
                let (value, decimals, unit) = default_metric(&place.events[index].name, &m)?;
                let digits = format!("{value:.decimals$}");
                Some(Cell {
                    table: digits.clone(),
                    digits: Some(digits),
                    unit,
                    threshold: None,
                })
            }
            MetricWords::Perf61 => Some(Cell {
                table: match m.style {
                    Style::Percent => format!("{:.2}%", m.value),
                    _ => m.digits(),
                },
                digits: Some(m.digits()),
                unit: m.unit,
                threshold: None,
            }),
        })
        .collect();
    for def in metrics {
        let value = evaluate(system, def, &place.events, length_ns);
        let number = generic_metric(value, def.unit).trim_start().to_string();
        cells.push(Cell {
            unit: heading(def),
            digits: value.filter(|v| !v.is_nan()).map(|_| number.clone()),
            table: number,
            threshold: value.and_then(|_| classify(system, def, &place.events, length_ns)),
        });
    }
    cells
}

/// A `-M` metric's heading: a model's metric (perf's JSON) by its unit and name, as perf's
/// `generic_metric` heads it (`%  tma_retiring`, the name alone where there is no unit:
/// tools/perf/util/stat-shadow.c, perf 6.1 and 7.2), so that two metrics of one unit keep
/// two columns and two `-j` keys; a portable one (perf's own shadow metrics) by its unit,
/// which names it (`% frontend bound`).
fn heading(def: &MetricDef) -> String {
    match (def.model, def.unit) {
        (None, unit) => unit.to_string(),
        (Some(_), "") => def.name.to_string(),
        (Some(_), unit) => format!("{unit}  {}", def.name),
    }
}

/// How many CPUs a place added up (`--per-socket`...: its most widely counted event's, as
/// perf 6.1 and 7.2 print it after the label); `None` for other places.
fn added(place: &Place) -> Option<u32> {
    match place {
        Place::Aggregate { cpus, .. } => cpus.iter().copied().max(),
        _ => None,
    }
}

/// Each row: the section, the place and its cells.
fn rows<'a>(
    summary: &'a Summary,
    metrics: &[&'static MetricDef],
    words: MetricWords,
) -> Vec<(&'a Section, &'a PlaceSummary, Vec<Cell>)> {
    let mut rows: Vec<_> = summary
        .sections
        .iter()
        .flat_map(|section| {
            section.places.iter().map(move |place| {
                let cells = cells(&summary.system, place, section.length_ns, metrics, words);
                (section, place, cells)
            })
        })
        .collect();
    same_units(&mut rows);
    rows
}

/// The table's body: the heading of units (after the time and place columns; beside perf's
/// default events, perf 7.2's default metrics' words, as the table's metric column has them),
/// then the rows, each classified value in its threshold's colour when the report colours.
pub fn table(out: &mut String, report: &Report, summary: &Summary) {
    let rows = rows(summary, &report.metrics, report.words);
    let colour = report.colour;
    let Some((first_section, first_place, first)) = rows.first() else {
        return;
    };
    let mut heading = String::new();
    if first_section.at_ns.is_some() {
        heading.push_str("#           time ");
    }
    match &first_place.place {
        Some(place) if place.is_aggregate() => {
            _ = write!(heading, "{:<1$}", "", label_width(place.json_field().0) + 5);
        }
        Some(_) => _ = write!(heading, "{:<11}", ""),
        None => {}
    }
    for cell in first {
        _ = write!(heading, "{:>COLUMN$} ", cell.unit);
    }
    _ = writeln!(out, "{}", heading.trim_end());
    for (section, place, cells) in &rows {
        let mut line = String::new();
        if let Some(at_ns) = section.at_ns {
            _ = write!(line, "{} ", interval_time(at_ns));
        }
        match place.place.as_ref().map(|p| (p, added(p))) {
            Some((place, Some(cpus))) => {
                let width = label_width(place.json_field().0);
                _ = write!(line, "{:<width$}{cpus:>4} ", place.label());
            }
            Some((place, None)) => _ = write!(line, "{:<11}", place.label()),
            None => {}
        }
        for cell in cells {
            // perf pads before the colour (print_metric_only).
            let pad = COLUMN.saturating_sub(cell.table.chars().count());
            let value = thresholds::painted(&cell.table, cell.threshold, colour);
            _ = write!(line, "{:pad$}{value} ", "");
        }
        _ = writeln!(out, "{}", line.trim_end());
    }
}

/// `-x SEP`: a heading of the units (after `time` and the place, with `-I`, `-A`..., and the
/// number of CPUs added up, with `--per-socket`...), then
/// one line of values per row (empty where not counted); each field ends with SEP, the last
/// too, as perf 6.1's and 7.2's `print_metric_only_csv` and `print_metric_header` end them.
pub fn csv(out: &mut String, separator: &str, summary: &Summary, metrics: &[&'static MetricDef]) {
    let rows = rows(summary, metrics, MetricWords::Perf61);
    let Some((first_section, first_place, first)) = rows.first() else {
        return;
    };
    let mut heading: Vec<String> = Vec::new();
    if first_section.at_ns.is_some() {
        heading.push(format!("{:>16}", "time"));
    }
    if let Some(place) = &first_place.place {
        let key = place.json_field().0;
        heading.push(key.to_string());
        if place.is_aggregate() {
            heading.push(cpus_heading(key).to_string());
        }
    }
    heading.extend(first.iter().map(|c| c.unit.clone()));
    _ = writeln!(out, "{}{separator}", heading.join(separator));
    for (section, place, cells) in &rows {
        let mut fields: Vec<String> = Vec::new();
        if let Some(at_ns) = section.at_ns {
            fields.push(interval_time(at_ns));
        }
        if let Some(place) = &place.place {
            fields.push(place.label());
            fields.extend(added(place).map(|n| n.to_string()));
        }
        fields.extend(cells.iter().map(|c| c.digits.clone().unwrap_or_default()));
        _ = writeln!(out, "{}{separator}", fields.join(separator));
    }
}

/// `-j`: one object per row, each metric's unit its key and its value a number (perf's
/// `{"CPUs utilized" : 0.440, ...}`), after `interval`, the place and, where CPUs were added
/// up, `counters` (perf 7.2's key).
pub fn json_lines(out: &mut String, summary: &Summary, metrics: &[&'static MetricDef]) {
    for (section, place, cells) in rows(summary, metrics, MetricWords::Perf61) {
        let mut fields: Vec<String> = Vec::new();
        if let Some(at_ns) = section.at_ns {
            fields.push(format!(
                "\"interval\" : {}",
                interval_time(at_ns).trim_start()
            ));
        }
        if let Some(place) = &place.place {
            let (key, value) = place.json_field();
            fields.push(format!("\"{key}\" : {}", serde_json::Value::from(value)));
            if let Some(cpus) = added(place) {
                fields.push(format!("\"counters\" : {cpus}"));
            }
        }
        for cell in cells {
            let value = cell.digits.unwrap_or_else(|| "null".to_string());
            fields.push(format!("{} : {value}", serde_json::Value::from(cell.unit)));
        }
        _ = writeln!(out, "{{{}}}", fields.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::arguments::parse;
    use crate::stat::report::summary::tests::run;

    /// A report of `--metric-only` in `words`, without colour.
    fn report(words: MetricWords) -> Report {
        let args = parse(&["--metric-only", "true"]).unwrap();
        Report {
            words,
            colour: false,
            ..Report::of(&args, &[])
        }
    }

    fn one_run() -> Summary {
        Summary::of(
            crate::stat::plan::machine_here(),
            &[run(
                &[
                    ("task-clock", Some(500_000_000)),
                    ("page-faults", Some(1_000)),
                    ("cycles", None),
                ],
                1_000_000_000,
            )],
        )
    }

    #[test]
    fn the_table_has_a_column_per_metric() {
        let mut out = String::new();
        table(&mut out, &report(MetricWords::Perf61), &one_run());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].contains("CPUs utilized"), "{out}");
        assert!(lines[0].contains("K/sec"), "{out}");
        assert!(lines[1].contains("0.500"), "{out}");
    }

    #[test]
    fn rates_take_the_unit_of_their_column() {
        assert_eq!(rate_factor("K/sec"), Some(1e3));
        assert_eq!(rate_factor("/sec"), Some(1.0));
        assert_eq!(rate_factor("CPUs utilized"), None);
        let summary = one_run();
        let (section, place) = (&summary.sections[0], &summary.sections[0].places[0]);
        let cell = |unit: &str, digits: &str| Cell {
            unit: unit.into(),
            table: digits.into(),
            digits: Some(digits.into()),
            threshold: None,
        };
        let mut rows = vec![
            (section, place, vec![cell("K/sec", "2.000")]),
            (section, place, vec![cell("/sec", "500.000")]),
        ];
        same_units(&mut rows);
        assert_eq!(rows[1].2[0].digits.as_deref(), Some("0.500"));
        assert_eq!(rows[1].2[0].unit, "K/sec");
    }

    /// Oracle: perf 7.2.13's `-x@ --metric-only --per-socket` (`socket@ctrs@...`, `S0@2@...`)
    /// and `-j`'s `"counters" : 2`; perf 6.1 heads the column `cpus`.
    #[test]
    fn places_adding_up_cpus_carry_their_number() {
        let mut summary = one_run();
        summary.sections[0].places[0].place = Some(Place::Aggregate {
            key: "socket",
            label: "S0".into(),
            cpus: vec![2, 2, 1],
        });
        let mut text = String::new();
        csv(&mut text, "@", &summary, &[]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "socket@cpus@CPUs utilized@K/sec@");
        assert!(lines[1].starts_with("S0@2@0.500@"), "{text}");
        let mut json = String::new();
        json_lines(&mut json, &summary, &[]);
        let parsed: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(parsed["counters"], 2, "{json}");
        let mut table_text = String::new();
        table(&mut table_text, &report(MetricWords::Perf61), &summary);
        assert!(
            table_text
                .lines()
                .nth(1)
                .unwrap()
                .starts_with("S0        2 "),
            "{table_text}"
        );
    }

    #[test]
    fn csv_and_json_carry_the_same_values() {
        let mut csv_out = String::new();
        csv(&mut csv_out, ",", &one_run(), &[]);
        let lines: Vec<&str> = csv_out.lines().collect();
        assert_eq!(lines[0], "CPUs utilized,K/sec,");
        assert_eq!(lines[1], "0.500,2.000,");
        let mut json = String::new();
        json_lines(&mut json, &one_run(), &[]);
        let parsed: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(parsed["CPUs utilized"], 0.5);
        assert_eq!(parsed["K/sec"], 2.0);
    }
}
