//! The lists of backends kept beside the registry (`src/registry.rs`, the list of the backend
//! crates' registrations), each checked against it: Cargo's features and the README's table
//! of systems. The names are the registry's own (`counterhal::registry::names()`).

use std::collections::BTreeSet;
use std::path::Path;

/// The workspace's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Cargo's features are the registry's backends, each once, beside the parts of the shipped
/// data, the device models and the Linux backend's sampling and cgroup counter; the facade's default has every backend but the raw-MSR one,
/// the shipped data and the named regions; the C API's default has them all.
#[test]
fn the_default_features_are_the_registrys_backends() {
    let names = counterhal::registry::names();
    let registered: BTreeSet<&str> = names.iter().copied().collect();
    let manifest = |path: &str| -> toml::Table {
        std::fs::read_to_string(root().join(path))
            .unwrap()
            .parse()
            .unwrap()
    };
    let facade = manifest("Cargo.toml");
    let features = facade["features"].as_table().unwrap();
    let default = |table: &toml::Table| -> BTreeSet<String> {
        table["features"]["default"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect()
    };
    // A backend's feature is its crate, nothing else.
    let backends: BTreeSet<&str> = features
        .iter()
        .filter(|(f, value)| {
            value.as_array().unwrap()[..] == [toml::Value::from(format!("dep:counterhal-{f}"))]
        })
        .map(|(f, _)| registered.get(f.as_str()).copied().unwrap_or("?"))
        .collect();
    assert_eq!(
        backends, registered,
        "Cargo.toml's features are the backends, one feature each"
    );
    let data = ["x86-models", "arm-models", "metrics"];
    let readers = ["descriptions", "events-file"];
    let parts: BTreeSet<String> = data
        .into_iter()
        .chain(readers)
        .map(|part| {
            let forwarded = format!("counterhal-events/{part}");
            assert_eq!(features[part].as_array().unwrap()[..], [forwarded.into()]);
            part.to_string()
        })
        .chain(["device-models".to_string()])
        // The Linux backend's parts beside counting, each forwarded to its crate.
        .chain(["sampling", "cgroup-counter"].map(|part| {
            let forwarded = format!("counterhal-linux?/{part}");
            assert_eq!(features[part].as_array().unwrap()[..], [forwarded.into()]);
            part.to_string()
        }))
        .chain(registered.iter().map(|b| b.to_string()))
        .collect();
    // The facade's default leaves out the readers of the user's files, the device models and
    // the backend that programs the PMU's registers itself.
    // It has the named regions and the counted commands too, parts of the facade alone (the
    // C API asks for them).
    let facade_default: BTreeSet<String> = (parts.iter())
        .filter(|p| {
            !readers.contains(&p.as_str()) && !["device-models", "msr"].contains(&p.as_str())
        })
        .cloned()
        .chain(["regions", "command"].map(String::from))
        .collect();
    assert_eq!(
        default(&facade),
        facade_default,
        "the facade's default features"
    );
    let capi = manifest("capi/Cargo.toml");
    // Beside its own, the C API's default names the facade's and the database's defaults (the
    // same features under their names), so that its build and the PAPI library's are one; it
    // has every part, readers and device models included.
    let mut capi_parts = parts.clone();
    capi_parts.extend(["facade/default", "counterhal-events/default"].map(String::from));
    assert_eq!(default(&capi), capi_parts, "the C API's default features");
    for feature in &parts {
        let forwarded = format!("facade/{feature}");
        assert_eq!(
            capi["features"][feature.as_str()].as_array().unwrap()[..],
            [forwarded.into()],
            "the C API forwards `{feature}` to the facade"
        );
    }
}

/// The library guide's Cargo.toml snippets (docs/library.md's `toml` blocks) parse, each
/// `counterhal` in them names features the facade's manifest has, and the criterion they
/// depend on is the release `counterhal::criterion` is built for; one of them enables
/// `criterion` for benchmarks alone (a dev-dependency).
///
/// Oracle: the facade's Cargo.toml, read by the `toml` crate.
#[test]
fn the_guides_cargo_snippets_name_the_manifests_features() {
    let guide = std::fs::read_to_string(root().join("docs/library.md")).unwrap();
    let facade: toml::Table = std::fs::read_to_string(root().join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let features = facade["features"].as_table().unwrap();
    let criterion = facade["dependencies"]["criterion"]["version"]
        .as_str()
        .unwrap();
    let blocks: Vec<&str> = guide
        .split("```toml\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert!(!blocks.is_empty(), "no toml block in docs/library.md");
    let mut for_benches = false;
    for block in blocks {
        let snippet: toml::Table = block
            .parse()
            .unwrap_or_else(|e| panic!("docs/library.md's snippet does not parse: {e}\n{block}"));
        for section in ["dependencies", "dev-dependencies"] {
            let Some(deps) = snippet.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            if let Some(named) = deps.get("criterion") {
                let version = named.as_str().or_else(|| named.get("version")?.as_str());
                assert_eq!(version, Some(criterion), "{block}");
            }
            let Some(ours) = deps.get("counterhal") else {
                continue;
            };
            let asked = ours.get("features").and_then(|f| f.as_array());
            for feature in asked.into_iter().flatten() {
                let feature = feature.as_str().unwrap();
                assert!(features.contains_key(feature), "`{feature}`: {block}");
                for_benches |= section == "dev-dependencies" && feature == "criterion";
            }
        }
    }
    assert!(
        for_benches,
        "no snippet enables `criterion` for benchmarks alone"
    );
}

/// README.md's table of systems, rendered from the registry: one row a backend, in probe
/// order (its name, the systems where its device exists, what it reaches, where it was
/// verified).
fn readme_table() -> String {
    let mut table = String::from(
        "| backend | OS | counts through | verified on this project's machines |\n|---|---|---|---|\n",
    );
    for backend in counterhal::REGISTRY {
        let systems: Vec<String> = backend
            .systems
            .iter()
            .map(|os| match *os {
                "openbsd" => "OpenBSD".to_string(),
                "freebsd" => "FreeBSD".to_string(),
                "netbsd" => "NetBSD".to_string(),
                other => {
                    let mut name = other.to_string();
                    name[..1].make_ascii_uppercase();
                    name
                }
            })
            .collect();
        table.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            backend.name,
            systems.join(", "),
            backend.reaches,
            backend.verified
        ));
    }
    table
}

/// The markers around the rendered table in README.md.
const TABLE_BEGIN: &str =
    "<!-- the table of systems: rendered from src/registry.rs by tests/registry.rs -->\n";
const TABLE_END: &str = "<!-- end of the table of systems -->\n";

/// README.md's table of systems is the registry's, rendered (`COUNTERHAL_WRITE_REFERENCE=1
/// cargo test --test main registry::` writes it again): adding a backend never edits it by
/// hand.
#[test]
fn the_readme_table_of_systems_is_rendered_from_the_registry() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let begin = readme
        .find(TABLE_BEGIN)
        .expect("README.md has the table of systems' opening marker")
        + TABLE_BEGIN.len();
    let end = readme[begin..]
        .find(TABLE_END)
        .expect("README.md has the table of systems' closing marker")
        + begin;
    let expected = readme_table();
    if readme[begin..end] == expected {
        return;
    }
    if std::env::var_os("COUNTERHAL_WRITE_REFERENCE").is_some() {
        let written = format!("{}{expected}{}", &readme[..begin], &readme[end..]);
        std::fs::write(&path, written).unwrap();
    } else {
        panic!(
            "README.md's table of systems is not the registry's: render it again with \
             COUNTERHAL_WRITE_REFERENCE=1 cargo test --test main registry::\n{expected}"
        );
    }
}

/// Oracle: the facade's Cargo.toml, whose `sampling` and `cgroup-counter` features hold the
/// Linux backend's sampler and its counter of many cgroups. Built with them the backend says
/// it samples; built without (`features = ["linux"]`, which scripts/check-features tests),
/// asking to sample or for the cgroup counter is an error that names the feature to add.
#[cfg(target_os = "linux")]
#[test]
fn the_linux_backends_sampler_and_cgroup_counter_name_their_features() {
    use counterhal::{SampleFields, SampleOptions, Target};
    let Some(chosen) = counterhal::Setup::new().backend("linux").open().ok() else {
        counterhal_conformance::skip!(
            counterhal_conformance::skip::Need::System,
            "the Linux backend does not probe here"
        );
    };
    assert_eq!(
        chosen.backend().dyn_capabilities().sampling(),
        cfg!(feature = "sampling"),
        "the backend says it samples in a build with `sampling` alone"
    );
    if !cfg!(feature = "sampling") {
        let options = SampleOptions::period(100_000, SampleFields::profile());
        let Err(refused) = chosen.open_sampler(&["cpu-clock"], &Target::this_thread(), &options)
        else {
            panic!("no sampler without the `sampling` feature");
        };
        assert!(
            refused.to_string().contains("`sampling` feature"),
            "{refused}"
        );
    }
    if !cfg!(feature = "cgroup-counter") {
        let auto = counterhal_hal::CgroupModeChoice::Auto;
        let Err(refused) = chosen.cgroup_counter(&["task-clock"], &[0], auto) else {
            panic!("no cgroup counter without the `cgroup-counter` feature");
        };
        assert!(
            refused.to_string().contains("`cgroup-counter` feature"),
            "{refused}"
        );
    }
}
