//! The read path allocates nothing: a counting global allocator sees zero allocations over
//! 10,000 reads of the Linux backend's groups (1 and 4 events, grouped and not), of what
//! `open_default` + `open_named` return, and of a `MultiSet` summing a process's threads.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use counterhal::ErrorKind;
use counterhal::OpenOptions;
use counterhal::advanced::MultiSet;
use counterhal::prelude::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

struct CountingAllocator;

thread_local! {
    /// Whether this thread's allocations are being counted, and how many there were: per
    /// thread, so tests running at once do not count each other's.
    // Const already: clippy's missing_const_for_thread_local misreads thread_local!'s expansion
    // on targets that keep thread locals in emulated TLS (OpenBSD), and the allow says so.
    #[allow(clippy::missing_const_for_thread_local)]
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    #[allow(clippy::missing_const_for_thread_local)]
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every method forwards to the system allocator unchanged; counting touches only
// const-initialised thread-locals (which do not allocate).
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
        }
        // SAFETY: the caller upholds GlobalAlloc::alloc's contract, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from System.alloc with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
        }
        // SAFETY: the caller upholds GlobalAlloc::realloc's contract, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Allocations made by `f`, run 10,000 times on this thread.
fn allocations(mut f: impl FnMut()) -> u64 {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    for _ in 0..10_000 {
        f();
    }
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get)
}

#[cfg(target_os = "linux")]
#[test]
fn the_linux_backend_reads_without_allocating() {
    let db = std::sync::Arc::new(counterhal_events::Database::shipped().unwrap());
    let linux = counterhal_linux::probe(db, None, counterhal_system::System::host()).unwrap();
    let four = [
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
    ];
    for names in [&four[..1], &four[..]] {
        for options in [OpenOptions::grouped(), OpenOptions::ungrouped()] {
            let mut group = counterhal_hal::BackendExt::open_named(
                &linux,
                names,
                &counterhal_hal::BackendTarget::ThisThread,
                &options,
            )
            .unwrap();
            group.enable().unwrap();
            let mut readings = [Reading::default(); 4];
            let n = names.len();
            let made = allocations(|| group.read(&mut readings[..n]).unwrap());
            assert_eq!(made, 0, "{names:?} {options:?}");
            assert!(readings[0].value > 0);
        }
    }
    // The counter works: an allocation while counting is seen.
    let made = allocations(|| drop(std::hint::black_box(vec![1u8; 16])));
    assert_eq!(made, 10_000);
}

#[test]
fn the_facade_reads_without_allocating() {
    let Some(backend) = open_default()
        .ok()
        .filter(|b| b.resolve("task-clock").is_ok())
    else {
        skip!(Need::System, "no backend here counts software events");
    };
    let names = [
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
    ];
    let mut set = backend
        .open_named(&names, &Target::ThisThread, &OpenOptions::default())
        .unwrap();
    set.enable().unwrap();
    let mut readings = [Reading::default(); 4];
    assert_eq!(allocations(|| set.read(&mut readings).unwrap()), 0);
    assert!(readings[0].value > 0);

    let events: Vec<_> = names[..2]
        .iter()
        .map(|n| backend.resolve(n).unwrap())
        .collect();
    let attach = Target::Process(std::process::id());
    let mut threads = match MultiSet::open(
        backend.backend(),
        &events,
        &attach,
        &OpenOptions::default(),
        backend.context().system(),
    ) {
        Ok(set) => set,
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            skip!(Need::Privilege, "attaching to this process's threads: {e}")
        }
        Err(e) => panic!("{e}"),
    };
    threads.enable().unwrap();
    let mut summed = [Reading::default(); 2];
    assert_eq!(allocations(|| threads.read(&mut summed).unwrap()), 0);
    assert!(summed[0].value > 0);

    // The same sum as the face opens it: a whole process by name.
    let mut process = backend
        .open_named(&names[..2], &attach, &OpenOptions::default())
        .unwrap();
    process.enable().unwrap();
    let mut summed = [Reading::default(); 2];
    assert_eq!(allocations(|| process.read(&mut summed).unwrap()), 0);
    assert!(summed[0].value > 0);
}

#[test]
fn a_region_begun_and_ended_again_allocates_nothing() {
    let Some(backend) = open_default()
        .ok()
        .filter(|b| b.resolve("task-clock").is_ok())
    else {
        skip!(Need::System, "no backend here counts software events");
    };
    let regions = counterhal::Regions::new(backend.into_backend(), &["task-clock", "page-faults"]);
    // The first calls open this thread's counters and name the regions.
    regions.begin("outer").unwrap();
    regions.begin("inner").unwrap();
    regions.end("inner").unwrap();
    regions.end("outer").unwrap();
    let made = allocations(|| {
        regions.begin("outer").unwrap();
        regions.begin("inner").unwrap();
        regions.end("inner").unwrap();
        regions.end("outer").unwrap();
    });
    assert_eq!(made, 0);
    assert_eq!(regions.report().regions["inner"].calls, 10_001);
}
