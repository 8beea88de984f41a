//! Where to count, in the facade's words ([`counterhal::Target`]): this thread, this process
//! with what it creates, a process or thread by id, CPUs, a control group. A command is
//! counted by `run` instead.

use std::path::PathBuf;

use counterhal::CpuList;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyInt;

use crate::errors::{OrRaise, to_python};

/// Where a group counts; made by `this_thread()`, `this_process()`, `process(pid)`,
/// `thread(tid)`, `cpu(n)`, `cpus(list)`, `all_cpus()` and `cgroup(name)`.
#[pyclass(frozen, eq, module = "counterhal")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target(pub(crate) counterhal::Target);

#[pymethods]
impl Target {
    fn __repr__(&self) -> String {
        let said = match &self.0 {
            counterhal::Target::ThisThread => "this_thread()".to_string(),
            counterhal::Target::Thread(tid) => format!("thread({tid})"),
            counterhal::Target::Process(pid) => format!("process({pid})"),
            counterhal::Target::AllCpus => "all_cpus()".to_string(),
            counterhal::Target::Cpus(cpus) => format!("cpus({:?})", cpus.to_string()),
            counterhal::Target::Cgroup { path, cpus } => match cpus {
                Some(cpus) => format!("cgroup({:?}, cpus={:?})", path, cpus.to_string()),
                None => format!("cgroup({path:?})"),
            },
            other => format!("{other:?}"),
        };
        format!("counterhal.{said}")
    }
}

/// What a Python caller passes as a target: a [`Target`], a process id, or `None` (this
/// thread).
pub(crate) fn target_of(target: Option<&Bound<'_, PyAny>>) -> PyResult<counterhal::Target> {
    let Some(target) = target.filter(|t| !t.is_none()) else {
        return Ok(counterhal::Target::this_thread());
    };
    if let Ok(target) = target.cast::<Target>() {
        return Ok(target.get().0.clone());
    }
    if target.is_instance_of::<PyInt>() {
        return Ok(counterhal::Target::process(process_id(target)?));
    }
    Err(PyTypeError::new_err(format!(
        "a target is a counterhal.Target (this_thread(), process(pid), cpu(n), ...) or a \
         process id, not {}",
        target.get_type().name()?
    )))
}

/// A list of CPUs: `"0-3,8"` as perf writes one, or the numbers.
fn cpu_list(py: Python<'_>, cpus: &Bound<'_, PyAny>) -> PyResult<CpuList> {
    if let Ok(text) = cpus.extract::<String>() {
        return text.parse::<CpuList>().or_raise(py);
    }
    if let Ok(numbers) = cpus.extract::<Vec<u32>>() {
        return Ok(CpuList::from_cpus(numbers));
    }
    Err(PyTypeError::new_err(
        "CPUs are a list such as \"0-3,8\" or a sequence of CPU numbers",
    ))
}

/// `number`, a Python int, as the id or CPU number it names; one that no such number can be
/// (negative, or past 32 bits) is refused with `refusal`'s error, as the backend refuses one
/// out of its range (0, or past the system's maximum).
fn whole_number(
    number: &Bound<'_, PyAny>,
    refusal: impl FnOnce(String) -> counterhal::Error,
) -> PyResult<u32> {
    if !number.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "an id or CPU number is an int, not {}",
            number.get_type().name()?
        )));
    }
    number
        .extract::<u32>()
        .map_err(|_| to_python(number.py(), &refusal(number.to_string())))
}

/// A process id, refused as the Linux backend refuses one it cannot be (0 too).
fn process_id(pid: &Bound<'_, PyAny>) -> PyResult<u32> {
    whole_number(pid, |pid| {
        counterhal::Error::invalid_input(format!("process id {pid} is not valid"))
            .with_hint("a process id is a positive number up to /proc/sys/kernel/pid_max")
    })
}

/// The calling thread (what the thread that opens the group runs, alone).
#[pyfunction]
fn this_thread() -> Target {
    Target(counterhal::Target::this_thread())
}

/// This process: every thread it has, and every thread and process it creates from now on,
/// summed (`perf stat -p` on itself).
#[pyfunction]
fn this_process() -> Target {
    Target(counterhal::Target::process(std::process::id()))
}

/// A process by its id: every thread it has, and what it creates from now on, summed.
#[pyfunction]
fn process(pid: &Bound<'_, PyAny>) -> PyResult<Target> {
    Ok(Target(counterhal::Target::process(process_id(pid)?)))
}

/// One thread by its id, alone (a process's main thread has the process's id).
#[pyfunction]
fn thread(tid: &Bound<'_, PyAny>) -> PyResult<Target> {
    let tid = whole_number(tid, |tid| {
        counterhal::Error::invalid_input(format!("thread id {tid} is not valid")).with_hint(
            "a thread id is a positive number (threading.get_native_id() gives a thread's)",
        )
    })?;
    Ok(Target(counterhal::Target::thread(tid)))
}

/// Everything that runs on one CPU (system-wide).
#[pyfunction]
fn cpu(cpu: &Bound<'_, PyAny>) -> PyResult<Target> {
    let cpu = whole_number(cpu, |cpu| {
        counterhal::Error::invalid_input(format!("CPU {cpu} does not exist")).with_hint(format!(
            "name CPUs among {}",
            counterhal::online_cpus(&crate::session::module_system())
        ))
    })?;
    Ok(Target(counterhal::Target::cpu(cpu)))
}

/// Everything that runs on these CPUs (`"0-3,8"`, or a sequence of numbers), summed.
#[pyfunction]
fn cpus(py: Python<'_>, cpus: &Bound<'_, PyAny>) -> PyResult<Target> {
    Ok(Target(counterhal::Target::Cpus(cpu_list(py, cpus)?)))
}

/// Everything that runs on every online CPU, summed.
#[pyfunction]
fn all_cpus() -> Target {
    Target(counterhal::Target::all_cpus())
}

/// What the tasks of one control group run, on `cpus` (every online CPU: `None`): the group
/// named as `perf stat -G` names it (relative to the cgroup file system's mount), or its
/// directory's absolute path.
#[pyfunction]
#[pyo3(signature = (name, cpus = None))]
fn cgroup(py: Python<'_>, name: PathBuf, cpus: Option<&Bound<'_, PyAny>>) -> PyResult<Target> {
    let path = match name.is_absolute() && name.is_dir() {
        true => name,
        false => {
            let name = name.to_string_lossy();
            py.detach(|| counterhal::cgroups::find(&crate::session::module_system(), &name))
                .or_raise(py)?
        }
    };
    let cpus = cpus.map(|cpus| cpu_list(py, cpus)).transpose()?;
    Ok(Target(counterhal::Target::cgroup(path, cpus)))
}

/// Adds the targets' functions to the module.
pub(crate) fn add_functions(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(this_thread, module)?)?;
    module.add_function(wrap_pyfunction!(this_process, module)?)?;
    module.add_function(wrap_pyfunction!(process, module)?)?;
    module.add_function(wrap_pyfunction!(thread, module)?)?;
    module.add_function(wrap_pyfunction!(cpu, module)?)?;
    module.add_function(wrap_pyfunction!(cpus, module)?)?;
    module.add_function(wrap_pyfunction!(all_cpus, module)?)?;
    module.add_function(wrap_pyfunction!(cgroup, module)?)?;
    Ok(())
}
