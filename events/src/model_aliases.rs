//! The names people type for a CPU model beyond its id and its own aliases: perf's x86
//! directory names (`skylake`, `icelakex`, `amdzen4`: the third column of the kernel's
//! tools/perf/pmu-events/arch/x86/mapfile.csv) and the short names used elsewhere (`zen4`,
//! GCC's `-march` names `znver4`, `icelake-server`, `skylake-avx512`), each written as the
//! perf directory it means.
//!
//! One table, consulted only when a name is neither a model id nor a model's own alias, so
//! start-up parses nothing more for them. Names are compared without case and without `-`,
//! `_` and `.` (`Sapphire-Rapids` is `sapphirerapids`). The test `model_aliases` of this crate
//! checks every directory of the kernel's mapfile against this table: each name resolves to
//! the model that detection gives for the CPUID signatures of its row (Linux 6.12's mapfile;
//! `perf72_models` holds the directories Linux 7.2's adds).

/// perf's x86 directory names and the model id each one's CPUs detect as (the performance
/// cores' table on a hybrid chip, as detection picks without the core).
pub const PERF_DIRECTORIES: &[(&str, &str)] = &[
    ("alderlake", "adl_glc"),
    ("alderlaken", "adl_grt"),
    ("arrowlake", "arl_lnc"),
    ("bonnell", "atom"),
    ("broadwell", "bdw"),
    ("broadwellde", "bdw_de"),
    ("broadwellx", "bdw_ep"),
    ("cascadelakex", "clx"),
    ("clearwaterforest", "cwf"),
    ("elkhartlake", "ehl"),
    ("emeraldrapids", "emr"),
    ("goldmont", "glm"),
    ("goldmontplus", "glp"),
    ("grandridge", "grr"),
    ("graniterapids", "gnr"),
    ("haswell", "hsw"),
    ("haswellx", "hsw_ep"),
    ("icelake", "icl"),
    ("icelakex", "icx"),
    ("ivybridge", "ivb"),
    ("ivytown", "ivb_ep"),
    ("jaketown", "snb_ep"),
    ("knightslanding", "knl"),
    ("lunarlake", "lnl_lnc"),
    ("meteorlake", "mtl_rwc"),
    ("nehalemep", "nhm"),
    ("nehalemex", "nhm_ex"),
    ("pantherlake", "ptl_cgc"),
    ("rocketlake", "rkl"),
    ("sandybridge", "snb"),
    ("sapphirerapids", "spr"),
    ("sierraforest", "srf"),
    ("silvermont", "slm"),
    ("skylake", "skl"),
    ("skylakex", "skx"),
    ("snowridgex", "tmt"),
    ("tigerlake", "tgl"),
    ("westmereep-dp", "wsm_dp"),
    ("westmereep-sp", "wsm"),
    ("westmereex", "wsm_ex"),
    ("amdzen1", "amd64_fam17h_zen1"),
    ("amdzen2", "amd64_fam17h_zen2"),
    ("amdzen3", "amd64_fam19h_zen3"),
    ("amdzen4", "amd64_fam19h_zen4"),
    ("amdzen5", "amd64_fam1ah_zen5"),
    ("amdzen6", "amd64_fam1ah_zen6"),
];

/// Short names people type, each with the perf directory it means: AMD's core names, GCC's
/// `-march` names, and the server/client spellings of Intel's code names.
pub const SHORT_NAMES: &[(&str, &str)] = &[
    ("zen1", "amdzen1"),
    ("zen2", "amdzen2"),
    ("zen3", "amdzen3"),
    ("zen4", "amdzen4"),
    ("zen5", "amdzen5"),
    ("zen6", "amdzen6"),
    ("znver1", "amdzen1"),
    ("znver2", "amdzen2"),
    ("znver3", "amdzen3"),
    ("znver4", "amdzen4"),
    ("znver5", "amdzen5"),
    ("nehalem", "nehalemep"),
    ("westmere", "westmereep-sp"),
    ("sandybridge-ep", "jaketown"),
    ("ivybridge-ep", "ivytown"),
    ("haswell-ep", "haswellx"),
    ("broadwell-ep", "broadwellx"),
    ("skylake-server", "skylakex"),
    ("skylake-avx512", "skylakex"),
    ("cascadelake", "cascadelakex"),
    ("icelake-client", "icelake"),
    ("icelake-server", "icelakex"),
    ("snowridge", "snowridgex"),
];

/// `text` as aliases are compared: lower case, without `-`, `_` and `.`.
fn key(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars()
        .filter(|c| !matches!(c, '-' | '_' | '.'))
        .map(|c| c.to_ascii_lowercase())
}

/// Whether `a` and `b` are the same alias ([`key`]), compared without making either's key:
/// a model named at start-up is compared with every row of both tables.
fn same(a: &str, b: &str) -> bool {
    key(a).eq(key(b))
}

/// The model id `name` stands for in [`PERF_DIRECTORIES`] or [`SHORT_NAMES`], if any.
pub fn model_for_alias(name: &str) -> Option<&'static str> {
    let directory = |name: &str| {
        PERF_DIRECTORIES
            .iter()
            .find(|(d, _)| same(d, name))
            .map(|&(_, id)| id)
    };
    directory(name).or_else(|| {
        SHORT_NAMES
            .iter()
            .find(|(short, _)| same(short, name))
            .and_then(|&(_, dir)| directory(dir))
    })
}

/// Every alias of this table for the model `id`, perf's directory names first.
pub fn aliases_of(id: &str) -> Vec<&'static str> {
    let directories: Vec<&str> = PERF_DIRECTORIES
        .iter()
        .filter(|(_, m)| m.eq_ignore_ascii_case(id))
        .map(|&(d, _)| d)
        .collect();
    let short = SHORT_NAMES
        .iter()
        .filter(|(_, dir)| directories.contains(dir))
        .map(|&(s, _)| s);
    directories.iter().copied().chain(short).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_resolve_to_their_directorys_model() {
        assert_eq!(model_for_alias("zen4"), Some("amd64_fam19h_zen4"));
        assert_eq!(model_for_alias("Sapphire-Rapids"), Some("spr"));
        assert_eq!(model_for_alias("icelake-server"), Some("icx"));
        assert_eq!(model_for_alias("westmereep_dp"), Some("wsm_dp"));
        assert_eq!(model_for_alias("pentium"), None);
        assert!(aliases_of("icx").contains(&"icelake-server"));
    }

    /// Every short name means a directory of the table.
    #[test]
    fn every_short_name_names_a_directory() {
        for (short, dir) in SHORT_NAMES {
            assert!(
                PERF_DIRECTORIES.iter().any(|(d, _)| d == dir),
                "{short}: {dir}"
            );
            assert!(
                !PERF_DIRECTORIES.iter().any(|(d, _)| same(d, short)),
                "{short} repeats a directory"
            );
        }
    }
}
