//! The files for running `counterhal serve` on a fleet, held to what the command does:
//! examples/prometheus (the scrape config, the recording rules; the Grafana dashboard in
//! [`dashboard`]), examples/kubernetes (the DaemonSet here, every manifest against the
//! schemas in [`kubernetes`]) and dist/counterhal-serve.service ([`systemd`]).
//!
//! Oracles: the built command (the rules file is its output, and the DaemonSet's and the
//! unit's arguments are arguments it takes, counting what the rules read); promtool of
//! Prometheus 2.42 and of 3.5 (the config, the rules, the web configuration), each test body
//! run against each release; PyYAML (the DaemonSet is YAML); GNU grep (the cgroup patterns,
//! POSIX basic regular expressions as `regcomp` reads them).

pub(crate) mod dashboard;
mod kubernetes;
mod panels;
mod systemd;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::*;
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// A directory of the repository.
pub fn repository(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// A file's text.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A directory of its own for one test, empty, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = counterhal_conformance::fixtures::temp_dir()
            .join(format!("counterhal-examples-{}-{name}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// Whether `tool ARGS` runs and succeeds here.
pub fn runs(tool: &str, args: &[&str]) -> bool {
    Command::new(tool)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A tool's verdict and what it said (standard output and error).
pub fn verdict(command: &mut Command) -> (bool, String) {
    let out = command.output().expect("run the tool");
    (
        out.status.success(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

/// The rules file: the arguments its header says made it, and the text they made (all that
/// follows the header).
pub fn rules_file() -> (Vec<String>, String) {
    let text = read(&repository("examples/prometheus/counterhal-rules.yml"));
    let first = text.lines().next().unwrap_or_default();
    let command = first
        .strip_prefix("# Made by: counterhal ")
        .unwrap_or_else(|| panic!("the rules file's first line names no command: {first}"));
    let made = text
        .find("# Recording rules for counterhal serve")
        .expect("the output of serve --rules after the header");
    let args = command.split_whitespace().map(str::to_string).collect();
    (args, text[made..].to_string())
}

/// The rules `counterhal ARGS --rules` prints, where ARGS are a `serve` command's arguments
/// after the program.
pub fn rules_of(args: &[String]) -> String {
    let mut words: Vec<&str> = args.iter().map(String::as_str).collect();
    words.push("--rules");
    let out = counterhal(&words);
    assert!(
        out.status.success(),
        "counterhal {}: {}",
        words.join(" "),
        stderr(&out)
    );
    stdout(&out)
}

/// The series the rules file records.
pub fn recorded() -> BTreeSet<String> {
    rules_file()
        .1
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- record: "))
        .map(str::to_string)
        .collect()
}

/// The series counterhal-totals.yml records (each job's and pod's whole count, and those
/// that finished).
pub fn recorded_totals() -> BTreeSet<String> {
    read(&repository("examples/prometheus/counterhal-totals.yml"))
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- record: "))
        .map(str::to_string)
        .collect()
}

/// Whether GNU grep (a POSIX basic regular expression, matched anywhere, as `regexec` matches
/// serve's --cgroups patterns) finds `pattern` in `path`.
pub fn pattern_matches(pattern: &str, path: &str) -> bool {
    let mut child = Command::new("grep")
        .args(["-q", "-G", "-e", pattern])
        .stdin(Stdio::piped())
        .spawn()
        .expect("run grep");
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        format!("{path}\n").as_bytes(),
    )
    .unwrap();
    child.wait().unwrap().success()
}

/// The documents of the YAML file `path` as PyYAML reads them, as JSON; `None` where python3
/// or PyYAML (Debian's python3-yaml) is not installed.
pub fn yaml_documents(path: &Path) -> Option<Vec<serde_json::Value>> {
    let read = Command::new("python3").arg("-c").arg(
        "import json, sys, yaml; json.dump(list(yaml.safe_load_all(open(sys.argv[1]))), sys.stdout)",
    ).arg(path).output();
    let Ok(out) = read else {
        return None;
    };
    let (ok, json) = (
        out.status.success(),
        format!("{}{}", stdout(&out), stderr(&out)),
    );
    if !ok && json.contains("No module named 'yaml'") {
        return None;
    }
    assert!(ok, "PyYAML on {}: {json}", path.display());
    let documents: serde_json::Value = serde_json::from_str(&json).unwrap();
    Some(documents.as_array().unwrap().clone())
}

/// The DaemonSet's container (daemonset.yaml's one document, checked to be one), with its
/// pod's spec; `None` without PyYAML.
pub fn daemonset() -> Option<(serde_json::Value, serde_json::Value)> {
    let documents = yaml_documents(&repository("examples/kubernetes/daemonset.yaml"))?;
    assert_eq!(documents.len(), 1, "{documents:?}");
    let pod = documents[0]["spec"]["template"]["spec"].clone();
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    Some((containers[0].clone(), pod))
}

/// The words of the DaemonSet container's command.
pub fn command_of(container: &serde_json::Value) -> Vec<String> {
    container["command"]
        .as_array()
        .expect("a command")
        .iter()
        .map(|w| w.as_str().expect("every word a string").to_string())
        .collect()
}

/// The value after `option` in `args`.
pub fn after<'a>(args: &'a [String], option: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == option)?;
    args.get(at + 1).map(String::as_str)
}

/// The rules file is the output of the command its header names, made again by the built
/// command (the portable metrics: the same text on every host), and it records the metrics
/// the dashboard reads.
#[test]
fn rules_file_is_what_its_command_makes() {
    let (args, checked_in) = rules_file();
    assert_eq!(args[..2], ["serve", "--rules"], "{args:?}");
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = counterhal(&words);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        checked_in,
        "examples/prometheus/counterhal-rules.yml is not what `counterhal {}` makes now: \
         make it again",
        words.join(" ")
    );
    assert!(checked_in.contains("portable metrics"), "{checked_in}");
    let records = recorded();
    for name in ["IPC", "CPUs_utilized", "cache_miss_rate"] {
        assert!(
            records.contains(&format!("counterhal:{name}:rate1m")),
            "{records:?}"
        );
    }
}

/// prometheus.yml passes `promtool check config` of Prometheus 2.42 and 3.5, which finds
/// and checks the rules files it names (the rates and the totals); so does its commented file_sd example once
/// uncommented, with a targets file made from the example the comment gives.
#[test]
fn prometheus_config_and_its_rules_pass_promtool() {
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        prometheus_config_and_its_rules_pass_promtool_of(release);
    }
}

/// The body of the test above for `release`.
fn prometheus_config_and_its_rules_pass_promtool_of(release: Release) {
    tool_or_skip!(release, "promtool");
    let config = repository("examples/prometheus/prometheus.yml");
    let (ok, said) = verdict(
        release
            .command("promtool")
            .args(["check", "config"])
            .arg(&config),
    );
    eprintln!("promtool check config prometheus.yml:\n{said}");
    let (rules, totals) = (recorded().len(), recorded_totals().len());
    assert!(ok, "{said}");
    assert!(said.contains("SUCCESS: 2 rule files found"), "{said}");
    assert!(
        said.contains(&format!("SUCCESS: {rules} rules found")),
        "{said}"
    );
    assert!(
        said.contains(&format!("SUCCESS: {totals} rules found")),
        "{said}"
    );
    assert!(!said.contains("WARNING"), "{said}");

    // The file_sd example, uncommented: `    # file_sd_configs:` and the lines below it that
    // go on deeper in the comment.
    let text = read(&config);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == "    # file_sd_configs:")
        .expect("a commented file_sd_configs example");
    let mut end = start + 1;
    while lines.get(end).is_some_and(|l| l.starts_with("    #  ")) {
        end += 1;
    }
    assert!(end - start >= 3, "{:?}", &lines[start..end]);
    let mut uncommented: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    for line in &mut uncommented[start..end] {
        *line = format!("    {}", &line["    # ".len()..]);
    }
    let targets = lines
        .iter()
        .find_map(|l| l.strip_prefix("    #   - targets: "))
        .expect("an example of a targets file in the comment");
    let pattern = uncommented[start..end]
        .iter()
        .find_map(|l| l.trim().strip_prefix("- ").filter(|f| f.ends_with(".yml")))
        .expect("the file_sd files")
        .to_string();
    let scratch = Scratch::new(&format!("config-{release:?}"));
    let dir = &scratch.0;
    std::fs::write(dir.join("prometheus.yml"), uncommented.join("\n") + "\n").unwrap();
    for rules in ["counterhal-rules.yml", "counterhal-totals.yml"] {
        std::fs::copy(
            repository("examples/prometheus").join(rules),
            dir.join(rules),
        )
        .unwrap();
    }
    let file = dir.join(pattern.replace('*', "hosts"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, format!("- targets: {targets}\n")).unwrap();
    let (ok, said) = verdict(
        release
            .command("promtool")
            .args(["check", "config"])
            .arg(dir.join("prometheus.yml")),
    );
    assert!(ok, "{said}\n{}", uncommented.join("\n"));
    assert!(
        !said.contains("WARNING"),
        "the targets file was not found: {said}"
    );
}

/// counterhal-totals.yml passes its `promtool test rules` file, counterhal-totals.test.yml,
/// with the promtool of Prometheus 2.42 and of 3.5: a job shorter than a scrape (one sample)
/// has its whole count in the totals, and is finished from the next scrape, with no rate in
/// counterhal-rules.yml; a job of nine samples is finished with its last count, its
/// multiplexed counts scaled; a running job and a host whose scrape fails finish nothing; a
/// pod's total is its pod cgroup's, not its container's.
///
/// Oracle: promtool 2.42 (Debian 12's) and 3.5 (Debian sid's), evaluating the rules over the
/// test file's series, stale markers included.
#[test]
fn totals_rules_pass_their_promtool_tests() {
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        totals_rules_pass_their_promtool_tests_of(release);
    }
}

/// The body of the test above for `release`.
fn totals_rules_pass_their_promtool_tests_of(release: Release) {
    tool_or_skip!(release, "promtool");
    let (ok, said) = verdict(
        release
            .command("promtool")
            .args(["test", "rules", "counterhal-totals.test.yml"])
            .current_dir(repository("examples/prometheus")),
    );
    assert!(
        ok && said.contains("SUCCESS"),
        "{}'s promtool test rules counterhal-totals.test.yml: {said}",
        release.name()
    );
}

/// web-config.yml passes `promtool check web-config` of Prometheus 2.42 and 3.5 (its keys,
/// the certificate and key it names, given the test's, and its user's bcrypt hash); that hash
/// is of the password its comment publishes, and serve refuses it by name, so that no node
/// runs with a password everyone can read.
///
/// Oracle: promtool of Prometheus 2.42 and 3.5 (exporter-toolkit's `web.Validate`); glibc's
/// crypt(3), through Python's crypt module, for the hash.
#[test]
fn web_config_passes_promtool_and_its_published_password_is_refused() {
    let text = read(&repository("examples/prometheus/web-config.yml"));
    let scratch = Scratch::new("web-config");
    let path = scratch.0.join("web-config.yml");
    std::fs::write(&path, &text).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    std::fs::copy(fixtures.join("server.crt"), scratch.0.join("tls.crt")).unwrap();
    std::fs::copy(fixtures.join("server.key"), scratch.0.join("tls.key")).unwrap();
    let refused = counterhal(&[
        "serve",
        "-e",
        "task-clock",
        "--web.config.file",
        path.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("basic_auth_users.prometheus is the example's hash"),
        "{}",
        stderr(&refused)
    );
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        web_config_passes_promtool_of(release, &path);
    }
    let password = text
        .split("of the password `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .expect("the published password, in the comment");
    let hash = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("prometheus: "))
        .expect("the user prometheus");
    let checked = Command::new("python3")
        .args(["-W", "ignore", "-c"])
        .arg("import crypt, sys; print(crypt.crypt(sys.argv[1], sys.argv[2]) == sys.argv[2])")
        .args([password, hash])
        .output();
    let Ok(out) = checked else {
        skip!(
            Need::Tools,
            "python3 (Debian's python3) is not installed to check the published password's hash"
        );
    };
    let (ok, said) = (
        out.status.success(),
        format!("{}{}", stdout(&out), stderr(&out)),
    );
    if !ok && said.contains("No module named 'crypt'") {
        skip!(
            Need::Tools,
            "Python's crypt module (glibc's crypt) is not here: {said}"
        );
    }
    assert_eq!(
        said.trim(),
        "True",
        "{hash} is not the hash of `{password}`"
    );
}

/// The body of the test above for `release`: its promtool on the web configuration `path`.
fn web_config_passes_promtool_of(release: Release, path: &Path) {
    tool_or_skip!(release, "promtool");
    let (ok, said) = verdict(
        release
            .command("promtool")
            .args(["check", "web-config"])
            .arg(path),
    );
    assert!(ok && said.contains("SUCCESS"), "{}: {said}", release.name());
}

/// The DaemonSet is YAML (PyYAML reads it) whose pod counts with CAP_PERFMON and CAP_BPF
/// alone (every other capability dropped, no privilege escalation, a read-only root, the
/// shipped seccomp profile), outside the host's PID namespace, as system-node-critical, in the
/// namespace counterhal, with the host's cgroup file system mounted read-only where serve
/// finds it and its web configuration from a Secret, on the node's port 19110, probed over
/// TLS on the paths that need no password, within limits; and its command is one the
/// built command takes, counting the events the rules file reads, following each pod's cgroup
/// and no container's.
#[test]
fn daemonset_counts_what_the_rules_read_with_perfmon_and_bpf_alone() {
    let Some((container, pod)) = daemonset() else {
        skip!(
            Need::Tools,
            "python3 with PyYAML (Debian's python3-yaml) is not installed to read the DaemonSet"
        );
    };
    let documents = yaml_documents(&repository("examples/kubernetes/daemonset.yaml")).unwrap();
    let set = &documents[0];
    assert_eq!(set["apiVersion"], "apps/v1");
    assert_eq!(set["kind"], "DaemonSet");
    let template = &set["spec"]["template"];
    assert_eq!(
        set["spec"]["selector"]["matchLabels"], template["metadata"]["labels"],
        "the selector picks the pods"
    );
    assert_eq!(pod["priorityClassName"], "system-node-critical");
    assert_ne!(pod["hostPID"], true, "serve needs no host PID namespace");
    let container = &container;
    for (probe, path) in [
        ("readinessProbe", "/-/ready"),
        ("livenessProbe", "/-/healthy"),
    ] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"], path, "{}", container[probe]);
        assert_eq!(get["port"], "metrics", "{}", container[probe]);
        assert_eq!(get["scheme"], "HTTPS", "{}", container[probe]);
    }
    assert_eq!(
        pod["securityContext"]["seccompProfile"],
        serde_json::json!({"type": "Localhost", "localhostProfile": "counterhal-serve.json"}),
        "the shipped profile, as the kubelet names a file of its seccomp folder"
    );
    assert!(repository("examples/kubernetes/seccomp/counterhal-serve.json").is_file());
    assert_eq!(set["metadata"]["namespace"], "counterhal");

    let security = &container["securityContext"];
    assert_eq!(
        security["capabilities"]["add"],
        serde_json::json!(["PERFMON", "BPF"])
    );
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    // The image's user (dist/Containerfile's USER), not root, in the group that owns the
    // Secret's files, which it may read.
    let containerfile = read(&repository("dist/Containerfile"));
    let user = containerfile
        .lines()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("the Containerfile names its user");
    assert_eq!(
        format!("{}:{}", security["runAsUser"], security["runAsGroup"]),
        user
    );
    assert_eq!(security["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["fsGroup"], security["runAsGroup"]);
    assert_ne!(security["privileged"], true);
    let limits = &container["resources"]["limits"];
    assert!(
        limits["cpu"].is_string() && limits["memory"].is_string(),
        "{limits}"
    );

    let mounts = container["volumeMounts"].as_array().unwrap();
    let cgroup = mounts
        .iter()
        .find(|m| m["mountPath"] == "/sys/fs/cgroup")
        .expect("the cgroup file system mounted at /sys/fs/cgroup");
    assert_eq!(cgroup["readOnly"], true);
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == cgroup["name"])
        .expect("the cgroup mount's volume");
    assert_eq!(volume["hostPath"]["path"], "/sys/fs/cgroup");

    let web = mounts
        .iter()
        .find(|m| m["mountPath"] == "/etc/counterhal/web")
        .expect("the web configuration's Secret mounted at /etc/counterhal/web");
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == web["name"])
        .expect("the web configuration's volume");
    assert_eq!(volume["secret"]["secretName"], "counterhal-web");
    let mode = volume["secret"]["defaultMode"].as_u64().unwrap();
    assert_eq!(
        mode & 0o040,
        0o040,
        "its group reads the Secret's files: {mode:o}"
    );

    let port = &container["ports"][0];
    assert_eq!(port["containerPort"], 19110);
    assert!(
        port["hostPort"] == 19110 || pod["hostNetwork"] == true,
        "reachable on the node's port: {port}"
    );

    let command = command_of(container);
    assert_eq!(
        command[..2],
        ["/usr/bin/counterhal", "serve"],
        "{command:?}"
    );
    assert_eq!(after(&command, "--listen"), Some("0.0.0.0:19110"));
    assert_eq!(
        after(&command, "--web.config.file"),
        Some("/etc/counterhal/web/web-config.yml")
    );
    assert_eq!(after(&command, "--cgroup-depth"), Some("3"));
    assert_eq!(rules_of(&command[1..]), rules_file().1, "{command:?}");
    let pattern = after(&command, "--cgroups").expect("--cgroups");
    let pod_cgroup = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e.slice";
    assert!(pattern_matches(pattern, pod_cgroup), "{pattern}");
    assert!(pattern_matches(
        pattern,
        "kubepods.slice/kubepods-pod9a8b.slice"
    ));
    assert!(!pattern_matches(
        pattern,
        &format!("{pod_cgroup}/cri-containerd-1234.scope")
    ));
    assert!(!pattern_matches(
        pattern,
        "kubepods.slice/kubepods-burstable.slice"
    ));
    assert!(!pattern_matches(pattern, "system.slice/kubelet.service"));
}

/// The DaemonSet follows a node of 500 pods and more: `--max-cgroups` holds 500 pods and the
/// top-level cgroups, and its memory limit holds the BPF mode's map for them (24 bytes per
/// event per possible CPU per cgroup, allocated at start) at 16 events on 256 CPUs, with
/// 32 MiB left for the exporter itself.
///
/// Oracle: the kubelet's `maxPods` (110 by default, set past 500 on large nodes) and the
/// kernel's per-CPU hash map, which allocates `max_entries` values of `value_size` rounded
/// up to 8 bytes for each possible CPU (kernel/bpf/hashtab.c, `htab_map_alloc`).
#[test]
fn daemonset_has_room_for_a_node_of_500_pods() {
    let Some((container, _)) = daemonset() else {
        skip!(
            Need::Tools,
            "python3 with PyYAML (Debian's python3-yaml) is not installed to read the DaemonSet"
        );
    };
    let command = command_of(&container);
    let max: u64 = after(&command, "--max-cgroups")
        .and_then(|n| n.parse().ok())
        .expect("--max-cgroups N");
    assert!(
        max >= 520,
        "--max-cgroups {max}: 500 pods and the top-level cgroups"
    );
    let limit = container["resources"]["limits"]["memory"]
        .as_str()
        .and_then(|m| m.strip_suffix("Mi"))
        .and_then(|m| m.parse::<u64>().ok())
        .expect("a memory limit in Mi");
    let map = 24 * 16 * 256 * max;
    assert!(
        limit << 20 >= map + (32 << 20),
        "{limit} MiB for a map of {} MiB",
        map >> 20
    );
}
