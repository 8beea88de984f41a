//! `-I`'s intervals as they end, as perf prints them: each snapshot the measurement reads is
//! added up by place (`--per-core`...), unscaled (`--no-scale`), made an interval (the
//! difference from the snapshot before), and written at once, flushed, in the layout asked for
//! (the table, `-x`, `-j`, `--json`'s intervals) to standard error or the output file. Only the
//! snapshot before is kept, and for `--plot` a [`Plot`] of bounded size: memory does not grow
//! with the run.

use super::Report;
use super::gather::Merge;
use super::plot::Plot;
use super::printing::render_interval;
use super::summary::{EventSummary, Summary, interval_section};
use super::topology;
use super::verbose::unscaled_counts;
use crate::error::CliError;
use crate::output::{OutputFile, emit_to_stderr};
use crate::stat::measure::results::Snapshot;

/// perf prints the heading again every so many intervals (`print_interval`'s 25).
const HEADING_EVERY: usize = 25;

/// The intervals of one run, printed as they end.
pub struct Intervals<'a> {
    /// How each interval is taken and printed.
    report: &'a Report,
    /// How the boxes of PMU events fold into their lines.
    merge: &'a Merge,
    /// The events as planned (names, backends, cgroups, and why one is not supported).
    events: Vec<EventSummary>,
    /// The snapshot before the next (none: the next is the first).
    before: Option<Snapshot>,
    /// How many intervals were taken, and how many `--json` objects written.
    taken: usize,
    objects: usize,
    /// Where they go (`None`: standard error).
    output: Option<OutputFile>,
    /// The first write that failed (the rest then go to standard error, so nothing is lost).
    failed: Option<CliError>,
    /// What `--plot` keeps.
    plot: Option<Plot>,
}

/// What is left once the run has ended.
pub struct Taken {
    /// The output file, for what follows the intervals.
    pub output: Option<OutputFile>,
    /// The first write that failed.
    pub failed: Option<CliError>,
    /// What `--plot` kept.
    pub plot: Option<Plot>,
    /// How many `--json` interval objects were written.
    pub objects: usize,
}

impl<'a> Intervals<'a> {
    /// Ready to take the intervals as `report` asks (boxes merged as `merge` says, added up
    /// by place, unscaled) and print those of `events` (as planned), to `output` (or standard
    /// error), keeping a plot when `plot`.
    pub fn new(
        report: &'a Report,
        merge: &'a Merge,
        events: Vec<EventSummary>,
        output: Option<OutputFile>,
        plot: bool,
    ) -> Intervals<'a> {
        Intervals {
            report,
            merge,
            events,
            before: None,
            taken: 0,
            objects: 0,
            output,
            failed: None,
            plot: plot.then(Plot::default),
        }
    }

    /// Takes the next snapshot (its tool events filled in): prints its interval at once.
    pub fn take(&mut self, mut snapshot: Snapshot) {
        self.merge.counts(&mut snapshot.counts);
        if let Some(by) = self.report.aggregation {
            let place_of = |cpu| topology::cpu_place(&self.report.system, cpu, by);
            topology::aggregate_interval(&mut snapshot, by, &place_of);
        }
        if self.report.unscaled {
            unscaled_counts(&mut snapshot.counts);
        }
        let section = interval_section(&self.events, &snapshot, self.before.as_ref());
        self.before = Some(snapshot);
        if let Some(plot) = &mut self.plot {
            plot.add(&section);
        }
        // The heading before the first interval and every 25th after it, as perf's.
        let heading = self.taken.is_multiple_of(HEADING_EVERY);
        self.taken += 1;
        if self.report.quiet {
            return;
        }
        let interval = Summary::of_interval(self.report.machine.clone(), &self.events, section);
        let text = render_interval(self.report, &interval, heading, &mut self.objects);
        self.write(&text);
    }

    /// Writes `text` where the results go, flushed; after a failure, to standard error.
    fn write(&mut self, text: &str) {
        if self.failed.is_some() {
            emit_to_stderr(text);
            return;
        }
        let written = match &mut self.output {
            Some(file) => file.write(text),
            None if emit_to_stderr(text) => Ok(()),
            None => Err(CliError::failed(counterhal::Error::new(
                counterhal::ErrorKind::Other,
                "cannot write the results to standard error",
            ))),
        };
        if let Err(e) = written {
            if self.output.is_some() {
                emit_to_stderr(text);
            }
            self.failed = Some(e);
        }
    }

    /// What is left once the run has ended.
    pub fn end(self) -> Taken {
        Taken {
            output: self.output,
            failed: self.failed,
            plot: self.plot,
            objects: self.objects,
        }
    }
}
