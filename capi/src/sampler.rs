//! A C sampler (`counterhal_sampler_t`): one event sampled on the calling thread, its records
//! handed to a C callback, overflow callbacks by signal (PAPI's `PAPI_overflow`).

use std::sync::Arc;

use facade::{AnySampler, Record, Sample, SampleFields, SampleOptions, Sampler, Target};

use crate::{CResult, Failure, Handle, Inner, code};

/// The `COUNTERHAL_SAMPLE_*` bits.
pub mod field {
    /// The instruction pointer.
    pub const IP: u32 = 1 << 0;
    /// The process and thread ids.
    pub const TID: u32 = 1 << 1;
    /// The time.
    pub const TIME: u32 = 1 << 2;
    /// The data address.
    pub const ADDR: u32 = 1 << 3;
    /// The CPU.
    pub const CPU: u32 = 1 << 4;
    /// The period in force.
    pub const PERIOD: u32 = 1 << 5;
    /// The call chain.
    pub const CALLCHAIN: u32 = 1 << 7;
    /// Every bit this version knows.
    pub const ALL: u32 = IP | TID | TIME | ADDR | CPU | PERIOD | CALLCHAIN;
}

/// `counterhal_sample_t`: one sample as C reads it; `fields` says which members hold values.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SampleC {
    /// The `COUNTERHAL_SAMPLE_*` bits of the members that hold values.
    pub fields: u32,
    /// The process id.
    pub pid: u32,
    /// The thread id.
    pub tid: u32,
    /// The CPU.
    pub cpu: u32,
    /// The instruction pointer.
    pub ip: u64,
    /// The time (the kernel's perf clock, ns).
    pub time: u64,
    /// The data address.
    pub addr: u64,
    /// The period in force.
    pub period: u64,
    /// The call chain, innermost first (valid during the callback only).
    pub callchain: *const u64,
    /// Its length.
    pub ncallchain: usize,
}

impl SampleC {
    /// `sample` as C reads it.
    pub fn of(sample: &Sample<'_>) -> SampleC {
        let mut fields = 0;
        let mut take = |value: Option<u64>, bit: u32| {
            fields |= if value.is_some() { bit } else { 0 };
            value.unwrap_or(0)
        };
        let ip = take(sample.ip, field::IP);
        let tid = take(sample.tid.map(u64::from), field::TID);
        let time = take(sample.time, field::TIME);
        let addr = take(sample.addr, field::ADDR);
        let cpu = take(sample.cpu.map(u64::from), field::CPU);
        let period = take(sample.period, field::PERIOD);
        if !sample.callchain.is_empty() {
            fields |= field::CALLCHAIN;
        }
        SampleC {
            fields,
            pid: sample.pid.unwrap_or(0),
            tid: tid as u32,
            cpu: cpu as u32,
            ip,
            time,
            addr,
            period,
            callchain: sample.callchain.as_ptr(),
            ncallchain: sample.callchain.len(),
        }
    }
}

/// What `counterhal_sampler_t` points at.
pub struct SamplerC {
    /// The handle's backend, kept alive as long as the sampler.
    _inner: Arc<Inner>,
    /// The process it was made in, as its handle's count of forks.
    pub(crate) generation: u64,
    pub(crate) sampler: AnySampler,
    /// The C overflow callback and its argument, at a fixed address the signal handler reads
    /// (the token given to the sampler).
    pub(crate) overflow: Option<Box<(usize, usize)>>,
}

impl SamplerC {
    /// Samples `event` on the calling thread at `period` events (or `hz` a second), with the
    /// `COUNTERHAL_SAMPLE_*` bits `fields`, in a ring of `pages` pages (0: 64).
    pub(crate) fn open(
        handle: &Handle,
        event: &str,
        rate: facade::Rate,
        fields: u32,
        pages: usize,
    ) -> CResult<SamplerC> {
        if fields & !field::ALL != 0 {
            return Err(Failure::new(
                code::INVALID_ARGUMENT,
                format!(
                    "sample fields {fields:#x} name bits this version does not know: use \
                     COUNTERHAL_SAMPLE_* ({:#x} in all)",
                    field::ALL
                ),
            ));
        }
        let mut wanted = SampleFields::default();
        wanted.ip = fields & field::IP != 0;
        wanted.tid = fields & field::TID != 0;
        wanted.time = fields & field::TIME != 0;
        wanted.addr = fields & field::ADDR != 0;
        wanted.cpu = fields & field::CPU != 0;
        wanted.period = fields & field::PERIOD != 0;
        wanted.callchain = fields & field::CALLCHAIN != 0;
        let options = match rate {
            facade::Rate::Period(p) => SampleOptions::period(p, wanted),
            facade::Rate::Frequency(hz) => SampleOptions::frequency(hz, wanted),
        };
        let options = if pages == 0 {
            options
        } else {
            options.ring_pages(pages)
        };
        let inner = handle.inner.clone();
        let sampler = inner
            .chosen
            .open_sampler(&[event], &Target::ThisThread, &options)?;
        Ok(SamplerC {
            _inner: inner,
            generation: handle.generation,
            sampler,
            overflow: None,
        })
    }

    /// Hands each sample to `each`; the number handed.
    pub(crate) fn read(&mut self, each: &mut dyn FnMut(&SampleC)) -> CResult<u64> {
        let walked = self.sampler.walk(&mut |record| {
            if let Record::Sample(sample) = record {
                each(&SampleC::of(sample));
            }
        })?;
        Ok(walked.samples)
    }

    /// The samples the kernel could not write so far.
    pub(crate) fn lost(&mut self) -> CResult<u64> {
        self.sampler.lost()?.ok_or_else(|| {
            Failure::new(
                code::UNSUPPORTED,
                "this kernel does not count lost samples (PERF_FORMAT_LOST, Linux 6.0)",
            )
        })
    }

    /// The event's count so far.
    pub(crate) fn count(&mut self) -> CResult<u64> {
        Ok(self.sampler.count()?)
    }
}
