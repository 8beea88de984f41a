//! PAPI's uncore story on ours: perf's PMU syntax for a PMU that filters no privilege level
//! (`msr/tsc/`), and the `perf_event_uncore` component's names
//! (`skx_unc_imc0::UNC_M_CLOCKTICKS:cpu=0`). The oracles: libpfm4 itself for every encoding
//! (run with `LIBPFM_ENCODE_INACTIVE=1`, which encodes the PMUs this machine lacks), Debian's
//! PAPI 7.0 for the component's description and errors, PAPI 7.0's own uncore tests
//! (papi-examples) for a real program, and the kernel, counting: a made uncore box mounted
//! over /sys/bus/event_source/devices in a private mount namespace (`unshare -m`) whose `type`
//! is the msr PMU's, so that its event 0 counts the TSC for real.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use counterhal_events::Database;

use crate::common::{c_program, library_dir, manifest, run};

/// The kernel's PMU directory.
const DEVICES: &str = "/sys/bus/event_source/devices";

/// `name value...` lines of a run's output, by name.
fn lines(out: &Output) -> BTreeMap<String, String> {
    key_values(&String::from_utf8_lossy(&out.stdout))
}

/// `name value...` lines of `text`, by name.
fn key_values(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The value of `key` in an `add` line (`NAME code 0 create 0 add 0 ...`).
fn field(line: &str, key: &str) -> i64 {
    let words: Vec<&str> = line.split(' ').collect();
    let at = words.iter().position(|w| *w == key).unwrap();
    words[at + 1].parse().unwrap()
}

/// Builds `tests/c/uncore.c` against Debian's papi.h.
fn uncore_program() -> PathBuf {
    c_program("uncore", "real", Path::new("/usr/include"), true)
}

/// A PMU that filters no privilege level (the kernel's msr PMU: arch/x86/events/msr.c declares
/// `PERF_PMU_CAP_NO_EXCLUDE`) counts in a set of the default domain (`PAPI_DOM_USER`): the
/// set's domain is not turned into an exclude bit the kernel would refuse. Oracle: the kernel,
/// which refuses the same event with the user level given (`msr/tsc/u`, `PAPI_ENOEVNT`), and
/// counts the TSC without it.
#[test]
fn a_pmu_that_filters_no_level_counts_in_the_default_domain() {
    system_papi_or_skip!();
    if !Path::new(DEVICES).join("msr/events/tsc").is_file() {
        skip!(Need::System, "no msr PMU with a tsc event here");
    }
    let out = run(&uncore_program(), &["add", "msr/tsc/", "msr/tsc/u"], true);
    let found = lines(&out);
    println!("{found:?}");
    let plain = &found["msr/tsc/"];
    assert_eq!(field(plain, "add"), 0, "{plain}");
    assert_eq!(field(plain, "stop"), 0, "{plain}");
    assert!(field(plain, "count") > 0, "{plain}");
    assert_eq!(field(plain, "component"), 0, "{plain}");
    // The kernel refuses a level on this PMU.
    assert_eq!(field(&found["msr/tsc/u"], "add"), -7);
}

/// libpfm4's head in the lab's Debian sid root: how the events crate's cross-checks build
/// against it and run on it (its perfmon headers, its `libpfm.so.4`, by its loader).
#[path = "../../events/tests/common/libpfm.rs"]
#[allow(dead_code)]
mod libpfm;

/// Builds `tests/c/pfm_uncore.c` against libpfm4 (the installed one, or with `head` the one
/// of the lab's Debian sid root, [`libpfm::head_root`]) and runs it with `args`, libpfm4
/// encoding the PMUs this machine lacks; its output.
fn pfm_uncore(head: Option<&Path>, args: &[String]) -> String {
    let program = match head {
        None => {
            let dir = counterhal_conformance::fixtures::temp_dir()
                .join(format!("counterhal-papi-pfm-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let program = dir.join("pfm_uncore");
            let built = Command::new("cc")
                .args(["-std=gnu99", "-Wall", "-Wextra", "-Werror"])
                .arg(manifest().join("tests/c/pfm_uncore.c"))
                .arg("-o")
                .arg(&program)
                .arg("-lpfm")
                .output()
                .expect("cc runs");
            assert!(
                built.status.success(),
                "{}",
                String::from_utf8_lossy(&built.stderr)
            );
            program
        }
        Some(root) => {
            let source = std::fs::read_to_string(manifest().join("tests/c/pfm_uncore.c")).unwrap();
            libpfm::build_for(Some(root), &source, "papi-pfm-uncore-head").unwrap()
        }
    };
    let out = libpfm::command(head, &program)
        .args(args)
        .env("LIBPFM_ENCODE_INACTIVE", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What libpfm4 encodes: `NAME -> (config, codes)`, or the error it gives.
fn libpfm4_encodings(
    head: Option<&Path>,
    args: &[String],
) -> BTreeMap<String, Result<(u64, u32), String>> {
    pfm_uncore(head, args)
        .lines()
        .filter_map(|line| {
            let mut words = line.splitn(3, ' ');
            let name = words.next()?.to_string();
            let value = words.next()?;
            let rest = words.next().unwrap_or("");
            let parsed = match value {
                "error" | "nopmu" => Err(format!("{value} {rest}")),
                hex => Ok((
                    u64::from_str_radix(hex.trim_start_matches("0x"), 16).ok()?,
                    rest.parse().ok()?,
                )),
            };
            Some((name, parsed))
        })
        .collect()
}

/// The bits of `config` a term sets, by the kernel's format of the Intel uncore boxes
/// (arch/x86/events/intel/uncore_snbep.c: `format_attr_event` config:0-7, `umask` 8-15,
/// `occ_sel` 14-15, `edge` 18, `tid_en` 19, `inv` 23, `thresh8` 24-31; uncore_snb.c's
/// `cmask5` 24-28): `None` for a term outside config's first word (filters, `ch_mask`).
fn term_shift(term: &str) -> Option<(u32, u32)> {
    Some(match term {
        "event" => (0, 8),
        "umask" => (8, 8),
        "occ_sel" => (14, 2),
        "edge" => (18, 1),
        "tid_en" => (19, 1),
        "inv" => (23, 1),
        "thresh" => (24, 8),
        "cmask" => (24, 5),
        _ => return None,
    })
}

/// `terms` (`event=4,umask=0x3`) as a config, where every term is one of config's fields or
/// the raw config (`config=0x...`, the families libpfm4's own table resolves).
fn config_of(terms: &str) -> Option<u64> {
    let mut config = 0u64;
    for term in terms.split(',') {
        let (name, value) = term.split_once('=')?;
        let value = match value.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok()?,
            None => value.parse().ok()?,
        };
        if name == "config" {
            config |= value;
            continue;
        }
        let (shift, width) = term_shift(name)?;
        if value >> width != 0 {
            return None;
        }
        config |= value << shift;
    }
    Some(config)
}

/// The families of the table (by libpfm4's name, each once) whose PMUs `listed` (libpfm4's
/// uncore PMUs, one a line) has: a family's name and a box number, or the name.
fn families_listed(listed: &str) -> Vec<&'static str> {
    let mut families: Vec<&'static str> = papi::uncore::uncore_models()
        .flat_map(|model| papi::uncore::uncore_families(model).map(|f| f.libpfm4()))
        .filter(|f| {
            listed.lines().any(|name| {
                name.strip_prefix(f)
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
            })
        })
        .collect();
    families.sort_unstable();
    families.dedup();
    families
}

/// The table's PMUs of `families` equal libpfm4's (`listed`, one a line) of those families:
/// every box, and no other.
fn table_names_pmus(listed: &str, families: &[&str]) {
    let theirs: std::collections::BTreeSet<&str> = listed.lines().collect();
    let mut ours = std::collections::BTreeSet::new();
    for model in papi::uncore::uncore_models() {
        let of = papi::uncore::uncore_families(model).filter(|f| families.contains(&f.libpfm4()));
        for b in papi::uncore::boxes(of) {
            ours.insert(b.libpfm4_name());
        }
    }
    let of_families: std::collections::BTreeSet<String> = theirs
        .iter()
        .filter(|name| {
            families.iter().any(|f| {
                name.strip_prefix(f)
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
            })
        })
        .map(|n| n.to_string())
        .collect();
    println!(
        "libpfm4 has {} uncore PMUs; {} of the {} families mapped, ours {}",
        theirs.len(),
        of_families.len(),
        families.len(),
        ours.len()
    );
    assert_eq!(ours, of_families);
}

/// The table of libpfm4's uncore PMUs (`events/data/papi/uncore_families.toml`, written from
/// libpfm4's sources) names exactly the PMUs libpfm4 4.13 has of each family 4.13 has: every
/// box, and no other (the families of libpfm4's head alone are [`head_names_its_pmus`]'s).
/// Oracle: libpfm4 4.13's own list (`pfm_get_pmu_info`, its uncore PMUs).
#[test]
fn the_uncore_table_names_libpfm4s_pmus() {
    if !Path::new("/usr/include/perfmon/pfmlib.h").is_file() {
        skip!(
            Need::Tools,
            "libpfm4's header is not installed (apt-get install libpfm4-dev)"
        );
    }
    let listed = pfm_uncore(None, &["-l".to_string()]);
    table_names_pmus(&listed, &families_listed(&listed));
}

/// The table names exactly the PMUs libpfm4's head has of every family of the table (4.13's
/// too, which the head keeps): Ice Lake-X's, Sapphire Rapids' and Granite Rapids' 167 that
/// 4.13 lacks among them. Oracle: libpfm4 4.13.0+git106 (Debian sid's, in the lab's root)
/// itself (`pfm_get_pmu_info`, its uncore PMUs).
#[test]
fn head_names_its_pmus() {
    let root = match libpfm::head_root() {
        Ok(root) => root,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let listed = pfm_uncore(Some(&root), &["-l".to_string()]);
    let families = families_listed(&listed);
    let all = families_listed(
        &papi::uncore::uncore_models().fold(String::new(), |text, model| {
            papi::uncore::boxes(papi::uncore::uncore_families(model))
                .fold(text, |text, b| text + &b.libpfm4_name() + "\n")
        }),
    );
    assert_eq!(families, all, "a family of the table is not the head's");
    table_names_pmus(&listed, &families);
}

/// How the uncore names libpfm4 encodes compare with ours.
#[derive(Default)]
struct Comparison {
    /// Names libpfm4 encodes.
    encoded: usize,
    /// Names libpfm4 refuses itself.
    refused: usize,
    /// Names libpfm4 encodes that ours refuses.
    lacking: Vec<String>,
    /// Names whose config ours and libpfm4's both have, and those equal.
    compared: usize,
    /// Those of `compared` equal.
    equal: Vec<String>,
    /// Names ours resolves to terms beyond config's first word (filters, `ch_mask`).
    other_fields: usize,
    /// The names whose encodings differ, by how: only in the extended event select, only in
    /// the unit mask, in the event select itself.
    extended: Vec<String>,
    unit_masks: Vec<String>,
    selects: Vec<String>,
}

/// Encodes, with libpfm4 (the installed one, or `head`'s) and ours, every event of one box of
/// each family of `families` (the table's, by model), and the whole names `qualified` (each
/// with its model).
fn compare(head: Option<&Path>, families: &[&str], qualified: &[(&str, &str)]) -> Comparison {
    let database = Database::shipped().unwrap();
    // One box of each family, and the model it is read on (Cascade Lake shares Skylake-X's,
    // Emerald Rapids Sapphire Rapids').
    let mut pmus: Vec<(String, &str)> = Vec::new();
    let mut seen = Vec::new();
    for model in papi::uncore::uncore_models() {
        for family in papi::uncore::uncore_families(model) {
            if !families.contains(&family.libpfm4()) || seen.contains(&family.libpfm4()) {
                continue;
            }
            seen.push(family.libpfm4());
            // The boxes of a family share their table: the first stands for them.
            let first = papi::uncore::boxes(std::iter::once(family)).next().unwrap();
            pmus.push((first.libpfm4_name(), model));
        }
    }
    let mut args: Vec<String> = pmus.iter().map(|(p, _)| p.clone()).collect();
    args.extend(qualified.iter().map(|(n, _)| n.to_string()));
    let theirs = libpfm4_encodings(head, &args);
    assert!(
        !theirs
            .values()
            .any(|r| r.as_ref().is_err_and(|e| e.starts_with("nopmu"))),
        "a PMU of the table is not libpfm4's"
    );
    for (name, _) in qualified {
        assert!(theirs[*name].is_ok(), "{name}: {:?}", theirs[*name]);
    }
    let model_of = |name: &str| -> &str {
        let pmu = name.split("::").next().unwrap();
        pmus.iter()
            .find(|(p, _)| p == pmu)
            .map(|(_, m)| *m)
            .or_else(|| qualified.iter().find(|(n, _)| *n == name).map(|(_, m)| *m))
            .or_else(|| {
                pmus.iter()
                    .find(|(p, _)| p.eq_ignore_ascii_case(pmu))
                    .map(|(_, m)| *m)
            })
            .unwrap()
    };
    let mut c = Comparison::default();
    for (name, encoded) in &theirs {
        let Ok((config, _codes)) = encoded else {
            c.refused += 1;
            continue;
        };
        c.encoded += 1;
        let ours = match papi::uncore::read(&database, Some(model_of(name)), name) {
            Some(Ok(read)) => read,
            Some(Err(_)) => {
                c.lacking.push(name.clone());
                continue;
            }
            None => panic!("{name} is not read as an uncore name"),
        };
        let Some(ours_config) = config_of(&ours.terms) else {
            c.other_fields += 1;
            continue;
        };
        c.compared += 1;
        if ours_config == *config {
            c.equal.push(name.clone());
            continue;
        }
        let class = match ours_config ^ config {
            EXTENDED_SELECT => &mut c.extended,
            bits if bits & !UNIT_MASK_BITS == 0 => &mut c.unit_masks,
            _ => &mut c.selects,
        };
        class.push(format!(
            "{name}: libpfm4 {config:#x}, ours {ours_config:#x} ({})",
            ours.terms
        ));
    }
    println!(
        "libpfm4 encoded {} uncore events on {} PMUs ({} it refuses alone); ours has {} of \
         them: {} compared, {} equal, {} with fields beyond config's first word (filters, \
         ch_mask) not compared; {} names libpfm4 has that our table lacks",
        c.encoded,
        pmus.len(),
        c.refused,
        c.encoded - c.lacking.len(),
        c.compared,
        c.equal.len(),
        c.other_fields,
        c.lacking.len()
    );
    println!(
        "lacking, first 20: {:?}",
        &c.lacking[..c.lacking.len().min(20)]
    );
    println!(
        "{} differ where libpfm4's tables and the kernel's perf JSON (our database's source) \
         disagree: {} only in the extended event select (config bit 21, which libpfm4 sets on \
         QPI and PCU events and the JSON omits; the kernel's `event_ext` format, config:0-7,21), \
         {} only in the unit mask (bits 8-19), {} in the event select",
        c.extended.len() + c.unit_masks.len() + c.selects.len(),
        c.extended.len(),
        c.unit_masks.len(),
        c.selects.len()
    );
    for line in c.unit_masks.iter().chain(&c.selects) {
        println!("differs: {line}");
    }
    for (name, _) in qualified {
        assert!(
            c.equal.iter().any(|e| e == name),
            "{name} does not encode as libpfm4's"
        );
    }
    c
}

/// Every libpfm4 uncore event of the families libpfm4 4.13 has that our table also has, on one
/// box of each PMU family, encodes as libpfm4 encodes it: our resolution's terms, put in config
/// by the kernel's formats, equal libpfm4's raw config. Also the qualifiers `e`, `i`, `t`.
/// Oracle: libpfm4 4.13 itself (`pfm_get_os_event_encoding`, `PFM_OS_NONE`).
#[test]
fn every_uncore_event_encodes_as_libpfm4_encodes_it() {
    if !Path::new("/usr/include/perfmon/pfmlib.h").is_file() {
        skip!(
            Need::Tools,
            "libpfm4's header is not installed (apt-get install libpfm4-dev)"
        );
    }
    let families = families_listed(&pfm_uncore(None, &["-l".to_string()]));
    let qualified = [
        ("skx_unc_imc0::UNC_M_CAS_COUNT:RD:e:i=1:t=3", "skx"),
        ("skx_unc_imc0::UNC_M_CAS_COUNT:WR:t=200", "skx"),
        ("hswep_unc_imc0::UNC_M_CAS_COUNT:RD:i", "hsw_ep"),
        ("SKX_UNC_IMC0::unc_m_cas_count:rd:RD_REG", "skx"),
    ];
    let c = compare(None, &families, &qualified);
    assert!(c.compared > 4000, "only {} compared", c.compared);
    assert!(c.equal.len() > 3900, "only {} equal", c.equal.len());
    // A name read as another event would differ in the event select: only these, where the
    // tables choose another counter (libpfm4's IMC clockticks is the fixed counter's 0xff,
    // the JSON's event 0) or another code for the same name.
    let selects = &c.selects;
    let names: Vec<&str> = selects.iter().filter_map(|l| l.split(':').next()).collect();
    assert_eq!(
        names,
        ["hswep_unc_imc0", "ivbep_unc_pcu", "snbep_unc_imc0"],
        "{selects:#?}"
    );
    assert!(selects[0].contains("UNC_M_CLOCKTICKS"), "{selects:#?}");
    assert!(
        selects[1].contains("UNC_P_FREQ_MIN_PERF_P_CYCLES"),
        "{selects:#?}"
    );
    assert!(selects[2].contains("UNC_M_CLOCKTICKS"), "{selects:#?}");
}

/// The families of libpfm4's head that 4.13 lacks (Ice Lake-X's, Sapphire Rapids' and Granite
/// Rapids'): every event and unit mask of one box of each encodes as the head encodes it (by
/// the head's own table, `events/data/papi/uncore_events.toml`), with qualifiers. Oracle:
/// libpfm4 4.13.0+git106 (Debian sid's, in the lab's root) itself
/// (`pfm_get_os_event_encoding`, `PFM_OS_NONE`).
#[test]
fn the_heads_uncore_events_encode_as_the_head_encodes_them() {
    let root = match libpfm::head_root() {
        Ok(root) => root,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let head = families_listed(&pfm_uncore(Some(&root), &["-l".to_string()]));
    let old = if Path::new("/usr/include/perfmon/pfmlib.h").is_file() {
        families_listed(&pfm_uncore(None, &["-l".to_string()]))
    } else {
        Vec::new()
    };
    let new: Vec<&str> = head.into_iter().filter(|f| !old.contains(f)).collect();
    println!("the head's families 4.13 lacks: {new:?}");
    let qualified = [
        ("spr_unc_imc0::UNC_M_CAS_COUNT:RD", "spr"),
        ("spr_unc_imc11::UNC_M_CAS_COUNT:WR:t=2", "emr"),
        ("spr_unc_cha59::UNC_CHA_TOR_INSERTS:IA_MISS", "spr"),
        ("icx_unc_imc0::UNC_M_CAS_COUNT:RD", "icx"),
        ("gnr_unc_imc0::UNC_M_CAS_COUNT_SCH0:RD", "gnr"),
        ("spr_unc_imc0::UNC_M_CAS_COUNT:RD_REG:e", "spr"),
        ("SPR_UNC_CHA3::unc_cha_llc_lookup:any_f:i", "spr"),
        ("icx_unc_cha0::UNC_CHA_TOR_INSERTS:IA_MISS:t=1", "icx"),
    ];
    let c = compare(Some(&root), &new, &qualified);
    // Over every box: a family's boxes share its table.
    let (mut boxes, mut names) = (0, 0);
    for family in &new {
        let first = |name: &str| name.split("::").next().unwrap().starts_with(family);
        let count = papi::uncore::uncore_models()
            .flat_map(papi::uncore::uncore_families)
            .find(|f| f.libpfm4() == *family)
            .map_or(1, |f| usize::from(f.boxes().max(1)));
        boxes += count;
        names += count * c.equal.iter().filter(|n| first(n)).count();
    }
    println!("on all {boxes} of the head's new PMUs: {names} names encode as the head's");
    assert!(c.encoded > 4900, "only {} encoded", c.encoded);
    // Several unit masks of one event: the head refuses them on these families, as ours.
    let several = [
        ("spr_unc_imc0::UNC_M_CAS_COUNT:RD_REG:RD_UNDERFILL", "spr"),
        ("icx_unc_cha0::UNC_CHA_TOR_INSERTS:IA_MISS:DDR", "icx"),
    ];
    let names: Vec<String> = several.iter().map(|(n, _)| n.to_string()).collect();
    let theirs = libpfm4_encodings(Some(&root), &names);
    let database = Database::shipped().unwrap();
    for (name, model) in several {
        assert!(theirs[name].is_err(), "{name}: the head {:?}", theirs[name]);
        let ours = papi::uncore::read(&database, Some(model), name);
        assert!(matches!(ours, Some(Err(_))), "{name}: ours {ours:?}");
    }
    assert_eq!(c.lacking, Vec::<String>::new());
    assert_eq!(c.equal.len(), c.encoded);
}

/// `events/data/papi/uncore_events.toml` is what its generator, `papi/gen/uncore_events.c`,
/// writes from libpfm4's head for the families it names. Oracle: libpfm4 4.13.0+git106
/// (Debian sid's, in the lab's root) itself.
#[test]
fn the_uncore_event_table_is_the_heads() {
    let root = match libpfm::head_root() {
        Ok(root) => root,
        Err(why) => skip!(Need::Tools, "{why}"),
    };
    let path = manifest().join("../events/data/papi/uncore_events.toml");
    let shipped = std::fs::read_to_string(&path).unwrap();
    let version = shipped
        .lines()
        .find_map(|l| l.strip_prefix("# source: libpfm4 "))
        .and_then(|l| l.split(' ').next())
        .unwrap();
    let families: Vec<String> = shipped
        .lines()
        .filter_map(|l| l.strip_prefix("libpfm4 = \""))
        .map(|l| l.trim_end_matches('"').to_string())
        .collect();
    let source = std::fs::read_to_string(manifest().join("gen/uncore_events.c")).unwrap();
    let program = libpfm::build_for(Some(&root), &source, "papi-uncore-events").unwrap();
    let out = libpfm::command(Some(&root), &program)
        .arg(version)
        .args(&families)
        .env("LIBPFM_ENCODE_INACTIVE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout) == shipped,
        "{} differs from papi/gen/uncore_events.c's output",
        path.display()
    );
}

/// Config bit 21, the extended event select of the QPI and PCU boxes (uncore_snbep.c:
/// `format_attr_event_ext`, config:0-7,21).
const EXTENDED_SELECT: u64 = 1 << 21;

/// The unit mask's bits and the four above them, where libpfm4 4.13's Haswell-EP IMC tables
/// put some bank groups' unit masks (`UNC_M_RD_CAS_RANK0:BANKG1` is 0x120b0 there).
const UNIT_MASK_BITS: u64 = 0xf_ff00;

/// The made tree's PMU directory ([`made_tree`]), or the test skipped with why: mounting it
/// needs root, and the made box borrows the msr PMU's type.
macro_rules! made_tree_or_skip {
    () => {{
        if !crate::common::is_root() {
            skip!(Need::Privilege, "mounting a PMU tree needs root");
        }
        match made_tree() {
            Some(devices) => devices,
            None => skip!(
                Need::System,
                "no msr PMU here to lend the made box its type"
            ),
        }
    }};
}

/// A devices folder holding this machine's PMUs and a made `uncore_imc_0`: the type of the
/// msr PMU (whose event 0 is the TSC), a cpumask of CPU 0 and the format of the Intel IMC
/// boxes (arch/x86/events/intel/uncore_snbep.c, Linux 6.12: `snbep_uncore_formats_attr` and
/// `skx_uncore_formats_attr`, event config:0-7, umask config:8-15, edge config:18, inv
/// config:23, thresh config:24-31). SKX's and SNB-EP's `UNC_M_CLOCKTICKS` is event 0 in
/// the kernel's perf JSON (skylakex/uncore-memory.json, jaketown/uncore-memory.json): config
/// 0, the TSC there. `None` where this machine has no msr PMU. Made once for the tests that
/// mount it, which run at once: each mount holds the folder it was given, and a tree made
/// again under the same name would leave another test's mount holding a removed folder.
fn made_tree() -> Option<PathBuf> {
    static MADE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    MADE.get_or_init(make_tree).clone()
}

/// Makes the tree [`made_tree`] describes.
fn make_tree() -> Option<PathBuf> {
    let msr_type = std::fs::read_to_string(Path::new(DEVICES).join("msr/type")).ok()?;
    let devices = counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-papi-uncore-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&devices);
    std::fs::create_dir_all(&devices).unwrap();
    for pmu in std::fs::read_dir(DEVICES).unwrap().flatten() {
        let target = std::fs::canonicalize(pmu.path()).unwrap();
        std::os::unix::fs::symlink(target, devices.join(pmu.file_name())).unwrap();
    }
    let imc = devices.join("uncore_imc_0");
    for (file, text) in [
        ("type", msr_type.as_str()),
        ("cpumask", "0\n"),
        ("format/event", "config:0-7\n"),
        ("format/umask", "config:8-15\n"),
        ("format/edge", "config:18\n"),
        ("format/inv", "config:23\n"),
        ("format/thresh", "config:24-31\n"),
    ] {
        let path = imc.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    Some(devices)
}

/// Runs `command` with `devices` mounted over the kernel's PMU directory (and `cpuinfo` over
/// /proc/cpuinfo, where given) in a private mount namespace, on our libpapi when `ours`, the
/// CPU model `model` named for ours.
fn mounted(
    devices: &Path,
    cpuinfo: Option<&Path>,
    model: &str,
    ours: bool,
    command: &[&str],
) -> Output {
    let script = r#"mount --bind "$1" /sys/bus/event_source/devices || exit 97
[ -z "$2" ] || mount --bind "$2" /proc/cpuinfo || exit 98
shift 2; exec "$@""#;
    let mut run = Command::new("unshare");
    run.args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(devices)
        .arg(cpuinfo.map(Path::as_os_str).unwrap_or_default())
        .args(command)
        .env("COUNTERHAL_CPU_MODEL", model)
        .env("TESTS_QUIET", "1");
    if ours {
        run.env("LD_LIBRARY_PATH", library_dir());
    }
    run.output().expect("unshare (util-linux) runs")
}

/// A name of libpfm4 head's own table (`icx_unc_imc0::UNC_M_HCLOCKTICKS`, config 0 in the
/// head, which the kernel's perf JSON encodes as event 0xff) opens its raw config on the made
/// IMC box through libpapi and counts for real; a second unit mask is `PAPI_ENOEVNT`, as the
/// head refuses it. Oracles: libpfm4 4.13.0+git106's encoding (config 0, the generated
/// `events/data/papi/uncore_events.toml`) and the kernel counting it (the msr PMU's event 0,
/// the TSC, as the made box's type is the msr PMU's).
#[test]
fn a_head_uncore_event_counts_on_a_made_imc_box() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let devices = made_tree_or_skip!();
    let program = uncore_program();
    let program = program.to_str().unwrap();
    let good = "icx_unc_imc0::UNC_M_HCLOCKTICKS";
    let several = "icx_unc_imc0::UNC_M_CAS_COUNT:RD_REG:RD_UNDERFILL";
    let out = mounted(
        &devices,
        None,
        "icx",
        true,
        &[program, "add", good, several],
    );
    let ours = lines(&out);
    println!("ours: {ours:#?}");
    let line = &ours[good];
    assert_eq!(
        (field(line, "code"), field(line, "add"), field(line, "stop")),
        (0, 0, 0),
        "{line}"
    );
    assert!(field(line, "count") > 0, "{line}");
    assert_eq!(field(line, "component"), 1, "{line}");
    assert_eq!(field(&ours[several], "code"), -7, "{}", ours[several]);
}

/// `skx_unc_imc0::UNC_M_CLOCKTICKS` opens on the made IMC box through libpapi, system wide on
/// CPU 0 (its cpumask), on the `:cpu=` qualifier's CPU and on `PAPI_CPU_ATTACH`'s, and
/// counts for real; bad names answer as PAPI 7.0 answers. Oracles: the kernel (the count, a
/// TSC's); Debian's PAPI 7.0 beside ours for every error it can be made to give here (its
/// libpfm4 detects no uncore PMU on this CPU, so every uncore name is `PAPI_ENOEVNT` there at
/// the name, as ours for a box, event or model that is not here; a CPU past the machine's is
/// `PAPI_EINVAL` at the add for its `perf::TASK-CLOCK:cpu=4096`, as ours for the uncore
/// event); PAPI 7.0's papi_internal.c (`_papi_hwi_add_event`: an event of another component
/// than the set's is `PAPI_EINVAL`) for a set mixing components; PAPI's own utilities
/// (`papi_component_avail` lists the box, `papi_command_line` counts the event) on ours.
#[test]
fn an_uncore_event_counts_on_a_made_imc_box() {
    system_papi_or_skip!();
    papi_perf_event_or_skip!();
    let devices = made_tree_or_skip!();
    let program = uncore_program();
    let program = program.to_str().unwrap();
    let good = "skx_unc_imc0::UNC_M_CLOCKTICKS";
    let bad = [
        "skx_unc_imc1::UNC_M_CLOCKTICKS",
        "skx_unc_imc6::UNC_M_CLOCKTICKS",
        "skx_unc_imc0::NO_SUCH_EVENT",
        "skx_unc_imc0::UNC_M_CAS_COUNT:NO_SUCH_MASK",
        "skx_unc_imc0::UNC_M_CLOCKTICKS:u",
        "skx_unc_imc0::UNC_M_CLOCKTICKS:cpu=x",
        "bdx_unc_imc0::UNC_M_CLOCKTICKS",
        "skx_unc_nosuch0::UNC_M_CLOCKTICKS",
    ];
    let mut names = vec![good, "skx_unc_imc0::UNC_M_CLOCKTICKS:cpu=1"];
    names.extend(bad);
    names.push("skx_unc_imc0::UNC_M_CLOCKTICKS:cpu=4096");
    let mut args = vec![program, "add"];
    args.extend(&names);
    let ours = mounted(&devices, None, "skx", true, &args);
    let theirs = mounted(&devices, None, "skx", false, &args);
    let (ours, theirs) = (lines(&ours), lines(&theirs));
    println!("ours: {ours:#?}\nDebian's PAPI 7.0: {theirs:#?}");
    for name in [good, "skx_unc_imc0::UNC_M_CLOCKTICKS:cpu=1"] {
        let line = &ours[name];
        assert_eq!(
            (field(line, "code"), field(line, "add"), field(line, "stop")),
            (0, 0, 0),
            "{line}"
        );
        assert!(field(line, "count") > 0, "{line}");
        assert_eq!(field(line, "component"), 1, "{line}");
        assert_eq!(field(line, "set_component"), 1, "{line}");
    }
    for name in bad {
        assert_eq!(field(&ours[name], "code"), -7, "{name}");
        assert_eq!(field(&ours[name], "code"), field(&theirs[name], "code"));
    }
    let far = &ours["skx_unc_imc0::UNC_M_CLOCKTICKS:cpu=4096"];
    let real_far = run(
        Path::new(program),
        &["add", "perf::TASK-CLOCK:cpu=4096"],
        false,
    );
    let real_far = &lines(&real_far)["perf::TASK-CLOCK:cpu=4096"];
    assert_eq!(
        field(far, "add"),
        field(real_far, "add"),
        "{far} / {real_far}"
    );
    assert_eq!(field(far, "add"), -1);

    // One component a set: an uncore event beside a core event, either way round.
    for (first, second) in [(good, "perf::TASK-CLOCK"), ("perf::TASK-CLOCK", good)] {
        let out = mounted(
            &devices,
            None,
            "skx",
            true,
            &[program, "pair", first, second],
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(text.trim(), "pair first 0 second -1", "{first}, {second}");
    }
    // Attached to CPU 1 by PAPI_CPU_ATTACH (where this machine has a CPU 1).
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = if cpus > 1 { "1" } else { "0" };
    let out = mounted(&devices, None, "skx", true, &[program, "attach", cpu, good]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let counted: i64 = text.trim().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(
        text.starts_with("attach opt 0 add 0 start 0 stop 0 count") && counted > 0,
        "{text}"
    );

    // PAPI 7.0's component takes the whole CPU alone (`available_granularities`
    // PAPI_GRN_SYS: the thread's is PAPI_EINVAL) and the user, kernel and supervisor
    // domains; each counts every level on the box (perf_event_uncore.c).
    let out = mounted(&devices, None, "skx", true, &[program, "options", good]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let counted: i64 = text.trim().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(
        text.starts_with("options add 0 thr -1 sys 0 supervisor 0 user 0 start 0 stop 0 count")
            && counted > 0,
        "{text}"
    );

    // The component lists the box's events, by the event before its unit masks.
    let listed = lines(&mounted(
        &devices,
        None,
        "skx",
        true,
        &[program, "component"],
    ));
    println!("{listed:#?}");
    assert_eq!(listed["disabled"], "0");
    assert!(listed["event"].starts_with("skx_unc_imc0::"), "{listed:?}");
    assert!(listed["event"].ends_with("component 1"), "{listed:?}");
    assert!(listed["umask"].starts_with("skx_unc_imc0::"), "{listed:?}");
    let events: usize = listed["events"].split(' ').next().unwrap().parse().unwrap();
    assert!(events > 10, "{listed:?}");

    // PAPI's own utilities on ours (papi-tools): the component's PMU, and the event counted.
    if Command::new("papi_command_line")
        .arg("-h")
        .output()
        .is_err()
    {
        skip!(
            Need::Tools,
            "PAPI's utilities are not installed (apt-get install papi-tools)"
        );
    }
    let out = mounted(&devices, None, "skx", true, &["papi_component_avail"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("PMUs supported: skx_unc_imc0"), "{text}");
    let named = format!("{good}:cpu=0");
    let out = mounted(&devices, None, "skx", true, &["papi_command_line", &named]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("papi_command_line on ours:\n{text}");
    assert!(
        text.contains(&format!("Successfully added: {named}")),
        "{text}"
    );
    let count = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{named} :")))
        .and_then(|v| v.trim().parse::<u64>().ok());
    assert!(count.is_some_and(|c| c > 0), "{text}");
}

/// libpfm4 4.13's uncore PMUs that it finds by the CPU alone, with no look at the kernel's
/// PMUs, and the kernel PMU each opens (its `.perf_name`): its AMD ones
/// (lib/pfmlib_amd64_fam19h_l3.c, lib/pfmlib_amd64_rapl.c, lib/pfmlib_amd64_fam15h.c), which
/// have no `PFMLIB_OS_DETECT`, where each Intel uncore PMU's is `pfm_intel_x86_perf_detect`
/// (its sysfs PMU). Our table has none of them (papi/README.md says why).
const FOUND_BY_THE_CPU_ALONE: [(&str, &str); 3] = [
    ("amd64_fam19h_zen3_l3", "amd_l3"),
    ("amd64_rapl", "power"),
    ("amd64_fam15h_nb", "amd_nb"),
];

/// What Debian's PAPI 7.0 lists in its uncore component here (`tests/c/uncore.c listed`: its
/// PMUs, and each event as adding it after the listing went), where it enables the component
/// with PMUs of [`FOUND_BY_THE_CPU_ALONE`] alone whose kernel PMUs are not here: an AMD Zen 2
/// or Zen 3 without the kernel's `amd_l3` and `power` PMUs (a VM). `None` where its component
/// is disabled. Panics where it enables the component with another PMU, or with one whose
/// kernel PMU is here: PAPI counts there and ours does not.
fn papi_lists_pmus_found_by_the_cpu_alone(program: &Path) -> Option<String> {
    if lines(&run(program, &["component"], false))["disabled"] != "0" {
        return None;
    }
    let listed = run(program, &["listed"], false);
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let pmus = listed.lines().next().and_then(|l| l.strip_prefix("pmus "));
    for pmu in pmus.unwrap_or_default().split(',') {
        let kernel = FOUND_BY_THE_CPU_ALONE.iter().find(|(p, _)| *p == pmu);
        let Some((_, kernel)) = kernel else {
            panic!("Debian's PAPI enables its uncore component with {pmu}, ours not: {listed}");
        };
        assert!(
            !Path::new(DEVICES).join(kernel).exists(),
            "{pmu}'s kernel PMU {kernel} is here: Debian's PAPI counts with it, and ours does \
             not map libpfm4's AMD uncore PMUs"
        );
    }
    Some(listed)
}

/// Where the machine has none of the model's uncore boxes (this one, or any without an Intel
/// uncore libpfm4 knows), the component is there, disabled, as PAPI 7.0's: the same index,
/// description, defaults, reason and enumeration answers. Oracle: Debian's PAPI 7.0 on the
/// same machine.
///
/// On an AMD Zen 2 or Zen 3 without the kernel's `amd_l3` and `power` PMUs (a VM), Debian's
/// PAPI enables the component with libpfm4's `amd64_rapl` and `amd64_fam19h_zen3_l3`, which
/// libpfm4 4.13 finds by CPUID alone ([`FOUND_BY_THE_CPU_ALONE`]), and lists their events;
/// but it counts none of them: each is `PAPI_ENOEVNT` by name before the listing, and
/// `PAPI_EINVAL` at the add after it (libpfm4 finds no kernel PMU to open). Ours stays
/// disabled and answers each of those names `PAPI_ENOEVNT`: the description and defaults are
/// PAPI's, and neither library counts an uncore event here.
#[test]
fn without_uncore_boxes_the_component_is_disabled_as_papis() {
    system_papi_or_skip!();
    let uncore_here = std::fs::read_dir(DEVICES)
        .map(|d| {
            d.flatten()
                .any(|p| p.file_name().to_string_lossy().starts_with("uncore_"))
        })
        .unwrap_or(true);
    if uncore_here {
        skip!(Need::System, "this machine has uncore PMUs");
    }
    let program = uncore_program();
    let mut ours = lines(&run(&program, &["component"], true));
    let mut theirs = lines(&run(&program, &["component"], false));
    println!("ours: {ours:#?}\nDebian's PAPI 7.0: {theirs:#?}");
    assert_eq!(ours["disabled_reason"], "No uncore PMUs or events found");
    if let Some(listed) = papi_lists_pmus_found_by_the_cpu_alone(&program) {
        println!("listed by Debian's PAPI 7.0, each added after the listing:\n{listed}");
        let after_listing = key_values(&listed);
        let names: Vec<&str> = after_listing
            .keys()
            .filter(|k| k.contains("::"))
            .map(String::as_str)
            .collect();
        assert!(!names.is_empty(), "{listed}");
        let mut args = vec!["add"];
        args.extend(&names);
        let (on_ours, on_papi) = (
            lines(&run(&program, &args, true)),
            lines(&run(&program, &args, false)),
        );
        for name in names {
            assert_eq!(field(&on_papi[name], "code"), -7, "PAPI: {}", on_papi[name]);
            assert_ne!(
                field(&after_listing[name], "add"),
                0,
                "PAPI: {}",
                after_listing[name]
            );
            assert_eq!(field(&on_ours[name], "code"), -7, "ours: {}", on_ours[name]);
        }
        // What the enabling changes: whether and why it is disabled, its counters and events.
        for key in [
            "disabled",
            "disabled_reason",
            "cpu",
            "hwctrs",
            "event",
            "umask",
            "events",
            "enum_first",
        ] {
            ours.remove(key);
            theirs.remove(key);
        }
    }
    assert_eq!(ours, theirs);
}

/// PAPI 7.0's own uncore tests (papi-examples: components/perf_event_uncore/tests), built
/// against Debian's papi.h, pass on ours where PAPI's helper names an uncore event: an SNB-EP
/// (CPUID family 6, model 45, as a /proc/cpuinfo mounted over the machine's says) with the
/// made IMC box, which `perf_event_uncore` counts as `snbep_unc_imc0::UNC_M_CLOCKTICKS:cpu=0`
/// and `perf_event_uncore_attach` through `PAPI_CPU_ATTACH`. Oracle: the programs' own
/// verdicts (and Debian's PAPI beside them, whose libpfm4 detects no SNB-EP here and skips).
#[test]
fn papis_own_uncore_tests_pass_on_a_made_box() {
    system_papi_or_skip!();
    let examples = Path::new("/usr/share/doc/papi-examples/examples");
    let tests = examples.join("components/perf_event_uncore/tests");
    if !tests.is_dir() {
        skip!(
            Need::Tools,
            "PAPI 7.0's tests are not installed (apt-get install papi-examples)"
        );
    }
    let devices = made_tree_or_skip!();
    let dir = devices.with_extension("programs");
    std::fs::create_dir_all(&dir).unwrap();
    let processor = |n: usize| {
        format!(
            "processor\t: {n}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 45\n\
             model name\t: Intel(R) Xeon(R) CPU E5-2680 0 @ 2.70GHz\nstepping\t: 7\n\
             cpu MHz\t\t: 2700.000\n\n"
        )
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpuinfo = dir.join("cpuinfo");
    std::fs::write(&cpuinfo, (0..cpus).map(processor).collect::<String>()).unwrap();
    let testlib = examples.join("testlib");
    let mut verdicts = Vec::new();
    for test in ["perf_event_uncore", "perf_event_uncore_attach"] {
        let program = dir.join(test);
        let built = Command::new("cc")
            .args(["-O1", "-w", "-I"])
            .arg(&testlib)
            .arg("-I")
            .arg(&tests)
            .arg(tests.join(format!("{test}.c")))
            .arg(tests.join("perf_event_uncore_lib.c"))
            .arg(testlib.join("test_utils.c"))
            .arg(testlib.join("do_loops.c"))
            .arg("-o")
            .arg(&program)
            .args(["-lpapi", "-lm"])
            .output()
            .expect("cc runs");
        assert!(
            built.status.success(),
            "{}",
            String::from_utf8_lossy(&built.stderr)
        );
        let verdict = |ours: bool| {
            let out = mounted(
                &devices,
                Some(&cpuinfo),
                "snb_ep",
                ours,
                &[program.to_str().unwrap()],
            );
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let word = ["PASSED", "SKIPPED", "FAILED"]
                .into_iter()
                .find(|v| text.contains(v))
                .unwrap_or("CRASHED");
            (word, text)
        };
        let ((real, said), (ours, _)) = (verdict(false), verdict(true));
        println!("{test}: Debian's PAPI 7.0 {real}, ours {ours}");
        verdicts.push((test, real, said, ours));
    }
    // Debian's PAPI skips them where its component is disabled; where its libpfm4 enables it
    // with PMUs found by the CPU alone (an AMD Zen 3), they go on to the SNB-EP event, which
    // that libpfm4 does not have, and fail at its name.
    let enabled_by_the_cpu = papi_lists_pmus_found_by_the_cpu_alone(&uncore_program()).is_some();
    for (test, real, said, ours) in &verdicts {
        assert_eq!(*ours, "PASSED", "{test}");
        if enabled_by_the_cpu {
            assert!(
                *real != "FAILED" || said.contains("uncore event: Event does not exist"),
                "{test}: real PAPI fails here: {said}"
            );
        } else {
            assert_ne!(*real, "FAILED", "{test}: real PAPI fails here: {said}");
        }
    }
}
