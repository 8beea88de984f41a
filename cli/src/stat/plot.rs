//! `--plot FILE.svg` with `-I`: each event's rate over time, for people who would rather look
//! than read. One panel per counted event, time (seconds) on the x axis, the rate on the y
//! axis (per second; CPUs for a clock), one line per place (with `-A`, `--per-thread`), and
//! the intervals where the event was multiplexed (it ran part of the time) shaded. An SVG
//! file, drawn by `plotters` without a browser or display.

use std::path::Path;

use plotters::prelude::*;

use counterhal::Error;

use super::summary::Summary;

/// The series' colours, one per place, in turn.
pub const COLOURS: [RGBColor; 4] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
];

/// The shade of a multiplexed interval.
pub const MULTIPLEXED: RGBColor = RGBColor(0xff, 0xd5, 0x80);

/// Pixels per panel, and the width.
const PANEL_HEIGHT: u32 = 220;
const WIDTH: u32 = 800;

/// One event's panel: its name, the unit on the y axis, one series per place of (interval
/// end in seconds, rate), and the multiplexed stretches (start, end) in seconds.
struct Panel {
    name: String,
    unit: &'static str,
    series: Vec<(String, Vec<(f64, f64)>)>,
    multiplexed: Vec<(f64, f64)>,
}

/// The panels of an interval summary: every event that counted in some interval.
fn panels(summary: &Summary) -> Vec<Panel> {
    let events = summary.events.len();
    let mut panels = Vec::new();
    for index in 0..events {
        let entry = &summary.events[index];
        if entry.reading.is_err() {
            continue;
        }
        let clock = entry.is_clock();
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        let mut multiplexed = Vec::new();
        for section in &summary.sections {
            let (Some(at_ns), true) = (section.at_ns, section.length_ns > 0) else {
                continue;
            };
            let end = at_ns as f64 / 1e9;
            let start = end - section.length_ns as f64 / 1e9;
            for place in &section.places {
                let label = place
                    .place
                    .as_ref()
                    .map_or("all".to_string(), |p| p.label());
                let event = &place.events[index];
                let value = event.estimate().unwrap_or(0) as f64;
                // Per second; a clock's nanoseconds per second are CPUs busy.
                let rate = value / (section.length_ns as f64 / 1e9) / if clock { 1e9 } else { 1.0 };
                if event.reading.as_ref().is_ok_and(|r| r.is_multiplexed()) {
                    multiplexed.push((start, end));
                }
                match series.iter_mut().find(|(l, _)| *l == label) {
                    Some((_, points)) => points.push((end, rate)),
                    None => series.push((label, vec![(end, rate)])),
                }
            }
        }
        if series.iter().all(|(_, points)| points.is_empty()) {
            continue;
        }
        panels.push(Panel {
            name: entry.name.clone(),
            unit: if clock { "CPUs" } else { "per second" },
            series,
            multiplexed,
        });
    }
    panels
}

/// Draws the intervals of `summary` to the SVG file `path`.
///
/// # Errors
/// [`ErrorKind::Other`](counterhal::ErrorKind::Other) when nothing counted in any interval,
/// or the file cannot be drawn or written, naming it.
pub fn draw(summary: &Summary, path: &Path) -> Result<(), Error> {
    let panels = panels(summary);
    let failed = |e: &dyn std::fmt::Display| {
        Error::new(
            counterhal::ErrorKind::Other,
            format!("cannot draw the plot {}: {e}", path.display()),
        )
    };
    if panels.is_empty() {
        return Err(failed(&"no event counted in any interval"));
    }
    let height = PANEL_HEIGHT * u32::try_from(panels.len()).unwrap_or(1);
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| failed(&e))?;
    let areas = root.split_evenly((panels.len(), 1));
    let last_time = panels
        .iter()
        .flat_map(|p| p.series.iter().flat_map(|(_, s)| s.iter().map(|&(t, _)| t)))
        .fold(0.0, f64::max);
    for (panel, area) in panels.iter().zip(&areas) {
        let top = panel
            .series
            .iter()
            .flat_map(|(_, s)| s.iter().map(|&(_, v)| v))
            .fold(0.0, f64::max);
        let top = if top > 0.0 { top * 1.1 } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.name, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..last_time.max(1e-3), 0f64..top)
            .map_err(|e| failed(&e))?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .x_desc("seconds")
            .y_desc(panel.unit)
            .draw()
            .map_err(|e| failed(&e))?;
        chart
            .draw_series(panel.multiplexed.iter().map(|&(start, end)| {
                Rectangle::new([(start, 0.0), (end, top)], MULTIPLEXED.mix(0.5).filled())
            }))
            .map_err(|e| failed(&e))?;
        for ((label, points), colour) in panel.series.iter().zip(COLOURS.iter().cycle()) {
            chart
                .draw_series(LineSeries::new(points.iter().copied(), colour))
                .map_err(|e| failed(&e))?
                .label(label.as_str());
        }
    }
    root.present().map_err(|e| failed(&e))
}

#[cfg(test)]
mod tests {
    use counterhal::hal::Reading;

    use super::*;
    use crate::stat::results::{Counts, Place, Snapshot};
    use crate::stat::summary::tests::run;

    #[test]
    fn one_panel_per_counted_event_one_line_per_place() {
        let mut one = run(
            &[
                ("page-faults", Some(0)),
                ("task-clock", Some(0)),
                ("cycles", None),
            ],
            300_000_000,
        );
        // Three intervals of 100 ms on two CPUs; CPU1's faults multiplexed in the second.
        // Cumulative readings: each interval enables 1000 ns; CPU1 runs 500 of them in the
        // second interval only.
        let counts = |cpu: u32, i: u64| {
            let enabled = 1_000 * i;
            let running = if cpu == 1 && i >= 2 {
                enabled - 500
            } else {
                enabled
            };
            Counts {
                place: Some(Place::Cpu(cpu)),
                readings: vec![
                    Ok(Reading::new(
                        10 * (u64::from(cpu) + 1) * i,
                        enabled,
                        running,
                    )),
                    Ok(Reading::new(50_000_000 * i, enabled, enabled)),
                    Err(Error::unsupported("no PMU")),
                ],
            }
        };
        one.snapshots = (1..=3u64)
            .map(|i| Snapshot {
                at_ns: i * 100_000_000,
                counts: vec![counts(0, i), counts(1, i)],
            })
            .collect();
        let summary = Summary::of(&[one]);
        let panels = panels(&summary);
        let names: Vec<&str> = panels.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["page-faults", "task-clock"], "cycles never counted");
        assert_eq!(panels[0].series.len(), 2);
        assert_eq!(panels[0].series[0].0, "CPU0");
        // 10 faults in each 100 ms: 100 per second.
        let rates: Vec<f64> = panels[0].series[0]
            .1
            .iter()
            .map(|&(_, rate)| rate)
            .collect();
        assert_eq!(rates, [100.0, 100.0, 100.0]);
        assert_eq!(panels[0].multiplexed.len(), 1);
        assert_eq!(panels[1].unit, "CPUs");
        assert!(
            (panels[1].series[0].1[0].1 - 0.5).abs() < 1e-9,
            "50 ms busy in 100 ms"
        );

        let path = std::env::temp_dir().join(format!("counterhal-plot-{}.svg", std::process::id()));
        draw(&summary, &path).expect("drawn");
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let stroke = |c: RGBColor| format!("stroke=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let lines = |c: RGBColor| {
            svg.lines()
                .filter(|l| l.starts_with("<polyline") && l.contains(&stroke(c)))
                .map(|l| {
                    let points = l.split("points=\"").nth(1).unwrap();
                    points.split('"').next().unwrap().split_whitespace().count()
                })
                .collect::<Vec<usize>>()
        };
        // Two panels, each with CPU0's and CPU1's line of three points.
        assert_eq!(lines(COLOURS[0]), [3, 3], "{svg}");
        assert_eq!(lines(COLOURS[1]), [3, 3]);
        let text = |t: &str| svg.lines().any(|l| l.trim() == t);
        assert!(text("page-faults") && text("task-clock"), "{svg}");
        assert!(
            text("seconds") && text("per second") && text("CPUs"),
            "{svg}"
        );
        let shade = format!(
            "fill=\"#{:02X}{:02X}{:02X}\"",
            MULTIPLEXED.0, MULTIPLEXED.1, MULTIPLEXED.2
        );
        assert_eq!(svg.matches(&shade).count(), 1, "one multiplexed interval");
    }

    #[test]
    fn nothing_counted_is_an_error_naming_the_file() {
        let summary = Summary::of(&[run(&[("cycles", None)], 1)]);
        let e = draw(&summary, Path::new("/nonexistent/x.svg")).unwrap_err();
        assert!(e.message().contains("/nonexistent/x.svg"), "{e}");
    }
}
