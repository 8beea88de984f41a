//! PAPI 7.0's software-defined events on ours, against Debian's PAPI 7.0 as the oracle: its
//! libpapi.so.7.0 beside its libsde.so.1, running the same programs.
//!
//! - PAPI's own SDE tests (src/components/sde/tests: Minimal, Simple, Simple2, Recorder,
//!   Created_Counter with Overflow, Counting_Set, and where the sources and compilers are
//!   there, their C++ forms and the Advanced C+FORTRAN test), built as PAPI's Makefile builds
//!   them against Debian's headers and against ours, each library and driver linked with
//!   Debian's libsde: each must end as it ends on PAPI 7.0 (its PASSED/FAILED lines), and
//!   each passes there. The C tests come from Debian's papi-examples; the rest from PAPI's
//!   source at its 7.0.0 tag (`PAPI_SOURCE_GIT`, a git repository of PAPI), skipped without it.
//! - `tests/c/sde_component.c`, a tool's view of the component (names, descriptions,
//!   enumeration, reads, resets, accumulations, writes, stops, placeholders, mixing
//!   components), built with a library part and without libsde at all: its output on ours is
//!   the output on PAPI 7.0, line for line.

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use std::path::{Path, PathBuf};
use std::process::Command;

/// PAPI's tag of Debian's PAPI 7.0.0.
const PAPI_TAG: &str = "papi-7-0-0-t";

/// Debian's PAPI examples (the SDE tests' C sources and PAPI's testlib).
fn examples() -> PathBuf {
    std::env::var_os("PAPI_EXAMPLES").map_or_else(
        || PathBuf::from("/usr/share/doc/papi-examples/examples"),
        PathBuf::from,
    )
}

/// The folder of Debian's libpapi.so.7.0 and libsde.so.
fn system_lib_dir() -> Option<PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|d| d.join("libpapi.so.7.0").exists() && d.join("libsde.so").exists())
}

/// The folder of Debian's libsde and libpapi, where PAPI 7.0 with libsde and its headers
/// are installed; else the running test skips (through the suite's skip door).
macro_rules! system_sde_or_skip {
    () => {
        match system_lib_dir() {
            Some(dir)
                if crate::common::system_papi()
                    && Path::new("/usr/include/sde_lib.h").is_file() =>
            {
                dir
            }
            _ => skip!(
                Need::Tools,
                "PAPI 7.0 with libsde is not installed (apt-get install libpapi-dev libsde1)"
            ),
        }
    };
}

/// One library's build: where it is found at run time and linked from.
struct Flavour {
    /// `real` or `ours`.
    tag: &'static str,
    /// The folder of its papi.h.
    include: PathBuf,
    /// What the link line names for libpapi.
    papi: Vec<String>,
    /// Its build folder (test libraries in `lib/`, programs at the top).
    dir: PathBuf,
}

impl Flavour {
    fn new(tag: &'static str, purpose: &str, include: PathBuf, papi: Vec<String>) -> Flavour {
        let dir = counterhal_conformance::fixtures::temp_dir().join(format!(
            "counterhal-papi-sde-{purpose}-{tag}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        Flavour {
            tag,
            include,
            papi,
            dir,
        }
    }

    /// Runs `compiler` with `args` and this flavour's headers and libraries; the error output
    /// when it fails.
    fn compile(&self, compiler: &str, args: &[&str], system: &Path) -> Result<(), String> {
        let mut command = Command::new(compiler);
        command
            .args(args)
            .arg("-g")
            .arg("-w")
            .arg(format!("-I{}", self.include.display()))
            .arg(format!("-I{}/testlib", examples().display()))
            .arg(format!("-L{}", self.dir.join("lib").display()))
            .arg(format!("-Wl,-rpath,{}", self.dir.join("lib").display()))
            .args(&self.papi)
            .arg(format!("-L{}", system.display()))
            .arg("-lsde")
            .arg("-lm")
            .current_dir(&self.dir);
        match command.output() {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
            Err(e) => Err(format!("{compiler}: {e}")),
        }
    }
}

/// How one of PAPI's SDE tests is built (its Makefile's rule): the driver, and the libraries
/// it links (name, sources).
struct Case {
    /// The program's name in PAPI's Makefile.
    name: &'static str,
    /// The driver's source.
    driver: &'static str,
    /// The libraries it links, each with its sources.
    libraries: &'static [(&'static str, &'static [&'static str])],
}

/// The C tests PAPI's Makefile builds (`Simple2_NoPAPI_Test` links no libpapi: left out),
/// `Overflow_Test` first: it sleeps 10 s (104,000 `usleep(1)`), while the others build and
/// run beside it.
const C_TESTS: &[Case] = &[
    Case {
        name: "Overflow_Test",
        driver: "Overflow_Driver.c",
        libraries: &[("Created_Counter", &["Lib_With_Created_Counter.c"])],
    },
    Case {
        name: "Minimal_Test",
        driver: "Minimal_Test.c",
        libraries: &[],
    },
    Case {
        name: "Simple_Test",
        driver: "Simple_Driver.c",
        libraries: &[("Simple", &["Simple_Lib.c"])],
    },
    Case {
        name: "Simple2_Test",
        driver: "Simple2_Driver.c",
        libraries: &[("Simple2", &["Simple2_Lib.c"])],
    },
    Case {
        name: "Recorder_Test",
        driver: "Recorder_Driver.c",
        libraries: &[("Recorder", &["Lib_With_Recorder.c"])],
    },
    Case {
        name: "Created_Counter_Test",
        driver: "Created_Counter_Driver.c",
        libraries: &[("Created_Counter", &["Lib_With_Created_Counter.c"])],
    },
    Case {
        name: "Counting_Set_Simple_Test",
        driver: "Simple_CountingSet_Driver.c",
        libraries: &[("Counting_Set", &["CountingSet_Lib.c"])],
    },
    Case {
        name: "Counting_Set_MemLeak_Test",
        driver: "MemoryLeak_CountingSet_Driver.c",
        libraries: &[("Counting_Set", &["CountingSet_Lib.c"])],
    },
];

/// The C++ tests (PAPI's source only).
const CXX_TESTS: &[Case] = &[
    Case {
        name: "Minimal_Test++",
        driver: "Minimal_Test++.cpp",
        libraries: &[],
    },
    Case {
        name: "Simple2_Test++",
        driver: "Simple2_Driver++.cpp",
        libraries: &[("Simple2++", &["Simple2_Lib++.cpp"])],
    },
    Case {
        name: "Recorder_Test++",
        driver: "Recorder_Driver++.cpp",
        libraries: &[("Recorder++", &["Lib_With_Recorder++.cpp"])],
    },
    Case {
        name: "Created_Counter_Test++",
        driver: "Created_Counter_Driver++.cpp",
        libraries: &[("Created_Counter++", &["Lib_With_Created_Counter++.cpp"])],
    },
    Case {
        name: "Counting_Set_Simple_Test++",
        driver: "Simple_CountingSet_Driver++.cpp",
        libraries: &[("Counting_Set++", &["CountingSet_Lib++.cpp"])],
    },
    Case {
        name: "Counting_Set_MemLeak_Test++",
        driver: "MemoryLeak_CountingSet_Driver++.cpp",
        libraries: &[("Counting_Set++", &["CountingSet_Lib++.cpp"])],
    },
];

/// Where PAPI's source tree is extracted.
fn source_root() -> PathBuf {
    counterhal_conformance::fixtures::temp_dir()
        .join(format!("counterhal-papi-sde-src-{}", std::process::id()))
}

/// Where the tests' sources are: Debian's flat copy of the C ones, and PAPI's source tree at
/// its 7.0.0 tag when a git repository of PAPI is at hand.
struct Sources {
    debian: PathBuf,
    tree: Option<PathBuf>,
}

impl Sources {
    fn find() -> Sources {
        let git = std::env::var_os("PAPI_SOURCE_GIT").map(PathBuf::from);
        let tree = source_root();
        let extracted = git.as_ref().is_some_and(|git| git.exists())
            && std::fs::create_dir_all(&tree).is_ok()
            && Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "git -C '{}' archive {PAPI_TAG} src/components/sde | tar -x -C '{}'",
                    git.as_deref().unwrap_or(Path::new(".")).display(),
                    tree.display()
                ))
                .status()
                .is_ok_and(|s| s.success())
            && tree.join("src/components/sde/tests").is_dir();
        Sources {
            debian: examples().join("components/sde/tests"),
            tree: extracted.then(|| tree.join("src/components/sde")),
        }
    }

    /// The file named `name`: Debian's copy, else the one in PAPI's tree.
    fn file(&self, name: &str) -> Option<PathBuf> {
        let debian = self.debian.join(name);
        if debian.is_file() {
            return Some(debian);
        }
        let tree = self.tree.as_ref()?;
        if tree.join(name).is_file() {
            return Some(tree.join(name));
        }
        std::fs::read_dir(tree.join("tests"))
            .ok()?
            .flatten()
            .map(|d| d.path().join(name))
            .find(|p| p.is_file())
    }
}

/// How a program ended: its PASSED/FAILED/SKIPPED lines (colours aside), or how it stopped.
fn verdict(program: &Path, ours: bool) -> String {
    let out = crate::common::run(program, &[], ours);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let words: Vec<&str> = ["PASSED", "FAILED", "SKIPPED"]
        .into_iter()
        .filter(|w| text.contains(w))
        .collect();
    let counts: Vec<String> = words
        .iter()
        .map(|w| format!("{w}x{}", text.matches(w).count()))
        .collect();
    match out.status.code() {
        Some(code) if !counts.is_empty() => format!("{} (exit {code})", counts.join(" ")),
        Some(code) => format!("no verdict (exit {code}): {}", text.trim()),
        None => format!("killed: {:?}", out.status),
    }
}

/// Builds `case` for `flavour` (C or C++ by its sources); the program, or why not.
fn build(
    case: &Case,
    flavour: &Flavour,
    sources: &Sources,
    system: &Path,
) -> Result<PathBuf, String> {
    let cxx = case.driver.ends_with(".cpp");
    let compiler = if cxx { "g++" } else { "cc" };
    let find = |name: &str| sources.file(name).ok_or(format!("{name} not found"));
    for (library, files) in case.libraries {
        let out = flavour.dir.join(format!("lib/lib{library}.so"));
        if out.exists() {
            continue;
        }
        let mut args = vec![
            "-shared".to_string(),
            "-fPIC".to_string(),
            "-std=c++11".to_string(),
        ];
        if !cxx {
            args.pop();
        }
        for file in *files {
            let path = find(file)?;
            // cset_lib.hpp beside CountingSet_Lib++.cpp.
            args.push(format!("-I{}", path.parent().unwrap().display()));
            args.push(path.display().to_string());
        }
        args.extend(["-o".to_string(), out.display().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        flavour.compile(compiler, &args, system)?;
    }
    let program = flavour.dir.join(case.name);
    let driver = find(case.driver)?;
    let utils = flavour.dir.join("test_utils.o");
    let mut args = vec![driver.display().to_string(), utils.display().to_string()];
    if cxx {
        args.push("-std=c++11".to_string());
    }
    args.extend(case.libraries.iter().map(|(l, _)| format!("-l{l}")));
    args.extend(["-o".to_string(), program.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    flavour.compile(compiler, &args, system)?;
    Ok(program)
}

/// Debian's flavour and ours, each in a fresh build folder.
fn flavours(system: &Path, purpose: &str) -> [Flavour; 2] {
    let ours_lib = std::fs::read_link(crate::common::library_dir().join("libpapi.so.7.0")).unwrap();
    let real = Flavour::new(
        "real",
        purpose,
        PathBuf::from("/usr/include"),
        vec![format!("-L{}", system.display()), "-lpapi".to_string()],
    );
    let ours = Flavour::new(
        "ours",
        purpose,
        crate::common::manifest().join("include"),
        vec![ours_lib.display().to_string()],
    );
    [real, ours]
}

/// Debian's flavour and ours, each with PAPI's testlib (papi-examples' `test_utils.c`, which
/// PAPI's own tests link) built against its papi.h.
fn flavours_with_testlib(system: &Path, purpose: &str) -> [Flavour; 2] {
    let flavours = flavours(system, purpose);
    for flavour in &flavours {
        let utils = examples().join("testlib/test_utils.c");
        let object = flavour.dir.join("test_utils.o");
        let args = [
            "-c",
            utils.to_str().unwrap(),
            "-o",
            object.to_str().unwrap(),
        ];
        let out = Command::new("cc")
            .args(args)
            .arg(format!("-I{}", flavour.include.display()))
            .arg(format!("-I{}/testlib", examples().display()))
            .output()
            .expect("cc runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    flavours
}

/// The verdicts of `real_program` on PAPI 7.0 and of `our_program` on ours, run at the same
/// time (PAPI's SDE tests spend most of their time asleep: Overflow_Test's 104,000
/// `usleep(1)` take 10 s with either library).
fn verdicts_side_by_side(real_program: &Path, our_program: &Path) -> (String, String) {
    std::thread::scope(|scope| {
        let on_real = scope.spawn(|| verdict(real_program, false));
        let on_ours = verdict(our_program, true);
        (on_real.join().unwrap(), on_ours)
    })
}

/// Runs `cases` on both libraries: each must pass on PAPI 7.0 and end the same on ours. Each
/// case runs as soon as it is built, beside the builds and runs of the next.
fn compare(cases: &[Case], sources: &Sources, system: &Path, purpose: &str) -> Vec<String> {
    let [real, ours] = flavours_with_testlib(system, purpose);
    let mut report = Vec::new();
    std::thread::scope(|scope| {
        let mut runs = Vec::new();
        for case in cases {
            let built = build(case, &real, sources, system)
                .and_then(|r| Ok((r, build(case, &ours, sources, system)?)));
            match built {
                Ok((real_program, our_program)) => runs.push((
                    case,
                    scope.spawn(move || verdicts_side_by_side(&real_program, &our_program)),
                )),
                Err(e) => report.push(format!("{}: does not build: {e}", case.name)),
            }
        }
        for (case, run) in runs {
            let (on_real, on_ours) = run.join().unwrap();
            println!("{:30} PAPI 7.0: {on_real:24} ours: {on_ours}", case.name);
            if !on_real.starts_with("PASSEDx") || on_real != on_ours {
                report.push(format!("{}: PAPI 7.0 {on_real}, ours {on_ours}", case.name));
            }
        }
    });
    for flavour in [real, ours] {
        let _ = std::fs::remove_dir_all(&flavour.dir);
    }
    report
}

/// PAPI's C SDE tests (Debian's papi-examples) end on ours as on PAPI 7.0: PASSED.
#[test]
fn papi_sde_tests_in_c_pass_as_on_papi() {
    let system = system_sde_or_skip!();
    if !examples().join("components/sde/tests").is_dir() || !examples().join("testlib").is_dir() {
        skip!(
            Need::Tools,
            "PAPI 7.0's SDE tests are not installed (apt-get install papi-examples)"
        );
    }
    let sources = Sources {
        debian: examples().join("components/sde/tests"),
        tree: None,
    };
    let problems = compare(C_TESTS, &sources, &system, "c");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// PAPI's C++ SDE tests and the Advanced C+FORTRAN test (PAPI's source) end on ours as on
/// PAPI 7.0.
#[test]
fn papi_sde_tests_in_cxx_and_fortran_pass_as_on_papi() {
    let system = system_sde_or_skip!();
    let sources = Sources::find();
    let Some(tree) = sources.tree.clone() else {
        skip!(
            Need::Source,
            "PAPI's source (PAPI_SOURCE_GIT, a git repository of PAPI with its 7.0.0 tag) is not at hand"
        );
    };
    if !examples().join("testlib").is_dir() {
        skip!(
            Need::Tools,
            "PAPI 7.0's testlib is not installed (apt-get install papi-examples)"
        );
    }
    let mut problems = compare(CXX_TESTS, &sources, &system, "cxx");
    problems.extend(fortran(&sources, &system));
    let _ = std::fs::remove_dir_all(source_root());
    let _ = tree;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The Advanced C+FORTRAN test (`sde_test_f08`: libXandria in Fortran 2008 over PAPI's
/// `sde_F.F90` module, libGamum and libRecorder in C), built as PAPI's Makefile builds it,
/// where gfortran is installed.
fn fortran(sources: &Sources, system: &Path) -> Vec<String> {
    if Command::new("gfortran").arg("--version").output().is_err() {
        println!("sde_test_f08: gfortran is not installed (apt-get install gfortran): not built");
        return Vec::new();
    }
    let [real, ours] = flavours_with_testlib(system, "fortran");
    let mut programs = Vec::new();
    let mut problems = Vec::new();
    for flavour in [&real, &ours] {
        match build_fortran(flavour, sources, system) {
            Ok(program) => programs.push(program),
            Err(e) => problems.push(format!(
                "sde_test_f08 ({}): does not build: {e}",
                flavour.tag
            )),
        }
    }
    if let [real_program, our_program] = &programs[..] {
        let (on_real, on_ours) = verdicts_side_by_side(real_program, our_program);
        println!(
            "{:30} PAPI 7.0: {on_real:24} ours: {on_ours}",
            "sde_test_f08"
        );
        if !on_real.starts_with("PASSEDx") || on_real != on_ours {
            problems.push(format!("sde_test_f08: PAPI 7.0 {on_real}, ours {on_ours}"));
        }
    }
    for flavour in [real, ours] {
        let _ = std::fs::remove_dir_all(&flavour.dir);
    }
    problems
}

fn build_fortran(flavour: &Flavour, sources: &Sources, system: &Path) -> Result<PathBuf, String> {
    let find = |name: &str| {
        sources
            .file(name)
            .map(|p| p.display().to_string())
            .ok_or(format!("{name} not found"))
    };
    let free = ["-ffree-form", "-ffree-line-length-none"];
    let lib = |name: &str| {
        flavour
            .dir
            .join(format!("lib/lib{name}.so"))
            .display()
            .to_string()
    };
    flavour.compile(
        "cc",
        &["-shared", "-fPIC", &find("Gamum.c")?, "-o", &lib("Gamum")],
        system,
    )?;
    flavour.compile(
        "cc",
        &[
            "-shared",
            "-fPIC",
            &find("Lib_With_Recorder.c")?,
            "-o",
            &lib("Recorder"),
        ],
        system,
    )?;
    let symbols = flavour.dir.join("sde_symbols.o").display().to_string();
    flavour.compile(
        "cc",
        &["-fPIC", "-c", &find("sde_symbols.c")?, "-o", &symbols],
        system,
    )?;
    flavour.compile(
        "gfortran",
        &[
            &free[..],
            &[
                "-shared",
                "-fPIC",
                &find("sde_F.F90")?,
                &symbols,
                &find("Xandria.F90")?,
            ],
        ]
        .concat()
        .into_iter()
        .chain(["-o", &lib("Xandria")])
        .collect::<Vec<_>>(),
        system,
    )?;
    let util = flavour.dir.join("ftests_util.o").display().to_string();
    let testlib = examples()
        .join("testlib/ftests_util.F")
        .display()
        .to_string();
    flavour.compile(
        "gfortran",
        &[
            "-Dlinux",
            "-ffixed-line-length-132",
            "-c",
            &testlib,
            "-o",
            &util,
        ],
        system,
    )?;
    let program = flavour.dir.join("sde_test_f08");
    let utils = flavour.dir.join("test_utils.o").display().to_string();
    let mut args: Vec<&str> = free.to_vec();
    let driver = find("sde_test_f08.F90")?;
    let out = program.display().to_string();
    args.extend([
        driver.as_str(),
        &utils,
        &util,
        "-lXandria",
        "-lGamum",
        "-lRecorder",
        "-o",
        &out,
    ]);
    flavour.compile("gfortran", &args, system)?;
    Ok(program)
}

/// A tool's view of the sde component (`tests/c/sde_component.c`) is PAPI 7.0's, with a
/// library's counters in the process and with no libsde at all (the component disabled:
/// "libsde API not found").
#[test]
fn the_sde_component_answers_as_papi_does() {
    papi_perf_event_or_skip!();
    let system = system_sde_or_skip!();
    let [real, ours] = flavours(&system, "component");
    let source = crate::common::manifest().join("tests/c/sde_component.c");
    let source = source.to_str().unwrap();
    for (with_sde, tag) in [(true, "with-libsde"), (false, "without-libsde")] {
        let mut outputs = Vec::new();
        for flavour in [&real, &ours] {
            let program = flavour.dir.join(tag).display().to_string();
            let mut command = Command::new("cc");
            command
                .args([
                    "-std=gnu99",
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    source,
                    "-o",
                    &program,
                ])
                .arg(format!("-I{}", flavour.include.display()))
                .args(&flavour.papi);
            if with_sde {
                command
                    .arg("-DWITH_SDE")
                    .arg(format!("-L{}", system.display()))
                    .arg("-lsde");
            }
            let out = command.output().expect("cc runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let run = crate::common::run(Path::new(&program), &[], flavour.tag == "ours");
            assert!(run.status.success(), "{tag} on {}: {run:?}", flavour.tag);
            outputs.push(String::from_utf8_lossy(&run.stdout).into_owned());
        }
        let (on_real, on_ours) = (&outputs[0], &outputs[1]);
        let differences: Vec<String> = on_real
            .lines()
            .zip(on_ours.lines())
            .filter(|(r, o)| r != o)
            .map(|(r, o)| format!("PAPI 7.0: {r}\n    ours: {o}"))
            .collect();
        assert!(
            differences.is_empty() && on_real.lines().count() == on_ours.lines().count(),
            "{tag}:\n{}\n\nPAPI 7.0:\n{on_real}\nours:\n{on_ours}",
            differences.join("\n")
        );
        assert!(on_real.contains("component sde"), "{on_real}");
    }
    for flavour in [real, ours] {
        let _ = std::fs::remove_dir_all(&flavour.dir);
    }
}
