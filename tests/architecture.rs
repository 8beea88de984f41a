//! The rules ARCHITECTURE.md and STYLE.md state, checked over the workspace's sources: rooms
//! of at most 700 lines of code, no module that imports a module importing it back, an event
//! database that names no backend, unsafe code only in `sys` modules, every skip through the
//! skip door, and a library that does not depend on the command's crates.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path
                    .file_name()
                    .is_some_and(|n| n != "target" && n != ".git")
                {
                    pending.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The `src` folders of the workspace's packages.
fn source_roots() -> Vec<PathBuf> {
    let mut roots = vec![root().join("src")];
    for entry in std::fs::read_dir(root()).unwrap().flatten() {
        let src = entry.path().join("src");
        if entry.path().join("Cargo.toml").is_file() && src.is_dir() {
            roots.push(src);
        }
    }
    roots.sort();
    roots
}

/// The text before the first `#[cfg(test)]`: the code a room is judged by.
fn code(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |end| &text[..end])
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn no_room_holds_more_than_700_lines_of_code() {
    let mut large = Vec::new();
    for src in source_roots() {
        for file in rust_files(&src) {
            let text = std::fs::read_to_string(&file).unwrap();
            let lines = code(&text).lines().count();
            if lines > 700 {
                large.push(format!("{} ({lines} lines)", relative(&file)));
            }
        }
    }
    assert!(large.is_empty(), "split by concept: {large:?}");
}

/// A crate's modules by path (`sys::perf`; the crate root is ``) and the modules each imports.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut texts = BTreeMap::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        let text = std::fs::read_to_string(&file).unwrap();
        texts.insert(parts.join("::"), code(&text).to_string());
    }
    let names: BTreeSet<String> = texts.keys().cloned().collect();
    // The longest known module a path starts with.
    let resolve = |path: &str| -> Option<String> {
        let segments: Vec<&str> = path.split("::").collect();
        (1..=segments.len())
            .rev()
            .map(|n| segments[..n].join("::"))
            .find(|candidate| names.contains(candidate))
    };
    let path_after = |text: &str, prefix: &str| -> Vec<String> {
        text.match_indices(prefix)
            .map(|(at, _)| {
                text[at + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect::<String>()
                    .trim_end_matches(':')
                    .to_string()
            })
            .filter(|p| !p.is_empty())
            .collect()
    };
    let mut graph = BTreeMap::new();
    for (module, text) in &texts {
        let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
        let mut paths = path_after(text, "crate::");
        for path in path_after(text, "super::") {
            paths.push(if parent.is_empty() || module.is_empty() {
                path
            } else {
                format!("{parent}::{path}")
            });
        }
        for line in text.lines() {
            let line = line.trim_start();
            let rest = line
                .strip_prefix("pub use ")
                .or_else(|| line.strip_prefix("use "))
                .or_else(|| line.strip_prefix("pub(crate) use "));
            if let Some(rest) = rest {
                let child = rest.trim_start_matches("self::");
                if let Some((first, _)) = child.split_once("::") {
                    let full = if module.is_empty() {
                        first.to_string()
                    } else {
                        format!("{module}::{first}")
                    };
                    paths.push(full);
                }
            }
        }
        let imports: BTreeSet<String> = paths
            .iter()
            .filter_map(|p| resolve(p))
            .filter(|m| m != module)
            .collect();
        graph.insert(module.clone(), imports);
    }
    graph
}

/// The modules of one cycle in `graph`, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            return Some(path[at..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mut cycles = Vec::new();
    for src in source_roots() {
        if let Some(cycle) = find_cycle(&module_graph(&src)) {
            cycles.push(format!("{}: {}", relative(&src), cycle.join(" -> ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles: {cycles:?}");
    // The check finds a cycle where there is one.
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    graph.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    graph.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(find_cycle(&graph).map(|c| c.len()), Some(3));
}

/// The code lines of `text` (comments and doc comments left out), lower-cased.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, String)> + '_ {
    text.lines().enumerate().filter_map(|(i, line)| {
        let trimmed = line.trim_start();
        (!trimmed.starts_with("//")).then(|| (i + 1, line.to_ascii_lowercase()))
    })
}

#[test]
fn the_event_database_names_no_backend() {
    let mut named = Vec::new();
    for file in rust_files(&root().join("events/src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, lower) in code_lines(&text) {
            for backend in ["pctr", "msr", "linux", "backendkind"] {
                let hit = lower.match_indices(backend).any(|(at, _)| {
                    let before = lower[..at].chars().next_back();
                    let after = lower[at + backend.len()..].chars().next();
                    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
                    !word(before) && !word(after)
                });
                if hit {
                    named.push(format!("{}:{line}: {backend}", relative(&file)));
                }
            }
        }
    }
    assert!(named.is_empty(), "{named:?}");
}

#[test]
fn unsafe_code_lives_in_sys_modules_only() {
    let mut found = Vec::new();
    for src in source_roots() {
        for file in rust_files(&src) {
            let rel = relative(&file);
            let allowed = rel.contains("/sys") || rel == "conformance/src/workload.rs";
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, lower) in code_lines(&text) {
                let uses = ["unsafe {", "unsafe fn", "unsafe impl", "unsafe extern"]
                    .iter()
                    .any(|u| lower.contains(u));
                if uses && !allowed {
                    found.push(format!("{rel}:{line}"));
                }
            }
        }
    }
    assert!(found.is_empty(), "unsafe outside sys: {found:?}");
}

#[test]
fn every_skip_goes_through_the_skip_door() {
    let mut found = Vec::new();
    let mut folders = source_roots();
    for entry in std::fs::read_dir(root()).unwrap().flatten() {
        if entry.path().join("tests").is_dir() {
            folders.push(entry.path().join("tests"));
        }
    }
    folders.push(root().join("tests"));
    for folder in folders {
        for file in rust_files(&folder) {
            let rel = relative(&file);
            if rel == "conformance/src/skip.rs" || rel == "tests/architecture.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, lower) in code_lines(&text) {
                if lower.contains("eprintln!(\"skip") {
                    found.push(format!("{rel}:{line}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "use counterhal_conformance::skip!: {found:?}"
    );
}

/// The names in a manifest's `[dependencies]` table.
fn dependencies(manifest: &Path) -> BTreeMap<String, toml::Value> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let value: toml::Table = toml::from_str(&text).unwrap();
    value
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.clone().into_iter().collect())
        .unwrap_or_default()
}

#[test]
fn a_library_user_builds_no_command_and_no_test_suite() {
    let facade = dependencies(&root().join("Cargo.toml"));
    for command_only in ["clap", "serde_json"] {
        assert!(
            !facade.contains_key(command_only),
            "the facade depends on {command_only}"
        );
    }
    let optional = |deps: &BTreeMap<String, toml::Value>, name: &str| {
        deps.get(name)
            .is_none_or(|d| d.get("optional").and_then(|o| o.as_bool()) == Some(true))
    };
    assert!(optional(&facade, "counterhal-conformance"));
    // Every backend crate, found by its folder (`backend-*`), not by a list to keep.
    let mut backends: Vec<PathBuf> = std::fs::read_dir(root())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("backend-"))
                && p.join("Cargo.toml").is_file()
        })
        .collect();
    backends.sort();
    assert!(backends.len() >= 4, "{backends:?}");
    for backend in &backends {
        let deps = dependencies(&backend.join("Cargo.toml"));
        assert!(
            optional(&deps, "counterhal-conformance"),
            "{}: the conformance suite is a normal dependency",
            backend.display()
        );
    }
}
