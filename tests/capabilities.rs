//! The faces ask a backend what it can do, never which backend it is (ARCHITECTURE.md, "Who
//! may depend on whom"): no file outside the Linux backend's crate downcasts a backend or
//! names it, the facade's group holds no backend's group of its own, and the facade has no
//! public module of one backend's terms.

use crate::architecture::{relative, root, rust_files};

/// The name of the Linux backend's type, written so that this file does not hold it.
fn linux_backend_type() -> String {
    ["Linux", "Backend"].concat()
}

/// Oracle: the workspace's own sources, every `.rs` file outside `backend-linux/` (benches,
/// examples and tests included). A face that wants sampling or counting per cgroup asks
/// `BackendExt::sampling` or `BackendExt::cgroups`; one that downcast to the Linux backend, cast a
/// backend to `dyn Any` or named the Linux backend's type is listed by file and line.
#[test]
fn no_file_outside_the_linux_backend_downcasts_a_backend_or_names_it() {
    let named = linux_backend_type();
    // A cast to `dyn Any`, the first step of a downcast (a panic's payload comes as one).
    let any = ["as &dyn ", "std::any::Any"].concat();
    let as_any = ["as", "_any("].concat();
    let mut found = Vec::new();
    for file in rust_files(root()) {
        let path = relative(&file);
        // This file holds the words it looks for.
        if path.starts_with("backend-linux/") || path == "tests/capabilities.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            // A panic's payload is downcast to a string; a backend is downcast to a backend.
            let downcast_backend = line.contains("downcast") && line.contains("Backend");
            if line.contains(&named)
                || line.contains(&as_any)
                || line.contains(&any)
                || downcast_backend
            {
                found.push(format!("{path}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "ask the backend's capabilities (`sampling()`, `cgroups()`, `Group::shared_read`) \
         instead:\n{}",
        found.join("\n")
    );
}

/// The variants of the enum `name` declared in `text`, in order.
fn variants(text: &str, name: &str) -> Vec<String> {
    let start = text
        .find(&format!("pub enum {name} {{"))
        .unwrap_or_else(|| panic!("no enum {name}"));
    let body = &text[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("//") && !line.starts_with("#["))
        .filter_map(|line| {
            let name: String = line
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty() && name.starts_with(|c: char| c.is_uppercase())).then_some(name)
        })
        .collect()
}

/// Oracle: `src/group.rs`, where `AnyGroup` is declared. The facade's group is a backend's
/// group boxed, or a sum over places: a variant per backend would make the facade name that
/// backend, and every face read it as a special case.
#[test]
fn any_group_has_no_backend_variants() {
    let text = std::fs::read_to_string(root().join("src/group.rs")).unwrap();
    assert_eq!(variants(&text, "AnyGroup"), ["Boxed", "Targets"]);
    for registration in counterhal::REGISTRY {
        let crate_path = format!("counterhal_{}", registration.name);
        assert!(
            !text.contains(&crate_path),
            "src/group.rs names {crate_path}: the facade's group names no backend"
        );
    }
}

/// Oracle: the facade's public API as rustdoc gives it (`api/counterhal.txt`, which
/// `scripts/public-api --check` holds to the sources) and `src/lib.rs`. No public module of
/// the facade is one backend's (`counterhal::linux` was), no public path reaches the Linux
/// backend's own type, and none re-exports a backend crate's item.
#[test]
fn the_facade_has_no_public_module_of_one_backend() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let api = std::fs::read_to_string(root().join("api/counterhal.txt")).unwrap();
    let named = linux_backend_type();
    let mut found = Vec::new();
    for backend in counterhal::REGISTRY.iter().map(|r| r.name) {
        let module = format!("pub mod {backend};");
        if lib.lines().any(|line| line.trim() == module) {
            found.push(format!("src/lib.rs: {module}"));
        }
        let path = format!("counterhal::{backend}::");
        if let Some(line) = api.lines().find(|line| line.contains(&path)) {
            found.push(format!("api/counterhal.txt: {line}"));
        }
    }
    if let Some(line) = api.lines().find(|line| line.contains(&named)) {
        found.push(format!("api/counterhal.txt: {line}"));
    }
    // Nor does any path re-export a backend crate's item (`advanced::bperf` re-exported the
    // Linux backend's shared counters, now a capability: `BackendExt::shared`).
    let backends = [
        "counterhal_linux",
        "counterhal_pctr",
        "counterhal_msr",
        "counterhal_hwpmc",
    ];
    for line in api.lines() {
        if backends
            .iter()
            .any(|crate_| line.contains(&format!("= {crate_}")))
        {
            found.push(format!("api/counterhal.txt: {line}"));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The body of the block that opens at `start` in `text` (from its `{` to the matching `}`).
fn block(text: &str, start: usize) -> &str {
    let open = start + text[start..].find('{').unwrap();
    let mut depth = 0;
    for (at, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[open + 1..open + at];
                }
            }
            _ => {}
        }
    }
    panic!("an unclosed block");
}

/// The methods declared in a trait's body, each with whether it has a default body.
fn trait_methods(body: &str) -> Vec<(String, bool)> {
    let mut methods = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.find("\n    fn ") {
        let after = &rest[at + "\n    fn ".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // A declaration ends at its `;`, a default at its body's `{`.
        let end = after.find([';', '{']).unwrap();
        methods.push((name, after.as_bytes()[end] == b'{'));
        rest = &after[end..];
    }
    methods
}

/// Oracle: `hal/src/backend.rs`, where `Backend` is declared. A backend implements five
/// methods, all required: a wrapper or a trait object that forwards them cannot forget one and
/// silently get a default (as a forwarder that forgot `system_wide_cpus` once counted an
/// uncore event on every CPU); what only some backends can do comes from `extensions()`.
#[test]
fn the_backend_trait_has_five_required_methods_at_most() {
    let text = std::fs::read_to_string(root().join("hal/src/backend.rs")).unwrap();
    let methods = trait_methods(block(&text, text.find("pub trait Backend {").unwrap()));
    assert!(
        methods.len() <= 5,
        "Backend has {} methods: {methods:?}",
        methods.len()
    );
    let defaults: Vec<&str> = methods
        .iter()
        .filter(|(_, default)| *default)
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(
        defaults.is_empty(),
        "Backend's methods are all required; these have defaults: {defaults:?} (write \
         conveniences in BackendExt)"
    );
}

/// Oracle: every `impl Backend for` of the workspace. A backend's methods are forwarded to
/// another backend in two places, each written once for every case: the object-safe mirror
/// (`hal/src/dynamic.rs`, a `dyn DynBackend`) and `OpensThrough` (`hal/src/conveniences.rs`, a
/// box, the facade's `Chosen` and its other wrappers). Any other implementation is a
/// backend's own: its `name` is its own, not another's.
#[test]
fn no_backend_is_forwarded_by_hand() {
    let mut found = Vec::new();
    for file in rust_files(root()) {
        let path = relative(&file);
        if path == "hal/src/dynamic.rs" || path == "hal/src/conveniences.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let mut from = 0;
        while let Some(at) = text[from..].find("Backend for ") {
            let start = from + at;
            from = start + 1;
            let line_start = text[..start].rfind('\n').map_or(0, |n| n + 1);
            let line = &text[line_start..];
            if !line.trim_start().starts_with("impl") || line.contains("DynBackend for") {
                continue;
            }
            let body = block(&text, start);
            let Some(name_at) = body.find("fn name(&self)") else {
                continue;
            };
            let name_body = block(body, name_at);
            if name_body.contains(".name()") || name_body.contains("dyn_name()") {
                let number = text[..start].lines().count();
                found.push(format!("{path}:{number}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "these implement Backend by forwarding to another backend: implement OpensThrough \
         instead\n{}",
        found.join("\n")
    );
}
