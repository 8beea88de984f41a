//! The image (dist/Containerfile, made by scripts/image from the counterhal package of
//! scripts/debs, saved beside the packages) run as its users run it: the DaemonSet's
//! container (examples/kubernetes/daemonset.yaml: user 65534, the capabilities PERFMON and
//! BPF alone, no new privileges, a read-only root, the host's cgroup tree read-only, the
//! shipped seccomp profile) and a user's `stat`, under podman with runc (podman and runc run
//! as root here), and under runc alone as Kubernetes' runtimes configure it (no ambient
//! capabilities); scraped by Prometheus 3.5 over TLS with basic authentication beside the
//! same binary run outside a container.
//!
//! Oracles: Debian 12's podman 4.3 and runc 1.1 (what the runtime grants, as the kernel's
//! /proc/PID/status shows it), the kernel's seccomp (perf_event_open refused under podman's
//! own default profile, golang-github-containers-common 0.50's; the namespace calls under the
//! shipped one), libseccomp 2.5.4's system call tables, dpkg (the packages' versions),
//! Prometheus 3.5 (Debian sid's, the current-releases lab's), curl as the kubelet's probe.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::serve::Exporter;
use crate::serve_examples::{Scratch, command_of, daemonset, repository, runs};
use crate::serve_kubernetes::{scrape_job, web_config};
use crate::serve_prometheus::Prometheus;
use counterhal_conformance::fixtures::prometheus::Release;
use counterhal_conformance::prometheus_tool_or_skip as tool_or_skip;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The most the image may weigh, unpacked (issue 77).
const MOST_BYTES: u64 = 15_000_000;
/// The seccomp profile shipped beside the manifests.
const PROFILE: &str = "examples/kubernetes/seccomp/counterhal-serve.json";
/// The calls that profile allows, with what makes each.
const CALLS: &str = "examples/kubernetes/seccomp/calls.txt";
/// The user the image runs as (the Containerfile's USER): nobody.
const USER: &str = "65534:65534";
/// EPERM and ENOSYS (asm-generic/errno-base.h, errno.h: the same on x86-64 and arm64).
const EPERM: i32 = 1;
const ENOSYS: i32 = 38;
/// The folder of the CI's builds (scripts/debs and scripts/image write there).
const DIST: &str = "COUNTERHAL_DIST";

/// Where scripts/debs and scripts/image wrote: `COUNTERHAL_DIST`, else `dist/` of the target
/// folder this test binary was built in.
pub fn dist() -> PathBuf {
    if let Some(dir) = std::env::var_os(DIST) {
        return dir.into();
    }
    let exe = std::env::current_exe().unwrap();
    // target/debug/deps/main-HASH
    exe.ancestors().nth(3).unwrap().join("dist")
}

/// The image loaded into podman's store from its archive (once a process): its id, or why it
/// cannot be.
fn loaded() -> &'static Result<String, String> {
    static LOADED: OnceLock<Result<String, String>> = OnceLock::new();
    LOADED.get_or_init(|| {
        let archive = dist().join(format!(
            "counterhal-image_{}_amd64.tar",
            env!("CARGO_PKG_VERSION")
        ));
        if !archive.is_file() {
            return Err(format!(
                "no image at {} (scripts/debs, then scripts/image, make it)",
                archive.display()
            ));
        }
        let out = podman(&["load", "-q", "-i", archive.to_str().unwrap()]);
        if !out.status.success() {
            return Err(format!("podman load: {}", stderr(&out)));
        }
        let tag = format!("localhost/counterhal:{}", env!("CARGO_PKG_VERSION"));
        let id = podman(&["image", "inspect", "--format", "{{.Id}}", &tag]);
        Ok(stdout(&id).trim().to_string())
    })
}

/// The image's id, or a skip through the door: podman and runc run containers as root only
/// here, and the image must have been built.
macro_rules! image_or_skip {
    () => {{
        linux_or_skip!();
        if !running_as_root() {
            skip!(Need::Privilege, "podman runs the image as root here");
        }
        if !runs("podman", &["--version"]) || !runs("runc", &["--version"]) {
            skip!(
                Need::Tools,
                "podman and runc are not installed (apt-get install podman runc)"
            );
        }
        match loaded() {
            Ok(id) => id.clone(),
            Err(why) => skip!(Need::Tools, "{why}"),
        }
    }};
}

/// `podman ARGS`.
fn podman(args: &[&str]) -> Output {
    Command::new("podman")
        .args(args)
        .output()
        .expect("run podman")
}

/// This process's soft limit `name` (a line of /proc/self/limits: `Max open files`), at most
/// `most`, which a container may be given: podman asks for more than these machines' hard
/// limits by default, and runc, raising one past its own hard limit, fails.
fn limit(name: &str, most: u64) -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    limits
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|l| l.split_whitespace().next())
        .map_or(1024, |soft| soft.parse().unwrap_or(most).min(most))
}

/// The options of `podman run` or `create` for the DaemonSet's container: runc, the
/// capabilities PERFMON and BPF and no other, no new privileges, a read-only root, limits at
/// this process's, the profile where `profiled` (podman's default profile elsewhere).
fn confined(profiled: bool) -> Vec<String> {
    let mut args: Vec<String> = [
        "--runtime",
        "runc",
        "--cap-drop",
        "all",
        "--cap-add",
        "CAP_PERFMON,CAP_BPF",
        "--security-opt",
        "no-new-privileges",
        "--read-only",
    ]
    .map(String::from)
    .to_vec();
    let (files, tasks) = (limit("Max open files", 65536), limit("Max processes", 4096));
    args.extend([
        "--ulimit".into(),
        format!("nofile={files}:{files}"),
        "--ulimit".into(),
        format!("nproc={tasks}:{tasks}"),
    ]);
    if profiled {
        let profile = repository(PROFILE);
        args.extend([
            "--security-opt".into(),
            format!("seccomp={}", profile.display()),
        ]);
    }
    args
}

/// `podman run --rm` of the image `id` confined as the DaemonSet's container (with the
/// profile where `profiled`), with `counterhal ARGS`.
fn run_confined(id: &str, profiled: bool, args: &[&str]) -> Output {
    let mut command = Command::new("podman");
    command
        .arg("run")
        .arg("--rm")
        .args(confined(profiled))
        .arg(id);
    command.args(args).output().expect("run podman")
}

/// The image weighs at most 15 MB unpacked, carries the OCI labels of its version (the
/// workspace's), source and revision, has the command as its entry point (serving on port
/// 19110 without arguments), and holds no shell.
///
/// Oracle: podman 4.3 (`image inspect`, and its runtime's exec of a missing file).
#[test]
fn the_image_is_small_labelled_and_has_no_shell() {
    let id = image_or_skip!();
    let size = podman(&["image", "inspect", "--format", "{{.Size}}", &id]);
    let size: u64 = stdout(&size).trim().parse().expect("a size");
    eprintln!("the image: {size} bytes");
    assert!(size <= MOST_BYTES, "{size} bytes, past {MOST_BYTES}");
    let labels = podman(&["image", "inspect", "--format", "{{json .Labels}}", &id]);
    let labels: serde_json::Value = serde_json::from_str(&stdout(&labels)).unwrap();
    let label = |name: &str| {
        labels[format!("org.opencontainers.image.{name}")]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(label("version"), env!("CARGO_PKG_VERSION"), "{labels}");
    assert!(!label("source").is_empty(), "{labels}");
    let revision = label("revision");
    assert!(
        revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit()),
        "{labels}"
    );
    let config = podman(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config.Entrypoint}} {{json .Config.Cmd}} {{json .Config.ExposedPorts}}",
        &id,
    ]);
    assert_eq!(
        stdout(&config).trim(),
        r#"["/usr/bin/counterhal"] ["serve","--listen","0.0.0.0:19110"] {"19110/tcp":{}}"#,
        "the command is the entry point, serving by default"
    );
    let user = podman(&["image", "inspect", "--format", "{{.Config.User}}", &id]);
    assert_eq!(stdout(&user).trim(), USER, "not root");
    let shell = Command::new("podman")
        .args([
            "run",
            "--rm",
            "--runtime",
            "runc",
            "--entrypoint",
            "/bin/sh",
        ])
        .args(confined(true))
        .args([&id, "-c", "true"])
        .output()
        .unwrap();
    assert!(
        stderr(&shell).contains("stat /bin/sh: no such file or directory"),
        "a shell in the image: {}",
        stderr(&shell)
    );
}

/// The names of the calls a profile allows, by rules that `applies` to.
fn allowed(
    profile: &serde_json::Value,
    applies: &dyn Fn(&serde_json::Value) -> bool,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for rule in profile["syscalls"].as_array().unwrap() {
        if rule["action"] == "SCMP_ACT_ALLOW" && applies(rule) {
            for name in rule["names"].as_array().unwrap() {
                names.insert(name.as_str().unwrap().to_string());
            }
        }
    }
    names
}

/// A JSON file.
fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The calls of calls.txt on `arch`.
fn listed_calls(arch: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(repository(CALLS)).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut fields = l.split_whitespace();
            let (name, arches) = (fields.next()?, fields.next()?);
            (arches == "all" || arches == arch).then(|| name.to_string())
        })
        .collect()
}

/// The shipped profile is an allow-list: calls.txt's calls (scripts/seccomp-profile makes it
/// again from the list), `clone` without the flags that make namespaces, `clone3` answered
/// ENOSYS, every other call EPERM; it allows none of the calls that make or enter
/// namespaces, mount, or reach the kernel's keys, and nothing that podman's default profile
/// does not allow every container but perf_event_open and bpf, which that default keeps for
/// CAP_SYS_ADMIN.
///
/// Oracle: containers-common's /usr/share/containers/seccomp.json (0.50, Debian 12's),
/// read here.
#[test]
fn the_profile_allows_the_images_calls_alone() {
    let ours = json(&repository(PROFILE));
    assert_eq!(ours["defaultAction"], "SCMP_ACT_ERRNO");
    assert_eq!(ours["defaultErrnoRet"], EPERM);
    assert_eq!(
        ours["architectures"],
        serde_json::json!(["SCMP_ARCH_X86_64"])
    );
    let unconditional = allowed(&ours, &|rule| rule["args"].is_null());
    assert_eq!(unconditional, listed_calls("x86_64"));
    let rules = ours["syscalls"].as_array().unwrap();
    let rule = |name: &str| {
        let found: Vec<&serde_json::Value> = rules
            .iter()
            .filter(|r| r["names"].as_array().unwrap().iter().any(|n| n == name))
            .collect();
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        found[0].clone()
    };
    // CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
    // (include/uapi/linux/sched.h), all clear in clone's flags.
    assert_eq!(
        rule("clone")["args"],
        serde_json::json!([{
            "index": 0,
            "value": 0x7E02_0000_u64,
            "valueTwo": 0,
            "op": "SCMP_CMP_MASKED_EQ",
        }])
    );
    assert_eq!(rule("clone3")["action"], "SCMP_ACT_ERRNO");
    assert_eq!(rule("clone3")["errnoRet"], ENOSYS);
    let escapes = [
        "unshare",
        "setns",
        "mount",
        "umount2",
        "pivot_root",
        "chroot",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "open_tree",
        "move_mount",
        "mount_setattr",
        "keyctl",
        "add_key",
        "request_key",
        "ptrace",
        "process_vm_readv",
        "init_module",
        "kexec_load",
    ];
    let all = allowed(&ours, &|_| true);
    for call in escapes {
        assert!(!all.contains(call), "{call} allowed");
    }

    let default = Path::new("/usr/share/containers/seccomp.json");
    if !default.is_file() {
        skip!(
            Need::Tools,
            "no podman default profile (apt-get install golang-github-containers-common)"
        );
    }
    let theirs = allowed(&json(default), &|rule| {
        let includes = &rule["includes"];
        let arches = includes["arches"].as_array();
        includes["caps"].as_array().is_none_or(|c| c.is_empty())
            && arches.is_none_or(|a| a.is_empty() || a.iter().any(|a| a == "amd64"))
    });
    eprintln!(
        "allowed: {} calls here, {} by podman's default to every container",
        all.len(),
        theirs.len()
    );
    let beyond: Vec<&String> = all.difference(&theirs).collect();
    assert_eq!(beyond, ["bpf", "perf_event_open"]);
    let check = Command::new(repository("scripts/seccomp-profile"))
        .arg("--check")
        .output()
        .expect("run scripts/seccomp-profile");
    assert!(
        check.status.success(),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );
}

/// Every call of the x86-64 and the arm64 profiles (scripts/seccomp-profile --arch) is one
/// that architecture has: libseccomp resolves each name there (a name it does not know, or
/// one the architecture lacks, it answers with a negative number), so no runtime drops it.
///
/// Oracle: libseccomp 2.5.4's tables (Debian 12's `seccomp`, scmp_sys_resolver).
#[test]
fn the_profiles_calls_exist_on_their_architectures() {
    if !runs("scmp_sys_resolver", &["-a", "x86_64", "read"]) {
        skip!(
            Need::Tools,
            "libseccomp's resolver is not installed (apt-get install seccomp)"
        );
    }
    let scratch = Scratch::new("profiles");
    for arch in ["x86_64", "aarch64"] {
        let out = scratch.0.join(format!("{arch}.json"));
        let made = Command::new(repository("scripts/seccomp-profile"))
            .args(["--arch", arch])
            .arg(&out)
            .output()
            .expect("run scripts/seccomp-profile");
        assert!(made.status.success(), "{}", stderr(&made));
        let profile = json(&out);
        let names = allowed(&profile, &|_| true);
        assert_eq!(names.len(), listed_calls(arch).len() + 1, "{arch}");
        for name in names.iter().map(String::as_str).chain(["clone3"]) {
            let number = Command::new("scmp_sys_resolver")
                .args(["-a", arch, name])
                .output()
                .unwrap();
            let number: i64 = stdout(&number).trim().parse().unwrap();
            assert!(number >= 0, "{arch} has no {name}: {number}");
        }
    }
}

/// The calls a process makes to leave its container's confinement (a user, mount and network
/// namespace, a mount, setns, the kernel's keys, clone into a user namespace, fsopen) fail
/// under the shipped profile, each with EPERM, and clone3 with ENOSYS; under podman's default
/// profile, with the same capabilities, unshare succeeds.
///
/// Oracle: the kernel's seccomp under runc 1.1 with the shipped profile and with
/// containers-common 0.50's default, a static program's errno (cli/tests/fixtures/namespaces.c,
/// built by cc).
#[test]
fn the_profile_refuses_the_calls_that_leave_a_container() {
    let id = image_or_skip!();
    let scratch = Scratch::new("namespaces");
    let probe = scratch.0.join("namespaces");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/namespaces.c");
    let built = Command::new("cc")
        .args(["-static", "-O2", "-o"])
        .arg(&probe)
        .arg(&source)
        .output();
    match built {
        Ok(out) if out.status.success() => {}
        Ok(out) => skip!(
            Need::Tools,
            "cc -static cannot build the probe (libc6-dev): {}",
            stderr(&out)
        ),
        Err(_) => skip!(Need::Tools, "no C compiler (apt-get install gcc)"),
    }
    let run = |profiled: bool| {
        let out = Command::new("podman")
            .arg("run")
            .arg("--rm")
            .args(confined(profiled))
            .arg("-v")
            .arg(format!("{}:/probe:ro", probe.display()))
            .args(["--entrypoint", "/probe", &id])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        eprintln!(
            "{}: {}",
            if profiled { "shipped" } else { "podman's" },
            text.replace('\n', " ")
        );
        text.lines()
            .map(|l| {
                let (name, errno) = l.split_once(' ').unwrap();
                (name.to_string(), errno.parse::<i32>().unwrap())
            })
            .collect::<std::collections::BTreeMap<String, i32>>()
    };
    let shipped = run(true);
    assert_eq!(shipped.len(), 8, "{shipped:?}");
    for (call, errno) in &shipped {
        let refused = if call == "clone3" { ENOSYS } else { EPERM };
        assert_eq!(*errno, refused, "{call}: {shipped:?}");
    }
    let default = run(false);
    assert_eq!(default["unshare"], 0, "{default:?}");
}

/// A user's `counterhal stat` in the image, as the image's user (nobody) holding CAP_PERFMON,
/// counts under the shipped profile (a command, every CPU for a time, which the image's sleep
/// measures, and every CPU by intervals), and under podman's default profile is refused with
/// counterhal's hint naming the seccomp filter first, before the paranoid level the
/// capability lifts; so is the DaemonSet's `serve`.
///
/// Oracle: the kernel's seccomp under runc, with podman's default profile
/// (golang-github-containers-common 0.50, which allows perf_event_open to CAP_SYS_ADMIN alone)
/// and the shipped one; the kernel's paranoid check (every CPU needs CAP_PERFMON at level 1
/// or higher).
#[test]
fn stat_counts_in_the_image_with_the_profile_and_names_seccomp_without() {
    let id = image_or_skip!();
    let stat = [
        "stat",
        "-x,",
        "-e",
        "task-clock,page-faults",
        "--",
        "/usr/bin/counterhal",
        "version",
    ];
    let counted = run_confined(&id, true, &stat);
    assert!(counted.status.success(), "{}", stderr(&counted));
    let page_faults = stderr(&counted)
        .lines()
        .find(|l| l.contains(",page-faults,"))
        .and_then(|l| l.split(',').next()?.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("{}", stderr(&counted)));
    assert!(page_faults > 10, "{}", stderr(&counted));
    assert!(stdout(&counted).contains(env!("CARGO_PKG_VERSION")));
    // Every CPU for a while, no command: stat runs the image's sleep.
    let every_cpu = ["stat", "-a", "-x,", "-e", "task-clock", "--timeout", "300"];
    let counted = run_confined(&id, true, &every_cpu);
    assert!(counted.status.success(), "{}", stderr(&counted));
    let task_clock: f64 = stderr(&counted)
        .lines()
        .find(|l| l.contains(",task-clock,"))
        .and_then(|l| l.split(',').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{}", stderr(&counted)));
    assert!(task_clock >= 300.0, "{}", stderr(&counted));
    let intervals = [
        "stat",
        "-a",
        "-x,",
        "-e",
        "task-clock",
        "-I",
        "100",
        "--timeout",
        "350",
    ];
    let counted = run_confined(&id, true, &intervals);
    assert!(counted.status.success(), "{}", stderr(&counted));
    let lines = stderr(&counted)
        .lines()
        .filter(|l| l.contains(",task-clock,"))
        .count();
    assert!(lines >= 3, "{}", stderr(&counted));

    let refused = run_confined(&id, false, &stat);
    assert!(!refused.status.success(), "{}", stderr(&refused));
    let said = stderr(&refused);
    let hint = said.split_once("hint: ").map_or("", |(_, hint)| hint);
    assert!(
        hint.starts_with(
            "a seccomp filter (containers) or an LSM may block perf_event_open: this process \
             holds CAP_PERFMON"
        ),
        "{said}"
    );
    let Some((container, _)) = daemonset() else {
        skip!(
            Need::Tools,
            "PyYAML is not installed (apt-get install python3-yaml)"
        );
    };
    let command = command_of(&container);
    let mut serve: Vec<&str> = command[1..].iter().map(String::as_str).collect();
    let at = serve
        .iter()
        .position(|a| *a == "--web.config.file")
        .unwrap();
    serve.drain(at..at + 2);
    let refused = run_confined(&id, false, &serve);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("seccomp"), "{}", stderr(&refused));
}

/// The image's files, mounted by podman (unmounted when dropped).
struct Mounted(PathBuf, String);

impl Mounted {
    fn new(id: &str) -> Mounted {
        let out = podman(&["image", "mount", id]);
        assert!(out.status.success(), "{}", stderr(&out));
        Mounted(PathBuf::from(stdout(&out).trim()), id.to_string())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        podman(&["image", "unmount", &self.1]);
    }
}

/// Every regular file under `dir`, as the image's absolute paths.
fn files_under(root: &Path, dir: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            files_under(root, &entry.path(), found);
        } else if kind.is_file() {
            let path = entry.path();
            found.push(format!("/{}", path.strip_prefix(root).unwrap().display()));
        }
    }
}

/// The package dpkg says owns `path` here (merged /usr: as the path, or without /usr; a
/// package whose documentation folder is a link to another's, libgcc-s1's: the folder's), as
/// dpkg names it: with its architecture where it is Multi-Arch: same (`libc6:amd64`), the one
/// name that is not ambiguous where another architecture's is installed beside it.
fn dpkg_owner(path: &str) -> Option<String> {
    let short = path.strip_prefix("/usr").unwrap_or(path);
    let folder = Path::new(path).parent()?.to_str()?;
    let arch = Command::new("dpkg")
        .arg("--print-architecture")
        .output()
        .ok()?;
    let native = stdout(&arch).trim().to_string();
    [path, short, folder].iter().find_map(|path| {
        let out = Command::new("dpkg-query")
            .args(["-S", path])
            .output()
            .ok()?;
        let text = stdout(&out);
        let (owners, _) = text.lines().next()?.split_once(": ")?;
        // A file each architecture's instance installs (libc6's copyright) names them all:
        // the image's is this machine's architecture's.
        let ours: Vec<&str> = owners
            .split(", ")
            .filter(|o| o.split_once(':').is_none_or(|(_, arch)| arch == native))
            .collect();
        (out.status.success() && ours.len() == 1).then(|| ours[0].to_string())
    })
}

/// Every file of the image that is not counterhal's own nor the image's (its users, its dpkg
/// status entries) belongs to a Debian package of this machine, and each such package has a
/// dpkg status entry in the image (/var/lib/dpkg/status.d/PACKAGE, where Trivy and Syft read
/// a distroless image's packages) naming the version dpkg has installed here, which the
/// files were copied from; the image says which distribution it is (/etc/os-release) and
/// names its users.
///
/// Oracle: dpkg 1.21 (`dpkg-query -S`, `-W`) on the machine that built the image.
#[test]
fn the_image_names_its_debian_packages_as_dpkg_does() {
    let id = image_or_skip!();
    if !runs("dpkg-query", &["--version"]) {
        skip!(Need::Tools, "no dpkg here to compare the packages with");
    }
    let mounted = Mounted::new(&id);
    let root = &mounted.0;
    let mut files = Vec::new();
    files_under(root, root, &mut files);
    let mut owners = BTreeSet::new();
    for file in &files {
        if file.starts_with("/var/lib/dpkg/status.d/")
            || ["/etc/passwd", "/etc/group"].contains(&file.as_str())
            || file.contains("counterhal")
        {
            continue;
        }
        let owner = dpkg_owner(file).unwrap_or_else(|| panic!("no package owns {file}"));
        owners.insert(owner);
    }
    let status = root.join("var/lib/dpkg/status.d");
    let entries: BTreeSet<String> = std::fs::read_dir(&status)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    eprintln!("packages: {owners:?}");
    let bare = |package: &str| package.split(':').next().unwrap_or(package).to_string();
    assert_eq!(entries, owners.iter().map(|p| bare(p)).collect());
    for package in &owners {
        let entry = std::fs::read_to_string(status.join(bare(package))).unwrap();
        let field = |name: &str| {
            entry
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
                .unwrap_or_default()
                .to_string()
        };
        let installed = Command::new("dpkg-query")
            .args(["-W", "-f", "${Version} ${Architecture}", package])
            .output()
            .unwrap();
        assert_eq!(
            format!("{} {}", field("Version"), field("Architecture")),
            stdout(&installed),
            "{package}"
        );
        assert_eq!(field("Package"), bare(package));
        assert_eq!(field("Status"), "install ok installed", "{package}");
    }
    let release = std::fs::read_to_string(root.join("usr/lib/os-release")).unwrap();
    assert_eq!(
        release,
        std::fs::read_to_string("/usr/lib/os-release").unwrap()
    );
    assert_eq!(
        std::fs::read_link(root.join("etc/os-release")).unwrap(),
        Path::new("../usr/lib/os-release")
    );
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
    assert!(
        passwd
            .lines()
            .any(|l| l.starts_with("nobody:x:65534:65534:")),
        "{passwd}"
    );
    let group = std::fs::read_to_string(root.join("etc/group")).unwrap();
    assert!(group.lines().any(|l| l == "nogroup:x:65534:"), "{group}");
}

/// runc's `run` of `args` in `bundle` (its config.json and rootfs), as container `name`.
fn runc_run(bundle: &Path, name: &str) -> Output {
    Command::new("runc")
        .args(["run", "--bundle"])
        .arg(bundle)
        .arg(name)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run runc")
}

/// As Kubernetes' runtimes run it (containerd and CRI-O give the capabilities a pod adds to
/// the bounding, permitted and effective sets and never to the ambient one, which runc then
/// loses at the execve of a user other than root; a Localhost profile read as the OCI
/// specification's LinuxSeccomp), the image's command counts every CPU as nobody with no new
/// privileges, by its file capabilities: the same binary without them, in the same
/// container, is refused.
///
/// Oracle: runc 1.1 (the kernel's capability rules at execve, its seccomp with the shipped
/// profile read as the OCI specification reads it); the kernel's paranoid check (a whole CPU
/// needs CAP_PERFMON at level 1 or higher).
#[test]
fn nobody_counts_with_the_capabilities_kubernetes_gives() {
    let id = image_or_skip!();
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if paranoid < 1 {
        skip!(
            Need::System,
            "kernel.perf_event_paranoid is {paranoid}: anyone counts a whole CPU here"
        );
    }
    let scratch = Scratch::new("runc");
    let rootfs = scratch.0.join("rootfs");
    {
        let mounted = Mounted::new(&id);
        // cp -a keeps the file capabilities (the security.capability attribute).
        let copied = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", mounted.0.display()))
            .arg(&rootfs)
            .output()
            .unwrap();
        assert!(copied.status.success(), "{}", stderr(&copied));
    }
    for dir in ["proc", "sys", "dev"] {
        std::fs::create_dir_all(rootfs.join(dir)).unwrap();
    }
    // The same file without its attribute.
    std::fs::copy(
        rootfs.join("usr/bin/counterhal"),
        rootfs.join("usr/bin/counterhal-plain"),
    )
    .unwrap();
    let spec = Command::new("runc")
        .arg("spec")
        .current_dir(&scratch.0)
        .output()
        .unwrap();
    assert!(spec.status.success(), "{}", stderr(&spec));
    let mut config = json(&scratch.0.join("config.json"));
    let capabilities = serde_json::json!(["CAP_PERFMON", "CAP_BPF"]);
    config["root"] = serde_json::json!({"path": "rootfs", "readonly": true});
    config["process"]["terminal"] = false.into();
    config["process"]["user"] = serde_json::json!({"uid": 65534, "gid": 65534});
    config["process"]["noNewPrivileges"] = true.into();
    config["process"]["capabilities"] = serde_json::json!({
        "bounding": capabilities,
        "effective": capabilities,
        "permitted": capabilities,
    });
    config["linux"]["seccomp"] = json(&repository(PROFILE));
    let count = |binary: &str| {
        let mut config = config.clone();
        config["process"]["args"] = serde_json::json!([
            binary,
            "stat",
            "-a",
            "-x,",
            "-e",
            "task-clock",
            "--timeout",
            "200"
        ]);
        std::fs::write(
            scratch.0.join("config.json"),
            serde_json::to_string(&config).unwrap(),
        )
        .unwrap();
        runc_run(
            &scratch.0,
            &format!("counterhal-test-{}", std::process::id()),
        )
    };
    let counted = count("/usr/bin/counterhal");
    assert!(counted.status.success(), "{}", stderr(&counted));
    assert!(
        stderr(&counted).contains(",task-clock,"),
        "{}",
        stderr(&counted)
    );
    let refused = count("/usr/bin/counterhal-plain");
    assert!(!refused.status.success(), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("permission denied"),
        "{}",
        stderr(&refused)
    );
}

/// A container of the test's, removed when dropped.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        podman(&["rm", "-f", "-t", "1", &self.0]);
    }
}

/// Done when (issue 77): the image runs as the DaemonSet says (its command line, its user,
/// its web configuration from a folder mounted read-only as its Secret is, the host's cgroup
/// tree read-only, its port published), as nobody holding CAP_PERFMON and CAP_BPF and nothing
/// else, with no new privileges and the shipped seccomp profile's filter; answers its
/// readiness probe over TLS without a password within a second of `podman start`; and
/// Prometheus 3.5 (and 2.42), scraping it and the same binary outside a container as
/// examples/prometheus/prometheus-kubernetes.yml's job does (TLS, basic authentication), finds
/// every series of the one in the other: the BPF mode's program loaded in both where the
/// host's is (`bpf` passes the profile).
///
/// Oracle: podman 4.3 with runc 1.1; the kernel (/proc/PID/status of the container's process:
/// Uid, CapEff, CapBnd, NoNewPrivs, Seccomp); curl, as the kubelet's HTTPS probe; Prometheus 3.5
/// and 2.42.
#[test]
fn the_daemonset_in_the_image_serves_prometheus_what_it_serves_outside() {
    serve_or_skip!();
    let id = image_or_skip!();
    let Some((container, _)) = daemonset() else {
        skip!(
            Need::Tools,
            "PyYAML is not installed (apt-get install python3-yaml)"
        );
    };
    let scratch = Scratch::new("image");
    let web = web_config(&scratch.0);
    let command = command_of(&container);
    let security = &container["securityContext"];
    let user = format!("{}:{}", security["runAsUser"], security["runAsGroup"]);
    assert_eq!(user, USER, "the DaemonSet runs as the image's user");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let name = format!("counterhal-test-{}", std::process::id());
    let created = Command::new("podman")
        .args(["create", "--name", &name])
        .args(confined(true))
        .args(["--user", &user])
        .args(["-p", &format!("127.0.0.1:{port}:19110")])
        .args(["-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro"])
        .args([
            "-v",
            &format!("{}:/etc/counterhal/web:ro", scratch.0.display()),
        ])
        .arg(&id)
        .args(&command[1..])
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", stderr(&created));
    let _container = Container(name.clone());
    let started = Instant::now();
    let start = podman(&["start", &name]);
    assert!(start.status.success(), "{}", stderr(&start));
    let probe = format!("https://127.0.0.1:{port}/-/ready");
    loop {
        let ready = Command::new("curl")
            .args(["-skf", "--max-time", "1", &probe])
            .output()
            .expect("run curl");
        if ready.status.success() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not ready: {}",
            stdout(&podman(&["logs", &name]))
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let ready_in = started.elapsed();
    eprintln!("ready {ready_in:?} after podman start");
    assert!(
        ready_in < Duration::from_secs(1),
        "ready after {ready_in:?}"
    );
    confined_as_the_daemonset_says(&name);

    let binary = packaged_binary(&scratch.0);
    let mut outside = Command::new(binary);
    let mut args: Vec<String> = command[1..].to_vec();
    for (option, value) in [
        ("--listen", "127.0.0.1:0".to_string()),
        ("--web.config.file", web.display().to_string()),
    ] {
        let at = args.iter().position(|a| a == option).unwrap();
        args[at + 1] = value;
    }
    outside.args(&args);
    let outside = Exporter::spawn(outside);
    let inside: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    for release in Release::ALL {
        eprintln!("== {}", release.name());
        same_series_through(release, inside, outside.address, &scratch.0);
    }
}

/// The body of the test above for `release`: its Prometheus scraping the exporter in the
/// container at `inside` and the one outside at `outside` as prometheus-kubernetes.yml's job
/// does (its files in `dir`) finds the same series in both.
fn same_series_through(
    release: Release,
    inside: std::net::SocketAddr,
    outside: std::net::SocketAddr,
    dir: &Path,
) {
    tool_or_skip!(release, "prometheus");
    let jobs = scrape_job(inside, dir).replace("counterhal-kubernetes", "counterhal-image")
        + &scrape_job(outside, dir).replace("counterhal-kubernetes", "counterhal-host");
    let prometheus = Prometheus::start_with(release, "image", &jobs, "");
    let waited = Instant::now();
    while prometheus.query("up{job=~\"counterhal-.*\"} == 1").len() < 2 {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "{}",
            prometheus.health()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // The two follow the host's top-level cgroups, which other tests make and remove: the
    // same tree is looked for in both scrapes of a moment, a few moments at most.
    let mut differences = String::new();
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(1500));
        let image = series(&prometheus, "counterhal-image");
        let host = series(&prometheus, "counterhal-host");
        assert!(image.len() > 50, "{image:?}");
        let missing: Vec<&String> = host.difference(&image).collect();
        let more: Vec<&String> = image.difference(&host).collect();
        if missing.is_empty() && more.is_empty() {
            return;
        }
        differences = format!("in the container, missing {missing:?}; more {more:?}");
    }
    panic!("{}: {differences}", release.name());
}

/// The container `name`'s process runs as the image's user, not root, holds CAP_PERFMON and
/// CAP_BPF (bits 38 and 39) and no other capability, effective or bounding, runs with no new
/// privileges under a seccomp filter, and has a read-only root.
fn confined_as_the_daemonset_says(name: &str) {
    let pid = podman(&["inspect", "--format", "{{.State.Pid}}", name]);
    let status = std::fs::read_to_string(format!("/proc/{}/status", stdout(&pid).trim())).unwrap();
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map_or(String::new(), |v| v.trim().to_string())
    };
    let uids: Vec<&str> = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(uids, ["65534"; 4], "{status}");
    assert_eq!(field("CapEff:"), "000000c000000000", "{status}");
    assert_eq!(field("CapBnd:"), "000000c000000000", "{status}");
    assert_eq!(field("NoNewPrivs:"), "1", "{status}");
    assert_eq!(field("Seccomp:"), "2", "{status}");
    let root = podman(&[
        "inspect",
        "--format",
        "{{.HostConfig.ReadonlyRootfs}}",
        name,
    ]);
    assert_eq!(stdout(&root).trim(), "true");
}

/// The counterhal package's binary (the image's), unpacked into `dir`.
fn packaged_binary(dir: &Path) -> PathBuf {
    let deb = dist().join(format!(
        "counterhal_{}-1_amd64.deb",
        env!("CARGO_PKG_VERSION")
    ));
    let unpacked = dir.join("deb");
    let out = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&unpacked)
        .output()
        .expect("run dpkg-deb");
    assert!(out.status.success(), "{}: {}", deb.display(), stderr(&out));
    unpacked.join("usr/bin/counterhal")
}

/// Every series of `job` that Prometheus holds now: its name and labels but `job`, `instance`
/// and a BPF program's `id` (for the HTTP families, its name alone: which codes and closes a client met
/// differs from one exporter to the other).
fn series(prometheus: &Prometheus, job: &str) -> BTreeSet<String> {
    let found = prometheus.query(&format!("{{job=\"{job}\"}}"));
    found
        .iter()
        .map(|(labels, _)| {
            let mut labels: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(labels).unwrap();
            // bpftool's id of each BPF program, which is each process's own.
            for own in ["job", "instance", "id"] {
                labels.remove(own);
            }
            let name = labels["__name__"].as_str().unwrap_or_default().to_string();
            if name.starts_with("counterhal_http_") {
                return name;
            }
            serde_json::Value::Object(labels).to_string()
        })
        .collect()
}
