//! The rules ARCHITECTURE.md states, checked over the workspace: rooms of at most 700 lines of
//! code, functions of at most 150 lines, no module that imports a module importing it back, an event database that names no
//! backend, unsafe code only in `sys` modules (and libpapi's C interface), libpapi in floors, every skip through the skip door, crates that
//! depend on one another only as its map allows (read from Cargo's metadata), a library that
//! does not depend on the command's crates, docs that name only paths that exist, and /proc and /sys read through one `System`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's root.
pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, sorted.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
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

pub(crate) fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
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

/// The first segments of the paths `text` names after `prefix` (`crate::`, `super::`),
/// each item of a brace list (`crate::{codes, library::with}`) counted.
fn rooms_named(text: &str, prefix: &str) -> BTreeSet<String> {
    let word = |rest: &str| -> String {
        rest.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut named = BTreeSet::new();
    for (at, _) in text.match_indices(prefix) {
        let rest = &text[at + prefix.len()..];
        if let Some(list) = rest.strip_prefix('{') {
            let mut depth = 0;
            let end = list
                .char_indices()
                .find_map(|(i, c)| match c {
                    '{' => {
                        depth += 1;
                        None
                    }
                    '}' if depth == 0 => Some(i),
                    '}' => {
                        depth -= 1;
                        None
                    }
                    _ => None,
                })
                .unwrap_or(list.len());
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in list[..end].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        named.insert(word(&list[start..i]));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            named.insert(word(&list[start..end]));
        } else {
            named.insert(word(rest));
        }
    }
    named.remove("");
    named.remove("self");
    named
}

/// The rooms of a crate's `src` (its top-level modules, a folder one room) and the rooms
/// each imports: `crate::room`, a brace list's
/// rooms, and a top-level file's `super::room`, in the code before its tests.
fn rooms(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    rooms_read(src, code)
}

/// [`rooms`], each file's text taken as `judged` gives it (its code, or all of it).
fn rooms_read(src: &Path, judged: fn(&str) -> &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let room = first.trim_end_matches(".rs").to_string();
        if room == "lib" || room == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let text = judged(&text);
        let mut imports = rooms_named(text, "crate::");
        if rel.components().count() == 1 {
            imports.extend(rooms_named(text, "super::"));
        }
        imports.remove(&room);
        graph.entry(room).or_default().extend(imports);
    }
    let known: BTreeSet<String> = graph.keys().cloned().collect();
    for imports in graph.values_mut() {
        imports.retain(|r| known.contains(r));
    }
    graph
}

/// libpapi stands in floors, as capi does: the C interface on top (`papi/src/abi/`: C
/// pointers in and out, and nothing imports it), the library's rooms below it, and the
/// operating system at the bottom (`papi/src/sys/`: signals, libpfm4 and libsde found at run
/// time, importing no room of the crate); no room imports one above it (the rooms, a folder
/// one room, import one another without a circle, so each stands above all it imports).
/// Oracle: the crate's sources, read by [`rooms`] (imports that run back up: 0).
#[test]
fn libpapi_runs_in_layers() {
    let graph = rooms(&root().join("papi/src"));
    assert!(
        graph.len() > 20 && graph.contains_key("abi") && graph.contains_key("sys"),
        "papi/src's rooms were not found: {:?}",
        graph.keys()
    );
    let mut broken = Vec::new();
    if let Some(cycle) = find_cycle(&graph) {
        broken.push(format!("an import runs back up: {}", cycle.join(" -> ")));
    }
    for (room, imports) in &graph {
        if imports.contains("abi") {
            broken.push(format!(
                "{room} imports the C interface (abi), the top floor"
            ));
        }
    }
    if !graph["sys"].is_empty() {
        broken.push(format!(
            "sys, the operating system's floor, imports the library: {:?}",
            graph["sys"]
        ));
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    // The reading finds brace lists and paths alike.
    let text = "use crate::{codes::{EINVAL, OK}, library};\nlet x = crate::sets::start(1);";
    assert_eq!(
        rooms_named(text, "crate::"),
        BTreeSet::from(["codes", "library", "sets"].map(String::from))
    );
}

/// The most statics with interior mutability libpapi may hold (`papi/src`): the process's
/// PAPI is one value behind one lock (`library::PROCESS`), and beside it stand only what that
/// lock cannot serve: one value of what a signal handler or a call that must not wait for the
/// lock reaches (`unlocked::UNLOCKED`: the overflow and read tables, the armed signal, the init
/// state, the releases, the thread-id function, the profiling generator, the system, the locks
/// PAPI hands its user, the watches libsde calls into under its own lock), the lock's
/// re-entrancy flag (`library::HOLDING`), and the state PAPI keeps per thread (`hl::LOCAL`,
/// `rates::STATE`): thread-locals.
const PAPI_STATICS_AT_MOST: usize = 5;

/// The statics of `text` (a Rust file) with interior mutability: (line, name, whether the
/// comment above it says why it is static). A static counts where its type names a lock, a
/// once-cell, an atomic or a cell (`Mutex`, `RwLock`, `Once`, `OnceLock`, `OnceCell`, `Atomic*`,
/// `Cell`, `RefCell`, `UnsafeCell`; those of `thread_local!` too), or is a struct of the same
/// file whose fields do (or an array of one). The comment is the `//` lines above it (attributes
/// between are skipped), and it says why with "static" or "thread-local".
fn interior_statics(text: &str) -> Vec<(usize, String, bool)> {
    const INTERIOR: [&str; 8] = [
        "Mutex",
        "RwLock",
        "Once",
        "OnceLock",
        "OnceCell",
        "Atomic",
        "Cell<",
        "UnsafeCell",
    ];
    let interior = |t: &str| INTERIOR.iter().any(|k| t.contains(k));
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let item = line.trim_start();
        let item = item
            .strip_prefix("pub(crate) ")
            .or_else(|| item.strip_prefix("pub "))
            .unwrap_or(item);
        let Some(rest) = item.strip_prefix("static ") else {
            continue;
        };
        let Some((name, after)) = rest.split_once(':') else {
            continue;
        };
        let declared = lines[i..lines.len().min(i + 3)].join(" ");
        let ty = after.split(" = ").next().unwrap_or(after);
        let ty = if ty.trim().is_empty() { &declared } else { ty };
        // An array's element, or the type itself: a struct of this file whose fields hold
        // interior mutability counts as they do.
        let element = ty
            .trim()
            .strip_prefix('[')
            .and_then(|t| t.split(';').next())
            .or(Some(ty.trim()));
        let of_struct = element.is_some_and(|e| {
            let head = format!("struct {} {{", e.trim());
            text.split_once(&head)
                .and_then(|(_, body)| body.split("\n}").next())
                .is_some_and(interior)
        });
        if !interior(ty) && !of_struct {
            continue;
        }
        let mut above = i;
        while above > 0 && lines[above - 1].trim_start().starts_with("#[") {
            above -= 1;
        }
        let mut comment = String::new();
        while above > 0 && lines[above - 1].trim_start().starts_with("//") {
            above -= 1;
            comment.push_str(&lines[above].to_ascii_lowercase());
        }
        let says_why = comment.contains("static") || comment.contains("thread-local");
        found.push((i + 1, name.trim().to_string(), says_why));
    }
    found
}

/// libpapi's state is one value behind one lock: `papi/src` holds at most
/// [`PAPI_STATICS_AT_MOST`] statics with interior mutability, each with a comment above it
/// saying why it must be static. Oracle: the crate's sources (the count is what
/// `grep -rn "static \|thread_local!" papi/src` lists, less the `&'static` borrows).
#[test]
fn libpapi_keeps_its_state_in_one_value() {
    let mut statics = Vec::new();
    for file in rust_files(&root().join("papi/src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, name, says_why) in interior_statics(&text) {
            statics.push((format!("{}:{line}: {name}", relative(&file)), says_why));
        }
    }
    let names: Vec<&str> = statics.iter().map(|(s, _)| s.as_str()).collect();
    assert!(
        names.iter().any(|s| s.ends_with(": PROCESS")),
        "the library's lock (library.rs PROCESS) was not found: {names:?}"
    );
    assert!(
        statics.len() <= PAPI_STATICS_AT_MOST,
        "papi/src holds {} statics with interior mutability, more than {PAPI_STATICS_AT_MOST}: \
         hold the new state in the Process value (library.rs) instead\n{}",
        statics.len(),
        names.join("\n")
    );
    each_says_why(
        statics
            .iter()
            .filter(|(_, says_why)| !says_why)
            .map(|(s, _)| s.as_str()),
    );
    // The reading finds each kind, arrays of a struct of atomics included, and the comment.
    let sample = "struct Slot {\n    armed: AtomicBool,\n}\nstruct Plain {\n    n: u32,\n}\n\
        /// Static: a signal handler reads it.\npub static TABLE: [Slot; 4] = [const { \
        Slot::new() }; 4];\nstatic NAMES: [Plain; 1] = [Plain { n: 1 }];\n\
        static COUNT: AtomicU32 = AtomicU32::new(0);\nthread_local! {\n    \
        #[allow(dead_code)]\n    static HELD: std::cell::Cell<bool> = const { \
        std::cell::Cell::new(false) };\n}\nfn f(x: &'static str) {}\n\
        static ONE: Slot = Slot::new();\nstatic PLAIN: Plain = Plain { n: 1 };\n\
        fn g() {\n    static TRIED: std::sync::Once = std::sync::Once::new();\n}\n";
    assert_eq!(
        interior_statics(sample),
        vec![
            (8, "TABLE".to_string(), true),
            (10, "COUNT".to_string(), false),
            (13, "HELD".to_string(), false),
            (16, "ONE".to_string(), false),
            (19, "TRIED".to_string(), false),
        ]
    );
}

/// The statics with interior mutability the Linux backend may hold (`backend-linux/src`,
/// outside its tests): what a signal handler reaches, which no value can carry to it
/// (`sys/overflow.rs`'s `TABLE` of overflow slots), the handler's installation, once for the
/// process as `sigaction` is (`INSTALLED`). Anything else a backend knows lives in the
/// backend value (its tracefs, and whether it tried to mount it: `tracepoints::Found`).
const LINUX_STATICS: [&str; 2] = ["TABLE", "INSTALLED"];

/// The Linux backend keeps its state in values (ARCHITECTURE.md, STYLE.md's rule 30): its
/// statics with interior mutability, outside its tests, are [`LINUX_STATICS`], each with a
/// comment above it saying why it must be static. Oracle: the crate's sources (what `grep -rn
/// "static " backend-linux/src` lists, less the `&'static` borrows, the C snippets, the
/// immutable `REGISTRATION`, the thread-local thread id and a test's lock).
#[test]
fn the_linux_backend_keeps_its_state_in_values() {
    let mut statics = Vec::new();
    for file in rust_files(&root().join("backend-linux/src")) {
        let text = without_test_items(&std::fs::read_to_string(&file).unwrap());
        for (line, name, says_why) in interior_statics(&text) {
            statics.push((name, format!("{}:{line}", relative(&file)), says_why));
        }
    }
    let names: Vec<&str> = statics.iter().map(|(name, ..)| name.as_str()).collect();
    assert_eq!(
        names, LINUX_STATICS,
        "backend-linux/src's statics with interior mutability: keep new state in the backend \
         value instead: {statics:?}"
    );
    each_says_why(
        statics
            .iter()
            .filter(|(.., says_why)| !says_why)
            .map(|(_, at, _)| at.as_str()),
    );
}

/// Fails naming the statics in `silent`, those without a comment above saying why they must
/// be static.
fn each_says_why<'s>(silent: impl Iterator<Item = &'s str>) {
    let silent: Vec<&str> = silent.collect();
    assert!(
        silent.is_empty(),
        "statics without a comment above saying why they must be static (\"Static: ...\", \
         or why a thread-local):\n{}",
        silent.join("\n")
    );
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
    // The registry's backends, and hal's old enum of them (`BackendKind`).
    let mut backends = counterhal::registry::names();
    backends.push("backendkind");
    let mut named = Vec::new();
    for file in rust_files(&root().join("events/src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, lower) in code_lines(&text) {
            for backend in &backends {
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
            // libpapi's C interface is its top floor, above the library, and its `sys` the
            // operating system's, below it (`libpapi_runs_in_layers`).
            let allowed = rel.contains("/sys")
                || rel.starts_with("papi/src/abi/")
                || rel == "conformance/src/workload.rs";
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

/// A skip for a missing tool says how to install it: every reason that says something "is
/// not installed" names its package (`apt-get install PACKAGE`, `Debian's PACKAGE`, or
/// PyPI's and npm's `pip install`, `npm install`),
/// so that a reader of the skip list knows what to install (14 said only "perf is not
/// installed").
#[test]
fn every_missing_tool_is_named_with_its_package() {
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
            if rel == "tests/architecture.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, literal) in string_literals(&text) {
                let named = ["apt-get install", "Debian's", "pip install", "npm install"]
                    .iter()
                    .any(|how| literal.contains(how));
                if literal.contains(" is not installed")
                    && !named
                    && !literal.contains("is not installed as ")
                {
                    found.push(format!("{rel}:{line}: {literal}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "name the package (apt-get install PACKAGE): {found:#?}"
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
    // The command's parser and plots, and the exporter with its HTTP, TLS, YAML, bcrypt and
    // RE2 crates.
    let faces_only = [
        "clap",
        "plotters",
        "counterhal-serve",
        "httparse",
        "rustls",
        "bcrypt",
        "yaml-rust2",
        "regex",
    ];
    for command_only in faces_only {
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

/// A workspace package as Cargo's metadata describes it: its folder, and the workspace packages
/// it depends on, by kind (`normal`, `dev`, `build`).
struct Package {
    folder: String,
    depends: BTreeMap<String, BTreeSet<String>>,
}

/// The workspace's packages by name, from `cargo metadata --no-deps`.
fn workspace_packages() -> BTreeMap<String, Package> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let names: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let mut workspace = BTreeMap::new();
    for package in packages {
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let folder = relative(manifest.parent().unwrap());
        let mut depends: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for dependency in package["dependencies"].as_array().unwrap() {
            let name = dependency["name"].as_str().unwrap();
            if names.contains(name) {
                let kind = dependency["kind"].as_str().unwrap_or("normal");
                depends
                    .entry(kind.to_string())
                    .or_default()
                    .insert(name.to_string());
            }
        }
        workspace.insert(
            package["name"].as_str().unwrap().to_string(),
            Package { folder, depends },
        );
    }
    workspace
}

/// The backticked names in one cell of a Markdown table.
fn backticked(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// ARCHITECTURE.md's dependency table: each package with the workspace packages it may depend
/// on and those its tests may also use.
fn dependency_map() -> BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Who may depend on whom"))
        .expect("ARCHITECTURE.md has a section `Who may depend on whom`");
    let mut map = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
        assert_eq!(
            cells.len(),
            3,
            "package | may depend on | tests may also use: {line}"
        );
        let package = backticked(cells[0]).into_iter().next().unwrap();
        let previous = map.insert(
            package.clone(),
            (backticked(cells[1]), backticked(cells[2])),
        );
        assert!(previous.is_none(), "{package} has two rows");
    }
    map
}

/// The packages of the backend folders (`backend-*`).
fn backends(workspace: &BTreeMap<String, Package>) -> BTreeSet<String> {
    workspace
        .iter()
        .filter(|(_, p)| p.folder.starts_with("backend-"))
        .map(|(name, _)| name.clone())
        .collect()
}

#[test]
fn every_crate_depends_only_on_what_the_map_allows() {
    let workspace = workspace_packages();
    let map = dependency_map();
    let listed: BTreeSet<&String> = map.keys().collect();
    let packages: BTreeSet<&String> = workspace.keys().collect();
    assert_eq!(
        listed, packages,
        "ARCHITECTURE.md's table lists every workspace package, once"
    );
    let mut wrong = Vec::new();
    for (name, package) in &workspace {
        let (may, tests) = &map[name];
        for (kind, depends) in &package.depends {
            for dependency in depends {
                let allowed = may.contains(dependency)
                    || (kind == "dev" && (tests.contains(dependency) || dependency == name));
                if !allowed {
                    wrong.push(format!("{name} -> {dependency} ({kind})"));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "dependencies ARCHITECTURE.md does not allow: {wrong:?}"
    );
}

#[test]
fn the_map_keeps_the_arrows_pointing_one_way() {
    // The rules behind the table, so that allowing an arrow in it is not enough.
    let workspace = workspace_packages();
    let map = dependency_map();
    let backends = backends(&workspace);
    assert!(backends.len() >= 4, "{backends:?}");
    // Only the facade depends on a backend; a face's tests may use one where they need a
    // backend over a tree of their own (the exporter's) or its own types (the C API's read
    // loop, which the instruction guard counts beside the facade's).
    let faces = ["counterhal-serve", "counterhal-capi"];
    let leaves = [
        "counterhal-cli",
        "counterhal-capi",
        "counterhal-papi",
        "counterhal-python",
        "counterhal-slurm",
        "counterhal-gen",
    ];
    let mut broken = Vec::new();
    // The vocabulary stands on the system's facts alone (a backend is made with the
    // program's `System`), and those on nothing.
    if map["counterhal-hal"]
        .0
        .iter()
        .any(|d| d != "counterhal-system")
    {
        broken
            .push("counterhal-hal depends on no workspace crate but counterhal-system".to_string());
    }
    if !map["counterhal-system"].0.is_empty() {
        broken.push("counterhal-system depends on no workspace crate".to_string());
    }
    for (name, (may, tests)) in &map {
        for dependency in may.iter().chain(tests) {
            let through_tests = !may.contains(dependency) && faces.contains(&name.as_str());
            if backends.contains(dependency) && name != "counterhal" && !through_tests {
                broken.push(format!(
                    "{name} -> {dependency}: only the facade names a backend (a face's tests \
                     may, where they need one)"
                ));
            }
            if leaves.contains(&dependency.as_str()) && dependency != name {
                broken.push(format!(
                    "{name} -> {dependency}: nothing depends on a face or a tool"
                ));
            }
            // The exporter is a face the command links (its `serve` feature), nothing else.
            if dependency == "counterhal-serve" && name != "counterhal-cli" {
                broken.push(format!(
                    "{name} -> {dependency}: only the command links the exporter"
                ));
            }
        }
    }
    // The C boundary sits under the libraries C calls alone: the two C libraries, the Slurm
    // plugin and the Python extension module (which shares their fork count).
    if !map["counterhal-cboundary"].0.is_empty() {
        broken.push("counterhal-cboundary depends on no workspace crate".to_string());
    }
    for (name, (may, tests)) in &map {
        let called_from_c = [
            "counterhal-capi",
            "counterhal-papi",
            "counterhal-slurm",
            "counterhal-python",
        ]
        .contains(&name.as_str());
        if may.iter().chain(tests).any(|d| d == "counterhal-cboundary") && !called_from_c {
            broken.push(format!(
                "{name} -> counterhal-cboundary: only the C API, libpapi, the Slurm plugin \
                 and the Python module use the C boundary"
            ));
        }
    }
    // The backends know the vocabulary and the database, never the facade.
    for backend in &backends {
        let (may, _) = &map[backend];
        for must in ["counterhal-hal", "counterhal-events"] {
            if !may.contains(must) {
                broken.push(format!("{backend} builds on {must}"));
            }
        }
        if may.contains("counterhal") {
            broken.push(format!(
                "{backend} -> counterhal: a backend knows no facade"
            ));
        }
    }
    assert!(broken.is_empty(), "{broken:?}");
}

/// Oracle: Cargo's metadata (the backend packages, by their `backend-*` folders) and the
/// faces' own sources and manifests. The command, libpapi, the exporter, the C API and the
/// Python face reach a backend only through the facade (its capabilities,
/// `counterhal::advanced`): no path of a backend crate in their sources, tests included, and
/// no backend crate among their `[dependencies]`.
#[test]
fn the_faces_reach_a_backend_only_through_the_facade() {
    let workspace = workspace_packages();
    let backends = backends(&workspace);
    assert!(backends.len() >= 4, "{backends:?}");
    let paths: Vec<String> = backends
        .iter()
        .map(|name| format!("{}::", name.replace('-', "_")))
        .collect();
    let mut found = Vec::new();
    for face in ["cli", "papi", "serve", "capi", "python", "slurm"] {
        for file in rust_files(&root().join(face).join("src")) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in text.lines().enumerate() {
                if let Some(path) = paths.iter().find(|path| line.contains(path.as_str())) {
                    found.push(format!("{}:{}: {path}", relative(&file), number + 1));
                }
            }
        }
        let manifest = dependencies(&root().join(face).join("Cargo.toml"));
        for backend in &backends {
            if manifest.contains_key(backend) {
                found.push(format!("{face}/Cargo.toml: depends on {backend}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the faces go through the facade (a backend's capabilities, `counterhal::advanced`, \
         the registry), never to a backend crate:\n{}",
        found.join("\n")
    );
}

/// The Markdown files whose paths are checked: the top-level guides and docs/.
fn guides() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|f| root().join(f))
        .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut inside = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if !inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Whether a path of the repository matches `pattern`, whose components may hold one `*`.
fn matches_in_repository(base: &Path, pattern: &str) -> bool {
    let mut candidates = vec![base.to_path_buf()];
    for component in pattern.trim_end_matches('/').split('/') {
        let mut next = Vec::new();
        for dir in &candidates {
            match component.split_once('*') {
                None => {
                    let path = dir.join(component);
                    if path.exists() {
                        next.push(path);
                    }
                }
                Some((prefix, suffix)) => {
                    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                        let name = entry.file_name().to_string_lossy().into_owned();
                        if name.len() >= prefix.len() + suffix.len()
                            && name.starts_with(prefix)
                            && name.ends_with(suffix)
                        {
                            next.push(entry.path());
                        }
                    }
                }
            }
        }
        candidates = next;
    }
    !candidates.is_empty()
}

/// The repository paths a guide names: inline code that starts with one of the repository's
/// top-level entries (`cli/src/main.rs`, `.ci/run`, `Cargo.toml`), relative to the root, and
/// link targets that are not web addresses, relative to the guide. A span with `<` (a
/// placeholder: `backend-<name>/`) or blanks is no path.
fn named_paths(guide: &Path, top_level: &BTreeSet<String>) -> Vec<(String, PathBuf)> {
    let text = prose(&std::fs::read_to_string(guide).unwrap());
    let mut paths = Vec::new();
    for span in text.split('`').skip(1).step_by(2) {
        // `events/src/parse.rs:12` names the file.
        let span = match span.rsplit_once(':') {
            Some((path, line)) if line.bytes().all(|b| b.is_ascii_digit()) => path,
            _ => span,
        };
        if span.is_empty() || span.contains(['<', ' ', '\n']) {
            continue;
        }
        let first = span.split('/').next().unwrap();
        let is_path = top_level.contains(first) && (span.contains('/') || span.contains('.'));
        if is_path {
            paths.push((span.to_string(), root().to_path_buf()));
        }
    }
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap();
        let web = target.contains("://") || target.starts_with("mailto:");
        if !target.is_empty() && !web && !target.contains(' ') {
            paths.push((target.to_string(), guide.parent().unwrap().to_path_buf()));
        }
    }
    paths
}

#[test]
fn every_path_the_guides_name_exists() {
    let top_level: BTreeSet<String> = std::fs::read_dir(root())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "target" && n != ".git")
        .collect();
    let mut missing = Vec::new();
    let mut checked = 0;
    for guide in guides() {
        for (path, base) in named_paths(&guide, &top_level) {
            checked += 1;
            if !matches_in_repository(&base, &path) {
                missing.push(format!("{}: {path}", relative(&guide)));
            }
        }
    }
    assert!(missing.is_empty(), "paths that do not exist: {missing:#?}");
    assert!(
        checked > 100,
        "only {checked} paths found: is the scan blind?"
    );
    // The scan sees what it must, and nothing it must not.
    let sample = root().join("target/architecture-sample.md");
    std::fs::create_dir_all(sample.parent().unwrap()).unwrap();
    std::fs::write(
        &sample,
        "`cli/src/nothing.rs` [x](../nowhere.md) `msr/tsc/` `backend-<name>/` `/dev/pctr`\n\
         [web](https://example.org/a) `docs/man/*.1` `events/src/parse.rs:12`\n\
         ```sh\nscripts/not-here\n```\n",
    )
    .unwrap();
    let found: Vec<String> = named_paths(&sample, &top_level)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        found,
        [
            "cli/src/nothing.rs",
            "docs/man/*.1",
            "events/src/parse.rs",
            "../nowhere.md"
        ]
    );
}

/// The rustdoc links of a Markdown text that Markdown renders as text: `` [`Name`] `` with
/// no `(target)`, `[label]` or `: definition` after it and no `` [`Name`]: `` definition in
/// the text (rustdoc resolves them as paths; GitHub and every other CommonMark reader print
/// the brackets).
fn rustdoc_only_links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut found = Vec::new();
    let mut rest = prose.as_str();
    while let Some(start) = rest.find("[`") {
        rest = &rest[start + 1..];
        let Some(end) = rest.find("`]") else { break };
        let label = &rest[..end + 1];
        let after = &rest[end + 2..];
        let defined = prose.contains(&format!("\n[{label}]:"));
        if !label.contains('\n')
            && !after.starts_with(['(', '[', ':'])
            && !defined
            && !found.contains(&label.to_string())
        {
            found.push(label.to_string());
        }
    }
    found
}

/// Every README and guide reads as Markdown, where GitHub shows it: a crate README included as
/// its crate's docs (`#![doc = include_str!("../README.md")]`) links no item the rustdoc way
/// alone (`` [`Database::load`] ``), which Markdown prints with its brackets.
/// Oracle: CommonMark 0.31's shortcut reference links (section 6.3): `[label]` is a link only
/// where a link reference definition matches it.
#[test]
fn every_link_of_the_guides_and_readmes_is_a_markdown_link() {
    let mut files = guides();
    for entry in std::fs::read_dir(root()).unwrap().flatten() {
        let readme = entry.path().join("README.md");
        if readme.is_file() {
            files.push(readme);
        }
    }
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for label in rustdoc_only_links(&text) {
            broken.push(format!("{}: [{label}]", relative(file)));
        }
    }
    assert!(
        broken.is_empty(),
        "links only rustdoc resolves (write `Name` or [`Name`](path)): {broken:#?}"
    );
    assert!(files.len() > 20, "only {} files read", files.len());
    // The scan finds what it must, and nothing it must not.
    let sample = "[`a`] [`b`](x.rs) [`c`][d] [`e`]\n\n[`e`]: https://example.org\n";
    assert_eq!(rustdoc_only_links(sample), ["`a`"]);
}

/// scripts/check-targets lints the tests of the crates it names `os_free` on the host only,
/// because their code names no OS or architecture: a cfg on one would make them compile
/// differently for the other targets, which would then go unchecked.
#[test]
fn os_free_crates_have_no_target_cfg() {
    let script = std::fs::read_to_string(root().join("scripts/check-targets")).unwrap();
    let line = script
        .lines()
        .find(|l| l.starts_with("os_free=("))
        .expect("scripts/check-targets lists its os_free crates");
    let names: Vec<&str> = line["os_free=(".len()..line.len() - 1]
        .split_whitespace()
        .collect();
    assert!(!names.is_empty(), "{line}");
    let workspace = workspace_packages();
    let mut found = Vec::new();
    for name in names {
        let package = workspace
            .get(name)
            .unwrap_or_else(|| panic!("scripts/check-targets names {name}, not a package"));
        for file in rust_files(&root().join(&package.folder)) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let cfg = [
                    "target_os",
                    "target_arch",
                    "target_family",
                    "target_pointer_width",
                ]
                .iter()
                .any(|key| line.contains(key))
                    || ["cfg(unix", "cfg(windows", "cfg(not(unix", "std::os::"]
                        .iter()
                        .any(|key| line.contains(key));
                if cfg {
                    found.push(format!("{}:{}: {}", relative(&file), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "these crates are checked for other targets only as dependencies (scripts/check-targets' \
         os_free), but their code names an OS or architecture; take the crate out of os_free:\n{}",
        found.join("\n")
    );
}

/// `text` with the insides of comments, strings and character literals blanked (newlines
/// kept), so that the braces and `fn`s left are the code's own.
fn blank_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let before_ident = i > 0 && ident(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if c == 'r'
            && !(before_ident && chars[i - 1] != 'b')
            && matches!(next, Some('"' | '#'))
            && chars[i + 1..]
                .iter()
                .find(|&&c| c != '#')
                .is_some_and(|&c| c == '"')
        {
            // A raw string: r"...", r#"..."#, br#"..."#.
            let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
            let closing: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = i + 2 + hashes;
            let rest: String = chars[body..].iter().collect();
            let end = rest.find(&closing).map_or(chars.len(), |at| {
                body + rest[..at].chars().count() + closing.chars().count()
            });
            for &c in &chars[i..end] {
                blank(&mut out, c);
            }
            i = end;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\''), not a lifetime ('a).
            let mut end = if next == Some('\\') { i + 3 } else { i + 2 };
            while end < chars.len() && chars[end] != '\'' {
                end += 1;
            }
            for &c in &chars[i..=end.min(chars.len() - 1)] {
                blank(&mut out, c);
            }
            i = end + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The functions with a body in `text` (the code before its tests, as the 700-line rule
/// reads it): each one's name, the line of its signature and how many lines it spans, from the
/// line where `fn` stands to the line of its closing brace, both counted (doc comments and
/// attributes above it not; blank and comment lines inside it counted). A function nested in
/// another counts in both.
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let code = blank_literals(code(text));
    let bytes = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut found = Vec::new();
    for (at, _) in code.match_indices("fn") {
        let word_start = at == 0 || !is_ident(bytes[at - 1]);
        let spaced = bytes.get(at + 2).is_some_and(|b| b.is_ascii_whitespace());
        if !word_start || !spaced {
            continue;
        }
        let name_start = at + 2 + code[at + 2..].len() - code[at + 2..].trim_start().len();
        let name: String = code[name_start..]
            .bytes()
            .take_while(|&b| is_ident(b))
            .map(char::from)
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body's opening brace: the first `{` outside parentheses and brackets, unless
        // a `;` ends a declaration without a body first.
        let mut depth = 0i32;
        let mut open = None;
        for (offset, b) in code[name_start..].bytes().enumerate() {
            match b {
                b'(' | b'[' => depth += 1,
                b')' | b']' => depth -= 1,
                b';' if depth == 0 => break,
                b'{' if depth == 0 => {
                    open = Some(name_start + offset);
                    break;
                }
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        let mut braces = 0i32;
        let mut close = code.len();
        for (offset, b) in code[open..].bytes().enumerate() {
            match b {
                b'{' => braces += 1,
                b'}' => {
                    braces -= 1;
                    if braces == 0 {
                        close = open + offset;
                        break;
                    }
                }
                _ => {}
            }
        }
        found.push((name, line_of(at), line_of(close) - line_of(at) + 1));
    }
    found
}

#[test]
fn no_function_spans_more_than_150_lines() {
    let mut long = Vec::new();
    for src in source_roots() {
        for file in rust_files(&src) {
            let rel = relative(&file);
            let text = std::fs::read_to_string(&file).unwrap();
            for (name, line, lines) in function_lengths(&text) {
                if lines > 150 {
                    long.push(format!("{rel}:{line} {name} ({lines} lines)"));
                }
            }
        }
    }
    assert!(long.is_empty(), "split into named helpers: {long:#?}");
}

/// The counter reads functions as the compiler does: braces in strings, raw strings,
/// characters and comments do not count, a lifetime is not a character, a declaration
/// without a body is no function, and a nested function counts in its own right.
/// Oracle: the Rust Reference's lexical structure (tokens, comments, raw strings).
#[test]
fn function_lengths_are_counted_from_fn_to_its_closing_brace() {
    let text = "trait T {\n    fn declared(&self);\n}\n\
        pub(crate) fn outer<'a>(x: &'a [u8; 2]) -> &'a str {\n\
        let brace = '{';\n\
        let s = \"}}}\";\n\
        let raw = r#\"}\"#; // }\n\
        /* } /* } */ } */\n\
        fn inner() {\n}\n\
        \"\"\n}\n";
    let found = function_lengths(text);
    assert_eq!(
        found,
        vec![("outer".to_string(), 4, 9), ("inner".to_string(), 9, 2),],
        "{text}"
    );
}

/// The string literals of `text` (comments left out), each with the line it starts on.
fn string_literals(text: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut literals = Vec::new();
    let (mut i, mut line) = (0, 1);
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                line += usize::from(chars[i] == '\n');
                i += 1;
            }
            i += 2;
        } else if c == 'r'
            && (i == 0 || !ident(chars[i - 1]) || chars[i - 1] == 'b')
            && matches!(next, Some('"' | '#'))
        {
            // A raw string, r"..." or r#"..."#: its text up to the quote and as many hashes.
            let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                i += 1;
                continue;
            }
            let closing: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body: String = chars[i + 2 + hashes..].iter().collect();
            let end = body.find(&closing).unwrap_or(body.len());
            literals.push((line, body[..end].to_string()));
            line += body[..end].matches('\n').count();
            i += 2 + hashes + body[..end].chars().count() + closing.chars().count();
        } else if c == '"' {
            let start = line;
            let mut literal = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    literal.push(chars[i]);
                    i += 1;
                }
                if let Some(&c) = chars.get(i) {
                    line += usize::from(c == '\n');
                    literal.push(c);
                    i += 1;
                }
            }
            literals.push((start, literal));
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('"', '\''), not a lifetime ('a).
            let mut end = if next == Some('\\') { i + 3 } else { i + 2 };
            while end < chars.len() && chars[end] != '\'' {
                end += 1;
            }
            i = end + 1;
        } else {
            line += usize::from(c == '\n');
            i += 1;
        }
    }
    literals
}

/// Whether a string literal is a path of this system's procfs or sysfs (`/proc/...`,
/// `/sys/...`, the PMU directory under a root, `bus/event_source/devices`), rather than text
/// that names one for a reader (a hint: "echo 1 > /proc/sys/...").
fn is_proc_or_sys_path(literal: &str) -> bool {
    let absolute = ["/proc", "/sys"].iter().any(|root| {
        literal
            .strip_prefix(root)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    absolute || literal.starts_with("bus/event_source/devices")
}

/// The source files that still read /proc or /sys by their own paths, not through
/// `counterhal_system::System` (`system/`). This list may only shrink: move a file's reads
/// onto `System` and take it out; a file not listed that reads them fails the test.
const STILL_READ_PROC_OR_SYS: [&str; 4] = [
    "conformance/src/cases/hygiene.rs",
    "conformance/src/fixtures/kernel_tree.rs",
    "conformance/src/fixtures/perf_tree.rs",
    "conformance/src/fixtures/tracefs.rs",
];

/// `text` with each item gated `#[cfg(test)]` blanked (a test module, a test helper, a
/// `use`), lines kept: the code that ships, wherever a file's tests sit in it (code after a
/// test helper is still code).
fn without_test_items(text: &str) -> String {
    let blanked: Vec<char> = blank_literals(text).chars().collect();
    let mut chars: Vec<char> = text.chars().collect();
    let attribute: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + attribute.len() <= blanked.len() {
        if blanked[i..i + attribute.len()] != attribute[..] {
            i += 1;
            continue;
        }
        // The item ends at its braces' close, or at a `;` outside them.
        let (mut end, mut depth) = (i + attribute.len(), 0usize);
        while end < blanked.len() {
            end += 1;
            match blanked[end - 1] {
                '{' => depth += 1,
                '}' if depth <= 1 => break,
                '}' => depth -= 1,
                ';' if depth == 0 => break,
                _ => {}
            }
        }
        for c in &mut chars[i..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = end;
    }
    chars.into_iter().collect()
}

/// Where the code that must read /proc and /sys through `System` lies: every crate's
/// sources and examples (what a user copies); its tests and benchmarks, which watch a
/// program from outside, may read them.
fn shipped_and_shown_roots() -> Vec<PathBuf> {
    let mut roots = source_roots();
    for src in source_roots() {
        let crate_root = src.parent().unwrap().to_path_buf();
        roots.extend(Some(crate_root.join("examples")).filter(|dir| dir.is_dir()));
    }
    roots.sort();
    roots.dedup();
    roots
}

/// One reader of the system (ARCHITECTURE.md, STYLE 26): the paths of /proc and /sys are
/// written in `system/src/` alone, where `System` puts them under its roots, and in tests
/// (the items gated `#[cfg(test)]`, `tests/`) and benchmarks; every crate's sources and
/// examples are held to it. The files that still read them themselves are
/// [`STILL_READ_PROC_OR_SYS`], which may only shrink.
#[test]
fn only_the_system_module_names_proc_and_sys() {
    let mut readers = BTreeMap::new();
    for src in shipped_and_shown_roots() {
        for file in rust_files(&src) {
            let rel = relative(&file);
            if rel.starts_with("system/src/") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let paths: Vec<String> = string_literals(&without_test_items(&text))
                .into_iter()
                .filter(|(_, literal)| is_proc_or_sys_path(literal))
                .map(|(line, literal)| format!("{line}: \"{literal}\""))
                .collect();
            if !paths.is_empty() {
                readers.insert(rel, paths.join(", "));
            }
        }
    }
    holds_a_shrinking_list(
        &readers,
        &STILL_READ_PROC_OR_SYS,
        "STILL_READ_PROC_OR_SYS",
        "read /proc and /sys through counterhal_system::System (a typed fact), passed in, \
         not by a path of your own",
    );
}

/// Holds a list of files that may only shrink: every file of `found` (with what was found
/// there) is in `listed` (named `list`, `fix` saying what to do instead), and every file of
/// `listed` is still found.
fn holds_a_shrinking_list(
    found: &BTreeMap<String, String>,
    listed: &[&str],
    list: &str,
    fix: &str,
) {
    let listed: BTreeSet<&str> = listed.iter().copied().collect();
    let new: Vec<String> = found
        .iter()
        .filter(|(file, _)| !listed.contains(file.as_str()))
        .map(|(file, how)| format!("{file}: {how}"))
        .collect();
    assert!(new.is_empty(), "{fix}:\n{}", new.join("\n"));
    let gone: Vec<&str> = listed
        .into_iter()
        .filter(|file| !found.contains_key(*file))
        .collect();
    assert!(
        gone.is_empty(),
        "these files no longer do so: take them out of {list} (it only shrinks): {gone:?}"
    );
}

/// The calls that open a file or look in a directory, as the code (comments and strings
/// blanked) writes them.
const OPENS: [&str; 9] = [
    "fs::read_to_string(",
    "fs::read(",
    "fs::read_dir(",
    "read_link(",
    "fs::OpenOptions",
    "File::open(",
    "fs::metadata(",
    "fs::symlink_metadata(",
    "fs::canonicalize(",
];

/// What names a place of the machine's facts in code: `System`'s roots and PMU directory,
/// the cgroup and tracefs mounts, mountinfo.
const FACT_PLACES: [&str; 9] = [
    ".procfs()",
    ".sysfs()",
    ".pmu_devices()",
    ".tracefs_roots()",
    "cgroups::root(",
    "unified_root(",
    ".cgroup_mount(",
    ".cgroup2_mount(",
    "mountinfo",
];

/// Whether `code` (comments and strings blanked) calls `call` (not a longer name ending so:
/// `OutputFile::open(` is not `File::open(`).
fn calls(code: &str, call: &str) -> bool {
    code.match_indices(call).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The files that still open files under /proc, /sys, the cgroup mount or tracefs
/// themselves: the conformance suite's fixtures and its hygiene case, which make and check
/// those trees for the tests. This list may only shrink.
const STILL_READ_MACHINE_FACTS: [&str; 4] = [
    "conformance/src/cases/hygiene.rs",
    "conformance/src/fixtures/kernel_tree.rs",
    "conformance/src/fixtures/perf_tree.rs",
    "conformance/src/fixtures/tracefs.rs",
];

/// One reader of the system (ARCHITECTURE.md, STYLE 26): outside `system/src/`, no code that
/// ships opens a file (or lists a directory) of the machine's facts itself: none that both
/// opens files ([`OPENS`]) and names a place of those facts ([`FACT_PLACES`], or a /proc or
/// /sys path) in code other than tests. It asks `counterhal_system::System` for the fact,
/// read there by one rule. The files left are [`STILL_READ_MACHINE_FACTS`], which may only
/// shrink. Oracle: the before-stop hook's count of files that read machine facts
/// themselves, here on the code alone (a comment saying `sysfs`, the hal's `OpenOptions`, a
/// counter's `.cpus()` are not reads).
#[test]
fn no_file_outside_system_opens_the_machines_facts() {
    let mut readers = BTreeMap::new();
    for src in shipped_and_shown_roots() {
        for file in rust_files(&src) {
            let rel = relative(&file);
            if rel.starts_with("system/src/") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let shipped = without_test_items(&text);
            let code = blank_literals(&shipped);
            let opens: Vec<&str> = OPENS.into_iter().filter(|c| calls(&code, c)).collect();
            let mut places: Vec<String> = FACT_PLACES
                .into_iter()
                .filter(|place| code.contains(place))
                .map(str::to_string)
                .collect();
            places.extend(
                string_literals(&shipped)
                    .into_iter()
                    .filter(|(_, literal)| is_proc_or_sys_path(literal))
                    .map(|(_, literal)| format!("\"{literal}\"")),
            );
            if !opens.is_empty() && !places.is_empty() {
                readers.insert(
                    rel,
                    format!("{} of {}", opens.join(", "), places.join(", ")),
                );
            }
        }
    }
    holds_a_shrinking_list(
        &readers,
        &STILL_READ_MACHINE_FACTS,
        "STILL_READ_MACHINE_FACTS",
        "ask counterhal_system::System for the fact (a typed answer read by its one rule), \
         not a file of your own",
    );
}

/// The test above tells a call from a longer name and a comment from code.
#[test]
fn opening_calls_are_told_from_lookalikes() {
    let code = blank_literals("OutputFile::open(p); // std::fs::read_dir(\"/sys\")\n");
    assert!(!calls(&code, "File::open(") && !calls(&code, "fs::read_dir("));
    let code = blank_literals("let f = std::fs::File::open(p);\nlet d = fs::read_dir(x);");
    assert!(calls(&code, "File::open(") && calls(&code, "fs::read_dir("));
}

#[test]
fn string_literals_are_found_outside_comments() {
    let text = "// \"/proc/a\"\nlet a = \"/proc/b\"; /* \"/sys/c\" */\nlet q = '\"';\n\
                let r = r#\"/sys/d \"x\"\"#;\nlet e = \"a\\\"b\";\n";
    let found: Vec<(usize, String)> = string_literals(text);
    assert_eq!(
        found,
        [
            (2, "/proc/b".to_string()),
            (4, "/sys/d \"x\"".to_string()),
            (5, "a\\\"b".to_string()),
        ]
    );
    assert!(is_proc_or_sys_path("/proc/{pid}/stat") && is_proc_or_sys_path("/sys"));
    assert!(!is_proc_or_sys_path("/system.slice") && !is_proc_or_sys_path("echo 1 > /proc/x"));
}

/// A read after a test helper is still found (the helper alone is a test's), and a test
/// module's, a gated `use`'s and a string's braces do not hide or end anything.
#[test]
fn only_items_gated_on_tests_are_tests() {
    let text = "#[cfg(test)]\nfn helper() { let a = \"/proc/a}\"; }\n\
                fn real() { read(\"/proc/b\"); }\n\
                #[cfg(test)]\nuse x::y;\nconst C: &str = \"/sys/c\";\n\
                // #[cfg(test)]\nconst D: &str = \"/sys/d\";\n\
                #[cfg(test)]\nmod tests {\n    fn t() { if x { \"/proc/e\"; } }\n}\n\
                const F: &str = \"/sys/f\";\n";
    let found: Vec<(usize, String)> = string_literals(&without_test_items(text))
        .into_iter()
        .filter(|(_, literal)| is_proc_or_sys_path(literal))
        .collect();
    let expected = [(3, "/proc/b"), (6, "/sys/c"), (8, "/sys/d"), (13, "/sys/f")];
    assert_eq!(
        found,
        expected.map(|(line, literal)| (line, literal.to_string()))
    );
}
/// The functions libcounterhal and libpapi export to C in the sources under `src`: each
/// one's file, name and the start of its body, whitespace collapsed (after a leading
/// `unsafe {`), read from the code with its comments and strings blanked.
fn exported_c_functions(src: &Path) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for file in rust_files(src) {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = blank_literals(code(&text));
        for (at, _) in code.match_indices("#[unsafe(no_mangle)]") {
            let Some(fn_at) = code[at..].find("fn ").map(|offset| at + offset + 3) else {
                continue;
            };
            let name: String = code[fn_at..]
                .chars()
                .take_while(|&c| c.is_alphanumeric() || c == '_' || c == '$')
                .collect();
            let mut depth = 0i32;
            let open = code[fn_at..].char_indices().find_map(|(offset, c)| {
                match c {
                    '(' | '[' => depth += 1,
                    ')' | ']' => depth -= 1,
                    '{' if depth == 0 => return Some(fn_at + offset + 1),
                    _ => {}
                }
                None
            });
            let Some(open) = open else { continue };
            let body: String = code[open..]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let body = body.strip_prefix("unsafe { ").unwrap_or(&body);
            found.push((relative(&file), name, body.chars().take(80).collect()));
        }
    }
    found
}

/// Oracle: the two C libraries' sources, as the compiler reads them (comments and strings
/// left out), and `counterhal_cboundary`'s guard, whose own tests hold that a panic inside
/// answers the face's error value with cancellation held off. Every function the C API and
/// libpapi export runs its body inside the guard (or forwards to another exported function,
/// or frees through the guarded `free`), so no panic unwinds into C and no thread
/// cancellation leaves a lock held; neither face keeps a copy of what the boundary crate
/// holds (`catch_unwind`, `pthread_setcancelstate`, `pthread_atfork`).
#[test]
fn every_c_function_goes_through_the_boundary_guard() {
    let faces: [(&str, &[&str], usize); 2] = [
        (
            "capi",
            &[
                "guard(",
                "let _ = guard(",
                "boundary::guard(",
                "boundary::catch(",
                "free(",
                "super::free(",
            ],
            60,
        ),
        ("papi", &["guard(", "crate::abi::guard("], 90),
    ];
    let mut unguarded = Vec::new();
    for (face, guards, at_least) in faces {
        let functions = exported_c_functions(&root().join(face).join("src"));
        assert!(
            functions.len() >= at_least,
            "{face}: {} exported functions found, expected at least {at_least}",
            functions.len()
        );
        let names: BTreeSet<&str> = functions.iter().map(|(_, name, _)| name.as_str()).collect();
        for (file, name, body) in &functions {
            let forwards = names
                .iter()
                .any(|other| other != name && body.starts_with(&format!("{other}(")));
            if !forwards && !guards.iter().any(|guard| body.starts_with(guard)) {
                unguarded.push(format!("{file}: {name}: {body}"));
            }
        }
        for file in rust_files(&root().join(face).join("src")) {
            let text = std::fs::read_to_string(&file).unwrap();
            let code = blank_literals(code(&text));
            for copy in ["catch_unwind", "pthread_setcancelstate", "pthread_atfork"] {
                if code.contains(copy) {
                    unguarded.push(format!(
                        "{}: {copy} (the boundary crate's, counterhal_cboundary)",
                        relative(&file)
                    ));
                }
            }
        }
    }
    assert!(
        unguarded.is_empty(),
        "exported C functions outside counterhal_cboundary's guard:\n{}",
        unguarded.join("\n")
    );
}

/// serve's transport knows nothing of its domain, and each family of the scrape is written by
/// one collector: no file of `serve/src/http/` imports a serve module outside `http` but the
/// log and the system calls, and every family name (`"counterhal_..."` or `"process_..."` as
/// a `Family`'s name) is written in one file of `serve/src` alone.
#[test]
fn serve_is_collectors_over_a_transport_that_knows_no_domain() {
    let src = root().join("serve/src");
    let allowed = ["crate::http", "crate::log", "crate::sys"];
    for file in rust_files(&src.join("http")) {
        let text = without_test_items(&std::fs::read_to_string(&file).unwrap());
        for (number, line) in code_lines(&text) {
            let Some(at) = line.find("crate::") else {
                continue;
            };
            let path = &line[at..];
            assert!(
                allowed.iter().any(|a| path.starts_with(a)),
                "{}:{number}: the transport imports the domain: {}",
                relative(&file),
                line.trim()
            );
        }
    }
    let mut writers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        let text = without_test_items(&std::fs::read_to_string(&file).unwrap());
        for made in ["Family::new(", "Family::seconds("] {
            for (at, _) in text.match_indices(made) {
                let Some(rest) = text[at + made.len()..].trim_start().strip_prefix('"') else {
                    continue;
                };
                let name: String = rest.chars().take_while(|c| *c != '"').collect();
                if name.starts_with("counterhal_") || name.starts_with("process_") {
                    writers.entry(name).or_default().insert(relative(&file));
                }
            }
        }
    }
    assert!(
        writers.len() > 20,
        "the families were not found: {writers:?}"
    );
    for (family, files) in &writers {
        assert_eq!(files.len(), 1, "{family} is written in {files:?}");
    }
}

/// One parser reads the command line: no file of the command asks clap to parse (a derived
/// `Parser`, `Args` or `Subcommand`, `FromArgMatches`, `get_matches`, `try_parse`): clap only
/// describes the tables (`cli/src/args/`) for help, the reference, the manual pages and the
/// completions; and the exporter's crate takes no clap (its options are the command's).
#[test]
fn the_command_line_has_one_parser() {
    let asks_clap_to_parse = [
        "derive(Parser",
        "derive(Args",
        "derive(Subcommand",
        "clap::Parser",
        "clap::Args",
        "FromArgMatches",
        "get_matches",
        "try_parse",
        "#[arg(",
        "#[command(",
    ];
    let mut found = Vec::new();
    for file in rust_files(&root().join("cli/src")) {
        let text = without_test_items(&std::fs::read_to_string(&file).unwrap());
        for (number, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if let Some(word) = asks_clap_to_parse.iter().find(|w| code.contains(*w)) {
                found.push(format!("{}:{}: {word}", relative(&file), number + 1));
            }
        }
    }
    assert!(found.is_empty(), "clap parses here: {found:#?}");
    let serve = dependencies(&root().join("serve/Cargo.toml"));
    assert!(!serve.contains_key("clap"), "serve depends on clap");
}

/// The files that make this machine's `System` (`System::host()`) where a program starts: the
/// command's options (`--sysfs` read there), the facade's `Context::new` (a program on the
/// library: `Setup`, the C API's handle, a Python session and serve, which takes the
/// command's context, make theirs there), the Python module's functions that name no
/// session, libpapi's value beside its lock (`unlocked::system`, which a signal handler
/// reaches) and the Slurm plugin's step.
const SYSTEM_MADE_AT_START: [&str; 5] = [
    "cli/src/options.rs",
    "papi/src/unlocked.rs",
    "python/src/session.rs",
    "slurm/src/step.rs",
    "src/context.rs",
];

/// The files of `src` whose module is declared under a `#[cfg(...test...)]` attribute (a test
/// module in a file of its own), with `*_tests.rs` and `tests.rs` files: code that ships
/// nothing.
fn test_module_files(src: &Path) -> BTreeSet<PathBuf> {
    let mut test_files = BTreeSet::new();
    for file in rust_files(src) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with("_tests.rs") || name == "tests.rs" {
            test_files.insert(file.clone());
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = if ["mod.rs", "lib.rs", "main.rs"].contains(&name.as_str()) {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.windows(2) {
            let (attribute, item) = (pair[0].trim(), pair[1].trim());
            let gated = attribute.starts_with("#[cfg(") && attribute.contains("test");
            let declared = item
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .and_then(|rest| rest.strip_suffix(';'));
            if let (true, Some(module)) = (gated, declared) {
                test_files.insert(dir.join(format!("{module}.rs")));
                test_files.insert(dir.join(module).join("mod.rs"));
            }
        }
    }
    test_files
}

/// Done when: a `System` is made once where a program starts and passed down (the facade's
/// `Context` carries it; backends, through `Given::system`, target expansion, stat, serve,
/// libpapi and the conformance suite take it): outside `system/` and the tests,
/// `System::host` is named only in [`SYSTEM_MADE_AT_START`]. So a `--sysfs`-like root given
/// where the program starts reaches every reader.
///
/// Oracle: the sources' own text, read by this test (test items, test modules in files of
/// their own, tests, benchmarks and examples left out).
#[test]
fn a_system_is_made_only_where_a_program_starts() {
    let mut makers = BTreeMap::new();
    for src in source_roots() {
        let tests = test_module_files(&src);
        for file in rust_files(&src) {
            let rel = relative(&file);
            if rel.starts_with("system/src/") || tests.contains(&file) {
                continue;
            }
            let mut text = without_test_items(&std::fs::read_to_string(&file).unwrap());
            // Test modules gated on more than `test` (`#[cfg(all(test, ...))]`), at the end.
            if let Some(at) = text.find("#[cfg(all(test") {
                text.truncate(at);
            }
            // Called or passed as a function (`get_or_init(System::host)`).
            let names_host = |line: &str| {
                line.match_indices("system::host").any(|(at, found)| {
                    !line[at + found.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            };
            let lines: Vec<String> = code_lines(&text)
                .filter(|(_, line)| names_host(line))
                .map(|(number, _)| number.to_string())
                .collect();
            if !lines.is_empty() && !SYSTEM_MADE_AT_START.contains(&rel.as_str()) {
                makers.insert(rel, format!("System::host() at line {}", lines.join(", ")));
            }
        }
    }
    assert!(
        makers.is_empty(),
        "take the System made where the program starts (a parameter, the Context, the \
         library value), do not make one here:\n{makers:#?}"
    );
}

/// The modules `lib` declares (`mod error;`, `pub mod perf;`), read from its text.
fn declared_modules(lib: &str) -> BTreeSet<String> {
    blank_literals(lib)
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
            let line = line.strip_prefix("pub ").unwrap_or(line);
            let name = line.strip_prefix("mod ")?;
            name.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
        })
        .map(str::to_string)
        .collect()
}

/// The first segments of the `crate::` paths in `code` (literals and comments blanked), each
/// with its line: `crate::Error::new` gives `Error`, `use crate::{error::Error, Result}` gives
/// `error` and `Result`; a macro named at the root (`crate::row!`) gives `row!`.
fn crate_path_heads(code: &str) -> Vec<(usize, String)> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let head = |rest: &str| -> String { rest.chars().take_while(|&c| ident(c)).collect() };
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut heads = Vec::new();
    for (at, found) in code.match_indices("crate::") {
        if code[..at].chars().next_back().is_some_and(ident) {
            continue;
        }
        let start = at + found.len();
        let rest = &code[start..];
        if let Some(group) = rest.strip_prefix('{') {
            // A use group: the heads of its top-level items.
            let (mut depth, mut item) = (0usize, start + 1);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth > 0 => depth -= 1,
                    ',' | '}' if depth == 0 => {
                        let text = &code[item..start + 1 + i];
                        let trimmed = text.trim_start();
                        let name = head(trimmed);
                        if !name.is_empty() && name != "self" {
                            heads.push((line_of(item + text.len() - trimmed.len()), name));
                        }
                        if c == '}' {
                            break;
                        }
                        item = start + 1 + i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            let name = head(rest);
            if rest[name.len()..].trim_start().starts_with('!') {
                heads.push((line_of(at), format!("{name}!")));
            } else if !name.is_empty() {
                heads.push((line_of(at), name));
            }
        }
    }
    heads
}

/// Done when: in counterhal-hal and counterhal-events, every module other than `lib.rs` names
/// each item through the module that defines it (`crate::error::Error`, not `crate::Error`),
/// in `use` lines and in paths written in code, so no module imports back from the root that
/// declares it; `lib.rs` alone re-exports the public names.
///
/// Oracle: the sources' own text, read by this test (test items and test modules in files of
/// their own left out): a `crate::` path whose first segment is not a module declared in the
/// crate's `lib.rs`, or that names a macro there (`#[macro_export]` puts it at the root), goes
/// through the root.
#[test]
fn hal_and_events_import_from_where_things_are_defined() {
    // The reader itself, on a sample: use groups over lines, paths in code, macros.
    let sample = "use crate::{\n    error::Error,\n    Result, a::{B, C},\n};\n\
                  fn f() -> crate::Error { crate::row! {} $crate::table::T }\n";
    let heads: Vec<String> = crate_path_heads(sample)
        .iter()
        .map(|(line, name)| format!("{line}:{name}"))
        .collect();
    assert_eq!(
        heads,
        ["2:error", "3:Result", "3:a", "5:Error", "5:row!", "5:table"]
    );
    let mut through_root = Vec::new();
    for crate_dir in ["hal", "events"] {
        let src = root().join(crate_dir).join("src");
        let lib = src.join("lib.rs");
        let modules = declared_modules(&std::fs::read_to_string(&lib).unwrap());
        let tests = test_module_files(&src);
        for file in rust_files(&src) {
            if file == lib || tests.contains(&file) {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let code = blank_literals(&without_test_items(&text));
            for (line, name) in crate_path_heads(&code) {
                if !modules.contains(&name) {
                    through_root.push(format!("{}:{line}: crate::{name}", relative(&file)));
                }
            }
        }
    }
    assert!(
        through_root.is_empty(),
        "{} paths go through the crate root, which only re-exports these names; name the \
         module that defines each (`crate::error::Error`, not `crate::Error`; a macro through \
         `pub(crate) use` in its module, `crate::table::row!`):\n{}",
        through_root.len(),
        through_root.join("\n")
    );
}

/// Oracle: the system crate's own sources. Every file of the machine (procfs, sysfs, tracefs,
/// a cgroup's) is opened, listed and looked at by its reading rule alone
/// (`system/src/rule.rs`): no other file of the crate calls what opens one, outside its tests
/// (and `testing.rs`, the tests' trees).
#[test]
fn the_system_opens_the_machines_files_by_its_rule_alone() {
    let mut openers = Vec::new();
    for file in rust_files(&root().join("system/src")) {
        let rel = relative(&file);
        if rel.ends_with("/rule.rs") || rel.ends_with("/testing.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = blank_literals(&without_test_items(&text));
        for call in OPENS.into_iter().filter(|call| calls(&code, call)) {
            openers.push(format!("{rel}: {call}"));
        }
    }
    assert!(
        openers.is_empty(),
        "files of the machine opened outside the rule (system/src/rule.rs): {openers:#?}"
    );
}

/// The public functions of `api_list` (a crate's list in `api/`) that take a file by its path
/// as text (a parameter named `file` or `path` of type `&str`): their lines.
fn files_asked_by_name(api_list: &str) -> Vec<&str> {
    api_list
        .lines()
        .filter(|line| line.starts_with("pub fn "))
        .filter(|line| line.contains("file: &str") || line.contains("path: &str"))
        .collect()
}

/// Oracle: `api/counterhal-system.txt`, which `scripts/public-api --check` holds to the
/// sources. The system answers typed facts (whether a PMU lists its CPUs, has a `cpumask`, a
/// format field, an event alias), never a file its caller names by path
/// (`PmuDevice::has_file("format/thresh")` was one).
#[test]
fn the_system_answers_facts_not_files_asked_by_name() {
    let list = std::fs::read_to_string(root().join("api/counterhal-system.txt")).unwrap();
    assert!(
        list.contains("pub fn counterhal_system::PmuDevice::has_format("),
        "api/counterhal-system.txt was not read"
    );
    let asked = files_asked_by_name(&list);
    assert!(
        asked.is_empty(),
        "the system's public functions that take a file by its path: answer the fact \
         instead:\n{}",
        asked.join("\n")
    );
    let sample = "pub fn counterhal_system::PmuDevice::has_file(&self, file: &str) -> bool\n\
                  pub fn counterhal_system::PmuDevice::has_cpumask(&self) -> bool\n";
    assert_eq!(files_asked_by_name(sample).len(), 1);
}

/// The items `main.rs` (a command's crate root) defines at its top level (`Cli`, `parse`),
/// less the names of its modules (`report` is a room and a function of main's).
fn root_items(main: &str) -> BTreeSet<String> {
    let modules = declared_modules(main);
    main.lines()
        .filter_map(|line| {
            let line = line.strip_prefix("pub ").unwrap_or(line);
            let rest = ["struct ", "enum ", "fn ", "const ", "type ", "static "]
                .iter()
                .find_map(|kind| line.strip_prefix(kind))?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty() && !modules.contains(&name)).then_some(name)
        })
        .collect()
}

/// The command stands in floors: `main.rs` on top (it declares every subcommand and runs
/// the one asked for), no room imports it (completions are handed clap's description of the
/// command; a test that needs a subcommand's arguments reads them with its table,
/// `args::read_for_test`), and no room imports one that imports it back, tests included.
/// `reference.rs`, a test of the whole command's description, stands beside `main.rs` and
/// may name its `Cli`. Oracle: the crate's sources, every file whole (files naming main's
/// items: 4 before, 0 after).
#[test]
fn the_command_runs_in_layers() {
    let src = root().join("cli/src");
    let main = std::fs::read_to_string(src.join("main.rs")).unwrap();
    let items = root_items(&main);
    assert!(
        items.contains("Cli") && items.contains("parse"),
        "main.rs's items were not found: {items:?}"
    );
    let mut broken = Vec::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap();
        if rel == Path::new("main.rs") || rel == Path::new("reference.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let mut named = rooms_named(&text, "crate::");
        if rel.components().count() == 1 {
            named.extend(rooms_named(&text, "super::"));
        }
        for item in named.intersection(&items) {
            broken.push(format!("{} imports main.rs's `{item}`", relative(&file)));
        }
    }
    let graph = rooms_read(&src, |text| text);
    assert!(
        graph.contains_key("stat") && graph.contains_key("jobs") && graph.contains_key("args"),
        "cli/src's rooms were not found: {:?}",
        graph.keys()
    );
    if let Some(cycle) = find_cycle(&graph) {
        broken.push(format!("an import runs back up: {}", cycle.join(" -> ")));
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    let sample = "pub struct Cli {\n}\nenum Command {}\nfn parse(argv: Vec<u8>) {}\n\
                  mod report;\nfn report() {}\n";
    assert_eq!(
        root_items(sample),
        BTreeSet::from(["Cli", "Command", "parse"].map(String::from))
    );
}
