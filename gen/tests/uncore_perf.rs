//! The uncore tables perf 6.1's own tables amend (`counterhal-gen uncore --perf perf`) are
//! what the generator writes from Linux 6.12's JSON and perf 6.1.

use std::path::Path;

use counterhal_conformance::fixtures;
use counterhal_gen::{uncore, uncore_perf};

const COMMIT: &str = "linux-source-6.12 6.12.117-1~deb12u1 (Debian)";

/// Oracle: Linux 6.12's perf JSON (Debian's linux-source-6.12) and perf 6.1's own uncore
/// tables (Debian's linux-perf, `perf list --details` under a tree of the table's PMUs).
/// Regenerating Broadwell-EP's and Ivy Bridge-EP's tables gives the shipped bytes: perf 6.1's
/// extended event selects (`UNC_Q_RxL_OCCUPANCY_SNP.VN1` is `event=0x119`) and the events
/// Linux 6.12 removed (`UNC_H_ADDR_OPC_MATCH.FILT`) included. Skips without root, perf or the
/// tarball.
#[test]
fn perf_6_1_amends_the_uncore_tables_as_shipped() {
    if let Some((need, why)) = fixtures::perf_tree::unready() {
        counterhal_conformance::skip!(need, "{why}");
    }
    let top = match fixtures::kernel_source() {
        Ok(top) => top,
        Err(why) => {
            counterhal_conformance::skip!(counterhal_conformance::skip::Need::Tools, "{why}")
        }
    };
    let root = top.join("tools/perf/pmu-events/arch/x86");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events/data/generated/uncore");
    for directory in ["broadwellx", "ivytown"] {
        let mut tables = vec![uncore::table(&root, directory, COMMIT).unwrap()];
        uncore_perf::amend_tables(&mut tables, Path::new("perf"), &root.join("mapfile.csv"))
            .unwrap();
        let text = uncore::table_toml(&tables[0]);
        let on_disk = std::fs::read_to_string(shipped.join(format!("{directory}.toml"))).unwrap();
        assert!(
            text == on_disk,
            "{directory}.toml differs from a regeneration"
        );
        assert!(
            text.contains("events take its extended event select"),
            "{directory}"
        );
    }
    let bdx = std::fs::read_to_string(shipped.join("broadwellx.toml")).unwrap();
    assert!(
        bdx.contains("{ name = \"UNC_Q_RxL_OCCUPANCY_SNP.VN1\", terms = \"event=0x119,umask=2\" }")
    );
    assert!(
        bdx.contains("{ name = \"UNC_H_ADDR_OPC_MATCH.FILT\", terms = \"event=0x20,umask=0x3\" }")
    );
}
