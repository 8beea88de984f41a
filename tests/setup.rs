//! The one way to start: every option of a `Setup`, and what each refuses.

use std::path::{Path, PathBuf};

use counterhal::prelude::*;
use counterhal::{Context, ErrorKind};

/// Another machine's sysfs tree, as the Linux backend's tests keep it.
fn skylake_tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("backend-linux/tests/data/machines/skl-client")
}

/// Oracle: the kernel's Skylake client tree (arch/x86/events/intel/core.c's `cpu` PMU and its
/// format, as sysfs shows them): a `Setup` over it resolves perf's syntax against that
/// machine's PMUs, whatever this machine has.
#[test]
fn a_setup_opens_the_backend_over_a_sysfs_tree() {
    let root = skylake_tree();
    let chosen = match Setup::new().sysfs(&root).cpu_model("skl").open() {
        Ok(chosen) => chosen,
        // A build without the Linux backend reads no tree, and says which backend would.
        Err(e) if !cfg!(all(feature = "linux", target_os = "linux")) => {
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let reader = counterhal::REGISTRY
        .iter()
        .find(|r| r.sysfs.is_some())
        .expect("a backend that reads a tree");
    assert_eq!(chosen.name(), reader.name);
    assert_eq!(chosen.cpu_model(), Some("skl"));
    assert!(chosen.passed_over().is_empty());
    chosen.resolve("cpu/event=0xc0,umask=0x0/").unwrap();
    // A backend that reads no tree says so, and names the one that does.
    let Some(other) = counterhal::REGISTRY.iter().find(|r| r.sysfs.is_none()) else {
        return;
    };
    let refused = Setup::new().sysfs(&root).backend(other.name).open();
    let refused = refused.err().unwrap();
    assert_eq!(refused.kind(), ErrorKind::InvalidInput, "{refused}");
    let named = format!("the {} backend", other.name);
    assert!(refused.message().contains(&named), "{refused}");
    assert!(refused.hint().unwrap().contains(reader.name), "{refused}");
}

/// A context already made is used as given (its CPU model); given with an events file or a
/// CPU model, the two would disagree, and the `Setup` says so rather than pick one.
#[test]
fn a_setup_takes_a_context_already_made() {
    let context = Context::new(None, Some("skl")).expect("the shipped database loads");
    match Setup::new().context(context.clone()).open() {
        Ok(chosen) => assert_eq!(chosen.cpu_model(), Some("skl")),
        Err(e) => assert!(!e.message().is_empty()),
    }
    let both = Setup::new()
        .context(context)
        .cpu_model("p6")
        .open()
        .err()
        .unwrap();
    assert_eq!(both.kind(), ErrorKind::InvalidInput, "{both}");
    assert!(both.hint().unwrap().contains("Context::new"), "{both}");
}
