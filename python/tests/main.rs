//! The Python face as a user gets it: the wheel built by maturin, linked by zig against glibc
//! 2.28's symbol versions (its `manylinux_2_28` tag checked by auditwheel, its extension's
//! glibc versions by readelf, its size held to 3 MB), installed into a fresh virtual
//! environment with nothing else, and the Python tests (`python/tests/*.py`) run there with
//! pytest; and the same wheel imported by the oldest CPython it names (3.9).
//!
//! The tools come from the environment `scripts/python-tools` makes (maturin, zig from
//! ziglang, auditwheel, pytest, pytest-benchmark and the latter two's wheels), at
//! `COUNTERHAL_PYTHON_TOOLS`, else `target/python-tools`; without it the tests skip (CI makes
//! it, and its `COUNTERHAL_REQUIRE=tools` makes the skip a failure). The Python tests skip
//! through the same door (their conftest.py), with the same environment.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use counterhal_conformance::fixtures::{GLIBC_FLOOR, glibc_versions_needed};
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The largest wheel the face may ship (the budget).
const WHEEL_LIMIT: u64 = 3 * 1024 * 1024;

/// This crate's folder, `python/`.
fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The tools' virtual environment, if made.
fn tools() -> Option<PathBuf> {
    let dir = std::env::var_os("COUNTERHAL_PYTHON_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_dir().join("../target/python-tools"));
    dir.join("bin/maturin").is_file().then_some(dir)
}

/// The tools, or the skip that says how to make them.
macro_rules! tools_or_skip {
    () => {
        match tools() {
            Some(tools) => tools,
            None => skip!(
                Need::Tools,
                "no Python tools (maturin, auditwheel, pytest): scripts/python-tools makes them"
            ),
        }
    };
}

/// `output`'s standard streams, for a failure's message.
fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `command`, which must succeed.
fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(output.status.success(), "{command:?}:\n{}", said(&output));
    output
}

/// A folder of these tests' own beside their binary (`target/debug/python-tests/NAME`),
/// emptied first, so that no run leaves a wheel or an environment in the temporary folder.
fn scratch(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().join("../python-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The manylinux policy the wheel is built for: glibc 2.28's, RHEL 8's (`manylinux_2_28`).
fn manylinux() -> String {
    format!("manylinux_{}_{}", GLIBC_FLOOR.0, GLIBC_FLOOR.1)
}

/// The wheel, built once for every test here by `maturin build --release --zig
/// --compatibility manylinux_2_28`, as docs/python.md builds it (zig is the tools' ziglang,
/// found on PATH as their `python3 -m ziglang`).
fn wheel(tools: &Path) -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = scratch("wheels");
        let path = std::env::join_paths(std::iter::once(tools.join("bin")).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        // GCC's unwinder, as docs/python.md links it (not zig's: CPython's pthread_exit of a
        // daemon thread unwinds with libgcc_s's, and the extension's frames must agree); the
        // flags are scripts/release-tarball's, whose build this one shares (a shared library
        // may leave libgcc_s's symbols undefined anyway).
        let gcc = run(Command::new("cc").arg("-print-file-name=libgcc_s.so.1"));
        let libgcc_s = PathBuf::from(String::from_utf8_lossy(&gcc.stdout).trim())
            .canonicalize()
            .expect("libgcc_s.so.1, where cc says it is");
        run(Command::new(tools.join("bin/maturin"))
            .args([
                "build",
                "--release",
                "--zig",
                "--compatibility",
                &manylinux(),
            ])
            .args(["--quiet", "--out"])
            .arg(&out)
            .env("PATH", path)
            .env(
                "RUSTFLAGS",
                format!(
                    "-C link-arg={} -C link-arg=-Wl,--allow-shlib-undefined",
                    libgcc_s.display()
                ),
            )
            .current_dir(crate_dir()));
        let wheels: Vec<PathBuf> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "whl"))
            .collect();
        assert_eq!(wheels.len(), 1, "{wheels:?}");
        wheels[0].clone()
    })
}

/// The interpreter the tools' environment was made from.
fn base_python(tools: &Path) -> PathBuf {
    let out = run(Command::new(tools.join("bin/python"))
        .args(["-c", "import sys; print(sys._base_executable)"]));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A fresh virtual environment of `python`, with `packages` installed from `wheel` and the
/// tools' wheels alone (nothing fetched).
fn fresh_venv(python: &Path, name: &str, tools: &Path, wheel: &Path, packages: &[&str]) -> PathBuf {
    let venv = scratch(name);
    run(Command::new(python).args(["-m", "venv"]).arg(&venv));
    run(Command::new(venv.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-index",
        ])
        .arg("--find-links")
        .arg(tools.join("wheels"))
        .arg(wheel)
        .args(packages));
    venv
}

/// The counterhal command the workspace's tests built beside this test's binary (`cargo test
/// --workspace` builds it first), named to the Python tests in `COUNTERHAL_BIN` where no
/// one named it already.
fn counterhal_command() -> Option<PathBuf> {
    if let Some(named) = std::env::var_os("COUNTERHAL_BIN") {
        return Some(PathBuf::from(named));
    }
    let exe = std::env::current_exe().ok()?;
    let built = exe.parent()?.parent()?.join("counterhal");
    built.is_file().then_some(built)
}

/// The wheel is `manylinux_2_28` and its extension needs glibc 2.28's symbol versions at
/// most (RHEL 8's glibc loads it). Oracles: auditwheel's own reading of the wheel's shared
/// library (the glibc symbol versions it needs and the libraries it links, against its
/// manylinux_2_28 policy: auditwheel 6.8.2), binutils' readelf 2.40 (Debian 12's) on the
/// extension, and the 3 MB. Built by maturin without zig on Debian 12 the wheel was
/// `manylinux_2_34`, its extension needing GLIBC_2.34, and this fails.
#[test]
fn the_wheel_is_manylinux_and_small() {
    let tools = tools_or_skip!();
    let wheel = wheel(&tools);
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("counterhal-")
            && name.ends_with(&format!(
                "-cp39-abi3-{}_{}.whl",
                manylinux(),
                std::env::consts::ARCH
            )),
        "{name}"
    );
    let shown = run(Command::new(tools.join("bin/auditwheel"))
        .arg("show")
        .arg(wheel));
    let text = said(&shown).replace('\n', " ");
    let tag = name
        .trim_end_matches(".whl")
        .rsplit('-')
        .next()
        .unwrap()
        .to_string();
    assert!(
        text.contains(&format!(
            "consistent with the following platform tag: \"{tag}\""
        )),
        "{text}"
    );
    let size = std::fs::metadata(wheel).unwrap().len();
    println!("{name}: {size} bytes");
    assert!(size <= WHEEL_LIMIT, "{name}: {size} bytes");

    let unpacked = scratch("wheel-unpacked");
    run(Command::new(tools.join("bin/python"))
        .args(["-m", "zipfile", "-e"])
        .arg(wheel)
        .arg(&unpacked));
    let extensions: Vec<PathBuf> = std::fs::read_dir(unpacked.join("counterhal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "so"))
        .collect();
    assert_eq!(extensions.len(), 1, "{extensions:?}");
    let needed = glibc_versions_needed(&extensions[0]).unwrap();
    let (newest, library) = needed.iter().max().unwrap();
    println!(
        "{}: needs {newest} ({library}) at most",
        extensions[0].display()
    );
    assert!(
        *newest <= GLIBC_FLOOR,
        "the extension needs {newest} ({library}), newer than {GLIBC_FLOOR}: {needed:?}"
    );
    let _ = std::fs::remove_dir_all(&unpacked);
}

/// The Python tests, with the wheel and pytest alone in a fresh environment. Oracles: each
/// test's own (perf, the counterhal command, the work), named in its docstring.
#[test]
fn the_python_tests_pass_with_the_wheel_installed() {
    let tools = tools_or_skip!();
    let wheel = wheel(&tools);
    let venv = fresh_venv(
        &base_python(&tools),
        "venv",
        &tools,
        wheel,
        &["pytest", "pytest-benchmark"],
    );
    // Run from a folder of its own, so that `import counterhal` is the installed wheel's and
    // not the source folder python/counterhal.
    let mut pytest = Command::new(venv.join("bin/python"));
    pytest
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", "-s"])
        .arg(crate_dir().join("tests"))
        .current_dir(&venv);
    if let Some(command) = counterhal_command() {
        pytest.env("COUNTERHAL_BIN", command);
    }
    let output = pytest.output().expect("pytest runs");
    println!("{}", said(&output));
    assert!(output.status.success(), "pytest failed (above)");
    let _ = std::fs::remove_dir_all(&venv);
}

/// The abi3 wheel imports and counts on the oldest CPython it names. Oracle: CPython 3.9
/// itself (pyenv's, where found), and the work (one fault a fresh page).
#[test]
fn the_wheel_runs_on_the_oldest_python_it_names() {
    let tools = tools_or_skip!();
    let Some(python) = oldest_python() else {
        skip!(
            Need::Tools,
            "no CPython 3.9 (python3.9 on PATH, or pyenv's versions/3.9.*) to import the wheel with"
        );
    };
    let venv = fresh_venv(&python, "venv39", &tools, wheel(&tools), &[]);
    let program = "import counterhal, mmap, sys\n\
                   assert sys.version_info[:2] == (3, 9), sys.version\n\
                   m = mmap.mmap(-1, 100 * 4096)\n\
                   with counterhal.count('page-faults') as c:\n\
                   \x20   for at in range(0, 100 * 4096, 4096): m[at] = 1\n\
                   print(c['page-faults'].value)\n";
    // From the environment's folder: `import counterhal` is the wheel's, not python/counterhal.
    let out = run(Command::new(venv.join("bin/python"))
        .args(["-c", program])
        .current_dir(&venv));
    let faults: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!((100..=110).contains(&faults), "{faults}");
    let _ = std::fs::remove_dir_all(&venv);
}

/// A CPython 3.9: `python3.9` on PATH, else pyenv's.
fn oldest_python() -> Option<PathBuf> {
    let on_path = Command::new("python3.9")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    on_path.or_else(|| {
        let root = std::env::var_os("PYENV_ROOT")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pyenv")))?;
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join("versions"))
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("3.9."))
            })
            .map(|p| p.join("bin/python3.9"))
            .filter(|p| p.is_file())
            .collect();
        found.sort();
        found.pop()
    })
}

/// The guides' build of the wheel writes it into a folder git ignores, never into `dist/`
/// (the tracked Debian and container packaging), and installs it from there. Oracle: git's
/// own reading of the repository's ignore rules (`git check-ignore`) and of what it tracks
/// (`git ls-files dist`).
#[test]
fn the_documented_build_writes_into_an_ignored_folder() {
    let root = crate_dir().join("..");
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(&root).output();
    let Ok(tracked) = git(&["ls-files", "dist"]) else {
        skip!(
            Need::Tools,
            "no git to read the repository's ignore rules with"
        );
    };
    if !tracked.status.success() {
        skip!(Need::Source, "not a git checkout: {}", said(&tracked));
    }
    let tracked = String::from_utf8_lossy(&tracked.stdout).into_owned();
    assert!(tracked.contains("dist/Containerfile"), "{tracked}");
    for guide in ["README.md", "docs/python.md"] {
        let text = std::fs::read_to_string(root.join(guide)).unwrap();
        let builds: Vec<&str> = text
            .match_indices("maturin build")
            .map(|(at, _)| text[at..].split(['`', '\n']).next().unwrap())
            .collect();
        assert!(!builds.is_empty(), "{guide} shows no build of the wheel");
        for build in builds {
            let out = build
                .split(" -o ")
                .nth(1)
                .unwrap_or_else(|| panic!("{guide}: `{build}` names no output folder"))
                .split_whitespace()
                .next()
                .unwrap();
            let ignored = git(&["check-ignore", "-q", "--no-index", out]).unwrap();
            assert!(
                ignored.status.success(),
                "{guide}: `{build}` writes into {out}, which git tracks"
            );
            assert!(
                text.contains(&format!("pip install {out}/counterhal-")),
                "{guide}: pip takes the wheel from elsewhere than {out}"
            );
            assert!(!out.starts_with("dist"), "{guide}: `{build}`");
        }
    }
}
