//! A hostile sysfs tree (`--sysfs DIR` may name any directory): generated trees whose files
//! are, here and there, links out of the tree, FIFOs, device nodes, files longer than a page,
//! bad scales and units, and text no kernel writes, beside good files and the links the real
//! /sys has (`bus/event_source/devices/PMU -> ../../../devices/PMU`). Listing and resolving
//! every name of such a tree never blocks, never shows what a file out of the tree or a
//! refused file holds, never gives a scale that is not finite and positive, and still
//! resolves every alias whose files are all good.

use counterhal_hal::BackendExt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use counterhal_conformance::prop::{self, Gen};
use counterhal_events::Database;
use counterhal_hal::Backend;
use counterhal_linux::on_sysfs;
use counterhal_system::System;

/// What a file out of every tree holds: it must never be shown.
const SECRET: &str = "Hostile-Secret-5c1d";

/// What one file of a generated tree is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum File {
    /// What the kernel would write there.
    Good,
    /// A link to the secret file, out of the tree.
    LinkOut,
    /// A link to `/dev/zero`, out of the tree (and endless).
    Zero,
    /// A hard link of a FIFO no one writes to, inside the tree.
    Fifo,
    /// A hard link of a character device (`/dev/zero`'s numbers), inside the tree, where this
    /// user may make one (else a FIFO).
    Device,
    /// A regular file of a megabyte.
    Huge,
    /// The secret itself, in the tree where the file belongs: text no kernel writes there.
    Garbage,
    /// For a `.scale`: `nan`, `-1`, `1e308`, `inf` or `0`.
    BadScale(&'static str),
}

impl File {
    fn any(g: &mut Gen, scale: bool) -> File {
        let bad_scales: [&'static str; 5] = ["nan", "-1", "1e308", "inf", "0"];
        match g.below(if scale { 10 } else { 9 }) {
            0..=2 => File::Good,
            3 => File::LinkOut,
            4 => File::Zero,
            5 => File::Fifo,
            6 => File::Device,
            7 => File::Huge,
            8 => File::Garbage,
            _ => File::BadScale(bad_scales[g.index(bad_scales.len())]),
        }
    }
}

/// An alias of a generated PMU: its terms, scale and unit files.
#[derive(Clone, Debug)]
struct AliasSpec {
    name: String,
    terms: File,
    scale: Option<File>,
    unit: Option<File>,
}

/// A generated PMU.
#[derive(Clone, Debug)]
struct PmuSpec {
    name: String,
    type_: File,
    format: File,
    cpumask: Option<File>,
    /// Whether its directory is `devices/NAME`, linked from `bus/event_source/devices` as the
    /// real /sys links it.
    linked: bool,
    /// Whether its `events` directory is a link out of the tree.
    events_out: bool,
    aliases: Vec<AliasSpec>,
}

/// A generated tree: its PMUs and one tracepoint's `id`.
#[derive(Clone, Debug)]
struct TreeSpec {
    pmus: Vec<PmuSpec>,
    tracepoint_id: File,
}

fn generate(g: &mut Gen) -> TreeSpec {
    let pmus = (0..1 + g.below(3))
        .map(|p| PmuSpec {
            name: format!("pmu{p}"),
            type_: File::any(g, false),
            format: File::any(g, false),
            cpumask: g.one_in(2).then(|| File::any(g, false)),
            linked: g.one_in(2),
            events_out: g.one_in(8),
            aliases: (0..1 + g.below(3))
                .map(|a| AliasSpec {
                    name: format!("alias{a}"),
                    terms: File::any(g, false),
                    scale: g.one_in(2).then(|| File::any(g, true)),
                    unit: g.one_in(2).then(|| File::any(g, false)),
                })
                .collect(),
        })
        .collect();
    TreeSpec {
        pmus,
        tracepoint_id: File::any(g, false),
    }
}

/// The pieces trees link to, made once: the secret out of every tree, a FIFO, a device node
/// and a megabyte file that trees hard-link, and the trees' parent.
struct Pieces {
    base: PathBuf,
    secret: PathBuf,
    fifo: PathBuf,
    device: PathBuf,
    huge: PathBuf,
    trees: AtomicUsize,
}

fn pieces() -> &'static Pieces {
    static PIECES: OnceLock<Pieces> = OnceLock::new();
    PIECES.get_or_init(|| {
        // Hundreds of small trees are made: in memory (tmpfs) where there is one, so that a
        // busy disk does not slow the test.
        let shm = Path::new("/dev/shm");
        let parent = match shm.is_dir() {
            true => shm.to_path_buf(),
            false => counterhal_conformance::fixtures::temp_dir(),
        };
        let base = parent.join(format!("counterhal-hostile-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).unwrap();
        let secret = base.join("secret");
        fs::write(&secret, format!("{SECRET}\n")).unwrap();
        let fifo = base.join("fifo");
        let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success(), "mkfifo {}", fifo.display());
        let device = base.join("device");
        let node = Command::new("mknod")
            .arg(&device)
            .args(["c", "1", "5"])
            .stderr(std::process::Stdio::null())
            .status();
        let device = match node {
            Ok(status) if status.success() => device,
            _ => fifo.clone(),
        };
        let huge = base.join("huge");
        fs::write(&huge, "event=0x1,".repeat(100_000)).unwrap();
        Pieces {
            base,
            secret,
            fifo,
            device,
            huge,
            trees: AtomicUsize::new(0),
        }
    })
}

/// Writes `file` at `path`, `good` where it is good.
fn place(path: &Path, file: File, good: &str) {
    let p = pieces();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    match file {
        File::Good => fs::write(path, good).unwrap(),
        File::LinkOut => std::os::unix::fs::symlink(&p.secret, path).unwrap(),
        File::Zero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        File::Fifo => fs::hard_link(&p.fifo, path).unwrap(),
        File::Device => fs::hard_link(&p.device, path).unwrap(),
        File::Huge => fs::hard_link(&p.huge, path).unwrap(),
        File::Garbage => fs::write(path, format!("{SECRET}:{SECRET}\n{SECRET}\u{1b}[2J")).unwrap(),
        File::BadScale(scale) => fs::write(path, format!("{scale}\n")).unwrap(),
    }
}

/// Makes the tree `spec` describes; returns its root.
fn make(spec: &TreeSpec) -> PathBuf {
    let p = pieces();
    let n = p.trees.fetch_add(1, Ordering::Relaxed);
    let root = p.base.join(format!("tree{n}"));
    let devices = root.join("bus/event_source/devices");
    fs::create_dir_all(&devices).unwrap();
    for (number, pmu) in spec.pmus.iter().enumerate() {
        let dir = match pmu.linked {
            true => {
                std::os::unix::fs::symlink(
                    format!("../../../devices/{}", pmu.name),
                    devices.join(&pmu.name),
                )
                .unwrap();
                root.join("devices").join(&pmu.name)
            }
            false => devices.join(&pmu.name),
        };
        place(&dir.join("type"), pmu.type_, &format!("{}\n", 20 + number));
        place(&dir.join("format/event"), pmu.format, "config:0-7\n");
        if let Some(cpumask) = pmu.cpumask {
            place(&dir.join("cpumask"), cpumask, "0\n");
        }
        let events = match pmu.events_out {
            true => {
                let outside = p.base.join(format!("events-out{n}-{}", pmu.name));
                std::os::unix::fs::symlink(&outside, dir.join("events")).unwrap();
                outside
            }
            false => dir.join("events"),
        };
        for alias in &pmu.aliases {
            place(&events.join(&alias.name), alias.terms, "event=0x1\n");
            if let Some(scale) = alias.scale {
                place(
                    &events.join(format!("{}.scale", alias.name)),
                    scale,
                    "6.103515625e-5\n",
                );
            }
            if let Some(unit) = alias.unit {
                place(&events.join(format!("{}.unit", alias.name)), unit, "MiB\n");
            }
        }
    }
    place(
        &root.join("kernel/tracing/events/demo/hello/id"),
        spec.tracepoint_id,
        "123\n",
    );
    root
}

/// Whether a FIFO was ever opened for reading: a watcher opens it for writing without waiting,
/// which succeeds only while a reader waits on it, and then lets that reader go (so a test of
/// code that blocks on FIFOs fails instead of hanging).
fn watch_fifo(fifo: PathBuf, done: Arc<AtomicBool>) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        use std::os::unix::fs::OpenOptionsExt;
        let mut opened = false;
        while !done.load(Ordering::Relaxed) {
            let writer = fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo);
            if let Ok(mut writer) = writer {
                opened = true;
                let _ = std::io::Write::write_all(&mut writer, SECRET.as_bytes());
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        opened
    })
}

fn database() -> Arc<Database> {
    static DB: OnceLock<Arc<Database>> = OnceLock::new();
    DB.get_or_init(|| Arc::new(Database::shipped().unwrap()))
        .clone()
}

/// What is wrong with what a backend over the tree lists and resolves, if anything.
fn check(spec: &TreeSpec) -> Result<(), String> {
    let root = make(spec);
    let backend = on_sysfs(database(), None, System::host().with_sysfs(&root));
    let shown = |text: &str| {
        text.to_ascii_lowercase()
            .contains(&SECRET.to_ascii_lowercase())
    };
    let mut problems = Vec::new();
    for own in backend.own_events() {
        let (name, text) = (own.name, own.description);
        if text.len() > 1024 {
            problems.push(format!("list gives {name} {} bytes of text", text.len()));
        }
        if shown(&name) || shown(&text) {
            problems.push(format!("list shows the secret: {name} {text}"));
        }
        if let Some((_, scale)) = text.split_once(", scale ") {
            let scale: f64 = scale
                .split(',')
                .next()
                .unwrap_or("")
                .parse()
                .unwrap_or(f64::NAN);
            if !(scale.is_finite() && scale > 0.0) {
                problems.push(format!("list gives {name} the scale {scale}"));
            }
        }
    }
    let mut names: Vec<(String, bool)> = vec![("demo:hello".into(), false)];
    for pmu in &spec.pmus {
        let pmu_good = pmu.type_ == File::Good
            && pmu.format == File::Good
            && pmu.cpumask.is_none_or(|f| f == File::Good)
            && !pmu.events_out;
        for alias in &pmu.aliases {
            let good = pmu_good
                && [Some(alias.terms), alias.scale, alias.unit]
                    .iter()
                    .all(|f| f.is_none_or(|f| f == File::Good));
            names.push((format!("{}/{}/", pmu.name, alias.name), good));
        }
        names.push((format!("{}/event=0x1/", pmu.name), false));
    }
    for (name, good) in names {
        match backend.resolve(&name) {
            Ok(resolved) => {
                if let Some(unit) = &resolved.unit
                    && !(unit.scale.is_finite() && unit.scale > 0.0)
                {
                    problems.push(format!("{name}: scale {}", unit.scale));
                }
                if shown(&unit_text(&resolved)) {
                    problems.push(format!("{name}: the unit shows the secret"));
                }
            }
            Err(error) if shown(&error.to_string()) => {
                problems.push(format!("{name}: the error shows the secret: {error}"));
            }
            Err(error) if good => problems.push(format!("{name}: all good, yet {error}")),
            Err(_) => {}
        }
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("; ")),
    }
}

fn unit_text(resolved: &counterhal_hal::ResolvedEvent) -> String {
    resolved
        .unit
        .as_ref()
        .map(|u| u.name.clone())
        .unwrap_or_default()
}

/// Oracle: the kernel's sysfs (fs/sysfs/file.c: every attribute a regular file of at most a
/// page; the real /sys's PMU links, `../../../devices/PMU`, inside it) and its drivers' alias
/// files (a term list, a finite positive scale, a short unit).
#[test]
fn a_hostile_tree_neither_blocks_nor_leaks() {
    let p = pieces();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = watch_fifo(p.fifo.clone(), done.clone());
    let outcome = std::panic::catch_unwind(|| {
        prop::check(
            "a hostile sysfs tree neither blocks nor leaks",
            generate,
            prop::no_shrink,
            check,
        )
    });
    done.store(true, Ordering::Relaxed);
    let fifo_opened = watcher.join().unwrap();
    let _ = fs::remove_dir_all(&p.base);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    assert!(
        !fifo_opened,
        "a FIFO in the tree was opened for reading (and would have blocked)"
    );
}
