//! Metric thresholds as perf 7.2 prints them (tools/perf/util/stat-display.c): in the table a
//! classified value in colour, red where bad and green where good, when colour is on; in `-j`
//! a `"metric-threshold"` key after the unit; nothing in `-x`, nor in `--metric-only`'s `-j`.

use counterhal::metrics::Threshold;

/// perf's `PERF_COLOR_RED`, `PERF_COLOR_GREEN` and `PERF_COLOR_RESET` (tools/perf/util/color.h).
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const RESET: &str = "\x1b[m";

/// `text` in the colour of `threshold` when `colour` is on (perf's
/// `metric_threshold_classify__color`); as it is otherwise.
pub fn painted(text: &str, threshold: Option<Threshold>, colour: bool) -> String {
    let code = match threshold {
        Some(Threshold::Bad) => RED,
        Some(Threshold::Good) => GREEN,
        _ => return text.to_string(),
    };
    match colour {
        true => format!("{code}{text}{RESET}"),
        false => text.to_string(),
    }
}

/// The `-j` field of a classified value (perf's `"metric-threshold" : "bad"`), if it is.
pub fn json_field(threshold: Option<Threshold>) -> Option<String> {
    threshold.map(|t| format!("\"metric-threshold\" : \"{}\"", t.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: perf 7.2.13's table under a terminal (`script -qec 'perf stat -a -M
    /// insn_per_cycle true'`, instructions counting 0: `# \e[31m     0.0\e[m instructions`)
    /// and its `-j` (`"metric-threshold" : "good"`).
    #[test]
    fn classes_paint_and_name_as_perf_7_2_does() {
        assert_eq!(
            painted("     0.0", Some(Threshold::Bad), true),
            "\x1b[31m     0.0\x1b[m"
        );
        assert_eq!(
            painted("    0.00", Some(Threshold::Good), true),
            "\x1b[32m    0.00\x1b[m"
        );
        assert_eq!(
            painted("    0.00", Some(Threshold::Good), false),
            "    0.00"
        );
        assert_eq!(painted("    0.00", None, true), "    0.00");
        assert_eq!(
            json_field(Some(Threshold::Good)).as_deref(),
            Some("\"metric-threshold\" : \"good\"")
        );
        assert_eq!(json_field(None), None);
    }
}
