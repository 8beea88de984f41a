//! `Target::process(pid)` is the whole process and `Target::thread(tid)` one thread, through
//! the face's one way of opening by name: a child process of three threads, each making a
//! known number of `getpid` system calls, counted by the kernel's `sys_enter_getpid`
//! tracepoint.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Barrier};

use counterhal::ErrorKind;
use counterhal::OpenOptions;
use counterhal::prelude::*;
use counterhal_conformance::skip;
use counterhal_conformance::skip::Need;

/// The kernel's count of `getpid` calls (Linux's tracefs).
const GETPID: &str = "syscalls:sys_enter_getpid";
/// The child's threads' calls: its main thread's first.
const CALLS: [u64; 3] = [1_000, 2_000, 3_000];
/// Set in the child's environment: the test process then runs [`child`] as the child.
const CHILD: &str = "COUNTERHAL_GETPID_CHILD";

/// The child: three threads (the test's own and two more; libtest's main thread waits for
/// them and makes no call) waiting at a barrier; at `go` on standard input each makes its
/// share of [`CALLS`], the test's thread the first, then `done` is printed; all three stay
/// until standard input closes, so that every thread lives while the counters are read.
#[test]
fn child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    // Every thread passes each barrier: the calls start together, `done` follows every
    // call, and no thread ends before standard input closes.
    let [start, called, end] = [(); 3].map(|()| Arc::new(Barrier::new(3)));
    let workers: Vec<_> = CALLS[1..]
        .iter()
        .map(|&calls| {
            let (start, called, end) = (start.clone(), called.clone(), end.clone());
            std::thread::spawn(move || {
                start.wait();
                getpid_times(calls);
                called.wait();
                end.wait();
            })
        })
        .collect();
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    // This thread's id (libtest runs the test on a thread of its own, beside its main one).
    let me = std::fs::read_link("/proc/thread-self").unwrap();
    println!("ready {}", me.file_name().unwrap().to_string_lossy());
    stdin.read_line(&mut line).unwrap();
    start.wait();
    getpid_times(CALLS[0]);
    called.wait();
    println!("done");
    line.clear();
    let _ = stdin.read_line(&mut line);
    end.wait();
    for worker in workers {
        worker.join().unwrap();
    }
}

/// `getpid(2)` `n` times: `std::process::id` calls it each time (glibc caches no pid).
fn getpid_times(n: u64) {
    for _ in 0..n {
        std::hint::black_box(std::process::id());
    }
}

/// The child, started and waiting at its barrier.
struct Held {
    child: Child,
    /// The id of the child's thread that makes the first share of calls.
    caller: u32,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Held {
    fn start() -> Held {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "process::child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut held = Held {
            stdout: BufReader::new(child.stdout.take().unwrap()),
            stdin,
            child,
            caller: 0,
        };
        held.caller = held.expect("ready").parse().unwrap();
        held
    }

    /// Reads the child's lines until one with `word` (libtest may print before it on the
    /// line); returns what follows it.
    fn expect(&mut self, word: &str) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            assert_ne!(
                self.stdout.read_line(&mut line).unwrap(),
                0,
                "the child ended"
            );
            if let Some(at) = line.find(word) {
                return line[at + word.len()..].trim().to_string();
            }
        }
    }

    fn threads(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/task", self.child.id()))
            .unwrap()
            .count()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = self.stdin.write_all(b"end\n");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Oracle: the kernel's `sys_enter_getpid` tracepoint, fired once per call the child's
/// threads make (1,000 + 2,000 + 3,000); `perf stat -e syscalls:sys_enter_getpid -p PID`
/// (perf 6.1) counts the same process alongside and must agree.
#[test]
fn a_process_is_all_its_threads_and_a_thread_is_one() {
    let _ = counterhal_conformance::fixtures::tracefs_mounted();
    let Some(backend) = open_default().ok().filter(|b| b.resolve(GETPID).is_ok()) else {
        skip!(
            Need::System,
            "needs the {GETPID} tracepoint (tracefs mounted, perf_event_open)"
        );
    };
    let mut held = Held::start();
    // The workers are spawned before the child says `ready`.
    assert!(held.threads() >= 3, "the child has its three threads");
    let pid = held.child.id();
    let options = OpenOptions::default();
    let mut process = match backend.open_named(&[GETPID], &Target::process(pid), &options) {
        Ok(set) => set,
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            skip!(Need::Privilege, "attaching to a child's threads: {e}")
        }
        Err(e) => panic!("{e}"),
    };
    let mut thread = backend
        .open_named(&[GETPID], &Target::thread(held.caller), &options)
        .unwrap();
    // The process's main thread (libtest's, which makes no call) is a thread as any other.
    let mut main_thread = backend
        .open_named(&[GETPID], &Target::thread(pid), &options)
        .unwrap();
    let perf = Command::new("perf")
        .args(["stat", "-x,", "-e", GETPID, "-p", &pid.to_string()])
        .stderr(Stdio::piped())
        .spawn()
        .ok();
    // perf attaches before it counts; give it time to open its counters.
    std::thread::sleep(std::time::Duration::from_millis(500));
    for set in [&mut process, &mut thread, &mut main_thread] {
        set.enable().unwrap();
    }
    held.stdin.write_all(b"go\n").unwrap();
    held.expect("done");
    for set in [&mut process, &mut thread, &mut main_thread] {
        set.disable().unwrap();
    }
    let whole = process.read_to_vec().unwrap()[0].value;
    assert_eq!(whole, CALLS.iter().sum::<u64>(), "every thread's calls");
    let one = thread.read_to_vec().unwrap()[0].value;
    assert_eq!(one, CALLS[0], "thread {}'s calls alone", held.caller);
    assert_eq!(main_thread.read_to_vec().unwrap()[0].value, 0);
    let Some(perf) = perf else {
        skip!(
            Need::Tools,
            "perf is not installed (apt-get install linux-perf): {whole} not compared with it"
        );
    };
    let _ = counterhal_conformance::fixtures::send_signal(perf.id() as i32, "-INT");
    let output = perf.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stderr);
    let counted: u64 = text
        .lines()
        .find(|line| line.contains(GETPID))
        .and_then(|line| line.split(',').next()?.parse().ok())
        .unwrap_or_else(|| panic!("perf stat printed no count: {text}"));
    assert_eq!(counted, whole, "perf stat -p {pid}: {text}");
}
