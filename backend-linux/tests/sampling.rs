//! Sampling, checked against what the kernel must record: one sample per `getpid` tracepoint
//! hit with the caller's ids and a user-space address in this process's code (the oracle: the
//! tracepoint fires once per call, and `/proc/self/maps` names the executable mappings); one
//! page-fault sample per freshly touched page with its address (the kernel faults each
//! untouched anonymous page once, on its first write); a `cpu-clock:u` sampler landing in a
//! busy loop; and a ring too small for the rate reporting lost records, not corrupt ones. The
//! pages are advised against transparent huge pages, which fault 512 pages at once.

use std::hint::black_box;
use std::sync::Arc;

use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;
use counterhal_conformance::workload::FreshPages;
use counterhal_hal::{
    Backend, BackendTarget, EventRequest, Record, SampleFields, SampleOptions, Sampler,
};
use counterhal_linux::{LinuxBackend, LinuxSampler, probe};

/// The tracepoint whose hits the exact tests count, and why it may not be there.
const GETPID: &str = "syscalls:sys_enter_getpid";
const NO_GETPID: &str = "the getpid tracepoint needs root and tracefs";

fn backend() -> LinuxBackend {
    // The getpid tracepoint needs tracefs, which the backend does not mount unasked.
    let _ = counterhal_conformance::fixtures::tracefs_mounted();
    let db = Arc::new(counterhal_events::Database::shipped().expect("shipped database"));
    probe(db, None, counterhal_system::System::host())
        .expect("perf_event_open usable on this machine")
}

fn request(linux: &LinuxBackend, name: &str) -> EventRequest {
    let mut resolved = linux
        .resolve(name)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    resolved.terms.remove(0).request
}

fn sampler(linux: &LinuxBackend, name: &str, options: &SampleOptions) -> LinuxSampler {
    linux
        .open_sampler(&[request(linux, name)], &BackendTarget::ThisThread, options)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// This thread's id.
fn gettid() -> u32 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .expect("/proc/thread-self names this thread")
}

/// The executable mappings of this process (`r-xp` in `/proc/self/maps`).
fn code_ranges() -> Vec<(u64, u64)> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.split_whitespace().nth(1).is_some_and(|p| p.contains('x')))
        .filter_map(|l| {
            let (start, end) = l.split_whitespace().next()?.split_once('-')?;
            Some((
                u64::from_str_radix(start, 16).ok()?,
                u64::from_str_radix(end, 16).ok()?,
            ))
        })
        .collect()
}

#[test]
fn each_getpid_call_is_one_sample_with_the_caller_s_ids_and_code() {
    let linux = backend();
    let name = GETPID;
    if linux.resolve(name).is_err() {
        skip!(Need::Privilege, "{}", NO_GETPID);
    }
    let options = SampleOptions::period(1, SampleFields::profile()).ring_pages(64);
    let mut s = sampler(&linux, name, &options);
    const CALLS: u64 = 1_000;
    s.enable().unwrap();
    for _ in 0..CALLS {
        black_box(std::process::id());
    }
    s.disable().unwrap();
    let (pid, tid, code) = (std::process::id(), gettid(), code_ranges());
    let mut samples = 0;
    let mut bad = Vec::new();
    let walked = s
        .walk(&mut |record| {
            if let Record::Sample(sample) = record {
                samples += 1;
                let ip = sample.ip.unwrap_or(0);
                let in_code = code.iter().any(|(start, end)| (*start..*end).contains(&ip));
                if sample.pid != Some(pid) || sample.tid != Some(tid) || !in_code {
                    bad.push(format!("{sample:?}"));
                }
            }
        })
        .unwrap();
    assert_eq!(walked.lost, 0);
    assert_eq!(samples, CALLS, "one sample per call");
    assert_eq!(walked.samples, CALLS);
    assert!(
        bad.is_empty(),
        "{} of {CALLS}: {:?}",
        bad.len(),
        &bad[..bad.len().min(3)]
    );
    assert_eq!(s.count().unwrap(), CALLS, "the count is every call");
    // A second walk finds nothing: the first freed what it read.
    let again = s.walk(&mut |_| {}).unwrap();
    assert_eq!(again.samples, 0);
}

#[test]
fn each_fresh_page_touched_is_one_fault_sample_at_its_address() {
    let linux = backend();
    let fields = SampleFields::profile().with_addr();
    let mut s = sampler(&linux, "page-faults", &SampleOptions::period(1, fields));
    const PAGES: usize = 256;
    let memory = FreshPages::map(PAGES);
    s.enable().unwrap();
    for k in 0..PAGES {
        memory.touch(k);
    }
    s.disable().unwrap();
    let range = memory.range();
    let mut in_range = std::collections::BTreeSet::new();
    let walked = s
        .walk(&mut |record| {
            if let Record::Sample(sample) = record
                && let Some(addr) = sample.addr
                && range.contains(&addr)
            {
                in_range.insert(addr / memory.page_size() as u64);
            }
        })
        .unwrap();
    assert_eq!(walked.lost, 0);
    assert_eq!(
        in_range.len(),
        PAGES,
        "one fault sample per page, at its address"
    );
}

/// A `cpu-clock:u` sampler at 1 kHz over 300 ms of the conformance suite's assembly loop:
/// at least 80% of its samples have an address inside the loop (the rest: the loop's caller
/// between calls, this thread switched out and back).
#[test]
fn a_cpu_clock_sampler_lands_in_the_busy_loop() {
    let Some(code) = counterhal_conformance::workload::loop_code() else {
        skip!(Need::Platform, "no assembly loop on this architecture");
    };
    let linux = backend();
    let mut s = sampler(
        &linux,
        "cpu-clock:u",
        &SampleOptions::frequency(1000, SampleFields::profile()),
    );
    s.enable().unwrap();
    let began = std::time::Instant::now();
    while began.elapsed() < std::time::Duration::from_millis(300) {
        counterhal_conformance::workload::retire_instructions(1_000_000);
    }
    s.disable().unwrap();
    let (mut samples, mut in_loop) = (0u64, 0u64);
    s.walk(&mut |record| {
        if let Record::Sample(sample) = record {
            samples += 1;
            if sample.ip.is_some_and(|ip| code.contains(&ip)) {
                in_loop += 1;
            }
        }
    })
    .unwrap();
    eprintln!("{in_loop} of {samples} samples in the busy loop");
    assert!(samples >= 20, "{samples} samples in 300 ms at 1 kHz");
    assert!(
        in_loop * 10 >= samples * 8,
        "{in_loop} of {samples} in the loop"
    );
}

#[test]
fn a_ring_too_small_for_the_rate_reports_lost_records() {
    let linux = backend();
    let fields = SampleFields::profile().with_addr();
    let options = SampleOptions::period(1, fields).ring_pages(1);
    let mut s = sampler(&linux, "page-faults", &options);
    const PAGES: usize = 2_000;
    let memory = FreshPages::map(PAGES);
    s.enable().unwrap();
    for k in 0..PAGES {
        memory.touch(k);
    }
    s.disable().unwrap();
    let mut samples = 0u64;
    let walked = s
        .walk(&mut |record| {
            if let Record::Sample(sample) = record {
                assert!(sample.ip.is_some() && sample.addr.is_some());
                samples += 1;
            }
        })
        .unwrap();
    // The kernel writes a lost record only when room frees while it still samples; the count
    // of samples it could not write is read from the event (PERF_FORMAT_LOST, Linux 6.0).
    let lost = s.lost().unwrap();
    eprintln!(
        "{samples} samples kept, {} in lost records, {lost:?} lost by the event's count, ring {} bytes",
        walked.lost,
        s.ring_bytes()
    );
    let Some(lost) = lost else {
        skip!(
            Need::System,
            "this kernel does not count lost samples (PERF_FORMAT_LOST, 6.0)"
        );
    };
    assert!(lost > 0, "a one-page ring cannot hold {PAGES} samples");
    assert!(
        samples + lost >= PAGES as u64,
        "{samples} kept + {lost} lost"
    );
}

#[test]
fn options_no_ring_could_honour_are_refused() {
    let linux = backend();
    let options = SampleOptions::period(1, SampleFields::profile()).ring_pages(3);
    let error = linux
        .open_sampler(
            &[request(&linux, "page-faults")],
            &BackendTarget::ThisThread,
            &options,
        )
        .unwrap_err();
    assert!(error.to_string().contains("ring of 3 pages"), "{error}");
}

static OVERFLOWS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static OUTSIDE_CODE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts each overflow (the callback runs in a signal handler: atomics only).
fn count_overflow(overflow: &counterhal_hal::Overflow) {
    OVERFLOWS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if overflow.address == 0 || overflow.token != 7 {
        OUTSIDE_CODE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The overflow callback runs exactly once per `period` events: 1,000 getpid calls with a
/// period of 10 are 100 callbacks; refreshed for 5 overflows, the sampler stops itself after
/// the fifth (50 calls counted). Oracle: the tracepoint's exact count of calls.
#[test]
fn the_overflow_callback_fires_once_per_period_and_refresh_stops_it() {
    let linux = backend();
    let name = GETPID;
    if linux.resolve(name).is_err() {
        skip!(Need::Privilege, "{}", NO_GETPID);
    }
    use std::sync::atomic::Ordering::Relaxed;
    let options = SampleOptions::period(10, SampleFields::profile());
    let mut s = sampler(&linux, name, &options);
    s.on_overflow(count_overflow, 7).unwrap();
    OVERFLOWS.store(0, Relaxed);
    s.enable().unwrap();
    for _ in 0..1_000 {
        black_box(std::process::id());
    }
    s.disable().unwrap();
    assert_eq!(OVERFLOWS.load(Relaxed), 100, "one callback per 10 calls");
    assert_eq!(
        OUTSIDE_CODE.load(Relaxed),
        0,
        "each with an address and the token"
    );
    drop(s);

    let mut s = sampler(&linux, name, &options);
    s.on_overflow(count_overflow, 7).unwrap();
    OVERFLOWS.store(0, Relaxed);
    s.refresh(5).unwrap();
    for _ in 0..1_000 {
        black_box(std::process::id());
    }
    assert_eq!(OVERFLOWS.load(Relaxed), 5, "refreshed for 5 overflows");
    assert_eq!(
        s.count().unwrap(),
        50,
        "the sampler stopped itself at the fifth"
    );
}

/// On a core PMU (the aarch64 lab: QEMU's PMUv3 under the real `armv8_pmuv3` driver),
/// `cycles:u` sampled every 100,000 cycles on the cycle counter gives one sample per period:
/// as many samples as the count holds whole periods. Oracle: the kernel's own count of the
/// event, read from the same sampler. Skipped without a hardware PMU.
#[test]
fn cycles_sampled_give_one_sample_per_period_of_the_count() {
    let linux = backend();
    const PERIOD: u64 = 100_000;
    let options = SampleOptions::period(PERIOD, SampleFields::profile()).ring_pages(256);
    let mut s = match linux.open_sampler(
        &[request(&linux, "cycles:u")],
        &BackendTarget::ThisThread,
        &options,
    ) {
        Ok(s) => s,
        Err(e)
            if e.kind() == counterhal_hal::ErrorKind::NotFound
                || e.kind() == counterhal_hal::ErrorKind::Unsupported =>
        {
            skip!(Need::Hardware, "no hardware PMU counts cycles here: {e}");
        }
        Err(e) => panic!("cycles:u: {e}"),
    };
    s.enable().unwrap();
    counterhal_conformance::workload::retire_instructions(5_000_000);
    s.disable().unwrap();
    let count = s.count().unwrap();
    let walked = s.walk(&mut |_| {}).unwrap();
    eprintln!("{count} cycles, {} samples of {PERIOD}", walked.samples);
    assert_eq!(walked.lost, 0);
    assert!(count >= 5_000_000, "{count} cycles for 10 M instructions");
    assert_eq!(
        walked.samples,
        count / PERIOD,
        "one sample per whole period"
    );
}

/// A polled sampler's thread delivers every record, outside any signal handler: 1,000 getpid
/// calls with period 1 are 1,000 samples handed to a handler that allocates and locks, the
/// last ones when the sampler finishes. Oracle: the tracepoint's exact count.
#[test]
fn a_polled_sampler_delivers_every_record_from_its_thread() {
    let linux = backend();
    let name = GETPID;
    if linux.resolve(name).is_err() {
        skip!(Need::Privilege, "{}", NO_GETPID);
    }
    let options = SampleOptions::period(1, SampleFields::profile()).ring_pages(8);
    let delivered = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = std::sync::Arc::clone(&delivered);
    let polled = sampler(&linux, name, &options)
        .polled(Box::new(move |record| {
            if let Record::Sample(sample) = record {
                into.lock().unwrap().push(sample.tid);
            }
        }))
        .unwrap();
    let tid = gettid();
    polled.enable().unwrap();
    for _ in 0..1_000 {
        black_box(std::process::id());
    }
    polled.disable().unwrap();
    assert_eq!(polled.count().unwrap(), 1_000);
    polled.finish().unwrap();
    let delivered = delivered.lock().unwrap();
    assert_eq!(delivered.len(), 1_000, "every sample delivered");
    assert!(delivered.iter().all(|t| *t == Some(tid)));
}

/// A group's members ride along with the leader's samples: the getpid tracepoint sampled
/// every 100 calls with `page-faults` beside it carries both values in each sample, the
/// leader's exactly 100 more each time. Oracle: the tracepoint's exact count of calls.
#[test]
fn each_sample_carries_the_group_s_values() {
    let linux = backend();
    let name = GETPID;
    if linux.resolve(name).is_err() {
        skip!(Need::Privilege, "{}", NO_GETPID);
    }
    let fields = SampleFields::profile().with_group_values();
    let options = SampleOptions::period(100, fields);
    let requests = [request(&linux, name), request(&linux, "page-faults")];
    let mut s = linux
        .open_sampler(&requests, &BackendTarget::ThisThread, &options)
        .unwrap();
    s.enable().unwrap();
    for _ in 0..1_000 {
        black_box(std::process::id());
    }
    s.disable().unwrap();
    let mut leaders = Vec::new();
    let mut widths = Vec::new();
    s.walk(&mut |record| {
        if let Record::Sample(sample) = record {
            leaders.push(sample.group_values.first().copied());
            widths.push(sample.group_values.len());
        }
    })
    .unwrap();
    let expected: Vec<Option<u64>> = (1..=10).map(|k| Some(100 * k)).collect();
    assert_eq!(leaders, expected, "the leader's count at each sample");
    assert!(widths.iter().all(|w| *w == 2), "{widths:?}");
}

/// A sample's call chain holds the sampled address: each of 10 getpid samples with its call
/// chain has the interrupted user address among the chain's user frames (after the kernel's
/// `PERF_CONTEXT_USER` marker).
#[test]
fn a_call_chain_holds_the_sampled_address() {
    let linux = backend();
    let name = GETPID;
    if linux.resolve(name).is_err() {
        skip!(Need::Privilege, "{}", NO_GETPID);
    }
    const PERF_CONTEXT_USER: u64 = (-512i64) as u64;
    let options = SampleOptions::period(1, SampleFields::profile().with_callchain());
    let mut s = sampler(&linux, name, &options);
    s.enable().unwrap();
    for _ in 0..10 {
        black_box(std::process::id());
    }
    s.disable().unwrap();
    let mut held = Vec::new();
    s.walk(&mut |record| {
        if let Record::Sample(sample) = record {
            let user = sample
                .callchain
                .iter()
                .skip_while(|frame| **frame != PERF_CONTEXT_USER)
                .skip(1);
            held.push(sample.ip.is_some_and(|ip| user.clone().any(|f| *f == ip)));
        }
    })
    .unwrap();
    assert_eq!(
        held,
        vec![true; 10],
        "each chain holds its sample's address"
    );
}

/// A sampler restarted round after round keeps every member of its group counting: a
/// `page-faults` sampler with the getpid tracepoint and `task-clock` read with each sample,
/// 5 rounds of 10 getpid calls each (enable, the calls, one fresh page touched for a sample,
/// disable), reads 10, 20, 30, 40, 50 calls in the rounds' samples, and a task clock that
/// grows in each. Oracle: the kernel's exact count of the tracepoint's hits and of the page
/// faults, on Linux 6.18, where enabling the group with `PERF_IOC_FLAG_GROUP` after such a
/// disable left the tracepoint at 10 from round 2 on.
#[test]
fn a_restarted_sampler_s_members_count_every_round() {
    let linux = backend();
    if linux.resolve(GETPID).is_err() {
        skip!(Need::Privilege, "{}", NO_GETPID);
    }
    let options = SampleOptions::period(1, SampleFields::default().with_group_values());
    let requests = [
        request(&linux, "page-faults"),
        request(&linux, GETPID),
        request(&linux, "task-clock"),
    ];
    let mut s = linux
        .open_sampler(&requests, &BackendTarget::ThisThread, &options)
        .unwrap();
    const ROUNDS: usize = 5;
    let memory = FreshPages::map(ROUNDS);
    let mut last = Vec::new();
    for round in 0..ROUNDS {
        s.enable().unwrap();
        for _ in 0..10 {
            black_box(std::process::id());
        }
        memory.touch(round);
        s.disable().unwrap();
        let mut values = Vec::new();
        s.walk(&mut |record| {
            if let Record::Sample(sample) = record {
                values = sample.group_values.to_vec();
            }
        })
        .unwrap();
        last.push(values);
    }
    let calls: Vec<Option<u64>> = last.iter().map(|v| v.get(1).copied()).collect();
    let expected: Vec<Option<u64>> = (1..=ROUNDS as u64).map(|k| Some(10 * k)).collect();
    assert_eq!(
        calls, expected,
        "getpid calls at each round's sample: {last:?}"
    );
    let clock: Vec<u64> = last
        .iter()
        .map(|v| v.get(2).copied().unwrap_or(0))
        .collect();
    assert!(
        clock.windows(2).all(|w| w[1] > w[0]),
        "the task clock grows in every round: {last:?}"
    );
}
