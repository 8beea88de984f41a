//! The facade's read path allocates nothing: a counting global allocator sees zero
//! allocations over 10,000 reads of what `open_default` + `open_named` return, and of a
//! `MultiSet` summing a process's threads.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use counterhal::prelude::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: every method forwards to the system allocator unchanged; counting touches only an
// atomic and a const-initialised thread-local (neither allocates).
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
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
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller upholds GlobalAlloc::realloc's contract, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Allocations made by `f`, run 10,000 times on this thread.
fn allocations(mut f: impl FnMut()) -> u64 {
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    for _ in 0..10_000 {
        f();
    }
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed)
}

#[test]
fn the_facade_reads_without_allocating() {
    let Some(backend) = open_default(None)
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
    let attach = Attach::Process(std::process::id());
    let mut threads =
        match MultiSet::open(&backend.backend, &events, &attach, &OpenOptions::default()) {
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
}
