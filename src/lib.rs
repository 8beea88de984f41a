//! # counterhal: hardware performance counters, one API on every OS
//!
//! Count events by name (perf's generalized events, PAPI's presets, the CPU's native events,
//! tracepoints, raw codes) on a thread, a process, a command, CPUs or a control group, with
//! each count's times enabled and running, on Linux (`perf_event_open`), OpenBSD
//! (`/dev/pctr`), FreeBSD (hwpmc) and raw x86 MSRs.
//!
//! A [`Setup`] starts: it names the CPU model, an events file, the backend or a sysfs tree,
//! and opens the [`Chosen`] backend ([`open_default`] is `Setup::new().open()`, every choice
//! left to the library). The [`Chosen`] backend opens names as an [`EventSet`] on any
//! [`Target`] with [`open_named`](Chosen::open_named) (or one at a time with its
//! [`builder`](Chosen::builder), which says why each name that cannot join is left out),
//! and counts a command with [`count_command`](Chosen::count_command); [`OpenOptions`] say
//! how (the domain, inherit, grouped, pinned, exclusive). As `perf stat` does, where the OS refuses counting the
//! kernel to an unprivileged caller, events given no domain count user space only, under the
//! names given, and the set's [`note`](EventSet::note) says so. A [`reset`](Group::reset) zeroes the counts and
//! their times. [`prelude`] has what the examples use.
//!
//! Count a closure:
//! ```no_run
//! use counterhal::prelude::*;
//!
//! let backend = open_default()?;
//! let mut set = backend.open_named(&["task-clock", "page-faults"], &Target::this_thread(),
//!                                  &Default::default())?;
//! set.enable()?;
//! let v: Vec<u8> = vec![1; 1 << 20]; // the work
//! set.disable()?;
//! let readings = set.read_to_vec()?;
//! for (event, reading) in set.events().iter().zip(readings) {
//!     println!("{}: {} ({:?} scaled)", event.name, reading.value, reading.scaled());
//! }
//! # drop(v); Ok::<(), counterhal::Error>(())
//! ```
//! Count a command from its `exec`, with every process it creates (`perf stat -- ls`):
//! ```no_run
//! # use counterhal::prelude::*;
//! # use counterhal::OpenOptions;
//! let backend = open_default()?;
//! let counted = backend.count_command(&["task-clock", "context-switches"],
//!                                     std::process::Command::new("ls"), &OpenOptions::default())?;
//! println!("{:?}, {:?}", counted.readings, counted.exit);
//! # Ok::<(), counterhal::Error>(())
//! ```
//! Count a running process, every thread it has and creates (`perf stat -p PID`):
//! ```no_run
//! # use counterhal::prelude::*;
//! # use counterhal::OpenOptions;
//! # let pid = std::process::id();
//! let backend = open_default()?;
//! let mut set = backend.open_named(&["task-clock"], &Target::process(pid),
//!                                  &OpenOptions::default())?;
//! set.enable()?;
//! std::thread::sleep(std::time::Duration::from_millis(100));
//! println!("{} ns on its threads", set.read_to_vec()?[0].value);
//! # Ok::<(), counterhal::Error>(())
//! ```
//! Count every CPU, system-wide, and read each CPU (`perf stat -a -A`):
//! ```no_run
//! # use counterhal::prelude::*;
//! # use counterhal::OpenOptions;
//! use counterhal::advanced::MultiSet;
//! let backend = open_default()?;
//! let mut cpus = MultiSet::open(&backend, &[backend.resolve("cpu-clock")?],
//!                               &Target::all_cpus(), &OpenOptions::default(),
//!                               backend.context().system())?;
//! cpus.enable()?;
//! std::thread::sleep(std::time::Duration::from_millis(100));
//! for (place, readings) in cpus.read_each()? {
//!     println!("{place}: {} ns", readings[0].value);
//! }
//! # Ok::<(), counterhal::Error>(())
//! ```
//! A benchmark harness that drives `perf stat --control fd:CTL,ACK -D -1` (writing `enable`
//! and `disable` around what it measures) can count in its own process instead: a
//! [`Control`] reads perf's commands from a descriptor, switches a set on and off, and
//! acknowledges each as perf does.
//!
//! Sample the instruction pointer every 100,000 ns of `task-clock` (`perf record`):
//! ```no_run
//! # use counterhal::prelude::*;
//! let backend = open_default()?;
//! let mut sampler = backend.open_sampler(&["task-clock"], &Target::this_thread(),
//!                                        &SampleOptions::period(100_000, SampleFields::profile()))?;
//! sampler.enable()?;
//! // ... the work ...
//! sampler.disable()?;
//! sampler.walk(&mut |record| println!("{record:?}"))?;
//! # Ok::<(), counterhal::Error>(())
//! ```
//!
//! [`open_default`] tries the backends of this OS in the order of the registry
//! ([`registry::REGISTRY`], the one list of backends: on Linux, `perf_event_open` before raw
//! MSRs); on an OS with none it fails with [`ErrorKind::Unsupported`]. `counterhal info` lists
//! them, each with why it is usable here or not.
//!
//! Cargo features: one per backend (all on by default, each probing its real device only on
//! its own OS; a backend with a device model runs it everywhere, for tests and
//! `counterhal check --models`),
//! `conformance` for the suite, `criterion` for `counterhal::criterion::EventMeasurement` (a criterion `Measurement` of any event),
//! `regions` for the named regions of `counterhal::region` (on by default);
//! what of the shipped event data this build holds (`x86-models`, `arm-models`, `metrics`, on
//! by default), the readers of the user's files (`events-file`, `descriptions`) and
//! `device-models` (off by default): a part left out is an error that names its feature
//! (docs/library.md has the table).
//!
//! **For backend authors**: the vocabulary is the `counterhal-hal` crate (the `Backend` and
//! `Group` traits, encodings, capabilities, the backend's own target `BackendTarget`: one
//! thread, process or CPU), the database `counterhal-events`; each is documented in its own
//! crate, and this crate re-exports of them what a program that counts needs and every type
//! its own signatures hand out (a [`ResolvedEvent`] here, the backend's capabilities, targets
//! and encodings in [`advanced`]), so that no program depends on `counterhal-hal` to name
//! them; a backend is a crate implementing them that registers itself (its `REGISTRATION`, a
//! `counterhal_hal::Registration`), given a line in [`registry::REGISTRY`] and a Cargo feature
//! here. ARCHITECTURE.md has the map.

pub use counterhal_hal::{
    BoxedGroup, Countable, CpuList, Domain, Error, ErrorKind, EventSet, Group, OpenOptions,
    Overflow, OverflowCallback, Rate, Reading, Record, ResolvedEvent, Result, Sample, SampleFields,
    SampleOptions, Sampler, Unit, Wakeup, Walked,
};
/// Launching the measured command on Unix (what [`Chosen::count_command`] takes), and how it
/// ended (what a [`CommandCount`] holds).
#[cfg(all(unix, feature = "command"))]
pub use counterhal_process::{ChildExit, Launch};

/// Timers beside the counters: real and CPU time in nanoseconds, the TSC where it is a clock.
pub mod time {
    pub use counterhal_time::{cycles, process_cpu_ns, real_ns, thread_cpu_ns};
}

/// The one reader of a Linux system's facts: a [`System`](system::System) over a procfs and a
/// sysfs root (this machine's, or a tree of another), whose facts the metrics read. Its typed
/// answers (the CPUs, topology, PMUs, mounts, permissions) are `counterhal-system`'s, a
/// public dependency with its own list of what it promises (`api/counterhal-system.txt`).
pub mod system {
    pub use counterhal_system::System;
}

pub mod advanced;

/// What [`Chosen::list`] lists: each event with its section, description, unit masks and
/// whether it counts here.
pub mod listing {
    pub use counterhal_events::listing::{ListOptions, Listed, ListedUnitMask, Section};
}
mod attach;
mod cgroup_counter;
pub mod cgroups;
mod chosen;
#[cfg(all(unix, feature = "command"))]
mod command;
mod context;
#[cfg(all(unix, feature = "command"))]
mod control;
#[cfg(feature = "criterion")]
pub mod criterion;
mod group;
#[cfg(feature = "metrics")]
pub mod metrics;
mod open;
pub mod prelude;
#[cfg(feature = "regions")]
pub mod region;
pub mod registry;
mod sampling;
mod set;
mod setup;
mod shared_read;

pub use attach::{Place, Target, online_cpus};
pub use chosen::{Chosen, PartialSet};
#[cfg(all(unix, feature = "command"))]
pub use command::CommandCount;
pub use context::Context;
#[cfg(all(unix, feature = "command"))]
pub use control::{Control, ControlCommand};
pub use group::AnyGroup;
pub use open::split_event_list;
#[cfg(feature = "regions")]
pub use region::{RegionReport, RegionTotals, Regions};
pub use registry::{
    OS, Probe, REGISTRY, Registration, native_backends, probe, probe_all, registration,
};
pub use sampling::AnySampler;
pub use set::{EventSetBuilder, Query, query};
pub use setup::{Setup, open_default};

/// The README's examples, compiled as doc tests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExamples;

/// The library guide's examples (docs/library.md), compiled as doc tests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../docs/library.md")]
pub struct LibraryGuideExamples;

#[cfg(test)]
mod tests {
    use super::*;
    use counterhal_hal::{Backend, BackendExt, DeviceKind, Encoding};

    #[test]
    fn a_backend_of_another_os_says_why() {
        let context = Context::new(None, None).expect("shipped database loads");
        let foreign = REGISTRY
            .iter()
            .find(|r| !r.runs_here())
            .expect("pctr or the Linux backends are foreign to any one OS");
        let error = probe(foreign, &context)
            .err()
            .expect("a foreign backend does not probe");
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        assert!(error.to_string().contains(OS), "{error}");
        assert!(error.hint().is_some());
    }

    #[test]
    fn unknown_names_list_the_backends() {
        let error = registration("windows").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        let known = registry::names().join(", ");
        assert!(error.hint().unwrap().contains(&known), "{error}");
        assert_eq!(registration("LINUX").unwrap().name, "linux");
    }

    #[test]
    fn an_unknown_cpu_model_lists_the_known_ones() {
        let error = Context::new(None, Some("pentium9000")).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert!(error.message().contains("pentium9000"));
        assert!(error.hint().unwrap().contains("p6"), "{error}");
    }

    #[test]
    fn every_backend_of_this_os_probes_or_says_why() {
        let context = Context::new(None, None).expect("shipped database loads");
        let probes = probe_all(&context);
        assert_eq!(probes.len(), native_backends().count());
        for probe in probes {
            if let Err(e) = probe.result {
                assert!(
                    !e.message().is_empty(),
                    "{} gave an empty reason",
                    probe.registration.name
                );
            }
        }
    }

    #[test]
    fn model_backends_encode_for_a_named_cpu() {
        let context = Context::new(None, Some("skl")).expect("shipped database loads");
        for registration in REGISTRY {
            let Some(model) = registration.model else {
                continue;
            };
            let backend = match model(&context) {
                Ok(backend) => backend,
                // A build without the device models says which feature brings them.
                Err(e) if !cfg!(feature = "device-models") => {
                    assert!(e.message().contains("`device-models` feature"), "{e}");
                    continue;
                }
                Err(e) => panic!("{}: {e}", registration.name),
            };
            assert_eq!(backend.device(), DeviceKind::Model);
            let resolved = backend.resolve("INST_RETIRED.ANY_P:u").unwrap();
            let Encoding::Evtsel(evtsel) = resolved.terms[0].request.encoding else {
                panic!("{}: {resolved:?}", registration.name);
            };
            assert_eq!(evtsel.register_value(), 0x41_00c0, "{}", registration.name);
        }
    }
}
