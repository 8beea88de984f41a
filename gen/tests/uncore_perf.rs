//! The uncore tables as shipped are what the generator writes from Linux 7.2's perf JSON, with
//! Linux 6.12's names kept (`--older`) and perf 6.1's own tables' amendments (`--perf perf`).

use std::path::Path;

use counterhal_conformance::fixtures;
use counterhal_gen::{uncore, uncore_perf};

const COMMIT: &str = "linux-source-7.2 7.2.13-1 (Debian)";
const OLDER: &str = "linux-source-6.12 6.12.117-1~deb12u1 (Debian)";

/// Oracle: Linux 7.2's perf JSON (Debian sid's linux-source-7.2 7.2.13-1), Linux 6.12's
/// (Debian's linux-source-6.12) and perf 6.1's own uncore tables (Debian's linux-perf, `perf
/// list --details` under a tree of the table's PMUs). Regenerating Broadwell-EP's, Ivy
/// Bridge-EP's, Skylake-SP's, Emerald Rapids' and Zen 6's tables gives the shipped bytes: perf
/// 6.1's extended event selects (`UNC_Q_RxL_OCCUPANCY_SNP.VN1` is `event=0x119`), the events
/// Linux 6.12 removed (`UNC_H_ADDR_OPC_MATCH.FILT`), the names Linux 7.2 dropped
/// (`UPI_DATA_BANDWIDTH_TX`, `UNC_IIO_BANDWIDTH_OUT.PART0_FREERUN`) and Skylake-SP's CHA
/// filter in config1's upper half included. Skips without root, perf or the tarballs.
#[test]
fn the_uncore_tables_regenerate_as_shipped() {
    if let Some((need, why)) = fixtures::perf_tree::unready() {
        counterhal_conformance::skip!(need, "{why}");
    }
    let older = match fixtures::kernel_source() {
        Ok(top) => top.join("tools/perf/pmu-events/arch/x86"),
        Err(why) => {
            counterhal_conformance::skip!(counterhal_conformance::skip::Need::Tools, "{why}")
        }
    };
    let dir = std::env::temp_dir().join(format!("counterhal-gen-uncore-72-{}", std::process::id()));
    let root = match crate::arm64::tree_7_2(&dir, &["tools/perf/pmu-events/arch/x86/*"]) {
        Ok(top) => top.join("tools/perf/pmu-events/arch/x86"),
        Err(why) => {
            counterhal_conformance::skip!(counterhal_conformance::skip::Need::Tools, "{why}")
        }
    };
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/data/generated/uncore");
    let kept = uncore::tables(&older, OLDER).unwrap();
    for directory in [
        "broadwellx",
        "ivytown",
        "skylakex",
        "emeraldrapids",
        "amdzen6",
    ] {
        let mut tables = vec![uncore::table(&root, directory, COMMIT).unwrap()];
        let kept: Vec<_> = kept
            .iter()
            .filter(|t| t.directory == directory)
            .cloned()
            .collect();
        uncore::keep_older(&mut tables, &kept, OLDER);
        uncore_perf::amend_tables(&mut tables, Path::new("perf"), &root.join("mapfile.csv"))
            .unwrap();
        let text = uncore::table_toml(&tables[0]);
        let on_disk = std::fs::read_to_string(shipped.join(format!("{directory}.toml"))).unwrap();
        assert!(
            text == on_disk,
            "{directory}.toml differs from a regeneration"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let read = |name: &str| std::fs::read_to_string(shipped.join(name)).unwrap();
    let bdx = read("broadwellx.toml");
    assert!(
        bdx.contains("{ name = \"UNC_Q_RxL_OCCUPANCY_SNP.VN1\", terms = \"event=0x119,umask=2\" }")
    );
    assert!(
        bdx.contains("{ name = \"UNC_H_ADDR_OPC_MATCH.FILT\", terms = \"event=0x20,umask=0x3\" }")
    );
    let skx = read("skylakex.toml");
    assert!(skx.contains(
        "{ name = \"UNC_CHA_TOR_INSERTS.IA_HIT_CRD\", terms = \"event=0x35,umask=0x11,config1=0x4023300000000\" }"
    ));
    assert!(skx.contains("{ name = \"UPI_DATA_BANDWIDTH_TX\", terms = \"event=2,umask=0xf\""));
    assert!(read("amdzen6.toml").contains("name = \"amd_l3\""));
}
