//! The read path allocates nothing: a counting global allocator sees zero allocations over
//! 10,000 reads of a 1-event and a 4-event group.
#![cfg(target_os = "linux")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use counterhal_hal::{Backend, Group, OpenOptions, Reading, Target};

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

#[test]
fn ten_thousand_reads_allocate_nothing() {
    let db = Arc::new(counterhal_events::Database::shipped().unwrap());
    let linux = counterhal_linux::probe(db, None).unwrap();
    for names in [
        &["task-clock"][..],
        &[
            "task-clock",
            "page-faults",
            "context-switches",
            "cpu-migrations",
        ][..],
    ] {
        for grouped in [true, false] {
            let options = if grouped {
                OpenOptions::grouped()
            } else {
                OpenOptions::ungrouped()
            };
            let mut group = linux
                .open_named(names, &Target::ThisThread, &options)
                .unwrap();
            group.enable().unwrap();
            let mut readings = [Reading::default(); 4];
            ALLOCATIONS.store(0, Ordering::Relaxed);
            COUNTING.with(|c| c.set(true));
            for _ in 0..10_000 {
                group.read(&mut readings[..names.len()]).unwrap();
            }
            COUNTING.with(|c| c.set(false));
            let allocations = ALLOCATIONS.load(Ordering::Relaxed);
            assert_eq!(allocations, 0, "{names:?} grouped={grouped}");
            assert!(readings[0].value > 0);
            // The counter works: an allocation while counting is seen.
            COUNTING.with(|c| c.set(true));
            let v = std::hint::black_box(vec![1u8; 16]);
            COUNTING.with(|c| c.set(false));
            drop(v);
            assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 1);
        }
    }
}
