//! The cost of sampling, against perf-event2 in the same run: each round, a sampler of each
//! kind records one page-fault sample (instruction pointer, ids, time, address) per page of
//! 2,048 freshly mapped pages, and the time to walk those records into a handler is measured
//! (counterhal: `Sampler::walk`, typed records; perf-event2: `next_record` and
//! `parse_record`). Then the overhead a 1 kHz `cpu-clock` sampler adds to a busy loop: the
//! loop timed with and without one, in turns. Prints medians and ratios; asserts nothing.
//! `cargo bench --bench sampling`.

#[cfg(target_os = "linux")]
mod bench {
    use std::hint::black_box;
    use std::time::{Duration, Instant};

    use counterhal::prelude::*;
    use counterhal::{Record, SampleFields, SampleOptions, Sampler};
    use counterhal_conformance::workload::touch_fresh_pages;
    use perf_event::events::Software;
    use perf_event::{Builder, SampleFlag};

    const PAGES: usize = 2_048;
    const ROUNDS: usize = 41;
    const PAGE: usize = 4096;

    fn median(values: &mut [f64]) -> f64 {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }

    /// A busy loop of `n` steps.
    #[inline(never)]
    fn busy(n: u64) -> u64 {
        let mut x = black_box(n);
        for i in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        x
    }

    pub fn run() {
        let chosen = open_default().expect("a backend works here");
        let fields = SampleFields::profile().with_addr();
        let options = SampleOptions::period(1, fields).ring_pages(512);
        let mut ours = chosen
            .open_sampler(&["page-faults"], &Target::this_thread(), &options)
            .expect("page faults can be sampled here");
        let mut theirs = Builder::new(Software::PAGE_FAULTS)
            .sample_period(1)
            .sample(SampleFlag::IP | SampleFlag::TID | SampleFlag::TIME | SampleFlag::ADDR)
            .build()
            .and_then(|counter| counter.sampled(512 * PAGE))
            .expect("perf-event2 samples page faults here");

        let (mut our_ns, mut their_ns) = (Vec::new(), Vec::new());
        let (mut our_records, mut their_records) = (0u64, 0u64);
        for _ in 0..ROUNDS {
            ours.enable().unwrap();
            touch_fresh_pages(PAGES);
            ours.disable().unwrap();
            let mut sum = 0u64;
            let start = Instant::now();
            let walked = ours
                .walk(&mut |record| {
                    if let Record::Sample(sample) = record {
                        sum = sum.wrapping_add(sample.addr.unwrap_or(0));
                    }
                })
                .unwrap();
            let took = start.elapsed();
            black_box(sum);
            our_records += walked.samples;
            our_ns.push(took.as_nanos() as f64 / walked.samples.max(1) as f64);

            theirs.enable().unwrap();
            touch_fresh_pages(PAGES);
            theirs.disable().unwrap();
            let mut sum = 0u64;
            let mut records = 0u64;
            let start = Instant::now();
            while let Some(record) = theirs.next_record() {
                if let Ok(perf_event::data::Record::Sample(sample)) = record.parse_record() {
                    sum = sum.wrapping_add(sample.addr().unwrap_or(0));
                    records += 1;
                }
            }
            let took = start.elapsed();
            black_box(sum);
            their_records += records;
            their_ns.push(took.as_nanos() as f64 / records.max(1) as f64);
        }
        let (ours_ns, theirs_ns) = (median(&mut our_ns), median(&mut their_ns));
        println!(
            "page-fault records ({ROUNDS} rounds of {PAGES} faults; {our_records} and {their_records} records read)"
        );
        println!("  counterhal Sampler::walk        {ours_ns:8.1} ns a record");
        println!("  perf-event2 next_record + parse {theirs_ns:8.1} ns a record");
        println!("  ratio {:.3}x perf-event2's", ours_ns / theirs_ns);

        // The overhead of a 1 kHz sampler on a busy loop.
        let steps = 400_000_000;
        let time = || {
            let start = Instant::now();
            black_box(busy(black_box(steps)));
            start.elapsed()
        };
        let mut sampler = chosen
            .open_sampler(
                &["cpu-clock:u"],
                &Target::this_thread(),
                &SampleOptions::frequency(1000, SampleFields::profile()),
            )
            .expect("cpu-clock can be sampled here");
        let (mut bare, mut sampled): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
        for _ in 0..15 {
            bare.push(time());
            sampler.enable().unwrap();
            sampled.push(time());
            sampler.disable().unwrap();
            sampler.walk(&mut |_| {}).unwrap();
        }
        let mut bare: Vec<f64> = bare.iter().map(Duration::as_secs_f64).collect();
        let mut sampled: Vec<f64> = sampled.iter().map(Duration::as_secs_f64).collect();
        let (b, s) = (median(&mut bare), median(&mut sampled));
        println!(
            "busy loop of {steps} steps: {:.2} ms bare, {:.2} ms under a 1 kHz sampler: {:.3}x",
            b * 1e3,
            s * 1e3,
            s / b
        );
    }
}

fn main() {
    #[cfg(target_os = "linux")]
    bench::run();
    #[cfg(not(target_os = "linux"))]
    println!("the sampling benchmark runs on Linux only");
}
