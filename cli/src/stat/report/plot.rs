//! `--plot FILE.svg` with `-I`: each event's rate over time, for people who would rather look
//! than read. One panel per counted event, time (seconds) on the x axis, the rate on the y
//! axis (per second; CPUs for a clock), one line per place (with `-A`, `--per-thread`), and
//! the intervals where the event was multiplexed (it ran part of the time) shaded. An SVG
//! file, drawn by `plotters` without a browser or display.

use std::path::Path;

use plotters::prelude::*;

use counterhal::Error;

use super::summary::{EventSummary, Section};
use crate::error::CliError;
use crate::output::OutputFile;

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

/// The most intervals a plot keeps: past this, neighbours are merged two by two (their counts
/// and lengths added up), so a run of any length is drawn from at most this many points, each
/// the rate over the stretch it covers, in memory that does not grow with the run.
pub const MOST_POINTS: usize = 512;

/// One stretch of the plot: when it ended and how long it was (nanoseconds), and each
/// place's estimate of every event (0 where none) with whether it was multiplexed.
#[derive(Clone, Debug)]
struct Point {
    end_ns: u64,
    length_ns: u64,
    places: Vec<(String, Vec<(u64, bool)>)>,
}

impl Point {
    /// This stretch and the `next` one as one: counts and lengths added up, multiplexed where
    /// either was.
    fn merged(mut self, next: Point) -> Point {
        for (label, values) in next.places {
            match self.places.iter_mut().find(|(l, _)| *l == label) {
                Some((_, mine)) => {
                    for (mine, theirs) in mine.iter_mut().zip(values) {
                        *mine = (mine.0.saturating_add(theirs.0), mine.1 || theirs.1);
                    }
                }
                None => self.places.push((label, values)),
            }
        }
        Point {
            end_ns: next.end_ns,
            length_ns: self.length_ns.saturating_add(next.length_ns),
            places: self.places,
        }
    }
}

/// What `--plot` keeps of `-I`'s intervals as they end: at most [`MOST_POINTS`] stretches.
#[derive(Debug, Default)]
pub struct Plot {
    points: Vec<Point>,
}

impl Plot {
    /// Keeps one interval (a section with its end time), merging neighbours two by two when
    /// there are too many.
    pub fn add(&mut self, section: &Section) {
        let (Some(end_ns), true) = (section.at_ns, section.length_ns > 0) else {
            return;
        };
        let places = section
            .places
            .iter()
            .map(|place| {
                let label = place
                    .place
                    .as_ref()
                    .map_or("all".to_string(), |p| p.label());
                let values = place
                    .events
                    .iter()
                    .map(|event| {
                        let multiplexed = event.reading.as_ref().is_ok_and(|r| r.is_multiplexed());
                        (event.estimate().unwrap_or(0), multiplexed)
                    })
                    .collect();
                (label, values)
            })
            .collect();
        self.points.push(Point {
            end_ns,
            length_ns: section.length_ns,
            places,
        });
        if self.points.len() > MOST_POINTS {
            let points = std::mem::take(&mut self.points);
            let mut pairs = points.into_iter();
            while let Some(first) = pairs.next() {
                self.points.push(match pairs.next() {
                    Some(second) => first.merged(second),
                    None => first,
                });
            }
        }
    }

    /// How many stretches it holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.points.len()
    }
}

/// One event's panel: its name, the unit on the y axis, one series per place of (interval
/// end in seconds, rate), and the multiplexed stretches (start, end) in seconds.
struct Panel {
    name: String,
    unit: &'static str,
    series: Vec<(String, Vec<(f64, f64)>)>,
    multiplexed: Vec<(f64, f64)>,
}

/// The panels of a plot: every event of `events` (the whole run's) that counted.
fn panels(plot: &Plot, events: &[EventSummary]) -> Vec<Panel> {
    let mut panels = Vec::new();
    for (index, entry) in events.iter().enumerate() {
        if entry.reading.is_err() {
            continue;
        }
        let clock = entry.is_clock();
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        let mut multiplexed = Vec::new();
        for point in &plot.points {
            let end = point.end_ns as f64 / 1e9;
            let seconds = point.length_ns as f64 / 1e9;
            for (label, values) in &point.places {
                let Some(&(value, shared)) = values.get(index) else {
                    continue;
                };
                // Per second; a clock's nanoseconds per second are CPUs busy.
                let rate = value as f64 / seconds / if clock { 1e9 } else { 1.0 };
                if shared {
                    multiplexed.push((end - seconds, end));
                }
                match series.iter_mut().find(|(l, _)| l == label) {
                    Some((_, points)) => points.push((end, rate)),
                    None => series.push((label.clone(), vec![(end, rate)])),
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

/// Draws `plot` (the events as the whole run's `events` name them) as SVG into `file`,
/// checked before the run.
///
/// # Errors
/// [`ErrorKind::Other`](counterhal::ErrorKind::Other) when nothing counted in any interval,
/// or the plot cannot be drawn, naming the file; a write that fails (a full disk) as the
/// file's error (exit 1).
pub fn draw(plot: &Plot, events: &[EventSummary], file: OutputFile) -> Result<(), CliError> {
    let mut svg = String::new();
    render(plot, events, file.path(), &mut svg).map_err(CliError::failed)?;
    file.replace_with(&svg)
}

/// The SVG of `plot` into `svg`; `path` names it in errors.
fn render(
    plot: &Plot,
    events: &[EventSummary],
    path: &Path,
    svg: &mut String,
) -> Result<(), Error> {
    let panels = panels(plot, events);
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
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
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
    use counterhal_hal::Reading;

    use super::*;
    use crate::stat::measure::results::{Counts, Place, Snapshot};
    use crate::stat::report::summary::Summary;
    use crate::stat::report::summary::tests::{intervals, run};

    #[test]
    fn one_panel_per_counted_event_one_line_per_place() {
        let one = run(
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
        let snapshots: Vec<Snapshot> = (1..=3u64)
            .map(|i| Snapshot {
                at_ns: i * 100_000_000,
                counts: vec![counts(0, i), counts(1, i)],
            })
            .collect();
        let (summary, sections) = intervals(&one, &snapshots);
        let mut plot = Plot::default();
        sections.iter().for_each(|section| plot.add(section));
        let panels = panels(&plot, &summary.events);
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
        draw(&plot, &summary.events, OutputFile::open(&path).unwrap()).expect("drawn");
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
        let summary = Summary::of(
            crate::stat::plan::machine_here(),
            &[run(&[("cycles", None)], 1)],
        );
        let mut svg = String::new();
        let path = Path::new("/nonexistent/x.svg");
        let e = render(&Plot::default(), &summary.events, path, &mut svg).unwrap_err();
        assert!(e.message().contains("/nonexistent/x.svg"), "{e}");
    }

    /// Issue 25, defect 3: a plot keeps at most [`MOST_POINTS`] stretches however many
    /// intervals it is given, each the rate over the stretch it covers.
    #[test]
    fn a_plot_keeps_a_bounded_number_of_points() {
        let one = run(&[("page-faults", Some(0))], 1);
        let summary = Summary::of(
            crate::stat::plan::machine_here(),
            std::slice::from_ref(&one),
        );
        let mut plot = Plot::default();
        let mut before: Option<Snapshot> = None;
        for i in 1..=100_000u64 {
            let now = Snapshot {
                at_ns: i * 10_000_000,
                counts: vec![Counts {
                    place: None,
                    readings: vec![Ok(Reading::new(5 * i, i, i))],
                }],
            };
            let section = crate::stat::report::summary::interval_section(
                &summary.events,
                &now,
                before.as_ref(),
            );
            plot.add(&section);
            before = Some(now);
            assert!(plot.len() <= MOST_POINTS, "{} points after {i}", plot.len());
        }
        assert!(plot.len() > MOST_POINTS / 2, "{}", plot.len());
        // 5 faults every 10 ms: 500 per second at every point, however merged.
        let panels = panels(&plot, &summary.events);
        for &(_, rate) in &panels[0].series[0].1 {
            assert!((rate - 500.0).abs() < 1e-6, "{rate}");
        }
        let last = panels[0].series[0].1.last().unwrap().0;
        assert!(
            (last - 1_000.0).abs() < 1e-9,
            "the last point ends at the end: {last}"
        );
    }
}
