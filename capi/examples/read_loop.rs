//! A read loop for the instruction-count guard (`scripts/instruction-guard`): opens the same
//! 4-event software group as `benches/read.rs` through one read path and reads it N times.
//!
//! `read_loop PATH N` with PATH one of `facade` (`open_default` + `open_named`, then
//! `Group::read`) or `linux` (`LinuxGroup::read`). The guard runs it under valgrind's callgrind
//! with N = 0 and N = 10,000; the difference is the instructions of 10,000 reads, free of the
//! start-up's. It is an example of the C API's crate, so that the guard builds it in the same
//! release build as the command and libcounterhal (one `cargo build`, whose dependencies are
//! compiled once; a bench of the facade would build criterion and the facade once more). The
//! `linux` path names the Linux backend's crate itself, a dev-dependency of this crate: the
//! facade hands out no backend's own types.

#[cfg(target_os = "linux")]
fn main() {
    use std::hint::black_box;

    use counterhal_hal::Backend;
    use counterhal_linux::LinuxGroup;
    use facade::OpenOptions;
    use facade::prelude::*;

    const EVENTS: [&str; 4] = [
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
    ];
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`: a run without this program's arguments does nothing.
    let (Some(path), Some(count)) = (
        args.first(),
        args.get(1).and_then(|n| n.parse::<u32>().ok()),
    ) else {
        println!("usage: read_loop facade|linux N (the instruction-count guard runs it)");
        return;
    };
    let chosen = open_default().expect("a backend works here");
    let mut readings = [Reading::default(); 4];
    match path.as_str() {
        "facade" => {
            let mut group = chosen
                .open_named(&EVENTS, &Target::ThisThread, &OpenOptions::default())
                .expect("the four software events open");
            group.enable().expect("the group enables");
            for _ in 0..count {
                group.read(black_box(&mut readings)).expect("a read");
            }
        }
        "linux" => {
            let db = chosen.context().database().clone();
            let linux = counterhal_linux::probe(db, None, chosen.context().system().clone())
                .expect("the backend");
            let requests: Vec<_> = EVENTS
                .iter()
                .map(|n| linux.resolve(n).expect("resolves").terms.remove(0).request)
                .collect();
            let mut group: LinuxGroup = linux
                .open(
                    &requests,
                    &counterhal_hal::BackendTarget::ThisThread,
                    &OpenOptions::default(),
                )
                .expect("the four software events open");
            group.enable().expect("the group enables");
            for _ in 0..count {
                group.read(black_box(&mut readings)).expect("a read");
            }
        }
        other => {
            eprintln!("read_loop: unknown path `{other}` (facade or linux)");
            std::process::exit(2);
        }
    }
    black_box(&readings);
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("read_loop: the read paths it measures are Linux's");
}
