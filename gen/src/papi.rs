//! PAPI's preset table (`papi_events.csv`, BSD-3-Clause): each model's presets, read as PAPI
//! 7.0 reads the table for the libpfm4 PMU it counts on.
//!
//! PAPI's reader (`papi_load_derived_events` in src/papi_preset.c) goes through the whole file
//! in order. Each line is split at commas as `strtok` splits it (empty fields vanish) and each
//! field trimmed of blanks. `#` lines are comments. A run of `CPU,<name>` lines opens a block
//! when any of them names the PMU (compared without case; PAPI's perf_event component passes
//! libpfm4's name of the default core PMU, never `ix86arch`); a `CPU` line after the block's
//! presets closes it. Every matching block is read, so a preset defined again in a later block
//! takes the later definition. A `PRESET,<name>,<derived>,[<postfix>,]<natives...>` line
//! gives the preset's derived type, its formula (`DERIVED_POSTFIX`) and at most 8 natives
//! (`PAPI_EVENTS_IN_DERIVED_EVENT`), ending at the line's end or a `NOTE`, `LDESC` or `SDESC`
//! field.

use std::fmt::Write as _;
use std::path::Path;

use crate::GenError;
use crate::write::quoted;

/// The shipped tables' source: the table as Debian installs it, and the upstream tag it equals.
pub const DEBIAN_SOURCE: &str = "PAPI 7.2.0's papi_events.csv (BSD-3-Clause) as Debian's libpapi7.2 7.2.0-2+b2 installs it, identical to icl-utk-edu/papi tag papi-7-2-0-t (72a3124d048dc5c89eb3f00c9f2866f4492b5383) src/papi_events.csv";

/// Where Debian's libpapi7.2 installs the table (in the current-releases lab's sid root,
/// `scripts/current-lab`).
pub const DEBIAN_PATH: &str = "/usr/share/papi/7.2/papi_events.csv";

/// PAPI's limit on the natives of one preset (`PAPI_EVENTS_IN_DERIVED_EVENT`).
pub const MAX_NATIVES: usize = 8;

/// The derived types PAPI's reader accepts (`_papi_hwi_derived` in src/papi_internal.c).
pub const DERIVED_TYPES: &[&str] = &[
    "NOT_DERIVED",
    "DERIVED_ADD",
    "DERIVED_PS",
    "DERIVED_ADD_PS",
    "DERIVED_CMPD",
    "DERIVED_SUB",
    "DERIVED_POSTFIX",
    "DERIVED_INFIX",
];

/// Our models and the libpfm4 PMU names PAPI looks their presets up by: the first is the one
/// read; the others (libpfm4's other names of CPUs the model covers) must give the same
/// presets. libpfm4's `p6` PMU is the Pentium III, here `piii` (`p6` is OpenBSD pctr(4)'s table).
/// The table's `ix86arch` block is not read: PAPI's perf_event component never takes
/// `ix86arch` as its default core PMU (`_pe_libpfm4_init` in
/// src/components/perf_event/pe_libpfm4_events.c), so that block never applies.
pub const MODELS: &[(&str, &[&str])] = &[
    ("coreduo", &["coreduo"]),
    ("ppro", &["ppro"]),
    ("pii", &["pii"]),
    ("piii", &["p6"]),
    ("pm", &["pm"]),
    ("core", &["core"]),
    ("nhm", &["nhm"]),
    ("nhm_ex", &["nhm_ex"]),
    ("wsm", &["wsm"]),
    ("wsm_dp", &["wsm_dp"]),
    ("snb", &["snb"]),
    ("snb_ep", &["snb_ep"]),
    ("ivb", &["ivb"]),
    ("ivb_ep", &["ivb_ep"]),
    ("hsw", &["hsw"]),
    ("hsw_ep", &["hsw_ep"]),
    ("bdw", &["bdw"]),
    ("bdw_ep", &["bdw_ep"]),
    ("skl", &["skl"]),
    ("skx", &["skx"]),
    ("clx", &["clx"]),
    ("icx", &["icx"]),
    ("icl", &["icl"]),
    ("spr", &["spr"]),
    ("knl", &["knl", "knm"]),
    ("atom", &["atom"]),
    ("slm", &["slm"]),
    ("amd64_k7", &["amd64_k7"]),
    ("amd64_k8_revc", &["amd64_k8_revc", "amd64_k8_revb"]),
    ("amd64_k8_revd", &["amd64_k8_revd"]),
    ("amd64_k8_reve", &["amd64_k8_reve"]),
    ("amd64_k8_revg", &["amd64_k8_revg", "amd64_k8_revf"]),
    ("amd64_fam10h_shanghai", &["amd64_fam10h_shanghai"]),
    ("amd64_fam10h_istanbul", &["amd64_fam10h_istanbul"]),
    ("amd64_fam10h_barcelona", &["amd64_fam10h_barcelona"]),
    ("amd64_fam11h_turion", &["amd64_fam11h_turion"]),
    ("amd64_fam12h_llano", &["amd64_fam12h_llano"]),
    ("amd64_fam14h_bobcat", &["amd64_fam14h_bobcat"]),
    ("amd64_fam15h_interlagos", &["amd64_fam15h_interlagos"]),
    ("amd64_fam16h", &["amd64_fam16h"]),
    ("amd64_fam17h_zen1", &["amd64_fam17h_zen1", "amd64_fam17h"]),
    ("amd64_fam17h_zen2", &["amd64_fam17h_zen2"]),
    ("amd64_fam19h_zen3", &["amd64_fam19h_zen3"]),
    ("amd64_fam19h_zen4", &["amd64_fam19h_zen4"]),
    ("amd64_fam1ah_zen5", &["amd64_fam1ah_zen5"]),
    // The Arm cores PAPI's table has presets for (its natives are libpfm4's names, aliases of
    // the kernel's on these models). Cortex-A57 and A72 share a table here: PAPI's blocks of
    // the two must agree. Neoverse N2 and V2 share one too, but PAPI 7.2's `arm_v2` block is
    // not `arm_n2`'s: the model takes N2's presets.
    ("cortex-a53", &["arm_ac53"]),
    ("cortex-a57-a72", &["arm_ac57", "arm_ac72"]),
    ("cortex-a76", &["arm_ac76"]),
    ("emag", &["arm_xgene"]),
    ("thunderx2", &["arm_thunderx2"]),
    ("a64fx", &["arm_a64fx"]),
    ("monaka", &["arm_monaka"]),
    ("neoverse-n1", &["arm_n1"]),
    ("neoverse-n2-v2", &["arm_n2"]),
    ("neoverse-v1", &["arm_v1"]),
];

/// One preset as PAPI's table defines it for a PMU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvPreset {
    /// The preset's name (`PAPI_TOT_INS`).
    pub name: String,
    /// PAPI's derived type (`NOT_DERIVED`, `DERIVED_ADD`, ...).
    pub derived: String,
    /// The postfix formula of a `DERIVED_POSTFIX` preset.
    pub postfix: Option<String>,
    /// The natives, libpfm4 event strings, at most [`MAX_NATIVES`].
    pub natives: Vec<String>,
    /// The line (from 1) of the definition read.
    pub line: usize,
}

/// The presets PAPI's table gives libpfm4 PMU `pmu`, in the order of their first definition
/// (a later definition replaces an earlier one in place), and the lines of the `CPU` entries
/// that opened its blocks.
///
/// # Errors
/// [`GenError::Data`] for a definition in one of the PMU's blocks that PAPI would refuse (no
/// name, an unknown derived type, no formula, no natives) or that this reader does not handle
/// (a `CPU` line with a PMU-type qualifier, `DERIVED_INFIX`).
pub fn presets_for(text: &str, pmu: &str) -> Result<(Vec<CsvPreset>, Vec<usize>), GenError> {
    let mut presets: Vec<CsvPreset> = Vec::new();
    let mut blocks = Vec::new();
    let (mut reading, mut found) = (false, false);
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let fail = |why: &str| Err(GenError::Data(format!("papi_events.csv:{number}: {why}")));
        let mut fields = line
            .split(',')
            .map(|f| f.trim_matches([' ', '\t']))
            .filter(|f| !f.is_empty());
        let Some(first) = fields.next() else { continue };
        if first.starts_with('#') {
            continue;
        }
        if first.eq_ignore_ascii_case("CPU") {
            if reading && found {
                (reading, found) = (false, false);
            }
            let Some(name) = fields.next() else { continue };
            if name.eq_ignore_ascii_case(pmu) {
                if fields.next().is_some() {
                    return fail(
                        "a CPU line with a PMU-type qualifier, which this reader does not handle",
                    );
                }
                reading = true;
                blocks.push(number);
            }
            continue;
        }
        if !(first.eq_ignore_ascii_case("PRESET") || first.eq_ignore_ascii_case("EVENT")) {
            continue;
        }
        if !reading {
            continue;
        }
        found = true;
        let Some(name) = fields.next() else {
            return fail("a PRESET line without a name");
        };
        let Some(derived) = fields.next() else {
            return fail(&format!("{name}: no derived type"));
        };
        let Some(derived) = DERIVED_TYPES
            .iter()
            .find(|d| d.eq_ignore_ascii_case(derived))
        else {
            return fail(&format!("{name}: unknown derived type `{derived}`"));
        };
        if *derived == "DERIVED_INFIX" {
            return fail(&format!(
                "{name}: DERIVED_INFIX, which this reader does not handle"
            ));
        }
        let postfix = if *derived == "DERIVED_POSTFIX" {
            match fields.next() {
                Some(postfix) => Some(postfix.to_string()),
                None => return fail(&format!("{name}: DERIVED_POSTFIX without a formula")),
            }
        } else {
            None
        };
        let natives: Vec<String> = fields
            .take_while(|f| {
                !["NOTE", "LDESC", "SDESC"]
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(f))
            })
            .take(MAX_NATIVES)
            .map(str::to_string)
            .collect();
        if natives.is_empty() {
            return fail(&format!("{name}: no native events"));
        }
        let preset = CsvPreset {
            name: name.to_string(),
            derived: (*derived).to_string(),
            postfix,
            natives,
            line: number,
        };
        match presets
            .iter_mut()
            .find(|p| p.name.eq_ignore_ascii_case(name))
        {
            Some(earlier) => *earlier = preset,
            None => presets.push(preset),
        }
    }
    Ok((presets, blocks))
}

/// One model's generated presets file: the presets PAPI's table gives its libpfm4 PMU.
#[derive(Clone, Debug)]
pub struct PresetTable {
    /// Our model id.
    pub id: String,
    /// The libpfm4 PMU whose presets these are.
    pub pmu: String,
    /// The other libpfm4 PMUs of the model, whose presets are the same.
    pub same: Vec<String>,
    /// The lines of the `CPU` entries that opened the PMU's blocks.
    pub blocks: Vec<usize>,
    /// The presets.
    pub presets: Vec<CsvPreset>,
    /// The presets of the PMU's blocks on another PAPI component's natives
    /// (`cuda:::...`: PAPI 7.2's `PAPI_CUDA_*`), left out: counterhal has no such component.
    pub left_out: Vec<String>,
}

/// The preset tables of every model of [`MODELS`] whose PMU has presets in `text`.
///
/// # Errors
/// As [`presets_for`]; [`GenError::Data`] where a model's PMU names disagree.
pub fn tables(text: &str) -> Result<Vec<PresetTable>, GenError> {
    let mut tables = Vec::new();
    for (id, pmus) in MODELS {
        let (presets, blocks) = presets_for(text, pmus[0])?;
        if presets.is_empty() {
            continue;
        }
        let strip =
            |presets: Vec<CsvPreset>| -> Vec<(String, String, Option<String>, Vec<String>)> {
                presets
                    .into_iter()
                    .map(|p| (p.name, p.derived, p.postfix, p.natives))
                    .collect()
            };
        let ours = strip(presets.clone());
        for other in &pmus[1..] {
            if strip(presets_for(text, other)?.0) != ours {
                return Err(GenError::Data(format!(
                    "model `{id}`: PAPI's presets for libpfm4 PMU `{other}` differ from `{}`'s",
                    pmus[0]
                )));
            }
        }
        let (presets, left_out): (Vec<CsvPreset>, Vec<CsvPreset>) = presets
            .into_iter()
            .partition(|p| !p.natives.iter().any(|n| n.contains(":::")));
        tables.push(PresetTable {
            id: (*id).to_string(),
            pmu: pmus[0].to_string(),
            same: pmus[1..].iter().map(|p| (*p).to_string()).collect(),
            blocks,
            presets,
            left_out: left_out.into_iter().map(|p| p.name).collect(),
        });
    }
    Ok(tables)
}

/// The TOML of one model's presets, headed by the source.
pub fn table_toml(table: &PresetTable, source: &str, path: &str) -> String {
    let mut out = String::new();
    out.push_str(
        "# generated: do not edit (counterhal-gen papi; presets PAPI's table lacks go in the overlay)\n",
    );
    let _ = writeln!(out, "# source: {source}");
    let _ = writeln!(out, "# file: {path}");
    let lines: Vec<String> = table.blocks.iter().map(usize::to_string).collect();
    let _ = write!(
        out,
        "# libpfm4 PMU: {} (its CPU lines: {})",
        table.pmu,
        lines.join(", ")
    );
    if !table.same.is_empty() {
        let _ = write!(out, "; {} have the same presets", table.same.join(", "));
    }
    out.push('\n');
    if !table.left_out.is_empty() {
        let _ = writeln!(
            out,
            "# left out, on another PAPI component's natives: {}",
            table.left_out.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "# presets: {}, each in PAPI's form (its derived type, formula and libpfm4 natives)",
        table.presets.len()
    );
    let _ = writeln!(
        out,
        "\n[[cpu]]\nid = {}\n\n[cpu.presets]",
        quoted(&table.id)
    );
    for preset in &table.presets {
        let natives: Vec<String> = preset.natives.iter().map(|n| quoted(n)).collect();
        let postfix = preset
            .postfix
            .as_ref()
            .map(|p| format!(", postfix = {}", quoted(p)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{} = {{ papi = {}{postfix}, natives = [{}] }}",
            preset.name,
            quoted(&preset.derived),
            natives.join(", ")
        );
    }
    out
}

/// `csv`'s path as a Debian root installs it: from its `/usr/share/` on (the lab's root
/// `/var/cache/counterhal-lab/sid/usr/share/papi/7.2/papi_events.csv` is PAPI 7.2's
/// `/usr/share/papi/7.2/papi_events.csv`), else as given.
fn installed_path(csv: &Path) -> String {
    let shown = csv.display().to_string();
    match shown.find("/usr/share/") {
        Some(at) => shown[at..].to_string(),
        None => shown,
    }
}

/// Reads `csv` and writes `ID.toml` for each model with presets into `out`; returns the
/// paths written.
///
/// # Errors
/// The file cannot be read or written; as [`tables`].
pub fn generate(csv: &Path, source: &str, out: &Path) -> Result<Vec<String>, GenError> {
    let text = std::fs::read_to_string(csv).map_err(|e| GenError::io(csv, &e))?;
    std::fs::create_dir_all(out).map_err(|e| GenError::io(out, &e))?;
    let mut written = Vec::new();
    for table in tables(&text)? {
        let path = out.join(format!("{}.toml", table.id));
        let toml = table_toml(&table, source, &installed_path(csv));
        std::fs::write(&path, toml).map_err(|e| GenError::io(&path, &e))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: PAPI 7.0's reader (src/papi_preset.c): blocks opened by any matching CPU line
    /// of a run, closed by a CPU line after presets, later definitions replacing earlier ones,
    /// empty fields skipped, natives ending at NOTE.
    #[test]
    fn blocks_are_read_as_papi_reads_them() {
        let text = "\
# comment
CPU,other
CPU,mine
PRESET,PAPI_A,NOT_DERIVED,X:Y
PRESET,PAPI_B,DERIVED_ADD,X,,Z,NOTE,\"a note\"
CPU,other
PRESET,PAPI_C,NOT_DERIVED,W
CPU,MINE
PRESET,PAPI_A, DERIVED_POSTFIX, N0|N1|-|, P , Q
";
        let (presets, blocks) = presets_for(text, "mine").unwrap();
        assert_eq!(blocks, [3, 8]);
        let names: Vec<&str> = presets.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["PAPI_A", "PAPI_B"]);
        assert_eq!(presets[0].derived, "DERIVED_POSTFIX");
        assert_eq!(presets[0].postfix.as_deref(), Some("N0|N1|-|"));
        assert_eq!(presets[0].natives, ["P", "Q"]);
        assert_eq!(presets[0].line, 9);
        assert_eq!(presets[1].natives, ["X", "Z"]);
        assert!(presets_for(text, "nobody").unwrap().0.is_empty());
        // At most 8 natives.
        let many = "CPU,m\nPRESET,PAPI_A,DERIVED_ADD,a,b,c,d,e,f,g,h,i,j\n";
        assert_eq!(presets_for(many, "m").unwrap().0[0].natives.len(), 8);
        for bad in [
            "CPU,m\nPRESET,PAPI_A,DERIVED_MUL,a\n",
            "CPU,m\nPRESET,PAPI_A,DERIVED_POSTFIX\n",
            "CPU,m\nPRESET,PAPI_A,NOT_DERIVED\n",
            "CPU,m,3\nPRESET,PAPI_A,NOT_DERIVED,a\n",
        ] {
            assert!(presets_for(bad, "m").is_err(), "{bad}");
        }
    }

    #[test]
    fn tables_name_their_source() {
        let table = PresetTable {
            id: "icx".into(),
            pmu: "icx".into(),
            same: vec![],
            blocks: vec![934],
            presets: vec![CsvPreset {
                name: "PAPI_DP_OPS".into(),
                derived: "DERIVED_POSTFIX".into(),
                postfix: Some("N0|N1|2|*|+|".into()),
                natives: vec!["A:B".into(), "C".into()],
                line: 940,
            }],
            left_out: vec![],
        };
        let text = table_toml(&table, "PAPI 7.0.0", "/x/papi_events.csv");
        assert!(text.contains("# source: PAPI 7.0.0\n# file: /x/papi_events.csv\n"));
        assert!(text.contains(
            "PAPI_DP_OPS = { papi = \"DERIVED_POSTFIX\", postfix = \"N0|N1|2|*|+|\", natives = [\"A:B\", \"C\"] }"
        ));
    }

    /// Oracle: PAPI 7.2's table (tag papi-7-2-0-t), whose `arm_v1` block gives `PAPI_CUDA_*`
    /// presets on the cuda component's natives (`cuda:::...`), beside the core's.
    #[test]
    fn presets_on_another_components_natives_are_left_out() {
        let text = "\
CPU,arm_v1
PRESET,PAPI_TOT_INS,NOT_DERIVED,INST_RETIRED
PRESET,PAPI_CUDA_FP16_FMA,NOT_DERIVED,cuda:::sm__sass_thread_inst_executed_op_hfma_pred_on:stat=sum
";
        let tables = tables(text).unwrap();
        let v1 = tables.iter().find(|t| t.id == "neoverse-v1").unwrap();
        let names: Vec<&str> = v1.presets.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["PAPI_TOT_INS"]);
        assert_eq!(v1.left_out, ["PAPI_CUDA_FP16_FMA"]);
        let toml = table_toml(v1, "PAPI 7.2.0", "/usr/share/papi/7.2/papi_events.csv");
        assert!(
            toml.contains("# left out, on another PAPI component's natives: PAPI_CUDA_FP16_FMA\n")
        );
    }
}
